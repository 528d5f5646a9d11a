/* model_steps_find: where a process's training steps begin and end (model.h, "training
 * steps"), from its record_function scopes and Python spans fed one at a time — by the
 * steps part from the ops it holds, by the timeline exports while a trace streams by. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_steps_find.h"
#include "trace_format.h"
#include "sort_keys.h"

enum {
    FIND_NAMED,
    FIND_PROFILER,
    FIND_OPTIMIZER,
    FIND_LIGHTNING,
    FIND_PYTHON,
    FIND_BACKWARD, /* the built-in backward Python calls (no optimizer: a manual update) */
    FIND_PHASE,
    FIND_DATA, /* DataLoader batches fetched (the phase spans of data loading) */
    FIND_LISTS
};

static const char *steps_name; /* --step: model_steps_set_name */

void model_steps_set_name(const char *name)
{
    steps_name = name && *name ? name : NULL;
}

const char *model_steps_name(void)
{
    return steps_name;
}

/* name is --step's, alone or after an NVTX domain ("domain: name") */
static int steps_named(const char *name)
{
    if (!steps_name || !name)
        return 0;
    size_t n = strlen(name), k = strlen(steps_name);
    return !strcmp(name, steps_name) ||
           (n > k + 2 && !strcmp(name + n - k, steps_name) && !memcmp(name + n - k - 2, ": ", 2));
}

struct steps_span {
    uint64_t start, end; /* CLOCK_MONOTONIC ns */
    uint64_t number;     /* ProfilerStep's N + 1 (0: none); FIND_PHASE's: its phase */
    uint32_t tid;
};

/* Where a scope that marks steps came from (prof_torch_scope_kept): its span through the
 * ring, which may have dropped some, or the collector's log, which holds them all. */
enum { FROM_RING, FROM_LOG, FROM_COUNT };

struct model_steps_finder {
    const struct model_process *p;
    struct steps_span *list[FIND_LISTS];
    size_t n[FIND_LISTS], cap[FIND_LISTS];
    /* The scopes that mark steps, by origin, until _end takes the log's when it is whole */
    struct steps_span *from[FROM_COUNT][FIND_LISTS];
    size_t nfrom[FROM_COUNT][FIND_LISTS], capfrom[FROM_COUNT][FIND_LISTS];
    int origin; /* where the scope being pushed goes: FROM_*, or -1: list */
    int logged, log_full;
    struct u64map py_phase; /* node + 1 -> phase + 2 (1: none), STEPS_NAMED_BIT: --step's */
};

#define STEPS_NAMED_BIT 0x100u

static int steps_ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), k = strlen(end);
    return n >= k && !strcmp(s + n - k, end);
}

