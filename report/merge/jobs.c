#include "jobs.h"
#include "loader_workers.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "format.h"
#include "pid_clash.h"

/* The last value of a META key (later records of a process win), or NULL. */
static const char *jobs_meta(const struct model_process *p, const char *key)
{
    for (size_t i = p->nmeta; i-- > 0;)
        if (!strcmp(p->meta[i].key, key))
            return p->meta[i].value;
    return NULL;
}

static long jobs_meta_long(const struct model_process *p, const char *key)
{
    const char *v = jobs_meta(p, key);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

const char *jobs_role(const struct model_process *p)
{
    const char *r = jobs_meta(p, "role");
    return r && *r ? r : "process";
}

static const char *jobs_run_of(const struct model_process *p)
{
    return p->run_id ? p->run_id : "";
}

/* A job id names the group unless the run id was chosen on purpose (by the user or
 * profrun): then the run is what the user asked for. */
static const char *jobs_job_of(const struct model_process *p)
{
    const char *job = jobs_meta(p, "job_id");
    const char *from = jobs_meta(p, "run_id_from");
    if (!job || !*job || !from || (strcmp(from, "job") && strcmp(from, "generated")))
        return NULL;
    return job;
}

static void *jobs_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    return p;
}

/* The group key of every process: its job, the job of a process sharing its run id, or
 * its run id. keys[i] points into the processes' strings. by_job[i]: a job id. */
static void jobs_keys(struct model_process **procs, size_t n, const char **keys, int *by_job)
{
    for (size_t i = 0; i < n; i++) {
        const char *job = jobs_job_of(procs[i]);
        keys[i] = job ? job : jobs_run_of(procs[i]);
        by_job[i] = job != NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (by_job[i])
            continue;
        for (size_t k = 0; k < n; k++) {
            if (by_job[k] && !strcmp(jobs_run_of(procs[k]), jobs_run_of(procs[i]))) {
                keys[i] = keys[k];
                by_job[i] = 1;
                break;
            }
        }
    }
}

struct jobs_group {
    const char *key;
    uint64_t start;
    size_t nfiles;
};

