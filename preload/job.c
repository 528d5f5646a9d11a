/* The process's place in a cluster job, from the launchers' environment variables:
 *
 *   launcher           rank                  size                  local rank        node
 *   PROF_RANK          (overrides the rank; size and local rank from the rows below)
 *   torchrun           RANK                  WORLD_SIZE            LOCAL_RANK        GROUP_RANK
 *   Open MPI           OMPI_COMM_WORLD_RANK  OMPI_COMM_WORLD_SIZE  .._LOCAL_RANK
 *   MPICH/Hydra, IMPI  PMI_RANK              PMI_SIZE              MPI_LOCALRANKID
 *   PMIx               PMIX_RANK
 *   Slurm              SLURM_PROCID          SLURM_NTASKS          SLURM_LOCALID     SLURM_NODEID
 *
 * The first row that names a rank wins (torchrun's RANK before Slurm's SLURM_PROCID, which
 * under `srun torchrun` numbers the agents); size and local rank come from that row, or
 * from the next one that has them. With no row, a plain process that calls
 * torch.distributed's init_process_group(rank=R, world_size=W) is rank R from then on
 * (torch.multiprocessing.spawn's ranks: job_rank_from_program).
 *
 * Roles. A launcher is told by its program, not its environment: mpirun, mpiexec,
 * orterun, prterun, orted, prted, mpiexec.hydra, hydra_pmi_proxy, srun, slurmstepd, and
 * torchrun (its script, or python -m torch.distributed.run/launch). It inherits Slurm's
 * variables under srun, but is no rank. A forked child of a rank (a DataLoader worker) is
 * a worker of that rank, and so is a child started by multiprocessing's spawn or
 * forkserver methods (--multiprocessing-fork, multiprocessing.forkserver in its argv) or
 * its resource tracker, that inherited a rank. A DataLoader worker of any run, ranks or
 * none, is a worker too: the Python layer tells it by what it is about to run (torch's
 * _worker_loop, python_dataloader.c) and calls job_mark_dataloader_worker, often after
 * the file's first META records: the role is written again, and readers take the last
 * value. Any other exec'd program with a rank in
 * its environment is that rank too: a wrapper script and the program it starts are one
 * rank, two processes.
 *
 * Job id: the launcher's id for this one launch (Slurm job and step, torchrun's
 * TORCHELASTIC_RUN_ID unless it is "none", Open MPI's job id, the PMIx namespace). The
 * run id of a process with no PROF_RUN_ID is the job id; PROF_RUN_ID_FROM says who chose
 * the run id (profrun, job, generated; unset: the user), so that profreport can merge
 * the processes of one job whose run ids were chosen apart (two torchrun agents). */
#define _GNU_SOURCE
#include "job.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "settings.h"
#include "trace_format.h"

struct job_rank_vars {
    const char *rank, *size, *local, *node;
};

static const struct job_rank_vars job_rank_table[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", NULL},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", NULL},
    {"PMIX_RANK", NULL, NULL, NULL},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID"},
};
#define JOB_RANK_ROWS (sizeof job_rank_table / sizeof job_rank_table[0])

static const char *const job_launcher_programs[] = {
    "mpirun", "mpiexec",       "orterun",         "prterun", "prte",       "orted",
    "prted",  "mpiexec.hydra", "hydra_pmi_proxy", "srun",    "slurmstepd", "torchrun",
};

static struct job_identity job_id_self = {.rank = -1,
                                          .local_rank = -1,
                                          .world_size = -1,
                                          .node_rank = -1,
                                          .restart = -1,
                                          .rank_from = "",
                                          .launcher = ""};
static const char *job_run_id_from = ""; /* META run_id_from */

/* A whole non-negative decimal number, or -1. */
static long job_number(const char *name)
{
    const char *v = name ? settings_env(name) : NULL;
    if (!v || !*v)
        return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 ? n : -1;
}

static const char *job_base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "";
}

