/* model_nvtx: NVTX ranges of one process as actions (Lightning's SimpleProfiler): PUSH and
 * POP pair on their thread's stack (per domain), START and END by range id on any threads,
 * MARKs are counted. Lightning's own actions (ACTION records: its profiler's start/stop
 * calls) pair by name in time, the latest open start first. Each range gets the GPU time
 * of the kernels launched inside it — a kernel whose launching call (GPU_API) started
 * within the range, on the same thread for a pushed range, on any thread else. Kept until
 * the file ends: a thread's records reach the file in blocks, so an END may come before
 * its START. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_steps_find.h"
#include "model_part.h"
#include "sort_keys.h"
#include "trace_read.h"

static void model_nvtx_on_lost(struct model_process *p, const struct trace_record *rec,
                               uint32_t tid)
{
    (void)tid;
    struct model_gpu *g = &p->gpu;
    const struct prof_rec_nvtx_lost *r = rec->data;
    g->nvtx_lost =
        report_grow(g->nvtx_lost, &g->cap_nvtx_lost, g->nnvtx_lost + 1, sizeof *g->nvtx_lost);
    g->nvtx_lost[g->nnvtx_lost++] =
        (struct model_nvtx_lost){r->name_sid, r->domain_sid, r->count, r->ticks};
}

static void model_nvtx_on_record(struct model_process *p, const struct trace_record *rec,
                                 uint32_t tid)
{
    struct model_gpu *g = &p->gpu;
    struct model_nvtx_event e;
    if (rec->type == PROF_REC_ACTION) {
        const struct prof_rec_action *a = rec->data;
        if (a->kind != PROF_ACTION_START && a->kind != PROF_ACTION_STOP)
            return;
        e = (struct model_nvtx_event){.ticks = a->ticks,
                                      .tid = tid,
                                      .name_sid = a->name_sid,
                                      .kind = a->kind == PROF_ACTION_START ? PROF_NVTX_START
                                                                           : PROF_NVTX_END,
                                      .action = 1};
    } else {
        const struct prof_rec_nvtx *r = rec->data;
        e = (struct model_nvtx_event){.ticks = r->ticks,
                                      .id = r->id,
                                      .tid = tid,
                                      .name_sid = r->name_sid,
                                      .domain_sid = r->domain_sid,
                                      .kind = r->kind};
    }
    g->nvtx = report_grow(g->nvtx, &g->cap_nvtx, g->nnvtx + 1, sizeof *g->nvtx);
    g->nvtx[g->nnvtx++] = e;
    model_cpu_event(p, e.ticks, e.ticks);
}

/* A kernel's launch: its call's start and thread, its GPU time. */
struct model_nvtx_launch {
    uint64_t start; /* ticks */
    uint32_t tid;
    uint64_t ns;
    uint64_t sum_ns; /* GPU ns of the launches before this one in its sorted list */
};

/* launches[0, n) into out by thread (by_thread) and start, ties in the order read. */
static void model_nvtx_launch_sort(struct model_nvtx_launch *launches, size_t n, int by_thread,
                                   struct model_nvtx_launch *out)
{
    struct sort_key *keys = malloc((n + 1) * sizeof *keys);
    if (!keys)
        report_oom();
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct sort_key){{by_thread ? launches[i].tid : 0, launches[i].start, 0, 0}, i};
    sort_records(out, launches, n, sizeof *launches, keys);
    free(keys);
}

/* The first launch of list[0, n) not before (tid, start) in the list's order. */
static size_t model_nvtx_lower(const struct model_nvtx_launch *list, size_t n, int by_thread,
                               uint32_t tid, uint64_t start)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct model_nvtx_launch *l = &list[mid];
        int before = by_thread && l->tid != tid ? l->tid < tid : l->start < start;
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct model_nvtx_index {
    struct model_nvtx_launch *by_thread, *by_time;
    size_t n;
};

static void model_nvtx_sums(struct model_nvtx_launch *l, size_t n)
{
    uint64_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        l[i].sum_ns = ns;
        ns += l[i].ns;
    }
}

