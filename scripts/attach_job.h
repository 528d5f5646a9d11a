/* profrun attach: which processes (attach_job.c). */
#ifndef PROF_ATTACH_JOB_H
#define PROF_ATTACH_JOB_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* The children of parent (the ranks under a torchrun agent or mpirun on this node), up
 * to max, into out; -1 when /proc cannot be read. */
int attach_children(pid_t parent, pid_t *out, int max);
/* The ranks of Slurm job `job` on this node (see attach_job.c). */
int attach_job_ranks(const char *job, pid_t *out, int max);
/* profrun attach --slurm-job: runs `profrun attach --job JOB` on each node of the job
 * through srun --overlap (pass: the options passed on), all with run_id and start_after;
 * then the report of out_abs unless no_report. Returns the exit status. */
int attach_slurm(const char *job, const char *run_id, const char *out_abs, uint64_t start_after,
                 const char *report, int no_report, char **pass, int npass,
                 volatile sig_atomic_t *interrupted);

#endif
