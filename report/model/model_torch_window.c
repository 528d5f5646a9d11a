/* model_torch_window: the operator rows of one part of a process (profreport --phase): the
 * steady training steps (the default), every step, or the startup before the first step.
 *
 * The op trees (model_torch.c) are cumulative over the whole process, so a part's rows come
 * from the spans: every op that began and ended inside the part, on any thread, with its
 * self time, CUDA time and memory as model_torch_finish worked them out over all the ops,
 * and torch's key_averages() rule applied as the trees apply it (an op that is the only
 * child of an op of its name is folded into it, its self time and memory with it). That
 * is exact only when the timeline kept every op: when the ring dropped anything in the
 * process, or the process has no steps, the rows stay the whole process's and
 * torch.window_miss says why. An op that crosses the part's edges (an epoch's scope) is
 * not in it. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"

static enum model_window window_asked = MODEL_WINDOW_ALL;

void model_torch_set_window(enum model_window w)
{
    window_asked = w;
}

enum model_window model_torch_window_asked(void)
{
    return window_asked;
}

const struct model_torch_row *model_torch_whole_rows(const struct model_torch *t, size_t *n)
{
    *n = t->whole_rows ? t->nwhole_rows : t->nrows;
    return t->whole_rows ? t->whole_rows : t->rows;
}

int model_torch_ran_backward(const struct model_torch *t)
{
    static const char node[] = "autograd::engine::evaluate_function:";
    size_t n;
    const struct model_torch_row *r = model_torch_whole_rows(t, &n);
    for (size_t i = 0; i < n; i++)
        if (r[i].name && !strncmp(r[i].name, node, sizeof node - 1))
            return 1;
    return 0;
}

const char *model_window_name(unsigned w)
{
    switch (w) {
    case MODEL_WINDOW_STEADY:
        return "the steady training steps";
    case MODEL_WINDOW_STEPS:
        return "the training steps, warm-up included";
    case MODEL_WINDOW_STARTUP:
        return "the startup, before the first training step";
    default:
        return "the whole process";
    }
}

const char *model_window_miss_text(unsigned miss)
{
    switch (miss) {
    case MODEL_WINDOW_MISS_NO_STEPS:
        return "no training steps";
    case MODEL_WINDOW_MISS_DROPPED:
        return "the ring dropped events (raise PROF_RING_KB), so the spans do not hold every op";
    case MODEL_WINDOW_MISS_CALLS:
        return "the ring dropped events (raise PROF_RING_KB), so not every call is known";
    case MODEL_WINDOW_MISS_SUMMARY:
        return "read from its summary, which holds the steady steps and the whole process only";
    case MODEL_WINDOW_MISS_REOPENED:
        return "the capture window opened more than once, and what was freed while it was "
               "closed is unknown";
    default:
        return "";
    }
}

int model_window_bounds(const struct model_process *p, uint64_t *lo, uint64_t *hi, size_t *nsteps)
{
    const struct model_steps *st = &p->steps;
    if (!st->nsteps || !st->steps)
        return 0;
    double ratio;
    size_t first = window_asked == MODEL_WINDOW_STEADY ? model_steps_warmup(st, &ratio) : 0;
    uint64_t start = st->steps[first].start_ns, end = st->steps[st->nsteps - 1].end_ns;
    *nsteps = st->nsteps - first;
    if (window_asked == MODEL_WINDOW_STARTUP) {
        end = start;
        start = model_start_monotonic_ns(p);
        start = start < end ? start : end;
        *nsteps = 0;
    }
    *lo = start;
    *hi = end;
    return 1;
}

struct model_torch_self *model_torch_fold(const struct model_torch *t, const size_t *order,
                                          size_t *stack)
{
    size_t *parent = malloc(t->nops * sizeof *parent); /* index + 1; 0: none */
    size_t *kids = calloc(t->nops, sizeof *kids);
    struct model_torch_self *self = malloc(t->nops * sizeof *self);
    if (!parent || !kids || !self)
        report_oom();
    size_t top = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[order[i]];
        if (i && op->tid != t->ops[order[i - 1]].tid)
            top = 0;
        while (top && !(t->ops[stack[top - 1]].start <= op->start &&
                        op->end <= t->ops[stack[top - 1]].end))
            top--;
        parent[order[i]] = top ? stack[top - 1] + 1 : 0;
        if (top)
            kids[stack[top - 1]]++;
        stack[top++] = order[i];
        self[order[i]] =
            (struct model_torch_self){op->self_ticks,   op->self_cuda_ns, op->self_kernels,
                                      op->self_cpu_mem, op->self_dev_mem, 0};
    }
    /* Children before parents, so that a chain of one name folds whole into its top. Only
     * with op trees, which fold so (older traces' tables count every op). */
    for (size_t i = t->nnodes ? t->nops : 0; i-- > 0;) {
        size_t x = order[i], up = parent[x];
        if (!up || kids[up - 1] != 1 || t->ops[up - 1].name_sid != t->ops[x].name_sid)
            continue;
        struct model_torch_self *s = &self[x], *u = &self[up - 1];
        s->folded = 1;
        u->ticks += s->ticks;
        u->cuda_ns += s->cuda_ns;
        u->kernels += s->kernels;
        u->cpu_mem = model_i64_add(u->cpu_mem, s->cpu_mem);
        u->dev_mem = model_i64_add(u->dev_mem, s->dev_mem);
    }
    free(parent);
    free(kids);
    return self;
}

