/* model_steps_hot: the Python functions the training steps name (model_steps_hot.c): the
 * hottest of the steady steps, of their data loading and of the Python outside the built-in
 * actions, the one that explains each slowest step, the periodic work, the startup's, and
 * the DataLoader the steps wait for. Included by model.h (struct model_steps holds them). */
#ifndef REPORT_MODEL_STEPS_HOT_H
#define REPORT_MODEL_STEPS_HOT_H

#include <stddef.h>
#include <stdint.h>

struct model_process;

enum model_steps_loader {
    MODEL_STEPS_LOADER_UNKNOWN,
    MODEL_STEPS_LOADER_SINGLE,  /* _SingleProcessDataLoaderIter: num_workers=0 */
    MODEL_STEPS_LOADER_WORKERS, /* _MultiProcessingDataLoaderIter */
};

/* A function's self time per steady step, from the calls of at least PROF_PY_SPAN_US (a
 * shorter call's time is its caller's). */
struct model_step_hot {
    char *name;   /* "qualname (file:line)", or a builtin's name */
    char *caller; /* a builtin's (data_hot: any function's): the caller of its calls with
                     the most time; else ""; worker_hot's: "called from X" or "under X" */
    uint64_t self_ns;
    /* slow_hot's: the step's number; rare_hot's: its steps; worker_hot's: the self time of
     * every function it counts (its main thread's, outside waits and imports); else 0 */
    uint64_t step;
    /* hot's comprehension, lambda or generator expression: the time per step of the function
     * it is written in (then caller), its whole calls; data_hot's: its own whole calls' time
     * per step, when more than self_ns; else 0 */
    uint64_t outer_ns;
};
#define MODEL_STEPS_HOT 8
#define MODEL_STEPS_STARTUP_HOT 3
#define MODEL_STEPS_DATA_HOT 3
#define MODEL_STEPS_SLOW 3
#define MODEL_STEPS_RARE 2
#define MODEL_STEPS_OTHER_HOT 3
#define MODEL_STEPS_COMM_HOT 3
#define MODEL_STEPS_THREAD_HOT 1
/* model_steps_comm.c: p->steps.comm_hot of the steady steps from index warm on, per of them. */
void model_steps_comm_hot(struct model_process *p, size_t warm, uint64_t per);
/* The indexes of p's Python spans of thread tid, by start, an outer call before the calls
 * inside it (*n of them): a run of p->steps.span_order, made by model_steps_hot, so only
 * while it runs. */
const size_t *model_steps_spans_in_order(const struct model_process *p, uint32_t tid, size_t *n);
/* "qualname (file:line)" of a function, or a builtin's name; owned by the caller. */
char *model_steps_hot_text(const struct model_process *p, uint32_t func_id);
/* model_steps_hot.c: p->steps.hot and startup_hot from the spans of its step thread (steps
 * made). */
void model_steps_hot(struct model_process *p);
/* p->steps.worker_hot when p is a DataLoader worker process (META role worker, worker_kind
 * dataloader). */
void model_steps_worker_hot(struct model_process *p);
/* A thread waiting for work, not working: blocked in a lock (a queue's Condition.wait) or a
 * poll (a worker's index queue get). */
int model_steps_idle_wait(const struct model_py_func *f);
/* A slow step's entry (slow_hot) whose time went to Python's garbage collector: its name
 * begins so, "(generation N)" after it. */
#define MODEL_STEPS_GC_NAME "Python's garbage collection"
/* model_steps_gc.c: the time Python's garbage collections paused thread tid inside [a, b)
 * (monotonic ns), and in *generation (when not NULL) the oldest generation they collected,
 * -1 when none. */
uint64_t model_steps_gc_in(const struct model_process *p, uint32_t tid, uint64_t a, uint64_t b,
                           int *generation);
/* steps.gc_*: the step thread's collections begun in the steady steps (from index warm). */
void model_steps_gc_totals(struct model_process *p, size_t warm);
/* model_steps_threads.c: p->steps.thread_hot, the thread besides the step thread that runs
 * the most Python in the steady steps (from index warm on), per of them. */
void model_steps_threads(struct model_process *p, size_t warm, uint64_t per);
/* Whether a Python call-tree node runs Python's import machinery (importlib). */
int model_steps_is_import(const struct model_process *p, uint32_t node);
void model_steps_hot_free(struct model_step_hot *hot, size_t n);

#endif
