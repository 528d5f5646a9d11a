/* model_torch: the PyTorch operators of one process (TORCH_OP records), as torch.profiler's
 * key_averages() counts them. Kept until the file ends: an op is written when it ends, so
 * its children come first, and the GPU_API records that tie kernels to ops may come later.
 * At the end, per thread, ops nest by time: an op's self CPU time is its span minus its
 * direct children's. A kernel belongs to the ops whose span holds the start of its
 * launching call (GPU_API, by correlation) on the same thread: CUDA total counts it in
 * every such op, self CUDA in the innermost one. Ops merge into rows by (name, shapes);
 * record_function scopes (USER_SCOPE) become actions too. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "sort_keys.h"
#include "trace_read.h"

const char *model_torch_scope_name(unsigned scope)
{
    static const char *const names[] = {
        "FUNCTION",          "BACKWARD_FUNCTION",   "TORCHSCRIPT_FUNCTION", "KERNEL_FUNCTION_DTYPE",
        "CUSTOM_CLASS",      "BUILD_FEATURE",       "LITE_INTERPRETER",     "USER_SCOPE",
        "STATIC_RUNTIME_OP", "STATIC_RUNTIME_MODEL"};
    return scope < sizeof names / sizeof *names ? names[scope] : "?";
}

static void model_torch_on_record(struct model_process *p, const struct trace_record *rec,
                                  uint32_t tid)
{
    const struct prof_rec_torch_op *r = rec->data;
    struct model_torch *t = &p->torch;
    t->ops = report_grow_raw(t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
    t->ops[t->nops++] = (struct model_torch_op){.start = r->start,
                                                .end = r->end >= r->start ? r->end : r->start,
                                                .sequence_nr = r->sequence_nr,
                                                .tid = tid,
                                                .name_sid = r->name_sid,
                                                .shapes_sid = r->shapes_sid,
                                                .scope = r->scope,
                                                .depth = r->depth};
    t->records++;
    model_cpu_event(p, r->start, r->end);
}

static void model_torch_on_mem(struct model_process *p, const struct trace_record *rec,
                               uint32_t tid)
{
    const struct prof_rec_torch_mem *r = rec->data;
    struct model_torch *t = &p->torch;
    t->mem_records++;
    if (!r->bytes)
        return; /* a free of a block allocated before recording: not counted, as torch */
    t->mems = report_grow(t->mems, &t->cap_mems, t->nmems + 1, sizeof *t->mems);
    t->mems[t->nmems++] = (struct model_torch_mem){.ticks = r->ticks,
                                                   .tid = tid,
                                                   .py_node = r->py_node,
                                                   .bytes = r->bytes,
                                                   .ptr = r->ptr,
                                                   .dev_type = MODEL_TORCH_DEVICE_CPU,
                                                   .dev_index = -1,
                                                   .seq = t->nmems};
}

static void model_torch_on_dev_mem(struct model_process *p, const struct trace_record *rec,
                                   uint32_t tid)
{
    const struct prof_rec_torch_dev_mem *r = rec->data;
    struct model_torch *t = &p->torch;
    t->dev_mem_records++;
    /* CPU reports come only under torch.profiler's profile_memory and repeat TORCH_MEM. */
    if (!r->bytes || r->device_type == MODEL_TORCH_DEVICE_CPU)
        return;
    t->mems = report_grow(t->mems, &t->cap_mems, t->nmems + 1, sizeof *t->mems);
    t->mems[t->nmems++] = (struct model_torch_mem){.ticks = r->ticks,
                                                   .tid = tid,
                                                   .py_node = r->py_node,
                                                   .bytes = r->bytes,
                                                   .ptr = r->ptr,
                                                   .reserved = r->total_reserved,
                                                   .dev_type = r->device_type,
                                                   .dev_index = r->device_index,
                                                   .seq = t->nmems};
}

