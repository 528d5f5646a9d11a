/* model_steps_hot: where the step thread's time goes in the steady steps (time inside the
 * steps alone), by Python function: each call's time minus that of the calls it made (calls
 * of at least PROF_PY_SPAN_US: a shorter call's time is its caller's), summed per function,
 * the MODEL_STEPS_HOT largest per steady step (the findings name a slow rank's function from
 * them); the same inside data loading (MODEL_STEPS_DATA_HOT) and outside the built-in actions
 * (MODEL_STEPS_OTHER_HOT: "other CPU"); for each of the MODEL_STEPS_SLOW slowest steps, the
 * function whose time in it exceeds its mean the most (an evaluation, a checkpoint); for the
 * startup, imports left out, the MODEL_STEPS_STARTUP_HOT largest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_steps_hot.h"
#include "sort_keys.h"

/* order[0, n), indices of p's spans, put in order: by thread when by_thread, then by start,
 * the longer first (a caller before the call that starts with it). */
static void hot_spans_sort(const struct model_process *p, size_t *order, size_t n, int by_thread)
{
    struct sort_key *keys = malloc((n + 1) * sizeof *keys);
    if (!keys)
        report_oom();
    for (size_t i = 0; i < n; i++) {
        const struct model_py_span *sp = &p->py.span_list[order[i]];
        keys[i] = (struct sort_key){{by_thread ? sp->tid : 0, sp->start, ~sp->end, 0}, order[i]};
    }
    sort_keys(keys, n, order);
    free(keys);
}

struct hot_func {
    uint32_t func;
    uint64_t self_ns;
    uint64_t steps;     /* HOT_INCLUSIVE: the steps its counted calls begin in */
    size_t last_step;   /* (the step of the last counted call + 1) */
    uint32_t caller;    /* a builtin's: the function that made its call with the most time */
    uint64_t caller_ns; /* that call's self time; 0: none */
    size_t node;        /* model_steps_worker_hot: the index of that call's node */
    uint32_t under;     /* that call's nearest caller in the program's own files, when the
                           caller is not in them (torch.save's _save): func id + 1; 0: none */
    uint32_t entry;     /* with under: the function it called on the way (torch.save) + 1 */
    uint64_t key;       /* its row's (hot_key) */
};

/* A row's key: func id + 1, and by whole calls (HOT_INCLUSIVE) a builtin's caller's + 1 << 32:
 * a slow step's time.sleep is its caller's (three callers' summed read "+50.91 ms from
 * load_part", whose own was 20 ms). */
static uint64_t hot_key(uint32_t func, const struct model_py_node *builtin_caller)
{
    return (uint64_t)func + 1 +
           (builtin_caller ? (uint64_t)builtin_caller->func + 1 : 0) * (1ull << 32);
}

/* KEY's row of FUNC in ALL (grown as needed; INDEX maps the key -> row + 1), added empty
 * the first time. */
static struct hot_func *hot_row(struct hot_func **all, size_t *nall, size_t *cap,
                                struct u64map *index, uint32_t func, uint64_t key)
{
    uint64_t *slot = u64map_slot(index, key);
    if (!slot)
        report_oom();
    if (!*slot) {
        *all = report_grow(*all, cap, *nall + 1, sizeof **all);
        (*all)[*nall] = (struct hot_func){.func = func, .key = key};
        *slot = ++*nall;
    }
    return &(*all)[*slot - 1];
}

static int hot_cmp(const void *a, const void *b)
{
    const struct hot_func *x = a, *y = b;
    if (x->self_ns != y->self_ns)
        return x->self_ns > y->self_ns ? -1 : 1;
    return x->func < y->func ? -1 : x->func > y->func;
}

const size_t *model_steps_spans_in_order(const struct model_process *p, uint32_t tid, size_t *n)
{
    const size_t *order = p->steps.span_order;
    size_t lo = 0, hi = p->py.nspan_list; /* the first of tid's, then the first after them */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->py.span_list[order[mid]].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (hi = lo; hi < p->py.nspan_list && p->py.span_list[order[hi]].tid == tid;)
        hi++;
    *n = hi - lo;
    return order + lo;
}

/* The index of the step holding ticks; SIZE_MAX: none. */
static size_t hot_step_of(const struct model_steps *st, uint64_t ticks,
                          const struct model_process *p)
{
    return model_steps_index_at(st, model_ticks_to_monotonic_ns(p, ticks));
}

/* The node's nearest caller that is a named function, not a comprehension, generator
 * expression or lambda ("f.<locals>.<listcomp>": its function is f's); NULL: none. */
