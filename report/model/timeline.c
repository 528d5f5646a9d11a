/* timeline: one trace file's events streamed to a writer (see timeline.h). */
#include "timeline.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_steps_find.h"
#include "trace_read.h"

/* A name key: what kind of source id it is, then the id. */
#define TIMELINE_KEY(kind, id) ((uint64_t)(kind) << 48 | (uint64_t)(id))

void timeline_bits_add(struct idbits *bits, uint64_t id)
{
    if (idbits_add(bits, id) != 0)
        report_oom();
}

int timeline_bits_once(struct idbits *bits, uint64_t id)
{
    if (idbits_has(bits, id))
        return 0;
    timeline_bits_add(bits, id);
    return 1;
}

int timeline_has_flow(const struct model_process *p, uint32_t correlation)
{
    return correlation && idbits_has(&p->timeline_flows, correlation);
}

/* p->timeline_flows: the ids in both launches and activities. */
static void timeline_flows_keep(struct model_process *p, struct idbits *launches,
                                const struct idbits *activities)
{
    uint64_t key;
    const uint64_t *w;
    for (size_t i = 0; idbits_next(launches, &i, &key, &w);) {
        const uint64_t *a = idbits_chunk(activities, key);
        uint64_t both[8], any = 0;
        for (int k = 0; k < 8; k++)
            any |= both[k] = a ? w[k] & a[k] : 0;
        if (any && idbits_set_chunk(&p->timeline_flows, key, both) != 0)
            report_oom();
    }
    idbits_free(launches);
}

void timeline_flows_prepare(struct model_process *p)
{
    if (p->timeline_flows.nchunks || !p->gpu.ncalls || !p->gpu.nops)
        return; /* timeline_load_defs filled it, or no arrow can be drawn */
    struct idbits launches, activities;
    idbits_init(&launches);
    idbits_init(&activities);
    for (size_t i = 0; i < p->gpu.ncalls; i++)
        timeline_bits_add(&launches, p->gpu.calls[i].correlation);
    for (size_t i = 0; i < p->gpu.nops; i++)
        timeline_bits_add(&activities, p->gpu.ops[i].correlation);
    timeline_flows_keep(p, &launches, &activities);
    idbits_free(&activities);
}

struct model_process *timeline_load_defs(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    struct model_process *p = model_process_new(path, trace_reader_header(r)->features);
    struct idbits launches, activities; /* correlation ids seen: timeline_has_flow */
    idbits_init(&launches);
    idbits_init(&activities);
    struct trace_record rec;
    while (trace_reader_next(r, &rec)) {
        switch (rec.type) {
        case PROF_REC_GPU_API:
            timeline_bits_add(&launches, ((const struct prof_rec_gpu_api *)rec.data)->correlation);
            break;
        case PROF_REC_GPU_KERNEL:
            timeline_bits_add(&activities,
                              ((const struct prof_rec_gpu_kernel *)rec.data)->correlation);
            break;
        case PROF_REC_GPU_MEMCPY:
            timeline_bits_add(&activities,
                              ((const struct prof_rec_gpu_memcpy *)rec.data)->correlation);
            break;
        case PROF_REC_GPU_MEMSET:
            timeline_bits_add(&activities,
                              ((const struct prof_rec_gpu_memset *)rec.data)->correlation);
            break;
        case PROF_REC_META:
        case PROF_REC_STRING:
        case PROF_REC_API_NAME:
        case PROF_REC_THREAD:
        case PROF_REC_THREAD_NAME:
        case PROF_REC_CLOCK:
        case PROF_REC_SYMBOL:
        case PROF_REC_NOTE:
        case PROF_REC_GPU_API_NAME:
        case PROF_REC_GPU_DEVICE:
        case PROF_REC_PY_FUNC:
        case PROF_REC_PY_NODE:
        case PROF_REC_END:
            model_add_record(p, &rec);
            break;
        default: /* events: timeline_stream reads them */
            break;
        }
    }
    const char *w = trace_reader_warning(r);
    if (w) {
        p->truncated = 1;
        p->stop_warning = report_strdup(w);
        model_add_warning(p, "%s", w);
    }
    trace_reader_close(r);
    timeline_flows_keep(p, &launches, &activities);
    idbits_free(&activities);
    model_finish(p);
    return p;
}