/* The launcher this program is, or NULL. */
static const char *job_launcher_of(int argc, char **argv)
{
    if (argc < 1 || !argv || !argv[0])
        return NULL;
    const char *prog = job_base(argv[0]);
    for (size_t i = 0; i < sizeof job_launcher_programs / sizeof *job_launcher_programs; i++)
        if (!strcmp(prog, job_launcher_programs[i]))
            return job_launcher_programs[i];
    if (strncmp(prog, "python", 6) != 0)
        return NULL;
    /* python [options] /usr/bin/torchrun ... or python -m torch.distributed.run ... */
    for (int i = 1; i < argc && argv[i]; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc && argv[i + 1])
            return !strcmp(argv[i + 1], "torch.distributed.run") ||
                           !strcmp(argv[i + 1], "torch.distributed.launch")
                       ? "torchrun"
                       : NULL;
        if (argv[i][0] != '-')
            return !strcmp(job_base(argv[i]), "torchrun") ? "torchrun" : NULL;
    }
    return NULL;
}

/* A child that multiprocessing started with its spawn or forkserver method. */
static int job_is_multiprocessing_child(int argc, char **argv)
{
    for (int i = 1; i < argc && argv && argv[i]; i++)
        if (!strcmp(argv[i], "--multiprocessing-fork") ||
            strstr(argv[i], "multiprocessing.forkserver") ||
            strstr(argv[i], "multiprocessing.spawn") ||
            strstr(argv[i], "multiprocessing.resource_tracker"))
            return 1;
    return 0;
}

void job_identify(int argc, char **argv)
{
    struct job_identity *j = &job_id_self;
    const struct job_rank_vars *row = NULL;
    for (size_t i = 0; i < JOB_RANK_ROWS && !row; i++)
        if (job_number(job_rank_table[i].rank) >= 0)
            row = &job_rank_table[i];
    /* Size, local rank and node from the rank's row, else the first later row having it. */
    size_t first = row ? (size_t)(row - job_rank_table) : 0;
    for (size_t i = first; i < JOB_RANK_ROWS; i++) {
        if (j->world_size < 0)
            j->world_size = job_number(job_rank_table[i].size);
        if (j->local_rank < 0)
            j->local_rank = job_number(job_rank_table[i].local);
        if (j->node_rank < 0)
            j->node_rank = job_number(job_rank_table[i].node);
    }
    if (row) {
        j->rank = job_number(row->rank);
        j->rank_from = row->rank;
    }
    if (settings_is_set(SETTING_PROF_RANK)) {
        long r = settings_int(SETTING_PROF_RANK);
        if (r >= 0) {
            j->rank = r;
            j->rank_from = "PROF_RANK";
        }
    }
    j->restart = job_number("TORCHELASTIC_RESTART_COUNT");
    const char *launcher = job_launcher_of(argc, argv);
    if (launcher) {
        j->role = JOB_ROLE_LAUNCHER;
        j->launcher = launcher;
        j->rank = j->local_rank = -1; /* srun's SLURM_PROCID numbers the agents */
        j->rank_from = "";
    } else if (j->rank >= 0) {
        j->role = job_is_multiprocessing_child(argc, argv) ? JOB_ROLE_WORKER : JOB_ROLE_RANK;
    }
    job_run_id_from_env(j->job_id, sizeof j->job_id);

    /* Who chose the run id. Unset with PROF_RUN_ID set: the user did. */
    if (settings_is_set(SETTING_PROF_RUN_ID)) {
        job_run_id_from = settings_is_set(SETTING_PROF_RUN_ID_FROM)
                              ? settings_get(SETTING_PROF_RUN_ID_FROM)
                              : "user";
    } else {
        job_run_id_from = j->job_id[0] ? "job" : "generated";
        settings_export(SETTING_PROF_RUN_ID_FROM, job_run_id_from);
    }
}

const struct job_identity *job_self(void)
{
    return &job_id_self;
}

const char *job_run_id(void)
{
    if (settings_is_set(SETTING_PROF_RUN_ID) || !job_id_self.job_id[0])
        return NULL;
    settings_export(SETTING_PROF_RUN_ID, job_id_self.job_id);
    return settings_get(SETTING_PROF_RUN_ID);
}

const char *job_role_name(enum job_role role)
{
    switch (role) {
    case JOB_ROLE_RANK:
        return "rank";
    case JOB_ROLE_LAUNCHER:
        return "launcher";
    case JOB_ROLE_WORKER:
        return "worker";
    default:
        return "process";
    }
}

/* ---- into the trace: a collector source writes the identity at the top of every file
 * (a forked child's file gets the child's) ---- */

