/* The tensor memory of the steady steps (model_torch_memory_part.c): live bytes at the part's
 * edges and after its first step, the steps that grew, the peak inside it and its op, what
 * it allocated and freed, and the allocation site that grew the most after the first step
 * (a free counts against the site of the block it frees); a lossy device stays the whole
 * process's, said; a summary keeps the part read for it, and drops it for another.
 *
 * The trace (ticks are ns: no CLOCK record; bytes in units of K): thread 9 runs four
 * torch.profiler steps (ProfilerStep#1-4 scopes, as prof.step() opens them: steps whose
 * start is no inferred one, so none is left out, no warm-up) from 180 to 200, 400, 600
 * and 800.
 *   startup  +1000 (0x10) at 50, in no op
 *   step 1   +500 (0x20, the gradient) at 190 in aten::mul; +3000 (0x50, an optimizer's
 *            state) at 195 in aten::zeros, never freed
 *   step 2   free 0x20 at 210; +500 (0x21) at 250 in aten::mul; +300 (0x30) at 260 in
 *            aten::addmm, never freed (the leak)
 *   step 3   free 0x21 at 410; +500 (0x22) at 450 in aten::mul; +300 (0x31) at 460 and
 *            +2000 (0x40) at 470 in aten::addmm (the peak: 4100); free 0x40 at 480
 *   step 4   free 0x22 at 610; +500 (0x23) at 650 in aten::mul; +300 (0x32) at 660 in
 *            aten::addmm
 *   teardown free 0x10 at 900, free 0x23 at 910
 * So: live 1000 at the start, 4500 after step 1, 5400 at the end; every step grew; the
 * sites after step 1: aten::mul +1500 -1500 (its blocks freed, step 1's too), aten::addmm
 * +2900 -2000 = +900; aten::zeros grew only in step 1, which does not count. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "model_torch.h"
#include "report_test.h"
#include "summary_file.h"

#define K 4096

static char path[64], summary[80];

static void setup(void)
{
    report_test_temp(path, "report_memory_part");
    snprintf(summary, sizeof summary, "%s.summary", path);
    model_torch_set_window(MODEL_WINDOW_STEADY);
}

static void teardown(void)
{
    model_torch_set_window(MODEL_WINDOW_ALL);
    unlink(path);
    unlink(summary);
}

TestSuite(report_memory_part, .init = setup, .fini = teardown);

enum { S_STEP = 1, S_MUL, S_ADDMM, S_ZEROS }; /* S_STEP + 10 + k: ProfilerStep#k+1 */

/* One allocation (bytes > 0) or free inside an op of name sid (0: none) around at. */
static void mem(struct trace_build *b, int64_t bytes, uint64_t ptr, uint64_t at, uint32_t sid)
{
    if (sid)
        trace_build_torch_op(b, sid, at - 2, at + 2, -1, 0, 0, 0, 0);
    trace_build_torch_mem(b, bytes * K, ptr, at, 0);
}

enum how {
    WHOLE,
    LOSSY,          /* the process counted more records than the trace keeps */
    LOST_NO_TOTALS, /* events lost, and no TORCH_MEM_TOTALS to say which */
    REOPENED,       /* a capture window opened twice */
    HUGE,           /* two allocations of 2^62 bytes at one site in step 3 */
};