static void jobs_warn(struct jobs_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void jobs_warn(struct jobs_report *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t cap = r->nwarnings;
    r->warnings = report_grow(r->warnings, &cap, r->nwarnings + 1, sizeof *r->warnings);
    r->warnings[r->nwarnings++] = report_strdup(buf);
}

/* Appends ", text" (or text) to *s. */
static void jobs_append(char **s, const char *text)
{
    size_t old = *s ? strlen(*s) : 0;
    char *n = realloc(*s, old + strlen(text) + 3);
    if (!n) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    if (old)
        memcpy(n + old, ", ", 3);
    else
        n[0] = '\0';
    strcat(n, text);
    *s = n;
}

/* The host whose ranks outnumber its CPUs the most (a review's 4-rank gloo job on 2 cores
 * read its collectives' slowness as transfer). Each rank's host and CPUs read once: the
 * pairs compared are plain strings (1,024 ranks: a million compares). */
static void jobs_check_cpus(struct model_process **procs, size_t n, struct jobs_report *r)
{
    const char **host = jobs_xcalloc(n ? n : 1, sizeof *host);
    long *cpus = jobs_xcalloc(n ? n : 1, sizeof *cpus);
    for (size_t i = 0; i < n; i++)
        if (procs[i]->rank >= 0) {
            host[i] = model_meta_get(procs[i], "host");
            cpus[i] = jobs_meta_long(procs[i], "cpus");
        }
    double worst = 1.0;
    for (size_t i = 0; i < n; i++) {
        long least = cpus[i];
        size_t ranks = 0, first = 1;
        for (size_t k = 0; host[i] && least > 0 && k < n; k++) {
            if (!host[k] || strcmp(host[k], host[i]))
                continue;
            first &= k >= i; /* each host once: from its first rank */
            ranks++;
            least = cpus[k] > 0 && cpus[k] < least ? cpus[k] : least;
        }
        if (ranks && first && (double)ranks / (double)least > worst) {
            worst = (double)ranks / (double)least;
            free(r->crowded_host);
            r->crowded_host = report_strdup(host[i]);
            r->crowded_ranks = ranks;
            r->crowded_cpus = least;
        }
    }
    free(host);
    free(cpus);
}

static void jobs_check_ranks(struct model_process **procs, size_t n, struct jobs_report *r)
{
    long world = -1, max_rank = -1;
    for (size_t i = 0; i < n; i++) {
        long w = jobs_meta_long(procs[i], "world_size");
        if (procs[i]->rank >= 0 && w > world)
            world = w;
        if (procs[i]->rank > max_rank)
            max_rank = procs[i]->rank;
    }
    r->world_size = world;
    long span = world > max_rank + 1 ? world : max_rank + 1;
    if (span <= 0)
        return;
    if (span > 1 << 24)
        span = 1 << 24; /* a nonsense world size: check what is there */
    char *seen = jobs_xcalloc((size_t)span, 1);
    for (size_t i = 0; i < n; i++)
        if (procs[i]->rank >= 0 && procs[i]->rank < span && !seen[procs[i]->rank]) {
            seen[procs[i]->rank] = 1;
            r->nranks++;
        }
    if (world > 0 && r->nranks < (size_t)world) {
        char list[512] = "";
        size_t used = 0, missing = 0;
        for (long k = 0; k < world; k++) {
            if (seen[k])
                continue;
            if (missing++ < 16 && used < sizeof list - 32)
                used +=
                    (size_t)snprintf(list + used, sizeof list - used, "%s%ld", used ? ", " : "", k);
        }
        jobs_warn(r,
                  "%s: no trace of rank%s %s%s of world size %ld (%zu missing): the merged "
                  "tables lack them",
                  r->key[0] ? r->key : "the run", missing == 1 ? "" : "s", list,
                  missing > 16 ? ", ..." : "", world, missing);
    }
    free(seen);
}

/* Whether a process is left out by default; why into *why ("launcher", ...). */
static int jobs_left_out(const struct model_process *p, long restart, const char **why)
{
    const char *role = jobs_role(p);
    if (!strcmp(role, "launcher") || !strcmp(role, "worker")) {
        *why = role;
        return 1;
    }
    long k = jobs_meta_long(p, "restart");
    if (restart >= 0 && k >= 0 && k < restart) {
        *why = "restart";
        return 1;
    }
    return 0;
}

/* Whether p is a plain process on the host of a rank and the parent of one (the ranks
 * torch.multiprocessing.spawn started, which name their rank in init_process_group). */
static int jobs_started_ranks(struct model_process *const *procs, size_t n,
                              const struct model_process *p)
{
    if (strcmp(jobs_role(p), "process") || p->pid < 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (procs[i]->ppid == p->pid && !strcmp(jobs_role(procs[i]), "rank") &&
            !strcmp(procs[i]->host ? procs[i]->host : "", p->host ? p->host : ""))
            return 1;
    return 0;
}

/* starter[i]: procs[i] started ranks itself, or is a plain child of one that did
 * (multiprocessing's resource tracker): the job's launcher, left out like torchrun's. */
static char *jobs_starters(struct model_process *const *procs, size_t n)
{
    char *starter = jobs_xcalloc(n, 1);
    for (size_t i = 0; i < n; i++)
        starter[i] = (char)jobs_started_ranks(procs, n, procs[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n && !starter[i]; j++)
            starter[i] = starter[j] == 1 && procs[i]->ppid == procs[j]->pid &&
                                 !strcmp(jobs_role(procs[i]), "process") &&
                                 !strcmp(procs[i]->host ? procs[i]->host : "",
                                         procs[j]->host ? procs[j]->host : "")
                             ? 2
                             : 0;
    return starter;
}

static void jobs_filter_roles(struct model_process **procs, size_t *n, int all_roles,
                              struct jobs_report *r)
{
    long restart = -1;
    for (size_t i = 0; i < *n; i++) {
        long k = jobs_meta_long(procs[i], "restart");
        if (!strcmp(jobs_role(procs[i]), "rank") && k > restart)
            restart = k;
    }
    r->restart = restart;
    size_t launchers = 0, workers = 0, loaders = 0, earlier = 0, starters = 0, kept = 0;
    char names[256] = "";
    loader_workers_note(procs, *n); /* (the findings name their work) */
    char *starter = jobs_starters(procs, *n);
    for (size_t i = 0; i < *n; i++) {
        const char *why = "starter";
        if (!starter[i] && !jobs_left_out(procs[i], restart, &why)) {
            procs[kept++] = procs[i];
            continue;
        }
        if (starter[i]) {
            starters++;
        } else if (!strcmp(why, "launcher")) {
            launchers++;
            const char *name = jobs_meta(procs[i], "launcher");
            if (name && !strstr(names, name) && strlen(names) + strlen(name) + 3 < sizeof names) {
                if (names[0])
                    strcat(names, ", ");
                strcat(names, name);
            }
        } else if (!strcmp(why, "worker")) {
            const char *kind = jobs_meta(procs[i], "worker_kind");
            if (kind && !strcmp(kind, "dataloader"))
                loaders++;
            else
                workers++;
        } else {
            earlier++;
        }
        if (all_roles)
            procs[kept++] = procs[i];
        else
            model_process_free(procs[i]);
    }
    *n = kept;
    free(starter);
    if (all_roles)
        return; /* nothing was left out */
    char buf[512];
    if (launchers) {
        snprintf(buf, sizeof buf, "%zu launcher process%s (%s)", launchers,
                 launchers == 1 ? "" : "es", names[0] ? names : "?");
        jobs_append(&r->left_out, buf);
    }
    if (starters) {
        snprintf(buf, sizeof buf,
                 "%zu process%s that started the ranks (their parent%s: "
                 "torch.multiprocessing.spawn or the like)",
                 starters, starters == 1 ? "" : "es",
                 starters == 1 ? "" : " and its other children");
        jobs_append(&r->left_out, buf);
    }
    if (loaders) {
        snprintf(buf, sizeof buf, "%zu DataLoader worker process%s", loaders,
                 loaders == 1 ? "" : "es");
        jobs_append(&r->left_out, buf);
    }
    if (workers) {
        snprintf(buf, sizeof buf, "%zu worker%s of ranks (forked or spawned children)", workers,
                 workers == 1 ? "" : "s");
        jobs_append(&r->left_out, buf);
    }
    if (earlier) {
        snprintf(buf, sizeof buf, "%zu process%s of restart attempts before %ld", earlier,
                 earlier == 1 ? "" : "es", restart);
        jobs_append(&r->left_out, buf);
    }
}

/* The capture windows of the processes reported, merged by their description. */
static void jobs_collect_windows(struct model_process **procs, size_t n, struct jobs_report *r)
{
    for (size_t i = 0; i < n; i++) {
        const struct model_process *p = procs[i];
        const char *desc = jobs_meta(p, "window");
        if (!desc)
            continue;
        size_t intervals = 0;
        double open_s = 0;
        uint64_t opened = 0;
        int open = 0;
        for (size_t m = 0; m < p->nmeta; m++) {
            const char *k = p->meta[m].key;
            uint64_t t = strtoull(p->meta[m].value, NULL, 10);
            if (!strcmp(k, "window_open") && !open) {
                open = 1;
                opened = t;
            } else if (!strcmp(k, "window_close") && open) {
                open = 0;
                intervals++;
                open_s += t > opened ? (double)(t - opened) / 1e9 : 0;
            }
        }
        long steps = jobs_meta_long(p, "window_steps");
        size_t w = 0;
        while (w < r->nwindows && strcmp(r->windows[w].desc, desc))
            w++;
        if (w == r->nwindows) {
            size_t cap = r->nwindows;
            r->windows = report_grow(r->windows, &cap, r->nwindows + 1, sizeof *r->windows);
            struct jobs_window *nw = &r->windows[r->nwindows++];
            memset(nw, 0, sizeof *nw);
            nw->desc = report_strdup(desc);
            nw->steps_min = nw->steps_max = steps;
            nw->intervals_min = nw->intervals_max = intervals;
            nw->open_s_min = nw->open_s_max = open_s;
        }
        struct jobs_window *x = &r->windows[w];
        x->nprocs++;
        if (steps >= 0 && (x->steps_min < 0 || steps < x->steps_min))
            x->steps_min = steps;
        if (steps > x->steps_max)
            x->steps_max = steps;
        if (intervals < x->intervals_min)
            x->intervals_min = intervals;
        if (intervals > x->intervals_max)
            x->intervals_max = intervals;
        if (open_s < x->open_s_min)
            x->open_s_min = open_s;
        if (open_s > x->open_s_max)
            x->open_s_max = open_s;
        x->open_at_end |= open;
    }
}

int jobs_select(struct model_process **procs, size_t *n, const char *run_id, int all_runs,
                int all_roles, struct jobs_report *r, FILE *notes)
{
    memset(r, 0, sizeof *r);
    r->world_size = r->restart = -1;
    const char **keys = jobs_xcalloc(*n, sizeof *keys);
    int *by_job = jobs_xcalloc(*n, sizeof *by_job);
    jobs_keys(procs, *n, keys, by_job);
    struct jobs_group *groups = jobs_xcalloc(*n, sizeof *groups);
    size_t ngroups = 0;
    for (size_t i = 0; i < *n; i++) {
        size_t g = 0;
        while (g < ngroups && strcmp(groups[g].key, keys[i]))
            g++;
        if (g == ngroups)
            groups[ngroups++] = (struct jobs_group){keys[i], procs[i]->start_realtime_ns, 0};
        groups[g].nfiles++;
        /* A job starts when its first process does: the launcher starts first. */
        if (procs[i]->start_realtime_ns &&
            (!groups[g].start || procs[i]->start_realtime_ns < groups[g].start))
            groups[g].start = procs[i]->start_realtime_ns;
    }
    for (size_t i = 1; i < ngroups; i++) { /* by start: a handful of groups */
        struct jobs_group t = groups[i];
        size_t j = i;
        for (; j > 0 && groups[j - 1].start > t.start; j--)
            groups[j] = groups[j - 1];
        groups[j] = t;
    }
    const char *pick = NULL;
    int rc = 0;
    if (run_id) {
        for (size_t i = 0; i < *n && !pick; i++)
            if (!strcmp(keys[i], run_id) || !strcmp(jobs_run_of(procs[i]), run_id))
                pick = run_id;
        if (!pick) {
            /* Run and job ids come from the traces and the command line: escaped. */
            fputs("profreport: no input belongs to run '", notes);
            format_fputs_escaped(notes, run_id);
            fputs("'; runs found:", notes);
            for (size_t g = 0; g < ngroups; g++) {
                fputc(' ', notes);
                format_fputs_escaped(notes, groups[g].key[0] ? groups[g].key : "(none)");
            }
            fprintf(notes, "\n");
            rc = -1;
        }
    } else if (!all_runs && ngroups > 0) {
        pick = groups[ngroups - 1].key;
        if (ngroups > 1) {
            fprintf(notes, "profreport: the inputs hold %zu runs:", ngroups);
            for (size_t g = 0; g < ngroups; g++) {
                fputc(' ', notes);
                format_fputs_escaped(notes, groups[g].key[0] ? groups[g].key : "(none)");
                fprintf(notes, " (%zu file%s)%s", groups[g].nfiles,
                        groups[g].nfiles == 1 ? "" : "s", g + 1 < ngroups ? "," : "");
            }
            fputs("; reporting the latest, ", notes);
            format_fputs_escaped(notes, pick[0] ? pick : "(none)");
            fputs(". Use --run ID to pick one or --all-runs to merge them.\n", notes);
        }
    }
    r->key = report_strdup(pick ? pick : all_runs && ngroups == 1 ? groups[0].key : "");
    if (pick) {
        size_t kept = 0;
        for (size_t i = 0; i < *n; i++) {
            if (!strcmp(keys[i], pick) || !strcmp(jobs_run_of(procs[i]), pick)) {
                r->by_job |= by_job[i];
                procs[kept++] = procs[i];
            } else {
                model_process_free(procs[i]);
            }
        }
        *n = kept;
    }
    free(keys);
    free(by_job);
    free(groups);
    if (rc != 0)
        return rc;

    /* One job, several run ids: its processes were started apart (two torchrun agents,
     * mpirun -x LD_PRELOAD with each rank naming its own run). */
    const char **ids = jobs_xcalloc(*n, sizeof *ids);
    char runs[256] = "";
    for (size_t i = 0; i < *n; i++) {
        const char *id = jobs_run_of(procs[i]);
        size_t k = 0;
        while (k < r->nrun_ids && strcmp(ids[k], id))
            k++;
        if (k < r->nrun_ids)
            continue;
        ids[r->nrun_ids++] = id;
        if (strlen(runs) + strlen(id) + 8 < sizeof runs)
            snprintf(runs + strlen(runs), sizeof runs - strlen(runs), "%s%s", runs[0] ? ", " : "",
                     id[0] ? id : "(none)");
    }
    free(ids);
    if (r->by_job && r->nrun_ids > 1)
        jobs_warn(r,
                  "job %s looks split: its processes carry %zu run ids (%s); they are merged "
                  "by the job id",
                  r->key, r->nrun_ids, runs);
    jobs_filter_roles(procs, n, all_roles, r);
    jobs_check_ranks(procs, *n, r);
    jobs_check_cpus(procs, *n, r);
    jobs_collect_windows(procs, *n, r);
    int64_t pid = -1;
    const char *host = "";
    size_t clashes = pid_clash_mark(procs, *n, &pid, &host);
    if (clashes)
        jobs_warn(r,
                  "%zu process%s share%s host and pid with another process of the inputs "
                  "(e.g. pid %lld on %s: their traces record different processes; pid "
                  "namespaces?); kept apart: the timeline exports show pid P's k-th other "
                  "process as P+%lld*k",
                  clashes, clashes == 1 ? "" : "es", clashes == 1 ? "s" : "", (long long)pid, host,
                  (long long)PID_CLASH_STRIDE);
    return 0;
}

static void jobs_window_line(FILE *out, const struct jobs_window *w)
{
    fputs("  Capture window: ", out);
    format_fputs_escaped(out, w->desc);
    if (w->nprocs > 1)
        fprintf(out, ", in %zu processes", w->nprocs);
    fputs("\n    recorded:", out);
    if (w->steps_min >= 0) {
        if (w->steps_min == w->steps_max)
            fprintf(out, " %ld step%s,", w->steps_min, w->steps_min == 1 ? "" : "s");
        else
            fprintf(out, " %ld-%ld steps,", w->steps_min, w->steps_max);
    }
    if (w->intervals_min == w->intervals_max)
        fprintf(out, " %zu interval%s", w->intervals_min, w->intervals_min == 1 ? "" : "s");
    else
        fprintf(out, " %zu-%zu intervals", w->intervals_min, w->intervals_max);
    if (w->open_s_min == w->open_s_max)
        fprintf(out, " open %.3f s", w->open_s_min);
    else
        fprintf(out, " open %.3f-%.3f s", w->open_s_min, w->open_s_max);
    fprintf(out, "%s; nothing outside is in the tables\n",
            w->open_at_end ? " (then open until the end)" : "");
}

void jobs_print(FILE *out, const struct jobs_report *r)
{
    if (!r->by_job && !r->left_out && !r->nwindows && r->world_size < 0)
        return;
    fprintf(out, "Job\n");
    if (r->by_job) {
        fputs("  Job id: ", out);
        format_fputs_escaped(out, r->key);
        fprintf(out, "%s\n", r->nrun_ids > 1 ? " (several run ids)" : "");
    }
    if (r->world_size >= 0)
        fprintf(out, "  Ranks: %zu of world size %ld\n", r->nranks, r->world_size);
    else if (r->nranks)
        fprintf(out, "  Ranks: %zu (no world size given)\n", r->nranks);
    if (r->crowded_host) {
        fputs("  CPUs: host ", out);
        format_fputs_escaped(out, r->crowded_host);
        fprintf(out,
                " runs %zu ranks on %ld CPUs: they compete for the cores, so their compute and "
                "their collectives' own time (a CPU backend's work, the waits' wake-ups) run "
                "slower than "
                "with a CPU each\n",
                r->crowded_ranks, r->crowded_cpus);
    }
    if (r->restart >= 0)
        fprintf(out, "  Restart attempt: %ld\n", r->restart);
    if (r->left_out)
        fprintf(out, "  Left out: %s; --all-roles includes them\n", r->left_out);
    for (size_t i = 0; i < r->nwindows; i++)
        jobs_window_line(out, &r->windows[i]);
    fputc('\n', out);
}

void *jobs_json(const struct jobs_report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(r->key ? r->key : ""));
    json_object_set_new(o, "by_job", json_boolean(r->by_job));
    json_object_set_new(o, "run_ids", json_integer((json_int_t)r->nrun_ids));
    json_object_set_new(o, "world_size",
                        r->world_size >= 0 ? json_integer(r->world_size) : json_null());
    json_object_set_new(o, "ranks", json_integer((json_int_t)r->nranks));
    json_object_set_new(o, "restart", r->restart >= 0 ? json_integer(r->restart) : json_null());
    json_object_set_new(o, "left_out", r->left_out ? json_string(r->left_out) : json_null());
    json_object_set_new(o, "crowded",
                        r->crowded_host ? json_pack("{s:s,s:I,s:I}", "host", r->crowded_host,
                                                    "ranks", (json_int_t)r->crowded_ranks, "cpus",
                                                    (json_int_t)r->crowded_cpus)
                                        : json_null());
    json_t *w = json_array();
    for (size_t i = 0; i < r->nwindows; i++) {
        const struct jobs_window *x = &r->windows[i];
        json_array_append_new(
            w, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:b}", "window", x->desc, "processes",
                         (json_int_t)x->nprocs, "steps_min", (json_int_t)x->steps_min, "steps_max",
                         (json_int_t)x->steps_max, "intervals_min", (json_int_t)x->intervals_min,
                         "intervals_max", (json_int_t)x->intervals_max, "open_s_min", x->open_s_min,
                         "open_s_max", x->open_s_max, "open_at_end", x->open_at_end));
    }
    json_object_set_new(o, "windows", w);
    json_t *warn = json_array();
    for (size_t i = 0; i < r->nwarnings; i++)
        json_array_append_new(warn, json_string(r->warnings[i]));
    json_object_set_new(o, "warnings", warn);
    return o;
}

void jobs_free(struct jobs_report *r)
{
    loader_workers_free();
    free(r->key);
    free(r->left_out);
    free(r->crowded_host);
    for (size_t i = 0; i < r->nwarnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    for (size_t i = 0; i < r->nwindows; i++)
        free(r->windows[i].desc);
    free(r->windows);
    memset(r, 0, sizeof *r);
}
