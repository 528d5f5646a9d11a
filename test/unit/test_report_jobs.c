/* jobs: which processes a report covers: grouping by job, linking a launcher by its run id,
 * roles left out, restarts, missing ranks, split jobs, capture windows. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "jobs.h"
#include "model.h"
#include "pid_clash.h"
#include "report_test.h"

#define JOBS_MAX 8
static char paths[JOBS_MAX][64];
static struct model_process *procs[JOBS_MAX];
static size_t nprocs;

static void setup(void)
{
    nprocs = 0;
}

static void teardown(void)
{
    for (size_t i = 0; i < JOBS_MAX; i++)
        if (paths[i][0])
            unlink(paths[i]);
    memset(paths, 0, sizeof paths);
}

TestSuite(report_jobs, .init = setup, .fini = teardown);

/* A trace of one process: pairs of META key, value, ending with NULL. */
static void add(const char *first, ...)
{
    cr_assert(nprocs < JOBS_MAX);
    char *path = paths[nprocs];
    report_test_temp(path, "report_jobs");
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    char pid[16];
    snprintf(pid, sizeof pid, "%zu", 100 + nprocs);
    trace_build_meta(&b, "pid", pid);
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *))
        trace_build_meta(&b, k, va_arg(ap, const char *));
    va_end(ap);
    trace_build_close(&b);
    procs[nprocs++] = report_test_load(path);
}

static void free_kept(size_t n)
{
    for (size_t i = 0; i < n; i++)
        model_process_free(procs[i]);
}

static int has_warning(const struct jobs_report *r, const char *text)
{
    for (size_t i = 0; i < r->nwarnings; i++)
        if (strstr(r->warnings[i], text))
            return 1;
    return 0;
}

Test(report_jobs, agent_joins_its_ranks_job_and_is_left_out)
{
    /* two agents, each with its own run id; their ranks carry both run ids and the job */
    add("run_id", "a", "role", "launcher", "launcher", "torchrun", "start_realtime_ns", "10", NULL);
    add("run_id", "b", "role", "launcher", "launcher", "torchrun", "start_realtime_ns", "11", NULL);
    add("run_id", "a", "role", "rank", "rank", "0", "world_size", "3", "job_id", "te-x",
        "run_id_from", "generated", "start_realtime_ns", "20", NULL);
    add("run_id", "b", "role", "rank", "rank", "1", "world_size", "3", "job_id", "te-x",
        "run_id_from", "generated", "start_realtime_ns", "21", NULL);
    add("run_id", "b", "role", "worker", "rank", "1", "worker_of_rank", "1", "job_id", "te-x",
        "run_id_from", "generated", "start_realtime_ns", "30", NULL);
    /* a DataLoader worker told as such after its first role was written: the last wins */
    add("run_id", "a", "role", "process", "start_realtime_ns", "31", "role", "worker",
        "worker_kind", "dataloader", NULL);
    add("run_id", "old", "role", "process", "start_realtime_ns", "1", NULL);
    size_t n = nprocs;
    struct jobs_report r;
    FILE *notes = fopen("/dev/null", "w");
    cr_assert_eq(jobs_select(procs, &n, NULL, 0, 0, &r, notes), 0);
    fclose(notes);
    cr_assert_str_eq(r.key, "te-x");
    cr_assert(r.by_job);
    cr_assert_eq(r.nrun_ids, 2);
    cr_assert_eq(n, 2, "the two ranks only");
    cr_assert_str_eq(r.left_out, "2 launcher processes (torchrun), 1 DataLoader worker process, "
                                 "1 worker of ranks (forked or spawned children)");
    cr_assert(has_warning(&r, "job te-x looks split: its processes carry 2 run ids (a, b)"));
    cr_assert(has_warning(&r, "no trace of rank 2 of world size 3"));
    cr_assert_eq(r.world_size, 3);
    cr_assert_eq(r.nranks, 2);
    free_kept(n);
    jobs_free(&r);
}

Test(report_jobs, all_roles_keeps_everyone_and_run_picks_by_job_id)
{
    add("run_id", "a", "role", "launcher", "launcher", "mpirun", NULL);
    add("run_id", "a", "role", "rank", "rank", "0", "world_size", "1", "job_id", "ompi-1",
        "run_id_from", "generated", NULL);
    add("run_id", "z", "role", "process", "start_realtime_ns", "99", NULL);
    size_t n = nprocs;
    struct jobs_report r;
    cr_assert_eq(jobs_select(procs, &n, "ompi-1", 0, 1, &r, stderr), 0);
    cr_assert_eq(n, 2);
    cr_assert_null(r.left_out, "nothing left out with --all-roles");
    cr_assert_eq(r.nwarnings, 0);
    free_kept(n);
    jobs_free(&r);
}

