/* steps_report: warm-up, steady-state statistics and windows of the training steps
 * (steps_report.h). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "steps_report.h"
#include "sort_keys.h"

/* The q-quantile (0..1) of n sorted values, nearest rank. */
static uint64_t steps_quantile(const uint64_t *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t)(q * (double)n + 0.999999);
    if (i < 1)
        i = 1;
    return v[(i > n ? n : i) - 1];
}

const struct model_process *steps_main_process(const struct model_process *const *procs, size_t n)
{
    const struct model_process *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (procs[i]->steps.nsteps && (!best || procs[i]->steps.nsteps > best->steps.nsteps))
            best = procs[i];
    return best;
}

size_t steps_warmup(const struct model_process *p, double *ratio)
{
    model_steps_hold(p);
    return model_steps_warmup(&p->steps, ratio);
}

uint64_t steps_compute_ns(const struct steps_stats *s)
{
    return s->part_ns[MODEL_STEP_FORWARD] + s->part_ns[MODEL_STEP_BACKWARD] +
           s->part_ns[MODEL_STEP_OPTIMIZER] + s->part_ns[MODEL_STEP_OTHER_OPS];
}

int steps_largest_excess(const uint64_t *parts, const uint64_t *ref, uint64_t *excess_ns)
{
    int best = -1;
    *excess_ns = 0;
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        if (parts[k] > ref[k] && parts[k] - ref[k] > *excess_ns) {
            *excess_ns = parts[k] - ref[k];
            best = k;
        }
    return best;
}

void steps_stats_of(const struct model_process *p, uint64_t lo, uint64_t hi, struct steps_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!p || !p->steps.nsteps)
        return;
    model_steps_hold(p);
    const struct model_steps *st = &p->steps;
    s->p = p;
    s->nsteps = st->nsteps;
    s->warmup = steps_warmup(p, &s->warmup_ratio);
    if (!lo && hi == UINT64_MAX)
        lo = st->steps[s->warmup].number;
    /* the summary of a trace keeps the kernels' time and the copies, not the operations */
    s->has_gpu = p->gpu.nops > 0 || p->gpu.kernel_ns > 0 || p->gpu.ncopies > 0;
    s->startup_ns =
        st->steps[0].start_ns > p->wall_start_ns ? st->steps[0].start_ns - p->wall_start_ns : 0;
    uint64_t b0, b1, btid; /* the profiler's, not the program's (review: startup 3.276 s, 80 %
                            * of the process, on a first run; 748.94 ms on the next) */
    if (model_torch_bridge_build(p, &b0, &b1, &btid, NULL)) {
        uint64_t a = model_ticks_to_monotonic_ns(p, b0), b = model_ticks_to_monotonic_ns(p, b1);
        a = a > p->wall_start_ns ? a : p->wall_start_ns;
        b = b < st->steps[0].start_ns ? b : st->steps[0].start_ns;
        s->profiler_ns = b > a ? b - a : 0;
        s->startup_ns -= s->profiler_ns < s->startup_ns ? s->profiler_ns : s->startup_ns;
    }
    uint64_t last_end = st->steps[st->nsteps - 1].end_ns;
    s->teardown_ns = p->wall_end_ns > last_end ? p->wall_end_ns - last_end : 0;
    s->startup_import_ns = st->startup_import_ns;
    uint64_t *d = malloc(st->nsteps * sizeof *d);
    if (!d)
        report_oom();
    for (size_t i = 0; i < st->nsteps; i++) {
        const struct model_step *step = &st->steps[i];
        if (step->number < lo || step->number > hi)
            continue;
        uint64_t dur = step->end_ns - step->start_ns;
        if (!s->counted++)
            s->first_number = step->number;
        s->last_number = step->number;
        d[s->counted - 1] = dur;
        s->total_ns += dur;
        if (dur > s->max_ns) {
            s->max_ns = dur;
            s->max_number = step->number;
        }
        for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
            s->part_ns[k] += step->part_ns[k];
        s->comm_ns += step->comm_ns;
        s->gpu_busy_ns += step->gpu_busy_ns;
        s->gpu_kernel_ns += step->gpu_kernel_ns;
        s->gpu_copy_ns += step->gpu_copy_ns;
        s->syncs += step->syncs;
        s->python_ns += step->python_ns;
        s->eval_ns += step->eval_ns;
        s->eval_steps += step->eval_ns > 0;
        s->recompute_ns += step->recompute_ns;
    }
    qsort(d, s->counted, sizeof *d, sort_u64_cmp);
    s->median_ns = steps_quantile(d, s->counted, 0.5);
    s->p90_ns = steps_quantile(d, s->counted, 0.9);
    s->mean_ns = s->counted ? s->total_ns / s->counted : 0;
    free(d);
}

const struct model_step *steps_at(const struct model_process *p, uint64_t t)
{
    model_steps_hold(p);
    size_t i = model_steps_index_at(&p->steps, t);
    return i == SIZE_MAX ? NULL : &p->steps.steps[i];
}