static void model_torch_on_totals(struct model_process *p, const struct trace_record *rec,
                                  uint32_t tid)
{
    (void)tid; /* process-wide */
    const struct prof_rec_torch_mem_totals *r = rec->data;
    struct model_torch *t = &p->torch;
    size_t i = 0;
    while (i < t->ntotals &&
           (t->totals[i].dev_type != r->device_type || t->totals[i].dev_index != r->device_index))
        i++;
    if (i == t->ntotals) {
        t->totals = report_grow(t->totals, &t->cap_totals, t->ntotals + 1, sizeof *t->totals);
        t->ntotals++;
    }
    /* cumulative: the latest replaces what came before */
    t->totals[i] = (struct model_torch_totals){.dev_type = r->device_type,
                                               .dev_index = r->device_index,
                                               .alloc_count = r->alloc_count,
                                               .alloc_bytes = r->alloc_bytes,
                                               .free_count = r->free_count,
                                               .free_bytes = r->free_bytes,
                                               .live_bytes = r->live_bytes,
                                               .peak_bytes = r->peak_bytes,
                                               .peak_ticks = r->peak_ticks,
                                               .reserved_peak = r->reserved_peak};
}

static void model_torch_on_tree(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    struct model_torch *t = &p->torch;
    if (rec->type == PROF_REC_TORCH_NODE) {
        const struct prof_rec_torch_node *r = rec->data;
        uint64_t *slot = u64map_slot(&t->node_index, r->node_id);
        if (!slot)
            report_oom();
        if (!*slot) {
            t->nodes = report_grow(t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof *t->nodes);
            memset(&t->nodes[t->nnodes], 0, sizeof *t->nodes);
            *slot = ++t->nnodes;
        }
        struct model_torch_node *n = &t->nodes[*slot - 1];
        n->id = r->node_id;
        n->parent = r->parent_id;
        n->tid = tid;
        n->name_sid = r->name_sid;
        n->shapes_sid = r->shapes_sid;
        n->scope = r->scope;
        return;
    }
    const struct prof_rec_torch_stats *r = rec->data;
    uint64_t *slot = u64map_find(&t->node_index, r->node_id);
    if (!slot)
        return; /* a node this file never defined: nothing to name it by */
    struct model_torch_node *n = &t->nodes[*slot - 1];
    /* cumulative: the latest replaces what came before */
    n->calls = r->calls;
    n->raw_calls = r->raw_calls;
    n->total_ticks = r->total_ticks;
    n->self_ticks = r->self_ticks;
    n->cpu_mem = r->cpu_mem;
    n->self_cpu_mem = r->self_cpu_mem;
    n->dev_mem = r->dev_mem;
    n->self_dev_mem = r->self_dev_mem;
}

const char *model_torch_device_name(int dev_type, int dev_index, char *buf, size_t len)
{
    static const char *const names[] = {
        [0] = "CPU",  [1] = "CUDA", [6] = "HIP",   [9] = "XLA",         [12] = "XPU",
        [13] = "MPS", [15] = "HPU", [19] = "MTIA", [20] = "PrivateUse1"};
    const char *name =
        dev_type >= 0 && (size_t)dev_type < sizeof names / sizeof *names ? names[dev_type] : NULL;
    if (dev_type == MODEL_TORCH_DEVICE_CPU)
        snprintf(buf, len, "CPU");
    else if (name)
        snprintf(buf, len, "%s:%d", name, dev_index);
    else
        snprintf(buf, len, "device type %d:%d", dev_type, dev_index);
    return buf;
}

static int model_torch_holds(const struct model_torch_op *outer, const struct model_torch_op *in)
{
    return outer->start <= in->start && in->end <= outer->end;
}

/* Self time: each op's span minus its direct children's, one sweep per thread with the
 * open ops on a stack. */
