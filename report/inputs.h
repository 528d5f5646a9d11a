/* inputs: what profreport reads — trace files, summaries (report/summarize/) and
 * directories of them. In a directory, X.summary stands for X.trace when it is not older
 * and no view asked for needs the trace; a file or directory that cannot be read is said
 * on stderr and sets failed. */
#ifndef REPORT_INPUTS_H
#define REPORT_INPUTS_H

#include <stddef.h>

#include "model.h"

struct report_inputs {
    struct model_process **procs;
    size_t n, cap;
    int failed;
    int defs_only; /* timeline exports alone: keep definitions, stream events later */
    /* An option that needs the traces (a timeline export, stacks, ...): summaries are
     * not read in place of traces, and one given alone is an error. NULL: none. */
    const char *trace_only;
};

/* Loads path (a file or a directory) into in->procs. */
void report_inputs_load_path(struct report_inputs *in, const char *path);

#endif
