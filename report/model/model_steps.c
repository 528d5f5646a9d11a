/* model_steps: a process's training steps and where each one's time went (model.h, "training
 * steps"). Made at the end of the file from what the other parts keep until then: the
 * PyTorch ops (before the torch part lets them go), the Python spans, the communication
 * calls, the GPU operations and calls, and the wrapped calls that synchronize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_steps_find.h"
#include "model_part.h"
#include "model_steps_load.h"
#include "sort_keys.h"
#include "trace_read.h"

/* What covers an instant of the step thread; model_steps_part_at picks the part. */
enum steps_label {
    STEPS_DATA,
    STEPS_SYNC,
    STEPS_OPS,
    STEPS_COMM,
    STEPS_OPT,
    STEPS_BWD,
    STEPS_FWD,
    STEPS_IMPORT,          /* importlib, for the startup line */
    STEPS_PROFILER,        /* the profiler's own work (its torch bridge's build): not imports */
    STEPS_CALLBACK,        /* Python called back from the autograd engine: a Function's backward */
    STEPS_OPS_IN_CALLBACK, /* an operator such a callback runs */
    STEPS_EVAL,            /* an evaluation inside the steps (steps.evals) */
    STEPS_LABEL_COUNT
};

struct steps_event {
    uint64_t t;
    int8_t delta; /* +1 start, -1 end */
    uint8_t label;
};

struct steps_events {
    struct steps_event *ev;
    size_t n, cap;
};

static const char *const model_step_part_names[MODEL_STEP_PART_COUNT] = {
    "data loading", "forward",       "backward",   "optimizer",
    "other ops",    "communication", "host syncs", "other CPU"};

const char *model_step_part_name(unsigned part)
{
    return part < MODEL_STEP_PART_COUNT ? model_step_part_names[part] : "?";
}

const char *model_step_source_name(unsigned source)
{
    switch (source) {
    case MODEL_STEPS_PROFILER_STEP:
        return "ProfilerStep#N scopes (prof.step())";
    case MODEL_STEPS_OPTIMIZER:
        return "optimizer steps (ends of the Optimizer.step# scopes)";
    case MODEL_STEPS_PYTHON:
        return "optimizer steps (ends of Optimizer.step calls)";
    case MODEL_STEPS_LIGHTNING:
        return "Lightning's batches (ends of run_training_batch)";
    case MODEL_STEPS_NAMED:
        return "each call of the --step name";
    case MODEL_STEPS_BACKWARD:
        return "backward passes (ends of Tensor.backward calls: no optimizer step seen)";
    default:
        return "none";
    }
}

const char *model_steps_source_text(const struct model_steps *st, char *buf, size_t size)
{
    if (st->per_step > 1)
        snprintf(buf, size, "%s, grouped %u to a step: %s", model_step_source_name(st->source),
                 st->per_step,
                 st->grouped_by == MODEL_STEPS_GROUP_BACKWARD
                     ? "the optimizers stepped after one backward (no forward nor backward "
                       "between them)"
                     : "one step per DataLoader batch");
    else
        snprintf(buf, size, "%s", model_step_source_name(st->source));
    size_t used = strlen(buf);
    if (st->backward_passes > 1 && used < size)
        snprintf(buf + used, size - used,
                 "; %u forward and backward passes to a step (gradient accumulation: the "
                 "per-step figures hold all %u)",
                 st->backward_passes, st->backward_passes);
    return buf;
}

static void steps_add(struct steps_events *e, uint64_t start, uint64_t end, uint8_t label)
{
    if (end <= start)
        return;
    e->ev = report_grow_raw(e->ev, &e->cap, e->n + 2, sizeof *e->ev);
    e->ev[e->n++] = (struct steps_event){start, +1, label};
    e->ev[e->n++] = (struct steps_event){end, -1, label};
}

/* Sorts the events by time, ends first (touching intervals do not overlap), keeping the
 * order of equal ones (as qsort's merge sort did). Times below 2^63 (all, in practice) and
 * the end bit pack into one key: sort_pairs, in place; else keys of two. */