static void model_torch_nest(struct model_torch *t, const size_t *order, size_t *stack)
{
    size_t top = 0;
    for (size_t i = 0; i < t->nops; i++) {
        struct model_torch_op *op = &t->ops[order[i]];
        if (i && op->tid != t->ops[order[i - 1]].tid)
            top = 0;
        while (top && !model_torch_holds(&t->ops[stack[top - 1]], op)) {
            if (t->ops[stack[top - 1]].end > op->start)
                t->unnested++; /* overlaps without holding it: not its parent */
            top--;
        }
        op->self_ticks += op->end - op->start;
        if (top) {
            struct model_torch_op *parent = &t->ops[stack[top - 1]];
            uint64_t d = op->end - op->start;
            parent->self_ticks = parent->self_ticks > d ? parent->self_ticks - d : 0;
        }
        stack[top++] = order[i];
    }
}

/* A kernel's launching call on its thread, with the kernel's GPU time. */
struct model_torch_launch {
    uint64_t start; /* ticks */
    uint32_t tid;
    uint64_t ns;
};

/* CUDA time: one sweep over the ops and the launches, both sorted by thread and start;
 * the ops open at a launch are on the stack, innermost on top. */
static void model_torch_cuda(struct model_process *p, const size_t *order, size_t *stack)
{
    struct model_torch *t = &p->torch;
    const struct model_gpu *g = &p->gpu;
    struct model_torch_launch *found = malloc((g->nops + 1) * sizeof *found);
    struct sort_key *keys = malloc((g->nops + 1) * sizeof *keys);
    if (!found || !keys)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        const struct model_gpu_call *c;
        if (!(c = model_gpu_op_call(p, i))) /* kernels alone */
            continue;
        keys[n] = (struct sort_key){{c->tid, c->start, 0, 0}, n};
        found[n++] = (struct model_torch_launch){c->start, c->tid, op->end_ns - op->start_ns};
    }
    struct model_torch_launch *l = malloc((n + 1) * sizeof *l);
    if (!l)
        report_oom();
    sort_records(l, found, n, sizeof *found, keys); /* by thread and start */
    free(found);
    free(keys);
    size_t top = 0, next = 0;
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || l[k].tid != l[k - 1].tid) {
            top = 0;
            while (next < t->nops && t->ops[order[next]].tid < l[k].tid)
                next++;
        }
        while (next < t->nops && t->ops[order[next]].tid == l[k].tid &&
               t->ops[order[next]].start <= l[k].start) {
            const struct model_torch_op *op = &t->ops[order[next]];
            while (top && !model_torch_holds(&t->ops[stack[top - 1]], op))
                top--;
            stack[top++] = order[next++];
        }
        while (top && t->ops[stack[top - 1]].end < l[k].start)
            top--;
        if (!top)
            continue;
        struct model_torch_op *inner = &t->ops[stack[top - 1]];
        inner->self_cuda_ns += l[k].ns;
        inner->self_kernels++;
        for (size_t s = 0; s < top; s++) {
            t->ops[stack[s]].cuda_ns += l[k].ns;
            t->ops[stack[s]].kernels++;
        }
    }
    free(l);
}

/* Sorts mems by thread (by_thread) and time, ties in the order read (seq: each its own),
 * by keys: qsort's comparator calls were 3 % of --summarize's samples on a real rank. */
static void model_torch_mems_sort(struct model_torch *t, int by_thread)
{
    struct sort_key *keys = malloc((t->nmems + 1) * sizeof *keys);
    if (!keys)
        report_oom();
    for (size_t i = 0; i < t->nmems; i++) {
        const struct model_torch_mem *m = &t->mems[i];
        keys[i] = (struct sort_key){{by_thread ? m->tid : 0, m->ticks, m->seq, 0}, i};
    }
    sort_records(t->mems, t->mems, t->nmems, sizeof *t->mems, keys);
    free(keys);
}

/* Memory, as key_averages counts it: cpu_memory_usage sums the allocations minus the
 * frees inside the op's span (children included), self_cpu_memory_usage those whose
 * innermost op on the thread is this one; the same for device memory. Same sweep as the
 * kernels. */
