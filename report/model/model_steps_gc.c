/* model_steps_gc: the pauses of Python's garbage collector (PY_GC records, steps.gcs) inside
 * a stretch of a thread, so that a slow step whose time went to a collection is said to be
 * the collector's, not the function that allocated at that moment. */
#include "model.h"
#include "model_steps_hot.h"

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