static int steps_prefix(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

int model_steps_scope_phase(const char *name)
{
    if (steps_prefix(name, "enumerate(DataLoader)#"))
        return MODEL_STEP_DATA;
    if (steps_prefix(name, "Optimizer.step#") || steps_prefix(name, "Optimizer.zero_grad#"))
        return MODEL_STEP_OPTIMIZER;
    if (steps_prefix(name, "DistributedDataParallel.forward"))
        return MODEL_STEP_FORWARD;
    return -1;
}

int model_steps_action_phase(const char *action)
{
    static const char *const actions[] = {"dataloader_next", "forward", "backward",
                                          "optimizer_step"};
    static const int parts[] = {MODEL_STEP_DATA, MODEL_STEP_FORWARD, MODEL_STEP_BACKWARD,
                                MODEL_STEP_OPTIMIZER};
    for (int i = 0; action && i < 4; i++)
        if (!strcmp(action, actions[i]))
            return parts[i];
    return -1;
}

int model_steps_func_is_loss(const struct model_py_func *f)
{
    char key[64];
    if (!f || f->kind != PROF_PY_FUNC_PYTHON || !f->name || !f->file ||
        strlen(f->name) + 3 > sizeof key || !steps_ends_with(f->file, "torch/nn/functional.py"))
        return 0;
    snprintf(key, sizeof key, " %s ", f->name);
    return strstr(PROF_PY_FUNCTIONAL_LOSSES, key) != NULL;
}

int model_steps_python_phase(const struct model_process *p, uint32_t node)
{
    uint64_t slot = node ? idmap_get(&p->py.node_index, node) : 0;
    if (p->py.node_phase) /* (made with the nodes' actions) */
        return slot && slot - 1 < p->py.nnodes ? p->py.node_phase[slot - 1] : -1;
    const char *a = model_torch_action_of_node(p, node);
    if (a)
        return model_steps_action_phase(a);
    /* a torch.nn.functional loss: forward, as a loss module's call */
    const struct model_py_node *n = model_python_node(p, node);
    return n && model_steps_func_is_loss(model_python_func(p, n->func)) ? MODEL_STEP_FORWARD : -1;
}

uint64_t model_steps_named_calls(const struct model_process *p)
{
    uint64_t calls = 0;
    for (size_t i = 0; steps_name && i < p->py.nnodes; i++) {
        const struct model_py_func *fn = model_python_func(p, p->py.nodes[i].func);
        if (fn && (steps_named(fn->name) || steps_named(fn->qualname)))
            calls += p->py.nodes[i].calls;
    }
    return calls;
}

struct model_steps_finder *model_steps_finder_new(const struct model_process *p)
{
    struct model_steps_finder *f = calloc(1, sizeof *f);
    if (!f)
        report_oom();
    f->p = p;
    f->origin = -1;
    return f;
}

static void steps_finder_push(struct model_steps_finder *f, int list, uint64_t start, uint64_t end,
                              uint64_t number, uint32_t tid)
{
    if (end < start)
        return;
    struct steps_span **l = f->origin < 0 ? &f->list[list] : &f->from[f->origin][list];
    size_t *n = f->origin < 0 ? &f->n[list] : &f->nfrom[f->origin][list];
    size_t *cap = f->origin < 0 ? &f->cap[list] : &f->capfrom[f->origin][list];
    *l = report_grow(*l, cap, *n + 1, sizeof(struct steps_span));
    (*l)[(*n)++] = (struct steps_span){start, end, number, tid};
}

static void steps_finder_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                               uint64_t start_ns, uint64_t end_ns);

void model_steps_finder_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                              uint64_t start_ns, uint64_t end_ns)
{
    f->origin = prof_torch_scope_kept(name) ? FROM_RING : -1;
    steps_finder_scope(f, name, tid, start_ns, end_ns);
    f->origin = -1;
}

void model_steps_finder_logged_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                                     uint64_t start_ns, uint64_t end_ns)
{
    if (!name) {
        f->log_full = 1;
        return;
    }
    f->logged = 1;
    f->origin = FROM_LOG;
    steps_finder_scope(f, name, tid, start_ns, end_ns);
    f->origin = -1;
}

/* The scopes that mark steps join the lists: the log's when the process has one and none
 * was full (the same ops as the spans, all of them), else the spans'. */
static void steps_finder_take_scopes(struct model_steps_finder *f)
{
    int from = f->logged && !f->log_full ? FROM_LOG : FROM_RING;
    for (int i = 0; i < FIND_LISTS; i++) {
        f->list[i] = report_grow(f->list[i], &f->cap[i], f->n[i] + f->nfrom[from][i],
                                 sizeof(struct steps_span));
        if (f->nfrom[from][i])
            memcpy(f->list[i] + f->n[i], f->from[from][i],
                   f->nfrom[from][i] * sizeof(struct steps_span));
        f->n[i] += f->nfrom[from][i];
        for (int o = 0; o < FROM_COUNT; o++)
            free(f->from[o][i]);
    }
}

static void steps_finder_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                               uint64_t start_ns, uint64_t end_ns)
{
    if (steps_named(name))
        steps_finder_push(f, FIND_NAMED, start_ns, end_ns, 0, tid);
    if (steps_prefix(name, "ProfilerStep#"))
        steps_finder_push(f, FIND_PROFILER, start_ns, end_ns, /* N + 1: 0 is none */
                          strtoull(name + strlen("ProfilerStep#"), NULL, 10) + 1, tid);
    else if (steps_prefix(name, "Optimizer.step#"))
        steps_finder_push(f, FIND_OPTIMIZER, start_ns, end_ns, 0, tid);
    int phase = model_steps_scope_phase(name);
    if (phase >= 0)
        steps_finder_push(f, FIND_PHASE, start_ns, end_ns, (uint64_t)phase, tid);
    if (phase == MODEL_STEP_DATA)
        steps_finder_push(f, FIND_DATA, start_ns, end_ns, 0, tid);
}

