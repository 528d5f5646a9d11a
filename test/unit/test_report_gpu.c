/* GPU and NVTX records: kernels tied to their calls (correlation), library spans owning
 * the calls inside them, utilization as the union of intervals, copies by kind, NVTX
 * ranges as actions. The numbers are those test/fixtures/traces/gpu_traces.h documents. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/gpu_traces.h"
#include "model.h"
#include "pystats.h"
#include "summary.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_gpu");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_gpu, .init = setup, .fini = teardown);

static void build(struct summary *s, struct model_process *p)
{
    struct model_process **procs = malloc(sizeof *procs);
    cr_assert_not_null(procs);
    procs[0] = p;
    summary_build(s, procs, 1);
}

static const struct summary_gpu_kernel_row *kernel_named(const struct summary *s, const char *name)
{
    for (size_t i = 0; i < s->gpu.nkernels; i++)
        if (!strcmp(s->gpu.kernels[i].name, name))
            return &s->gpu.kernels[i];
    return NULL;
}

static const struct summary_action_row *action_named(const struct summary *s, const char *name)
{
    for (size_t i = 0; i < s->gpu.nactions; i++)
        if (!strcmp(s->gpu.actions[i].name, name))
            return &s->gpu.actions[i];
    return NULL;
}

static uint64_t busy_of(const struct model_process *p, int64_t stream)
{
    for (size_t i = 0; i < p->gpu.nbusy; i++)
        if (p->gpu.busy[i].stream == stream)
            return p->gpu.busy[i].busy_ns;
    cr_assert_fail("no busy row for stream %lld", (long long)stream);
    return 0;
}

Test(report_gpu, every_kernel_counted_and_named)
{
    cr_assert_eq(gpu_trace_main(path), 0);
    struct summary s;
    build(&s, report_test_load(path));
    cr_assert_eq(s.gpu.kernel_calls, 6);
    cr_assert_eq(s.gpu.kernel_ns, 11600);
    cr_assert_eq(s.gpu.nkernels, 4);
    cr_assert_str_eq(s.gpu.kernels[0].name, "sgemm_128x64_nn"); /* by total */
    const struct summary_gpu_kernel_row *scale = kernel_named(&s, "void scale<float>(float*, int)");
    cr_assert_not_null(scale);
    cr_assert_eq(scale->calls, 2);
    cr_assert_eq(scale->total_ns, 3000);
    cr_assert_eq(scale->min_ns, 1000);
    cr_assert_eq(scale->max_ns, 2000);
    cr_assert_eq(scale->grid, trace_build_dim3(128, 1, 1));
    cr_assert_eq(scale->block, trace_build_dim3(256, 1, 1));
    cr_assert_eq(scale->registers, 32);
    const struct summary_gpu_kernel_row *sgemm = kernel_named(&s, "sgemm_128x64_nn");
    cr_assert_float_eq(sgemm->percent, 100.0 * 8000 / 11600, 1e-9);
    cr_assert_eq(s.gpu.unattributed, 1);
    summary_sort(&s, SUMMARY_SORT_CALLS);
    cr_assert_str_eq(s.gpu.kernels[0].name, "sgemm_128x64_nn"); /* 2 calls, then by name */
    cr_assert_str_eq(s.gpu.kernels[1].name, "void scale<float>(float*, int)");
    summary_sort(&s, SUMMARY_SORT_NAME);
    cr_assert_str_eq(s.gpu.kernels[0].name, "orphan_kernel");
    summary_free(&s);
}

Test(report_gpu, kernels_attributed_to_python_functions)
{
    cr_assert_eq(gpu_trace_main(path), 0);
    struct summary s;
    build(&s, report_test_load(path));
    const struct summary_gpu_kernel_row *scale = kernel_named(&s, "void scale<float>(float*, int)");
    cr_assert_eq(scale->nsites, 1);
    cr_assert_str_eq(scale->sites[0].qualname, "Trainer.train_step");
    cr_assert_str_eq(scale->sites[0].file, "/w/train.py");
    cr_assert_eq(scale->sites[0].line, 30);
    cr_assert_eq(scale->sites[0].calls, 2);
    cr_assert_eq(scale->sites[0].gpu_ns, 3000);
    const struct summary_gpu_kernel_row *splitk = kernel_named(&s, "splitKreduce_kernel");
    cr_assert_eq(splitk->nsites, 1);
    cr_assert_str_eq(splitk->sites[0].qualname, "Model.matmul");
    cr_assert_eq(splitk->sites[0].gpu_ns, 500);
    cr_assert_eq(kernel_named(&s, "orphan_kernel")->nsites, 0);
    int seen = 0;
    for (size_t i = 0; i < s.py.nfuncs; i++) {
        const struct pystats_func *f = &s.py.funcs[i];
        if (!strcmp(f->name, "train_step")) {
            cr_assert_eq(f->gpu_ns, 3000);
            seen++;
        }
        if (!strcmp(f->name, "matmul")) {
            cr_assert_eq(f->gpu_ns, 8500);
            seen++;
        }
    }
    cr_assert_eq(seen, 2);
    cr_assert(s.py.any_gpu);
    summary_free(&s);
}