/* The step of p whose end is nearest t (CLOCK_MONOTONIC). */
static const struct model_step *steps_nearest_end(const struct model_process *p, uint64_t t)
{
    model_steps_hold(p);
    const struct model_steps *st = &p->steps;
    size_t a = 0, b = st->nsteps;
    while (a < b) { /* the first step ending at or after t */
        size_t m = a + (b - a) / 2;
        if (st->steps[m].end_ns < t)
            a = m + 1;
        else
            b = m;
    }
    if (a == st->nsteps || (a && t - st->steps[a - 1].end_ns < st->steps[a].end_ns - t))
        a--;
    return &st->steps[a];
}

int steps_window_of(const struct model_process *const *mains, const int64_t *offset_ns, size_t n,
                    int by_time, int64_t *shift, uint64_t *lo, uint64_t *hi, int *unequal)
{
    int64_t first_max = INT64_MIN, last_min = INT64_MAX, first_min = INT64_MAX,
            last_max = INT64_MIN;
    for (size_t k = 0; k < n; k++) {
        const struct model_process *p = mains[k];
        if (!p || !p->steps.nsteps)
            return 0;
        struct steps_stats st;
        steps_stats_of(p, 0, UINT64_MAX, &st);
        shift[k] = 0;
        if (by_time && k) {
            /* its clock minus the first rank's, CLOCK_MONOTONIC to CLOCK_MONOTONIC */
            int64_t d = p->comm.realtime_offset_ns - offset_ns[k] - mains[0]->comm.realtime_offset_ns;
            /* two pairings: its first step with the first rank's nearest, and the first
             * rank's first step with its nearest; the closer decides */
            model_steps_hold(mains[0]);
            const struct model_step *own = &p->steps.steps[0], *ref0 = &mains[0]->steps.steps[0];
            const struct model_step *ref = steps_nearest_end(mains[0], (uint64_t)((int64_t)own->end_ns + d));
            const struct model_step *mine = steps_nearest_end(p, (uint64_t)((int64_t)ref0->end_ns - d));
            int64_t da = (int64_t)ref->end_ns - ((int64_t)own->end_ns + d);
            int64_t db = (int64_t)ref0->end_ns - ((int64_t)mine->end_ns + d);
            shift[k] = llabs(da) <= llabs(db) ? (int64_t)ref->number - (int64_t)own->number
                                              : (int64_t)ref0->number - (int64_t)mine->number;
        }
        int64_t first = (int64_t)st.first_number + shift[k], last = (int64_t)st.last_number + shift[k];
        first_max = first > first_max ? first : first_max;
        first_min = first < first_min ? first : first_min;
        last_min = last < last_min ? last : last_min;
        last_max = last > last_max ? last : last_max;
        if (p != mains[0]) /* one rank's steps at a time; the first rank's are the reference */
            model_steps_let_go(p);
    }
    if (n)
        model_steps_let_go(mains[0]);
    if (!n || first_max > last_min || first_max < 0)
        return 0;
    *lo = (uint64_t)first_max;
    *hi = (uint64_t)last_min;
    *unequal = first_min != first_max || last_max != last_min;
    return 1;
}

/* Time in data loading: the built-in dataloader_next action, or Lightning's (a name with
 * "dataloader_next" in it) in a process with Lightning actions. */
static uint64_t steps_data_time(const struct model_process *p)
{
    uint64_t ns = 0;
    if (p->gpu.lightning_actions) {
        for (size_t i = 0; i < p->gpu.nactions; i++)
            if (strstr(p->gpu.actions[i].name, "dataloader_next"))
                ns += p->gpu.actions[i].total_ns;
        return ns;
    }
    for (size_t i = 0; i < p->torch.nbuiltin; i++)
        if (!strcmp(p->torch.builtin[i].name, "dataloader_next"))
            ns += p->torch.builtin[i].total_ns;
    return ns;
}

/* Time in host-device syncs: wrapped synchronizing calls and blocking copies; without any,
 * the ones CUPTI saw. */
static uint64_t steps_sync_time(const struct model_process *p)
{
    uint64_t ns = 0;
    for (size_t i = 0; i < p->napis; i++) {
        const struct model_api *a = p->apis[i];
        if (a && (a->category == PROF_CAT_SYNC ||
                  (a->category == PROF_CAT_COPY && model_gpu_is_blocking_copy(a->name))))
            ns += a->total_ns;
    }
    for (size_t i = 0; i < p->gpu.napis && !ns; i++) {
        const struct model_gpu_api *a = &p->gpu.apis[i];
        if (model_gpu_is_sync_name(a->name) || model_gpu_is_blocking_copy(a->name))
            ns += a->total_ns;
    }
    return ns;
}

void steps_process_times(const struct model_process *p, uint64_t *compute_ns, uint64_t *data_ns,
                         uint64_t *sync_ns)
{
    size_t n;
    const struct model_torch_row *rows = model_torch_whole_rows(&p->torch, &n);
    for (size_t i = 0; i < n; i++)
        if (!rows[i].name || !model_comm_is_torch_op(rows[i].name))
            *compute_ns += rows[i].self_cpu_ns;
    *data_ns += steps_data_time(p);
    *sync_ns += steps_sync_time(p);
}