static void steps_sort(struct steps_event *ev, size_t n)
{
    struct sort_pair *pairs = malloc((n + 1) * sizeof *pairs);
    if (!pairs)
        report_oom();
    size_t i = 0;
    for (; i < n && ev[i].t < (1ull << 63); i++)
        pairs[i] = (struct sort_pair){ev[i].t << 1 | (ev[i].delta > 0), ev[i].label};
    if (i == n) {
        sort_pairs(pairs, n);
        for (i = 0; i < n; i++)
            ev[i] = (struct steps_event){pairs[i].key >> 1, pairs[i].key & 1 ? +1 : -1,
                                         (uint8_t)pairs[i].value};
        free(pairs);
        return;
    }
    free(pairs);
    struct sort_key *keys = malloc((n + 1) * sizeof *keys);
    if (!keys)
        report_oom();
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct sort_key){{ev[i].t, (uint64_t)(ev[i].delta + 128), 0, 0}, i};
    sort_records(ev, ev, n, sizeof *ev, keys);
    free(keys);
}

static int steps_prefix(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

static const char *steps_op_name(const struct model_process *p, const struct model_torch_op *op)
{
    return u64map_get_ptr(&p->strings, op->name_sid);
}

/* ---- what covers the step thread ---- */

/* The label of a Python span's node: its built-in action, or importlib; -1: none. */
static int steps_py_label(const struct model_process *p, uint32_t node)
{
    static const int label[MODEL_STEP_PART_COUNT] = {[MODEL_STEP_DATA] = STEPS_DATA,
                                                     [MODEL_STEP_FORWARD] = STEPS_FWD,
                                                     [MODEL_STEP_BACKWARD] = STEPS_BWD,
                                                     [MODEL_STEP_OPTIMIZER] = STEPS_OPT};
    int phase = model_steps_python_phase(p, node);
    if (phase == MODEL_STEP_BACKWARD && model_torch_node_recomputes(p, node))
        return STEPS_FWD; /* inside a backward's span: backward's, and recomputed */
    if (phase >= 0)
        return label[phase];
    return model_steps_is_import(p, node) ? STEPS_IMPORT : -1;
}

int model_steps_is_import(const struct model_process *p, uint32_t node)
{
    const struct model_py_node *n = model_python_node(p, node);
    const struct model_py_func *f = n ? model_python_func(p, n->func) : NULL;
    return f && ((f->module && steps_prefix(f->module, "importlib")) ||
                 (f->file && strstr(f->file, "importlib._bootstrap")));
}

static int steps_pair_cmp(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* tid's Python calls made from C (an autograd.Function's backward, a tensor hook: the engine
 * calls them inside the autograd node's operator; an autograd.Function's forward, which
 * Function.apply calls inside the Function's operator, in the model's forward or at the
 * loop's top level: review B's SleepFn read its Python backward as Python and its Python
 * forward as an operator), outermost ones, by start (CLOCK_MONOTONIC ns, pairs); their count
 * in *n. Inside an operator, their time but their own operators' is Python. */
static uint64_t (*steps_callbacks(const struct model_process *p, uint32_t tid, size_t *n))[2]
{
    uint64_t(*cb)[2] = NULL;
    size_t cap = 0, k = 0;
    *n = 0;
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        const struct model_py_node *node = sp->tid == tid ? model_python_node(p, sp->node) : NULL;
        const struct model_py_node *up =
            node && node->parent ? model_python_node(p, node->parent) : NULL;
        const struct model_py_func *f = node ? model_python_func(p, node->func) : NULL;
        const struct model_py_func *g = up ? model_python_func(p, up->func) : NULL;
        if (!f || !g || f->kind != PROF_PY_FUNC_PYTHON || g->kind != PROF_PY_FUNC_C)
            continue;
        cb = report_grow(cb, &cap, k + 1, sizeof *cb);
        cb[k][0] = model_ticks_to_monotonic_ns(p, sp->start);
        cb[k++][1] = model_ticks_to_monotonic_ns(p, sp->end);
    }
    if (k)
        qsort(cb, k, sizeof *cb, steps_pair_cmp);
    for (size_t i = 0; i < k; i++) /* the outermost: one inside another goes */
        if (!*n || cb[i][0] >= cb[*n - 1][1])
            memcpy(cb[(*n)++], cb[i], sizeof *cb);
    return cb;
}