static struct model_process *load(enum how how)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    if (how == REOPENED) {
        trace_build_meta(&b, "window_open", "0 signal 10");
        trace_build_meta(&b, "window_open", "500 signal 10");
    }
    for (uint32_t k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%u", k + 1);
        trace_build_string(&b, S_STEP + 10 + k, name);
    }
    trace_build_string(&b, S_MUL, "aten::mul");
    trace_build_string(&b, S_ADDMM, "aten::addmm");
    trace_build_string(&b, S_ZEROS, "aten::zeros");
    trace_build_thread(&b, 9);
    for (uint32_t k = 0; k < 4; k++)
        trace_build_torch_op(&b, S_STEP + 10 + k, k ? 200 * k : 180, 200 * (k + 1), -1, 0,
                             MODEL_TORCH_SCOPE_USER, 0, 0);
    mem(&b, 1000, 0x10, 50, 0);
    mem(&b, 500, 0x20, 190, S_MUL);
    mem(&b, 3000, 0x50, 195, S_ZEROS);
    mem(&b, -500, 0x20, 210, 0);
    mem(&b, 500, 0x21, 250, S_MUL);
    mem(&b, 300, 0x30, 260, S_ADDMM);
    mem(&b, -500, 0x21, 410, 0);
    mem(&b, 500, 0x22, 450, S_MUL);
    mem(&b, 300, 0x31, 460, S_ADDMM);
    mem(&b, 2000, 0x40, 470, S_ADDMM);
    if (how == HUGE) {
        trace_build_torch_op(&b, S_ADDMM, 470, 476, -1, 0, 0, 0, 0);
        trace_build_torch_mem(&b, INT64_C(1) << 62, 0x60, 472, 0);
        trace_build_torch_mem(&b, INT64_C(1) << 62, 0x61, 474, 0);
    }
    mem(&b, -2000, 0x40, 480, 0);
    mem(&b, -500, 0x22, 610, 0);
    mem(&b, 500, 0x23, 650, S_MUL);
    mem(&b, 300, 0x32, 660, S_ADDMM);
    mem(&b, -1000, 0x10, 900, 0);
    mem(&b, -500, 0x23, 910, 0);
    if (how == LOST_NO_TOTALS)
        trace_build_lost(&b, 9, 3);
    if (how == LOSSY) {
        struct prof_rec_torch_mem_totals x = {.device_type = 0,
                                              .device_index = -1,
                                              .alloc_count = 20,
                                              .alloc_bytes = 9000 * K,
                                              .free_count = 7,
                                              .free_bytes = 5000 * K,
                                              .live_bytes = 4000 * K,
                                              .peak_bytes = 8000 * K,
                                              .peak_ticks = 470};
        trace_build_torch_mem_totals(&b, &x);
    }
    trace_build_end(&b, 1000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

static void expect_steady(const struct model_process *p)
{
    const struct model_torch_memory_part *q = &p->torch.memory.part;
    cr_assert_eq(q->window, MODEL_WINDOW_STEADY, "miss %u", q->miss);
    cr_expect_eq(q->steps, 4);
    cr_expect_eq(q->window_ns, 620);
    cr_expect_eq(q->start_ns, 180);
    cr_expect_eq(q->live_start, 1000 * K);
    cr_expect_eq(q->live_first_end, 4500 * K);
    cr_expect_eq(q->live_end, 5400 * K);
    cr_expect_eq(q->steps_grown, 3, "the steps after the first that grew");
    cr_expect(q->peak_inside);
    cr_expect_eq(q->peak_bytes, 7100 * K);
    cr_expect_eq(q->peak_ns, 470);
    cr_expect(q->peak.op && !strcmp(q->peak.op, "aten::addmm"), "peak in %s",
              q->peak.op ? q->peak.op : "(none)");
    cr_expect(q->allocated == 7900 * K && q->alloc_count == 9, "%lu in %lu", q->allocated,
              q->alloc_count);
    cr_expect(q->freed == 3500 * K && q->free_count == 4, "%lu in %lu", q->freed, q->free_count);
    cr_expect_eq(q->grew_bytes, 900 * K,
                 "the leak: step 1's gradient freed counts against "
                 "aten::mul, which did not grow; step 1's own "
                 "allocations are not growth");
    cr_expect(q->grew.op && !strcmp(q->grew.op, "aten::addmm"), "grew in %s",
              q->grew.op ? q->grew.op : "(none)");
    /* the whole process's figures stay */
    cr_expect_eq(p->torch.memory.peak_bytes, 7100 * K);
    cr_expect_eq(p->torch.memory.live_at_end, 3900 * K);
}

Test(report_memory_part, the_steady_steps_beside_the_whole_process)
{
    struct model_process *p = load(WHOLE);
    cr_assert_eq(p->steps.nsteps, 4);
    expect_steady(p);
    model_process_free(p);
}

Test(report_memory_part, the_startup)
{
    model_torch_set_window(MODEL_WINDOW_STARTUP);
    struct model_process *p = load(WHOLE);
    const struct model_torch_memory_part *q = &p->torch.memory.part;
    cr_assert_eq(q->window, MODEL_WINDOW_STARTUP, "miss %u", q->miss);
    cr_expect_eq(q->steps, 0);
    cr_expect(q->live_start == 0 && q->live_end == 1000 * K, "%ld %ld", q->live_start, q->live_end);
    cr_expect(q->peak_bytes == 1000 * K && q->peak_ns == 50 && !q->peak.op);
    cr_expect(q->peak_inside, "an allocation in no op reached the peak: not the start's");
    cr_expect(q->alloc_count == 1 && q->free_count == 0);
    cr_expect_eq(q->grew_bytes, 1000 * K, "no steps: the whole part counts for the sites");
    model_process_free(p);
}

Test(report_memory_part, a_lossy_device_stays_the_whole_process_said)
{
    struct model_process *p = load(LOSSY);
    const struct model_torch_memory_part *q = &p->torch.memory.part;
    cr_expect(p->torch.memory.records_lost > 0);
    cr_expect_eq(q->window, MODEL_WINDOW_ALL);
    cr_expect_eq(q->miss, MODEL_WINDOW_MISS_CALLS);
    model_process_free(p);
}

Test(report_memory_part, events_lost_without_the_counters_leave_the_whole_process)
{
    struct model_process *p = load(LOST_NO_TOTALS);
    cr_expect(!p->torch.memory.exact && !p->torch.memory.records_lost);
    cr_expect_eq(p->torch.memory.part.window, MODEL_WINDOW_ALL, "a dropped free looks like a leak");
    cr_expect_eq(p->torch.memory.part.miss, MODEL_WINDOW_MISS_CALLS);
    model_process_free(p);
}

Test(report_memory_part, a_window_opened_twice_leaves_the_whole_process)
{
    struct model_process *p = load(REOPENED);
    cr_expect_eq(p->torch.memory.part.window, MODEL_WINDOW_ALL);
    cr_expect_eq(p->torch.memory.part.miss, MODEL_WINDOW_MISS_REOPENED);
    model_process_free(p);
}

Test(report_memory_part, sizes_past_int64_saturate)
{
    struct model_process *p = load(HUGE);
    const struct model_torch_memory_part *q = &p->torch.memory.part;
    cr_assert_eq(q->window, MODEL_WINDOW_STEADY, "miss %u", q->miss);
    cr_expect(q->grew_bytes > INT64_MAX / 2, "saturated, no overflow: %ld", q->grew_bytes);
    cr_expect_eq(q->peak_bytes, INT64_MAX);
    cr_expect(model_torch_memory_growth(q) > 0);
    model_process_free(p);
}

Test(report_memory_part, a_summary_keeps_the_part)
{
    struct model_process *p = load(WHOLE);
    char err[256];
    cr_assert_eq(summary_file_write(summary, p, NULL, err, sizeof err), 0, "%s", err);
    model_process_free(p);
    struct model_process *q = summary_file_load(summary, err, sizeof err);
    cr_assert_not_null(q, "%s", err);
    expect_steady(q);
    model_process_free(q);
    /* read for another part: the whole process's figures, and why */
    model_torch_set_window(MODEL_WINDOW_STEPS);
    q = summary_file_load(summary, err, sizeof err);
    cr_assert_not_null(q, "%s", err);
    cr_expect_eq(q->torch.memory.part.window, MODEL_WINDOW_ALL);
    cr_expect_eq(q->torch.memory.part.miss, MODEL_WINDOW_MISS_SUMMARY);
    cr_expect_eq(q->torch.memory.peak_bytes, 7100 * K);
    model_process_free(q);
}
