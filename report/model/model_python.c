/* model_python: the Python records of one process — functions (process-wide), the call-tree
 * nodes of each thread with their last (cumulative) stats, timeline span counts and the
 * intervals another profiler took Python's profile hook away. The cProfile arithmetic over
 * these trees is pystats.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "trace_read.h"

static struct model_py_node *model_python_node_get(struct model_python *py, uint32_t id)
{
    uint64_t v = idmap_get(&py->node_index, id);
    if (v)
        return &py->nodes[v - 1];
    py->nodes = report_grow_raw(py->nodes, &py->cap_nodes, py->nnodes + 1, sizeof *py->nodes);
    struct model_py_node *n = &py->nodes[py->nnodes++];
    memset(n, 0, sizeof *n);
    n->id = id;
    if (idmap_set(&py->node_index, id, py->nnodes) != 0)
        report_oom();
    return n;
}

static void model_python_on_func(struct model_python *py, const struct prof_rec_py_func *r)
{
    uint64_t v = idmap_get(&py->func_index, r->func_id);
    if (!v) {
        py->funcs = report_grow(py->funcs, &py->cap_funcs, py->nfuncs + 1, sizeof *py->funcs);
        v = ++py->nfuncs;
        if (idmap_set(&py->func_index, r->func_id, v) != 0)
            report_oom();
    }
    struct model_py_func *f = &py->funcs[v - 1];
    memset(f, 0, sizeof *f);
    f->id = r->func_id;
    f->name_sid = r->name_sid;
    f->qualname_sid = r->qualname_sid;
    f->file_sid = r->file_sid;
    f->module_sid = r->module_sid;
    f->line = r->line;
    f->kind = r->kind;
}

static void model_python_on_record(struct model_process *p, const struct trace_record *rec,
                                   uint32_t tid)
{
    struct model_python *py = &p->py;
    switch (rec->type) {
    case PROF_REC_PY_FUNC:
        model_python_on_func(py, rec->data);
        break;
    case PROF_REC_PY_NODE: {
        const struct prof_rec_py_node *r = rec->data;
        struct model_py_node *n = model_python_node_get(py, r->node_id);
        n->parent = r->parent_id == r->node_id ? 0 : r->parent_id;
        n->func = r->func_id;
        n->tid = tid;
        n->defined = 1;
        break;
    }
    case PROF_REC_PY_STATS: {
        /* Cumulative: the last record of a node replaces the earlier ones. */
        const struct prof_rec_py_stats *r = rec->data;
        struct model_py_node *n = model_python_node_get(py, r->node_id);
        if (!n->defined)
            n->tid = tid;
        n->calls = r->calls;
        n->total_ticks = r->total_ticks;
        n->self_ticks = r->self_ticks;
        n->api_calls = r->api_calls;
        n->api_ticks = r->api_ticks;
        break;
    }
    case PROF_REC_PY_SPAN: {
        const struct prof_rec_py_span *r = rec->data;
        model_cpu_event(p, r->start, r->end);
        py->spans++;
        py->span_list = report_grow_raw(py->span_list, &py->cap_span_list, py->nspan_list + 1,
                                        sizeof *py->span_list);
        py->span_list[py->nspan_list++] = (struct model_py_span){
            .start = r->start, .end = r->end, .node = r->node_id, .tid = tid};
        break;
    }
    case PROF_REC_PY_GAP: {
        const struct prof_rec_py_gap *r = rec->data;
        /* A gap is written when it opens (end 0) and again when it closes: the closing
         * completes the open one of its thread. */
        if (r->end) {
            size_t i = py->ngaps;
            while (i > 0 && !(py->gaps[i - 1].tid == tid && !py->gaps[i - 1].end_ticks &&
                              py->gaps[i - 1].start_ticks == r->start))
                i--;
            if (i > 0) {
                py->gaps[i - 1].end_ticks = r->end;
                break;
            }
        }
        py->gaps = report_grow(py->gaps, &py->cap_gaps, py->ngaps + 1, sizeof *py->gaps);
        py->gaps[py->ngaps++] = (struct model_py_gap){
            .tid = tid, .reason = r->reason, .start_ticks = r->start, .end_ticks = r->end};
        break;
    }
    default:
        break;
    }
}

static const char *model_python_string(const struct model_process *p, uint32_t sid)
{
    return sid ? u64map_get_ptr(&p->strings, sid) : NULL;
}

int model_torch_bridge_build(const struct model_process *p, uint64_t *start, uint64_t *end,
                             uint64_t *tid, uint32_t *node)
{
    const char *v = model_meta_get(p, "torch_bridge_build");
    unsigned long long a, b, t;
    unsigned n;
    if (!v || sscanf(v, "%llu %llu %llu %u", &a, &b, &t, &n) != 4 || b < a)
        return 0;
    *start = a;
    *end = b;
    *tid = t;
    if (node)
        *node = n;
    return 1;
}

/* The profiler's build of its torch bridge, when it happened inside the run, is taken out
 * of the Python calls open around it (the innermost one's self time, every one's total):
 * they waited for the profiler, not for the program. */
