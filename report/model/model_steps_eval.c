/* model_steps_eval: evaluation inside the training steps (model_steps.h, steps.evals). A
 * loop that evaluates every N steps runs the model under torch.no_grad() or
 * torch.inference_mode() between two optimizer steps: those Module calls are no part of
 * the step's forward. The Python layer keeps the spans of those context managers'
 * __enter__ and __exit__ (python_phase_classify); a region runs from an outermost
 * __enter__'s end to its __exit__'s start on the step thread, and counts as evaluation
 * when a forward (a Module call, a loss, DDP's forward scope) begins inside it, it lies
 * inside one step, and the regions opened from the same place (the __enter__'s call path)
 * come in at most a quarter of the steps. A no_grad forward in more steps is training work:
 * a frozen backbone's, a distillation teacher's, a GAN's generator for its discriminator
 * (every other step when its two optimizer steps are two steps). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_steps_find.h"

struct eval_edge {
    uint64_t t;
    int delta;     /* +1 an __enter__ ended, -1 an __exit__ began */
    uint32_t node; /* the call's node */
};

static int eval_edge_cmp(const void *a, const void *b)
{
    const struct eval_edge *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* an exit before an enter at the same instant */
}

/* +1 for torch.no_grad's or torch.inference_mode's __enter__, -1 for their __exit__, 0
 * otherwise (enable_grad, set_grad_enabled and the rest of grad_mode.py are not regions).
 * Before 3.11 a function's qualified name is known from the program's exit on; until then
 * it is its name, and any of grad_mode.py's context managers counts. */
static int eval_edge_of(const struct model_process *p, uint32_t node)
{
    const struct model_py_node *n = model_python_node(p, node);
    const struct model_py_func *f = n ? model_python_func(p, n->func) : NULL;
    if (!f || f->kind != PROF_PY_FUNC_PYTHON || !f->name || !f->file || !f->qualname)
        return 0;
    size_t len = strlen(f->file), k = strlen("torch/autograd/grad_mode.py");
    if (len < k || strcmp(f->file + len - k, "torch/autograd/grad_mode.py"))
        return 0;
    int delta = !strcmp(f->name, "__enter__") ? 1 : !strcmp(f->name, "__exit__") ? -1 : 0;
    const char *dot = strrchr(f->qualname, '.');
    if (!delta || !dot)
        return strcmp(f->qualname, f->name) ? 0 : delta;
    size_t cls = (size_t)(dot - f->qualname);
    return (cls == 7 && !strncmp(f->qualname, "no_grad", cls)) ||
                   (cls == 14 && !strncmp(f->qualname, "inference_mode", cls))
               ? delta
               : 0;
}

/* The regions of thread tid, disjoint, in time order (pairs of CLOCK_MONOTONIC ns), and
 * the node of the __enter__ that opened each (*sites). */
static size_t eval_regions(const struct model_process *p, uint32_t tid, uint64_t (**out)[2],
                           uint32_t **sites)
{
    struct eval_edge *e = NULL;
    size_t n = 0, cap = 0;
    struct u64map edges = {0}; /* node + 1 -> its edge + 2 */
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        if (sp->tid != tid)
            continue;
        uint64_t *slot = u64map_slot(&edges, (uint64_t)sp->node + 1);
        if (!slot)
            report_oom();
        if (!*slot)
            *slot = (uint64_t)(eval_edge_of(p, sp->node) + 2);
        int d = (int)*slot - 2;
        if (!d)
            continue;
        e = report_grow(e, &cap, n + 1, sizeof *e);
        e[n++] = (struct eval_edge){model_ticks_to_monotonic_ns(p, d > 0 ? sp->end : sp->start), d,
                                    sp->node};
    }
    u64map_free(&edges);
    if (n)
        qsort(e, n, sizeof *e, eval_edge_cmp);
    uint64_t(*r)[2] = NULL;
    uint32_t *site = NULL;
    size_t nr = 0, rcap = 0, scap = 0;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].delta > 0 && depth++ == 0) {
            r = report_grow(r, &rcap, nr + 1, sizeof *r);
            site = report_grow(site, &scap, nr + 1, sizeof *site);
            r[nr][0] = e[i].t;
            site[nr] = e[i].node;
        } else if (e[i].delta < 0 && depth > 0 && --depth == 0)
            r[nr++][1] = e[i].t;
    }
    free(e);
    *out = r;
    *sites = site;
    return nr; /* (one never closed is left out) */
}

/* The index of the region holding t, or n. */
static size_t eval_holding(uint64_t (*r)[2], size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first starting after t */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid][0] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t < r[lo - 1][1] ? lo - 1 : n;
}