static void model_torch_memory(struct model_torch *t, const size_t *order, size_t *stack)
{
    if (!t->nmems)
        return;
    model_torch_mems_sort(t, 1);
    size_t top = 0, next = 0;
    for (size_t k = 0; k < t->nmems; k++) {
        const struct model_torch_mem *m = &t->mems[k];
        if (k == 0 || m->tid != t->mems[k - 1].tid) {
            top = 0;
            while (next < t->nops && t->ops[order[next]].tid < m->tid)
                next++;
        }
        while (next < t->nops && t->ops[order[next]].tid == m->tid &&
               t->ops[order[next]].start <= m->ticks) {
            const struct model_torch_op *op = &t->ops[order[next]];
            while (top && !model_torch_holds(&t->ops[stack[top - 1]], op))
                top--;
            stack[top++] = order[next++];
        }
        while (top && t->ops[stack[top - 1]].end < m->ticks)
            top--;
        if (!top)
            continue;
        t->mems[k].op = stack[top - 1] + 1;
        if (m->dev_type == MODEL_TORCH_DEVICE_CPU) {
            struct model_torch_op *in = &t->ops[stack[top - 1]];
            in->self_cpu_mem = model_i64_add(in->self_cpu_mem, m->bytes);
            for (size_t s = 0; s < top; s++)
                t->ops[stack[s]].cpu_mem = model_i64_add(t->ops[stack[s]].cpu_mem, m->bytes);
        } else {
            struct model_torch_op *in = &t->ops[stack[top - 1]];
            in->self_dev_mem = model_i64_add(in->self_dev_mem, m->bytes);
            for (size_t s = 0; s < top; s++)
                t->ops[stack[s]].dev_mem = model_i64_add(t->ops[stack[s]].dev_mem, m->bytes);
        }
    }
}

static const char *model_torch_string(const struct model_process *p, uint32_t sid)
{
    return sid ? u64map_get_ptr(&p->strings, sid) : NULL;
}

static const struct model_torch_totals *model_torch_totals_of(const struct model_torch *t,
                                                              int8_t dev_type, int8_t dev_index)
{
    for (size_t i = 0; i < t->ntotals; i++)
        if (t->totals[i].dev_type == dev_type && t->totals[i].dev_index == dev_index)
            return &t->totals[i];
    return NULL;
}

static void model_torch_peak_at(struct model_process *p, struct model_torch_memory *m,
                                const struct model_torch_mem *e)
{
    const struct model_torch *t = &p->torch;
    m->peak_py_node = e->py_node;
    m->peak_op_sid = e->op ? t->ops[e->op - 1].name_sid : 0;
    m->peak_op = e->op ? model_torch_string(p, m->peak_op_sid) : NULL;
    if (e->op && !m->peak_op)
        m->peak_op = "(unknown op)";
}

/* The process's own counters replace what the records kept: they counted every record,
 * dropped ones too. The peak's op and Python function are those of the allocation record
 * at the peak's ticks (at, NULL: the ring dropped it). */
static void model_torch_take_totals(struct model_process *p, struct model_torch_memory *m,
                                    const struct model_torch_totals *x,
                                    const struct model_torch_mem *at)
{
    uint64_t kept = m->alloc_count + m->free_count;
    uint64_t start = model_start_monotonic_ns(p);
    uint64_t ns = model_ticks_to_monotonic_ns(p, x->peak_ticks);
    m->any = 1;
    m->exact = 1;
    m->alloc_count = x->alloc_count;
    m->free_count = x->free_count;
    m->allocated = x->alloc_bytes;
    m->freed = x->free_bytes;
    m->live_at_end = x->live_bytes;
    m->records_lost =
        x->alloc_count + x->free_count > kept ? x->alloc_count + x->free_count - kept : 0;
    m->reserved_peak = x->reserved_peak;
    m->peak_bytes = x->alloc_count ? x->peak_bytes : 0;
    m->peak_ns = x->alloc_count && ns > start ? ns - start : 0;
    m->peak_op = NULL;
    m->peak_op_sid = m->peak_py_node = 0;
    if (at)
        model_torch_peak_at(p, m, at);
    m->peak_unattributed = x->alloc_count && !at;
}

