/* model_gpu: the CUPTI records of one process — kernels, copies and sets as the GPU ran
 * them, the runtime and driver calls CUPTI saw, device properties — and the library calls
 * (cuBLAS, cuBLASLt, cuDNN API_CALL spans). When the file ends, each kernel is tied to the
 * call that launched it (correlation id), that call to the innermost library call around
 * it on its thread and to the Python node running then; and the busy time of each device
 * and stream is the union of its operations' intervals. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "sort_keys.h"
#include "trace_read.h"

static uint64_t *model_gpu_slot(struct u64map *m, uint64_t key)
{
    uint64_t *slot = u64map_slot(m, key);
    if (!slot)
        report_oom();
    return slot;
}

const char *model_gpu_copy_kind_name(unsigned kind)
{
    /* CUpti_ActivityMemcpyKind */
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return kind < sizeof names / sizeof *names ? names[kind] : "unknown";
}

const char *model_gpu_memory_kind_name(unsigned kind)
{
    /* CUpti_ActivityMemoryKind */
    static const char *const names[] = {"unknown", "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
    return kind < sizeof names / sizeof *names ? names[kind] : "unknown";
}

void model_gpu_api_base_name(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s", name);
    /* CUPTI's runtime names carry the version that introduced them: _v3020, _ptsz_v7000. */
    char *v = strrchr(buf, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' &&
        strspn(v + 2, "0123456789") == strlen(v + 2))
        *v = 0;
    size_t n = strlen(buf);
    if (n > 5 && (!strcmp(buf + n - 5, "_ptsz") || !strcmp(buf + n - 5, "_ptds")))
        buf[n - 5] = 0;
}

static struct model_gpu_op *model_gpu_op_add(struct model_gpu *g, uint8_t kind, uint32_t corr,
                                             uint64_t start, uint64_t end, uint32_t device,
                                             uint32_t stream)
{
    g->ops = report_grow(g->ops, &g->cap_ops, g->nops + 1, sizeof *g->ops);
    struct model_gpu_op *op = &g->ops[g->nops++];
    *op = (struct model_gpu_op){.start_ns = start,
                                .end_ns = end >= start ? end : start,
                                .correlation = corr,
                                .device = device,
                                .stream = stream,
                                .kind = kind};
    return op;
}

void model_gpu_kernel_init(struct model_gpu_kernel *k, uint32_t name_sid)
{
    memset(k, 0, sizeof *k);
    k->name_sid = name_sid;
    u64map_init(&k->grids);
    u64map_init(&k->blocks);
    u64map_init(&k->registers);
    u64map_init(&k->py_calls);
    u64map_init(&k->py_ns);
}

void model_gpu_kernel_add(struct model_gpu_kernel *k, uint64_t ns, const struct model_gpu_config *c)
{
    if (!k->calls || ns < k->min_ns)
        k->min_ns = ns;
    if (ns > k->max_ns)
        k->max_ns = ns;
    k->calls++;
    k->total_ns += ns;
    ++*model_gpu_slot(&k->grids, c->grid);
    ++*model_gpu_slot(&k->blocks, c->block);
    ++*model_gpu_slot(&k->registers, c->registers);
}

void model_gpu_kernel_site(struct model_gpu_kernel *k, uint32_t func, uint64_t ns)
{
    ++*model_gpu_slot(&k->py_calls, func);
    *model_gpu_slot(&k->py_ns, func) += ns;
}

/* The index of a launch configuration in g->configs, added when new. */
static uint32_t model_gpu_config(struct model_gpu *g, uint64_t grid, uint64_t block,
                                 uint32_t registers)
{
    uint64_t h = (grid * 0x9e3779b97f4a7c15u ^ block) * 0xff51afd7ed558ccdu ^ registers;
    for (;; h++) { /* a slot holding another configuration: the next hash */
        uint64_t *slot = model_gpu_slot(&g->config_index, h);
        if (!*slot) {
            g->configs =
                report_grow(g->configs, &g->cap_configs, g->nconfigs + 1, sizeof *g->configs);
            g->configs[g->nconfigs] = (struct model_gpu_config){grid, block, registers};
            *slot = ++g->nconfigs;
        }
        const struct model_gpu_config *c = &g->configs[*slot - 1];
        if (c->grid == grid && c->block == block && c->registers == registers)
            return (uint32_t)(*slot - 1);
    }
}

static void model_gpu_on_kernel(struct model_gpu *g, const struct prof_rec_gpu_kernel *r)
{
    struct model_gpu_op *op = model_gpu_op_add(g, MODEL_GPU_KERNEL, r->correlation, r->start_ns,
                                               r->end_ns, r->device, r->stream);
    uint64_t *slot = model_gpu_slot(&g->kernel_index, r->name_sid);
    if (!*slot) {
        g->kernels = report_grow(g->kernels, &g->cap_kernels, g->nkernels + 1, sizeof *g->kernels);
        model_gpu_kernel_init(&g->kernels[g->nkernels], r->name_sid);
        *slot = ++g->nkernels;
    }
    op->row = (uint32_t)(*slot - 1);
    op->config = model_gpu_config(g, r->grid, r->block, r->registers);
    model_gpu_kernel_add(&g->kernels[op->row], op->end_ns - op->start_ns, &g->configs[op->config]);
    g->kernel_ns += op->end_ns - op->start_ns;
}

static void model_gpu_on_memcpy(struct model_gpu *g, const struct prof_rec_gpu_memcpy *r)
{
    struct model_gpu_op *op = model_gpu_op_add(g, MODEL_GPU_MEMCPY, r->correlation, r->start_ns,
                                               r->end_ns, r->device, r->stream);
    size_t i = 0;
    while (i < g->ncopies &&
           !(g->copies[i].copy_kind == r->copy_kind && g->copies[i].src_kind == r->src_kind &&
             g->copies[i].dst_kind == r->dst_kind))
        i++;
    if (i == g->ncopies) {
        g->copies = report_grow(g->copies, &g->cap_copies, g->ncopies + 1, sizeof *g->copies);
        g->copies[g->ncopies++] = (struct model_gpu_copy){
            .copy_kind = r->copy_kind, .src_kind = r->src_kind, .dst_kind = r->dst_kind};
    }
    g->copies[i].calls++;
    g->copies[i].bytes += r->bytes;
    g->copies[i].ns += op->end_ns - op->start_ns;
}

static void model_gpu_on_memset(struct model_gpu *g, const struct prof_rec_gpu_memset *r)
{
    struct model_gpu_op *op = model_gpu_op_add(g, MODEL_GPU_MEMSET, r->correlation, r->start_ns,
                                               r->end_ns, r->device, r->stream);
    size_t i = 0;
    while (i < g->nsets && g->sets[i].device != r->device)
        i++;
    if (i == g->nsets) {
        g->sets = report_grow(g->sets, &g->cap_sets, g->nsets + 1, sizeof *g->sets);
        g->sets[g->nsets++] = (struct model_gpu_set){.device = r->device};
    }
    g->sets[i].calls++;
    g->sets[i].bytes += r->bytes;
    g->sets[i].ns += op->end_ns - op->start_ns;
}

static struct model_gpu_api *model_gpu_api_get(struct model_gpu *g, uint16_t domain, uint16_t cbid)
{
    uint64_t *slot = model_gpu_slot(&g->api_index, (uint64_t)domain << 16 | cbid);
    if (!*slot) {
        g->apis = report_grow(g->apis, &g->cap_apis, g->napis + 1, sizeof *g->apis);
        struct model_gpu_api *a = &g->apis[g->napis];
        memset(a, 0, sizeof *a);
        a->domain = domain;
        a->cbid = cbid;
        *slot = ++g->napis;
    }
    return &g->apis[*slot - 1];
}

static void model_gpu_on_call(struct model_process *p, const struct prof_rec_gpu_api *r,
                              uint32_t tid)
{
    struct model_gpu *g = &p->gpu;
    g->calls = report_grow(g->calls, &g->cap_calls, g->ncalls + 1, sizeof *g->calls);
    g->calls[g->ncalls] = (struct model_gpu_call){.start = r->start,
                                                  .end = r->end >= r->start ? r->end : r->start,
                                                  .tid = tid,
                                                  .correlation = r->correlation,
                                                  .py_node = r->py_node,
                                                  .domain = r->domain,
                                                  .cbid = r->cbid};
    uint64_t *slot = model_gpu_slot(&g->call_index, r->correlation);
    if (!*slot) /* a correlation id names one call; a repeat is ignored for attribution */
        *slot = g->ncalls + 1;
    struct model_gpu_api *a = model_gpu_api_get(g, r->domain, r->cbid);
    g->calls[g->ncalls++].api = (uint32_t)(a - g->apis) + 1;
    uint64_t ticks = r->end >= r->start ? r->end - r->start : 0;
    a->calls++;
    a->total_ticks += ticks;
    if (ticks > a->max_ticks)
        a->max_ticks = ticks;
    model_cpu_event(p, r->start, r->end);
}

static void model_gpu_on_record(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    struct model_gpu *g = &p->gpu;
    switch (rec->type) {
    case PROF_REC_GPU_KERNEL:
        model_gpu_on_kernel(g, rec->data);
        break;
    case PROF_REC_GPU_MEMCPY:
        model_gpu_on_memcpy(g, rec->data);
        break;
    case PROF_REC_GPU_MEMSET:
        model_gpu_on_memset(g, rec->data);
        break;
    case PROF_REC_GPU_API:
        model_gpu_on_call(p, rec->data, tid);
        break;
    case PROF_REC_GPU_API_NAME: {
        const struct prof_rec_gpu_api_name *n = rec->data;
        struct model_gpu_api *a = model_gpu_api_get(g, n->domain, n->cbid);
        free(a->name);
        a->name = report_strdup(trace_record_text(rec, sizeof *n, NULL));
        break;
    }
    case PROF_REC_GPU_DEVICE: {
        const struct prof_rec_gpu_device *d = rec->data;
        size_t i = 0;
        while (i < g->ndevices && g->devices[i].device != d->device)
            i++;
        if (i == g->ndevices) {
            g->devices =
                report_grow(g->devices, &g->cap_devices, g->ndevices + 1, sizeof *g->devices);
            g->ndevices++;
        } else {
            free(g->devices[i].name);
        }
        g->devices[i] = (struct model_gpu_device){
            .device = d->device,
            .name = report_strdup(trace_record_text(rec, sizeof *d, NULL)),
            .global_memory_bytes = d->global_memory_bytes,
            .sm_count = d->sm_count,
            .core_clock_khz = d->core_clock_khz,
            .memory_clock_khz = d->memory_clock_khz,
            .compute_major = d->compute_major,
            .compute_minor = d->compute_minor};
        break;
    }
    default:
        break;
    }
}

static void model_gpu_on_api_call(struct model_process *p, const struct model_api *api,
                                  const struct prof_rec_api_call *call, const uint64_t *args,
                                  size_t nargs, uint32_t tid)
{
    (void)args;
    (void)nargs;
    if (!api->library)
        return;
    struct model_gpu *g = &p->gpu;
    g->lib_spans =
        report_grow(g->lib_spans, &g->cap_lib_spans, g->nlib_spans + 1, sizeof *g->lib_spans);
    g->lib_spans[g->nlib_spans++] =
        (struct model_lib_span){.start = call->start,
                                .end = call->end >= call->start ? call->end : call->start,
                                .tid = tid,
                                .api = api->id};
}

const struct model_gpu_call *model_gpu_op_call(const struct model_process *p, size_t op)
{
    uint32_t c = p->gpu.op_call ? p->gpu.op_call[op] : 0;
    return c ? &p->gpu.calls[c - 1] : NULL;
}

/* Each kernel's call, looked up once: five analyses ask for it per kernel (a hash lookup
 * each was a tenth of --summarize's samples on generated GPU ranks). */
static void model_gpu_op_calls(struct model_gpu *g)
{
    free(g->op_call);
    g->op_call = malloc((g->nops + 1) * sizeof *g->op_call);
    if (!g->op_call)
        report_oom();
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        const uint64_t *v =
            op->kind == MODEL_GPU_KERNEL ? u64map_find(&g->call_index, op->correlation) : NULL;
        g->op_call[i] = v ? (uint32_t)*v : 0;
    }
}

