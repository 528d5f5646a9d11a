/* model_steps_hot: where the step thread's time goes in the steady steps, by Python
 * function: each call's time inside the steady steps minus that of the calls it made
 * (calls of at least PROF_PY_SPAN_US, the spans: a shorter call's time is its caller's),
 * summed per function; the MODEL_STEPS_HOT largest are kept, per steady step. The
 * findings name the function that makes a slow rank slow from them. The same for the
 * startup before the first step, imports left out (their time is the imports' line):
 * the MODEL_STEPS_STARTUP_HOT largest, in all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"

static const struct model_py_span *hot_sorting;

/* By start, the longer first (a caller before the call that starts with it). */
static int hot_span_cmp(const void *a, const void *b)
{
    const struct model_py_span *x = &hot_sorting[*(const size_t *)a];
    const struct model_py_span *y = &hot_sorting[*(const size_t *)b];
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

struct hot_func {
    uint32_t func;
    uint64_t self_ns;
    uint32_t caller;    /* a builtin's: the function that made its call with the most time */
    uint64_t caller_ns; /* that call's self time; 0: none */
};

static int hot_cmp(const void *a, const void *b)
{
    const struct hot_func *x = a, *y = b;
    if (x->self_ns != y->self_ns)
        return x->self_ns > y->self_ns ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

static char *hot_text(const struct model_process *p, uint32_t func_id)
{
    char buf[1024];
    model_python_frame(p, func_id, buf, sizeof buf);
    return report_strdup(buf);
}

/* The functions of the step thread with the most self time inside [lo, hi], most first
 * (*out, their count returned); imports_out: calls of the import machinery, and what they
 * ran, count for no one. */
static size_t hot_rank(const struct model_process *p, uint64_t lo, uint64_t hi, int imports_out,
                       struct hot_func **out)
{
    const struct model_steps *st = &p->steps;
    size_t n = 0, top = 0;
    size_t *order = malloc((p->py.nspan_list + 1) * sizeof *order);
    size_t *stack = malloc((p->py.nspan_list + 1) * sizeof *stack);
    uint64_t *self = malloc((p->py.nspan_list + 1) * sizeof *self);
    uint8_t *import = calloc(p->py.nspan_list + 1, 1);
    if (!order || !stack || !self || !import)
        report_oom();
    for (size_t i = 0; i < p->py.nspan_list; i++)
        if (p->py.span_list[i].tid == st->tid)
            order[n++] = i;
    hot_sorting = p->py.span_list;
    qsort(order, n, sizeof *order, hot_span_cmp);
    hot_sorting = NULL;
    for (size_t k = 0; k < n; k++) {
        const struct model_py_span *sp = &p->py.span_list[order[k]];
        uint64_t a = model_ticks_to_monotonic_ns(p, sp->start);
        uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
        a = a > lo ? a : lo;
        b = b < hi ? b : hi;
        uint64_t in = b > a ? b - a : 0; /* the call's time inside [lo, hi] */
        while (top && !(p->py.span_list[stack[top - 1]].end >= sp->end))
            top--;
        self[order[k]] = in;
        if (top)
            self[stack[top - 1]] = self[stack[top - 1]] > in ? self[stack[top - 1]] - in : 0;
        import[order[k]] = (uint8_t)(imports_out && ((top && import[stack[top - 1]]) ||
                                                     model_steps_is_import(p, sp->node)));
        stack[top++] = order[k];
    }
    struct u64map index; /* func id + 1 -> index + 1 */
    u64map_init(&index);
    struct hot_func *all = NULL;
    size_t nall = 0, cap = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        const struct model_py_node *node = model_python_node(p, p->py.span_list[i].node);
        if (!node || !self[i] || import[i])
            continue;
        uint64_t *slot = u64map_slot(&index, (uint64_t)node->func + 1);
        if (!slot)
            report_oom();
        if (!*slot) {
            all = report_grow(all, &cap, nall + 1, sizeof *all);
            all[nall] = (struct hot_func){node->func, 0, 0, 0};
            *slot = ++nall;
        }
        struct hot_func *h = &all[*slot - 1];
        h->self_ns += self[i];
        /* the caller in the call tree (one shorter than a span has none of its own) */
        const struct model_py_func *f = model_python_func(p, node->func);
        const struct model_py_node *up = f && f->kind == PROF_PY_FUNC_C && node->parent
                                             ? model_python_node(p, node->parent)
                                             : NULL;
        if (up && self[i] > h->caller_ns) {
            h->caller = up->func;
            h->caller_ns = self[i];
        }
    }
    u64map_free(&index);
    free(order);
    free(stack);
    free(self);
    free(import);
    if (nall)
        qsort(all, nall, sizeof *all, hot_cmp);
    *out = all;
    return nall;
}

/* The first `keep` of all[0, nall) as the steps keep them, their time divided by per. */
static struct model_step_hot *hot_keep(const struct model_process *p, const struct hot_func *all,
                                       size_t nall, size_t keep, uint64_t per, size_t *n)
{
    keep = nall < keep ? nall : keep;
    struct model_step_hot *hot = keep ? malloc(keep * sizeof *hot) : NULL;
    if (keep && !hot)
        report_oom();
    for (size_t i = 0; i < keep; i++)
        hot[i] = (struct model_step_hot){hot_text(p, all[i].func),
                                         all[i].caller_ns ? hot_text(p, all[i].caller)
                                                          : report_strdup(""),
                                         all[i].self_ns / per};
    *n = keep;
    return hot;
}

void model_steps_hot(struct model_process *p)
{
    struct model_steps *st = &p->steps;
    double ratio;
    size_t warm = model_steps_warmup(st, &ratio);
    struct hot_func *all;
    size_t nall = hot_rank(p, st->steps[warm].start_ns, st->steps[st->nsteps - 1].end_ns, 0, &all);
    st->hot = hot_keep(p, all, nall, MODEL_STEPS_HOT, st->nsteps - warm, &st->nhot);
    free(all);
    nall = hot_rank(p, model_start_monotonic_ns(p), st->steps[0].start_ns, 1, &all);
    st->startup_hot = hot_keep(p, all, nall, MODEL_STEPS_STARTUP_HOT, 1, &st->nstartup_hot);
    free(all);
}

void model_steps_hot_free(struct model_step_hot *hot, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(hot[i].name);
        free(hot[i].caller);
    }
    free(hot);
}
