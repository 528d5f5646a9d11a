#include "summarize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "format.h"
#include "model.h"
#include "summary_file.h"
#include "trace_dir.h"
#include "trace_read.h"

struct summarize_list {
    char **paths;
    size_t n, cap;
    int failed;
};

static void summarize_push(struct summarize_list *l, char *path)
{
    l->paths = report_grow(l->paths, &l->cap, l->n + 1, sizeof *l->paths);
    l->paths[l->n++] = path;
}

static void summarize_collect(struct summarize_list *l, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        format_say(stderr, "%s: cannot open: %s", path, strerror(errno));
        l->failed = 1;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        summarize_push(l, report_strdup(path));
        return;
    }
    static const char *const suffixes[] = {".trace", NULL};
    char **paths;
    long n = trace_dir_list(path, suffixes, &paths);
    if (n < 0) {
        format_say(stderr, "%s: cannot read directory: %s", path, strerror(errno));
        l->failed = 1;
        return;
    }
    if (n == 0)
        format_say(stderr, "%s: no *.trace files in this directory", path);
    for (long i = 0; i < n; i++)
        summarize_push(l, paths[i]); /* the list takes the path */
    free(paths);
}

char *summarize_summary_path(const char *trace)
{
    size_t len = strlen(trace);
    if (len > 6 && !strcmp(trace + len - 6, ".trace"))
        len -= 6;
    size_t n = strlen(summary_file_suffix) + 1;
    char *out = malloc(len + n);
    if (!out)
        report_oom();
    memcpy(out, trace, len);
    memcpy(out + len, summary_file_suffix, n);
    return out;
}

/* This task's number and the number of tasks, from the launcher that started it. */
static void summarize_task(long *task, long *ntasks)
{
    static const char *const vars[][2] = {
        {"SLURM_PROCID", "SLURM_NTASKS"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
    };
    *task = 0;
    *ntasks = 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *a = getenv(vars[i][0]), *b = getenv(vars[i][1]);
        if (!a || !b)
            continue;
        char *ea, *eb;
        long t = strtol(a, &ea, 10), n = strtol(b, &eb, 10);
        if (*a && *b && !*ea && !*eb && n > 0 && t >= 0 && t < n) {
            *task = t;
            *ntasks = n;
            return;
        }
    }
}

int summarize_up_to_date(const char *trace, const char *summary)
{
    return summary_file_bound(summary, trace, NULL, 0);
}

/* One trace to its summary. 0, or -1 said on stderr. */
static int summarize_one(const char *trace)
{
    char err[512], why[128];
    if (trace_file_not_a_trace(trace, why, sizeof why)) {
        format_say(stderr, "%s: %s; not summarized", trace, why);
        return -1;
    }
    /* Taken before the read: a trace that grows meanwhile (a job still running) no
     * longer matches its summary, and is read instead. */
    struct summary_trace_id id;
    if (summary_file_trace_id(trace, &id) != 0) {
        format_say(stderr, "%s: cannot read: %s; not summarized", trace, strerror(errno));
        return -1;
    }
    report_heap_for_trace((long long)id.size);
    struct model_process *p = model_load_file(trace, err, sizeof err);
    if (!p) {
        format_say(stderr, "%s", err);
        return -1;
    }
    char *out = summarize_summary_path(trace);
    int rc = summary_file_write(out, p, &id, err, sizeof err);
    if (rc != 0) {
        format_say(stderr, "%s", err);
    }
    free(out);
    model_process_free(p);
    return rc;
}

static long long summarize_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

int summarize_run(char *const *paths, int npaths, long jobs, FILE *out)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct summarize_list all = {0};
    for (int i = 0; i < npaths; i++)
        summarize_collect(&all, paths[i]);
    long task, ntasks;
    summarize_task(&task, &ntasks);
    /* This task's share, less the traces already summarized. */
    struct summarize_list todo = {0};
    size_t mine = 0, fresh = 0;
    for (size_t i = 0; i < all.n; i++) {
        if ((long)(i % (size_t)ntasks) != task)
            continue;
        mine++;
        char *summary = summarize_summary_path(all.paths[i]);
        if (summarize_up_to_date(all.paths[i], summary))
            fresh++;
        else
            summarize_push(&todo, all.paths[i]);
        free(summary);
    }
    if (jobs <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = cpus > 0 ? cpus : 1;
    }
    if ((size_t)jobs > todo.n)
        jobs = todo.n ? (long)todo.n : 1;
    fflush(out);
    fflush(stderr);
    int failed = all.failed;
    /* Workers are processes: each reads its traces one at a time, and a trace that
     * brings one down costs only that worker's share. */
    pid_t *pids = calloc((size_t)jobs, sizeof *pids);
    if (!pids)
        report_oom();
    for (long w = 0; w < jobs && todo.n; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            int bad = 0;
            for (size_t i = (size_t)w; i < todo.n; i += (size_t)jobs)
                bad |= summarize_one(todo.paths[i]) != 0;
            fflush(stderr);
            _exit(bad ? 1 : 0);
        }
        if (pid < 0) { /* fewer workers: this one's share runs here */
            fprintf(stderr, "profreport: cannot start a worker: %s\n", strerror(errno));
            for (size_t i = (size_t)w; i < todo.n; i += (size_t)jobs)
                failed |= summarize_one(todo.paths[i]) != 0;
        }
        pids[w] = pid;
    }
    for (long w = 0; w < jobs; w++) {
        int status = 0;
        if (pids[w] <= 0)
            continue;
        pid_t got;
        while ((got = waitpid(pids[w], &status, 0)) < 0 && errno == EINTR)
            ;
        if (got != pids[w] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "profreport: a summarize worker died of signal %d\n",
                        WTERMSIG(status));
            failed = 1;
        }
    }
    free(pids);
    /* What was written is counted on disk: a worker's failure says how many, not which. */
    long long trace_bytes = 0, summary_bytes = 0;
    size_t done = 0;
    for (size_t i = 0; i < todo.n; i++) {
        char *summary = summarize_summary_path(todo.paths[i]);
        if (summarize_up_to_date(todo.paths[i], summary)) {
            done++;
            trace_bytes += summarize_size(todo.paths[i]);
            summary_bytes += summarize_size(summary);
        }
        free(summary);
    }
    if (done < todo.n)
        failed = 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (done < todo.n)
        fprintf(out, "profreport: summarized %zu of %zu traces", done, todo.n);
    else
        fprintf(out, "profreport: summarized %zu trace%s", done, done == 1 ? "" : "s");
    fprintf(out, " (%.1f MB) into %.1f KB of summaries in %.2f s with %ld worker%s",
            (double)trace_bytes / 1e6, (double)summary_bytes / 1e3, secs, jobs,
            jobs == 1 ? "" : "s");
    if (done < todo.n)
        fprintf(out, "; %zu failed (said above)", todo.n - done);
    if (fresh)
        fprintf(out, "; %zu already up to date", fresh);
    if (ntasks > 1)
        fprintf(out, "; task %ld of %ld: %zu of %zu traces", task, ntasks, mine, all.n);
    fputc('\n', out);
    for (size_t i = 0; i < all.n; i++)
        free(all.paths[i]);
    free(all.paths);
    free(todo.paths);
    return failed ? 1 : 0;
}