void model_steps_finder_python(struct model_steps_finder *f, uint32_t node, uint32_t tid,
                               uint64_t start_ns, uint64_t end_ns)
{
    uint64_t *slot = u64map_slot(&f->py_phase, (uint64_t)node + 1);
    if (!slot)
        report_oom();
    if (!*slot) {
        int phase = model_steps_python_phase(f->p, node);
        const struct model_py_node *n = model_python_node(f->p, node);
        /* an optimizer step inside another is part of it */
        if (phase == MODEL_STEP_OPTIMIZER && n && n->parent &&
            model_steps_python_phase(f->p, n->parent) == MODEL_STEP_OPTIMIZER)
            phase = MODEL_STEP_PART_COUNT; /* a phase, not a boundary */
        const struct model_py_func *fn = n ? model_python_func(f->p, n->func) : NULL;
        int named = fn && (steps_named(fn->name) || steps_named(fn->qualname));
        *slot = (uint64_t)(phase + 2) | (named ? STEPS_NAMED_BIT : 0);
    }
    if (*slot & STEPS_NAMED_BIT)
        steps_finder_push(f, FIND_NAMED, start_ns, end_ns, 0, tid);
    int phase = (int)(*slot & ~(uint64_t)STEPS_NAMED_BIT) - 2;
    if (phase < 0)
        return;
    steps_finder_push(f, FIND_PHASE, start_ns, end_ns, (uint64_t)phase, tid);
    if (phase == MODEL_STEP_OPTIMIZER)
        steps_finder_push(f, FIND_PYTHON, start_ns, end_ns, 0, tid);
    if (phase == MODEL_STEP_BACKWARD)
        steps_finder_push(f, FIND_BACKWARD, start_ns, end_ns, 0, tid);
    if (phase == MODEL_STEP_DATA)
        steps_finder_push(f, FIND_DATA, start_ns, end_ns, 0, tid);
}

/* Lightning's batch (its loop's run_training_batch action) makes steps; fetching the batch
 * opens the first. */
static int steps_lightning_batch(const char *name)
{
    return name && !strcmp(name, "run_training_batch");
}

int model_steps_lightning_phase(const char *name)
{
    if (!name)
        return -1;
    if (strstr(name, "train_dataloader_next"))
        return MODEL_STEP_DATA;
    if (steps_prefix(name, "[Strategy]") && strstr(name, ".training_step"))
        return MODEL_STEP_FORWARD;
    if (steps_prefix(name, "[Strategy]") && strstr(name, ".backward"))
        return MODEL_STEP_BACKWARD;
    if (steps_prefix(name, "[LightningModule]") &&
        (strstr(name, ".optimizer_step") || strstr(name, ".optimizer_zero_grad")))
        return MODEL_STEP_OPTIMIZER;
    return -1;
}

int model_steps_range_wanted(const char *name, int lightning)
{
    return steps_named(name) ||
           (lightning && (steps_lightning_batch(name) || model_steps_lightning_phase(name) >= 0));
}

void model_steps_finder_range(struct model_steps_finder *f, const char *name, int lightning,
                              uint32_t tid, uint64_t start_ns, uint64_t end_ns)
{
    if (steps_named(name))
        steps_finder_push(f, FIND_NAMED, start_ns, end_ns, 0, tid);
    if (!lightning)
        return;
    if (steps_lightning_batch(name))
        steps_finder_push(f, FIND_LIGHTNING, start_ns, end_ns, 0, tid);
    int phase = model_steps_lightning_phase(name);
    if (phase >= 0)
        steps_finder_push(f, FIND_PHASE, start_ns, end_ns, (uint64_t)phase, tid);
    if (phase == MODEL_STEP_DATA)
        steps_finder_push(f, FIND_DATA, start_ns, end_ns, 0, tid);
}