static const struct model_py_node *hot_named_caller(const struct model_process *p,
                                                    const struct model_py_node *node)
{
    const struct model_py_node *up = node->parent ? model_python_node(p, node->parent) : NULL;
    for (int hops = 0; up && hops < 64; hops++) {
        const struct model_py_func *f = model_python_func(p, up->func);
        const char *q = f && f->qualname ? f->qualname : "";
        const char *last = strrchr(q, '.');
        if (!f || (last ? last[1] : q[0]) != '<')
            return up;
        up = up->parent ? model_python_node(p, up->parent) : NULL;
    }
    return up;
}

/* h->under and h->entry of a call whose caller is `caller`: the nearest function above it
 * in the program's own files (model_torch_own_file), when the caller is not in them, and
 * the library function that one called (the API the program used: torch.save). */
static void hot_own_ancestor(const struct model_process *p, const struct model_py_node *caller,
                             struct hot_func *h)
{
    const struct model_py_node *up = caller, *below = NULL;
    h->under = h->entry = 0;
    for (int hops = 0; up && hops < 256; hops++) {
        const struct model_py_func *f = model_python_func(p, up->func);
        if (f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file)) {
            if (up != caller) {
                h->under = up->func + 1;
                h->entry = below->func + 1;
            }
            return;
        }
        below = up;
        up = up->parent ? model_python_node(p, up->parent) : NULL;
    }
}

/* Which calls hot_rank counts. */
enum hot_calls {
    HOT_ALL,
    HOT_NO_IMPORTS, /* calls of the import machinery, and what they ran, count for no one */
    HOT_DATA,       /* only dataloader_next calls and what they ran */
    HOT_OTHER,      /* only calls outside the built-in actions (data loading, forward,
                       backward, optimizer step) and what they ran */
    HOT_UNDER,      /* only calls of skip (a function id) and what they ran */
    HOT_INCLUSIVE,  /* each call's whole time, not its self time: a function's outermost
                       calls only (recursion once), and only those wholly inside [lo, hi]
                       and inside one step (the loop around every step, an epoch's
                       function, a call cut by an edge: left out) */
};

/* Whether span i of a call of func runs inside another call of func on the stack. */
static int hot_recursive(const struct model_process *p, const size_t *stack, size_t top,
                         uint32_t func)
{
    for (size_t j = 0; j < top; j++) {
        const struct model_py_node *n = model_python_node(p, p->py.span_list[stack[j]].node);
        if (n && n->func == func)
            return 1;
    }
    return 0;
}

/* Whether a call of node marks its subtree for `calls`: an import, a dataloader_next. */
static int hot_marks(const struct model_process *p, uint32_t node, enum hot_calls calls)
{
    if (calls == HOT_NO_IMPORTS)
        return model_steps_is_import(p, node);
    const char *action = calls == HOT_DATA ? model_torch_action_of_node(p, node) : NULL;
    return action && !strcmp(action, "dataloader_next");
}

/* The functions of thread tid with the most self time inside [lo, hi], most first (*out,
 * their count returned), of the calls `calls` says. HOT_OTHER: skip (a function id, or 0)
 * left out with what it ran, its self time outside the built-in actions added to
 * *skipped_ns (may be NULL otherwise); HOT_UNDER: skip's calls alone. */
