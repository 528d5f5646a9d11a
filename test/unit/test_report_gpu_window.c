/* The GPU tables of the steady steps (model_gpu_window.c): wrapped calls that began and ended
 * in the part, kernels whose launching call began in it (wherever they ran on the GPU; a
 * kernel with no known launch by its GPU start), calls only CUPTI saw that began and ended in
 * it; the model's own tables stay the whole process's, and a summary keeps both.
 *
 * The trace (ticks are ns: no CLOCK record): thread 9 ends optimizer steps at 200, 400, 600
 * and 800, so the steps run from 180 to 800, and the steady part, the first step left out
 * (its start is inferred), from 200.
 *   startup  cudaMemcpy 10-30; 5 x (cudaLaunchKernel of gemm, grid 1, registers 16) at
 *            40 + 20 i, their kernels on the GPU after 100 (CUPTI sees each call too)
 *   steps    4 x cublasSgemm_v2 around a cudaLaunchKernel of gemm, grid 8, registers 32, at
 *            250, 450, 650 and 785 (the last one's kernel runs at 850, after the part);
 *            a kernel with no launching call at 500
 *   teardown cudaMemcpy 900-950 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "model_torch.h"
#include "report_test.h"
#include "summary_file.h"

#define LAUNCH_CBID 211 /* CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 */

static char path[64], summary[80];

static void setup(void)
{
    report_test_temp(path, "report_gpu_window");
    snprintf(summary, sizeof summary, "%s.summary", path);
    model_torch_set_window(MODEL_WINDOW_STEADY);
}

static void teardown(void)
{
    model_torch_set_window(MODEL_WINDOW_ALL);
    unlink(path);
    unlink(summary);
}

TestSuite(report_gpu_window, .init = setup, .fini = teardown);

enum { LAUNCH = 1, SGEMM = 2, MEMCPY = 3 };

static void launch(struct trace_build *b, uint32_t corr, uint64_t at, uint64_t gpu_at,
                   uint64_t grid, uint32_t regs)
{
    trace_build_call(b, LAUNCH, 0, at, at + 10, 0);
    trace_build_gpu_api(b, 1, LAUNCH_CBID, corr, 0, at + 1, at + 9);
    trace_build_gpu_kernel(b, corr, gpu_at, gpu_at + 5, 20, 0, 7, grid, trace_build_dim3(128, 1, 1),
                           regs);
}

/* lost: a LOST record (the ring dropped events) */
static struct model_process *load(int lost)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, PROF_FEATURE_CUDART), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "Optimizer.step#SGD.step");
    trace_build_string(&b, 20, "gemm");
    trace_build_string(&b, 21, "orphan");
    trace_build_api_name(&b, LAUNCH, PROF_CAT_LAUNCH, "cudaLaunchKernel", "");
    trace_build_api_name(&b, SGEMM, PROF_CAT_LIBRARY, "cublasSgemm_v2", "");
    trace_build_api_name(&b, MEMCPY, PROF_CAT_COPY, "cudaMemcpy", "");
    trace_build_gpu_api_name(&b, 1, LAUNCH_CBID, "cudaLaunchKernel_v7000");
    trace_build_thread(&b, 9);
    trace_build_call(&b, MEMCPY, 0, 10, 30, 0);
    for (uint32_t i = 0; i < 5; i++)
        launch(&b, 1 + i, 40 + 20 * i, 100 + 10 * i, trace_build_dim3(1, 1, 1), 16);
    for (uint64_t e = 200; e <= 800; e += 200)
        trace_build_torch_op(&b, 1, e - 20, e, -1, 0, MODEL_TORCH_SCOPE_USER, 0, 0);
    static const uint64_t at[] = {250, 450, 650, 785};
    for (uint32_t k = 0; k < 4; k++) {
        trace_build_call(&b, SGEMM, 0, at[k] - 5, at[k] + 12, 0);
        launch(&b, 10 + k, at[k], k == 3 ? 850 : at[k] + 20, trace_build_dim3(8, 1, 1), 32);
    }
    trace_build_gpu_kernel(&b, 99, 500, 510, 21, 0, 7, trace_build_dim3(1, 1, 1),
                           trace_build_dim3(32, 1, 1), 8);
    trace_build_call(&b, MEMCPY, 0, 900, 950, 0);
    if (lost)
        trace_build_lost(&b, 9, 3);
    trace_build_end(&b, 1000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    return report_test_load(path);
}

static struct model_api_counts api(const struct model_process *p, size_t id)
{
    struct model_api_counts c;
    model_gpu_part_api(p, id, &c);
    return c;
}

static const struct model_gpu_kernel *kernel(const struct model_process *p, const char *name)
{
    size_t n;
    const struct model_gpu_kernel *k = model_gpu_part_kernels(p, &n);
    for (size_t i = 0; i < n; i++)
        if (k[i].name && !strcmp(k[i].name, name))
            return &k[i];
    cr_assert_fail("no kernel %s", name);
    return NULL;
}