int64_t timeline_realtime_offset(const struct model_process *p)
{
    const char *mono = model_meta_get(p, "start_monotonic_ns");
    if (!p->start_realtime_ns || !mono || !*mono)
        return 0;
    return (int64_t)(p->start_realtime_ns - strtoull(mono, NULL, 10));
}

const char *timeline_process_label(const struct model_process *p, char *buf, size_t len)
{
    const char *cmd = p->command && *p->command ? p->command : "process";
    if (p->rank >= 0)
        snprintf(buf, len, "%s [rank %lld]", cmd, (long long)p->rank);
    else
        snprintf(buf, len, "%s", cmd);
    return buf;
}

/* An open NVTX range or action: when it began, its name, its thread. */
struct timeline_open {
    uint64_t ticks;
    uint32_t name_sid, tid;
    uint16_t kind; /* NVTX START/END: which of the pair this is */
};

struct timeline_stack {
    struct timeline_open *items;
    size_t n, cap;
};

struct timeline_state {
    const struct model_process *p;
    timeline_fn fn;
    void *ctx;
    uint32_t tid;
    struct u64map names;    /* name key -> malloc'd name made here */
    struct u64map stacks;   /* NVTX push/pop: tid -> stack; actions: name_sid | 1<<63 -> stack */
    struct u64map ranges;   /* NVTX start/end: range id -> struct timeline_open * */
    struct u64map mem_tids; /* threads with TORCH_MEM records: merged after the main pass */
    struct model_steps_finder *steps; /* the training steps, sent after the main pass */
};

static const char *timeline_string(const struct model_process *p, uint32_t sid)
{
    const char *s = sid ? u64map_get_ptr(&p->strings, sid) : NULL;
    return s ? s : "?";
}

/* The name cached under key, or NULL. */
static const char *timeline_cached(struct timeline_state *s, uint64_t key)
{
    return u64map_get_ptr(&s->names, key);
}

static const char *timeline_cache(struct timeline_state *s, uint64_t key, char *name)
{
    uint64_t *slot = u64map_slot(&s->names, key);
    if (!slot)
        report_oom();
    *slot = (uintptr_t)name;
    return name;
}

static const char *timeline_kernel_name(struct timeline_state *s, uint32_t sid)
{
    uint64_t key = TIMELINE_KEY(TIMELINE_KERNEL, sid);
    const char *n = timeline_cached(s, key);
    return n ? n : timeline_cache(s, key, model_demangle(timeline_string(s->p, sid)));
}

/* torch.profiler's name of a Python call: "train.py(12): step". */
static const char *timeline_python_name(struct timeline_state *s, uint32_t node_id, uint64_t *key)
{
    const struct model_py_node *node = model_python_node(s->p, node_id);
    uint32_t func_id = node ? node->func : 0;
    *key = TIMELINE_KEY(TIMELINE_PYTHON, func_id);
    const char *n = timeline_cached(s, *key);
    if (n)
        return n;
    const struct model_py_func *f = model_python_func(s->p, func_id);
    char *name;
    if (!f)
        name = report_asprintf("python#%u", func_id);
    else if (f->kind == PROF_PY_FUNC_C)
        name = report_strdup(f->name ? f->name : "?");
    else
        name = report_asprintf("%s(%u): %s", f->file ? f->file : "?", f->line,
                               f->name ? f->name : "?");
    return timeline_cache(s, *key, name);
}

static const char *timeline_api_name(struct timeline_state *s, uint16_t api)
{
    const struct model_api *a = api < s->p->napis ? s->p->apis[api] : NULL;
    if (a && a->name)
        return a->name;
    uint64_t key = TIMELINE_KEY(TIMELINE_API, api);
    const char *n = timeline_cached(s, key);
    if (n)
        return n;
    char buf[32];
    snprintf(buf, sizeof buf, "api#%u", api);
    return timeline_cache(s, key, report_strdup(buf));
}

