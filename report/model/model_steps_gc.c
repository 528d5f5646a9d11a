/* model_steps_gc: the pauses of Python's garbage collector (PY_GC records, steps.gcs) inside
 * a stretch of a thread, so that a slow step whose time went to a collection is said to be
 * the collector's, not the function that allocated at that moment. */
#include <stdint.h>

#include "model.h"
#include "model_steps_hot.h"

void model_steps_gc_totals(struct model_process *p, size_t warm)
{
    struct model_steps *st = &p->steps;
    uint64_t lo = st->steps[warm].start_ns, hi = st->steps[st->nsteps - 1].end_ns;
    for (size_t i = 0; i < st->ngcs; i++) {
        const struct model_step_gc *g = &st->gcs[i];
        uint64_t s = model_ticks_to_monotonic_ns(p, g->start);
        uint64_t e = model_ticks_to_monotonic_ns(p, g->end);
        size_t k = s >= lo && s < hi ? model_steps_index_at(st, s) : SIZE_MAX; /* (gaps) */
        if (g->tid != st->tid || k == SIZE_MAX || e < s)
            continue; /* (a pause begun in the steady steps counts whole) */
        st->gc_ns += e - s;
        st->gc_count++;
        st->gc_full += g->generation >= 2;
        if (e - s > st->gc_max_ns) {
            st->gc_max_ns = e - s;
            st->gc_max_number = st->steps[k].number;
        }
    }
    st->gc_ns /= st->nsteps - warm;
}

uint64_t model_steps_gc_in(const struct model_process *p, uint32_t tid, uint64_t a, uint64_t b,
                           int *generation)
{
    uint64_t ns = 0;
    int oldest = -1;
    for (size_t i = 0; i < p->steps.ngcs; i++) {
        const struct model_step_gc *g = &p->steps.gcs[i];
        if (g->tid != tid)
            continue;
        uint64_t s = model_ticks_to_monotonic_ns(p, g->start);
        uint64_t e = model_ticks_to_monotonic_ns(p, g->end);
        s = s > a ? s : a;
        e = e < b ? e : b;
        if (e <= s)
            continue;
        ns += e - s;
        oldest = g->generation > oldest ? g->generation : oldest;
    }
    if (generation)
        *generation = oldest;
    return ns;
}
