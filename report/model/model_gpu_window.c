/* model_gpu_window: the GPU side's tables of one part of a process (profreport --phase: the
 * steady training steps by default, every step, or the startup), beside the model's own,
 * which stay the whole process's.
 *
 * - Wrapped calls (the CUDA runtime, cuBLAS, cuDNN, NCCL, MPI API tables): every call that
 *   began and ended in the part, from the calls' spans kept while the file is read.
 * - Kernels as the GPU ran them (CUPTI): every kernel whose launching call began in the
 *   part, wherever it ran on the GPU (a step's kernels may run after the step's CPU side
 *   ended); a kernel whose launching call is not known, by its start on the GPU. A library
 *   call's GPU time is that of its kernels launched in the part.
 * - Calls only CUPTI saw: those that began and ended in the part.
 *
 * Exact only when the trace kept every call: when a ring dropped events in the process, or
 * it has no steps, the tables stay the whole process's and gpu_part.miss says why. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"

static void *model_gpu_window_calloc(size_t n, size_t size)
{
    void *v = calloc(n ? n : 1, size);
    if (!v)
        report_oom();
    return v;
}

static void model_gpu_window_on_api_call(struct model_process *p, const struct model_api *api,
                                         const struct prof_rec_api_call *call, const uint64_t *args,
                                         size_t nargs, uint32_t tid)
{
    (void)args;
    (void)nargs;
    (void)tid;
    if (model_torch_window_asked() == MODEL_WINDOW_ALL)
        return;
    struct model_gpu_part *w = &p->gpu_part;
    uint64_t ticks = call->end >= call->start ? call->end - call->start : 0;
    if (ticks >= UINT32_MAX) {
        uint64_t *slot = u64map_slot(&w->long_spans, w->nspans);
        if (!slot)
            report_oom();
        *slot = ticks;
    }
    w->spans = report_grow(w->spans, &w->cap_spans, w->nspans + 1, sizeof *w->spans);
    w->spans[w->nspans++] =
        (struct model_api_span){.start = call->start,
                                .ticks = ticks < UINT32_MAX ? (uint32_t)ticks : UINT32_MAX,
                                .api = api->id,
                                .error = call->result != 0};
}

static uint64_t model_gpu_window_ticks(const struct model_gpu_part *w, size_t i)
{
    if (w->spans[i].ticks < UINT32_MAX)
        return w->spans[i].ticks;
    uint64_t *v = u64map_find(&w->long_spans, i);
    return v ? *v : UINT32_MAX;
}

/* Adds a call of ns to c (min and max from the first call on). */
static void model_gpu_window_count(struct model_api_counts *c, uint64_t ns, int error)
{
    if (!c->calls || ns < c->min_ns)
        c->min_ns = ns;
    if (ns > c->max_ns)
        c->max_ns = ns;
    c->calls++;
    c->errors += error != 0;
    c->total_ns += ns;
}

static int model_gpu_window_in(const struct model_process *p, uint64_t start, uint64_t end,
                               uint64_t lo, uint64_t hi)
{
    return model_ticks_to_monotonic_ns(p, start) >= lo && model_ticks_to_monotonic_ns(p, end) <= hi;
}

static void model_gpu_window_calls(struct model_process *p, uint64_t lo, uint64_t hi)
{
    struct model_gpu_part *w = &p->gpu_part;
    w->napis = p->napis;
    w->apis = model_gpu_window_calloc(w->napis, sizeof *w->apis);
    for (size_t i = 0; i < w->nspans; i++) {
        const struct model_api_span *s = &w->spans[i];
        uint64_t ticks = model_gpu_window_ticks(w, i);
        if (s->api < w->napis && model_gpu_window_in(p, s->start, s->start + ticks, lo, hi))
            model_gpu_window_count(&w->apis[s->api], model_ticks_to_ns(p, ticks), s->error);
    }
    const struct model_gpu *g = &p->gpu;
    w->ncupti = g->napis;
    w->cupti = model_gpu_window_calloc(w->ncupti, sizeof *w->cupti);
    for (size_t i = 0; i < g->ncalls; i++) {
        const struct model_gpu_call *c = &g->calls[i];
        if (c->api && model_gpu_window_in(p, c->start, c->end, lo, hi))
            model_gpu_window_count(&w->cupti[c->api - 1], model_ticks_to_ns(p, c->end - c->start),
                                   0);
    }
}