/* ---- the end of the file ---- */

/* The order of keys[0, n) (filled by the caller, each with its index): sort_keys, not
 * qsort's comparator calls (its merge sort was a tenth of --summarize's samples on
 * generated GPU ranks). */
static size_t *model_gpu_order(struct sort_key *keys, size_t n)
{
    size_t *order = malloc((n + 1) * sizeof *order);
    if (!order)
        report_oom();
    sort_keys(keys, n, order);
    free(keys);
    return order;
}

static struct sort_key *model_gpu_keys(size_t n)
{
    struct sort_key *keys = malloc((n + 1) * sizeof *keys);
    if (!keys)
        report_oom();
    return keys;
}

/* Spans by thread, start, then the longer first: an outer span precedes what it holds. */
static void model_gpu_spans_sort(struct model_gpu *g)
{
    struct sort_key *keys = model_gpu_keys(g->nlib_spans);
    for (size_t i = 0; i < g->nlib_spans; i++) {
        const struct model_lib_span *s = &g->lib_spans[i];
        keys[i] = (struct sort_key){{s->tid, s->start, ~s->end, 0}, i};
    }
    sort_records(g->lib_spans, g->lib_spans, g->nlib_spans, sizeof *g->lib_spans, keys);
    free(keys);
}

/* Sets lib_api of every GPU call inside a library call on its thread: one sweep over both,
 * sorted, with the spans open at the call's start on a stack. */