static int steps_span_cmp(const void *a, const void *b)
{
    const struct steps_span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

/* The thread with the most spans; spans of other threads and nested ones are dropped. */
static size_t steps_keep_outer_of_main_thread(struct steps_span *s, size_t n, uint32_t *tid)
{
    if (!n)
        return 0;
    struct u64map count = {0};
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t *c = u64map_slot(&count, (uint64_t)s[i].tid + 1);
        if (!c)
            report_oom();
        if (++*c > best) {
            best = *c;
            *tid = s[i].tid;
        }
    }
    u64map_free(&count);
    qsort(s, n, sizeof *s, steps_span_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].tid != *tid || (k && s[i].start < s[k - 1].end))
            continue;
        s[k++] = s[i];
    }
    return k;
}

/* Where the first iteration begins: the earliest phase span of the step thread that starts
 * before the first boundary (end); 0: none. */
static uint64_t steps_first_start(const struct model_steps_finder *f, uint32_t tid, uint64_t end)
{
    uint64_t first = 0;
    for (size_t i = 0; i < f->n[FIND_PHASE]; i++) {
        const struct steps_span *s = &f->list[FIND_PHASE][i];
        if (s->tid == tid && s->start < end && (!first || s->start < first))
            first = s->start;
    }
    return first;
}

/* Groups of ends (closes[i]: end i closes its group; the last closes one): their sizes,
 * size[m] how many groups between the first and the last have m ends (m > MODEL_STEPS_
 * PER_BATCH: at MODEL_STEPS_PER_BATCH + 1), the first's and the last's in *first, *last,
 * the groups in *groups; returns the most common size between (the first's when there are
 * only two groups of one size), and their count in *middle. */
struct steps_groups {
    size_t size[MODEL_STEPS_PER_BATCH + 2], first, last, groups, middle;
};

static size_t steps_group_sizes(const unsigned char *closes, size_t n, struct steps_groups *g)
{
    memset(g, 0, sizeof *g);
    for (size_t i = 0, run = 0; i < n; i++) {
        run++;
        if (!closes[i])
            continue;
        if (!g->groups++)
            g->first = run;
        else if (i + 1 < n)
            g->size[run < MODEL_STEPS_PER_BATCH + 1 ? run : MODEL_STEPS_PER_BATCH + 1]++;
        g->last = run;
        run = 0;
    }
    size_t k = 0;
    for (size_t m = 1; m < MODEL_STEPS_PER_BATCH + 2; m++) {
        g->middle += g->size[m];
        if (g->size[m] > g->size[k])
            k = m;
    }
    return !g->middle && g->groups == 2 && g->first == g->last ? g->first : k;
}

/* s keeps each group's last end (closes[i]), *n their count; frees closes. */
static void steps_group_keep(unsigned char *closes, struct steps_span *s, size_t *n)
{
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++)
        if (closes[i])
            s[kept++] = s[i];
    *n = kept;
    free(closes);
}

/* A step is one iteration, not one optimizer step, when the loop steps k optimizers per
 * DataLoader batch (a GAN's discriminator, then its generator): between the ends of a group
 * of k no batch is fetched, before each group one is (two at an epoch's start: the spent
 * iterator's last __next__, then the new one's first). Grouped only when that pattern is
 * the loop's: 2 <= k <= MODEL_STEPS_PER_BATCH the most common size of the groups between
 * the first and the last (those may be cut by a window), 9 in 10 of them of k (a step
 * skipped now and then, by a GradScaler, makes a shorter one), two groups of k at least,
 * and 3 in 4 of the fetches that open a group a single batch. A loop that fetches batches
 * only now and then (a validation loader's burst every N steps), none, or one or more per
 * optimizer step (gradient accumulation) keeps its optimizer steps. s keeps each group's
 * last end; returns k (1: kept as they were). */