/* Whether [a, b) lies inside one of cb[0, n) (sorted, disjoint). */
static int steps_inside(uint64_t (*cb)[2], size_t n, uint64_t a, uint64_t b)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the last starting at or before a */
        size_t mid = lo + (hi - lo) / 2;
        if (cb[mid][0] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && b <= cb[lo - 1][1];
}

static void steps_collect(const struct model_process *p, uint32_t tid, struct steps_events *e)
{
    size_t ncb;
    uint64_t(*cb)[2] = steps_callbacks(p, tid, &ncb);
    for (size_t i = 0; i < ncb; i++)
        steps_add(e, cb[i][0], cb[i][1], STEPS_CALLBACK);
    for (size_t i = 0; i < p->steps.nevals; i++)
        steps_add(e, p->steps.evals[i][0], p->steps.evals[i][1], STEPS_EVAL);
    for (size_t i = 0; i < p->torch.nops; i++) {
        const struct model_torch_op *op = &p->torch.ops[i];
        const char *name = steps_op_name(p, op);
        uint64_t a = model_ticks_to_monotonic_ns(p, op->start);
        uint64_t b = model_ticks_to_monotonic_ns(p, op->end);
        if (name && model_comm_is_torch_op(name))
            continue; /* the communication calls below hold them */
        if (op->tid != tid)
            continue;
        int phase = op->scope == MODEL_TORCH_SCOPE_USER ? model_steps_scope_phase(name) : -1;
        if (op->scope != MODEL_TORCH_SCOPE_USER) {
            steps_add(e, a, b, STEPS_OPS);
            if (ncb && steps_inside(cb, ncb, a, b))
                steps_add(e, a, b, STEPS_OPS_IN_CALLBACK);
        } else if (phase >= 0)
            steps_add(e, a, b,
                      phase == MODEL_STEP_DATA        ? STEPS_DATA
                      : phase == MODEL_STEP_OPTIMIZER ? STEPS_OPT
                                                      : STEPS_FWD);
    }
    int64_t off = p->comm.realtime_offset_ns;
    for (size_t i = 0; i < p->comm.ncalls; i++) {
        const struct model_comm_call *c = &p->comm.calls[i];
        if (!c->setup)
            steps_add(e, c->start_ns - (uint64_t)off, c->end_ns - (uint64_t)off, STEPS_COMM);
    }
    struct u64map labels = {0}; /* node -> label + 2 (1: none) */
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        if (sp->tid != tid)
            continue;
        uint64_t *slot = u64map_slot(&labels, (uint64_t)sp->node + 1);
        if (!slot)
            report_oom();
        if (!*slot)
            *slot = (uint64_t)(steps_py_label(p, sp->node) + 2);
        if (*slot >= 2)
            steps_add(e, model_ticks_to_monotonic_ns(p, sp->start),
                      model_ticks_to_monotonic_ns(p, sp->end), (uint8_t)(*slot - 2));
    }
    u64map_free(&labels);
    free(cb);
    static const uint8_t lightning_label[MODEL_STEP_PART_COUNT] = {
        [MODEL_STEP_DATA] = STEPS_DATA,
        [MODEL_STEP_FORWARD] = STEPS_FWD,
        [MODEL_STEP_BACKWARD] = STEPS_BWD,
        [MODEL_STEP_OPTIMIZER] = STEPS_OPT};
    for (size_t i = 0; i < p->steps.nranges; i++) {
        const struct model_step_range *r = &p->steps.ranges[i];
        int phase = r->lightning ? model_steps_lightning_phase(r->name) : -1;
        if (phase >= 0 && r->tid == tid)
            steps_add(e, model_ticks_to_monotonic_ns(p, r->start),
                      model_ticks_to_monotonic_ns(p, r->end), lightning_label[phase]);
    }
    for (size_t i = 0; i < p->gpu.ncalls; i++) {
        const struct model_gpu_call *c = &p->gpu.calls[i];
        const char *name = c->api ? p->gpu.apis[c->api - 1].name : NULL;
        if (c->tid == tid && (model_gpu_is_sync_name(name) || model_gpu_is_blocking_copy(name)))
            steps_add(e, model_ticks_to_monotonic_ns(p, c->start),
                      model_ticks_to_monotonic_ns(p, c->end), STEPS_SYNC);
    }
    uint64_t b0, b1, btid;
    if (model_torch_bridge_build(p, &b0, &b1, &btid, NULL) && btid == tid)
        steps_add(e, model_ticks_to_monotonic_ns(p, b0), model_ticks_to_monotonic_ns(p, b1),
                  STEPS_PROFILER);
    for (size_t i = 0; i < p->steps.nsyncs; i++) {
        const struct model_step_sync *s = &p->steps.syncs[i];
        if (s->tid == tid)
            steps_add(e, model_ticks_to_monotonic_ns(p, s->start),
                      model_ticks_to_monotonic_ns(p, s->end), STEPS_SYNC);
    }
}