static void model_gpu_contain(struct model_gpu *g)
{
    if (!g->nlib_spans || !g->ncalls)
        return;
    model_gpu_spans_sort(g);
    struct sort_key *keys = model_gpu_keys(g->ncalls); /* calls by thread and start */
    for (size_t i = 0; i < g->ncalls; i++)
        keys[i] = (struct sort_key){{g->calls[i].tid, g->calls[i].start, 0, 0}, i};
    size_t *order = model_gpu_order(keys, g->ncalls);
    size_t *stack = malloc(g->nlib_spans * sizeof *stack);
    if (!stack)
        report_oom();
    size_t top = 0, next = 0;
    uint32_t tid = 0;
    int have_tid = 0;
    for (size_t i = 0; i < g->ncalls; i++) {
        struct model_gpu_call *c = &g->calls[order[i]];
        if (!have_tid || c->tid != tid) {
            tid = c->tid;
            have_tid = 1;
            top = 0;
            while (next < g->nlib_spans && g->lib_spans[next].tid < tid)
                next++;
        }
        while (next < g->nlib_spans && g->lib_spans[next].tid == tid &&
               g->lib_spans[next].start <= c->start) {
            /* Spans that ended before this one starts are closed for every later call. */
            while (top && g->lib_spans[stack[top - 1]].end < g->lib_spans[next].start)
                top--;
            stack[top++] = next++;
        }
        while (top && g->lib_spans[stack[top - 1]].end < c->start)
            top--;
        for (size_t k = top; k-- > 0;) {
            const struct model_lib_span *s = &g->lib_spans[stack[k]];
            if (s->start <= c->start && c->end <= s->end) {
                c->lib_api = (uint32_t)s->api + 1;
                break;
            }
        }
    }
    free(order);
    free(stack);
}