static size_t hot_rank(const struct model_process *p, uint32_t tid, uint64_t lo, uint64_t hi,
                       size_t from, enum hot_calls calls, uint32_t skip, uint64_t *skipped_ns,
                       struct hot_func **out)
{
    const struct model_steps *st = &p->steps;
    size_t n = 0, top = 0;
    size_t *stack = malloc((p->py.nspan_list + 1) * sizeof *stack);
    uint64_t *self = malloc((p->py.nspan_list + 1) * sizeof *self);
    uint8_t *marked = calloc(p->py.nspan_list + 1, 1);
    if (!stack || !self || !marked)
        report_oom();
    const size_t *order = model_steps_spans_in_order(p, tid, &n);
    for (size_t k = 0; k < n; k++) {
        const struct model_py_span *sp = &p->py.span_list[order[k]];
        uint64_t a = model_ticks_to_monotonic_ns(p, sp->start);
        uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
        a = a > lo ? a : lo;
        b = b < hi ? b : hi;
        /* the call's time inside [lo, hi], and in the steps from `from` on (named steps
         * leave gaps: --step forward's calls, a sleep between them) */
        uint64_t in = from == SIZE_MAX ? (b > a ? b - a : 0) : model_steps_inside(st, from, a, b);
        while (top && !(p->py.span_list[stack[top - 1]].end >= sp->end))
            top--;
        self[order[k]] = in;
        if (calls == HOT_INCLUSIVE) {
            const struct model_py_node *node = in ? model_python_node(p, sp->node) : NULL;
            uint64_t a0 = model_ticks_to_monotonic_ns(p, sp->start);
            uint64_t b0 = model_ticks_to_monotonic_ns(p, sp->end);
            uint64_t last = sp->end > sp->start ? sp->end - 1 : sp->end; /* (ends at a start) */
            size_t in_step = hot_step_of(st, sp->start, p);
            marked[order[k]] = (uint8_t)(a0 < lo || b0 > hi || in_step == SIZE_MAX ||
                                         in_step != hot_step_of(st, last, p) ||
                                         (node && hot_recursive(p, stack, top, node->func)));
        } else if (calls == HOT_OTHER) {
            if (top)
                self[stack[top - 1]] = self[stack[top - 1]] > in ? self[stack[top - 1]] - in : 0;
            /* 1: under a built-in action; 2: under skip alone */
            uint8_t up = top ? marked[stack[top - 1]] : 0;
            const struct model_py_node *node = model_python_node(p, sp->node);
            int action = model_torch_action_of_node(p, sp->node) &&
                         !model_steps_in_eval(st, model_ticks_to_monotonic_ns(p, sp->start),
                                              model_ticks_to_monotonic_ns(p, sp->end));
            marked[order[k]] = up == 1 || action                                 ? 1
                               : up == 2 || (skip && node && node->func == skip) ? 2
                                                                                 : 0;
        } else {
            if (top)
                self[stack[top - 1]] = self[stack[top - 1]] > in ? self[stack[top - 1]] - in : 0;
            const struct model_py_node *node =
                calls == HOT_UNDER ? model_python_node(p, sp->node) : NULL;
            marked[order[k]] = (uint8_t)(calls != HOT_ALL && ((top && marked[stack[top - 1]]) ||
                                                              hot_marks(p, sp->node, calls) ||
                                                              (node && node->func == skip)));
        }
        stack[top++] = order[k];
    }
    struct u64map index; /* hot_key -> index + 1 */
    u64map_init(&index);
    struct hot_func *all = NULL;
    size_t nall = 0, cap = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        const struct model_py_node *node = model_python_node(p, p->py.span_list[i].node);
        if (calls == HOT_OTHER && marked[i] == 2)
            *skipped_ns += self[i];
        if (!node || !self[i] || (marked[i] != 0) != (calls == HOT_DATA || calls == HOT_UNDER))
            continue;
        /* the caller in the call tree (one shorter than a span has none of its own): a
         * builtin's, and inside data loading any function's (a helper of the dataset's) */
        const struct model_py_func *f = model_python_func(p, node->func);
        const struct model_py_node *up = f &&
                                                 (f->kind == PROF_PY_FUNC_C || calls == HOT_DATA ||
                                                  calls == HOT_OTHER || calls == HOT_UNDER) &&
                                                 node->parent
                                             ? hot_named_caller(p, node)
                                             : NULL;
        int by_caller = calls == HOT_INCLUSIVE && f && f->kind == PROF_PY_FUNC_C;
        struct hot_func *h = hot_row(&all, &nall, &cap, &index, node->func,
                                     hot_key(node->func, by_caller ? up : NULL));
        h->self_ns += self[i];
        if (calls == HOT_INCLUSIVE) { /* spans in start order: their steps never go back */
            size_t step = hot_step_of(st, p->py.span_list[i].start, p);
            if (step + 1 != h->last_step) {
                h->steps++;
                h->last_step = step + 1;
            }
        }
        if (up && self[i] > h->caller_ns) {
            h->caller = up->func;
            h->caller_ns = self[i];
            hot_own_ancestor(p, up, h);
        }
    }
    u64map_free(&index);
    free(stack);
    free(self);
    free(marked);
    if (nall)
        qsort(all, nall, sizeof *all, hot_cmp);
    *out = all;
    return nall;
}

/* A caller's text: "_save (serialization.py:574)", and with under, where the finding's
 * reader looks (their own code, and the API it called): " under save (serialization.py:
 * 377), called from main (train.py:20)". */
static char *hot_caller_text(const struct model_process *p, const struct hot_func *h, int under)
{
    if (!h->caller_ns)
        return report_strdup("");
    char buf[3072], frame[1024];
    model_python_place(p, h->caller, buf, sizeof buf);
    if (under && h->under) {
        size_t used = strlen(buf);
        if (h->entry != h->caller + 1) {
            model_python_place(p, h->entry - 1, frame, sizeof frame);
            snprintf(buf + used, sizeof buf - used, " under %s", frame);
            used = strlen(buf);
        }
        model_python_place(p, h->under - 1, frame, sizeof frame);
        snprintf(buf + used, sizeof buf - used, ", called from %s", frame);
    }
    return report_strdup(buf);
}

/* The first `keep` of all[0, nall) as the steps keep them, their time divided by per; under:
 * a caller outside the program's own files is followed by the nearest caller in them. */