static unsigned steps_group_by_batch(struct model_steps_finder *f, uint32_t tid,
                                     struct steps_span *s, size_t *n)
{
    struct steps_span *d = f->list[FIND_DATA];
    size_t nd = 0;
    if (!d)
        return 1;
    qsort(d, f->n[FIND_DATA], sizeof *d, steps_span_cmp);
    for (size_t i = 0; i < f->n[FIND_DATA]; i++) /* a scope inside its Python call once */
        if (d[i].tid == tid && !(nd && d[i].start < d[nd - 1].end))
            d[nd++] = d[i];
    if (nd < 2 || *n < 4)
        return 1;
    unsigned char *closes = calloc(*n, 1); /* closes[i]: a batch fetched after end i */
    if (!closes)
        report_oom();
    size_t j = 0, single = 0, opened = 0;
    for (size_t i = 1; i < *n; i++) {
        while (j < nd && d[j].start <= s[i - 1].end)
            j++;
        size_t fetched = 0;
        for (; j < nd && d[j].start <= s[i].end; j++)
            fetched++;
        closes[i - 1] = fetched > 0;
        opened += fetched > 0;
        single += fetched == 1;
    }
    closes[*n - 1] = 1;
    struct steps_groups g;
    size_t k = steps_group_sizes(closes, *n, &g);
    if (k < 2 || k > MODEL_STEPS_PER_BATCH || g.size[k] * 10 < g.middle * 9 || g.first > k ||
        g.last > k || g.size[k] + (g.first == k) + (g.groups > 1 && g.last == k) < 2 ||
        single * 4 < opened * 3) {
        free(closes);
        return 1;
    }
    steps_group_keep(closes, s, n);
    return (unsigned)k;
}

/* Whether a training phase of tid (forward, backward, the optimizer; not a batch fetched:
 * the loop's last __next__, the one that ends it, is no training; with forward_backward,
 * only those two) begins in [a, b). The phase spans are sorted by start. */
static int steps_phase_in(const struct model_steps_finder *f, uint32_t tid, uint64_t a, uint64_t b,
                          int forward_backward)
{
    const struct steps_span *ph = f->list[FIND_PHASE];
    size_t lo = 0, hi = f->n[FIND_PHASE];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ph[mid].start < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < f->n[FIND_PHASE] && ph[i].start < b; i++)
        if (ph[i].tid == tid && ph[i].number != MODEL_STEP_DATA &&
            (!forward_backward || ph[i].number == MODEL_STEP_FORWARD ||
             ph[i].number == MODEL_STEP_BACKWARD))
            return 1;
    return 0;
}

static int steps_training_in(const struct model_steps_finder *f, uint32_t tid, uint64_t a,
                             uint64_t b)
{
    return steps_phase_in(f, tid, a, b, 0);
}

/* Several optimizers stepped after one backward (an encoder's and a head's, each its own
 * Optimizer.step# scope): between the ends of one iteration's optimizer steps no forward or
 * backward begins. When that holds of some gaps between ends and not of others (phases
 * known: a quarter of the gaps hold one at least), and the iterations step k <=
 * MODEL_STEPS_PER_BATCH optimizers, 3 in 4 of them exactly k and none more, the ends are
 * grouped to a step per iteration, s keeping each group's last end; returns k (1: kept as
 * they were). */
static unsigned steps_group_by_backward(const struct model_steps_finder *f, uint32_t tid,
                                        struct steps_span *s, size_t *n)
{
    if (*n < 4)
        return 1;
    unsigned char *closes = malloc(*n); /* closes[i]: end i closes its iteration */
    if (!closes)
        report_oom();
    size_t with = 0;
    for (size_t i = 0; i + 1 < *n; i++)
        with += closes[i] = (unsigned char)steps_phase_in(f, tid, s[i].end, s[i + 1].end, 1);
    closes[*n - 1] = 1;
    struct steps_groups g;
    size_t k = steps_group_sizes(closes, *n, &g);
    /* k optimizers in 3 iterations of 4 at least, never more (an iteration may step
     * fewer: GradScaler skipping a step whose gradients overflowed, a head updated now
     * and then) */
    int known = with + 1 < *n && with * 4 >= *n - 1, more = 0;
    for (size_t m = k + 1; m < MODEL_STEPS_PER_BATCH + 2; m++)
        more += g.size[m] > 0;
    if (!known || k < 2 || k > MODEL_STEPS_PER_BATCH || more || g.size[k] * 4 < g.middle * 3 ||
        g.first > k || g.last > k) {
        free(closes);
        return 1;
    }
    steps_group_keep(closes, s, n);
    return (unsigned)k;
}

