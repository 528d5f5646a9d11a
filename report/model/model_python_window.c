/* model_python_window: the Python functions of one part of a process (profreport --phase):
 * the steady training steps (the default), every step, or the startup, from the cuts the
 * step thread took of its call tree at its step boundaries (PY_CUT / PY_CUT_STATS,
 * python_tree_cuts.c). A node's counts in the part are its counts at the part's last cut
 * less those at its first, so they are exact as the whole process's are.
 *
 * The process cuts at the ends of optimizer steps (or the starts of ProfilerSteps), and
 * keeps only some of its cuts (trace_format.h), so a part runs from the first step
 * boundary in it that holds a cut to the last: with steps from the optimizer the first
 * step's start is none, and the steps from the second on are given; after a long warm-up
 * the part may start some steps later. The title says which steps. The other threads'
 * calls are not cut: the part is the step thread's alone, and says so. When no cut fits,
 * or the thread's ring dropped events, the nodes stay the whole process's and window_miss
 * says why (model_python_window_miss_text). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "model_torch.h"
#include "trace_read.h"

static void model_py_window_on_record(struct model_process *p, const struct trace_record *rec,
                                      uint32_t tid)
{
    (void)tid;
    struct model_python *py = &p->py;
    if (rec->type == PROF_REC_PY_CUT) {
        const struct prof_rec_py_cut *r = rec->data;
        py->cuts = report_grow(py->cuts, &py->cap_cuts, py->ncuts + 1, sizeof *py->cuts);
        py->cuts[py->ncuts++] = (struct model_py_cut){r->tid, r->cut, r->ticks, 0};
        return;
    }
    const struct prof_rec_py_cut_stats *r = rec->data;
    py->cut_stats =
        report_grow(py->cut_stats, &py->cap_cut_stats, py->ncut_stats + 1, sizeof *py->cut_stats);
    struct model_py_cut_stats *s = &py->cut_stats[py->ncut_stats++];
    s->node = r->node_id;
    s->cut = r->cut;
    memcpy(s->v, &r->calls, sizeof s->v);
}

const char *model_python_window_miss_text(unsigned miss)
{
    switch (miss) {
    case MODEL_PY_WINDOW_MISS_NO_STEPS:
        return "no training steps";
    case MODEL_PY_WINDOW_MISS_NO_CUTS:
        return "no count of the step thread's Python calls fell on a step boundary of the "
               "part (the process keeps them at the first 8 boundaries, the 16th, the 32nd "
               "and the last: ends of optimizer steps, or starts of ProfilerSteps; none under "
               "a capture window)";
    case MODEL_PY_WINDOW_MISS_DROPPED:
        return "the step thread's ring dropped events (raise PROF_RING_KB)";
    case MODEL_PY_WINDOW_MISS_FAILED:
        return "the profiler could not keep the step thread's counts at its steps";
    case MODEL_PY_WINDOW_MISS_SUMMARY:
        return "read from its summary, which holds the steady steps and the whole process only";
    case MODEL_PY_WINDOW_MISS_BACKWARD:
        return "its steps end at backward passes (no optimizer), and the process keeps the "
               "step thread's counts at optimizer steps and ProfilerSteps only; the flame "
               "graph, from the calls of at least PROF_PY_SPAN_US, covers the steps";
    default:
        return "";
    }
}

static int model_py_cut_cmp(const void *a, const void *b)
{
    const struct model_py_cut_stats *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->cut < y->cut ? -1 : x->cut > y->cut;
}

/* The cut of tid at ns, or 0. */
static uint32_t model_py_cut_at(const struct model_python *py, uint32_t tid, uint64_t ns)
{
    for (size_t i = 0; i < py->ncuts; i++)
        if (py->cuts[i].tid == tid && py->cuts[i].cut && py->cuts[i].ns == ns)
            return py->cuts[i].cut;
    return 0;
}

/* A node's counts at cut k (0: the process start): its record with the smallest cut >= k
 * among rec[0, n) (sorted by cut), else its final counts. */