static struct model_step_hot *hot_keep(const struct model_process *p, const struct hot_func *all,
                                       size_t nall, size_t keep, uint64_t per, int under, size_t *n)
{
    keep = nall < keep ? nall : keep;
    struct model_step_hot *hot = keep ? malloc(keep * sizeof *hot) : NULL;
    if (keep && !hot)
        report_oom();
    for (size_t i = 0; i < keep; i++)
        hot[i] =
            (struct model_step_hot){model_steps_hot_text(p, all[i].func),
                                    hot_caller_text(p, &all[i], under), all[i].self_ns / per, 0, 0};
    *n = keep;
    return hot;
}

/* steps.rare_after(_ns): func's outermost calls on the step thread that start after the
 * last step's end. */
static void hot_rare_after(struct model_process *p, uint32_t func)
{
    struct model_steps *st = &p->steps;
    st->rare_after = st->rare_after_ns = 0;
    if (!st->nsteps)
        return;
    uint64_t last_end = st->steps[st->nsteps - 1].end_ns;
    size_t n = 0, *order = malloc((p->py.nspan_list + 1) * sizeof *order);
    if (!order)
        report_oom();
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        const struct model_py_span *sp = &p->py.span_list[i];
        const struct model_py_node *node = model_python_node(p, sp->node);
        if (sp->tid == st->tid && node && node->func == func &&
            model_ticks_to_monotonic_ns(p, sp->start) >= last_end)
            order[n++] = i;
    }
    hot_spans_sort(p, order, n, 0);
    uint64_t inside_until = 0;
    for (size_t k = 0; k < n; k++) {
        const struct model_py_span *sp = &p->py.span_list[order[k]];
        if (sp->end <= inside_until)
            continue; /* a recursive call inside the last one counted */
        inside_until = sp->end;
        st->rare_after++;
        uint64_t a = model_ticks_to_monotonic_ns(p, sp->start);
        uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
        st->rare_after_ns += b > a ? b - a : 0; /* (a trace's span, as written) */
    }
    free(order);
}

/* steps.rare_hot: of all[0, nall) (the steady steps' functions, whole time), the one with
 * the most time among those that run in fewer than half of the per steps and are called
 * fewer than per / 2 times in the process (the outermost periodic work: an evaluation, a
 * checkpoint). */
static uint32_t hot_rare(struct model_process *p, const struct hot_func *all, size_t nall,
                         uint64_t per)
{
    /* its calls too, not only its long ones: a function run every step and long in a few
     * (a loader's __next__ that sometimes waits) is no periodic work */
    struct u64map calls; /* func id -> calls in the process, for the candidates */
    u64map_init(&calls);
    for (size_t i = 0; i < nall; i++)
        if (all[i].steps * 2 < per && !u64map_slot(&calls, all[i].func))
            report_oom();
    for (size_t i = 0; i < p->py.nnodes && calls.count; i++) {
        uint64_t *c = u64map_find(&calls, p->py.nodes[i].func);
        if (c)
            *c += p->py.nodes[i].calls;
    }
    const struct hot_func *rare = NULL, *own = NULL;
    for (size_t i = 0; i < nall; i++) {
        const uint64_t *c = all[i].steps * 2 < per ? u64map_find(&calls, all[i].func) : NULL;
        if (!c || *c * 2 >= per)
            continue;
        if (!rare || all[i].self_ns > rare->self_ns)
            rare = &all[i];
        const struct model_py_func *f = model_python_func(p, all[i].func);
        if (f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file) &&
            (!own || all[i].self_ns > own->self_ns))
            own = &all[i];
    }
    /* a library's wrapper around the program's function (@torch.no_grad()'s
     * decorate_context around validate): the program's, with 9/10 of the time at least */
    if (own && own->self_ns * 10 >= rare->self_ns * 9)
        rare = own;
    u64map_free(&calls);
    if (!rare)
        return 0;
    struct model_steps *st = &p->steps;
    st->rare_hot = malloc(sizeof *st->rare_hot);
    if (!st->rare_hot)
        report_oom();
    st->rare_hot[0] = (struct model_step_hot){model_steps_hot_text(p, rare->func),
                                              report_strdup(""), rare->self_ns, rare->steps, 0};
    st->nrare_hot = 1;
    hot_rare_after(p, rare->func);
    return rare->func;
}

/* steps.rare_hot[1]: inside the periodic work's calls (rare, rare_hot[0]) in [lo, hi], the
 * function with the most self time, when it is another and holds >= 1/4 of the work's
 * time (time.sleep in a metric inside validate()). */