static const char *timeline_gpu_api_name(struct timeline_state *s, uint16_t domain, uint16_t cbid)
{
    uint64_t key = TIMELINE_KEY(TIMELINE_RUNTIME, (uint32_t)domain << 16 | cbid);
    const char *n = timeline_cached(s, key);
    if (n)
        return n;
    const uint64_t *idx = u64map_find(&s->p->gpu.api_index, (uint64_t)domain << 16 | cbid);
    const char *full = idx ? s->p->gpu.apis[*idx - 1].name : NULL;
    char buf[256];
    if (full)
        model_gpu_api_base_name(full, buf, sizeof buf);
    else
        snprintf(buf, sizeof buf, "cupti#%u:%u", domain, cbid);
    return timeline_cache(s, key, report_strdup(buf));
}

/* torch.profiler's copy names: "Memcpy HtoD (Pageable -> Device)". */
static const char *timeline_copy_name(struct timeline_state *s, const struct prof_rec_gpu_memcpy *c)
{
    uint64_t key = TIMELINE_KEY(TIMELINE_MEMCPY, (uint32_t)c->copy_kind << 16 |
                                                     (uint32_t)c->src_kind << 8 | c->dst_kind);
    const char *n = timeline_cached(s, key);
    if (n)
        return n;
    char buf[128], src[32], dst[32];
    snprintf(src, sizeof src, "%s", model_gpu_memory_kind_name(c->src_kind));
    snprintf(dst, sizeof dst, "%s", model_gpu_memory_kind_name(c->dst_kind));
    src[0] = (char)toupper((unsigned char)src[0]);
    dst[0] = (char)toupper((unsigned char)dst[0]);
    snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", model_gpu_copy_kind_name(c->copy_kind), src,
             dst);
    return timeline_cache(s, key, report_strdup(buf));
}

static struct timeline_stack *timeline_stack_of(struct timeline_state *s, uint64_t key)
{
    uint64_t *slot = u64map_slot(&s->stacks, key);
    if (!slot)
        report_oom();
    if (!*slot) {
        struct timeline_stack *st = calloc(1, sizeof *st);
        if (!st)
            report_oom();
        *slot = (uintptr_t)st;
    }
    return (struct timeline_stack *)(uintptr_t)*slot;
}

static void timeline_push(struct timeline_stack *st, struct timeline_open o)
{
    st->items = report_grow(st->items, &st->cap, st->n + 1, sizeof *st->items);
    st->items[st->n++] = o;
}

static int timeline_emit(struct timeline_state *s, struct timeline_event *ev)
{
    if (ev->kind == TIMELINE_SCOPE)
        model_steps_finder_scope(s->steps, ev->name, ev->tid, ev->start_ns, ev->end_ns);
    else if (ev->kind == TIMELINE_PYTHON)
        model_steps_finder_python(s->steps, ev->py_node, ev->tid, ev->start_ns, ev->end_ns);
    else if ((ev->kind == TIMELINE_NVTX || ev->kind == TIMELINE_ACTION) &&
             ev->end_ns > ev->start_ns)
        model_steps_finder_range(s->steps, ev->name, ev->kind == TIMELINE_ACTION, ev->tid,
                                 ev->start_ns, ev->end_ns);
    return s->fn(s->ctx, ev);
}

/* The training steps (model.h) as STEP events, ProfilerStep#N as torch.profiler names them;
 * none when the trace has torch's own ProfilerStep#N scopes (already sent). */
static int timeline_steps(struct timeline_state *s)
{
    struct model_steps st = {0};
    model_steps_finder_end(s->steps, &st);
    s->steps = NULL;
    int rc = 0;
    for (size_t i = 0; i < st.nsteps && rc == 0 && st.source != MODEL_STEPS_PROFILER_STEP; i++) {
        char name[48];
        snprintf(name, sizeof name, "ProfilerStep#%" PRIu64, st.steps[i].number);
        struct timeline_event ev = {.kind = TIMELINE_STEP,
                                    .tid = st.tid,
                                    .start_ns = st.steps[i].start_ns,
                                    .end_ns = st.steps[i].end_ns,
                                    .name = name,
                                    .name_key = (uint64_t)TIMELINE_STEP << 48 | st.steps[i].number,
                                    .sequence_nr = -1};
        rc = s->fn(s->ctx, &ev);
    }
    free(st.steps);
    return rc;
}

