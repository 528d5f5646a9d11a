/* findings_growth: step time that grows through the run, or that jumps once (step_growth,
 * step_jump): see findings_steps.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "findings_steps.h"
#include "format.h"
#include "steps_view.h"
#include "sort_keys.h"

/* Whether p's tensor memory is known not to grow over the steady steps: each device's part
 * made (no record lost) and grown by less than MEMORY_GROWTH_BYTES after the first step. */
static int findings_memory_flat(const struct model_process *p)
{
    int known = 0;
    for (size_t d = 0; d <= p->torch.ndevices; d++) {
        const struct model_torch_memory *m = d ? &p->torch.devices[d - 1] : &p->torch.memory;
        if (!m->any)
            continue;
        if (m->part.window == MODEL_WINDOW_ALL || m->part.steps < 3 ||
            model_torch_memory_growth(&m->part) >= (int64_t)T(MEMORY_GROWTH_BYTES))
            return 0;
        known = 1;
    }
    return known;
}

/* The median of v[0, n) (sorted here). */
static double findings_median_of(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, sort_u64_cmp);
    return n ? (double)v[(n - 1) / 2] : 0;
}

/* The number of the steady step at which step time changed once, or 0: the split that
 * leaves the fewest steps on the wrong side of the midpoint of lo and hi (the first and
 * last fifths' medians), when the tenth of the steps just before it is still at lo's level
 * and the tenth just after already at hi's (a ramp crosses the midpoint too, slowly). */
static uint64_t findings_step_jump_at(const struct steps_stats *st, double lo, double hi)
{
    const struct model_steps *ms = &st->p->steps;
    size_t n = 0, above = 0, above_before = 0, best = SIZE_MAX, at = 0;
    uint64_t *ns = malloc((st->counted + 1) * sizeof *ns);
    uint64_t *win = malloc((st->counted + 1) * sizeof *win);
    uint64_t *number = malloc((st->counted + 1) * sizeof *number);
    if (!ns || !win || !number)
        report_oom();
    for (size_t i = st->warmup; i < ms->nsteps && n < st->counted; i++) {
        const struct model_step *s = &ms->steps[i];
        if (s->number < st->first_number || s->number > st->last_number)
            continue;
        number[n] = s->number;
        ns[n] = s->end_ns - s->start_ns;
        above += (double)ns[n++] >= (lo + hi) / 2;
    }
    for (size_t k = 0; k < n; k++) {
        size_t wrong = above_before + (n - k) - (above - above_before);
        if (wrong < best) {
            best = wrong;
            at = k;
        }
        above_before += (double)ns[k] >= (lo + hi) / 2;
    }
    size_t w = n / 10 > 3 ? n / 10 : 3;
    uint64_t jump = 0;
    if (at >= w && at + w <= n) {
        memcpy(win, ns + at - w, w * sizeof *win);
        double before = findings_median_of(win, w);
        memcpy(win, ns + at, w * sizeof *win);
        double after = findings_median_of(win, w);
        if (before <= lo + (hi - lo) / 5 && after >= hi - (hi - lo) / 5)
            jump = number[at];
    }
    free(ns);
    free(win);
    free(number);
    return jump;
}

/* Kendall's tau of step time against step order over ns[0, n) in step order: +1 when every
 * step is slower than every one before, 0 for no trend. A long run's steps are taken in
 * STEP_TREND_BINS runs of consecutive steps, each by its median, so the pairs stay under
 * half a million. */
#define STEP_TREND_BINS 1000
static double findings_step_trend(const uint64_t *ns, size_t n)
{
    size_t b = n < STEP_TREND_BINS ? n : STEP_TREND_BINS;
    uint64_t *tmp = malloc(n * sizeof *tmp), *bin = malloc(b * sizeof *bin);
    if (!tmp || !bin)
        report_oom();
    memcpy(tmp, ns, n * sizeof *tmp);
    for (size_t k = 0; k < b; k++) {
        size_t at = k * n / b;
        bin[k] = (uint64_t)findings_median_of(tmp + at, (k + 1) * n / b - at);
    }
    int64_t sum = 0;
    for (size_t i = 0; i < b; i++)
        for (size_t j = i + 1; j < b; j++)
            sum += (bin[j] > bin[i]) - (bin[j] < bin[i]);
    free(tmp);
    free(bin);
    return b > 1 ? (double)sum / ((double)b * (double)(b - 1) / 2) : 0;
}