static void job_write_meta(const char *key, const char *value)
{
    char rec[512];
    size_t kl = strlen(key) + 1, vl = strlen(value) + 1;
    size_t hl = sizeof(struct prof_record_header);
    if (hl + kl + vl > sizeof rec)
        return;
    memset(rec, 0, sizeof rec);
    memcpy(rec + hl, key, kl);
    memcpy(rec + hl + kl, value, vl);
    uint32_t size = prof_record_align((uint32_t)(hl + kl + vl));
    struct prof_record_header *h = (struct prof_record_header *)rec;
    h->type = PROF_REC_META;
    h->size = (uint16_t)size;
    collector_write(rec, size);
}

static void job_write_meta_long(const char *key, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    job_write_meta(key, buf);
}

/* The role, and what a worker serves. */
static void job_write_role(const struct job_identity *j)
{
    job_write_meta("role", job_role_name(j->role));
    if (j->role == JOB_ROLE_WORKER && j->rank >= 0)
        job_write_meta_long("worker_of_rank", j->rank);
    if (j->role == JOB_ROLE_WORKER && j->worker_kind)
        job_write_meta("worker_kind", j->worker_kind);
}

/* Set (release) once the role changed after job_identify; the next drain writes it. */
static _Atomic int job_role_changed;
static int job_rank_by_program; /* job_rank_from_program set the rank */

/* A rank the program named: into the trace after the preamble's (readers take the last). */
static void job_write_program_rank(const struct job_identity *j)
{
    job_write_meta_long("rank", j->rank);
    if (j->world_size >= 0)
        job_write_meta_long("world_size", j->world_size);
    job_write_meta("rank_from", j->rank_from);
}

static void job_drain(int fresh, int last)
{
    (void)last;
    const struct job_identity *j = &job_id_self;
    /* Cleared before the role is read: a change made meanwhile is written again. */
    int changed = atomic_exchange_explicit(&job_role_changed, 0, memory_order_acquire);
    if (!fresh) {
        if (changed)
            job_write_role(j);
        if (changed && job_rank_by_program)
            job_write_program_rank(j);
        return;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    job_write_role(j);
    if (job_rank_by_program)
        job_write_program_rank(j);
    job_write_meta("node", host);
    if (j->role == JOB_ROLE_LAUNCHER)
        job_write_meta("launcher", j->launcher);
    if (j->rank_from[0] && !job_rank_by_program)
        job_write_meta("rank_from", j->rank_from);
    if (j->node_rank >= 0)
        job_write_meta_long("node_rank", j->node_rank);
    if (j->restart >= 0)
        job_write_meta_long("restart", j->restart);
    if (j->job_id[0])
        job_write_meta("job_id", j->job_id);
    job_write_meta("run_id_from", job_run_id_from);
}

static void job_after_fork_child(void)
{
    /* A DataLoader worker: forked from a rank (or from one of its workers). */
    if (job_id_self.role == JOB_ROLE_RANK || job_id_self.role == JOB_ROLE_WORKER)
        job_id_self.role = JOB_ROLE_WORKER;
}

void job_mark_dataloader_worker(void)
{
    if (job_id_self.role == JOB_ROLE_LAUNCHER)
        return; /* a launcher is never anyone's worker */
    job_id_self.role = JOB_ROLE_WORKER;
    job_id_self.worker_kind = "dataloader";
    /* Release: the drain that sees the flag sees the role. */
    atomic_store_explicit(&job_role_changed, 1, memory_order_release);
}

void job_rank_from_program(long rank, long world_size)
{
    struct job_identity *j = &job_id_self;
    if (rank < 0 || j->rank >= 0 || j->role != JOB_ROLE_PROCESS)
        return; /* a launcher's rank stands; a worker stays its rank's */
    j->rank = rank;
    if (j->world_size < 0 && world_size > 0)
        j->world_size = world_size;
    j->rank_from = "init_process_group";
    j->role = JOB_ROLE_RANK;
    job_rank_by_program = 1;
    /* Release: the drain that sees the flag sees the rank. */
    atomic_store_explicit(&job_role_changed, 1, memory_order_release);
}

void job_start(void)
{
    collector_add_source(job_drain);
    /* Only the role changes in the child; the collector makes its new file. */
    pthread_atfork(NULL, NULL, job_after_fork_child);
}