void model_torch_rows_of_spans(struct model_process *p, const struct model_torch_self *self,
                               uint64_t lo, uint64_t hi)
{
    struct model_torch *t = &p->torch;
    t->rows = NULL;
    t->nrows = 0;
    size_t cap = 0;
    struct u64map index; /* name_sid << 32 | shapes_sid -> index + 1 */
    u64map_init(&index);
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        if (self[i].folded || model_ticks_to_monotonic_ns(p, op->start) < lo ||
            model_ticks_to_monotonic_ns(p, op->end) > hi)
            continue; /* in the steps' clock: a step's end is an op's, converted */
        struct model_torch_row *r =
            model_torch_row_of(p, &index, &cap, op->name_sid, op->shapes_sid, op->scope);
        r->calls++;
        r->self_cpu_ticks += self[i].ticks;
        r->cpu_total_ticks += op->end - op->start;
        r->self_cuda_ns += self[i].cuda_ns;
        r->cuda_total_ns += op->cuda_ns;
        r->kernels += op->kernels;
        r->self_cpu_mem = model_i64_add(r->self_cpu_mem, self[i].cpu_mem);
        r->cpu_mem = model_i64_add(r->cpu_mem, op->cpu_mem);
        r->self_dev_mem = model_i64_add(r->self_dev_mem, self[i].dev_mem);
        r->dev_mem = model_i64_add(r->dev_mem, op->dev_mem);
    }
    u64map_free(&index);
    for (size_t i = 0; i < t->nrows; i++) {
        struct model_torch_row *r = &t->rows[i];
        r->self_cpu_ns = model_ticks_to_ns(p, r->self_cpu_ticks);
        r->cpu_total_ns = model_ticks_to_ns(p, r->cpu_total_ticks);
    }
}

void model_torch_window_rows(struct model_process *p, const struct model_torch_self *self)
{
    struct model_torch *t = &p->torch;
    uint64_t lo, hi;
    size_t nsteps = 0;
    if (window_asked == MODEL_WINDOW_ALL || !t->nrows)
        return;
    if (!model_window_bounds(p, &lo, &hi, &nsteps)) {
        t->window_miss = MODEL_WINDOW_MISS_NO_STEPS;
        return;
    }
    /* Every op's span, and every tensor allocation: with op trees their counts say it;
     * without, any event lost may be one of them. */
    int lost = t->nnodes ? t->records < t->spans_expected : p->lost || p->end_lost;
    lost |= t->memory.records_lost > 0;
    for (size_t i = 0; i < t->ndevices; i++)
        lost |= t->devices[i].records_lost > 0;
    if (lost || !t->nops || !self) {
        t->window_miss = MODEL_WINDOW_MISS_DROPPED;
        return;
    }
    t->whole_rows = t->rows;
    t->nwhole_rows = t->nrows;
    model_torch_rows_of_spans(p, self, lo, hi);
    t->window = (uint8_t)window_asked;
    t->window_miss = MODEL_WINDOW_MISS_NONE;
    t->window_ns = hi - lo;
    t->window_steps = nsteps;
}

void model_torch_window_pick(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    if (t->window == window_asked || t->window == MODEL_WINDOW_ALL)
        return;    /* the rows asked, or the whole process's with the reason --summarize had */
    free(t->rows); /* the steady steps': the whole process's instead */
    t->rows = t->whole_rows;
    t->nrows = t->nwhole_rows;
    t->whole_rows = NULL;
    t->nwhole_rows = 0;
    t->window = MODEL_WINDOW_ALL;
    t->window_miss =
        window_asked == MODEL_WINDOW_ALL ? MODEL_WINDOW_MISS_NONE : MODEL_WINDOW_MISS_SUMMARY;
}