/* The backward passes in each of the n steps of s (ends of optimizer steps, the first from
 * first_start): the outermost backward phases of tid beginning in it (a reentrant
 * checkpoint's inner backward is inside its backward). k > 1 when 3 in 4 of the steps,
 * the first and last aside, hold exactly k: gradient accumulation; else 1. */
static unsigned steps_backward_passes(const struct model_steps_finder *f, uint32_t tid,
                                      const struct steps_span *s, size_t n, uint64_t first_start)
{
    if (n < 4)
        return 1;
    const struct steps_span *ph = f->list[FIND_PHASE];
    size_t count[MODEL_STEPS_MAX_PASSES + 2] = {0}, j = 0;
    uint64_t outer_end = 0, step_end = 0; /* (an optimizer step's closure: no accumulation) */
    for (size_t i = 0; i < n; i++) {
        uint64_t a = i ? s[i - 1].end : first_start, b = s[i].end;
        size_t k = 0;
        for (; j < f->n[FIND_PHASE] && ph[j].start < b; j++) {
            if (ph[j].tid == tid && ph[j].number == MODEL_STEP_OPTIMIZER && ph[j].end > step_end)
                step_end = ph[j].end;
            if (ph[j].tid != tid || ph[j].number != MODEL_STEP_BACKWARD || ph[j].start < a ||
                ph[j].start < outer_end || ph[j].start < step_end)
                continue;
            k++;
            outer_end = ph[j].end;
        }
        if (i && i + 1 < n)
            count[k < MODEL_STEPS_MAX_PASSES + 1 ? k : MODEL_STEPS_MAX_PASSES + 1]++;
    }
    for (unsigned k = 2; k <= MODEL_STEPS_MAX_PASSES; k++)
        if (count[k] * 4 >= (n - 2) * 3)
            return k;
    return 1;
}

/* torch.profiler's ProfilerStep#N scopes (s: sorted, none nested, *n of them) made steps:
 * - Numbered by torch's N, made unique and in order: torch 1.13's prof.step() names the
 *   scope it opens by the step just ended ("ProfilerStep#" + str(cur_step)), so after the
 *   #0 that start() opened every scope carries its predecessor's number (#0, #0, #1, ...).
 *   From a number no larger than the one before on, the later ones are shifted past it (a
 *   second profile() block, again from #0, goes on from the first's numbers).
 * - The last scope, opened by the last prof.step() and closed by the profiler's exit, is
 *   the teardown, no step, when it holds no training phase and the others do (work after
 *   the loop: a save, however long), or, phases unknown, when it lasts under a quarter of
 *   the median of the others (0.03 ms of 38 in a CNN's loop; 15 us of 130 in a tiny one's).
 * - A step runs to the next scope's start, one iteration boundary to boundary: between two
 *   scopes prof.step() does the profiler's own work, which at the end of its schedule's
 *   active span is stopping and parsing torch's trace (100 ms and more), and that time is
 *   the iteration's as the loop sees it. Not when a training phase begins in between (two
 *   profile() blocks with other work between them). The last step runs to the teardown's
 *   start. */