Test(report_gpu, library_span_owns_the_launches_inside)
{
    cr_assert_eq(gpu_trace_main(path), 0);
    struct summary s;
    build(&s, report_test_load(path));
    cr_assert_eq(s.gpu.nlibrary, 1);
    cr_assert_str_eq(s.gpu.library[0].name, "cublasSgemm_v2");
    cr_assert_eq(s.gpu.library[0].calls, 1);
    cr_assert_eq(s.gpu.library[0].cpu_ns, 10000);
    cr_assert_eq(s.gpu.library[0].gpu_ns, 8500);
    cr_assert_eq(s.gpu.library[0].kernels, 3);
    /* Only the driver launches: the runtime calls have wrappers of the same name. */
    cr_assert_eq(s.gpu.ncupti, 1);
    cr_assert_str_eq(s.gpu.cupti[0].name, "cuLaunchKernel");
    cr_assert_eq(s.gpu.cupti[0].domain, PROF_GPU_API_DRIVER);
    cr_assert_eq(s.gpu.cupti[0].calls, 3);
    cr_assert_eq(s.gpu.cupti[0].total_ns, 300);
    cr_assert_eq(s.gpu.cupti[0].max_ns, 100);
    summary_free(&s);
}

Test(report_gpu, utilization_is_the_union_of_intervals)
{
    cr_assert_eq(gpu_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    cr_assert_eq(p->wall_ns, 100000);
    cr_assert_eq(p->gpu.nbusy, 4);
    cr_assert_eq(busy_of(p, -1), 11300); /* streams 13 and 14 overlap 26000-28000 */
    cr_assert_eq(busy_of(p, 7), 4800);
    cr_assert_eq(busy_of(p, 13), 4500);
    cr_assert_eq(busy_of(p, 14), 4000);
    cr_assert_eq(p->gpu.ndevices, 1);
    cr_assert_str_eq(p->gpu.devices[0].name, "NVIDIA Test GPU");
    cr_assert_eq(p->gpu.devices[0].sm_count, 132);
    model_process_free(p);
}

Test(report_gpu, copies_and_sets_by_kind)
{
    cr_assert_eq(gpu_trace_main(path), 0);
    struct summary s;
    build(&s, report_test_load(path));
    cr_assert_eq(s.gpu.ncopies, 2);
    const struct summary_gpu_copy_row *htod = &s.gpu.copies[0], *dtoh = &s.gpu.copies[1];
    cr_assert_str_eq(model_gpu_copy_kind_name(htod->copy_kind), "HtoD");
    cr_assert_str_eq(model_gpu_memory_kind_name(htod->src_kind), "pageable");
    cr_assert_eq(htod->bytes, 4096);
    cr_assert_eq(htod->total_ns, 1000);
    cr_assert_str_eq(model_gpu_copy_kind_name(dtoh->copy_kind), "DtoH");
    cr_assert_str_eq(model_gpu_memory_kind_name(dtoh->dst_kind), "pinned");
    cr_assert_eq(dtoh->bytes, 2048);
    cr_assert_eq(dtoh->total_ns, 500);
    cr_assert_eq(s.gpu.nsets, 1);
    cr_assert_eq(s.gpu.sets[0].bytes, 1024);
    cr_assert_eq(s.gpu.sets[0].total_ns, 200);
    int warned = 0;
    for (size_t i = 0; i < s.nwarnings; i++)
        warned |= strstr(s.warnings[i], "unattributed") != NULL;
    cr_assert(warned);
    summary_free(&s);
}

Test(report_gpu, innermost_library_span_wins)
{
    /* cublasGemmEx 1000-9000 holds cublasLtMatmul 2000-5000 (nested); launches at 3000
     * (inside both) and 6000 (inside the outer only); one at 9500 on the same thread and
     * one at 3000 on another thread are in no span. */
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_api_name(&b, 1, 8, "cublasGemmEx", "handle,nested");
    trace_build_api_name(&b, 2, 8, "cublasLtMatmul", "handle,nested");
    trace_build_string(&b, 1, "k");
    trace_build_thread(&b, 10);
    trace_build_gpu_api(&b, PROF_GPU_API_DRIVER, 307, 1, 0, 3000, 3100);
    trace_build_call(&b, 2, 0, 2000, 5000, 2, 1ull, 1ull);
    trace_build_gpu_api(&b, PROF_GPU_API_DRIVER, 307, 2, 0, 6000, 6100);
    trace_build_call(&b, 1, 0, 1000, 9000, 2, 1ull, 0ull);
    trace_build_gpu_api(&b, PROF_GPU_API_DRIVER, 307, 3, 0, 9500, 9600);
    trace_build_thread(&b, 11);
    trace_build_gpu_api(&b, PROF_GPU_API_DRIVER, 307, 4, 0, 3000, 3100);
    for (uint32_t c = 1; c <= 4; c++)
        trace_build_gpu_kernel(&b, c, 10000 + c * 1000, 10000 + c * 1000 + 10 * c, 1, 0, 1, 0, 0,
                               0);
    trace_build_end(&b, 20000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    struct model_process *p = report_test_load(path);
    cr_assert(p->apis[1]->library && p->apis[2]->library);
    cr_assert_eq(p->apis[2]->gpu_kernels, 1);
    cr_assert_eq(p->apis[2]->gpu_ns, 10);
    cr_assert_eq(p->apis[1]->gpu_kernels, 1);
    cr_assert_eq(p->apis[1]->gpu_ns, 20);
    cr_assert_eq(p->gpu.unattributed, 0);
    cr_assert_str_eq(model_category_name(8), "library");
    model_process_free(p);
}

Test(report_gpu, cupti_runtime_names_lose_their_version)
{
    char buf[64];
    model_gpu_api_base_name("cudaLaunchKernel_v7000", buf, sizeof buf);
    cr_assert_str_eq(buf, "cudaLaunchKernel");
    model_gpu_api_base_name("cudaMemcpyAsync_ptsz_v7000", buf, sizeof buf);
    cr_assert_str_eq(buf, "cudaMemcpyAsync");
    model_gpu_api_base_name("cuMemAlloc_v2", buf, sizeof buf);
    cr_assert_str_eq(buf, "cuMemAlloc");
    model_gpu_api_base_name("cuLaunchKernel", buf, sizeof buf);
    cr_assert_str_eq(buf, "cuLaunchKernel");
}

Test(report_gpu, nvtx_ranges_become_actions)
{
    cr_assert_eq(gpu_trace_nvtx(path), 0);
    struct summary s;
    build(&s, report_test_load(path));
    const uint64_t U = NVTX_U;
    cr_assert_eq(s.gpu.action_wall_ns, 1000 * U);
    cr_assert_eq(s.gpu.action_gpu_ns, 35 * U);
    cr_assert_eq(s.gpu.nactions, 5);
    cr_assert_str_eq(s.gpu.actions[0].name, "epoch"); /* by total */
    const struct summary_action_row *epoch = action_named(&s, "epoch");
    cr_assert_eq(epoch->calls, 1);
    cr_assert_eq(epoch->total_ns, 800 * U);
    cr_assert_eq(epoch->gpu_ns, 30 * U); /* its thread's launches only */
    cr_assert_float_eq(epoch->percent, 80.0, 1e-9); /* NVTX ranges alone: of the wall time */
    cr_assert_eq(s.gpu.action_base, SUMMARY_ACTION_BASE_WALL);
    cr_assert_eq(s.gpu.action_base_ns, s.gpu.action_wall_ns);
    const struct summary_action_row *step = action_named(&s, "step");
    cr_assert_eq(step->calls, 3);
    cr_assert_eq(step->total_ns, 250 * U);
    cr_assert_eq(step->gpu_ns, 35 * U);
    cr_assert_float_eq(step->mean_ns, 250.0 * U / 3, 1e-3);
    const struct summary_action_row *data = action_named(&s, "data");
    cr_assert_eq(data->calls, 1);
    cr_assert_eq(data->total_ns, 550 * U); /* END read before its START */
    cr_assert_eq(data->gpu_ns, 35 * U);    /* launches of every thread */
    cr_assert_eq(action_named(&s, "load")->total_ns, 50 * U);
    cr_assert_eq(action_named(&s, "load")->gpu_ns, 0);
    cr_assert_eq(action_named(&s, "decode")->total_ns, 10 * U);
    cr_assert_null(action_named(&s, "never"));
    cr_assert_eq(s.gpu.nmarks, 1);
    cr_assert_str_eq(s.gpu.marks[0].name, "checkpoint");
    cr_assert_eq(s.gpu.marks[0].calls, 1);
    cr_assert_eq(s.procs[0]->gpu.nvtx_unclosed, 1);
    summary_free(&s);
}

Test(report_gpu, no_gpu_records_no_gpu_tables)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_end(&b, 1, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    struct summary s;
    build(&s, report_test_load(path));
    cr_assert_not(s.gpu.any);
    cr_assert_eq(s.gpu.nkernels + s.gpu.ncopies + s.gpu.nactions + s.gpu.ncupti, 0);
    cr_assert_eq(s.procs[0]->nthreads, 0);
    summary_free(&s);
}