/* A span of a name string (NVTX, action) from an open record to ticks. */
static int timeline_emit_range(struct timeline_state *s, uint8_t kind, struct timeline_open o,
                               uint64_t end_ticks)
{
    struct timeline_event ev = {.kind = kind,
                                .tid = o.tid,
                                .start_ns = model_ticks_to_monotonic_ns(s->p, o.ticks),
                                .end_ns = model_ticks_to_monotonic_ns(s->p, end_ticks),
                                .name = timeline_string(s->p, o.name_sid),
                                .name_key = TIMELINE_KEY(kind, o.name_sid),
                                .sequence_nr = -1};
    return timeline_emit(s, &ev);
}

static int timeline_on_nvtx(struct timeline_state *s, const struct prof_rec_nvtx *n)
{
    struct timeline_open o = {n->ticks, n->name_sid, s->tid, n->kind};
    switch (n->kind) {
    case PROF_NVTX_PUSH:
        timeline_push(timeline_stack_of(s, s->tid), o);
        return 0;
    case PROF_NVTX_POP: {
        struct timeline_stack *st = timeline_stack_of(s, s->tid);
        if (!st->n)
            return 0; /* a pop without its push (before profiling began) */
        return timeline_emit_range(s, TIMELINE_NVTX, st->items[--st->n], n->ticks);
    }
    case PROF_NVTX_START:
    case PROF_NVTX_END: {
        /* A range may end on another thread, whose records can reach the file first: the
         * first of the pair waits in ranges for the other. */
        int start = n->kind == PROF_NVTX_START;
        uint64_t *slot = u64map_slot(&s->ranges, n->id);
        if (!slot)
            report_oom();
        struct timeline_open *other = (struct timeline_open *)(uintptr_t)*slot;
        if (!other || other->kind == n->kind) {
            struct timeline_open *copy = malloc(sizeof *copy);
            if (!copy)
                report_oom();
            free(other);
            *copy = o;
            *slot = (uintptr_t)copy;
            return 0;
        }
        struct timeline_open first = *other;
        free(other);
        u64map_remove(&s->ranges, n->id);
        return start ? timeline_emit_range(s, TIMELINE_NVTX, o, first.ticks)
                     : timeline_emit_range(s, TIMELINE_NVTX, first, n->ticks);
    }
    case PROF_NVTX_MARK:
        return timeline_emit_range(s, TIMELINE_NVTX, o, n->ticks);
    default:
        return 0;
    }
}

static int timeline_on_action(struct timeline_state *s, const struct prof_rec_action *a)
{
    struct timeline_stack *st = timeline_stack_of(s, (uint64_t)1 << 63 | a->name_sid);
    if (a->kind == PROF_ACTION_START) {
        timeline_push(st, (struct timeline_open){a->ticks, a->name_sid, s->tid, a->kind});
        return 0;
    }
    if (a->kind != PROF_ACTION_STOP || !st->n)
        return 0;
    return timeline_emit_range(s, TIMELINE_ACTION, st->items[--st->n], a->ticks);
}