/* Step time that grows through the run (a list of tensors re-summed every step, a graph
 * kept alive, a batch size ramped up): the counted steps in fifths, the last fifth's median
 * step at least STEP_GROWTH_RATIO times the first's, and step time rising with step order
 * (Kendall's tau at least STEP_GROWTH_TAU: a CI run's loop grown 3x lost its finding when
 * one fifth's median, of 12 steps of 1 ms on a loaded machine, fell below 0.9 times the
 * one before, the rule this replaced; a flat run's noise reads near 0, a dip in the middle
 * that ends higher than it began 0.41).
 * Medians, not means: periodic slow steps, spread over every fifth, are no trend, and a
 * loaded machine's stalls in one fifth do not hide one (a review's real leak read 13.23,
 * 12.47, 14.16, 17.13, 20.17 ms by means). The median of all then describes a step in the
 * middle of the run, not a typical one. */
void findings_step_growth(struct findings *f, const struct steps_stats *st)
{
    const struct model_steps *ms = &st->p->steps;
    size_t n = st->counted, seen = 0, count[5] = {0};
    if (n < 10 || !st->median_ns)
        return;
    uint64_t *ns = malloc(n * sizeof *ns), parts[2][MODEL_STEP_PART_COUNT] = {{0}};
    uint64_t numbers[2][2] = {{0}};
    if (!ns)
        report_oom();
    for (size_t i = st->warmup; i < ms->nsteps && seen < n; i++) {
        const struct model_step *s = &ms->steps[i];
        if (s->number < st->first_number || s->number > st->last_number)
            continue;
        size_t q = seen * 5 / n; /* 0..4, in step order */
        ns[seen++] = s->end_ns - s->start_ns;
        count[q]++;
        if (q == 0 || q == 4) { /* the first and last fifths: their numbers and parts */
            int e = q == 4;
            numbers[e][0] = numbers[e][0] ? numbers[e][0] : s->number;
            numbers[e][1] = s->number;
            for (int j = 0; j < MODEL_STEP_PART_COUNT; j++)
                parts[e][j] += s->part_ns[j];
        }
    }
    double tau = findings_step_trend(ns, seen), med[5], first_p75 = 0, last_p25 = 0;
    char meds[192] = "";
    for (size_t q = 0, at = 0; q < 5; at += count[q++]) {
        qsort(ns + at, count[q], sizeof *ns, sort_u64_cmp);
        med[q] = count[q] ? (double)ns[at + (count[q] - 1) / 2] : 0;
        if (q == 0 && count[q]) /* quartiles, nearest rank */
            first_p75 = (double)ns[at + (3 * count[q] + 3) / 4 - 1];
        if (q == 4 && count[q])
            last_p25 = (double)ns[at + (count[q] + 3) / 4 - 1];
        char t[32];
        format_ns(med[q], t, sizeof t);
        size_t used = strlen(meds);
        snprintf(meds + used, sizeof meds - used, "%s%s", q ? ", " : "", t);
    }
    free(ns);
    /* the time changed once (a review's background thread, started at step 151, read as
     * growth and as more work per step); the early steps' settling may be slower still */
    uint64_t jump = med[0] && med[4] >= T(STEP_GROWTH_RATIO) * med[0]
                        ? findings_step_jump_at(st, med[0], med[4])
                        : 0;
    for (int q = 1; q < 5 && !jump; q++)
        if (!count[q])
            return;
    if (!jump && tau < T(STEP_GROWTH_TAU))
        return;
    /* and apart: the last fifth's lower quartile above the first's upper one (steps of two
     * lengths, an evaluation in every other one, move a fifth's median by their mix) */
    if (!jump && (!med[0] || med[4] < T(STEP_GROWTH_RATIO) * med[0] || last_p25 <= first_p75))
        return;
    for (int j = 0; j < MODEL_STEP_PART_COUNT; j++) { /* per step */
        parts[0][j] /= count[0];
        parts[1][j] /= count[4];
    }
    char a[32], b[32], all[32], e[32];
    format_ns(med[0], a, sizeof a);
    format_ns(med[4], b, sizeof b);
    format_ns((double)st->median_ns, all, sizeof all);
    struct finding *x = findings_add(f, jump ? "step_jump" : "step_growth", 1 - med[0] / med[4]);
    if (jump)
        findings_set(x->title, sizeof x->title,
                     "step time jumps at step %llu: the steps from it take %.1fx those before "
                     "(%s against %s, the last and first fifths' medians)",
                     (unsigned long long)jump, med[4] / med[0], b, a);
    else
        findings_set(x->title, sizeof x->title,
                     "step time grows through the run: steps %llu-%llu take %.1fx steps "
                     "%llu-%llu (%s against %s, medians)",
                     (unsigned long long)numbers[1][0], (unsigned long long)numbers[1][1],
                     med[4] / med[0], (unsigned long long)numbers[0][0],
                     (unsigned long long)numbers[0][1], b, a);
    uint64_t excess;
    int part = steps_largest_excess(parts[1], parts[0], &excess);
    format_ns((double)excess, e, sizeof e);
    /* tensor memory that does not grow: more work per step, not something kept (a review's
     * reinforcement-learning loop, whose episodes grew as its policy learnt, read as a leak) */
    int flat = findings_memory_flat(st->p);
    char trend[64] = "";
    if (!jump)
        snprintf(trend, sizeof trend, ", rising with step order (Kendall's tau %.2f)", tau);
    findings_set(x->evidence, sizeof x->evidence,
                 "the median step of each fifth of the %zu steady steps: %s%s; by part most %s "
                 "+%s; %s; the median of all (%s) is a step in the middle of the run",
                 n, meds, trend, part >= 0 ? model_step_part_name(part) : "none", e,
                 jump   ? "it changed once, not gradually: something began then (another thread "
                          "or process competing for the CPU or the GIL, a schedule that changed "
                          "the batch, the sequences or the model)"
                 : flat ? "tensor memory does not grow: the work per step does (more calls per "
                          "step: longer episodes or sequences, a batch size ramped up, a "
                          "growing Python structure walked every step)"
                        : "something kept from step to step may grow (a list of tensors, a "
                          "graph not detached, a cache), or the work per step (a batch size or "
                          "sequence length ramped up)",
                 all);
    /* the slowest step of the last fifth (one stall earlier may be the slowest of all) */
    const struct model_step_hot *h = NULL;
    for (size_t i = 0; i < st->p->steps.nslow_hot && !h; i++)
        if (st->p->steps.slow_hot[i].step >= numbers[1][0])
            h = &st->p->steps.slow_hot[i];
    if (h) {
        char o[32];
        format_ns((double)h->self_ns, o, sizeof o);
        findings_set(x->where, sizeof x->where,
                     "%s%s%s: +%s in step %llu, the slowest%s, over its mean per steady step",
                     h->name, *h->caller ? ", called from " : "", h->caller, o,
                     (unsigned long long)h->step,
                     h->step == st->max_number ? "" : " of the last fifth");
    }
    /* the slowest step of the last fifth, or of the steps from the jump, under
     * STEP_OUTLIER_RATIO times the last fifth's median is this finding's, not a stall: the
     * slow steps' finding (made before: "step 56 takes 2.0x the median" beside a loop
     * grown 3.6x) goes */
    if (st->max_number >= (jump ? jump : numbers[1][0]) &&
        (double)st->max_ns < T(STEP_OUTLIER_RATIO) * med[4])
        for (size_t i = 0; i < f->n; i++)
            if (!strcmp(f->items[i].kind, "slow_steps")) {
                memmove(f->items + i, f->items + i + 1, (f->n - i - 1) * sizeof *f->items);
                f->n--;
                break;
            }
}