static void hot_rare_inside(struct model_process *p, size_t warm, uint32_t rare)
{
    struct model_steps *st = &p->steps;
    struct hot_func *in;
    size_t n = hot_rank(p, st->tid, st->steps[warm].start_ns, st->steps[st->nsteps - 1].end_ns,
                        warm, HOT_UNDER, rare, NULL, &in);
    if (n && in[0].func != rare && in[0].self_ns * 4 >= st->rare_hot[0].self_ns) {
        struct model_step_hot *grown = realloc(st->rare_hot, 2 * sizeof *grown);
        if (!grown)
            report_oom();
        st->rare_hot = grown;
        /* (its calls cut by the steps' edges count here, not in the work's time: at most it) */
        uint64_t self =
            in[0].self_ns < st->rare_hot[0].self_ns ? in[0].self_ns : st->rare_hot[0].self_ns;
        st->rare_hot[1] = (struct model_step_hot){
            model_steps_hot_text(p, in[0].func),
            in[0].caller_ns ? model_steps_hot_text(p, in[0].caller) : report_strdup(""), self, 0,
            0};
        st->nrare_hot = 2;
    }
    free(in);
}

/* A candidate's class: rare (2) and own file (1) rank first. */
static int hot_class(const struct model_process *p, const struct hot_func *steady, uint32_t func,
                     uint64_t per)
{
    const struct model_py_func *f = model_python_func(p, func);
    int rare = !steady || steady->steps * 2 < per;
    return 2 * rare + (f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file));
}

/* hot_slow's choice among in[0, nin) (one step's functions; all: the steady steps', at: func
 * -> index in all + 1), its excess in *over; NULL: none exceeds its mean. */
static const struct hot_func *hot_culprit(const struct model_process *p, const struct hot_func *in,
                                          size_t nin, const struct hot_func *all,
                                          const struct u64map *at, uint64_t per, uint64_t step_ns,
                                          uint64_t *over)
{
    uint64_t *excess = malloc((nin + 1) * sizeof *excess);
    int *cls = malloc((nin + 1) * sizeof *cls);
    if (!excess || !cls)
        report_oom();
    uint64_t most = 0;
    for (size_t i = 0; i < nin; i++) {
        const uint64_t *k = u64map_find(at, in[i].key);
        const struct hot_func *steady = k ? &all[*k - 1] : NULL;
        uint64_t avg = steady ? steady->self_ns / per : 0;
        /* a call as long as the step is the step (--step one_iter's own function): it
         * explains nothing (a review's step 6.6 ms over the median read one_iter +17.36 ms) */
        excess[i] = in[i].self_ns > avg && in[i].self_ns < step_ns ? in[i].self_ns - avg : 0;
        cls[i] = hot_class(p, steady, in[i].func, per);
        most = excess[i] > most ? excess[i] : most;
    }
    int best_cls = -1;
    uint64_t cls_most = 0;
    for (size_t i = 0; i < nin; i++)
        if (excess[i] && excess[i] * 2 >= most &&
            (cls[i] > best_cls || (cls[i] == best_cls && excess[i] > cls_most))) {
            best_cls = cls[i];
            cls_most = excess[i];
        }
    const struct hot_func *pick = NULL;
    for (size_t i = 0; i < nin; i++)
        if (cls[i] == best_cls && excess[i] && excess[i] * 10 >= cls_most * 9 &&
            (!pick || in[i].self_ns < pick->self_ns ||
             (in[i].self_ns == pick->self_ns && in[i].func < pick->func))) {
            pick = &in[i];
            *over = excess[i];
        }
    free(excess);
    free(cls);
    return pick;
}

/* Of the steady steps from index warm on, the MODEL_STEPS_SLOW slowest, each with the
 * function that explains its excess: from the functions whose whole time in the step
 * (HOT_INCLUSIVE) exceeds their mean per steady step by at least half the largest such
 * excess, one that runs in fewer than half the steps first (an evaluation, a checkpoint:
 * not the model's forward its own forward calls also go to), then one of the program's own
 * files (not torch's, the standard library's), then the innermost of those within 10 % of
 * their class's largest excess (the least whole time: of wrappers around the same work,
 * the one that does it); slowest first. Returns the periodic work's function (hot_rare),
 * or 0. all: the steady steps' ranking by whole calls (HOT_INCLUSIVE). */