/* Live bytes of one device over time, the peak and where it was reached, from the
 * memory events of that device (mems in time order), then the process's counters when
 * the trace has them. The ops must still be there (mems[].op points into them). */
static void model_torch_timeline_one(struct model_process *p, struct model_torch_memory *m,
                                     int8_t dev_type, int8_t dev_index)
{
    struct model_torch *t = &p->torch;
    memset(m, 0, sizeof *m);
    m->dev_type = dev_type;
    m->dev_index = dev_index;
    uint64_t start = model_start_monotonic_ns(p);
    int64_t live = 0;
    int peaked = 0;
    const struct model_torch_totals *x = model_torch_totals_of(t, dev_type, dev_index);
    const struct model_torch_mem *exact_peak = NULL;
    for (size_t k = 0; k < t->nmems; k++) {
        const struct model_torch_mem *e = &t->mems[k];
        if (e->dev_type != dev_type || e->dev_index != dev_index)
            continue;
        if (x && !exact_peak && e->bytes > 0 && e->ticks == x->peak_ticks)
            exact_peak = e;
        if (!m->timeline) {
            m->timeline = malloc(t->nmems * sizeof *m->timeline);
            if (!m->timeline)
                report_oom();
            m->any = 1;
        }
        uint64_t at = model_ticks_to_monotonic_ns(p, e->ticks);
        uint64_t ns = at > start ? at - start : 0;
        live = model_i64_add(live, e->bytes);
        if (e->bytes > 0) {
            m->allocated += (uint64_t)e->bytes;
            m->alloc_count++;
        } else {
            m->freed += 0 - (uint64_t)e->bytes; /* -INT64_MIN is undefined */
            m->free_count++;
        }
        if (e->reserved > m->reserved_peak)
            m->reserved_peak = e->reserved;
        m->timeline[m->ntimeline++] = (struct model_torch_mem_point){.ns = ns, .live = live};
        if (e->bytes > 0 && (!peaked || live > m->peak_bytes)) {
            peaked = 1;
            m->peak_bytes = live;
            m->peak_ns = ns;
            model_torch_peak_at(p, m, e);
        }
    }
    m->live_at_end = live;
    if (x && (x->alloc_count || x->free_count))
        model_torch_take_totals(p, m, x, exact_peak);
}

/* The CPU timeline into torch.memory, one per device into torch.devices (by device). */
static void model_torch_timeline(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    if (!t->nmems && !t->ntotals)
        return;
    if (t->nmems) /* in time over the threads */
        model_torch_mems_sort(t, 0);
    model_torch_timeline_one(p, &t->memory, MODEL_TORCH_DEVICE_CPU, -1);
    size_t cap = 0;
    /* the devices in the order of their first record, then those whose records were all
     * lost (their counters only) */
    for (size_t k = 0; k < t->nmems + t->ntotals; k++) {
        int8_t type = k < t->nmems ? t->mems[k].dev_type : t->totals[k - t->nmems].dev_type;
        int8_t index = k < t->nmems ? t->mems[k].dev_index : t->totals[k - t->nmems].dev_index;
        if (type == MODEL_TORCH_DEVICE_CPU)
            continue;
        size_t d = 0;
        while (d < t->ndevices &&
               (t->devices[d].dev_type != type || t->devices[d].dev_index != index))
            d++;
        if (d < t->ndevices)
            continue;
        t->devices = report_grow(t->devices, &cap, t->ndevices + 1, sizeof *t->devices);
        model_torch_timeline_one(p, &t->devices[t->ndevices++], type, index);
    }
}

