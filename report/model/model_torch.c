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
#include "trace_read.h"

const char *model_torch_scope_name(unsigned scope)
{
    static const char *const names[] = {
        "FUNCTION",          "BACKWARD_FUNCTION",   "TORCHSCRIPT_FUNCTION", "KERNEL_FUNCTION_DTYPE",
        "CUSTOM_CLASS",      "BUILD_FEATURE",       "LITE_INTERPRETER",     "USER_SCOPE",
        "STATIC_RUNTIME_OP", "STATIC_RUNTIME_MODEL"};
    return scope < sizeof names / sizeof *names ? names[scope] : "?";
}

void model_torch_on_record(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    const struct prof_rec_torch_op *r = rec->data;
    struct model_torch *t = &p->torch;
    t->ops = report_grow(t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
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

void model_torch_on_mem(struct model_process *p, const struct trace_record *rec, uint32_t tid)
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
                                                   .dev_type = MODEL_TORCH_DEVICE_CPU,
                                                   .dev_index = -1,
                                                   .seq = t->nmems};
}

void model_torch_on_dev_mem(struct model_process *p, const struct trace_record *rec, uint32_t tid)
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
                                                   .reserved = r->total_reserved,
                                                   .dev_type = r->device_type,
                                                   .dev_index = r->device_index,
                                                   .seq = t->nmems};
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

/* qsort has no context argument in C11; the reporter is single-threaded. */
static const struct model_torch_op *model_torch_sorting;

/* By thread, start, the longer first (a parent before the child that starts with it),
 * then the shallower first. */