static void model_gpu_window_kernels(struct model_process *p, uint64_t lo, uint64_t hi)
{
    struct model_gpu_part *w = &p->gpu_part;
    const struct model_gpu *g = &p->gpu;
    w->nkernels = g->nkernels;
    w->kernels = model_gpu_window_calloc(w->nkernels, sizeof *w->kernels);
    for (size_t i = 0; i < w->nkernels; i++) {
        model_gpu_kernel_init(&w->kernels[i], g->kernels[i].name_sid);
        w->kernels[i].name = g->kernels[i].name;
    }
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        if (op->kind != MODEL_GPU_KERNEL || op->row >= w->nkernels)
            continue;
        const struct model_gpu_call *c = model_gpu_op_call(p, i);
        uint64_t at = c ? model_ticks_to_monotonic_ns(p, c->start) : op->start_ns;
        if (at < lo || at >= hi)
            continue;
        struct model_gpu_kernel *k = &w->kernels[op->row];
        uint64_t ns = op->end_ns - op->start_ns;
        if (op->config < g->nconfigs)
            model_gpu_kernel_add(k, ns, &g->configs[op->config]);
        if (!c)
            continue;
        if (c->lib_api && c->lib_api - 1 < w->napis) {
            w->apis[c->lib_api - 1].gpu_kernels++;
            w->apis[c->lib_api - 1].gpu_ns += ns;
        }
        uint64_t nv = c->py_node ? idmap_get(&p->py.node_index, c->py_node) : 0;
        if (nv)
            model_gpu_kernel_site(k, p->py.nodes[nv - 1].func, ns);
    }
}

static void model_gpu_window_finish(struct model_process *p)
{
    struct model_gpu_part *w = &p->gpu_part;
    enum model_window asked = model_torch_window_asked();
    uint64_t lo, hi;
    size_t nsteps = 0;
    w->window = MODEL_WINDOW_ALL;
    w->miss = MODEL_WINDOW_MISS_NONE;
    if (asked != MODEL_WINDOW_ALL && (w->nspans || p->gpu.nops || p->gpu.ncalls)) {
        if (!model_window_bounds(p, &lo, &hi, &nsteps))
            w->miss = MODEL_WINDOW_MISS_NO_STEPS;
        else if (p->lost || p->end_lost || p->lost_calls)
            w->miss = MODEL_WINDOW_MISS_CALLS;
        else
            w->window = (uint8_t)asked;
    }
    if (w->window != MODEL_WINDOW_ALL) {
        model_gpu_window_calls(p, lo, hi);
        model_gpu_window_kernels(p, lo, hi);
        w->window_ns = hi - lo;
        w->window_steps = nsteps;
    }
    free(w->spans);
    w->spans = NULL;
    w->nspans = w->cap_spans = 0;
    u64map_free(&w->long_spans);
}

static void model_gpu_window_free(struct model_process *p)
{
    struct model_gpu_part *w = &p->gpu_part;
    for (size_t i = 0; i < w->nkernels; i++)
        model_gpu_kernel_free(&w->kernels[i]);
    free(w->kernels);
    free(w->apis);
    free(w->cupti);
    free(w->spans);
    u64map_free(&w->long_spans);
    memset(w, 0, sizeof *w);
}

void model_gpu_part_pick(struct model_process *p)
{
    struct model_gpu_part *w = &p->gpu_part;
    enum model_window asked = model_torch_window_asked();
    if (w->window == asked || w->window == MODEL_WINDOW_ALL)
        return; /* the rows asked, or the whole process's with the reason --summarize had */
    model_gpu_window_free(p);
    w->window = MODEL_WINDOW_ALL;
    w->miss = asked == MODEL_WINDOW_ALL ? MODEL_WINDOW_MISS_NONE : MODEL_WINDOW_MISS_SUMMARY;
}

const struct model_gpu_kernel *model_gpu_part_kernels(const struct model_process *p, size_t *n)
{
    int part = p->gpu_part.window != MODEL_WINDOW_ALL;
    *n = part ? p->gpu_part.nkernels : p->gpu.nkernels;
    return part ? p->gpu_part.kernels : p->gpu.kernels;
}

void model_gpu_part_api(const struct model_process *p, size_t api, struct model_api_counts *c)
{
    const struct model_gpu_part *w = &p->gpu_part;
    const struct model_api *a = api < p->napis ? p->apis[api] : NULL;
    memset(c, 0, sizeof *c);
    if (w->window != MODEL_WINDOW_ALL) {
        if (api < w->napis)
            *c = w->apis[api];
    } else if (a) {
        *c = (struct model_api_counts){a->calls,  a->errors,      a->total_ns, a->min_ns,
                                       a->max_ns, a->gpu_kernels, a->gpu_ns};
    }
}

void model_gpu_part_cupti(const struct model_process *p, size_t i, struct model_api_counts *c)
{
    const struct model_gpu_part *w = &p->gpu_part;
    memset(c, 0, sizeof *c);
    if (w->window != MODEL_WINDOW_ALL) {
        if (i < w->ncupti)
            *c = w->cupti[i];
    } else if (i < p->gpu.napis) {
        const struct model_gpu_api *a = &p->gpu.apis[i];
        c->calls = a->calls;
        c->total_ns = a->total_ns;
        c->max_ns = a->max_ns;
    }
}

const struct model_part model_gpu_window_part = {
    .name = "gpu window",
    .on_api_call = model_gpu_window_on_api_call,
    .finish = model_gpu_window_finish,
    .free = model_gpu_window_free,
};