/* Says which memory figures stand for records the ring dropped. */
static void model_torch_memory_warning(struct model_process *p)
{
    const struct model_torch *t = &p->torch;
    for (size_t d = 0; d <= t->ndevices; d++) {
        const struct model_torch_memory *m = d ? &t->devices[d - 1] : &t->memory;
        char device[48];
        if (!m->records_lost)
            continue;
        model_add_warning(p,
                          "%s (pid %lld): %" PRIu64 " of %" PRIu64
                          " %s tensor memory records lost (ring full; raise PROF_RING_KB for "
                          "more); its peak, allocated, freed and live at end are the process's "
                          "own exact counts, the peak's op and Python function %s, the memory "
                          "timeline lacks them",
                          p->file, (long long)p->pid, m->records_lost,
                          m->alloc_count + m->free_count,
                          model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device),
                          m->peak_unattributed ? "are unknown (its record is one of them)"
                                               : "are those of its record");
    }
}

struct model_torch_row *model_torch_row_of(struct model_process *p, struct u64map *index,
                                           size_t *cap, uint32_t name_sid, uint32_t shapes_sid,
                                           uint8_t scope)
{
    struct model_torch *t = &p->torch;
    uint64_t *slot = u64map_slot(index, (uint64_t)name_sid << 32 | shapes_sid);
    if (!slot)
        report_oom();
    if (!*slot) {
        t->rows = report_grow(t->rows, cap, t->nrows + 1, sizeof *t->rows);
        t->rows[t->nrows] = (struct model_torch_row){.name_sid = name_sid,
                                                     .shapes_sid = shapes_sid,
                                                     .name = model_torch_string(p, name_sid),
                                                     .shapes = model_torch_string(p, shapes_sid),
                                                     .scope = scope};
        *slot = ++t->nrows;
    }
    return &t->rows[*slot - 1];
}

/* Rows from the op trees: counts, times and memory exact (every op, whatever the timeline
 * kept); the CUDA columns from the spans the timeline kept. */
static void model_torch_rows_from_tree(struct model_process *p, const struct model_torch_self *self)
{
    struct model_torch *t = &p->torch;
    struct u64map index; /* name_sid << 32 | shapes_sid -> index + 1 */
    size_t cap = 0;
    u64map_init(&index);
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct model_torch_node *n = &t->nodes[i];
        t->spans_expected += n->raw_calls;
        if (!n->calls)
            continue; /* every call folded into a same-name parent: not a row of torch's */
        struct model_torch_row *r =
            model_torch_row_of(p, &index, &cap, n->name_sid, n->shapes_sid, n->scope);
        r->calls += n->calls;
        r->self_cpu_ticks += n->self_ticks;
        r->cpu_total_ticks += n->total_ticks;
        r->self_cpu_mem += n->self_cpu_mem;
        r->cpu_mem += n->cpu_mem;
        r->self_dev_mem += n->self_dev_mem;
        r->dev_mem += n->dev_mem;
    }
    /* an op folded into its parent is not a call of torch's; its kernels are the parent's */
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        uint64_t *slot = u64map_find(&index, (uint64_t)op->name_sid << 32 | op->shapes_sid);
        if (!slot || self[i].folded)
            continue;
        struct model_torch_row *r = &t->rows[*slot - 1];
        r->self_cuda_ns += self[i].cuda_ns;
        r->cuda_total_ns += op->cuda_ns;
        r->kernels += op->kernels;
    }
    u64map_free(&index);
    t->spans_dropped = t->spans_expected > t->records ? t->spans_expected - t->records : 0;
    for (size_t i = 0; i < t->nrows; i++) {
        struct model_torch_row *r = &t->rows[i];
        r->self_cpu_ns = model_ticks_to_ns(p, r->self_cpu_ticks);
        r->cpu_total_ns = model_ticks_to_ns(p, r->cpu_total_ticks);
    }
}