static int timeline_on_record(struct timeline_state *s, const struct trace_record *rec)
{
    const struct model_process *p = s->p;
    struct timeline_event ev = {.tid = s->tid, .sequence_nr = -1};
    switch (rec->type) {
    case PROF_REC_THREAD:
        s->tid = ((const struct prof_rec_thread *)rec->data)->tid;
        return 0;
    case PROF_REC_PY_SPAN: {
        const struct prof_rec_py_span *sp = rec->data;
        ev.kind = TIMELINE_PYTHON;
        ev.py_node = sp->node_id;
        ev.name = timeline_python_name(s, sp->node_id, &ev.name_key);
        ev.start_ns = model_ticks_to_monotonic_ns(p, sp->start);
        ev.end_ns = model_ticks_to_monotonic_ns(p, sp->end);
        break;
    }
    case PROF_REC_TORCH_SCOPE: { /* the log's copy of a step scope: for the steps only */
        const struct prof_rec_torch_scope *sc = rec->data;
        model_steps_finder_logged_scope(
            s->steps, sc->name_sid ? timeline_string(p, sc->name_sid) : NULL, s->tid,
            model_ticks_to_monotonic_ns(p, sc->start), model_ticks_to_monotonic_ns(p, sc->end));
        return 0;
    }
    case PROF_REC_TORCH_OP: {
        const struct prof_rec_torch_op *op = rec->data;
        ev.kind = op->scope == MODEL_TORCH_SCOPE_USER ? TIMELINE_SCOPE : TIMELINE_OP;
        ev.name = timeline_string(p, op->name_sid);
        ev.name_key = TIMELINE_KEY(TIMELINE_OP, op->name_sid);
        ev.start_ns = model_ticks_to_monotonic_ns(p, op->start);
        ev.end_ns = model_ticks_to_monotonic_ns(p, op->end);
        ev.sequence_nr = op->sequence_nr;
        ev.scope = op->scope;
        ev.shapes_sid = op->shapes_sid;
        ev.shapes = op->shapes_sid ? timeline_string(p, op->shapes_sid) : NULL;
        break;
    }
    case PROF_REC_API_CALL: {
        const struct prof_rec_api_call *c = rec->data;
        const struct model_api *a = c->api < p->napis ? p->apis[c->api] : NULL;
        ev.kind = a && a->category == MODEL_CAT_LIBRARY ? TIMELINE_LIBRARY
                  : a && a->category == PROF_CAT_COMM   ? TIMELINE_COMM
                                                        : TIMELINE_API;
        ev.name = timeline_api_name(s, c->api);
        ev.name_key = TIMELINE_KEY(TIMELINE_API, c->api);
        ev.start_ns = model_ticks_to_monotonic_ns(p, c->start);
        ev.end_ns = model_ticks_to_monotonic_ns(p, c->end);
        break;
    }
    case PROF_REC_GPU_API: {
        const struct prof_rec_gpu_api *g = rec->data;
        ev.kind = g->domain == PROF_GPU_API_DRIVER ? TIMELINE_DRIVER : TIMELINE_RUNTIME;
        ev.name = timeline_gpu_api_name(s, g->domain, g->cbid);
        ev.name_key = TIMELINE_KEY(TIMELINE_RUNTIME, (uint32_t)g->domain << 16 | g->cbid);
        ev.correlation = g->correlation;
        ev.cbid = g->cbid;
        ev.py_node = g->py_node;
        ev.start_ns = model_ticks_to_monotonic_ns(p, g->start);
        ev.end_ns = model_ticks_to_monotonic_ns(p, g->end);
        break;
    }
    case PROF_REC_GPU_KERNEL: {
        const struct prof_rec_gpu_kernel *k = rec->data;
        ev.kind = TIMELINE_KERNEL;
        ev.name = timeline_kernel_name(s, k->name_sid);
        ev.name_key = TIMELINE_KEY(TIMELINE_KERNEL, k->name_sid);
        ev.correlation = k->correlation;
        ev.device = k->device;
        ev.stream = k->stream;
        ev.grid = k->grid;
        ev.block = k->block;
        ev.registers = k->registers;
        ev.shared_bytes = k->shared_bytes;
        ev.start_ns = k->start_ns;
        ev.end_ns = k->end_ns;
        break;
    }
    case PROF_REC_GPU_MEMCPY: {
        const struct prof_rec_gpu_memcpy *c = rec->data;
        ev.kind = TIMELINE_MEMCPY;
        ev.name = timeline_copy_name(s, c);
        ev.name_key = TIMELINE_KEY(TIMELINE_MEMCPY, (uint32_t)c->copy_kind << 16 |
                                                        (uint32_t)c->src_kind << 8 | c->dst_kind);
        ev.correlation = c->correlation;
        ev.device = c->device;
        ev.stream = c->stream;
        ev.bytes = c->bytes;
        ev.copy_kind = c->copy_kind;
        ev.src_kind = c->src_kind;
        ev.dst_kind = c->dst_kind;
        ev.start_ns = c->start_ns;
        ev.end_ns = c->end_ns;
        break;
    }
    case PROF_REC_GPU_MEMSET: {
        const struct prof_rec_gpu_memset *m = rec->data;
        ev.kind = TIMELINE_MEMSET;
        ev.name = "Memset (Device)";
        ev.name_key = TIMELINE_KEY(TIMELINE_MEMSET, 0);
        ev.correlation = m->correlation;
        ev.device = m->device;
        ev.stream = m->stream;
        ev.bytes = m->bytes;
        ev.start_ns = m->start_ns;
        ev.end_ns = m->end_ns;
        break;
    }
    case PROF_REC_NVTX:
        return timeline_on_nvtx(s, rec->data);
    case PROF_REC_ACTION:
        return timeline_on_action(s, rec->data);
    case PROF_REC_TORCH_MEM:
    case PROF_REC_TORCH_DEV_MEM:
        if (!u64map_slot(&s->mem_tids, s->tid))
            report_oom();
        return 0; /* summed in time order by timeline_memory */
    default:
        return 0;
    }
    if (ev.end_ns < ev.start_ns)
        ev.end_ns = ev.start_ns;
    return timeline_emit(s, &ev);
}

