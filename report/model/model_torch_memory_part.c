/* model_torch_memory_part: the tensor memory of one part of a process (profreport --phase;
 * the steady training steps by default), beside the whole process's (model_torch.c).
 *
 * From the memory records in time order: the live bytes as the part begins and once it
 * has ended, the peak inside it and the allocation that reached it, what was allocated and
 * freed in it, the steps whose live bytes grew, and the allocation site whose live bytes
 * grew the most after the part's first step (which may allocate once what later steps
 * reuse: gradients, an optimizer's state). A record counts in the part when its tick is inside
 * [start, end] (the call's end: its effect is visible once it returns). A site is the innermost op
 * and Python node of an allocation; a free counts against the site of the block it frees, so a site
 * that frees every step what it allocated the step before did not grow, and one that keeps what it
 * allocates (a list of losses with their graphs) did.
 *
 * The records are the only source: a device whose ring dropped any is left whole-process
 * (the process's own counters are totals, not per part), and the reason said. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hashmap.h"
#include "model.h"
#include "model_part.h"

struct mem_part_site {
    uint32_t op_sid, py_node;
    int64_t bytes; /* allocated in the part less freed in the part */
};

struct mem_part_walk {
    struct u64map blocks;  /* ptr -> index + 1 of its allocation record */
    struct u64map site_of; /* op_sid << 32 | py_node -> index + 1 in sites */
    struct mem_part_site *sites;
    size_t nsites, cap_sites;
    int64_t live;
};

static uint32_t mem_part_op_sid(const struct model_torch *t, const struct model_torch_mem *e)
{
    return e->op ? t->ops[e->op - 1].name_sid : 0;
}

static struct mem_part_site *mem_part_site(struct mem_part_walk *w, uint32_t op_sid,
                                           uint32_t py_node)
{
    uint64_t *slot = u64map_slot(&w->site_of, (uint64_t)op_sid << 32 | py_node);
    if (!slot)
        report_oom();
    if (!*slot) {
        w->sites = report_grow(w->sites, &w->cap_sites, w->nsites + 1, sizeof *w->sites);
        w->sites[w->nsites] = (struct mem_part_site){op_sid, py_node, 0};
        *slot = ++w->nsites;
    }
    return &w->sites[*slot - 1];
}

static void mem_part_site_of(const struct model_process *p, struct model_torch_mem_site *site,
                             uint32_t op_sid, uint32_t py_node)
{
    const struct model_py_func *f = model_torch_py_func_at(p, py_node);
    const struct model_py_func *own = model_torch_py_own_func_at(p, py_node);
    site->op_sid = op_sid;
    site->op = op_sid ? u64map_get_ptr(&p->strings, op_sid) : NULL;
    site->func = f ? f->id : 0;
    site->own = own ? own->id : 0;
}