static void model_py_counts_at(const struct model_py_node *node,
                               const struct model_py_cut_stats *rec, size_t n, uint32_t k,
                               uint64_t v[5])
{
    if (!k) {
        memset(v, 0, 5 * sizeof *v);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (rec[i].cut >= k) {
            memcpy(v, rec[i].v, 5 * sizeof *v);
            return;
        }
    const uint64_t fin[5] = {node->calls, node->total_ticks, node->self_ticks, node->api_calls,
                             node->api_ticks};
    memcpy(v, fin, sizeof fin);
}

static uint64_t model_py_less(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* The nodes of tid that ran between cuts ka and kb, with their counts there. */
static void model_py_window_rows(struct model_process *p, uint32_t tid, uint32_t ka, uint32_t kb)
{
    struct model_python *py = &p->py;
    qsort(py->cut_stats, py->ncut_stats, sizeof *py->cut_stats, model_py_cut_cmp);
    size_t cap = 0;
    for (size_t i = 0; i < py->nnodes; i++) {
        const struct model_py_node *node = &py->nodes[i];
        if (node->tid != tid)
            continue;
        size_t lo = 0, hi = py->ncut_stats; /* its first record (sorted by node) */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (py->cut_stats[mid].node < node->id)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t r = lo, n = 0;
        while (r + n < py->ncut_stats && py->cut_stats[r + n].node == node->id)
            n++;
        uint64_t a[5], b[5];
        model_py_counts_at(node, py->cut_stats + r, n, ka, a);
        model_py_counts_at(node, py->cut_stats + r, n, kb, b);
        struct model_py_window_row w = {.index = i,
                                        .calls = model_py_less(b[0], a[0]),
                                        .total_ns = model_ticks_to_ns(p, model_py_less(b[1], a[1])),
                                        .self_ns = model_ticks_to_ns(p, model_py_less(b[2], a[2])),
                                        .api_calls = model_py_less(b[3], a[3]),
                                        .api_ns = model_ticks_to_ns(p, model_py_less(b[4], a[4]))};
        if (!w.calls && !w.total_ns && !w.api_calls)
            continue; /* did not run in the part */
        py->window_rows =
            report_grow(py->window_rows, &cap, py->nwindow_rows + 1, sizeof *py->window_rows);
        py->window_rows[py->nwindow_rows++] = w;
    }
}

/* The kernels whose launching call began in [lo, hi) with a node of tid innermost (as
 * model_gpu.c gives the whole process's kernels to the node running at the launch): its
 * row's GPU time. The rows are in node order. */
static void model_py_window_gpu(struct model_process *p, uint32_t tid, uint64_t lo, uint64_t hi)
{
    struct model_python *py = &p->py;
    for (size_t i = 0; i < p->gpu.nops; i++) {
        const struct model_gpu_op *op = &p->gpu.ops[i];
        const struct model_gpu_call *c = model_gpu_op_call(p, i); /* kernels alone */
        uint64_t nv = c && c->py_node ? idmap_get(&py->node_index, c->py_node) : 0;
        if (!nv || py->nodes[nv - 1].tid != tid)
            continue;
        uint64_t at = model_ticks_to_monotonic_ns(p, c->start);
        if (at < lo || at >= hi)
            continue;
        size_t a = 0, b = py->nwindow_rows;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (py->window_rows[mid].index < nv - 1)
                a = mid + 1;
            else
                b = mid;
        }
        if (a < py->nwindow_rows && py->window_rows[a].index == nv - 1) {
            py->window_rows[a].gpu_kernels++;
            py->window_rows[a].gpu_ns += op->end_ns - op->start_ns;
        }
    }
}

static int model_py_thread_lost(const struct model_process *p, uint32_t tid)
{
    uint64_t lost = 0;
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid)
            lost += p->threads[i].lost;
    return lost > 0 || p->end_lost > p->lost; /* (END's count may hold losses no LOST named) */
}