/* Ties each kernel to its call: the library API and the Python node get its GPU time. */
static void model_gpu_attribute(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        if (op->kind != MODEL_GPU_KERNEL)
            continue;
        const struct model_gpu_call *c = model_gpu_op_call(p, i);
        if (!c) {
            g->unattributed++;
            continue;
        }
        uint64_t ns = op->end_ns - op->start_ns;
        if (c->lib_api && c->lib_api - 1 < p->napis && p->apis[c->lib_api - 1]) {
            struct model_api *a = p->apis[c->lib_api - 1];
            a->gpu_kernels++;
            a->gpu_ns += ns;
        }
        uint64_t nv = c->py_node ? idmap_get(&p->py.node_index, c->py_node) : 0;
        if (!nv)
            continue;
        struct model_py_node *node = &p->py.nodes[nv - 1];
        node->gpu_kernels++;
        node->gpu_ns += ns;
        model_gpu_kernel_site(&g->kernels[op->row], node->func, ns);
    }
}

/* The GPU operations by device (and stream, by_stream) and start. */
static size_t *model_gpu_ops_order(const struct model_gpu *g, int by_stream)
{
    struct sort_key *keys = model_gpu_keys(g->nops);
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        keys[i] = (struct sort_key){{op->device, by_stream ? op->stream : 0, op->start_ns, 0}, i};
    }
    return model_gpu_order(keys, g->nops);
}

