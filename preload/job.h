/* Who this process is in a cluster job: its rank as the launcher defines it, its role
 * (launcher, rank, worker of a rank, plain process), restart attempt, job id and the run
 * id derived from the job. Read once at load from the launcher's environment; the role
 * changes once more in a forked child or a DataLoader worker. Written into every trace
 * file as META records. */
#ifndef PROF_JOB_H
#define PROF_JOB_H

#include <stddef.h>

enum job_role {
    JOB_ROLE_PROCESS,  /* no launcher around: a plain process (or a child of one) */
    JOB_ROLE_RANK,     /* a rank of the job (an exec'd child of a rank is one too) */
    JOB_ROLE_LAUNCHER, /* torchrun's agent, mpirun, srun, orted, hydra's proxy */
    JOB_ROLE_WORKER    /* a forked or multiprocessing-spawned child of a rank, or a
                          DataLoader worker of any run */
};

struct job_identity {
    enum job_role role;
    long rank, local_rank, world_size; /* -1 when unknown; a worker keeps its rank's */
    long node_rank;                    /* GROUP_RANK, SLURM_NODEID; -1 when unknown */
    long restart;                      /* TORCHELASTIC_RESTART_COUNT; -1 when unknown */
    const char *rank_from;             /* the variable the rank came from, or "" (or
                                          "init_process_group": job_rank_from_program) */
    const char *launcher;              /* for a launcher: which one ("torchrun", ...) */
    const char *worker_kind;           /* for a worker known as such: "dataloader" */
    char job_id[160];                  /* "slurm-12.0", "torchelastic-…", "ompi-…", or "" */
};

/* Reads the environment (after settings_load) and argv: fills the process's identity. */
void job_identify(int argc, char **argv);
const struct job_identity *job_self(void);
/* Writes the step-level job id of the environment, sanitized for a file name, into out
 * ("" when none). Shared with profrun. Returns out. */
char *job_run_id_from_env(char *out, size_t len);
/* The run id: a PROF_RUN_ID already set (by the user, profrun or a parent) is kept; else
 * the job's id; else the process's own (time and pid). Exported to children. */
const char *job_run_id(void);
/* Starts writing the identity into every trace file of this process (collector source)
 * and marks forked children as workers of a rank. Call after collector_init. */
void job_start(void);
const char *job_role_name(enum job_role role);
/* This process is a DataLoader worker (the Python layer saw it about to run torch's
 * _worker_loop): role worker, written again at the next drain. Any thread. */
void job_mark_dataloader_worker(void);
/* The program named this process's rank itself (torch.distributed's init_process_group,
 * under torch.multiprocessing.spawn): a plain process with no rank from a launcher becomes
 * that rank, written again at the next drain. Negative values: nothing. Any thread. */
void job_rank_from_program(long rank, long world_size);

#endif
