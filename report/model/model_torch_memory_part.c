/* model_torch_memory_part: the tensor memory of one part of a process (profreport --phase;
 * the steady training steps by default), beside the whole process's (model_torch.c).
 *
 * From the memory records in time order: the live bytes as the part begins, after its
 * first step and once it has ended, the peak inside it and the allocation that reached it,
 * what was allocated and freed in it, the steps after the first whose live bytes grew, and
 * the allocation site whose live bytes grew the most after the part's first step (which
 * may allocate once what later steps reuse: gradients, an optimizer's state). A record
 * counts in the part when its tick is inside [start, end] (the call's end: its effect is
 * visible once it returns). A site is the innermost op and Python node of an allocation; a
 * free counts against the site of the block it frees (paired by address), so a site that
 * frees every step what it allocated the step before did not grow, and one that keeps
 * what it allocates (a list of outputs with their graphs) did.
 *
 * The records are the only source: a device whose ring dropped any (its own counters say
 * how many; without them, any event the process lost) is left whole-process, as is a
 * process whose capture window opened more than once (what was freed while it was closed
 * is unknown), and the reason said. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hashmap.h"
#include "model.h"
#include "model_part.h"
#include "sort_keys.h"

struct mem_part_site {
    uint32_t op_sid, py_node;
    int64_t bytes; /* allocated in the part less freed in the part */
};

struct mem_part_sites {
    struct u64map index; /* op_sid << 32 | py_node -> index + 1 in v */
    struct mem_part_site *v;
    size_t n, cap;
};

/* The site of allocation e (op and Python node). */
static struct mem_part_site *mem_part_site(struct mem_part_sites *s, const struct model_torch *t,
                                           const struct model_torch_mem *e)
{
    uint32_t op_sid = e->op ? t->ops[e->op - 1].name_sid : 0;
    uint64_t *slot = u64map_slot(&s->index, (uint64_t)op_sid << 32 | e->py_node);
    if (!slot)
        report_oom();
    if (!*slot) {
        s->v = report_grow(s->v, &s->cap, s->n + 1, sizeof *s->v);
        s->v[s->n] = (struct mem_part_site){op_sid, e->py_node, 0};
        *slot = ++s->n;
    }
    return &s->v[*slot - 1];
}

static void mem_part_site_of(const struct model_process *p, struct model_torch_mem_site *site,
                             uint32_t op_sid, uint32_t py_node)
{
    const struct model_py_func *f = model_torch_py_func_at(p, py_node);
    const struct model_py_func *own = model_torch_py_own_func_at(p, py_node);
    site->op_sid = op_sid;
    site->op = op_sid ? u64map_get_ptr(&p->strings, op_sid) : NULL;
    if (op_sid && !site->op)
        site->op = "(unknown op)";
    site->func = f ? f->id : 0;
    site->own = own ? own->id : 0;
}

/* The steps of the part (first .. nsteps - 1 of p->steps): the live bytes once the first
 * ended, and the later ones whose live bytes grew (at its start: before the records of its
 * first tick; at its end: after those of its last). Called before each record at ns, and
 * with UINT64_MAX at the end. */
struct mem_part_steps {
    const struct model_steps *st;
    size_t first, next;
    int open;
    int64_t at_start;
};

static void mem_part_steps_to(struct mem_part_steps *s, struct model_torch_memory_part *q,
                              int64_t live, uint64_t ns)
{
    while (s->next < s->st->nsteps) {
        const struct model_step *step = &s->st->steps[s->next];
        if (!s->open && step->start_ns <= ns) {
            s->open = 1;
            s->at_start = live;
        } else if (s->open && step->end_ns < ns) {
            s->open = 0;
            if (s->next++ == s->first)
                q->live_first_end = live;
            else
                q->steps_grown += live > s->at_start;
        } else {
            return;
        }
    }
}