Test(report_jobs, a_users_run_id_is_not_merged_by_job)
{
    /* two runs the user named, in one Slurm step: two runs, the latest reported */
    add("run_id", "first", "role", "rank", "rank", "0", "job_id", "slurm-1.0", "run_id_from",
        "user", "start_realtime_ns", "5", NULL);
    add("run_id", "second", "role", "rank", "rank", "0", "job_id", "slurm-1.0", "run_id_from",
        "user", "start_realtime_ns", "6", NULL);
    size_t n = nprocs;
    struct jobs_report r;
    FILE *notes = fopen("/dev/null", "w");
    cr_assert_eq(jobs_select(procs, &n, NULL, 0, 0, &r, notes), 0);
    fclose(notes);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(r.key, "second");
    cr_assert_not(r.by_job);
    free_kept(n);
    jobs_free(&r);
}

Test(report_jobs, earlier_restarts_left_out)
{
    for (int attempt = 0; attempt < 2; attempt++)
        for (int rank = 0; rank < 2; rank++) {
            char a[8], k[8];
            snprintf(a, sizeof a, "%d", attempt);
            snprintf(k, sizeof k, "%d", rank);
            add("run_id", "r", "role", "rank", "rank", k, "world_size", "2", "restart", a, "job_id",
                "te-r", "run_id_from", "job", NULL);
        }
    size_t n = nprocs;
    struct jobs_report r;
    cr_assert_eq(jobs_select(procs, &n, NULL, 0, 0, &r, stderr), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(r.restart, 1);
    cr_assert_str_eq(r.left_out, "2 processes of restart attempts before 1");
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(model_meta_get(procs[i], "restart"), "1");
    free_kept(n);
    jobs_free(&r);
}

Test(report_jobs, windows_merged_by_description)
{
    for (int i = 0; i < 2; i++)
        add("run_id", "w", "window", "steps 1-2 (optimizer step)", "window_open",
            "1000000000 step 1", "window_close", i ? "3000000000 step 2" : "2000000000 step 2",
            "window_steps", "2", NULL);
    add("run_id", "w", "window", "signal 12 toggles", "window_open", "5 signal 12", NULL);
    size_t n = nprocs;
    struct jobs_report r;
    cr_assert_eq(jobs_select(procs, &n, NULL, 0, 0, &r, stderr), 0);
    cr_assert_eq(r.nwindows, 2);
    const struct jobs_window *w = &r.windows[0];
    cr_assert_str_eq(w->desc, "steps 1-2 (optimizer step)");
    cr_assert_eq(w->nprocs, 2);
    cr_assert_eq(w->steps_min, 2);
    cr_assert_eq(w->intervals_max, 1);
    cr_assert_float_eq(w->open_s_min, 1.0, 1e-9);
    cr_assert_float_eq(w->open_s_max, 2.0, 1e-9);
    cr_assert_not(w->open_at_end);
    cr_assert(r.windows[1].open_at_end);
    cr_assert_eq(r.windows[1].intervals_max, 0);
    free_kept(n);
    jobs_free(&r);
}

Test(report_jobs, one_pid_held_by_different_processes_is_kept_apart_and_said_once)
{
    /* pid 7 on host h: a process, its exec'd program (the same start), two others of other
     * pid namespaces, one started in the same tick; pid 7 on host g; pid 8 unknown facts */
    add("run_id", "r", "pid", "7", "host", "h", "proc_start_ticks", "50", "pid_ns", "pid:[1]",
        NULL);
    add("run_id", "r", "pid", "7", "host", "h", "proc_start_ticks", "50", "pid_ns", "pid:[1]",
        NULL);
    add("run_id", "r", "pid", "7", "host", "h", "proc_start_ticks", "90", "pid_ns", "pid:[2]",
        NULL);
    add("run_id", "r", "pid", "7", "host", "h", "proc_start_ticks", "50", "pid_ns", "pid:[3]",
        NULL);
    add("run_id", "r", "pid", "7", "host", "g", "proc_start_ticks", "50", "pid_ns", "pid:[1]",
        NULL);
    add("run_id", "r", "pid", "8", "host", "h", NULL);
    add("run_id", "r", "pid", "8", "host", "h", "proc_start_ticks", "5", NULL);
    size_t n = nprocs;
    struct jobs_report r;
    cr_assert_eq(jobs_select(procs, &n, NULL, 0, 0, &r, stderr), 0);
    cr_assert_eq(n, 7);
    int expect[] = {0, 0, 1, 2, 3, 0, 0};
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(procs[i]->pid_instance, expect[i], "process %zu", i);
    cr_expect_eq(pid_clash_export_pid(procs[2]), 7 + PID_CLASH_STRIDE);
    cr_expect_eq(pid_clash_export_pid(procs[0]), 7);
    size_t said = 0;
    for (size_t i = 0; i < r.nwarnings; i++)
        said += strstr(r.warnings[i], "host and pid with another process") != NULL;
    cr_expect_eq(said, 1);
    cr_expect(has_warning(&r, "2 processes share host and pid with another process of the "
                              "inputs (e.g. pid 7 on h"));
    free_kept(n);
    jobs_free(&r);
}
