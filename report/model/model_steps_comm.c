/* model_steps_comm: where the steady steps' collectives begin in the program
 * (steps.comm_hot, model_steps.h), for the communication finding. */
#include <stdlib.h>

#include "alloc.h"
#include "hashmap.h"
#include "model.h"
#include "model_steps_hot.h"

static int comm_hot_call_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Whether a Python function of the program's own files (not a library's, not a builtin). */
static int comm_hot_own(const struct model_process *p, uint32_t func)
{
    const struct model_py_func *f = model_python_func(p, func);
    return f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file);
}

struct comm_hot_row {
    uint32_t own, api; /* func ids + 1; 0: none */
    uint64_t ns;       /* its collectives' time not covered by an earlier-begun one */
};

static int comm_hot_row_cmp(const void *a, const void *b)
{
    const struct comm_hot_row *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns > y->ns ? -1 : 1;
    return x->own != y->own ? (x->own < y->own ? -1 : 1) : (x->api > y->api) - (x->api < y->api);
}

/* steps.comm_hot: each collective of the steady steps (its start in one of them) goes to
 * the innermost call of the program's own files around its start on the step thread, and
 * the library function that call made on the way (the API: all_reduce, Tensor.backward
 * for DDP's gradient buckets), with its time up to the last one's end; with no such call, to the
 * outermost call around it. Collectives of any thread: a backend's work on its own thread began
 * from the step thread's op. Time that collectives running at once cover counts once, with the one
 * begun first (DDP's buckets overlap each other and a metric's all_reduce), so the rows add up to
 * no more than the communication's time. */
void model_steps_comm_hot(struct model_process *p, size_t warm, uint64_t per)
{
    struct model_steps *st = &p->steps;
    uint64_t lo = st->steps[warm].start_ns, hi = st->steps[st->nsteps - 1].end_ns;
    size_t n = 0, nc = 0, top = 0;
    size_t *stack = malloc((p->py.nspan_list + 1) * sizeof *stack);
    uint64_t(*calls)[2] = malloc((p->comm.ncalls + 1) * sizeof *calls); /* start, end */
    if (!stack || !calls)
        report_oom();
    int64_t off = p->comm.realtime_offset_ns;
    for (size_t i = 0; i < p->comm.ncalls; i++) {
        const struct model_comm_call *c = &p->comm.calls[i];
        uint64_t a = c->start_ns - (uint64_t)off, b = c->end_ns - (uint64_t)off;
        size_t in = a >= lo && a < hi ? model_steps_index_at(st, a) : SIZE_MAX; /* (gaps) */
        if (!c->setup && in != SIZE_MAX && b > a) { /* its time in the steps (gaps left out) */
            calls[nc][0] = a;
            calls[nc++][1] = a + model_steps_inside(st, warm, a, b);
        }
    }
    qsort(calls, nc, sizeof *calls, comm_hot_call_cmp);
    const size_t *order = model_steps_spans_in_order(p, p->steps.tid, &n);
    struct u64map index; /* (own << 32 | api) -> row + 1 */
    u64map_init(&index);
    struct comm_hot_row *rows = NULL;
    size_t nrows = 0, cap = 0, k = 0;
    uint64_t covered = 0; /* the latest end so far (the collectives come by start) */
    for (size_t i = 0; i < nc; i++) {
        for (; k < n &&
               model_ticks_to_monotonic_ns(p, p->py.span_list[order[k]].start) <= calls[i][0];
             k++) { /* the calls begun by then, innermost on top */
            while (top && p->py.span_list[stack[top - 1]].end < p->py.span_list[order[k]].end)
                top--;
            stack[top++] = order[k];
        }
        while (top &&
               model_ticks_to_monotonic_ns(p, p->py.span_list[stack[top - 1]].end) <= calls[i][0])
            top--;
        uint32_t own = 0, api = 0;
        for (size_t j = top; j-- > 0 && !own;) {
            const struct model_py_node *node = model_python_node(p, p->py.span_list[stack[j]].node);
            if (node && comm_hot_own(p, node->func))
                own = node->func + 1;
            else if (node)
                api = node->func + 1; /* (the outermost library call below own's) */
        }
        if (!own && !api)
            continue;
        uint64_t *slot = u64map_slot(&index, (uint64_t)own << 32 | api);
        if (!slot)
            report_oom();
        if (!*slot) {
            rows = report_grow(rows, &cap, nrows + 1, sizeof *rows);
            rows[nrows] = (struct comm_hot_row){own, api, 0};
            *slot = ++nrows;
        }
        struct comm_hot_row *row = &rows[*slot - 1];
        uint64_t from = calls[i][0] > covered ? calls[i][0] : covered;
        if (calls[i][1] > from) {
            row->ns += calls[i][1] - from;
            covered = calls[i][1];
        }
    }
    u64map_free(&index);
    if (nrows)
        qsort(rows, nrows, sizeof *rows, comm_hot_row_cmp);
    st->ncomm_hot = nrows < MODEL_STEPS_COMM_HOT ? nrows : MODEL_STEPS_COMM_HOT;
    st->comm_hot = st->ncomm_hot ? malloc(st->ncomm_hot * sizeof *st->comm_hot) : NULL;
    if (st->ncomm_hot && !st->comm_hot)
        report_oom();
    for (size_t i = 0; i < st->ncomm_hot; i++) { /* "own (file:line)", the API it called */
        const struct comm_hot_row *r = &rows[i];
        /* own with no API: the library call under it was shorter than a span (a short
         * all_reduce's, beside its long ones' row) */
        char *api = r->own && r->api ? model_steps_hot_text(p, r->api - 1)
                    : r->own ? report_strdup("(a library call shorter than PROF_PY_SPAN_US)")
                             : report_strdup("");
        st->comm_hot[i] = (struct model_step_hot){
            model_steps_hot_text(p, (r->own ? r->own : r->api) - 1), api, r->ns / per, 0, 0};
    }
    free(rows);
    free(stack);
    free(calls);
}