static void mem_part_one(struct model_process *p, struct model_torch_memory *m, uint64_t lo,
                         uint64_t hi, size_t nsteps)
{
    const struct model_torch *t = &p->torch;
    struct model_torch_memory_part *q = &m->part;
    struct mem_part_sites sites = {0};
    u64map_init(&sites.index);
    size_t first = p->steps.nsteps - nsteps, peak = 0; /* index + 1 of the peak's record */
    struct mem_part_steps steps = {.st = &p->steps, .first = first, .next = first};
    /* the sites count from the end of the first step on */
    uint64_t site_after = nsteps > 1 ? p->steps.steps[first].end_ns : 0;
    uint64_t start = model_start_monotonic_ns(p);
    int64_t live = 0;
    int began = 0, ended = 0;
    for (size_t k = 0; k <= t->nmems; k++) {
        const struct model_torch_mem *e = k < t->nmems ? &t->mems[k] : NULL;
        if (e && (e->dev_type != m->dev_type || e->dev_index != m->dev_index))
            continue;
        uint64_t ns = e ? model_ticks_to_monotonic_ns(p, e->ticks) : UINT64_MAX;
        if (!began && ns >= lo) {
            began = 1;
            q->live_start = q->live_first_end = q->peak_bytes = live;
            q->peak_ns = lo > start ? lo - start : 0;
        }
        if (!ended && ns > hi) {
            ended = 1;
            q->live_end = live;
        }
        if (nsteps)
            mem_part_steps_to(&steps, q, live, ns);
        if (!e)
            break;
        live = model_i64_add(live, e->bytes);
        if (ns < lo || ns > hi)
            continue;
        int for_sites = nsteps > 1 ? ns > site_after : 1;
        if (e->bytes > 0) {
            q->allocated += (uint64_t)e->bytes;
            q->alloc_count++;
            if (for_sites) {
                struct mem_part_site *s = mem_part_site(&sites, t, e);
                s->bytes = model_i64_add(s->bytes, e->bytes);
            }
            if (live > q->peak_bytes) {
                q->peak_bytes = live;
                q->peak_ns = ns > start ? ns - start : 0;
                peak = k + 1;
            }
            continue;
        }
        q->freed += 0 - (uint64_t)e->bytes; /* -INT64_MIN is undefined */
        q->free_count++;
        if (e->pair && for_sites) {
            struct mem_part_site *s = mem_part_site(&sites, t, &t->mems[e->pair - 1]);
            s->bytes = model_i64_add(s->bytes, e->bytes);
        }
    }
    if (!ended) /* the part ends at UINT64_MAX: never */
        q->live_end = live;
    if (peak) {
        const struct model_torch_mem *e = &t->mems[peak - 1];
        q->peak_inside = 1;
        mem_part_site_of(p, &q->peak, e->op ? t->ops[e->op - 1].name_sid : 0, e->py_node);
    }
    const struct mem_part_site *grew = NULL;
    for (size_t i = 0; i < sites.n; i++)
        if (sites.v[i].bytes > q->grew_bytes) {
            q->grew_bytes = sites.v[i].bytes;
            grew = &sites.v[i];
        }
    if (grew)
        mem_part_site_of(p, &q->grew, grew->op_sid, grew->py_node);
    free(sites.v);
    u64map_free(&sites.index);
}

/* order: the mems by device, address, then time (the index). Addresses below 2^48 (every
 * one a process maps on x86-64 and arm64) pack with the device into one key, sorted as
 * 16-byte pairs; else keys of three. */
static void mem_by_address(const struct model_torch *t, size_t *order)
{
    size_t k = 0;
    while (k < t->nmems && t->mems[k].ptr < (1ull << 48))
        k++;
    if (k == t->nmems) {
        struct sort_pair *pairs = malloc(t->nmems * sizeof *pairs);
        if (!pairs)
            report_oom();
        for (k = 0; k < t->nmems; k++) {
            const struct model_torch_mem *m = &t->mems[k];
            pairs[k] =
                (struct sort_pair){(uint64_t)(uint8_t)(m->dev_type + 128) << 56 |
                                       (uint64_t)(uint8_t)(m->dev_index + 128) << 48 | m->ptr,
                                   k};
        }
        sort_pairs(pairs, t->nmems); /* stable: equal keys in time order */
        for (k = 0; k < t->nmems; k++)
            order[k] = (size_t)pairs[k].value;
        free(pairs);
        return;
    }
    struct sort_key *keys = malloc(t->nmems * sizeof *keys);
    if (!keys)
        report_oom();
    for (k = 0; k < t->nmems; k++) {
        const struct model_torch_mem *m = &t->mems[k];
        keys[k] = (struct sort_key){
            {(uint64_t)(m->dev_type + 128), (uint64_t)(m->dev_index + 128), m->ptr, 0}, k};
    }
    sort_keys(keys, t->nmems, order);
    free(keys);
}