/* Whether an instant is an evaluation's: inside one, in no backward nor optimizer step. */
static int steps_evaluating(const uint32_t *c)
{
    return c[STEPS_EVAL] && !c[STEPS_BWD] && !c[STEPS_OPT];
}

/* Whether an instant runs an operator: one covers it, and no Python callback inside it
 * without an operator of its own (the callback's own time is Python). */
static int steps_in_op(const uint32_t *c)
{
    return c[STEPS_OPS] && !(c[STEPS_CALLBACK] && !c[STEPS_OPS_IN_CALLBACK]);
}

/* The part an instant goes to, from the labels covering it (model.h). */
static enum model_step_part steps_part_at(const uint32_t *c)
{
    if (steps_evaluating(c)) /* work outside the training's */
        return steps_in_op(c)  ? MODEL_STEP_OTHER_OPS
               : c[STEPS_COMM] ? MODEL_STEP_COMM
                               : MODEL_STEP_OTHER;
    if (c[STEPS_DATA])
        return MODEL_STEP_DATA;
    if (c[STEPS_SYNC])
        return MODEL_STEP_SYNC;
    /* backward before forward before optimizer: an optimizer's closure (LBFGS, Lightning's
     * automatic optimization) runs the forward and backward inside its step, and
     * activation checkpointing a forward inside the backward */
    enum model_step_part phase = c[STEPS_BWD]   ? MODEL_STEP_BACKWARD
                                 : c[STEPS_FWD] ? MODEL_STEP_FORWARD
                                 : c[STEPS_OPT] ? MODEL_STEP_OPTIMIZER
                                                : MODEL_STEP_PART_COUNT;
    if (steps_in_op(c))
        return phase == MODEL_STEP_PART_COUNT ? MODEL_STEP_OTHER_OPS : phase;
    if (c[STEPS_COMM])
        return MODEL_STEP_COMM;
    return phase == MODEL_STEP_PART_COUNT ? MODEL_STEP_OTHER : phase;
}

/* Called for each elementary interval [a, b) in time order: c counts the labels covering
 * it, step is the step holding it (NULL: none), ev the event that opened it. */
typedef void (*steps_segment_fn)(struct model_steps *st, struct model_step *step, const uint32_t *c,
                                 const struct steps_event *ev, uint64_t a, uint64_t b);

/* One sweep over e's labels and the steps (label in_step, at most STEPS_LABEL_COUNT). */
static void steps_walk(struct model_steps *st, struct steps_events *e, uint8_t in_step,
                       steps_segment_fn fn)
{
    for (size_t i = 0; i < st->nsteps; i++)
        steps_add(e, st->steps[i].start_ns, st->steps[i].end_ns, in_step);
    steps_sort(e->ev, e->n);
    uint32_t c[STEPS_LABEL_COUNT + 1] = {0};
    size_t k = 0; /* the step holding the current interval, or the next one */
    for (size_t i = 0; i + 1 < e->n; i++) {
        const struct steps_event *ev = &e->ev[i];
        if (ev->delta > 0)
            c[ev->label]++;
        else if (c[ev->label])
            c[ev->label]--;
        uint64_t a = ev->t, b = e->ev[i + 1].t;
        if (b <= a)
            continue;
        while (k < st->nsteps && st->steps[k].end_ns <= a)
            k++;
        int in = k < st->nsteps && c[in_step] && a >= st->steps[k].start_ns;
        fn(st, in ? &st->steps[k] : NULL, c, ev, a, b);
    }
}

/* The step thread's labels: each interval inside a step goes to its part; before the first
 * step, imports are summed for the startup line. */
