/* The GPU facts of a process (model.h, struct model_gpu_facts): what the findings need of
 * its timeline — each device's idle gaps and the CUDA calls in them, the Python node with
 * the most synchronizing time, the kernel durations — drawn once at the end of the file,
 * while the operations and CUPTI's calls are there. A summary keeps these, not the
 * timeline. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"

int model_gpu_is_sync_name(const char *name)
{
    return name && strstr(name, "Synchronize") != NULL;
}

int model_gpu_is_blocking_copy(const char *name)
{
    return name && (!strncmp(name, "cudaMemcpy", 10) || !strncmp(name, "cuMemcpy", 8)) &&
           !strstr(name, "Async");
}

uint64_t model_gpu_round_duration(uint64_t ns)
{
    uint64_t scale = 1;
    while (ns / scale >= 1000)
        scale *= 10;
    return (ns + scale / 2) / scale * scale;
}

struct model_gpu_span {
    uint64_t lo, hi;
};

static int model_gpu_span_cmp(const void *a, const void *b)
{
    const struct model_gpu_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The device's idle gaps within the wall time (the complement of its operations' union),
 * and the CUDA calls CUPTI saw overlapping them, by the Python node they were made
 * under. */
static void model_gpu_idle_gaps(const struct model_process *p, uint32_t device,
                                struct model_gpu_idle *g)
{
    memset(g, 0, sizeof *g);
    g->device = device;
    struct model_gpu_span *ops = malloc((p->gpu.nops + 1) * sizeof *ops);
    struct model_gpu_span *gaps = malloc((p->gpu.nops + 1) * sizeof *gaps);
    if (!ops || !gaps)
        report_oom();
    size_t n = 0, ng = 0;
    for (size_t i = 0; i < p->gpu.nops; i++)
        if (p->gpu.ops[i].device == device)
            ops[n++] = (struct model_gpu_span){p->gpu.ops[i].start_ns, p->gpu.ops[i].end_ns};
    qsort(ops, n, sizeof *ops, model_gpu_span_cmp);
    uint64_t at = p->wall_start_ns;
    for (size_t i = 0; i <= n; i++) {
        uint64_t lo = i < n ? ops[i].lo : p->wall_end_ns;
        if (lo > at) {
            gaps[ng++] = (struct model_gpu_span){at, lo};
            if (lo - at > g->longest_ns)
                g->longest_ns = lo - at;
        }
        if (i < n && ops[i].hi > at)
            at = ops[i].hi;
    }
    g->ngaps = ng;
    struct u64map by_node;
    u64map_init(&by_node);
    for (size_t c = 0; c < p->gpu.ncalls && ng; c++) {
        const struct model_gpu_call *call = &p->gpu.calls[c];
        uint64_t lo = model_ticks_to_monotonic_ns(p, call->start);
        uint64_t hi = model_ticks_to_monotonic_ns(p, call->end);
        size_t a = 0, b = ng; /* the first gap ending after lo */
        while (a < b) {
            size_t m = a + (b - a) / 2;
            if (gaps[m].hi <= lo)
                a = m + 1;
            else
                b = m;
        }
        uint64_t in = 0;
        for (size_t k = a; k < ng && gaps[k].lo < hi; k++) {
            uint64_t x = lo > gaps[k].lo ? lo : gaps[k].lo, y = hi < gaps[k].hi ? hi : gaps[k].hi;
            if (y > x)
                in += y - x;
        }
        if (!in)
            continue;
        g->api_ns += in;
        g->api_calls++;
        uint64_t *slot = call->py_node ? u64map_slot(&by_node, call->py_node) : NULL;
        if (call->py_node && !slot)
            report_oom();
        if (slot && (*slot += in) > g->top_ns) {
            g->top_ns = *slot;
            g->top_node = call->py_node;
        }
    }
    u64map_free(&by_node);
    free(ops);
    free(gaps);
}

/* The node under which CUPTI saw the most synchronizing or blocking-copy time. */
static void model_gpu_sync_node(const struct model_process *p, struct model_gpu_facts *f)
{
    struct u64map by_node;
    u64map_init(&by_node);
    for (size_t c = 0; c < p->gpu.ncalls; c++) {
        const struct model_gpu_call *call = &p->gpu.calls[c];
        if (!call->py_node)
            continue;
        if (!call->api || (!model_gpu_is_sync_name(p->gpu.apis[call->api - 1].name) &&
                           !model_gpu_is_blocking_copy(p->gpu.apis[call->api - 1].name)))
            continue;
        uint64_t *slot = u64map_slot(&by_node, call->py_node);
        if (!slot)
            report_oom();
        uint64_t sum = *slot += model_ticks_to_ns(p, call->end - call->start);
        if (sum > f->sync_ns) {
            f->sync_ns = sum;
            f->sync_node = call->py_node;
        }
    }
    u64map_free(&by_node);
}

static void model_gpu_facts_finish(struct model_process *p)
{
    struct model_gpu_facts *f = &p->gpu.facts;
    u64map_init(&f->kernel_durations);
    if (p->gpu.nops) {
        size_t cap = 0;
        for (size_t b = 0; b < p->gpu.nbusy; b++) {
            if (p->gpu.busy[b].stream != -1)
                continue;
            f->idle = report_grow(f->idle, &cap, f->nidle + 1, sizeof *f->idle);
            model_gpu_idle_gaps(p, p->gpu.busy[b].device, &f->idle[f->nidle++]);
        }
    }
    model_gpu_sync_node(p, f);
    for (size_t k = 0; k < p->gpu.nops; k++) {
        const struct model_gpu_op *op = &p->gpu.ops[k];
        if (op->kind != MODEL_GPU_KERNEL)
            continue;
        uint64_t *slot =
            u64map_slot(&f->kernel_durations, model_gpu_round_duration(op->end_ns - op->start_ns));
        if (!slot)
            report_oom();
        ++*slot;
        f->kernels++;
    }
}

static void model_gpu_facts_free(struct model_process *p)
{
    free(p->gpu.facts.idle);
    u64map_free(&p->gpu.facts.kernel_durations);
    memset(&p->gpu.facts, 0, sizeof p->gpu.facts);
}

const struct model_part model_gpu_facts_part = {
    .name = "gpu_facts",
    .finish = model_gpu_facts_finish,
    .free = model_gpu_facts_free,
};
