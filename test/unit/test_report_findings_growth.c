/* The step-growth finding (findings_growth.c, findings_step_growth) from a process's step
 * times alone: a ramp is growth though one fifth of its steps runs faster than the fifth
 * before (a CI run's loop of 1 ms steps on a loaded machine lost its finding to that), and
 * a dip in the middle of the run that ends higher than it began is none. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "findings_steps.h"
#include "steps_report.h"

#define NSTEPS 60

static struct model_process *proc;
static struct findings found;

static void teardown(void)
{
    if (proc)
        free(proc->steps.steps);
    free(proc);
    proc = NULL;
    findings_free(&found);
}

TestSuite(report_findings_growth, .fini = teardown);

/* Steps 1..NSTEPS back to back taking us[i] microseconds, all of it other CPU; the finding
 * made of them, NULL when none. slow: a slow_steps finding made before it, as
 * findings_steps_process makes one. */
static const struct finding *growth_of_after(const double *us, int slow)
{
    proc = calloc(1, sizeof *proc);
    cr_assert(proc);
    proc->steps.steps = calloc(NSTEPS, sizeof *proc->steps.steps);
    cr_assert(proc->steps.steps);
    proc->steps.nsteps = NSTEPS;
    uint64_t t = 1000000, *sorted = malloc(NSTEPS * sizeof *sorted);
    cr_assert(sorted);
    for (size_t i = 0; i < NSTEPS; i++) {
        struct model_step *s = &proc->steps.steps[i];
        s->number = i + 1;
        s->start_ns = t;
        s->end_ns = t += (uint64_t)(us[i] * 1000);
        s->part_ns[MODEL_STEP_OTHER] = s->end_ns - s->start_ns;
        sorted[i] = s->end_ns - s->start_ns;
    }
    for (size_t i = 0; i < NSTEPS; i++) /* the median, for the finding's sentence */
        for (size_t j = i + 1; j < NSTEPS; j++)
            if (sorted[j] < sorted[i]) {
                uint64_t x = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = x;
            }
    struct steps_stats st = {.p = proc, .nsteps = NSTEPS, .first_number = 1,
                             .last_number = NSTEPS, .counted = NSTEPS,
                             .median_ns = sorted[(NSTEPS - 1) / 2]};
    for (size_t i = 0; i < NSTEPS; i++)
        if (proc->steps.steps[i].end_ns - proc->steps.steps[i].start_ns > st.max_ns) {
            st.max_ns = proc->steps.steps[i].end_ns - proc->steps.steps[i].start_ns;
            st.max_number = i + 1;
        }
    free(sorted);
    if (slow)
        findings_add(&found, "slow_steps", 2);
    findings_step_growth(&found, &st);
    for (size_t i = 0; i < found.n; i++)
        if (!strcmp(found.items[i].kind, "step_growth"))
            return &found.items[i];
    return NULL;
}

static const struct finding *growth_of(const double *us)
{
    return growth_of_after(us, 0);
}

/* 300 us growing to 1008 us, step by step. */
static void ramp(double *us)
{
    for (size_t i = 0; i < NSTEPS; i++)
        us[i] = 300 + 12 * (double)i;
}

Test(report_findings_growth, a_steady_ramp_is_growth_with_its_rank_correlation)
{
    double us[NSTEPS];
    ramp(us);
    const struct finding *g = growth_of(us);
    cr_assert(g, "no step_growth");
    cr_assert(strstr(g->title, "step time grows through the run: steps 49-60 take 2.6x steps "
                               "1-12"),
              "%s", g->title);
    cr_assert(strstr(g->evidence, "rising with step order (Kendall's tau 1.00)"), "%s",
              g->evidence);
}

Test(report_findings_growth, a_ramp_is_growth_though_one_fifth_runs_faster_than_the_last)
{
    double us[NSTEPS];
    ramp(us);
    for (size_t i = 36; i < 48; i++) /* the fourth fifth: 0.7 times, below the third's */
        us[i] *= 0.7;
    const struct finding *g = growth_of(us);
    cr_assert(g, "no step_growth");
    /* the third fifth's median 648 us, the fourth's 0.7 x 792 */
    cr_assert(strstr(g->evidence, "648.00 us, 554.40 us, 936.00 us, rising with step order "
                                  "(Kendall's tau 0.81)"),
              "%s", g->evidence);
}

Test(report_findings_growth, a_dip_in_the_middle_is_no_growth)
{
    double us[NSTEPS];
    for (size_t i = 0; i < NSTEPS; i++) /* 1000 us down to 300 at step 25, then up to 1600 */
        us[i] = i < 24 ? 1000 - 700 * (double)i / 24 : 300 + 1300 * (double)(i - 24) / 35;
    cr_assert_null(growth_of(us));
    for (size_t i = 0; i < found.n; i++)
        cr_assert_str_neq(found.items[i].kind, "step_jump", "%s", found.items[i].title);
}

Test(report_findings_growth, noise_around_a_flat_step_is_no_growth)
{
    double us[NSTEPS];
    for (size_t i = 0; i < NSTEPS; i++)
        us[i] = 1000 + (double)((i * 7919) % 13) * 60; /* 1000-1720 us, no trend */
    cr_assert_null(growth_of(us));
    cr_assert_eq(found.n, 0);
}

/* The slowest step of a ramp is the ramp's: no slow-steps finding beside the growth. */
Test(report_findings_growth, the_ramps_slowest_step_is_no_slow_step_of_its_own)
{
    double us[NSTEPS];
    ramp(us);
    cr_assert(growth_of_after(us, 1), "no step_growth");
    cr_assert_null(findings_find(&found, "slow_steps"));
    cr_assert_eq(found.n, 1);
}

/* A stall in the last fifth, 3x its median, stays a slow step of its own. */
Test(report_findings_growth, a_stall_in_the_last_fifth_stays_a_slow_step)
{
    double us[NSTEPS];
    ramp(us);
    us[55] = 3 * 936;
    cr_assert(growth_of_after(us, 1), "no step_growth");
    cr_assert_not_null(findings_find(&found, "slow_steps"));
    cr_assert_eq(found.n, 2);
}
