/* findings: what looks wrong in a run, each with the numbers that show it and the place in
 * the program, computed from the summary (findings.c). A finding is made only when its
 * evidence is in the traces; the thresholds are the table FINDINGS_THRESHOLDS below (the
 * README repeats it). */
#ifndef REPORT_FINDINGS_H
#define REPORT_FINDINGS_H

#include <stdio.h>

#include "summary.h"

/* X(name, value, meaning) */
#define FINDINGS_THRESHOLDS(X)                                                                     \
    X(GPU_IDLE_SHARE, 0.30, "GPU idle: a device is idle this share of its process's wall time")    \
    X(SYNC_SHARE, 0.05, "host-device syncs: synchronizing calls take this share of wall time")     \
    X(DATALOADER_SHARE, 0.10, "DataLoader wait: dataloader_next takes this share of wall time")    \
    X(SMALL_KERNELS_COUNT, 1000, "launch-bound: at least this many kernels ...")                   \
    X(SMALL_KERNEL_MEDIAN_US, 10, "... with a median duration under this many microseconds")       \
    X(PAGEABLE_BYTES, 1048576,                                                                     \
      "pageable copies: at least this many bytes copied from or to "                               \
      "pageable host memory")                                                                      \
    X(CPU_OPS_RATIO, 2.0,                                                                          \
      "CPU-bound: PyTorch ops' self CPU time is this many times the GPU "                          \
      "kernel time (in a job with kernels)")                                                       \
    X(MEMORY_PEAK_SHARE, 0.90,                                                                     \
      "memory peak: a device's peak (reserved) bytes reach this share "                            \
      "of its memory")                                                                             \
    X(MEMORY_GROWTH_SHARE, 0.10,                                                                   \
      "memory growth: a device's live tensor bytes grow, after the first steady step, by this "    \
      "share of the steps' peak, in at least half the steps ...")                                  \
    X(MEMORY_GROWTH_BYTES, 1048576, "... and by at least this many bytes")                         \
    X(OVERHEAD_BYTES_PER_S, 67108864,                                                              \
      "profiler overhead: any event lost, or the trace grows "                                     \
      "this many bytes per second of wall time")                                                   \
    X(STRAGGLER_RATIO, 1.20,                                                                       \
      "straggler: a rank's busy time (GPU kernels, else its steps) is "                            \
      "this many times the median rank's")                                                         \
    X(STEP_COMM_SHARE, 0.15,                                                                       \
      "communication: exposed communication takes this share of the steady step")                  \
    X(STEP_WAIT_SHARE, 0.10,                                                                       \
      "a rank holds the others: the median rank waits for it this share of the step")              \
    X(STEP_DATA_SHARE, 0.10, "data-loading stall: data loading takes this share of the step")      \
    X(STEP_SYNC_SHARE, 0.05, "host syncs: synchronizing takes this share of the step")             \
    X(STEP_OTHER_SHARE, 0.15,                                                                      \
      "work outside the phases: the step's other ops and other CPU (outside data loading, "        \
      "forward, backward, optimizer, communication, syncs) take this share of it")                 \
    X(STEP_GPU_IDLE_SHARE, 0.30, "GPU idle inside the steps: this share of the step time")         \
    X(STEP_PYTHON_SHARE, 0.25,                                                                     \
      "Python inside forward and backward: their time outside operators takes this share of "      \
      "the step")                                                                                  \
    X(STEP_THREAD_SHARE, 0.10,                                                                     \
      "another thread's Python: a thread besides the step thread runs Python this share of the "   \
      "step")                                                                                      \
    X(STEP_GC_SHARE, 0.05,                                                                         \
      "garbage collection: Python's collector pauses the step thread this share of the step")      \
    X(STEP_OUTLIER_RATIO, 2.0, "slow steps: a steady step takes this many times the median")       \
    X(STEP_GROWTH_RATIO, 1.5,                                                                      \
      "step time grows: the last fifth of the steady steps takes this many times the first "       \
      "fifth (medians)")                                                                           \
    X(STEP_GROWTH_TAU, 0.5,                                                                        \
      "step time grows: the steady steps' time rises with their order by at least this rank "      \
      "correlation (Kendall's tau)")                                                               \
    X(PERIODIC_SHARE, 0.10,                                                                        \
      "periodic work: a function run in fewer than half the steady steps takes this share of "     \
      "their time")                                                                                \
    X(STARTUP_RATIO, 1.0, "startup: the time before the first step is this many times the steps'")

enum findings_threshold {
#define FINDINGS_ENUM(name, value, meaning) FINDINGS_##name,
    FINDINGS_THRESHOLDS(FINDINGS_ENUM)
#undef FINDINGS_ENUM
        FINDINGS_THRESHOLD_COUNT
};

extern const double findings_threshold[FINDINGS_THRESHOLD_COUNT];

/* One finding: kind (a stable key: "gpu_idle", "sync", "dataloader", "small_kernels",
 * "pageable_copies", "cpu_ops", "memory_peak", "overhead", "straggler"), a one-line title,
 * the evidence (numbers), the place in the program ("" when none applies) and the measure
 * the threshold was compared with. */
struct finding {
    const char *kind;
    char title[160];
    char evidence[1024];
    char where[768];
    double value;
    /* waiting_rank's: the rank the others wait for and why (comm_slowest.why), for the
     * whole-process findings that give way to it; else -1 and NULL */
    long long rank;
    const char *why;
    /* a one-off (a single slow step) or the startup: listed after the others, which say
     * what every step pays (findings_build) */
    int minor;
};

struct findings {
    struct finding *items;
    size_t n, cap;
};

/* Computes the findings of s (s->procs with their models). */
void findings_build(struct findings *f, const struct summary *s);
void findings_free(struct findings *f);
/* For the parts of findings in other files: a new finding, and printf into its fields. */
struct finding *findings_add(struct findings *f, const char *kind, double value);
void findings_set(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* findings_steps.c: the findings in step terms ("step_comm", "waiting_rank", "step_data",
 * "step_sync", "step_other", "step_gpu_idle", "periodic_work", "slow_steps", "step_growth",
 * "startup"). */
void findings_steps(struct findings *f, const struct summary *s);
/* Whether two ranks or more have training steps (findings_steps compares them). */
int findings_steps_ranked(const struct summary *s);
/* The process whose steady steps findings_steps describes alone (one process with steps,
 * or the main one of a run without ranks), or NULL (several ranks: compared instead). */
const struct model_process *findings_steps_process_of(const struct summary *s);
/* findings_steps.c: "dataloader", the DataLoader wait of a whole process (not the one
 * step_data describes, nor the rank waiting_rank names for its data loading). */
void findings_dataloader(struct findings *f, const struct summary *s);
/* "rank 2 (pid 17)", or "pid 17" without a rank; in_parens: "rank 2, pid 17" (a title's
 * "(...)" holds it). buf returned. */
const char *findings_proc_name(const struct model_process *p, int in_parens, char *buf, size_t len);
/* Text: a "Findings" section (nothing when there are none), then a blank line. */
void findings_print(FILE *out, const struct findings *f);
/* The kind of the first finding of that kind, or NULL: for tests and the HTML. */
const struct finding *findings_find(const struct findings *f, const char *kind);

#endif