/* Each free's allocation (mems in time order): the latest allocation of its device and
 * address before it, when no free came between (an address allocated again while live
 * lost its free: the later allocation is the block). */
static void mem_pair(struct model_torch *t)
{
    if (!t->nmems || t->nmems > UINT32_MAX - 1)
        return;
    size_t *order = malloc(t->nmems * sizeof *order);
    if (!order)
        report_oom();
    mem_by_address(t, order);
    uint32_t last = 0; /* index + 1 of the latest live allocation at this address */
    for (size_t k = 0; k < t->nmems; k++) {
        struct model_torch_mem *e = &t->mems[order[k]];
        const struct model_torch_mem *prev = k ? &t->mems[order[k - 1]] : NULL;
        if (!prev || prev->ptr != e->ptr || prev->dev_type != e->dev_type ||
            prev->dev_index != e->dev_index)
            last = 0;
        if (e->bytes > 0) {
            last = (uint32_t)order[k] + 1;
        } else {
            e->pair = last;
            last = 0;
        }
    }
    free(order);
}

static size_t mem_window_openings(const struct model_process *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nmeta; i++)
        n += !strcmp(p->meta[i].key, "window_open");
    return n;
}

/* 1: the part can be made for m, and lo, hi, nsteps are its; else q says why not. */
static int mem_part_wanted(const struct model_process *p, struct model_torch_memory *m,
                           uint64_t *lo, uint64_t *hi, size_t *nsteps)
{
    struct model_torch_memory_part *q = &m->part;
    enum model_window asked = model_torch_window_asked();
    memset(q, 0, sizeof *q);
    q->window = MODEL_WINDOW_ALL;
    if (!m->any || asked == MODEL_WINDOW_ALL)
        return 0;
    if (!model_window_bounds(p, lo, hi, nsteps))
        q->miss = MODEL_WINDOW_MISS_NO_STEPS;
    else if (m->records_lost || (!m->exact && (p->lost || p->end_lost)))
        q->miss = MODEL_WINDOW_MISS_CALLS; /* without its counters: any event lost may be one */
    else if (mem_window_openings(p) > 1)
        q->miss = MODEL_WINDOW_MISS_REOPENED;
    else
        return 1;
    return 0;
}

void model_torch_memory_parts(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    int paired = 0;
    for (size_t d = 0; d <= t->ndevices; d++) {
        struct model_torch_memory *m = d ? &t->devices[d - 1] : &t->memory;
        uint64_t lo, hi;
        size_t nsteps;
        if (!mem_part_wanted(p, m, &lo, &hi, &nsteps))
            continue;
        if (!paired++)
            mem_pair(t);
        m->part.window = (uint8_t)model_torch_window_asked();
        m->part.window_ns = hi - lo;
        m->part.start_ns =
            lo - (lo < model_start_monotonic_ns(p) ? lo : model_start_monotonic_ns(p));
        m->part.steps = nsteps;
        mem_part_one(p, m, lo, hi, nsteps);
    }
}

int64_t model_torch_memory_growth(const struct model_torch_memory_part *q)
{
    return model_i64_sub(q->live_end, q->steps > 1 ? q->live_first_end : q->live_start);
}

static void mem_part_pick(struct model_torch_memory *m)
{
    struct model_torch_memory_part *q = &m->part;
    enum model_window asked = model_torch_window_asked();
    if (q->window == asked || q->window == MODEL_WINDOW_ALL)
        return; /* the part asked, or none with the reason --summarize had */
    memset(q, 0, sizeof *q);
    q->window = MODEL_WINDOW_ALL;
    q->miss = asked == MODEL_WINDOW_ALL ? MODEL_WINDOW_MISS_NONE : MODEL_WINDOW_MISS_SUMMARY;
}

void model_torch_memory_parts_pick(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    mem_part_pick(&t->memory);
    for (size_t d = 0; d < t->ndevices; d++)
        mem_part_pick(&t->devices[d]);
}