static void steps_profiler_steps(struct model_steps_finder *f, uint32_t tid, struct steps_span *s,
                                 size_t *n)
{
    uint64_t shift = 0;
    for (size_t i = 0; i < *n; i++) {
        s[i].number += shift;
        if (i && s[i].number <= s[i - 1].number) {
            shift += s[i - 1].number + 1 - s[i].number;
            s[i].number = s[i - 1].number + 1;
        }
    }
    uint64_t tail = 0; /* the teardown's start; 0: none */
    if (*n >= 2 && !steps_training_in(f, tid, s[*n - 1].start, s[*n - 1].end)) {
        size_t k = *n - 1;
        /* where the others hold training phases, one without any is the teardown's,
         * however long (a save, a print after the loop); else only a short one is */
        int phased = 0;
        for (size_t i = 0; i < k && !phased; i++)
            phased = steps_training_in(f, tid, s[i].start, s[i].end);
        int teardown = phased;
        if (!phased) {
            uint64_t *d = malloc(k * sizeof *d);
            if (!d)
                report_oom();
            for (size_t i = 0; i < k; i++)
                d[i] = s[i].end - s[i].start;
            qsort(d, k, sizeof *d, sort_u64_cmp);
            teardown = (s[k].end - s[k].start) * 4 < d[(k + 1) / 2 - 1]; /* nearest rank */
            free(d);
        }
        if (teardown) {
            tail = s[k].start;
            *n = k;
        }
    }
    for (size_t i = 0; i < *n; i++) {
        uint64_t next = i + 1 < *n ? s[i + 1].start : tail;
        if (next > s[i].end && !steps_training_in(f, tid, s[i].end, next))
            s[i].end = next;
    }
}

/* The steps: spans as they are (ProfilerStep's as steps_profiler_steps made them), or from
 * one end to the next, the step ending
 * at the k-th end numbered k + 1; the first from first_start (0: none, the first end only
 * opens step 2). */
static void steps_make(struct model_steps *st, const struct steps_span *s, size_t n, int ends,
                       uint64_t first_start)
{
    int first = ends && first_start && n && first_start < s[0].end;
    size_t count = ends ? n - 1 + (size_t)first : n;
    if (!n || !count)
        return;
    st->first_inferred = (uint8_t)first;
    st->steps = calloc(count, sizeof *st->steps);
    if (!st->steps)
        report_oom();
    for (size_t i = 0; i < count; i++) {
        struct model_step *step = &st->steps[i];
        if (!ends) {
            step->number = s[i].number ? s[i].number - 1 : i + 1; /* ProfilerStep#0 is 0 */
            step->start_ns = s[i].start;
            step->end_ns = s[i].end;
            continue;
        }
        size_t k = first ? i : i + 1; /* the end that closes it */
        step->number = k + 1;
        step->start_ns = k ? s[k - 1].end : first_start;
        step->end_ns = s[k].end;
    }
    st->nsteps = count;
}

/* The optimizer steps the process began before its recording opened, when its one opening
 * of a capture window counted them (META window_open's fourth field: the PyTorch layer
 * counts them while the window is closed) or was its start: 1 with *before, else 0. */
static int steps_before_window(const struct model_process *p, uint64_t *before)
{
    struct model_window_open o;
    model_window_first_open(p, &o);
    if (o.opens != 1 || o.fields < 3 || (o.fields == 3 && strcmp(o.why, "start")))
        return 0;
    *before = o.fields == 4 ? o.counted : 0; /* open from the start: numbered from it */
    return 1;
}

/* steps_opened_late's answer from the first window's opening alone. */
static int steps_opened_late_window(const struct model_process *p)
{
    struct model_window_open o;
    model_window_first_open(p, &o);
    if (o.fields == 4)
        return o.counted > 0;
    return o.fields == 3 && (!strcmp(o.why, "attach") || (!strcmp(o.why, "step") && o.value > 0));
}

/* Whether the recording opened after the process's first steps: its first window opened
 * at the end of a step after the first, after optimizer steps it counted, or by an attach
 * (to a process under way: the steps after it are not the program's warm-up). 2 for an
 * attach to a process with GPU kernels (steps.opened_late). */
static int steps_opened_late(const struct model_process *p)
{
    int late = steps_opened_late_window(p);
    const char *window = model_meta_get(p, "window");
    return late && window && !strcmp(window, "attach") && p->gpu.facts.kernels ? 2 : late;
}

/* Whether the optimizer steps' steps are numbered as the process's, from *before steps
 * begun before the recording opened: optimizer steps the window counted, whole
 * iterations of st->per_step of them. */
static int steps_numbered_from(const struct model_process *p, const struct model_steps *st,
                               uint64_t *before)
{
    unsigned k = st->per_step > 1 ? st->per_step : 1;
    if (st->source != MODEL_STEPS_OPTIMIZER || !steps_before_window(p, before) || *before % k)
        return 0;
    *before /= k;
    return 1;
}