static void steps_cpu_segment(struct model_steps *st, struct model_step *step, const uint32_t *c,
                              const struct steps_event *ev, uint64_t a, uint64_t b)
{
    if (b <= st->steps[0].start_ns && c[STEPS_IMPORT] && !c[STEPS_PROFILER])
        st->startup_import_ns += b - a;
    if (!step)
        return;
    enum model_step_part part = steps_part_at(c);
    step->part_ns[part] += b - a;
    if (steps_evaluating(c))
        step->eval_ns += b - a;
    if (part == MODEL_STEP_BACKWARD && c[STEPS_FWD])
        step->recompute_ns += b - a;
    /* in forward, no operator running, or a callback's own time (an autograd.Function's
     * Python forward, inside its operator); in backward, a Python callback's own time (the
     * gaps between backward's operators are the engine's C++, and on a GPU its operators run
     * on the engine's device threads while this one waits) */
    if ((part == MODEL_STEP_FORWARD && !steps_in_op(c)) ||
        (part == MODEL_STEP_BACKWARD && c[STEPS_CALLBACK] && !c[STEPS_OPS_IN_CALLBACK]))
        step->python_ns += b - a;
    if (c[STEPS_COMM])
        step->comm_ns += b - a;
    if (ev->delta > 0 && ev->label == STEPS_SYNC)
        step->syncs++;
}

enum { STEPS_GPU_ALL, STEPS_GPU_KERNEL, STEPS_GPU_COPY, STEPS_GPU_IN_STEP };

/* GPU time per step: the union of the operations (all devices), kernels, copies and sets. */
static void steps_gpu_segment(struct model_steps *st, struct model_step *step, const uint32_t *c,
                              const struct steps_event *ev, uint64_t a, uint64_t b)
{
    (void)st;
    (void)ev;
    if (!step)
        return;
    step->gpu_busy_ns += c[STEPS_GPU_ALL] ? b - a : 0;
    step->gpu_kernel_ns += c[STEPS_GPU_KERNEL] ? b - a : 0;
    step->gpu_copy_ns += c[STEPS_GPU_COPY] ? b - a : 0;
}

static void steps_gpu(struct model_process *p)
{
    const struct model_gpu *g = &p->gpu;
    if (!g->nops)
        return;
    struct steps_events e = {0};
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        steps_add(&e, op->start_ns, op->end_ns, STEPS_GPU_ALL);
        steps_add(&e, op->start_ns, op->end_ns,
                  op->kind == MODEL_GPU_KERNEL ? STEPS_GPU_KERNEL : STEPS_GPU_COPY);
    }
    steps_walk(&p->steps, &e, STEPS_GPU_IN_STEP, steps_gpu_segment);
    free(e.ev);
}

static void model_steps_on_api_call(struct model_process *p, const struct model_api *api,
                                    const struct prof_rec_api_call *call, const uint64_t *args,
                                    size_t nargs, uint32_t tid)
{
    (void)args;
    (void)nargs;
    if (api->category != PROF_CAT_SYNC &&
        !(api->category == PROF_CAT_COPY && model_gpu_is_blocking_copy(api->name)))
        return;
    struct model_steps *st = &p->steps;
    st->syncs = report_grow(st->syncs, &st->cap_syncs, st->nsyncs + 1, sizeof *st->syncs);
    st->syncs[st->nsyncs++] = (struct model_step_sync){call->start, call->end, tid};
}

static void model_steps_on_scope(struct model_process *p, const struct trace_record *rec,
                                 uint32_t tid)
{
    const struct prof_rec_torch_scope *r = rec->data;
    struct model_steps *st = &p->steps;
    st->scopes = report_grow(st->scopes, &st->cap_scopes, st->nscopes + 1, sizeof *st->scopes);
    st->scopes[st->nscopes++] = (struct model_step_scope){r->name_sid, tid, r->start, r->end};
}

/* steps.actions_start_ns and actions_end_ns: the steps' span, widened to the calls of the
 * NVTX ranges and record_function scopes that overlap it (a range around each iteration
 * begins before the first step and ends after the last: on an H200 its 20 calls took 4 us
 * more than the steps, and the Actions fell back to the wall time, train_step 4.9 % of
 * it), and to the end of a built-in action's call that starts after the last step (a
 * forward of the loop's last evaluation; not the loop's last batch fetch, the one that
 * ends it, nor the optimizer step's return, a few us after its scope). ProfilerStep#N
 * scopes are steps (or the teardown's, after them), and Lightning's actions a base of
 * their own. */
