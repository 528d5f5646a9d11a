/* The Python functions of the steady steps (model_python_window.c) from the cuts a thread
 * took at its step boundaries (PY_CUT, PY_CUT_STATS): a node's counts at cut k are those of
 * its record with the smallest cut >= k, else its final counts; the part is the counts at
 * its last cut less those at its first. A thread whose ring dropped events, or whose
 * records could not all be written (cut 0), gives the whole process, said; a part whose last
 * step ends at no cut ends at the last step that does.
 *
 * The trace (ticks are ns: no CLOCK record): thread 9 ends optimizer steps at 200, 400,
 * 600 and 800 and cuts there (cuts 1-4); step 1 starts with the first optimizer step (at
 * 180, no cut: the part starts at cut 1, with step 2), steps 2-4 from one end to the next.
 *   main (node 1)  under way from 10 to the end: a record at every cut, its time so far
 *   f (node 2)     once per step, 50 ticks, first in the startup: entered after cuts
 *                  1-3 (records of its counts then), not after cut 4
 *   g (node 3)     the startup's only: no record
 *   h (node 4)     once, in step 4 (a node made after cut 3: a record of zeros there)
 * Kernels (10, 11 and 12 ns on the GPU) are launched from f at 450, from g at 50 and from
 * main at 850. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "model_torch.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_python_window");
    model_torch_set_window(MODEL_WINDOW_STEADY);
}

static void teardown(void)
{
    model_torch_set_window(MODEL_WINDOW_ALL);
    unlink(path);
}

TestSuite(report_python_window, .init = setup, .fini = teardown);

static void cut(struct trace_build *b, uint32_t tid, uint32_t k, uint64_t ticks)
{
    struct prof_rec_py_cut r = {{PROF_REC_PY_CUT, 0}, tid, k, 0, ticks};
    trace_build_record(b, PROF_REC_PY_CUT, &r, sizeof r, NULL, NULL);
}

static void cut_stats(struct trace_build *b, uint32_t node, uint32_t k, uint64_t calls,
                      uint64_t total, uint64_t self)
{
    struct prof_rec_py_cut_stats r = {
        {PROF_REC_PY_CUT_STATS, 0}, node, k, 0, calls, total, self, 0, 0};
    trace_build_record(b, PROF_REC_PY_CUT_STATS, &r, sizeof r, NULL, NULL);
}

/* drop: what goes wrong (0: nothing; 1: a LOST record; 2: cut 0; 3: no cut at 800) */
static struct model_process *load(int drop)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "Optimizer.step#SGD.step");
    const char *names[] = {"main", "f", "g", "h"};
    for (uint32_t i = 0; i < 4; i++) {
        trace_build_string(&b, 10 + i, names[i]);
        trace_build_py_func(&b, i + 1, 10 + i, 10 + i, 0, 0, 1 + i, PROF_PY_FUNC_PYTHON);
    }
    trace_build_thread(&b, 9);
    for (uint64_t e = 200; e <= 800; e += 200)
        trace_build_torch_op(&b, 1, e - 20, e, -1, 0, MODEL_TORCH_SCOPE_USER, 0, 0);
    trace_build_py_node(&b, 1, 0, 1);
    trace_build_py_node(&b, 2, 1, 2);
    trace_build_py_node(&b, 3, 1, 3);
    trace_build_py_node(&b, 4, 1, 4);
    for (uint32_t k = 1; k <= 4; k++) {
        uint64_t t = 200 * k;
        if (k < 4 || drop != 3)
            cut(&b, 9, k, t);
        /* main: f's, g's and (in step 4) h's time out of its own */
        cut_stats(&b, 1, k, 0, t - 10, t - 10 - 50 * k - 30 - (k == 4 ? 40 : 0));
        if (k < 4)
            cut_stats(&b, 2, k, k, 50 * k, 50 * k);
    }
    cut_stats(&b, 4, 3, 0, 0, 0);
    /* kernels launched from f in step 3, from g in the startup, from main after the part */
    const uint32_t from[] = {2, 3, 1};
    const uint64_t at[] = {450, 50, 850};
    for (uint32_t i = 0; i < 3; i++) {
        trace_build_gpu_api(&b, 1, 211, 1 + i, from[i], at[i], at[i] + 5);
        trace_build_gpu_kernel(&b, 1 + i, at[i] + 10, at[i] + 20 + i, 20, 0, 7,
                               trace_build_dim3(1, 1, 1), trace_build_dim3(32, 1, 1), 8);
    }
    if (drop == 2)
        cut(&b, 9, 0, 0);
    if (drop == 1)
        trace_build_lost(&b, 9, 3);
    trace_build_py_stats(&b, 1, 1, 990, 990 - 200 - 30 - 40, 0, 0);
    trace_build_py_stats(&b, 2, 4, 200, 200, 0, 0);
    trace_build_py_stats(&b, 3, 1, 30, 30, 0, 0);
    trace_build_py_stats(&b, 4, 1, 40, 40, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

/* The part's counts of a node (all 0: it did not run in the part). */
static struct model_py_window_row window_node(const struct model_process *p, uint32_t id)
{
    const struct model_py_node *n = model_python_node(p, id);
    cr_assert_not_null(n);
    cr_assert_neq(p->py.window, MODEL_WINDOW_ALL);
    size_t index = (size_t)(n - p->py.nodes);
    for (size_t i = 0; i < p->py.nwindow_rows; i++)
        if (p->py.window_rows[i].index == index)
            return p->py.window_rows[i];
    return (struct model_py_window_row){.index = index};
}

Test(report_python_window, the_steps_between_two_cuts)
{
    struct model_process *p = load(0);
    const struct model_python *py = &p->py;
    cr_assert_eq(p->steps.nsteps, 4);
    cr_assert_eq(py->window, MODEL_WINDOW_STEADY, "miss %u", py->window_miss);
    cr_expect_eq(py->window_tid, 9);
    cr_expect(py->window_first == 2 && py->window_last == 4 && py->window_steps == 3);
    cr_expect_eq(py->window_ns, 600);
    struct model_py_window_row main = window_node(p, 1), f = window_node(p, 2),
                               g = window_node(p, 3), h = window_node(p, 4);
    cr_expect(main.calls == 0 && main.total_ns == 600, "%lu %lu", main.calls, main.total_ns);
    cr_expect_eq(main.self_ns, 600 - 150 - 40);
    cr_expect(f.calls == 3 && f.total_ns == 150); /* 4 calls, 200 at the end; 1, 50 at cut 1 */
    cr_expect(g.calls == 0 && g.total_ns == 0);   /* no record: its final counts at both */
    cr_expect(h.calls == 1 && h.total_ns == 40);  /* 0 at cut 3, so at cut 1 too */
    cr_expect_eq(p->py.nwindow_rows, 3);          /* main, f, h: g did not run in the part */
    /* the GPU time of the kernels launched in the part, with the node innermost */
    cr_expect(f.gpu_kernels == 1 && f.gpu_ns == 10, "%lu %lu", f.gpu_kernels, f.gpu_ns);
    cr_expect(main.gpu_kernels == 0 && h.gpu_kernels == 0);
    cr_expect(model_python_node(p, 1)->gpu_kernels == 1 && model_python_node(p, 3)->gpu_ns == 11);
    /* the whole process's nodes stay as they were */
    cr_expect_eq(model_python_node(p, 2)->calls, 4);
    model_process_free(p);
}

Test(report_python_window, a_lossy_thread_gives_the_whole_process)
{
    for (int drop = 1; drop <= 2; drop++) {
        struct model_process *p = load(drop);
        cr_expect_eq(p->py.window, MODEL_WINDOW_ALL);
        cr_expect_eq(p->py.nwindow_rows, 0);
        cr_expect_eq(p->py.window_miss,
                     drop == 1 ? MODEL_PY_WINDOW_MISS_DROPPED : MODEL_PY_WINDOW_MISS_FAILED,
                     "drop %d", drop);
        model_process_free(p);
    }
}

Test(report_python_window, a_last_step_without_its_cut_ends_the_part_earlier)
{
    struct model_process *p = load(3);
    cr_assert_eq(p->py.window, MODEL_WINDOW_STEADY, "miss %u", p->py.window_miss);
    cr_expect(p->py.window_first == 2 && p->py.window_last == 3 && p->py.window_ns == 400);
    cr_expect_eq(window_node(p, 2).calls, 2); /* cut 3 less cut 1 */
    cr_expect_eq(window_node(p, 4).calls, 0);
    model_process_free(p);
}