/* Rows from the op trees; from the spans alone in traces written before them. */
static void model_torch_rows(struct model_process *p, const struct model_torch_self *self)
{
    if (p->torch.nnodes)
        model_torch_rows_from_tree(p, self);
    else
        model_torch_rows_of_spans(p, self, 0, UINT64_MAX);
}

static struct model_action *model_torch_scope(struct model_process *p, uint32_t name_sid,
                                              size_t *cap)
{
    struct model_torch *t = &p->torch;
    const char *name = model_torch_string(p, name_sid);
    char unknown[48];
    if (!name) {
        snprintf(unknown, sizeof unknown, "(scope name #%u)", name_sid);
        name = unknown;
    }
    size_t k = 0;
    while (k < t->nscopes && strcmp(t->scopes[k].name, name)) /* a handful of scopes */
        k++;
    if (k == t->nscopes) {
        t->scopes = report_grow(t->scopes, cap, k + 1, sizeof *t->scopes);
        t->scopes[t->nscopes++] = (struct model_action){.name = report_strdup(name),
                                                        .source = MODEL_ACTION_RECORD_FUNCTION};
    }
    return &t->scopes[k];
}

/* record_function scopes by name: calls and time (from the op trees when the trace has
 * them, else from the spans), the kernels launched inside (spans). */
static void model_torch_scopes(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    size_t cap = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct model_torch_node *n = &t->nodes[i];
        if (n->scope != MODEL_TORCH_SCOPE_USER || !n->raw_calls)
            continue;
        struct model_action *a = model_torch_scope(p, n->name_sid, &cap);
        a->calls += n->calls;
        a->total_ns += model_ticks_to_ns(p, n->total_ticks);
    }
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        if (op->scope != MODEL_TORCH_SCOPE_USER)
            continue;
        struct model_action *a = model_torch_scope(p, op->name_sid, &cap);
        if (!t->nnodes) {
            a->calls++;
            a->total_ns += model_ticks_to_ns(p, op->end - op->start);
        }
        a->gpu_ns += op->cuda_ns;
        a->kernels += op->kernels;
    }
}

static void model_torch_finish(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    struct model_torch_self *self = NULL; /* per op: folded or not, its self after folds */
    if (t->nops) {
        size_t *order = malloc(t->nops * sizeof *order);
        size_t *stack = malloc(t->nops * sizeof *stack);
        struct sort_key *keys = malloc(t->nops * sizeof *keys);
        if (!order || !stack || !keys)
            report_oom();
        /* By thread, start, the longer first (a parent before the child that starts with
         * it), then the shallower first. */
        for (size_t i = 0; i < t->nops; i++) {
            const struct model_torch_op *op = &t->ops[i];
            keys[i] = (struct sort_key){{op->tid, op->start, ~op->end, op->depth}, i};
        }
        sort_keys(keys, t->nops, order);
        free(keys);
        model_torch_nest(t, order, stack);
        model_torch_cuda(p, order, stack);
        model_torch_memory(t, order, stack);
        self = model_torch_fold(t, order, stack);
        free(order);
        free(stack);
        if (t->unnested)
            model_add_warning(p,
                              "%s (pid %lld): %" PRIu64 " PyTorch op(s) overlap an op of their "
                              "thread without nesting in it; counted as not nested",
                              p->file, (long long)p->pid, t->unnested);
    }
    if (t->nops || t->nnodes) {
        model_torch_rows(p, self);
        model_torch_scopes(p);
    }
    if (t->spans_dropped)
        model_add_warning(p,
                          "%s (pid %lld): the timeline kept %" PRIu64 " of %" PRIu64
                          " PyTorch op spans (ring full; raise PROF_RING_KB for more); the "
                          "operator table counts every op",
                          p->file, (long long)p->pid, t->records, t->spans_expected);
    model_torch_timeline(p);
    model_torch_memory_warning(p);
    model_torch_memory_parts(p);      /* before the ops go: the records name theirs */
    model_torch_window_rows(p, self); /* the memory records lost are known now */
    free(self);
    /* The rows hold what the tables need: the raw ops go. */
    free(t->mems);
    t->mems = NULL;
    t->nmems = t->cap_mems = 0;
    free(t->ops);
    t->ops = NULL;
    t->nops = t->cap_ops = 0;
}