int model_steps_numbered(const struct model_process *p)
{
    const char *w = model_meta_get(p, "window");
    uint64_t before;
    return !w || !*w || p->steps.source == MODEL_STEPS_PROFILER_STEP ||
           steps_numbered_from(p, &p->steps, &before);
}

void model_steps_finder_end(struct model_steps_finder *f, struct model_steps *st)
{
    /* The calls --step names; else ProfilerStep#N scopes; else the ends of the optimizer
     * step scopes, of Lightning's batches, of the optimizer step calls, two at least; else
     * (no optimizer: pytorch/examples' word_language_model updates its parameters by hand
     * and read "Training steps: none found") the ends of the backward passes */
    static const struct {
        int list, ends;
        size_t min;
        uint8_t source;
    } order[] = {{FIND_NAMED, 0, 1, MODEL_STEPS_NAMED},
                 {FIND_PROFILER, 0, 1, MODEL_STEPS_PROFILER_STEP},
                 {FIND_OPTIMIZER, 1, 2, MODEL_STEPS_OPTIMIZER},
                 {FIND_LIGHTNING, 1, 2, MODEL_STEPS_LIGHTNING},
                 {FIND_PYTHON, 1, 2, MODEL_STEPS_PYTHON},
                 {FIND_BACKWARD, 1, 2, MODEL_STEPS_BACKWARD}};
    steps_finder_take_scopes(f);
    if (f->list[FIND_PHASE]) /* (steps_phase_in's order) */
        qsort(f->list[FIND_PHASE], f->n[FIND_PHASE], sizeof *f->list[FIND_PHASE], steps_span_cmp);
    for (size_t i = 0; i < sizeof order / sizeof order[0] && !st->nsteps; i++) {
        struct steps_span *s = f->list[order[i].list];
        uint32_t tid = 0;
        size_t n = steps_keep_outer_of_main_thread(s, f->n[order[i].list], &tid);
        if (n < order[i].min)
            continue;
        st->per_step = 1;
        if (order[i].source == MODEL_STEPS_PROFILER_STEP)
            steps_profiler_steps(f, tid, s, &n);
        if (order[i].source == MODEL_STEPS_OPTIMIZER || order[i].source == MODEL_STEPS_PYTHON) {
            st->per_step = (uint8_t)steps_group_by_batch(f, tid, s, &n);
            st->grouped_by = MODEL_STEPS_GROUP_BATCH;
            if (st->per_step == 1) {
                st->per_step = (uint8_t)steps_group_by_backward(f, tid, s, &n);
                st->grouped_by = MODEL_STEPS_GROUP_BACKWARD;
            }
        }
        uint64_t first = order[i].ends ? steps_first_start(f, tid, s[0].end) : 0;
        st->backward_passes = 1;
        /* (several optimizers a step: a GAN's three backwards for two are no accumulation) */
        if ((order[i].source == MODEL_STEPS_OPTIMIZER || order[i].source == MODEL_STEPS_PYTHON) &&
            st->per_step == 1)
            st->backward_passes = (uint8_t)steps_backward_passes(f, tid, s, n, first);
        steps_make(st, s, n, order[i].ends, first);
        st->source = order[i].source;
        st->tid = tid;
    }
    uint64_t before = 0; /* numbered as the process's steps */
    if (steps_numbered_from(f->p, st, &before))
        for (size_t i = 0; i < st->nsteps; i++)
            st->steps[i].number += before;
    if (!st->nsteps)
        st->source = MODEL_STEPS_NONE;
    st->opened_late = (uint8_t)steps_opened_late(f->p);
    /* a window's first step begins at a step boundary, or where the window cut into a step:
     * said; kept in the tables, whose counts are then the window's (an attach --duration) */
    const char *window = model_meta_get(f->p, "window");
    if (window && *window)
        st->first_inferred = 0;
    for (int i = 0; i < FIND_LISTS; i++)
        free(f->list[i]);
    u64map_free(&f->py_phase);
    free(f);
}