static void model_nvtx_index_build(struct model_nvtx_index *x, const struct model_process *p)
{
    const struct model_gpu *g = &p->gpu;
    x->n = 0;
    struct model_nvtx_launch *launches = malloc((g->nops + 1) * sizeof *launches);
    x->by_thread = malloc((g->nops + 1) * sizeof *x->by_thread);
    x->by_time = malloc((g->nops + 1) * sizeof *x->by_time);
    if (!launches || !x->by_thread || !x->by_time)
        report_oom();
    for (size_t i = 0; i < g->nops; i++) {
        const struct model_gpu_op *op = &g->ops[i];
        const struct model_gpu_call *c;
        if (!(c = model_gpu_op_call(p, i))) /* kernels alone */
            continue;
        launches[x->n++] = (struct model_nvtx_launch){
            .start = c->start, .tid = c->tid, .ns = op->end_ns - op->start_ns};
    }
    model_nvtx_launch_sort(launches, x->n, 1, x->by_thread);
    model_nvtx_launch_sort(launches, x->n, 0, x->by_time);
    free(launches);
    model_nvtx_sums(x->by_thread, x->n);
    model_nvtx_sums(x->by_time, x->n);
}

/* GPU ns and kernels of the launches in [start, end] ticks, on tid or (any) on every thread. */
static void model_nvtx_gpu_in(const struct model_nvtx_index *x, int any, uint32_t tid,
                              uint64_t start, uint64_t end, uint64_t *ns, uint64_t *kernels)
{
    const struct model_nvtx_launch *l = any ? x->by_time : x->by_thread;
    size_t a = model_nvtx_lower(l, x->n, !any, tid, start);
    size_t b = end == UINT64_MAX ? x->n : model_nvtx_lower(l, x->n, !any, tid, end + 1);
    uint64_t total_ns = x->n ? l[x->n - 1].sum_ns + l[x->n - 1].ns : 0;
    uint64_t ns_a = a < x->n ? l[a].sum_ns : total_ns, ns_b = b < x->n ? l[b].sum_ns : total_ns;
    *ns = b > a ? ns_b - ns_a : 0;
    *kernels = b > a ? b - a : 0;
}

/* Actions of one process, merged by (domain, name) string id pair. */
struct model_nvtx_acc {
    struct model_action *rows;
    size_t n, cap;
    struct u64map index;
};

static struct model_action *model_nvtx_row(struct model_nvtx_acc *acc,
                                           const struct model_process *p, uint32_t name_sid,
                                           uint32_t domain_sid)
{
    uint64_t *slot = u64map_slot(&acc->index, (uint64_t)domain_sid << 32 | name_sid);
    if (!slot)
        report_oom();
    if (*slot)
        return &acc->rows[*slot - 1];
    if (acc->n == acc->cap) {
        acc->cap = acc->cap ? acc->cap * 2 : 16;
        struct model_action *n = realloc(acc->rows, acc->cap * sizeof *n);
        if (!n)
            report_oom();
        acc->rows = n;
    }
    const char *name = name_sid ? u64map_get_ptr(&p->strings, name_sid) : NULL;
    const char *domain = domain_sid ? u64map_get_ptr(&p->strings, domain_sid) : NULL;
    struct model_action *a = &acc->rows[acc->n];
    memset(a, 0, sizeof *a);
    if (domain_sid)
        a->name = report_asprintf("%s: %s", domain ? domain : "?", name ? name : "(unnamed)");
    else
        a->name = report_strdup(name ? name : "(unnamed)");
    *slot = ++acc->n;
    return a;
}

/* A range (or, from an ACTION record, a Lightning action) into its row; kept for the steps
 * when they may use it (model.h), and when outer (no range of its thread around it, or a
 * START/END range) for the training the Actions' shares are of (steps.actions_start_ns). */
static void model_nvtx_range(struct model_nvtx_acc *acc, struct model_process *p,
                             const struct model_nvtx_index *x, const struct model_nvtx_event *open,
                             uint64_t end, int any, int outer)
{
    struct model_action *a = model_nvtx_row(acc, p, open->name_sid, open->domain_sid);
    if (model_steps_range_wanted(a->name, open->action) || (outer && !open->action)) {
        struct model_steps *st = &p->steps;
        st->ranges = report_grow(st->ranges, &st->cap_ranges, st->nranges + 1, sizeof *st->ranges);
        st->ranges[st->nranges++] =
            (struct model_step_range){a->name, open->ticks, end, open->tid, open->action};
    }
    uint64_t ns, kernels;
    model_nvtx_gpu_in(x, any, open->tid, open->ticks, end, &ns, &kernels);
    a->calls++;
    a->total_ns += model_ticks_to_ns(p, end >= open->ticks ? end - open->ticks : 0);
    a->gpu_ns += ns;
    a->kernels += kernels;
}

