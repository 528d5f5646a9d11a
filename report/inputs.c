/* The inputs of a report: trace files, summaries, and directories of them (inputs.h). */
#include "inputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "format.h"
#include "summarize.h"
#include "summary_file.h"
#include "timeline.h"
#include "trace_dir.h"
#include "trace_read.h"

/* With fold, the processes read from traces since the last call are reduced to their
 * summaries. One that does not fold (it never should) stays whole: the report is the
 * same, only larger. */
static void inputs_fold(struct report_inputs *in)
{
    char err[512];
    for (; in->fold && in->nfolded < in->n; in->nfolded++) {
        struct model_process **p = &in->procs[in->nfolded];
        struct model_process *q = (*p)->summary_file ? *p : summary_file_fold(*p, err, sizeof err);
        if (q)
            *p = q;
        else
            format_say(stderr, "warning: %s: kept whole", err);
    }
}

static void inputs_add(struct report_inputs *in, struct model_process *p)
{
    inputs_fold(in); /* a second process: the first, if whole, is folded too */
    if (in->n == in->cap) {
        in->cap = in->cap ? in->cap * 2 : 16;
        struct model_process **n = realloc(in->procs, in->cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        in->procs = n;
    }
    in->procs[in->n++] = p;
}

/* A failure to read an input: said (escaped: names and messages come from files). */
static void inputs_failed(struct report_inputs *in, const char *err)
{
    format_say(stderr, "%s", err);
    in->failed = 1;
}

void report_inputs_finish(struct report_inputs *in)
{
    if (in->n > 1)
        inputs_fold(in);
}

static void inputs_load_trace_file(struct report_inputs *in, const char *path)
{
    char err[512];
    inputs_fold(in); /* before this one is read: one whole model at a time */
    struct stat st;
    if (!in->defs_only && stat(path, &st) == 0)
        report_heap_for_trace((long long)st.st_size);
    struct model_process *p = in->defs_only ? timeline_load_defs(path, err, sizeof err)
                                            : model_load_file(path, err, sizeof err);
    if (p)
        inputs_add(in, p);
    else
        inputs_failed(in, err);
}

/* X.summary -> X.trace (malloc'd), or NULL for a name without the suffix. */
static char *inputs_trace_of(const char *summary)
{
    size_t len = strlen(summary), n = strlen(summary_file_suffix);
    if (len <= n || strcmp(summary + len - n, summary_file_suffix) != 0)
        return NULL;
    char *trace = malloc(len - n + 7);
    if (!trace)
        report_oom();
    memcpy(trace, summary, len - n);
    memcpy(trace + len - n, ".trace", 7);
    return trace;
}

static int inputs_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A trace, or the summary beside it when that summary is bound to it (summary_file_bound)
 * and no view asked for needs the trace. A summary there that is not bound, or does not
 * load, is said in one warning and the trace is read. */
static void inputs_load_trace(struct report_inputs *in, const char *trace, const char *summary)
{
    char why[512];
    struct stat st;
    if (!in->trace_only && lstat(summary, &st) == 0) {
        struct model_process *p = NULL;
        if (!summary_file_bound(summary, trace, why, sizeof why))
            format_say(stderr,
                       "warning: %s: not used (%s): reading its trace (profreport --summarize "
                       "writes it again)",
                       summary, why);
        else if (!(p = summary_file_load(summary, why, sizeof why)))
            format_say(stderr, "warning: %s: reading its trace instead", why);
        if (p) {
            inputs_add(in, p);
            return;
        }
    }
    inputs_load_trace_file(in, trace);
}

/* A file named on the command line: a trace is read; a summary stands for the trace
 * beside it as in a directory, and alone is read for itself (it was asked for). */
static void inputs_load(struct report_inputs *in, const char *path)
{
    char err[512];
    if (!summary_file_is_summary(path)) {
        inputs_load_trace_file(in, path);
        return;
    }
    if (in->trace_only) {
        format_say(stderr, "%s: a summary holds the tables only; %s needs the trace", path,
                   in->trace_only);
        in->failed = 1;
        return;
    }
    char *trace = inputs_trace_of(path);
    if (trace && inputs_exists(trace)) {
        inputs_load_trace(in, trace, path);
        free(trace);
        return;
    }
    free(trace);
    struct model_process *p = summary_file_load(path, err, sizeof err);
    if (p)
        inputs_add(in, p);
    else
        inputs_failed(in, err);
}

static int inputs_has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), n = strlen(suffix);
    return len > n && !strcmp(name + len - n, suffix);
}

/* One regular file of a directory. */
static void inputs_dir_entry(struct report_inputs *in, const char *full)
{
    char why[128];
    if (inputs_has_suffix(full, summary_file_suffix)) {
        char *trace = inputs_trace_of(full);
        int have_trace = inputs_exists(trace);
        free(trace);
        if (have_trace)
            return; /* read with its trace (inputs_load_trace) */
        /* Anyone who can write the folder could have put it there: a summary without
         * its trace is reported only when named. */
        if (in->trace_only)
            format_say(stderr,
                       "warning: %s: a summary holds the tables only; %s needs its trace; "
                       "skipped",
                       full, in->trace_only);
        else
            format_say(stderr,
                       "warning: %s: a summary without its trace; skipped (name it to report "
                       "it)",
                       full);
        return;
    }
    if (summary_file_is_summary(full)) {
        format_say(stderr, "warning: %s: a summary named as a trace; skipped", full);
    } else if (trace_file_not_a_trace(full, why, sizeof why)) {
        format_say(stderr, "warning: %s: %s; skipped", full, why);
    } else {
        char *summary = summarize_summary_path(full);
        inputs_load_trace(in, full, summary);
        free(summary);
    }
}

void report_inputs_load_path(struct report_inputs *in, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        format_say(stderr, "%s: cannot open: %s", path, strerror(errno));
        in->failed = 1;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        inputs_load(in, path);
        return;
    }
    static const char *const suffixes[] = {".trace", ".summary", NULL};
    char **paths;
    long n = trace_dir_list(path, suffixes, &paths);
    if (n < 0) {
        format_say(stderr, "%s: cannot read directory: %s", path, strerror(errno));
        in->failed = 1;
        return;
    }
    if (n == 0)
        format_say(stderr, "%s: no *.trace or *.summary files in this directory", path);
    for (long i = 0; i < n; i++) {
        struct stat fst;
        if (stat(paths[i], &fst) != 0)
            continue; /* gone since the listing */
        if (S_ISREG(fst.st_mode))
            inputs_dir_entry(in, paths[i]);
        else /* a FIFO would block the read: never opened */
            format_say(stderr, "warning: %s: not a regular file; skipped", paths[i]);
    }
    trace_dir_free(paths, n);
}
