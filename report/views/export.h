/* export: the report as JSON (export_json.c) or CSV (export_csv.c). */
#ifndef REPORT_EXPORT_H
#define REPORT_EXPORT_H

#include <stdio.h>

#include <jansson.h>

#include "summary.h"

/* limit (0 = all) caps the API and kernel rows, as in the text tables. 0 on success. */
int export_json_write(FILE *out, const struct summary *s, size_t limit);
/* A JSON string of s (NULL: null); bytes that are not valid UTF-8 (a kernel or file name
 * may hold any) become '?' rather than losing the value. */
json_t *export_json_str(const char *s);
int export_csv_write(FILE *out, const struct summary *s, size_t limit);

/* export_python.c: files written whole through a temporary beside path, or not at all.
 * 0 on success; -1 with a one-line message in err. */
/* The _fwrite forms write the same bytes to an open stream (tests, the fuzzer). */
/* A pstats file: marshal of cProfile's stats dict; pstats.Stats(path) loads it. */
int export_pstats_write(const char *path, const struct pystats *py, char *err, size_t errlen);
void export_pstats_fwrite(FILE *f, const struct pystats *py);

/* Folded stacks, "exe pid P;thread T;frame;... <self microseconds>" per line ("rank R (pid
 * P)" for a rank's process), of the part of each process s->phase names (enum
 * export_phase, as the flame graphs: the span phases' time summed per call-tree node, then
 * cut as the trees' own). Folded
 * stacks repeat the whole path on every line, so a chain of D distinct calls would print
 * O(D^2) frames, and a run of many small calls a line each: a frame deeper than max_depth
 * (0: no limit), or whose time with everything it called is under min_share of the whole
 * (0: none), is folded into its caller: the caller gets one "[N frames folded]" frame
 * holding that time (N: the frames folded that have time in the part), and what the
 * outermost frames fold goes to "thread;[N frames folded]". No time is lost. Every frame
 * printed holds at least min_share of the time (its own, its CUDA API calls', what it
 * folded: up to 3 lines), so there are at most 3 / min_share lines of at most max_depth +
 * 3 frames, besides one per thread: the file is bounded whatever the trace. */
#define EXPORT_FOLDED_DEPTH_DEFAULT 128
#define EXPORT_FOLDED_MIN_SHARE_DEFAULT 0.001 /* 0.1 % */
/* export_folded_write's min_share when none was asked: EXPORT_FOLDED_MIN_SHARE_DEFAULT,
 * raised (doubled, at most to EXPORT_FOLDED_MIN_SHARE_MOST) until the file is within
 * EXPORT_FOLDED_TRACE_MULTIPLE times the traces' bytes or EXPORT_FOLDED_SMALL bytes, and
 * said on stderr: long paths (a 115-deep chain over 400 leaves) wrote 30 x a 306 KB trace. */
#define EXPORT_FOLDED_MIN_SHARE_BOUNDED (-1.0)
#define EXPORT_FOLDED_TRACE_MULTIPLE 4
#define EXPORT_FOLDED_SMALL (1u << 20)
#define EXPORT_FOLDED_MIN_SHARE_MOST 0.05
int export_folded_write(const char *path, const struct summary *s, size_t max_depth,
                        double min_share, char *err, size_t errlen);
void export_folded_fwrite(FILE *f, const struct summary *s, size_t max_depth, double min_share);
/* What the flame graphs hold (--phase). */
enum export_phase {
    EXPORT_PHASE_ALL,     /* the whole process, from the call trees */
    EXPORT_PHASE_STEPS,   /* the time inside the training phases (data loading, forward,
                           * backward, optimizer step) of the processes with steps, every
                           * step's (the trees are the whole run's: warm-up included) */
    EXPORT_PHASE_STARTUP, /* before the first step, from the Python calls of at least
                           * PROF_PY_SPAN_US (model_steps_keep_spans) */
    EXPORT_PHASE_STEADY   /* the steady steps (warm-up left out): the call tree's counts
                           * at their edges (the Python table's steps) when the step
                           * thread kept them there, else from those calls too */
};
/* The flame graphs' lines: as export_folded_fwrite with EXPORT_FOLDED_FLAME_DEPTH and
 * EXPORT_FOLDED_FLAME_MIN_SHARE; with_api: each node's CUDA API time as a "[CUDA API
 * calls]" frame beneath it (taken out of its self time; the call trees' phases, all and
 * steps); phase: enum export_phase. */
#define EXPORT_FOLDED_FLAME_DEPTH 200
#define EXPORT_FOLDED_FLAME_MIN_SHARE 0.0001 /* 0.01 %: about 0.1 px of the flame graph */
void export_folded_stream(FILE *f, const struct summary *s, int with_api, int phase);
/* Whether a process has training steps and Python call trees (a steps-only flame). */
int export_folded_has_steps(const struct summary *s);
/* How the steady steps' lines are made: 2 every process's from the call tree's counts at
 * the steps' edges (every call, exact), 0 every one's from its calls of at least
 * PROF_PY_SPAN_US, 1 some of each. */
int export_folded_steady_exact(const struct summary *s);
/* The step numbers those call trees cover (the Python tables'; their first may come some
 * steps after the warm-up, at the first step edge with counts kept): 1 when they are the
 * same in every such process, else 0. */
int export_folded_steady_steps(const struct summary *s, uint64_t *first, uint64_t *last);

/* --memory-timeline: CSV "pid,time_ns,live_bytes", one row per change of the live PyTorch
 * CPU tensor bytes of each process (ns since its start); the header alone without any. */
int export_memory_timeline_write(const char *path, const struct summary *s, char *err,
                                 size_t errlen);
void export_memory_timeline_fwrite(FILE *f, const struct summary *s);

#endif