/* Lightning's actions in time (ties in the order read). */
static int model_nvtx_action_cmp(const void *a, const void *b)
{
    const struct model_nvtx_event *x = *(const struct model_nvtx_event *const *)a;
    const struct model_nvtx_event *y = *(const struct model_nvtx_event *const *)b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* ACTION records: a stop ends the latest open start of its name. Rows into acc. */
static void model_nvtx_actions(struct model_nvtx_acc *acc, struct model_process *p,
                               const struct model_nvtx_index *x)
{
    struct model_gpu *g = &p->gpu;
    const struct model_nvtx_event **ev = malloc(g->nnvtx * sizeof *ev);
    size_t *below = malloc(g->nnvtx * sizeof *below); /* the open start it hid, + 1 */
    if (!ev || !below)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < g->nnvtx; i++)
        if (g->nvtx[i].action)
            ev[n++] = &g->nvtx[i];
    qsort(ev, n, sizeof *ev, model_nvtx_action_cmp);
    struct u64map open; /* name sid -> index + 1 in ev of its latest open start */
    u64map_init(&open);
    size_t nopen = 0;
    uint64_t first = UINT64_MAX, last = 0; /* the span of the paired actions */
    for (size_t i = 0; i < n; i++) {
        uint64_t *slot = u64map_slot(&open, ev[i]->name_sid);
        if (!slot)
            report_oom();
        if (ev[i]->kind == PROF_NVTX_START) {
            below[i] = *slot;
            *slot = i + 1;
            nopen++;
        } else if (*slot) {
            size_t s = *slot - 1;
            model_nvtx_range(acc, p, x, ev[s], ev[i]->ticks, 1, 0);
            first = ev[s]->ticks < first ? ev[s]->ticks : first;
            last = ev[i]->ticks > last ? ev[i]->ticks : last;
            *slot = below[s];
            nopen--;
        } else {
            g->nvtx_unmatched++;
        }
    }
    g->nvtx_unclosed += nopen;
    g->lightning_span_ns = last > first ? model_ticks_to_ns(p, last - first) : 0;
    u64map_free(&open);
    free(ev);
    free(below);
    for (size_t i = 0; i < acc->n; i++)
        acc->rows[i].source = MODEL_ACTION_LIGHTNING;
}

static int model_nvtx_event_cmp(const void *a, const void *b)
{
    const struct model_nvtx_event *x = *(const struct model_nvtx_event *const *)a;
    const struct model_nvtx_event *y = *(const struct model_nvtx_event *const *)b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->domain_sid != y->domain_sid)
        return x->domain_sid < y->domain_sid ? -1 : 1;
    /* A thread's records are in its order already: the address keeps it (stable). */
    return x < y ? -1 : x > y;
}