static int model_torch_op_cmp(const void *a, const void *b)
{
    const struct model_torch_op *x = &model_torch_sorting[*(const size_t *)a];
    const struct model_torch_op *y = &model_torch_sorting[*(const size_t *)b];
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
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

static int model_torch_launch_cmp(const void *a, const void *b)
{
    const struct model_torch_launch *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* CUDA time: one sweep over the ops and the launches, both sorted by thread and start;
 * the ops open at a launch are on the stack, innermost on top. */
static void model_torch_cuda(struct model_process *p, const size_t *order, size_t *stack)
{
    struct model_torch *t = &p->torch;
    const struct model_gpu *g = &p->gpu;
    struct model_torch_launch *l = malloc((g->nops + 1) * sizeof *l);
    if (!l)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        const struct model_gpu_call *c;
        if (op->kind != MODEL_GPU_KERNEL || !(c = model_gpu_call_of(p, op->correlation)))
            continue;
        l[n++] = (struct model_torch_launch){c->start, c->tid, op->end_ns - op->start_ns};
    }
    qsort(l, n, sizeof *l, model_torch_launch_cmp);
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

static int model_torch_mem_cmp(const void *a, const void *b)
{
    const struct model_torch_mem *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* In time over the threads; ties in the order read. */
static int model_torch_mem_time_cmp(const void *a, const void *b)
{
    const struct model_torch_mem *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Memory, as key_averages counts it: cpu_memory_usage sums the allocations minus the
 * frees inside the op's span (children included), self_cpu_memory_usage those whose
 * innermost op on the thread is this one; the same for device memory. Same sweep as the
 * kernels. */
static void model_torch_memory(struct model_torch *t, const size_t *order, size_t *stack)
{
    if (!t->nmems)
        return; /* qsort's array may not be NULL, even empty */
    qsort(t->mems, t->nmems, sizeof *t->mems, model_torch_mem_cmp);
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

/* Live bytes of one device over time, the peak and where it was reached, from the
 * memory events of that device (mems in time order). The ops must still be there
 * (mems[].op points into them). */
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
    for (size_t k = 0; k < t->nmems; k++) {
        const struct model_torch_mem *e = &t->mems[k];
        if (e->dev_type != dev_type || e->dev_index != dev_index)
            continue;
        if (!m->timeline) {
            m->timeline = malloc(t->nmems * sizeof *m->timeline);
            if (!m->timeline)
                report_oom();
            m->any = 1;
        }
        uint64_t at = model_ticks_to_monotonic_ns(p, e->ticks);
        uint64_t ns = at > start ? at - start : 0;
        live = model_i64_add(live, e->bytes);
        if (e->bytes > 0)
            m->allocated += (uint64_t)e->bytes;
        else
            m->freed += 0 - (uint64_t)e->bytes; /* -INT64_MIN is undefined */
        if (e->reserved > m->reserved_peak)
            m->reserved_peak = e->reserved;
        m->timeline[m->ntimeline++] = (struct model_torch_mem_point){.ns = ns, .live = live};
        if (e->bytes > 0 && (!peaked || live > m->peak_bytes)) {
            peaked = 1;
            m->peak_bytes = live;
            m->peak_ns = ns;
            m->peak_py_node = e->py_node;
            m->peak_op_sid = e->op ? t->ops[e->op - 1].name_sid : 0;
            m->peak_op = e->op ? model_torch_string(p, m->peak_op_sid) : NULL;
            if (e->op && !m->peak_op)
                m->peak_op = "(unknown op)";
        }
    }
    m->live_at_end = live;
}

/* The CPU timeline into torch.memory, one per device into torch.devices (by device). */
static void model_torch_timeline(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    if (!t->nmems)
        return;
    qsort(t->mems, t->nmems, sizeof *t->mems, model_torch_mem_time_cmp);
    model_torch_timeline_one(p, &t->memory, MODEL_TORCH_DEVICE_CPU, -1);
    size_t cap = 0;
    for (size_t k = 0; k < t->nmems; k++) {
        const struct model_torch_mem *e = &t->mems[k];
        if (e->dev_type == MODEL_TORCH_DEVICE_CPU)
            continue;
        size_t d = 0;
        while (d < t->ndevices &&
               (t->devices[d].dev_type != e->dev_type || t->devices[d].dev_index != e->dev_index))
            d++;
        if (d < t->ndevices)
            continue;
        t->devices = report_grow(t->devices, &cap, t->ndevices + 1, sizeof *t->devices);
        model_torch_timeline_one(p, &t->devices[t->ndevices++], e->dev_type, e->dev_index);
    }
}

static void model_torch_rows(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    struct u64map index; /* name_sid << 32 | shapes_sid -> index + 1 */
    size_t cap = 0;
    u64map_init(&index);
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        uint64_t *slot = u64map_slot(&index, (uint64_t)op->name_sid << 32 | op->shapes_sid);
        if (!slot)
            report_oom();
        if (!*slot) {
            t->rows = report_grow(t->rows, &cap, t->nrows + 1, sizeof *t->rows);
            t->rows[t->nrows] =
                (struct model_torch_row){.name_sid = op->name_sid,
                                         .shapes_sid = op->shapes_sid,
                                         .name = model_torch_string(p, op->name_sid),
                                         .shapes = model_torch_string(p, op->shapes_sid),
                                         .scope = op->scope};
            *slot = ++t->nrows;
        }
        struct model_torch_row *r = &t->rows[*slot - 1];
        r->calls++;
        r->self_cpu_ticks += op->self_ticks;
        r->cpu_total_ticks += op->end - op->start;
        r->self_cuda_ns += op->self_cuda_ns;
        r->cuda_total_ns += op->cuda_ns;
        r->kernels += op->kernels;
        r->self_cpu_mem = model_i64_add(r->self_cpu_mem, op->self_cpu_mem);
        r->cpu_mem = model_i64_add(r->cpu_mem, op->cpu_mem);
        r->self_dev_mem = model_i64_add(r->self_dev_mem, op->self_dev_mem);
        r->dev_mem = model_i64_add(r->dev_mem, op->dev_mem);
    }
    u64map_free(&index);
    for (size_t i = 0; i < t->nrows; i++) {
        struct model_torch_row *r = &t->rows[i];
        r->self_cpu_ns = model_ticks_to_ns(p, r->self_cpu_ticks);
        r->cpu_total_ns = model_ticks_to_ns(p, r->cpu_total_ticks);
    }
}

/* record_function scopes by name: calls, time, the kernels launched inside. */
static void model_torch_scopes(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    size_t cap = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        if (op->scope != MODEL_TORCH_SCOPE_USER)
            continue;
        const char *name = model_torch_string(p, op->name_sid);
        char unknown[48];
        if (!name) {
            snprintf(unknown, sizeof unknown, "(scope name #%u)", op->name_sid);
            name = unknown;
        }
        size_t k = 0;
        while (k < t->nscopes && strcmp(t->scopes[k].name, name)) /* a handful of scopes */
            k++;
        if (k == t->nscopes) {
            t->scopes = report_grow(t->scopes, &cap, k + 1, sizeof *t->scopes);
            t->scopes[t->nscopes++] = (struct model_action){.name = report_strdup(name),
                                                            .source = MODEL_ACTION_RECORD_FUNCTION};
        }
        struct model_action *a = &t->scopes[k];
        a->calls++;
        a->total_ns += model_ticks_to_ns(p, op->end - op->start);
        a->gpu_ns += op->cuda_ns;
        a->kernels += op->kernels;
    }
}

void model_torch_finish(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    if (t->nops) {
        size_t *order = malloc(t->nops * sizeof *order);
        size_t *stack = malloc(t->nops * sizeof *stack);
        if (!order || !stack)
            report_oom();
        for (size_t i = 0; i < t->nops; i++)
            order[i] = i;
        model_torch_sorting = t->ops;
        qsort(order, t->nops, sizeof *order, model_torch_op_cmp);
        model_torch_sorting = NULL;
        model_torch_nest(t, order, stack);
        model_torch_cuda(p, order, stack);
        model_torch_memory(t, order, stack);
        free(order);
        free(stack);
        model_torch_rows(p);
        model_torch_scopes(p);
        if (t->unnested)
            model_add_warning(p,
                              "%s (pid %lld): %" PRIu64 " PyTorch op(s) overlap an op of their "
                              "thread without nesting in it; counted as not nested",
                              p->file, (long long)p->pid, t->unnested);
    }
    model_torch_timeline(p);
    /* The rows hold what the tables need: the raw ops go. */
    free(t->mems);
    t->mems = NULL;
    t->nmems = t->cap_mems = 0;
    free(t->ops);
    t->ops = NULL;
    t->nops = t->cap_ops = 0;
}

void model_torch_free(struct model_torch *t)
{
    free(t->mems);
    free(t->ops);
    free(t->rows);
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

const struct model_py_func *model_torch_peak_func(const struct model_process *p,
                                                  const struct model_torch_memory *m)
{
    /* The innermost Python-code function on the path: a builtin (torch's C methods) has
     * no file or line of the user's; the innermost node itself when none is. */
    const struct model_py_node *n = m->peak_py_node ? model_python_node(p, m->peak_py_node) : NULL;
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