static uint32_t hot_slow(struct model_process *p, size_t warm, const struct hot_func *all,
                         size_t nall)
{
    struct model_steps *st = &p->steps;
    uint64_t per = st->nsteps - warm;
    struct u64map at; /* hot_key -> its index in all + 1 */
    u64map_init(&at);
    for (size_t i = 0; i < nall; i++) {
        uint64_t *slot = u64map_slot(&at, all[i].key);
        if (!slot)
            report_oom();
        *slot = i + 1;
    }
    st->slow_hot = calloc(MODEL_STEPS_SLOW, sizeof *st->slow_hot);
    if (!st->slow_hot)
        report_oom();
    uint64_t gc_mean = st->gc_ns; /* (model_steps_gc_totals: inside the steps alone) */
    size_t taken[MODEL_STEPS_SLOW];
    for (size_t r = 0; r < MODEL_STEPS_SLOW; r++) {
        size_t best = SIZE_MAX;
        for (size_t i = warm; i < st->nsteps; i++) {
            int seen = 0;
            for (size_t k = 0; k < r; k++)
                seen |= taken[k] == i;
            if (!seen &&
                (best == SIZE_MAX || st->steps[i].end_ns - st->steps[i].start_ns >
                                         st->steps[best].end_ns - st->steps[best].start_ns))
                best = i;
        }
        if (best == SIZE_MAX)
            break;
        taken[r] = best;
        struct hot_func *in;
        size_t nin = hot_rank(p, st->tid, st->steps[best].start_ns, st->steps[best].end_ns,
                              SIZE_MAX, HOT_INCLUSIVE, 0, NULL, &in);
        uint64_t top_over = 0;
        const struct hot_func *top =
            hot_culprit(p, in, nin, all, &at, per,
                        st->steps[best].end_ns - st->steps[best].start_ns, &top_over);
        /* a collection's pause is the function's that allocated then: said as the GC's
         * when it holds half that function's excess */
        int gen;
        uint64_t gc =
            model_steps_gc_in(p, st->tid, st->steps[best].start_ns, st->steps[best].end_ns, &gen);
        if (gc > gc_mean && (gc - gc_mean) * 2 >= top_over) {
            char name[64];
            snprintf(name, sizeof name, MODEL_STEPS_GC_NAME " (generation %d)", gen);
            st->slow_hot[st->nslow_hot++] = (struct model_step_hot){
                report_strdup(name), report_strdup(""), gc - gc_mean, st->steps[best].number, 0};
        } else if (top) {
            struct model_step_hot *h = &st->slow_hot[st->nslow_hot++];
            *h = (struct model_step_hot){model_steps_hot_text(p, top->func),
                                         top->caller_ns ? model_steps_hot_text(p, top->caller)
                                                        : report_strdup(""),
                                         top_over, st->steps[best].number, 0};
        }
        free(in);
    }
    u64map_free(&at);
    return hot_rare(p, all, nall, per);
}

/* The DataLoader iterator whose calls took the most time in all[0, nall) (data loading's
 * functions). */
static uint8_t hot_loader(const struct model_process *p, const struct hot_func *all, size_t nall)
{
    uint64_t ns[3] = {0};
    for (size_t i = 0; i < nall; i++) {
        const struct model_py_func *f = model_python_func(p, all[i].func);
        const char *q = f && f->qualname ? f->qualname : "";
        if (!strncmp(q, "_SingleProcessDataLoaderIter.", 29))
            ns[MODEL_STEPS_LOADER_SINGLE] += all[i].self_ns + 1;
        else if (!strncmp(q, "_MultiProcessingDataLoaderIter.", 31))
            ns[MODEL_STEPS_LOADER_WORKERS] += all[i].self_ns + 1;
    }
    return ns[MODEL_STEPS_LOADER_WORKERS] > ns[MODEL_STEPS_LOADER_SINGLE]
               ? MODEL_STEPS_LOADER_WORKERS
           : ns[MODEL_STEPS_LOADER_SINGLE] ? MODEL_STEPS_LOADER_SINGLE
                                           : MODEL_STEPS_LOADER_UNKNOWN;
}

/* The startup's thread: the one whose calls cover the most time before the first step
 * (hi), the step thread on a tie; in *imports the time its importlib calls cover there. A
 * loop trained on another thread has its startup (imports, model set-up) on the main one. */
static uint32_t hot_startup_thread(const struct model_process *p, uint64_t hi, uint64_t *imports)
{
    size_t n = p->py.nspan_list;
    const size_t *order = p->steps.span_order;
    uint32_t best = p->steps.tid;
    uint64_t best_ns = 0;
    *imports = 0;
    for (size_t i = 0; i < n;) {
        uint32_t tid = p->py.span_list[order[i]].tid;
        uint64_t all = 0, imp = 0, end = 0, imp_end = 0; /* unions, by start */
        for (; i < n && p->py.span_list[order[i]].tid == tid; i++) {
            const struct model_py_span *sp = &p->py.span_list[order[i]];
            uint64_t a = model_ticks_to_monotonic_ns(p, sp->start);
            uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
            b = b < hi ? b : hi;
            if (b <= a)
                continue;
            if (b > end) {
                all += b - (a > end ? a : end);
                end = b;
            }
            if (b > imp_end && model_steps_is_import(p, sp->node)) {
                imp += b - (a > imp_end ? a : imp_end);
                imp_end = b;
            }
        }
        if (all > best_ns || (all == best_ns && tid == p->steps.tid)) {
            best = tid;
            best_ns = all;
            *imports = imp;
        }
    }
    return best;
}