static void model_nvtx_finish(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    if (!g->nnvtx && !g->nnvtx_lost)
        return;
    struct model_nvtx_index x;
    model_nvtx_index_build(&x, p);
    struct model_nvtx_acc ranges = {0}, marks = {0}, lightning = {0};
    u64map_init(&ranges.index);
    u64map_init(&marks.index);
    u64map_init(&lightning.index);
    model_nvtx_actions(&lightning, p, &x);
    const struct model_nvtx_event **ev = malloc(g->nnvtx * sizeof *ev);
    const struct model_nvtx_event **stack = malloc(g->nnvtx * sizeof *stack);
    if (!ev || !stack)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < g->nnvtx; i++)
        if (!g->nvtx[i].action)
            ev[n++] = &g->nvtx[i];
    qsort(ev, n, sizeof *ev, model_nvtx_event_cmp);
    struct u64map started; /* START id -> index + 1 in g->nvtx */
    u64map_init(&started);
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        const struct model_nvtx_event *e = ev[i];
        if (i && (e->tid != ev[i - 1]->tid || e->domain_sid != ev[i - 1]->domain_sid)) {
            g->nvtx_unclosed += top; /* pushed, never popped */
            top = 0;
        }
        switch (e->kind) {
        case PROF_NVTX_PUSH:
            stack[top++] = e;
            break;
        case PROF_NVTX_POP:
            if (e->name_sid && e->id) {
                /* The POP names its range (name, PUSH ticks): it counts even when its PUSH
                 * was dropped. Pushes above that one lost their POP (NVTX_LOST sums). */
                size_t k = top;
                while (k > 0 && stack[k - 1]->ticks != e->id)
                    k--;
                if (k > 0)
                    top = k - 1;
                struct model_nvtx_event open = {.ticks = e->id,
                                                .tid = e->tid,
                                                .name_sid = e->name_sid,
                                                .domain_sid = e->domain_sid,
                                                .kind = PROF_NVTX_PUSH};
                model_nvtx_range(&ranges, p, &x, &open, e->ticks, 0, top == 0);
            } else if (top) {
                top--;
                model_nvtx_range(&ranges, p, &x, stack[top], e->ticks, 0, top == 0);
            } else {
                g->nvtx_unmatched++;
            }
            break;
        case PROF_NVTX_START: {
            uint64_t *slot = u64map_slot(&started, e->id);
            if (!slot)
                report_oom();
            *slot = (size_t)(e - g->nvtx) + 1;
            break;
        }
        case PROF_NVTX_MARK:
            model_nvtx_row(&marks, p, e->name_sid, e->domain_sid)->calls++;
            break;
        default:
            break;
        }
    }
    g->nvtx_unclosed += top;
    for (size_t i = 0; i < g->nnvtx; i++) {
        const struct model_nvtx_event *e = &g->nvtx[i];
        uint64_t *v;
        if (e->kind != PROF_NVTX_END || e->action)
            continue;
        if (!(v = u64map_find(&started, e->id))) {
            g->nvtx_unmatched++;
            continue;
        }
        model_nvtx_range(&ranges, p, &x, &g->nvtx[*v - 1], e->ticks, 1, 1);
        u64map_remove(&started, e->id);
    }
    g->nvtx_unclosed += started.count;
    u64map_free(&started);
    /* Ranges whose POP a full ring dropped: counted with their time, no GPU time. Their
     * pushes are among the unclosed ones. */
    for (size_t i = 0; i < g->nnvtx_lost; i++) {
        const struct model_nvtx_lost *l = &g->nvtx_lost[i];
        struct model_action *a = model_nvtx_row(&ranges, p, l->name_sid, l->domain_sid);
        a->calls += l->count;
        a->total_ns += model_ticks_to_ns(p, l->ticks);
        g->nvtx_lost_calls += l->count;
    }
    g->nvtx_unclosed =
        g->nvtx_unclosed > g->nvtx_lost_calls ? g->nvtx_unclosed - g->nvtx_lost_calls : 0;
    free(ev);
    free(stack);
    free(x.by_thread);
    free(x.by_time);
    u64map_free(&ranges.index);
    u64map_free(&marks.index);
    u64map_free(&lightning.index);
    /* NVTX ranges, then Lightning's actions. */
    g->actions = report_grow(ranges.rows, &ranges.cap, ranges.n + lightning.n, sizeof *g->actions);
    if (lightning.n)
        memcpy(g->actions + ranges.n, lightning.rows, lightning.n * sizeof *lightning.rows);
    free(lightning.rows);
    g->nactions = ranges.n + lightning.n;
    g->lightning_actions = lightning.n;
    g->marks = marks.rows;
    g->nmarks = marks.n;
    if (g->nvtx_lost_calls)
        model_add_warning(p,
                          "%s (pid %lld): %" PRIu64 " NVTX ranges' records were dropped (ring "
                          "full): the actions table counts them with their time, not their "
                          "GPU time",
                          p->file, (long long)p->pid, g->nvtx_lost_calls);
    if (g->nvtx_unclosed || g->nvtx_unmatched)
        model_add_warning(p,
                          "%s (pid %lld): %" PRIu64 " NVTX or Lightning range(s) never ended and "
                          "%" PRIu64 " end(s) matched no start; not counted as actions",
                          p->file, (long long)p->pid, g->nvtx_unclosed, g->nvtx_unmatched);
}

static void model_nvtx_free(struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    free(g->nvtx);
    free(g->nvtx_lost);
    for (size_t i = 0; i < g->nactions; i++)
        free(g->actions[i].name);
    free(g->actions);
    for (size_t i = 0; i < g->nmarks; i++)
        free(g->marks[i].name);
    free(g->marks);
}

static const struct model_record_handler model_nvtx_handlers[] = {
    {PROF_REC_NVTX, model_nvtx_on_record},
    {PROF_REC_ACTION, model_nvtx_on_record},
    {PROF_REC_NVTX_LOST, model_nvtx_on_lost},
};

const struct model_part model_nvtx_part = {
    .name = "nvtx",
    MODEL_PART_HANDLERS(model_nvtx_handlers),
    .finish = model_nvtx_finish,
    .free = model_nvtx_free,
};