static void steps_actions_widen(struct model_process *p, const char *name, uint64_t start,
                                uint64_t end)
{
    struct model_steps *st = &p->steps;
    uint64_t first = st->steps[0].start_ns, last = st->steps[st->nsteps - 1].end_ns;
    uint64_t a = model_ticks_to_monotonic_ns(p, start), b = model_ticks_to_monotonic_ns(p, end);
    if (b <= first || a >= last || !name || !strncmp(name, "ProfilerStep#", 13))
        return;
    /* its end as far as its Total counts (converted as a duration: a few ns more, under
     * load, than the converted end, and a scope round the loop read 1 ns over the span) */
    uint64_t d = model_ticks_to_ns(p, end > start ? end - start : 0);
    b = a + d > b ? a + d : b;
    st->actions_start_ns = a < st->actions_start_ns ? a : st->actions_start_ns;
    st->actions_end_ns = b > st->actions_end_ns ? b : st->actions_end_ns;
}

static void steps_actions_span(struct model_process *p)
{
    struct model_steps *st = &p->steps;
    uint64_t end = st->steps[st->nsteps - 1].end_ns;
    st->actions_start_ns = st->steps[0].start_ns;
    st->actions_end_ns = end;
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        const char *action = model_torch_action_of_node(p, sp->node);
        uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
        if (action && strcmp(action, "dataloader_next") && b > st->actions_end_ns &&
            model_ticks_to_monotonic_ns(p, sp->start) >= end)
            st->actions_end_ns = b;
    }
    for (size_t i = 0; i < p->torch.nops; i++) {
        const struct model_torch_op *op = &p->torch.ops[i];
        if (op->scope == MODEL_TORCH_SCOPE_USER)
            steps_actions_widen(p, steps_op_name(p, op), op->start, op->end);
    }
    for (size_t i = 0; i < st->nranges; i++) {
        const struct model_step_range *r = &st->ranges[i];
        if (!r->lightning)
            steps_actions_widen(p, r->name, r->start, r->end);
    }
}

static void model_steps_on_gc(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    const struct prof_rec_py_gc *r = rec->data;
    struct model_steps *st = &p->steps;
    if (r->end < r->start)
        return;
    st->gcs = report_grow(st->gcs, &st->cap_gcs, st->ngcs + 1, sizeof *st->gcs);
    st->gcs[st->ngcs++] = (struct model_step_gc){r->start, r->end, tid, r->generation};
}

static int steps_keep_spans; /* model_steps_keep_spans */

int model_steps_phases_whole(const struct model_process *p)
{
    return !p->lost || (model_meta_get(p, "ring_kept_bytes") && !p->lost_kept);
}

void model_steps_keep_spans(int keep)
{
    steps_keep_spans = keep;
}