/* Marks the regions a forward begins in (with[i] = 1). */
static void eval_mark_forwards(const struct model_process *p, uint32_t tid, uint64_t (*r)[2],
                               size_t n, uint8_t *with)
{
    struct u64map phase = {0}; /* node + 1 -> phase + 2 */
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        if (sp->tid != tid)
            continue;
        uint64_t *slot = u64map_slot(&phase, (uint64_t)sp->node + 1);
        if (!slot)
            report_oom();
        if (!*slot)
            *slot = (uint64_t)(model_steps_python_phase(p, sp->node) + 2);
        size_t k = *slot == MODEL_STEP_FORWARD + 2
                       ? eval_holding(r, n, model_ticks_to_monotonic_ns(p, sp->start))
                       : n;
        if (k < n)
            with[k] = 1;
    }
    u64map_free(&phase);
    for (size_t i = 0; i < p->torch.nops; i++) {
        const struct model_torch_op *op = &p->torch.ops[i];
        if (op->tid != tid || op->scope != MODEL_TORCH_SCOPE_USER)
            continue;
        const char *name = u64map_get_ptr(&p->strings, op->name_sid);
        size_t k = model_steps_scope_phase(name) == MODEL_STEP_FORWARD
                       ? eval_holding(r, n, model_ticks_to_monotonic_ns(p, op->start))
                       : n;
        if (k < n)
            with[k] = 1;
    }
}

/* The steps holding the regions of each site (node + 1 -> count), each step once; those
 * after the last step (in[i] 2) count none. */
static void eval_count_steps(const struct model_steps *st, uint64_t (*r)[2], const uint32_t *site,
                             const uint8_t *in, size_t n, struct u64map *steps)
{
    struct u64map last = {0}; /* node + 1 -> the last step counted + 1 (regions in order) */
    for (size_t i = 0; i < n; i++) {
        if (in[i] != 1)
            continue;
        uint64_t *c = u64map_slot(steps, (uint64_t)site[i] + 1);
        uint64_t *l = u64map_slot(&last, (uint64_t)site[i] + 1);
        if (!c || !l)
            report_oom();
        size_t s = model_steps_index_at(st, r[i][0]);
        if (*l != s + 1)
            (*c)++;
        *l = s + 1;
    }
    u64map_free(&last);
}

void model_steps_evals(struct model_process *p)
{
    struct model_steps *st = &p->steps;
    uint64_t(*r)[2] = NULL;
    uint32_t *site = NULL;
    size_t n = st->nsteps ? eval_regions(p, st->tid, &r, &site) : 0;
    uint8_t *with = calloc(n + 1, 1);
    if (!with)
        report_oom();
    if (n)
        eval_mark_forwards(p, st->tid, r, n, with);
    size_t kept = 0;
    uint64_t last_end = st->nsteps ? st->steps[st->nsteps - 1].end_ns : 0;
    for (size_t i = 0; i < n; i++) {
        /* inside one step: one across a step's end holds an optimizer step (or lost the
         * __exit__ that closed it: events the ring dropped); after the last: kept apart */
        size_t s = model_steps_index_at(st, r[i][0]);
        int after = r[i][0] >= last_end;
        if (!with[i] || (!after && (s == SIZE_MAX || s != model_steps_index_at(st, r[i][1] - 1))))
            continue;
        memmove(r[kept], r[i], sizeof *r);
        with[kept] = (uint8_t)(after ? 2 : 1);
        site[kept++] = site[i];
    }
    /* by site (the __enter__'s call path: a teacher's in the loop, validate()'s), those in
     * at most a quarter of the steps: in more, the training's own (a teacher every step, a
     * GAN's generator every other step when its two optimizer steps are two steps) */
    struct u64map steps = {0};
    eval_count_steps(st, r, site, with, kept, &steps);
    size_t evals = 0;
    st->eval_after_ns = 0;
    for (size_t i = 0; i < kept; i++) {
        const uint64_t *c = u64map_find(&steps, (uint64_t)site[i] + 1);
        if (!c || !*c || *c * 4 > st->nsteps)
            continue;
        if (with[i] == 2) /* after the last step, of a call path that evaluates in them */
            st->eval_after_ns += r[i][1] - r[i][0];
        else
            memmove(r[evals++], r[i], sizeof *r);
    }
    u64map_free(&steps);
    free(with);
    free(site);
    if (!evals) {
        free(r);
        r = NULL;
    }
    st->evals = r;
    st->nevals = evals;
}

int model_steps_in_eval(const struct model_steps *st, uint64_t start_ns, uint64_t end_ns)
{
    size_t k = eval_holding(st->evals, st->nevals, start_ns);
    return k < st->nevals && end_ns <= st->evals[k][1];
}