static void model_gpu_busy_add(struct model_gpu *g, size_t *cap, uint32_t device, int64_t stream,
                               uint64_t busy)
{
    g->busy = report_grow(g->busy, cap, g->nbusy + 1, sizeof *g->busy);
    g->busy[g->nbusy++] = (struct model_gpu_busy){device, stream, busy};
}

/* The union of the intervals of order[from, to) (sorted by start), clipped to [lo, hi]. */
static uint64_t model_gpu_union(const struct model_gpu *g, const size_t *order, size_t from,
                                size_t to, uint64_t lo, uint64_t hi)
{
    uint64_t busy = 0, cur_start = 0, cur_end = 0;
    int open = 0;
    for (size_t i = from; i < to; i++) {
        uint64_t s = g->ops[order[i]].start_ns, e = g->ops[order[i]].end_ns;
        s = s < lo ? lo : s;
        e = e > hi ? hi : e;
        if (e <= s)
            continue;
        if (open && s <= cur_end) {
            if (e > cur_end)
                cur_end = e;
            continue;
        }
        if (open)
            busy += cur_end - cur_start;
        cur_start = s;
        cur_end = e;
        open = 1;
    }
    return open ? busy + cur_end - cur_start : busy;
}

static void model_gpu_utilization(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    if (!g->nops)
        return;
    size_t *order = model_gpu_ops_order(g, 0), cap = 0;
    size_t *by_stream = model_gpu_ops_order(g, 1);
    size_t s = 0;
    for (size_t i = 0; i < g->nops;) {
        uint32_t dev = g->ops[order[i]].device;
        size_t j = i;
        while (j < g->nops && g->ops[order[j]].device == dev)
            j++;
        model_gpu_busy_add(g, &cap, dev, -1,
                           model_gpu_union(g, order, i, j, p->wall_start_ns, p->wall_end_ns));
        while (s < g->nops && g->ops[by_stream[s]].device == dev) {
            uint32_t stream = g->ops[by_stream[s]].stream;
            size_t k = s;
            while (k < g->nops && g->ops[by_stream[k]].device == dev &&
                   g->ops[by_stream[k]].stream == stream)
                k++;
            model_gpu_busy_add(
                g, &cap, dev, stream,
                model_gpu_union(g, by_stream, s, k, p->wall_start_ns, p->wall_end_ns));
            s = k;
        }
        i = j;
    }
    free(order);
    free(by_stream);
}