/* One thread's tensor memory records (TORCH_MEM, TORCH_DEV_MEM of devices), read from the
 * file by a reader of its own. */
struct timeline_mem_cursor {
    struct trace_reader *r;
    uint32_t tid, current;
    int more;
    uint64_t ticks, ptr, reserved;
    int64_t bytes;
    int8_t dev_type, dev_index;
};

static void timeline_mem_next(struct timeline_mem_cursor *c)
{
    struct trace_record rec;
    while ((c->more = trace_reader_next(c->r, &rec))) {
        if (rec.type == PROF_REC_THREAD) {
            c->current = ((const struct prof_rec_thread *)rec.data)->tid;
        } else if (rec.type == PROF_REC_TORCH_MEM && c->current == c->tid) {
            const struct prof_rec_torch_mem *m = rec.data;
            *c = (struct timeline_mem_cursor){
                c->r, c->tid, c->current, 1, m->ticks, m->ptr, 0, m->bytes, MODEL_TORCH_DEVICE_CPU,
                -1};
            if (m->bytes) /* 0: a free of a block whose allocation was not seen */
                return;
        } else if (rec.type == PROF_REC_TORCH_DEV_MEM && c->current == c->tid) {
            const struct prof_rec_torch_dev_mem *m = rec.data;
            if (m->device_type == MODEL_TORCH_DEVICE_CPU)
                continue; /* repeats TORCH_MEM (see trace_format.h) */
            *c = (struct timeline_mem_cursor){c->r,
                                              c->tid,
                                              c->current,
                                              1,
                                              m->ticks,
                                              m->ptr,
                                              m->total_reserved,
                                              m->bytes,
                                              m->device_type,
                                              m->device_index < 0 ? 0 : m->device_index};
            return;
        }
    }
}

/* Live tensor bytes per device need every thread's allocations and frees in time order (as
 * the model sums them), and the file holds each thread's in order but interleaves threads
 * as the collector drains them: a merge of one reader per thread that allocates (a few),
 * each passing over the file once. */
static int timeline_memory(struct timeline_state *s, char *err, size_t errlen)
{
    size_t n = s->mem_tids.count, k = 0;
    struct timeline_mem_cursor *c = calloc(n, sizeof *c);
    struct u64map live; /* device key -> live bytes */
    if (!c)
        report_oom();
    u64map_init(&live);
    uint64_t tid, unused;
    int rc = 0;
    for (size_t i = 0; u64map_next(&s->mem_tids, &i, &tid, &unused) && rc == 0; k++) {
        c[k].tid = (uint32_t)tid;
        c[k].r = trace_reader_open(s->p->file, err, errlen);
        if (!c[k].r)
            rc = -1;
        else
            timeline_mem_next(&c[k]);
    }
    while (rc == 0) {
        struct timeline_mem_cursor *m = NULL;
        for (size_t i = 0; i < k; i++)
            if (c[i].more && (!m || c[i].ticks < m->ticks))
                m = &c[i];
        if (!m)
            break;
        uint32_t dev = (uint32_t)(uint8_t)m->dev_type << 8 | (uint8_t)m->dev_index;
        uint64_t *sum = u64map_slot(&live, dev);
        if (!sum)
            report_oom();
        /* saturating, as the model sums them: a damaged or planted record must not make
         * the sum overflow (undefined) into a negative total */
        *sum = (uint64_t)model_i64_add((int64_t)*sum, m->bytes);
        struct timeline_event ev = {.kind = TIMELINE_MEMORY,
                                    .tid = m->tid,
                                    .name_key = TIMELINE_KEY(TIMELINE_MEMORY, dev),
                                    .sequence_nr = -1,
                                    .dev_type = m->dev_type,
                                    .dev_index = m->dev_index,
                                    .delta = m->bytes,
                                    .live = (int64_t)*sum,
                                    .reserved = m->reserved,
                                    .ptr = m->ptr};
        ev.name = timeline_cached(s, ev.name_key);
        if (!ev.name) {
            char buf[64];
            model_torch_device_name(ev.dev_type, ev.dev_index, buf, sizeof buf);
            ev.name = timeline_cache(s, ev.name_key, report_strdup(buf));
        }
        ev.start_ns = ev.end_ns = model_ticks_to_monotonic_ns(s->p, m->ticks);
        rc = timeline_emit(s, &ev);
        timeline_mem_next(m);
    }
    for (size_t i = 0; i < k; i++)
        if (c[i].r)
            trace_reader_close(c[i].r);
    free(c);
    u64map_free(&live);
    return rc;
}