static void model_steps_finish(struct model_process *p)
{
    struct model_steps *st = &p->steps;
    struct model_steps_finder *f = model_steps_finder_new(p);
    for (size_t i = 0; i < p->torch.nops; i++) {
        const struct model_torch_op *op = &p->torch.ops[i];
        if (op->scope == MODEL_TORCH_SCOPE_USER)
            model_steps_finder_scope(f, steps_op_name(p, op), op->tid,
                                     model_ticks_to_monotonic_ns(p, op->start),
                                     model_ticks_to_monotonic_ns(p, op->end));
    }
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        model_steps_finder_python(f, sp->node, sp->tid, model_ticks_to_monotonic_ns(p, sp->start),
                                  model_ticks_to_monotonic_ns(p, sp->end));
    }
    for (size_t i = 0; i < st->nscopes; i++) {
        const struct model_step_scope *s = &st->scopes[i];
        model_steps_finder_logged_scope(
            f, s->name_sid ? u64map_get_ptr(&p->strings, s->name_sid) : NULL, s->tid,
            model_ticks_to_monotonic_ns(p, s->start), model_ticks_to_monotonic_ns(p, s->end));
    }
    for (size_t i = 0; i < st->nranges; i++) {
        const struct model_step_range *r = &st->ranges[i];
        model_steps_finder_range(f, r->name, r->lightning, r->tid,
                                 model_ticks_to_monotonic_ns(p, r->start),
                                 model_ticks_to_monotonic_ns(p, r->end));
    }
    model_steps_finder_end(f, st);
    if (st->nsteps) {
        model_steps_evals(p);
        struct steps_events e = {0};
        steps_collect(p, st->tid, &e);
        steps_walk(st, &e, STEPS_LABEL_COUNT, steps_cpu_segment);
        free(e.ev);
        steps_gpu(p);
        model_steps_hot(p);
        steps_actions_span(p);
    }
    model_steps_worker_hot(p);
    free(st->evals);
    st->evals = NULL;
    st->nevals = 0;
    free(st->syncs);
    st->syncs = NULL;
    st->nsyncs = st->cap_syncs = 0;
    free(st->ranges);
    st->ranges = NULL;
    st->nranges = st->cap_ranges = 0;
    free(st->scopes);
    st->scopes = NULL;
    st->nscopes = st->cap_scopes = 0;
    if (!steps_keep_spans) {
        free(p->py.span_list);
        p->py.span_list = NULL;
        p->py.nspan_list = p->py.cap_span_list = 0;
    }
}

