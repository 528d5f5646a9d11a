/* inputs: what profreport reads — trace files, summaries (report/summarize/) and
 * directories of them. X.summary stands for X.trace beside it when it is bound to it
 * (summary_file_bound: made from it as it is now, owned like it, 0600) and no view asked
 * for needs the trace; otherwise, or when it does not load, one warning and the trace is
 * read. A summary without its trace is read only when named, never from a directory. A
 * file or directory that cannot be read is said on stderr and sets failed. */
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
    /* The views asked for are all served by summaries: each trace read is reduced to its
     * summary in memory (summary_file_fold) before the next input is read, so that the
     * report holds one whole model at a time, not one per trace (issue 22, item 4). A trace
     * read alone stays whole. */
    int fold;
    size_t nfolded; /* procs[0, nfolded) are folded, or were tried */
};

/* Loads path (a file or a directory) into in->procs. */
void report_inputs_load_path(struct report_inputs *in, const char *path);
/* After the last path: with fold, folds the last trace read when there were several. */
void report_inputs_finish(struct report_inputs *in);

#endif
