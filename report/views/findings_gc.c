/* findings_gc: Python's garbage collector in the training steps (step_gc): the pauses of
 * the step thread's collections (PY_GC records, model_steps_gc.c) against the steps. */
#include <stdio.h>

#include "findings_steps.h"
#include "format.h"

void findings_step_gc(struct findings *f, const struct steps_stats *st, const char *who)
{
    const struct model_steps *ms = &st->p->steps;
    double share = findings_share(ms->gc_ns, st->mean_ns);
    if (!ms->gc_count || share < T(STEP_GC_SHARE))
        return;
    char per[32], longest[32];
    format_ns((double)ms->gc_ns, per, sizeof per);
    format_ns((double)ms->gc_max_ns, longest, sizeof longest);
    struct finding *x = findings_add(f, "step_gc", share);
    findings_set(x->title, sizeof x->title,
                 "garbage collection: Python's collector pauses the training thread %.0f%% of "
                 "the step%s",
                 100 * share, who);
    findings_set(x->evidence, sizeof x->evidence,
                 "%s per step in %llu collections over the steady steps, %llu of them full "
                 "(generation 2); the longest %s, in step %llu. A collection pauses the thread "
                 "whose allocation set it off, wherever it was, and a full one walks every "
                 "object alive: gc.freeze() after the set-up keeps the long-lived ones (a "
                 "dataset's, a buffer's, the model's Python objects) out of later collections; "
                 "gc.disable() with a gc.collect() every N steps puts the pauses where you "
                 "choose (on every rank at the same step)",
                 per, (unsigned long long)ms->gc_count, (unsigned long long)ms->gc_full, longest,
                 (unsigned long long)ms->gc_max_number);
}
