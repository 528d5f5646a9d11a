/* export: the report as JSON (export_json.c) or CSV (export_csv.c). */
#ifndef REPORT_EXPORT_H
#define REPORT_EXPORT_H

#include <stdio.h>

#include "summary.h"

/* limit (0 = all) caps the API and kernel rows, as in the text tables. 0 on success. */
int export_json_write(FILE *out, const struct summary *s, size_t limit);
int export_csv_write(FILE *out, const struct summary *s, size_t limit);

/* export_python.c: files written whole through a temporary beside path, or not at all.
 * 0 on success; -1 with a one-line message in err. */
/* The _fwrite forms write the same bytes to an open stream (tests, the fuzzer). */
/* A pstats file: marshal of cProfile's stats dict; pstats.Stats(path) loads it. */
int export_pstats_write(const char *path, const struct pystats *py, char *err, size_t errlen);
void export_pstats_fwrite(FILE *f, const struct pystats *py);

/* Folded stacks, "process pid P;thread T;frame;... <self microseconds>" per line. A stack
 * deeper than max_depth Python frames (0: no limit) keeps its innermost max_depth frames
 * under one root frame "[truncated N frames]" (N: the outer frames left out), so the
 * output is at most (nodes with self time) * (max_depth + 3) frames: folded stacks repeat
 * the whole path on every line, and a chain of D distinct calls would otherwise print
 * O(D^2) frames. */
#define EXPORT_FOLDED_DEPTH_DEFAULT 256
int export_folded_write(const char *path, const struct summary *s, size_t max_depth, char *err,
                        size_t errlen);
void export_folded_fwrite(FILE *f, const struct summary *s, size_t max_depth);
/* What the flame graphs hold (--phase). */
enum export_phase {
    EXPORT_PHASE_ALL,     /* the whole process, from the call trees */
    EXPORT_PHASE_STEPS,   /* the time inside the training phases (data loading, forward,
                           * backward, optimizer step) of the processes with steps, every
                           * step's (the trees are the whole run's: warm-up included) */
    EXPORT_PHASE_STARTUP, /* before the first step, from the Python calls of at least
                           * PROF_PY_SPAN_US (model_steps_keep_spans) */
    EXPORT_PHASE_STEADY   /* the steady steps (warm-up left out), from those calls too */
};
/* The same lines with the default depth cap; with_api: each node's CUDA API time as a
 * "[CUDA API calls]" frame beneath it (taken out of its self time); phase: enum
 * export_phase. */
void export_folded_stream(FILE *f, const struct summary *s, int with_api, int phase);
/* Whether a process has training steps and Python call trees (a steps-only flame). */
int export_folded_has_steps(const struct summary *s);

/* --memory-timeline: CSV "pid,time_ns,live_bytes", one row per change of the live PyTorch
 * CPU tensor bytes of each process (ns since its start); the header alone without any. */
int export_memory_timeline_write(const char *path, const struct summary *s, char *err,
                                 size_t errlen);
void export_memory_timeline_fwrite(FILE *f, const struct summary *s);

#endif
