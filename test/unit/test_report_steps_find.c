/* Steps from optimizer steps (model_steps_find.c): one step per optimizer step, unless the
 * loop steps k optimizers per DataLoader batch in a regular pattern (a GAN), when a step is
 * one batch's k. Each trace is one thread's record_function scopes: `enumerate(DataLoader)#`
 * fetches (F) and `Optimizer.step#` scopes (O), 100 ticks apart, in the order a pattern
 * string gives them (ticks are ns: no CLOCK record). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_steps_find");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_steps_find, .init = setup, .fini = teardown);

/* pattern: 'F' a batch fetched, 'O' an optimizer step, 'W' a forward, the whole repeated
 * `times` */
static struct model_process *load(const char *pattern, unsigned times)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "Optimizer.step#Adam.step");
    trace_build_string(&b, 2, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    trace_build_string(&b, 3, "DistributedDataParallel.forward");
    trace_build_thread(&b, 9);
    uint64_t t = 1000;
    for (unsigned r = 0; r < times; r++)
        for (const char *c = pattern; *c; c++, t += 100)
            trace_build_torch_op(&b,
                                 *c == 'O'   ? 1
                                 : *c == 'W' ? 3
                                             : 2,
                                 t, t + 40, -1, 0, MODEL_TORCH_SCOPE_USER, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

static void expect(const char *pattern, unsigned times, size_t nsteps, unsigned per_step)
{
    struct model_process *p = load(pattern, times);
    cr_expect_eq(p->steps.source, MODEL_STEPS_OPTIMIZER, "%s", pattern);
    cr_expect_eq(p->steps.nsteps, nsteps, "%s x %u: %zu steps", pattern, times, p->steps.nsteps);
    cr_expect_eq(p->steps.per_step, per_step, "%s x %u: %u per step", pattern, times,
                 p->steps.per_step);
    model_process_free(p);
}

Test(report_steps_find, a_batch_per_optimizer_step_is_a_step)
{
    expect("FO", 10, 10, 1);
}

Test(report_steps_find, two_optimizers_per_batch_make_one_step)
{
    struct model_process *p = load("FOO", 10);
    cr_assert_eq(p->steps.nsteps, 10);
    cr_expect_eq(p->steps.per_step, 2);
    /* step 1 from its batch to its second optimizer step; each later one from the end of the
     * one before; numbered by batch */
    cr_expect_eq(p->steps.steps[0].start_ns, 1000);
    cr_expect_eq(p->steps.steps[0].end_ns, 1240);
    cr_expect_eq(p->steps.steps[1].start_ns, 1240);
    cr_expect_eq(p->steps.steps[1].end_ns, 1540);
    cr_expect_eq(p->steps.steps[9].number, 10);
    model_process_free(p);
    expect("FOOO", 6, 6, 3);
}

Test(report_steps_find, epochs_and_a_skipped_step_still_group)
{
    /* each epoch ends with the spent iterator's last __next__: two fetches before the next
     * epoch's first group */
    expect("FOOFOOFOOFOOFOOF", 3, 15, 2);
    /* one generator step skipped (a GradScaler's inf): a group of one among twenty */
    struct model_process *p =
        load("FOOFOOFOOFOOFOOFOOFOOFOOFOOFOFOOFOOFOOFOOFOOFOOFOOFOOFOOFOO", 1);
    cr_expect_eq(p->steps.per_step, 2);
    cr_expect_eq(p->steps.nsteps, 20);
    model_process_free(p);
}

Test(report_steps_find, a_window_opened_inside_a_batch_still_groups)
{
    /* begins with a generator's step (no batch before it), ends after a discriminator's */
    expect("OFOOFOOFOOFOOFO", 1, 6, 2);
}

Test(report_steps_find, irregular_or_rare_batches_keep_the_optimizer_steps)
{
    expect("FFFFO", 8, 8, 1);            /* gradient accumulation */
    expect("OOOOOOOOOOFFFFF", 3, 30, 1); /* a validation loader every 10 steps */
    expect("OOOOOOOOOOF", 3, 30, 1);     /* one batch every 11: more than grouped */
    expect("FOOFOOOFOO", 3, 21, 1);      /* groups of 2 and 3 */
    expect("OOOO", 5, 20, 1);            /* no DataLoader */
}

/* Ten steps of a batch and an optimizer step each, the first 5x as long as the others,
 * in a trace whose capture window opened as window_open says (NULL: no window); with gpu,
 * a GPU kernel in each step. */
static struct model_process *load_slow_first(const char *window, const char *window_open, int gpu)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    if (window) {
        trace_build_meta(&b, "window", window);
        trace_build_meta(&b, "window_open", window_open);
    }
    trace_build_string(&b, 1, "Optimizer.step#Adam.step");
    trace_build_string(&b, 2, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    trace_build_string(&b, 3, "scale_kernel");
    trace_build_thread(&b, 9);
    for (uint64_t k = 0, t = 1000; k < 10; k++) {
        uint64_t len = k ? 100 : 500;
        trace_build_torch_op(&b, 2, t, t + 10, -1, 0, MODEL_TORCH_SCOPE_USER, 0, 0);
        if (gpu)
            trace_build_gpu_kernel(&b, (uint32_t)k + 1, t + 20, t + 30, 3, 0, 7,
                                   trace_build_dim3(1, 1, 1), trace_build_dim3(32, 1, 1), 16);
        trace_build_torch_op(&b, 1, t + len - 40, t + len - 10, -1, 0, MODEL_TORCH_SCOPE_USER, 0,
                             0);
        t += len;
    }
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

static size_t warmup_of_run(const char *window, const char *window_open, int late, int gpu)
{
    struct model_process *p = load_slow_first(window, window_open, gpu);
    cr_assert_eq(p->steps.nsteps, 10, "%s", window_open ? window_open : "no window");
    cr_expect_eq(p->steps.opened_late, late, "%s", window_open ? window_open : "no window");
    double ratio;
    size_t w = model_steps_warmup(&p->steps, &ratio);
    model_process_free(p);
    return w;
}

static size_t warmup_of(const char *window, const char *window_open, int late)
{
    return warmup_of_run(window, window_open, late, 0);
}

Test(report_steps_find, a_recording_opened_after_the_first_steps_has_no_warm_up)
{
    /* from the start: the slow first step is the program's warm-up (without a window its
     * start is inferred: left out whatever its time) */
    cr_expect_eq(warmup_of(NULL, NULL, 0), 1);
    cr_expect_eq(warmup_of("start", "5 start 0", 0), 1);
    cr_expect_eq(warmup_of("steps", "5 step 0 0", 0), 1);
    /* profrun attach at a step's end, PROF_STEPS after 8 steps: the process warmed up
     * before; its first recorded steps are steady */
    cr_expect_eq(warmup_of("attach", "5 step 9", 1), 0);
    cr_expect_eq(warmup_of("steps", "5 step 8 8", 1), 0);
    /* a window opened by time after 40 steps, or by an attach at no step's end: no warm-up
     * (its first step, cut by the opening, stays: the tables count the window's calls) */
    cr_expect_eq(warmup_of("time", "5 time 2000 40", 1), 0);
    cr_expect_eq(warmup_of("attach", "5 attach 1234", 1), 0);
    /* a time window that opened before any optimizer step: its slow first step is warm-up */
    cr_expect_eq(warmup_of("time", "5 time 2000 0", 0), 1);
}

Test(report_steps_find, an_attach_to_a_gpu_process_leaves_its_slow_first_step_out)
{
    /* on the H200 the attach window's first step held the first CUDA calls after the
     * attach, 4-6 ms each: left out when slow, the first alone */
    cr_expect_eq(warmup_of_run("attach", "5 step 9", 2, 1), 1);
    cr_expect_eq(warmup_of_run("attach", "5 attach 1234", 2, 1), 1);
    /* other windows of a GPU process, and an attach without GPU work, as before */
    cr_expect_eq(warmup_of_run("steps", "5 step 8 8", 1, 1), 0);
    cr_expect_eq(warmup_of_run("signal", "5 step 9", 1, 1), 0);
    cr_expect_eq(warmup_of_run("attach", "5 step 9", 1, 0), 0);
}

/* Steps from torch.profiler's ProfilerStep#N scopes: one a scope, numbered[i] naming the
 * i-th (N as torch wrote it), each 80 ticks long with an Optimizer.step# scope inside when
 * opt[i] is 'O' (a training phase), the next 100 ticks after it (the 20 between: the
 * profiler's own work inside prof.step()); then, when tail, a last scope of 2 ticks with no
 * phase, as the last prof.step() opens and the profiler's exit closes. */
static struct model_process *load_profiler_steps(const unsigned *numbered, size_t n,
                                                 const char *opt, int tail)
{
    struct trace_build b;
    char name[32];
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "Optimizer.step#Adam.step");
    for (unsigned k = 0; k < 40; k++) {
        snprintf(name, sizeof name, "ProfilerStep#%u", k);
        trace_build_string(&b, 10 + k, name);
    }
    trace_build_thread(&b, 9);
    uint64_t t = 1000;
    for (size_t i = 0; i < n + (tail ? 1 : 0); i++, t += 100) {
        int last = i == n;
        unsigned number = last ? numbered[n - 1] + 1 : numbered[i];
        trace_build_torch_op(&b, 10 + number, t, t + (last ? 2 : 80), -1, 0, MODEL_TORCH_SCOPE_USER,
                             0, 0);
        if (!last && opt[i] == 'O')
            trace_build_torch_op(&b, 1, t + 50, t + 70, -1, 0, MODEL_TORCH_SCOPE_USER, 1, 0);
    }
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

Test(report_steps_find, profiler_steps_are_numbered_once_each_in_order)
{
    /* torch 1.13's step() names the scope it opens by the step just ended: #0 twice */
    static const unsigned torch113[] = {0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned torch2[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const unsigned *runs[] = {torch113, torch2};
    for (int r = 0; r < 2; r++) {
        struct model_process *p = load_profiler_steps(runs[r], 10, "OOOOOOOOOO", 1);
        cr_assert_eq(p->steps.source, MODEL_STEPS_PROFILER_STEP);
        cr_assert_eq(p->steps.nsteps, 10, "run %d: %zu steps (the teardown's scope is none)", r,
                     p->steps.nsteps);
        for (size_t i = 0; i < 10; i++)
            cr_expect_eq(p->steps.steps[i].number, i, "run %d: step %zu numbered %" PRIu64, r, i,
                         p->steps.steps[i].number);
        model_process_free(p);
    }
}

Test(report_steps_find, profiler_steps_run_boundary_to_boundary)
{
    static const unsigned numbered[] = {0, 1, 2, 3, 4, 5};
    struct model_process *p = load_profiler_steps(numbered, 6, "OOOOOO", 1);
    cr_assert_eq(p->steps.nsteps, 6);
    /* each from its scope's start to the next one's (prof.step()'s own work inside), the
     * last to the teardown scope's start */
    for (size_t i = 0; i < 6; i++) {
        cr_expect_eq(p->steps.steps[i].start_ns, 1000 + 100 * i);
        cr_expect_eq(p->steps.steps[i].end_ns, 1100 + 100 * i, "step %zu ends at %" PRIu64, i,
                     p->steps.steps[i].end_ns);
    }
    model_process_free(p);
}

Test(report_steps_find, a_last_profiler_step_that_trains_is_a_step)
{
    static const unsigned numbered[] = {0, 1, 2, 3, 4, 5};
    /* no teardown scope: the last scope trains (prof.step() at an iteration's start) */
    struct model_process *p = load_profiler_steps(numbered, 6, "OOOOOO", 0);
    cr_assert_eq(p->steps.nsteps, 6);
    cr_expect_eq(p->steps.steps[5].end_ns, 1580); /* its own end: no scope after it */
    model_process_free(p);
    /* a scope with no training between two that train is a step all the same */
    p = load_profiler_steps(numbered, 6, "OOO-OO", 1);
    cr_expect_eq(p->steps.nsteps, 6);
    model_process_free(p);
}

/* Without a DataLoader, two optimizers stepped after one backward (no forward between their
 * ends: an encoder's and a head's) are one step; a review found 119 steps for 60
 * iterations, every other one 4 ms, and a slow-steps finding of every second step. */
Test(report_steps_find, optimizers_stepped_after_one_backward_make_one_step)
{
    struct model_process *p = load("WOO", 10);
    cr_assert_eq(p->steps.nsteps, 10);
    cr_expect_eq(p->steps.per_step, 2);
    cr_expect_eq(p->steps.grouped_by, MODEL_STEPS_GROUP_BACKWARD);
    cr_expect_eq(p->steps.steps[1].start_ns, 1240); /* each from the second end to the next */
    cr_expect_eq(p->steps.steps[1].end_ns, 1540);
    model_process_free(p);
    expect("WOOO", 6, 6, 3);
    expect("WO", 10, 10, 1);   /* one optimizer per forward */
    expect("WOOWO", 6, 18, 1); /* not the same optimizers every iteration: kept */
    /* one iteration in 4 skips its second optimizer's step (GradScaler's inf skip): still
     * one step per iteration (a review found the run back to an optimizer step a step) */
    expect("WOOWOOWOOWO", 4, 16, 2);
    expect("OO", 10, 20, 1);   /* no forward seen: nothing known, kept */
    expect("WOWO", 6, 12, 1);  /* gradient accumulation's shape, kept */
}

/* The ring dropped some Optimizer.step# spans (every third of 12): the collector's log of the
 * step scopes (TORCH_SCOPE) holds them all, and the steps are the log's, one per optimizer
 * step, none two merged; a log that was full (name 0) leaves the spans' steps; a trace with
 * no log (older writers) keeps the spans' as before. log: 0 none, 1 whole, 2 full. */
static struct model_process *load_logged(int log)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "Optimizer.step#Adam.step");
    trace_build_thread(&b, 9);
    for (uint64_t i = 0; i < 12; i++)
        if (i % 3 != 1)
            trace_build_torch_op(&b, 1, 1000 + i * 100, 1040 + i * 100, -1, 0,
                                 MODEL_TORCH_SCOPE_USER, 0, 0);
    trace_build_lost(&b, 9, 4);
    if (log) {
        trace_build_thread(&b, 9);
        for (uint64_t i = 0; i < 12; i++)
            trace_build_torch_scope(&b, 1, 1000 + i * 100, 1040 + i * 100);
        if (log == 2)
            trace_build_torch_scope(&b, 0, 0, 0);
    }
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

Test(report_steps_find, the_log_of_step_scopes_gives_every_boundary)
{
    struct model_process *p = load_logged(1);
    cr_assert_eq(p->steps.source, MODEL_STEPS_OPTIMIZER);
    /* 12 ends, 12 steps: the first from its optimizer step's start (a phase before the first
     * boundary) */
    cr_assert_eq(p->steps.nsteps, 12);
    cr_expect_eq(p->steps.steps[0].start_ns, 1000);
    for (size_t i = 0; i < p->steps.nsteps; i++) {
        if (i)
            cr_expect_eq(p->steps.steps[i].start_ns, 940 + i * 100, "step %zu", i);
        cr_expect_eq(p->steps.steps[i].end_ns, 1040 + i * 100, "step %zu", i);
        cr_expect_eq(p->steps.steps[i].number, i + 1);
    }
    model_process_free(p);
}

Test(report_steps_find, without_a_whole_log_the_spans_make_the_steps)
{
    for (int log = 0; log <= 2; log += 2) {
        struct model_process *p = load_logged(log);
        cr_expect_eq(p->steps.nsteps, 8, "log %d: %zu steps", log, p->steps.nsteps);
        model_process_free(p);
    }
}