/* steps.hot's comprehensions, lambdas and generator expressions: the function each is
 * written in (caller) and that function's whole time per steady step (outer_ns), from its
 * calls of at least PROF_PY_SPAN_US; only when that holds the comprehension's own time (a
 * review's finding named a list comprehension alone, and the third of its function's time
 * in a torch.tensor it called went unseen). all: the ranking st->hot was kept from; in:
 * the ranking by whole calls (HOT_INCLUSIVE). */
static void hot_outer(struct model_process *p, const struct hot_func *all,
                      const struct hot_func *in, size_t nin, uint64_t per)
{
    struct model_steps *st = &p->steps;
    for (size_t i = 0; i < st->nhot; i++) {
        const struct model_py_func *f = model_python_func(p, all[i].func);
        const char *q = f && f->qualname ? f->qualname : "", *locals = strstr(q, ".<locals>.<");
        const struct model_py_node *outer = NULL;
        for (size_t k = 0; locals && k < p->py.nnodes && !outer; k++)
            if (p->py.nodes[k].func == all[i].func)
                outer = hot_named_caller(p, &p->py.nodes[k]);
        const struct model_py_func *of = outer ? model_python_func(p, outer->func) : NULL;
        size_t n = locals ? (size_t)(locals - q) : 0;
        if (!of || !of->qualname || strlen(of->qualname) != n || strncmp(of->qualname, q, n))
            continue; /* not the function it is written in (a builtin it was passed to) */
        for (size_t k = 0; k < nin; k++)
            if (in[k].func == outer->func && in[k].self_ns / per >= st->hot[i].self_ns) {
                free(st->hot[i].caller);
                st->hot[i].caller = model_steps_hot_text(p, outer->func);
                st->hot[i].outer_ns = in[k].self_ns / per;
            }
    }
}

/* steps.data_hot's whole calls' time per steady step (outer_ns), when more than their self
 * time (a review's collate_fn read 2.72 ms of its 3.89, its torch.tensor calls apart).
 * all: the ranking data_hot was kept from; in: the ranking by whole calls (HOT_INCLUSIVE). */
static void hot_data_whole(struct model_process *p, const struct hot_func *all,
                           const struct hot_func *in, size_t nin, uint64_t per)
{
    struct model_steps *st = &p->steps;
    for (size_t i = 0; i < st->ndata_hot; i++)
        for (size_t k = 0; k < nin; k++)
            if (in[k].func == all[i].func && in[k].self_ns / per > st->data_hot[i].self_ns)
                st->data_hot[i].outer_ns = in[k].self_ns / per;
}

void model_steps_hot(struct model_process *p)
{
    struct model_steps *st = &p->steps;
    st->span_order = malloc((p->py.nspan_list + 1) * sizeof *st->span_order);
    if (!st->span_order)
        report_oom();
    for (size_t i = 0; i < p->py.nspan_list; i++)
        st->span_order[i] = i;
    hot_spans_sort(p, st->span_order, p->py.nspan_list, 1); /* once, not per ranking */
    double ratio;
    size_t warm = model_steps_warmup(st, &ratio);
    uint64_t lo = st->steps[warm].start_ns, hi = st->steps[st->nsteps - 1].end_ns;
    uint64_t per = st->nsteps - warm;
    struct hot_func *all;
    size_t nall = hot_rank(p, st->tid, lo, hi, warm, HOT_ALL, 0, NULL, &all);
    st->hot = hot_keep(p, all, nall, MODEL_STEPS_HOT, per, 1, &st->nhot);
    struct hot_func *whole; /* each function's whole calls: read by three of the rankings */
    size_t nwhole = hot_rank(p, st->tid, lo, hi, warm, HOT_INCLUSIVE, 0, NULL, &whole);
    hot_outer(p, all, whole, nwhole, per);
    free(all);
    model_steps_gc_totals(p, warm); /* (before hot_slow, which reads its mean) */
    uint32_t rare = hot_slow(p, warm, whole, nwhole);
    if (rare) /* what takes the periodic work's time: its second entry */
        hot_rare_inside(p, warm, rare);
    nall = hot_rank(p, st->tid, lo, hi, warm, HOT_DATA, 0, NULL, &all);
    st->data_hot = hot_keep(p, all, nall, MODEL_STEPS_DATA_HOT, per, 1, &st->ndata_hot);
    hot_data_whole(p, all, whole, nwhole, per);
    free(whole);
    st->loader = hot_loader(p, all, nall);
    free(all);
    uint64_t rare_other = 0; /* the periodic work is said apart */
    nall = hot_rank(p, st->tid, lo, hi, warm, HOT_OTHER, rare, &rare_other, &all);
    st->other_hot = hot_keep(p, all, nall, MODEL_STEPS_OTHER_HOT, per, 1, &st->nother_hot);
    st->rare_other_ns = rare_other / per;
    free(all);
    model_steps_comm_hot(p, warm, per);
    uint64_t imports;
    uint32_t tid = st->startup_tid = hot_startup_thread(p, st->steps[0].start_ns, &imports);
    if (tid != st->tid) /* (the step thread's were summed with its parts) */
        st->startup_import_ns = imports;
    if (!model_start_unrecorded(p)) { /* else what ran before the recording is not known */
        nall = hot_rank(p, tid, model_start_monotonic_ns(p), st->steps[0].start_ns, SIZE_MAX,
                        HOT_NO_IMPORTS, 0, NULL, &all);
        st->startup_hot = hot_keep(p, all, nall, MODEL_STEPS_STARTUP_HOT, 1, 0, &st->nstartup_hot);
        free(all);
    }
    model_steps_threads(p, warm, per);
    free(st->span_order);
    st->span_order = NULL;
}