static void model_python_unbill_build(struct model_process *p)
{
    uint64_t a, b, tid;
    uint32_t node;
    if (!model_torch_bridge_build(p, &a, &b, &tid, &node))
        return;
    uint64_t d = b - a;
    const struct model_py_node *inner = node ? model_python_node(p, node) : NULL;
    for (uint32_t id = node, depth = 0; id && depth < (1u << 24); depth++) {
        struct model_py_node *n = (struct model_py_node *)model_python_node(p, id);
        if (!n)
            break;
        n->total_ticks -= n->total_ticks < d ? n->total_ticks : d;
        if (n == inner)
            n->self_ticks -= n->self_ticks < d ? n->self_ticks : d;
        id = n->parent;
    }
    const struct model_py_func *f = inner ? model_python_func(p, inner->func) : NULL;
    model_add_warning(p,
                      "%s (pid %lld): the profiler built its libtorch bridge during this run "
                      "(%.1f s%s%s): its time is left out of the Python functions' times; "
                      "`profrun --prepare` builds it beforehand",
                      p->file, (long long)p->pid, (double)model_ticks_to_ns(p, d) / 1e9,
                      f ? ", under " : "", f ? (f->qualname ? f->qualname : f->name) : "");
}

static void model_python_finish(struct model_process *p)
{
    struct model_python *py = &p->py;
    for (size_t i = 0; i < py->nfuncs; i++) {
        struct model_py_func *f = &py->funcs[i];
        f->name = model_python_string(p, f->name_sid);
        f->qualname = model_python_string(p, f->qualname_sid);
        f->file = model_python_string(p, f->file_sid);
        f->module = model_python_string(p, f->module_sid);
    }
    model_python_unbill_build(p);
    size_t undefined = 0;
    for (size_t i = 0; i < py->nnodes; i++) {
        struct model_py_node *n = &py->nodes[i];
        n->total_ns = model_ticks_to_ns(p, n->total_ticks);
        n->self_ns = model_ticks_to_ns(p, n->self_ticks);
        n->api_ns = model_ticks_to_ns(p, n->api_ticks);
        undefined += !n->defined;
    }
    for (size_t i = 0; i < py->ngaps; i++) {
        struct model_py_gap *g = &py->gaps[i];
        g->start_ns = model_ticks_to_monotonic_ns(p, g->start_ticks);
        g->end_ns = g->end_ticks ? model_ticks_to_monotonic_ns(p, g->end_ticks) : 0;
    }
    model_torch_node_actions(p); /* the steps read the nodes' actions before the torch part */
    if (undefined)
        model_add_warning(p,
                          "%s (pid %lld): %zu Python call-tree node(s) have stats but no "
                          "PY_NODE record; not counted",
                          p->file, (long long)p->pid, undefined);
}

static void model_python_free(struct model_process *p)
{
    struct model_python *py = &p->py;
    model_torch_node_actions_free(p);
    free(py->span_list);
    free(py->node_action);
    free(py->node_recompute);
    free(py->node_phase);
    free(py->funcs);
    free(py->nodes);
    free(py->gaps);
    free(py->thread_totals);
    free(py->window_rows); /* the Python window's (model_python_window.c), freed after */
    free(py->cuts);
    free(py->cut_stats);
    idmap_free(&py->func_index);
    idmap_free(&py->node_index);
    memset(py, 0, sizeof *py);
}

const struct model_py_func *model_python_func(const struct model_process *p, uint32_t func_id)
{
    uint64_t v = idmap_get(&p->py.func_index, func_id);
    return v ? &p->py.funcs[v - 1] : NULL;
}

int model_python_frame(const struct model_process *p, uint32_t func_id, char *buf, size_t len)
{
    const struct model_py_func *f = model_python_func(p, func_id);
    if (!f)
        return snprintf(buf, len, "<unknown function #%u>", func_id);
    if (f->kind == PROF_PY_FUNC_C) /* never empty: the folded stacks' separators rely on it */
        return snprintf(buf, len, "%s", f->name && *f->name ? f->name : "?");
    return snprintf(buf, len, "%s (%s:%u)",
                    f->qualname && *f->qualname ? f->qualname
                    : f->name                   ? f->name
                                                : "?",
                    f->file ? f->file : "?", f->line);
}

int model_python_place(const struct model_process *p, uint32_t func_id, char *buf, size_t len)
{
    const struct model_py_func *f = model_python_func(p, func_id);
    if (f && f->kind != PROF_PY_FUNC_C && f->qualname && !strcmp(f->qualname, "<module>"))
        return snprintf(buf, len, "<module> (%s)", f->file ? f->file : "?");
    return model_python_frame(p, func_id, buf, len);
}

const struct model_py_node *model_python_node(const struct model_process *p, uint32_t node_id)
{
    uint64_t v = idmap_get(&p->py.node_index, node_id);
    return v ? &p->py.nodes[v - 1] : NULL;
}

const char *model_py_gap_reason_name(uint32_t reason)
{
    return reason == PROF_PY_GAP_OTHER_PROFILER ? "other_profiler" : "unknown";
}

static const struct model_record_handler model_python_handlers[] = {
    {PROF_REC_PY_FUNC, model_python_on_record},  {PROF_REC_PY_NODE, model_python_on_record},
    {PROF_REC_PY_STATS, model_python_on_record}, {PROF_REC_PY_SPAN, model_python_on_record},
    {PROF_REC_PY_GAP, model_python_on_record},
};

const struct model_part model_python_part = {
    .name = "python",
    MODEL_PART_HANDLERS(model_python_handlers),
    .finish = model_python_finish,
    .free = model_python_free,
};
