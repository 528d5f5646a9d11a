/* jobs: which processes a report covers, as a cluster job sees them. Processes are
 * grouped by job (META job_id) where the launcher named one, else by run id; a process
 * without a job id joins the job of the processes that share its run id (a torchrun agent
 * and its workers). By default the report covers the latest job, and only its ranks (and
 * plain processes): launchers, workers (DataLoader workers of any run, other children of
 * ranks; META role, the last value) and earlier restart attempts are left out unless
 * asked for, and the report says what it left out. Also the
 * capture windows the processes recorded (META window*), to print. */
#ifndef REPORT_JOBS_H
#define REPORT_JOBS_H

#include <stdio.h>

#include "model.h"

struct jobs_window {
    char *desc;                /* META window: "steps 100-120 (optimizer step)", ... */
    size_t nprocs;             /* processes with this window */
    long steps_min, steps_max; /* META window_steps; -1 when none said */
    size_t intervals_min, intervals_max;
    double open_s_min, open_s_max; /* time open over closed intervals */
    int open_at_end;               /* some process ended with the window open */
};

struct jobs_report {
    char *key;       /* the job (or run) reported; "" when none */
    int by_job;      /* key is a launcher's job id */
    size_t nrun_ids; /* distinct run ids among the processes of the job */
    long world_size; /* largest world_size among the ranks; -1 if none */
    size_t nranks;   /* distinct ranks reported */
    long restart;    /* the restart attempt reported; -1 if none */
    char *left_out;  /* "1 launcher (torchrun), 2 DataLoader worker processes", or NULL */
    char **warnings;
    size_t nwarnings;
    struct jobs_window *windows;
    size_t nwindows;
    /* The host whose ranks outnumber its CPUs the most (META cpus: their affinity), or
     * NULL: they compete for the cores, compute and collectives alike. */
    char *crowded_host;
    size_t crowded_ranks;
    long crowded_cpus;
};

/* The role of a process: META role ("rank", "launcher", "worker", "process"); "process"
 * for traces that carry none. */
const char *jobs_role(const struct model_process *p);

/* Keeps the processes of one job or run (run_id: the job id or run id asked for; all_runs:
 * every one; else the latest) and, unless all_roles, only its ranks and plain processes.
 * Says on notes which runs exist when there are several. Fills out; frees the processes
 * not kept; updates *n. Returns -1 (said on notes) when run_id matches nothing. */
int jobs_select(struct model_process **procs, size_t *n, const char *run_id, int all_runs,
                int all_roles, struct jobs_report *out, FILE *notes);
/* Text: a "Job" section when there is something to say (a job, roles left out, a capture
 * window); nothing otherwise. */
void jobs_print(FILE *out, const struct jobs_report *r);
/* JSON: the same as an object (a json_t *, declared void * to keep jansson out). */
void *jobs_json(const struct jobs_report *r);
void jobs_free(struct jobs_report *r);

#endif