static uint64_t count_of(const struct u64map *m, uint64_t key)
{
    uint64_t *v = u64map_find(m, key);
    return v ? *v : 0;
}

static void expect_steady_part(const struct model_process *p)
{
    cr_assert_eq(p->gpu_part.window, MODEL_WINDOW_STEADY, "miss %u", p->gpu_part.miss);
    cr_expect_eq(p->gpu_part.window_ns, 600);
    cr_expect_eq(p->gpu_part.window_steps, 3);
    struct model_api_counts l = api(p, LAUNCH), s = api(p, SGEMM), m = api(p, MEMCPY);
    cr_expect(l.calls == 4 && l.total_ns == 40 && l.min_ns == 10 && l.max_ns == 10, "%lu %lu",
              l.calls, l.total_ns);
    cr_expect(s.calls == 4 && s.total_ns == 68, "%lu %lu", s.calls, s.total_ns);
    cr_expect(s.gpu_kernels == 4 && s.gpu_ns == 20, "the library call's kernels: %lu %lu",
              s.gpu_kernels, s.gpu_ns);
    cr_expect_eq(m.calls, 0, "the startup's and the teardown's copies are not in the steps");
    const struct model_gpu_kernel *g = kernel(p, "gemm"), *o = kernel(p, "orphan");
    cr_expect(g->calls == 4 && g->total_ns == 20, "gemm %lu %lu", g->calls, g->total_ns);
    cr_expect_eq(count_of(&g->grids, trace_build_dim3(8, 1, 1)), 4);
    cr_expect_eq(count_of(&g->grids, trace_build_dim3(1, 1, 1)), 0);
    cr_expect_eq(count_of(&g->registers, 32), 4);
    cr_expect(o->calls == 1 && o->total_ns == 10, "a kernel with no launch, by its GPU start");
    struct model_api_counts c;
    model_gpu_part_cupti(p, 0, &c);
    cr_expect(c.calls == 4 && c.total_ns == 32, "CUPTI's calls %lu %lu", c.calls, c.total_ns);
}

Test(report_gpu_window, the_steady_steps_tables_beside_the_whole_process)
{
    struct model_process *p = load(0);
    cr_assert_eq(p->steps.nsteps, 4);
    expect_steady_part(p);
    /* the model's own tables: the whole process */
    cr_expect_eq(p->apis[LAUNCH]->calls, 9);
    cr_expect_eq(p->apis[MEMCPY]->calls, 2);
    cr_expect_eq(p->gpu.kernels[0].calls, 9);
    cr_expect_eq(p->gpu.apis[0].calls, 9);
    model_process_free(p);
}

Test(report_gpu_window, a_summary_keeps_both)
{
    struct model_process *p = load(0);
    char err[256];
    cr_assert_eq(summary_file_write(summary, p, NULL, err, sizeof err), 0, "%s", err);
    model_process_free(p);
    struct model_process *q = summary_file_load(summary, err, sizeof err);
    cr_assert_not_null(q, "%s", err);
    expect_steady_part(q);
    cr_expect_eq(q->apis[LAUNCH]->calls, 9);
    model_process_free(q);
    /* read for the whole process: the whole process's rows */
    model_torch_set_window(MODEL_WINDOW_ALL);
    q = summary_file_load(summary, err, sizeof err);
    cr_assert_not_null(q, "%s", err);
    cr_expect_eq(q->gpu_part.window, MODEL_WINDOW_ALL);
    cr_expect_eq(api(q, LAUNCH).calls, 9);
    cr_expect_eq(kernel(q, "gemm")->calls, 9);
    model_process_free(q);
}

Test(report_gpu_window, a_lossy_trace_gives_the_whole_process_said)
{
    struct model_process *p = load(1);
    cr_expect_eq(p->gpu_part.window, MODEL_WINDOW_ALL);
    cr_expect_eq(p->gpu_part.miss, MODEL_WINDOW_MISS_CALLS);
    cr_expect_eq(api(p, LAUNCH).calls, 9);
    cr_expect_eq(kernel(p, "gemm")->calls, 9);
    model_process_free(p);
}

Test(report_gpu_window, the_startup)
{
    model_torch_set_window(MODEL_WINDOW_STARTUP);
    struct model_process *p = load(0);
    cr_assert_eq(p->gpu_part.window, MODEL_WINDOW_STARTUP);
    cr_expect_eq(api(p, LAUNCH).calls, 5);
    cr_expect_eq(api(p, MEMCPY).calls, 1);
    cr_expect_eq(kernel(p, "gemm")->calls, 5);
    cr_expect_eq(count_of(&kernel(p, "gemm")->grids, trace_build_dim3(1, 1, 1)), 5);
    model_process_free(p);
}