/* The steps of the part (first .. nsteps - 1 of p->steps) whose live bytes grew: each
 * step's live bytes at its start (before the records of its first tick) against those
 * once it ended. Called before each record at ns, and with UINT64_MAX at the end. */
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
    struct mem_part_walk w = {0};
    u64map_init(&w.blocks);
    u64map_init(&w.site_of);
    size_t first = p->steps.nsteps - nsteps;
    struct mem_part_steps steps = {.st = &p->steps, .first = first, .next = first};
    /* the sites count from the end of the first step on */
    uint64_t site_after = nsteps > 1 ? p->steps.steps[first].end_ns : 0;
    uint64_t start = model_start_monotonic_ns(p);
    int began = 0, ended = 0;
    for (size_t k = 0; k <= t->nmems; k++) {
        const struct model_torch_mem *e = k < t->nmems ? &t->mems[k] : NULL;
        if (e && (e->dev_type != m->dev_type || e->dev_index != m->dev_index))
            continue;
        uint64_t ns = e ? model_ticks_to_monotonic_ns(p, e->ticks) : UINT64_MAX;
        if (!began && ns >= lo) {
            began = 1;
            q->live_start = q->live_first_end = q->peak_bytes = w.live;
            q->peak_ns = lo > start ? lo - start : 0;
        }
        if (!ended && ns > hi) {
            ended = 1;
            q->live_end = w.live;
        }
        if (nsteps)
            mem_part_steps_to(&steps, q, w.live, ns);
        if (!e)
            break;
        int inside = ns >= lo && ns <= hi;
        int for_sites = inside && (nsteps > 1 ? ns > site_after : 1);
        w.live = model_i64_add(w.live, e->bytes);
        if (e->bytes > 0) {
            uint64_t *slot = u64map_slot(&w.blocks, e->ptr);
            if (!slot)
                report_oom();
            *slot = k + 1; /* a block at an address still live: its free was not recorded */
            if (!inside)
                continue;
            q->allocated += (uint64_t)e->bytes;
            q->alloc_count++;
            if (for_sites)
                mem_part_site(&w, mem_part_op_sid(t, e), e->py_node)->bytes += e->bytes;
            if (w.live > q->peak_bytes) {
                q->peak_bytes = w.live;
                q->peak_ns = ns > start ? ns - start : 0;
                mem_part_site_of(p, &q->peak, mem_part_op_sid(t, e), e->py_node);
            }
            continue;
        }
        uint64_t *slot = u64map_find(&w.blocks, e->ptr);
        const struct model_torch_mem *a = slot ? &t->mems[*slot - 1] : NULL;
        if (a)
            u64map_remove(&w.blocks, e->ptr);
        if (!inside)
            continue;
        q->freed += 0 - (uint64_t)e->bytes;
        q->free_count++;
        if (a && for_sites)
            mem_part_site(&w, mem_part_op_sid(t, a), a->py_node)->bytes += e->bytes;
    }
    if (!ended) /* the part ends at UINT64_MAX: never */
        q->live_end = w.live;
    const struct mem_part_site *grew = NULL;
    for (size_t i = 0; i < w.nsites; i++)
        if (w.sites[i].bytes > q->grew_bytes) {
            q->grew_bytes = w.sites[i].bytes;
            grew = &w.sites[i];
        }
    if (grew)
        mem_part_site_of(p, &q->grew, grew->op_sid, grew->py_node);
    free(w.sites);
    u64map_free(&w.blocks);
    u64map_free(&w.site_of);
}

static void mem_part_of(struct model_process *p, struct model_torch_memory *m)
{
    struct model_torch_memory_part *q = &m->part;
    enum model_window asked = model_torch_window_asked();
    uint64_t lo, hi;
    size_t nsteps;
    memset(q, 0, sizeof *q);
    q->window = MODEL_WINDOW_ALL;
    if (!m->any || asked == MODEL_WINDOW_ALL)
        return;
    if (!model_window_bounds(p, &lo, &hi, &nsteps)) {
        q->miss = MODEL_WINDOW_MISS_NO_STEPS;
        return;
    }
    if (m->records_lost) {
        q->miss = MODEL_WINDOW_MISS_CALLS;
        return;
    }
    q->window = (uint8_t)asked;
    q->window_ns = hi - lo;
    q->start_ns = lo - (lo < model_start_monotonic_ns(p) ? lo : model_start_monotonic_ns(p));
    q->steps = nsteps;
    mem_part_one(p, m, lo, hi, nsteps);
}

void model_torch_memory_parts(struct model_process *p)
{
    struct model_torch *t = &p->torch;
    mem_part_of(p, &t->memory);
    for (size_t d = 0; d < t->ndevices; d++)
        mem_part_of(p, &t->devices[d]);
}

int64_t model_torch_memory_growth(const struct model_torch_memory_part *q)
{
    return model_i64_add(q->live_end, 0 - (q->steps > 1 ? q->live_first_end : q->live_start));
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