/* The first step from index lo on that starts (by_end: ends) after t; nsteps: none. */
static size_t steps_first_after(const struct model_steps *st, size_t lo, uint64_t t, int by_end)
{
    size_t hi = st->nsteps;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if ((by_end ? st->steps[m].end_ns : st->steps[m].start_ns) <= t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

size_t model_steps_index_at(const struct model_steps *st, uint64_t t)
{
    size_t a = steps_first_after(st, 0, t, 0);
    /* between two steps (named steps leave gaps): in none */
    return a && t < st->steps[a - 1].end_ns ? a - 1 : SIZE_MAX;
}

char *model_steps_hot_text(const struct model_process *p, uint32_t func_id)
{
    char buf[1024];
    model_python_place(p, func_id, buf, sizeof buf);
    return report_strdup(buf);
}

uint64_t model_steps_inside(const struct model_steps *st, size_t from, uint64_t a, uint64_t b)
{
    uint64_t in = 0;
    for (size_t k = steps_first_after(st, from, a, 1); k < st->nsteps && st->steps[k].start_ns < b;
         k++) {
        uint64_t s = st->steps[k].start_ns > a ? st->steps[k].start_ns : a;
        uint64_t e = st->steps[k].end_ns < b ? st->steps[k].end_ns : b;
        in += e > s ? e - s : 0;
    }
    return in;
}

/* A step's time, its evaluation (model_step.eval_ns) aside: no warm-up's. */
static uint64_t steps_training_ns(const struct model_step *s)
{
    uint64_t d = s->end_ns - s->start_ns;
    return d > s->eval_ns ? d - s->eval_ns : 0;
}

/* Whether step i's slowness recurs after the steps a warm-up may hold: two later slow steps
 * (later[0, nlater)) as slow as it within a factor of 2, on its spacing (the gap between them
 * divides their distance from it), are periodic work (a metric every 5 steps from the
 * first), not a warm-up (a review's first call of it was left out with its step, and the
 * finding counted 7 of 8). */
static int steps_recurs(const struct model_steps *st, size_t i, const size_t *later, size_t nlater)
{
    double d = (double)steps_training_ns(&st->steps[i]);
    size_t prev = SIZE_MAX;
    for (size_t j = 0; j < nlater; j++) {
        double e = (double)steps_training_ns(&st->steps[later[j]]);
        if (e * 2 < d || e > d * 2)
            continue;
        if (prev != SIZE_MAX && (prev - i) % (later[j] - prev) == 0)
            return 1;
        prev = later[j];
    }
    return 0;
}

size_t model_steps_warmup(const struct model_steps *st, double *ratio)
{
    size_t n = st->nsteps;
    /* A first step whose start is inferred (steps.first_inferred): no table part can start
     * there (the Python cuts are at the steps' ends), so it is left out with the warm-up,
     * for every table to cover the same steps (of 2 steps at least). */
    size_t inferred = st->first_inferred && n >= 2;
    *ratio = 0;
    if (n < 4 || st->opened_late == 1)
        return inferred;
    /* an attach to a GPU process: its window's first step alone may be left out */
    size_t reach = st->opened_late ? 1 : n / 4 + inferred;
    size_t half = n - n / 2;
    uint64_t *d = malloc(half * sizeof *d);
    if (!d)
        report_oom();
    for (size_t i = 0; i < half; i++)
        d[i] = steps_training_ns(&st->steps[n / 2 + i]);
    qsort(d, half, sizeof *d, sort_u64_cmp);
    double ref = (double)d[(half + 1) / 2 - 1]; /* the median, nearest rank */
    free(d);
    if (ref <= 0)
        return inferred;
    *ratio = (double)steps_training_ns(&st->steps[0]) / ref;
    /* after an inferred first step (left out anyway) too: work after the first optimizer
     * steps (a warm-up's own) lands in the steps after them, the first one's is short */
    size_t later[64], nlater = 0; /* the first slow steps after those a warm-up may hold */
    for (size_t k = reach; k < n && nlater < sizeof later / sizeof *later; k++)
        if ((double)steps_training_ns(&st->steps[k]) > MODEL_STEPS_WARMUP_RATIO * ref)
            later[nlater++] = k;
    size_t w = inferred;
    while (w < reach && (double)steps_training_ns(&st->steps[w]) > MODEL_STEPS_WARMUP_RATIO * ref &&
           !steps_recurs(st, w, later, nlater))
        w++;
    return w;
}

static model_steps_loader steps_loader;

void model_steps_set_loader(model_steps_loader fn)
{
    steps_loader = fn;
}

/* The steps are a cache of the summary's: filling or freeing them leaves the process the
 * same to its readers, hence the casts from const. */
void model_steps_hold(const struct model_process *p)
{
    struct model_steps *st = (struct model_steps *)&p->steps;
    if (st->steps || !st->nsteps)
        return;
    char err[512] = "no reader of summaries";
    if (!steps_loader || steps_loader(p, &st->steps, err, sizeof err) != 0) {
        fprintf(stderr, "warning: %s\n", err);
        st->steps = calloc(st->nsteps, sizeof *st->steps);
        if (!st->steps)
            report_oom();
    }
}

void model_steps_give(const struct model_process *p, struct model_step *steps)
{
    struct model_steps *st = (struct model_steps *)&p->steps;
    if (st->steps || !st->nsteps)
        free(steps);
    else
        st->steps = steps;
}

void model_steps_let_go(const struct model_process *p)
{
    if (!p || !p->summary_file)
        return;
    struct model_steps *st = (struct model_steps *)&p->steps;
    free(st->steps);
    st->steps = NULL;
}

static void model_steps_free(struct model_process *p)
{
    free(p->steps.steps);
    free(p->steps.syncs);
    free(p->steps.ranges);
    free(p->steps.scopes);
    free(p->steps.gcs);
    model_steps_hot_free(p->steps.hot, p->steps.nhot);
    model_steps_hot_free(p->steps.startup_hot, p->steps.nstartup_hot);
    model_steps_hot_free(p->steps.data_hot, p->steps.ndata_hot);
    model_steps_hot_free(p->steps.slow_hot, p->steps.nslow_hot);
    model_steps_hot_free(p->steps.rare_hot, p->steps.nrare_hot);
    model_steps_hot_free(p->steps.other_hot, p->steps.nother_hot);
    model_steps_hot_free(p->steps.comm_hot, p->steps.ncomm_hot);
    model_steps_hot_free(p->steps.thread_hot, p->steps.nthread_hot);
    model_steps_hot_free(p->steps.worker_hot, p->steps.nworker_hot);
    memset(&p->steps, 0, sizeof p->steps);
}

static const struct model_record_handler model_steps_handlers[] = {
    {PROF_REC_TORCH_SCOPE, model_steps_on_scope},
    {PROF_REC_PY_GC, model_steps_on_gc},
};

const struct model_part model_steps_part = {
    .name = "steps",
    MODEL_PART_HANDLERS(model_steps_handlers),
    .on_api_call = model_steps_on_api_call,
    .finish = model_steps_finish,
    .free = model_steps_free,
};
