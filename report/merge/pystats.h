/* pystats: cProfile's table computed from the Python call trees of the model.
 *
 * A function's key is pstats's (file, line, name). Over the nodes n of a function f:
 *   ncalls   = sum of calls(n)
 *   pcalls   = sum of calls(n) over the n with no ancestor of function f (primitive calls)
 *   tottime  = sum of self(n)
 *   cumtime  = sum of total(n) over the same n as pcalls (a recursion is not counted twice)
 *   api      = the API calls and time of n's subtree, over the same n as pcalls
 *   gpu      = the GPU time of kernels launched with n innermost, over every n (self)
 * and a caller edge (function of parent(n) -> f) sums calls, self and total the same way,
 * except that an edge is "recursive" when the same caller -> callee pair is active above
 * n, as _lsprof counts its sub-entries: cProfile's callers of fib are fib 8/2, not 8/0.
 * Functions merge by key over the threads and processes given. */
#ifndef REPORT_PYSTATS_H
#define REPORT_PYSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "model.h"
#include "text_bound.h"

enum pystats_sort {
    PYSTATS_SORT_NCALLS,
    PYSTATS_SORT_TOTTIME,
    PYSTATS_SORT_CUMTIME,
    PYSTATS_SORT_PERCALL, /* tottime per call */
    PYSTATS_SORT_NAME,
    PYSTATS_SORT_FILENAME,
    PYSTATS_SORT_LINE
};

/* cProfile's --sort spellings (ncalls, tottime, cumtime, percall, name, filename, line) and
 * the aliases calls, time, cumulative. 0 and *out set, or -1. */
int pystats_parse_sort(const char *s, enum pystats_sort *out);
/* "cumulative time", "internal time", ... as pstats says "Ordered by: ...". */
const char *pystats_sort_title(enum pystats_sort key);
/* "cumtime", "tottime", ... */
const char *pystats_sort_name(enum pystats_sort key);

struct pystats_caller {
    size_t caller;         /* index in funcs */
    uint64_t nc, cc;       /* calls, primitive calls */
    uint64_t tt_ns, ct_ns; /* self time, cumulative time */
};

struct pystats_func {
    char *file, *name, *qualname, *module; /* owned; qualname and module may be NULL */
    uint32_t line;
    uint16_t kind; /* enum prof_py_func_kind */
    uint64_t ncalls, pcalls, tottime_ns, cumtime_ns;
    uint64_t api_calls, api_ns;
    uint64_t gpu_kernels, gpu_ns; /* kernels launched while the function was innermost */
    /* importer: Python's import machinery (importlib, zipimport, builtins.__import__,
     * _imp); outside_imports: some call of it ran outside any import */
    uint8_t importer, outside_imports;
    struct pystats_caller *callers;
    size_t ncallers, cap_callers;
};

struct pystats {
    struct pystats_func *funcs;
    size_t nfuncs, cap_funcs;
    struct u64map index; /* hash of the key, probed -> index + 1 */
    struct u64map edges; /* caller << 32 | callee -> index + 1 in the callee's callers */
    size_t *order;       /* funcs in report order, after pystats_finish */
    uint64_t total_calls, total_pcalls, total_tt_ns;
    int any_api; /* some function has api_calls */
    int any_gpu; /* some function launched GPU kernels */
};

void pystats_init(struct pystats *s);
/* Adds the call trees of p: every thread's when tid < 0, else that thread's. part: the
 * counts of the part of the process the tables cover (p->py.window_rows) where p has
 * them, else the whole process's. */
void pystats_add(struct pystats *s, const struct model_process *p, int64_t tid, int part);
/* Merging another pystats (a summary's, report/summarize/): adds f's stats under its key
 * and returns its index in s; then adds caller edge e (e->caller an index in s) to the
 * callee at that index. */
size_t pystats_merge_func(struct pystats *s, const struct pystats_func *f);
void pystats_merge_caller(struct pystats *s, size_t callee, const struct pystats_caller *e);
/* Totals and the report order. */
void pystats_finish(struct pystats *s, enum pystats_sort key);
void pystats_free(struct pystats *s);

/* "file:line(qualname)" for a Python function, "{built-in method builtins.len}" for
 * a C function as pstats shows it. qualified: the qualified name where known. A label cut
 * to len ends with the cut marker (format_mark_cut); one of PYSTATS_LABEL_MAX bytes holds
 * every file and name as the trace keeps them (collector/text_bound.h). */
#define PYSTATS_LABEL_MAX (2 * TEXT_BOUND_MAX + 64)
void pystats_func_label(const struct pystats_func *f, int qualified, char *buf, size_t len);

/* The call forest of one process, optionally one thread, as child lists over the indices
 * of p->py.nodes. Roots are nodes whose parent is 0 or not part of the forest. tid: a
 * thread; -1 every thread, a parent on another thread kept; PYSTATS_EACH_THREAD every
 * thread, each its own forest (a parent on another thread makes a root): one build for
 * what a build per thread gives, in time linear in the nodes. */
#define PYSTATS_EACH_THREAD (-2)
struct pystats_forest {
    size_t n;
    size_t *first_child, *next_sibling; /* SIZE_MAX: none */
    size_t *roots;
    size_t nroots;
};
void pystats_forest_build(struct pystats_forest *f, const struct model_process *p, int64_t tid);
void pystats_forest_free(struct pystats_forest *f);

/* Per thread: the functions its tree holds and its calls, ordered by tid. */
struct pystats_thread {
    uint32_t tid;
    uint64_t functions, calls;
};
/* (A process read from a summary gives the totals the summary kept.) */
size_t pystats_threads(const struct model_process *p, struct pystats_thread **out);

/* The name of a thread of p: its THREAD_NAME, or NULL. */
const char *pystats_thread_name(const struct model_process *p, uint32_t tid);

#endif
