/* stacks_view: --stacks NAME, --samples and --stacks-folded (see stacks.c). */
#ifndef REPORT_STACKS_VIEW_H
#define REPORT_STACKS_VIEW_H

#include <stddef.h>
#include <stdio.h>

struct model_process;

struct stacks_view_options {
    const char *api_name;    /* the API whose calls' stacks are shown; NULL: the samples */
    const char *debug_dirs;  /* --debug-dir: extra separate-debug-info directories, or NULL */
    const char *sysroot;     /* --sysroot: where the job's objects are, or NULL */
    const char *folded_path; /* --stacks-folded FILE, or NULL */
    int print;               /* print the text report even when a folded file is written */
    FILE *folded_stream;     /* also the folded lines here (the flame graph), or NULL */
    int json;                /* --format json: the report as one JSON object */
    size_t limit;            /* call paths printed (0: 10) */
    const char *left_out;    /* the processes the roles left out (jobs.h), or NULL */
};

/* 0 on success; 1 when the inputs hold no such stacks or a file cannot be written (said on
 * err). */
int stacks_view(FILE *out, FILE *err, struct model_process *const *procs, size_t n,
                const struct stacks_view_options *o);

#endif
