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

static void inputs_load(struct report_inputs *in, const char *path)
{
    char err[512];
    struct model_process *p;
    if (summary_file_is_summary(path)) {
        if (in->trace_only) {
            fprintf(stderr,
                    "profreport: %s: a summary holds the tables only; %s needs the "
                    "trace\n",
                    path, in->trace_only);
            in->failed = 1;
            return;
        }
        p = summary_file_load(path, err, sizeof err);
    } else {
        p = in->defs_only ? timeline_load_defs(path, err, sizeof err)
                          : model_load_file(path, err, sizeof err);
    }
    if (!p) {
        fputs("profreport: ", stderr);
        format_fputs_escaped(stderr, err);
        fputc('\n', stderr);
        in->failed = 1;
        return;
    }
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

static int inputs_has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), n = strlen(suffix);
    return len > n && !strcmp(name + len - n, suffix);
}

/* In a directory, X.summary stands for X.trace when it is not older and the views asked
 * for can use it; otherwise the trace is read. 1: read full (a trace or a summary). */
static int inputs_dir_entry_wanted(const struct report_inputs *in, const char *full)
{
    if (inputs_has_suffix(full, summary_file_suffix)) {
        size_t stem = strlen(full) - strlen(summary_file_suffix);
        char *trace = malloc(stem + 7);
        if (!trace)
            report_oom();
        memcpy(trace, full, stem);
        memcpy(trace + stem, ".trace", 7);
        struct stat st;
        int have_trace = stat(trace, &st) == 0;
        int fresh = have_trace && summarize_up_to_date(trace, full);
        if (have_trace && !fresh && !in->trace_only)
            fprintf(stderr,
                    "profreport: warning: %s is older than its trace: reading the "
                    "trace (profreport --summarize writes it again)\n",
                    full);
        free(trace);
        if (!have_trace && in->trace_only) {
            fprintf(stderr,
                    "profreport: warning: %s: a summary holds the tables only; %s "
                    "needs its trace; skipped\n",
                    full, in->trace_only);
            return 0;
        }
        return !have_trace || (fresh && !in->trace_only);
    }
    if (in->trace_only)
        return 1;
    char *summary = summarize_summary_path(full);
    int use_summary = summarize_up_to_date(full, summary);
    free(summary);
    return !use_summary;
}

void report_inputs_load_path(struct report_inputs *in, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "profreport: %s: cannot open: %s\n", path, strerror(errno));
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
        fprintf(stderr, "profreport: %s: cannot read directory: %s\n", path, strerror(errno));
        in->failed = 1;
        return;
    }
    if (n == 0)
        fprintf(stderr, "profreport: %s: no *.trace or *.summary files in this directory\n", path);
    for (long i = 0; i < n; i++) {
        const char *full = paths[i];
        struct stat fst;
        char why[128];
        int found = stat(full, &fst) == 0; /* else gone since the listing */
        if (found && S_ISREG(fst.st_mode) && !inputs_dir_entry_wanted(in, full)) {
            /* its summary or its trace is read instead */
        } else if (found && S_ISREG(fst.st_mode) && summary_file_is_summary(full)) {
            inputs_load(in, full);
        } else if (found && S_ISREG(fst.st_mode)) {
            if (trace_file_not_a_trace(full, why, sizeof why))
                fprintf(stderr, "profreport: warning: %s: %s; skipped\n", full, why);
            else
                inputs_load(in, full);
        } else if (found) { /* a FIFO would block the read: never opened */
            fprintf(stderr, "profreport: warning: %s: not a regular file; skipped\n", full);
        }
    }
    trace_dir_free(paths, n);
}