int model_steps_idle_wait(const struct model_py_func *f)
{
    static const char *const waits[] = {"'_thread.lock'", "'_thread.RLock'", "select.poll",
                                        "select.epoll", "select.select"};
    for (size_t i = 0; f->kind == PROF_PY_FUNC_C && f->name && i < sizeof waits / sizeof *waits;
         i++)
        if (strstr(f->name, waits[i]))
            return 1;
    return 0;
}

/* h's caller as the data-loading finding says it: "called from" its caller when that is in
 * the program's own files, or none is; else "under" the nearest such above it (a numpy
 * builtin under the dataset's transform). */
static void hot_worker_caller(const struct model_process *p, const struct hot_func *top,
                              struct model_step_hot *h)
{
    if (!top->caller_ns)
        return;
    const struct model_py_node *named = hot_named_caller(p, &p->py.nodes[top->node]);
    struct hot_func own = *top;
    hot_own_ancestor(p, named, &own);
    char text[1100], frame[1024];
    model_python_place(p, own.under ? own.under - 1 : named->func, frame, sizeof frame);
    snprintf(text, sizeof text, "%s %s", own.under ? "under" : "called from", frame);
    free(h->caller);
    h->caller = report_strdup(text);
}

void model_steps_worker_hot(struct model_process *p)
{
    const char *role = model_meta_get(p, "role"), *kind = model_meta_get(p, "worker_kind");
    if (!role || strcmp(role, "worker") || !kind || strcmp(kind, "dataloader") || p->pid < 0)
        return;
    /* its main thread's (the others feed queues and share memory: they wait) nodes by
     * function: self time, and the node with the most of it (its caller is the caller) */
    struct u64map at; /* func id + 1 -> index in all + 1 */
    u64map_init(&at);
    struct hot_func *all = NULL;
    size_t nall = 0, cap = 0;
    uint64_t busy = 0;
    uint8_t *imported = calloc(p->py.nnodes + 1, 1); /* an import or under one */
    if (!imported)
        report_oom();
    for (size_t i = 0; i < p->py.nnodes; i++) { /* (a parent is made before its children) */
        const struct model_py_node *n = &p->py.nodes[i];
        const struct model_py_node *parent = n->parent ? model_python_node(p, n->parent) : NULL;
        imported[i] = (parent && parent < n && imported[parent - p->py.nodes]) ||
                      model_steps_is_import(p, n->id);
        const struct model_py_func *f = model_python_func(p, n->func);
        if ((int64_t)n->tid != p->pid || !n->self_ns || !f || model_steps_idle_wait(f) ||
            imported[i])
            continue;
        struct hot_func *h = hot_row(&all, &nall, &cap, &at, n->func, hot_key(n->func, NULL));
        h->self_ns += n->self_ns;
        busy += n->self_ns;
        const struct model_py_node *up = n->parent ? hot_named_caller(p, n) : NULL;
        if (up && n->self_ns > h->caller_ns) {
            h->caller = up->func;
            h->caller_ns = n->self_ns;
            h->node = i;
        }
    }
    u64map_free(&at);
    free(imported);
    if (nall)
        qsort(all, nall, sizeof *all, hot_cmp);
    p->steps.worker_hot =
        hot_keep(p, all, nall, MODEL_STEPS_WORKER_HOT, 1, 0, &p->steps.nworker_hot);
    for (size_t i = 0; i < p->steps.nworker_hot; i++)
        hot_worker_caller(p, &all[i], &p->steps.worker_hot[i]);
    if (p->steps.nworker_hot)
        p->steps.worker_hot[0].step = busy;
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