static void model_py_window_pick(struct model_process *p)
{
    struct model_python *py = &p->py;
    const struct model_steps *st = &p->steps;
    enum model_window asked = model_torch_window_asked();
    for (size_t i = 0; i < py->ncuts; i++)
        py->cuts[i].ns = model_ticks_to_monotonic_ns(p, py->cuts[i].ticks);
    if (asked == MODEL_WINDOW_ALL || !py->nnodes)
        return;
    if (!st->nsteps || !st->steps) {
        py->window_miss = MODEL_PY_WINDOW_MISS_NO_STEPS;
        return;
    }
    uint32_t tid = st->tid;
    for (size_t i = 0; i < py->ncuts; i++)
        if (py->cuts[i].tid == tid && !py->cuts[i].cut) { /* records not written */
            py->window_miss = MODEL_PY_WINDOW_MISS_FAILED;
            return;
        }
    if (model_py_thread_lost(p, tid)) {
        py->window_miss = MODEL_PY_WINDOW_MISS_DROPPED;
        return;
    }
    double ratio;
    size_t first = asked == MODEL_WINDOW_STEADY ? model_steps_warmup(st, &ratio) : 0;
    size_t last = st->nsteps - 1;
    uint32_t ka = 0, kb = 0;
    uint64_t lo = model_start_monotonic_ns(p), hi = 0;
    size_t a = SIZE_MAX, b = SIZE_MAX; /* the steps the cuts hold, first and last */
    if (asked == MODEL_WINDOW_STARTUP) {
        hi = st->steps[0].start_ns;
        kb = model_py_cut_at(py, tid, hi); /* (at the start every count is 0) */
        a = b = 0;
    } else {
        for (size_t i = first; i <= last && a == SIZE_MAX; i++) {
            if ((ka = model_py_cut_at(py, tid, st->steps[i].start_ns))) {
                lo = st->steps[i].start_ns;
                a = i;
            } else if ((ka = model_py_cut_at(py, tid, st->steps[i].end_ns))) {
                lo = st->steps[i].end_ns; /* (a step from the optimizer's end on) */
                a = i + 1;
            }
        }
        for (size_t j = last + 1; j-- > first && b == SIZE_MAX;) {
            if ((kb = model_py_cut_at(py, tid, st->steps[j].end_ns))) {
                hi = st->steps[j].end_ns;
                b = j;
            } else if (j < st->nsteps - 1 &&
                       (kb = model_py_cut_at(py, tid, st->steps[j + 1].start_ns))) {
                hi = st->steps[j + 1].start_ns; /* (ProfilerSteps: cut at their starts) */
                b = j;
            }
        }
        if (a == SIZE_MAX || b == SIZE_MAX || a > b || ka >= kb)
            kb = 0;
    }
    if (!kb) {
        py->window_miss = st->source == MODEL_STEPS_BACKWARD ? MODEL_PY_WINDOW_MISS_BACKWARD
                                                             : MODEL_PY_WINDOW_MISS_NO_CUTS;
        return;
    }
    model_py_window_rows(p, tid, ka, kb);
    model_py_window_gpu(p, tid, lo, hi);
    py->window = (uint8_t)asked;
    py->window_miss = MODEL_PY_WINDOW_MISS_NONE;
    py->window_tid = tid;
    py->window_ns = hi - lo;
    py->window_steps = asked == MODEL_WINDOW_STARTUP ? 0 : b - a + 1;
    py->window_first = asked == MODEL_WINDOW_STARTUP ? 0 : st->steps[a].number;
    py->window_last = asked == MODEL_WINDOW_STARTUP ? 0 : st->steps[b].number;
}

/* The records are needed no more once the part is made. */
static void model_py_window_finish(struct model_process *p)
{
    struct model_python *py = &p->py;
    model_py_window_pick(p);
    free(py->cuts);
    free(py->cut_stats);
    py->cuts = NULL;
    py->cut_stats = NULL;
    py->ncuts = py->cap_cuts = py->ncut_stats = py->cap_cut_stats = 0;
}

static void model_py_window_free(struct model_process *p)
{
    struct model_python *py = &p->py;
    free(py->cuts);
    free(py->cut_stats);
    free(py->window_rows);
    py->cuts = NULL;
    py->cut_stats = NULL;
    py->window_rows = NULL;
    py->ncuts = py->cap_cuts = py->ncut_stats = py->cap_cut_stats = py->nwindow_rows = 0;
}

static const struct model_record_handler model_py_window_handlers[] = {
    {PROF_REC_PY_CUT, model_py_window_on_record},
    {PROF_REC_PY_CUT_STATS, model_py_window_on_record},
};

const struct model_part model_python_window_part = {
    .name = "python window",
    MODEL_PART_HANDLERS(model_py_window_handlers),
    .finish = model_py_window_finish,
    .free = model_py_window_free,
};