/* The wall window: first to last CPU event or CLOCK record; with neither, the GPU's. */
static void model_wall_finish(struct model_process *p)
{
    int have = 0;
    uint64_t lo = 0, hi = 0;
    if (p->cpu_seen) {
        lo = model_ticks_to_monotonic_ns(p, p->cpu_first_ticks);
        hi = model_ticks_to_monotonic_ns(p, p->cpu_last_ticks);
        have = 1;
    }
    if (p->nclocks) {
        if (!have || p->clock_first_ns < lo)
            lo = p->clock_first_ns;
        if (!have || p->clock_last_ns > hi)
            hi = p->clock_last_ns;
        have = 1;
    }
    for (size_t i = 0; !have && i < p->gpu.nops; i++) {
        if (i == 0 || p->gpu.ops[i].start_ns < lo)
            lo = p->gpu.ops[i].start_ns;
        if (i == 0 || p->gpu.ops[i].end_ns > hi)
            hi = p->gpu.ops[i].end_ns;
    }
    p->wall_start_ns = lo;
    p->wall_end_ns = hi >= lo ? hi : lo;
    p->wall_ns = p->wall_end_ns - p->wall_start_ns;
}

static void model_gpu_finish(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    char name[48];
    for (size_t i = 0; i < g->nkernels; i++) {
        struct model_gpu_kernel *k = &g->kernels[i];
        const char *s = k->name_sid ? u64map_get_ptr(&p->strings, k->name_sid) : NULL;
        free(k->name);
        if (!s) {
            snprintf(name, sizeof name, "(kernel name #%u)", k->name_sid);
            s = name;
        }
        k->name = model_demangle(s);
    }
    for (size_t i = 0; i < g->napis; i++) {
        struct model_gpu_api *a = &g->apis[i];
        if (!a->name) {
            snprintf(name, sizeof name, "cupti#%u:%u", a->domain, a->cbid);
            a->name = report_strdup(name);
        }
        a->total_ns = model_ticks_to_ns(p, a->total_ticks);
        a->max_ns = model_ticks_to_ns(p, a->max_ticks);
    }
    model_wall_finish(p);
    model_gpu_op_calls(g);
    model_gpu_contain(g);
    model_gpu_attribute(p);
    model_gpu_utilization(p);
    if (g->unattributed)
        model_add_warning(p,
                          "%s (pid %lld): %" PRIu64 " of the GPU kernels match no CUDA call "
                          "(correlation id) and are unattributed: no launching call, thread or "
                          "Python function",
                          p->file, (long long)p->pid, g->unattributed);
}

void model_gpu_kernel_free(struct model_gpu_kernel *k)
{
    u64map_free(&k->grids);
    u64map_free(&k->blocks);
    u64map_free(&k->registers);
    u64map_free(&k->py_calls);
    u64map_free(&k->py_ns);
}

static void model_gpu_free(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    for (size_t i = 0; i < g->nkernels; i++) {
        free(g->kernels[i].name);
        model_gpu_kernel_free(&g->kernels[i]);
    }
    free(g->kernels);
    u64map_free(&g->kernel_index);
    free(g->configs);
    u64map_free(&g->config_index);
    free(g->ops);
    free(g->copies);
    free(g->sets);
    free(g->calls);
    u64map_free(&g->call_index);
    free(g->op_call);
    for (size_t i = 0; i < g->napis; i++)
        free(g->apis[i].name);
    free(g->apis);
    u64map_free(&g->api_index);
    free(g->lib_spans);
    for (size_t i = 0; i < g->ndevices; i++)
        free(g->devices[i].name);
    free(g->devices);
    free(g->busy);
}

static const struct model_record_handler model_gpu_handlers[] = {
    {PROF_REC_GPU_KERNEL, model_gpu_on_record},   {PROF_REC_GPU_MEMCPY, model_gpu_on_record},
    {PROF_REC_GPU_MEMSET, model_gpu_on_record},   {PROF_REC_GPU_API, model_gpu_on_record},
    {PROF_REC_GPU_API_NAME, model_gpu_on_record}, {PROF_REC_GPU_DEVICE, model_gpu_on_record},
};

const struct model_part model_gpu_part = {
    .name = "gpu",
    MODEL_PART_HANDLERS(model_gpu_handlers),
    .on_api_call = model_gpu_on_api_call,
    .finish = model_gpu_finish,
    .free = model_gpu_free,
};
