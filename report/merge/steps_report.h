/* steps_report: the steady-state training steps of a process or of the ranks of a job, from
 * each process's steps (model.h, "training steps").
 *
 * A process's time splits into startup (before its first step), warm-up steps, steady
 * steps and teardown (after its last step). Warm-up: the leading steps slower than
 * STEPS_WARMUP_RATIO times the median of the later half of the steps, at most a quarter of
 * them. Ranks are compared on the same steps: the steady step numbers every rank has. */
#ifndef REPORT_STEPS_REPORT_H
#define REPORT_STEPS_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "model_steps_load.h"

#define STEPS_WARMUP_RATIO MODEL_STEPS_WARMUP_RATIO

struct steps_stats {
    const struct model_process *p;      /* NULL: no steps */
    size_t nsteps;                      /* every step */
    size_t warmup;                      /* leading warm-up steps */
    double warmup_ratio;                /* the first step's time over the reference; 0: none */
    uint64_t first_number, last_number; /* the steps counted below */
    size_t counted;                     /* steps counted (steady, or in the window asked) */
    uint64_t total_ns, mean_ns, median_ns, p90_ns, max_ns, max_number;
    uint64_t part_ns[MODEL_STEP_PART_COUNT]; /* summed over the counted steps */
    uint64_t comm_ns, gpu_busy_ns, gpu_kernel_ns, gpu_copy_ns, syncs;
    uint64_t python_ns; /* of forward and backward, outside operators (model_step) */
    uint64_t eval_ns;   /* evaluation inside the steps (model_step), and its steps */
    size_t eval_steps;
    uint64_t recompute_ns; /* backward's recomputed forward (model_step) */
    uint64_t startup_ns, teardown_ns, startup_import_ns;
    /* the profiler's own build of its torch bridge before the first step (a first run's:
     * META torch_bridge_build), taken out of startup_ns */
    uint64_t profiler_ns;
    int has_gpu; /* the process ran GPU work */
};

/* The process of a rank (or of a run) whose steps describe it: the one with most steps. */
const struct model_process *steps_main_process(const struct model_process *const *procs, size_t n);
/* The steps of p numbered lo..hi; lo 0 and hi UINT64_MAX: its steady steps. */
void steps_stats_of(const struct model_process *p, uint64_t lo, uint64_t hi, struct steps_stats *s);
/* Warm-up count of p's steps (see above), and the first step's ratio to the reference. */
size_t steps_warmup(const struct model_process *p, double *ratio);
/* The steps every rank has (comm_merge.h): mains[k] is rank k's process with the steps
 * (NULL: none; then there is no window), offset_ns[k] its host's clock minus the first
 * rank's. Steps are matched by number; by_time (capture windows, where a trace's first
 * step can be any iteration): each rank's numbers shifted so that its first steady step
 * takes the number of the first rank's step ending nearest to it. shift[k] (n of them) is
 * what rank k adds to its own numbers; lo..hi and unequal in the first rank's numbers. 1,
 * or 0: no common window. */
int steps_window_of(const struct model_process *const *mains, const int64_t *offset_ns, size_t n,
                    int by_time, int64_t *shift, uint64_t *lo, uint64_t *hi, int *unequal);
/* The step of p holding t (CLOCK_MONOTONIC), or NULL. */
const struct model_step *steps_at(const struct model_process *p, uint64_t t);

/* compute: forward + backward + optimizer + other ops. */
uint64_t steps_compute_ns(const struct steps_stats *s);
/* The part that a step (or a sum) exceeds a reference by the most: its index, *excess_ns. */
int steps_largest_excess(const uint64_t *parts, const uint64_t *ref, uint64_t *excess_ns);

/* A process's whole-run time in its ops (self time, torch.distributed's left out), in data
 * loading (the dataloader_next actions) and in host-device syncs, added to the three. */
void steps_process_times(const struct model_process *p, uint64_t *compute_ns, uint64_t *data_ns,
                         uint64_t *sync_ns);

#endif