static void model_torch_free(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    free(t->nodes);
    free(t->totals);
    u64map_free(&t->node_index);
    free(t->mems);
    free(t->ops);
    free(t->rows);
    free(t->whole_rows);
    free(t->memory.timeline);
    for (size_t i = 0; i < t->ndevices; i++)
        free(t->devices[i].timeline);
    free(t->devices);
    for (size_t i = 0; i < t->nscopes; i++)
        free(t->scopes[i].name);
    free(t->scopes);
    for (size_t i = 0; i < t->nbuiltin; i++)
        free(t->builtin[i].name);
    free(t->builtin);
    memset(t, 0, sizeof *t);
}

const struct model_py_func *model_torch_py_func_at(const struct model_process *p, uint32_t node)
{
    /* The innermost Python-code function on the path: a builtin (torch's C methods) has
     * no file or line of the user's; the innermost node itself when none is. */
    const struct model_py_node *n = node ? model_python_node(p, node) : NULL;
    const struct model_py_func *first = NULL;
    for (int hops = 0; n && hops < 10000; hops++) {
        const struct model_py_func *f = model_python_func(p, n->func);
        if (f && !first)
            first = f;
        if (f && f->kind == PROF_PY_FUNC_PYTHON)
            return f;
        n = n->parent ? model_python_node(p, n->parent) : NULL;
    }
    return first;
}

/* Not "<frozen ...>", nor under a .../lib/pythonX.Y/ (or lib64), site-packages or
 * dist-packages folder. */
int model_torch_own_file(const char *file)
{
    if (!file || file[0] == '<' || strstr(file, "/site-packages/") ||
        strstr(file, "/dist-packages/"))
        return 0;
    for (const char *at = file; (at = strstr(at, "/python")); at++) {
        size_t lib = at >= file + 4 && !strncmp(at - 4, "/lib", 4)     ? 4
                     : at >= file + 6 && !strncmp(at - 6, "/lib64", 6) ? 6
                                                                       : 0;
        if (lib && at[7] >= '0' && at[7] <= '9')
            return 0; /* ".../lib/python3.11/..." */
    }
    return 1;
}

const struct model_py_func *model_torch_py_own_func_at(const struct model_process *p, uint32_t node)
{
    const struct model_py_node *n = node ? model_python_node(p, node) : NULL;
    for (int hops = 0; n && hops < 10000; hops++) {
        const struct model_py_func *f = model_python_func(p, n->func);
        if (f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file))
            return f;
        n = n->parent ? model_python_node(p, n->parent) : NULL;
    }
    return NULL;
}

const struct model_py_func *model_torch_peak_func(const struct model_process *p,
                                                  const struct model_torch_memory *m)
{
    return model_torch_py_func_at(p, m->peak_py_node);
}

static const struct model_record_handler model_torch_handlers[] = {
    {PROF_REC_TORCH_OP, model_torch_on_record},
    {PROF_REC_TORCH_MEM, model_torch_on_mem},
    {PROF_REC_TORCH_DEV_MEM, model_torch_on_dev_mem},
    {PROF_REC_TORCH_NODE, model_torch_on_tree},
    {PROF_REC_TORCH_STATS, model_torch_on_tree},
    {PROF_REC_TORCH_MEM_TOTALS, model_torch_on_totals},
};

const struct model_part model_torch_part = {
    .name = "torch",
    MODEL_PART_HANDLERS(model_torch_handlers),
    .finish = model_torch_finish,
    .free = model_torch_free,
};