static void timeline_state_free(struct timeline_state *s)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&s->names, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    for (size_t i = 0; u64map_next(&s->stacks, &i, &k, &v);) {
        struct timeline_stack *st = (struct timeline_stack *)(uintptr_t)v;
        free(st->items);
        free(st);
    }
    for (size_t i = 0; u64map_next(&s->ranges, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    u64map_free(&s->names);
    u64map_free(&s->stacks);
    u64map_free(&s->ranges);
    u64map_free(&s->mem_tids);
}

int timeline_stream(const struct model_process *p, timeline_fn fn, void *ctx, char *err,
                    size_t errlen)
{
    struct trace_reader *r = trace_reader_open(p->file, err, errlen);
    if (!r)
        return -1;
    struct timeline_state s = {.p = p, .fn = fn, .ctx = ctx, .steps = model_steps_finder_new(p)};
    u64map_init(&s.names);
    u64map_init(&s.stacks);
    u64map_init(&s.ranges);
    u64map_init(&s.mem_tids);
    struct trace_record rec;
    int rc = 0;
    while (rc == 0 && trace_reader_next(r, &rec))
        rc = timeline_on_record(&s, &rec);
    if (rc == 0)
        rc = timeline_steps(&s);
    if (rc == 0 && s.mem_tids.count)
        rc = timeline_memory(&s, err, errlen);
    else if (rc != 0)
        snprintf(err, errlen, "%s: export stopped (cannot write the output)", p->file);
    if (s.steps) { /* stopped before the steps */
        struct model_steps none = {0};
        model_steps_finder_end(s.steps, &none);
        free(none.steps);
    }
    timeline_state_free(&s);
    trace_reader_close(r);
    return rc;
}

/* The top-level spans given so far: apart from each other, in time order (a track's spans
 * come when they end, a parent after its children). */
struct timeline_nest {
    uint64_t *lo, *hi;
    size_t n, cap;
};

#define TIMELINE_NEST_MAX 4096 /* past it the older half is forgotten */

struct timeline_nest *timeline_nest_new(void)
{
    struct timeline_nest *t = calloc(1, sizeof *t);
    if (!t)
        report_oom();
    return t;
}

void timeline_nest_clip(struct timeline_nest *t, uint64_t *start, uint64_t *end)
{
    uint64_t s = *start, e = *end;
    while (t->n && t->lo[t->n - 1] >= s && t->hi[t->n - 1] <= e)
        t->n--; /* held by this span */
    if (t->n) {
        size_t i = t->n - 1;
        if (t->hi[i] > e) { /* out of order: inside it, before it, or ending inside it */
            if (t->lo[i] > s && t->lo[i] < e)
                *end = t->lo[i];
            return;
        }
        if (t->hi[i] > s) /* began before s (else popped) and ends inside [s, e] */
            *start = s = t->hi[i];
    }
    if (t->n == TIMELINE_NEST_MAX) {
        size_t half = TIMELINE_NEST_MAX / 2;
        memmove(t->lo, t->lo + half, (t->n - half) * sizeof *t->lo);
        memmove(t->hi, t->hi + half, (t->n - half) * sizeof *t->hi);
        t->n -= half;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap;
        t->lo = report_grow(t->lo, &cap, t->n + 1, sizeof *t->lo);
        t->hi = report_grow(t->hi, &t->cap, t->n + 1, sizeof *t->hi);
    }
    t->lo[t->n] = s;
    t->hi[t->n++] = e;
}

void timeline_nest_free(struct timeline_nest *t)
{
    if (!t)
        return;
    free(t->lo);
    free(t->hi);
    free(t);
}
