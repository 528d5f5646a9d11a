/* model and summary: tick conversion, memory pairing, kernels, merging and ordering. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "model_stacks.h"
#include "summary.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_model");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_model, .init = setup, .fini = teardown);

static struct model_process *load(void)
{
    return report_test_load(path);
}

static struct trace_build open_trace(unsigned features)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, features), 0);
    trace_build_meta(&b, "pid", "77");
    return b;
}

static const struct model_api *api_named(const struct model_process *p, const char *name)
{
    for (size_t i = 0; i < p->napis; i++)
        if (p->apis[i] && !strcmp(p->apis[i]->name, name))
            return p->apis[i];
    return NULL;
}

Test(report_model, monotonic_ticks_are_ns)
{
    struct trace_build b = open_trace(0);
    trace_build_api_name(&b, 0, PROF_CAT_SYNC, "cudaDeviceSynchronize", "");
    trace_build_clock(&b, 5, 999, 0); /* ignored: no TSC */
    trace_build_call(&b, 0, 0, 1000, 1250, 0);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(api_named(p, "cudaDeviceSynchronize")->total_ns, 250);
    cr_assert_eq(p->nwarnings, 0);
    model_process_free(p);
}

Test(report_model, tsc_ticks_use_first_and_last_clock)
{
    struct trace_build b = open_trace(PROF_FEATURE_TSC_CLOCK);
    trace_build_meta(&b, "tsc_hz", "1000000000"); /* wrong on purpose: the fit wins */
    trace_build_api_name(&b, 0, PROF_CAT_SYNC, "cudaDeviceSynchronize", "");
    trace_build_clock(&b, 10000, 1000, 0);
    trace_build_call(&b, 0, 0, 20000, 20250, 0); /* 250 ticks */
    trace_build_call(&b, 0, 0, 30000, 32500, 0); /* 2500 ticks */
    trace_build_clock(&b, 15000, 2000, 0);       /* a middle pair does not matter */
    trace_build_clock(&b, 110000, 41000, 0);     /* 100000 ticks = 40000 ns: 2.5 ticks/ns */
    trace_build_close(&b);
    struct model_process *p = load();
    const struct model_api *a = api_named(p, "cudaDeviceSynchronize");
    cr_assert_eq(a->total_ns, 1100);
    cr_assert_eq(a->min_ns, 100);
    cr_assert_eq(a->max_ns, 1000);
    cr_assert_eq(model_ticks_to_ns(p, 5), 2);
    cr_assert_eq(p->nwarnings, 0);
    model_process_free(p);
}

Test(report_model, tsc_single_clock_uses_tsc_hz_and_warns)
{
    struct trace_build b = open_trace(PROF_FEATURE_TSC_CLOCK);
    trace_build_meta(&b, "tsc_hz", "4000000000");
    trace_build_api_name(&b, 0, PROF_CAT_SYNC, "cudaDeviceSynchronize", "");
    trace_build_clock(&b, 10000, 1000, 0);
    trace_build_call(&b, 0, 0, 20000, 24000, 0);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(api_named(p, "cudaDeviceSynchronize")->total_ns, 1000);
    cr_assert_eq(p->nwarnings, 1);
    cr_assert(strstr(p->warnings[0], "tsc_hz"), "%s", p->warnings[0]);
    model_process_free(p);
}

Test(report_model, tsc_without_any_rate_warns)
{
    struct trace_build b = open_trace(PROF_FEATURE_TSC_CLOCK);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(p->nwarnings, 1);
    cr_assert(strstr(p->warnings[0], "ticks"), "%s", p->warnings[0]);
    model_process_free(p);
}

/* The example of the brief, across two threads whose records are not in time order:
 * alloc a 100, alloc b 50, free a, alloc c 70 -> peak 150, 120 left live. */
Test(report_model, peak_pairs_allocations_in_time_order_across_threads)
{
    struct trace_build b = open_trace(0);
    trace_build_api_name(&b, 0, PROF_CAT_MEMORY, "cudaMalloc", "device_alloc,bytes");
    trace_build_api_name(&b, 1, PROF_CAT_MEMORY, "cudaFree", "free_ptr");
    trace_build_thread(&b, 1);
    trace_build_call(&b, 0, 0, 10, 20, 2, 0xa000ull, 100ull);  /* a */
    trace_build_call(&b, 0, 0, 30, 40, 2, 0xb000ull, 50ull);   /* b */
    trace_build_call(&b, 0, 2, 90, 100, 2, 0xd000ull, 500ull); /* failed: allocates nothing */
    trace_build_thread(&b, 2);
    trace_build_call(&b, 1, 0, 50, 60, 1, 0xa000ull);        /* free a */
    trace_build_call(&b, 0, 0, 70, 80, 2, 0xc000ull, 70ull); /* c */
    trace_build_call(&b, 1, 0, 81, 82, 1, 0ull);             /* free(NULL): nothing */
    trace_build_call(&b, 1, 1, 83, 84, 1, 0xb000ull);        /* failed free: nothing */
    trace_build_call(&b, 1, 0, 85, 86, 1, 0xeeeeull);        /* never allocated */
    trace_build_close(&b);

    struct model_process *p = load();
    const struct model_mem_stats *m = &p->mem[MODEL_SPACE_DEVICE];
    cr_assert_eq(m->alloc_count, 3);
    cr_assert_eq(m->alloc_bytes, 220);
    cr_assert_eq(m->free_count, 1);
    cr_assert_eq(m->free_bytes, 100);
    cr_assert_eq(m->peak_bytes, 150);
    cr_assert_eq(m->live_bytes, 120);
    cr_assert_eq(p->unmatched_frees, 1);
    cr_assert_eq(api_named(p, "cudaMalloc")->errors, 1);
    cr_assert_eq(p->mem[MODEL_SPACE_HOST_PINNED].alloc_count, 0);
    model_process_free(p);
}

Test(report_model, spaces_devices_and_copies)
{
    struct trace_build b = open_trace(0);
    trace_build_api_name(&b, 0, PROF_CAT_MEMORY, "cudaMallocManaged", "managed_alloc,bytes");
    trace_build_api_name(&b, 1, PROF_CAT_MEMORY, "cudaHostAlloc", "host_alloc,bytes");
    trace_build_api_name(&b, 2, PROF_CAT_MEMORY, "cudaMalloc", "device_alloc,bytes");
    trace_build_api_name(&b, 3, PROF_CAT_DEVICE, "cudaSetDevice", "set_device");
    trace_build_api_name(&b, 4, PROF_CAT_COPY, "cudaMemcpyAsync", "bytes,kind,stream");
    trace_build_api_name(&b, 5, PROF_CAT_COPY, "cudaMemcpyPeerAsync",
                         "bytes,dst_device,src_device,stream");
    trace_build_api_name(&b, 6, PROF_CAT_SET, "cudaMemsetAsync", "bytes,value,stream");
    trace_build_thread(&b, 1);
    trace_build_call(&b, 0, 0, 0, 1, 2, 0x1ull, 10ull);
    trace_build_call(&b, 1, 0, 0, 1, 2, 0x2ull, 20ull);
    trace_build_call(&b, 2, 0, 0, 1, 2, 0x3ull, 30ull); /* device 0 */
    trace_build_call(&b, 3, 0, 2, 3, 1, 2ull);
    trace_build_call(&b, 2, 0, 4, 5, 2, 0x4ull, 40ull); /* device 2 */
    trace_build_thread(&b, 2);
    trace_build_call(&b, 2, 0, 6, 7, 2, 0x5ull, 50ull);         /* another thread: device 0 */
    trace_build_call(&b, 4, 0, 0, 100, 3, 1000ull, 1ull, 0ull); /* HtoD */
    trace_build_call(&b, 4, 0, 0, 100, 3, 1000ull, 3ull, 0ull); /* DtoD */
    trace_build_call(&b, 4, 0, 0, 100, 3, 1000ull, 4ull, 0ull); /* Default */
    trace_build_call(&b, 4, 7, 0, 100, 3, 1000ull, 1ull, 0ull); /* failed HtoD: no bytes */
    trace_build_call(&b, 5, 0, 0, 400, 4, 4000ull, 1ull, 0ull, 0ull);
    trace_build_call(&b, 6, 0, 0, 50, 3, 300ull, 0ull, 0ull);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(p->mem[MODEL_SPACE_MANAGED].alloc_bytes, 10);
    cr_assert_eq(p->mem[MODEL_SPACE_HOST_PINNED].alloc_bytes, 20);
    cr_assert_eq(p->mem[MODEL_SPACE_DEVICE].alloc_bytes, 120);
    cr_assert(p->set_device_used);
    cr_assert_eq(p->ndevice_mem, 3);
    cr_assert_eq(p->device_mem[0].alloc_bytes, 80);
    cr_assert_eq(p->device_mem[1].alloc_bytes, 0);
    cr_assert_eq(p->device_mem[2].alloc_bytes, 40);
    cr_assert_eq(p->copies[MODEL_DIR_HTOD].calls, 2);
    cr_assert_eq(p->copies[MODEL_DIR_HTOD].errors, 1);
    cr_assert_eq(p->copies[MODEL_DIR_HTOD].bytes, 1000);
    cr_assert_eq(p->copies[MODEL_DIR_HTOD].ns, 200);
    cr_assert_eq(p->copies[MODEL_DIR_DTOD].bytes, 1000);
    cr_assert_eq(p->copies[MODEL_DIR_DEFAULT].bytes, 1000);
    cr_assert_eq(p->copies[MODEL_DIR_PTOP].bytes, 4000);
    cr_assert_eq(p->copies[MODEL_DIR_MEMSET].bytes, 300);
    cr_assert_eq(p->copies[MODEL_DIR_MEMSET].ns, 50);
    model_process_free(p);
}

Test(report_model, dim3_unpacking)
{
    uint32_t x, y, z;
    char buf[48];
    model_dim3_unpack(trace_build_dim3(65536, 3, 7), &x, &y, &z);
    cr_assert_eq(x, 65536);
    cr_assert_eq(y, 3);
    cr_assert_eq(z, 7);
    model_dim3_unpack(0xffffffffull | (0xffffull << 32) | (0xffffull << 48), &x, &y, &z);
    cr_assert_eq(x, 0xffffffffu);
    cr_assert_eq(y, 0xffff);
    cr_assert_eq(z, 0xffff);
    model_dim3_format(trace_build_dim3(128, 1, 1), buf, sizeof buf);
    cr_assert_str_eq(buf, "128,1,1");
}

Test(report_model, kernel_names_aliases_and_most_common_dims)
{
    struct trace_build b = open_trace(0);
    trace_build_api_name(&b, 0, PROF_CAT_LAUNCH, "cudaLaunchKernel",
                         "func,grid,block,shmem,stream");
    trace_build_thread(&b, 1);
    trace_build_call(&b, 0, 0, 0, 10, 5, 0x10ull, trace_build_dim3(4, 1, 1),
                     trace_build_dim3(32, 1, 1), 0ull, 0ull);
    trace_build_call(&b, 0, 0, 0, 10, 5, 0x10ull, trace_build_dim3(8, 1, 1),
                     trace_build_dim3(32, 1, 1), 0ull, 0ull);
    trace_build_call(&b, 0, 3, 0, 10, 5, 0x10ull, trace_build_dim3(8, 1, 1),
                     trace_build_dim3(64, 1, 1), 0ull, 0ull);
    trace_build_call(&b, 0, 0, 0, 10, 5, 0x99ull, 0ull, 0ull, 0ull, 0ull);
    trace_build_call(&b, 0, 0, 0, 10, 5, 0x30ull, 0ull, 0ull, 0ull, 0ull);
    /* Symbols after the launches: names resolve once the file ends. */
    trace_build_string(&b, 4, "_ZN5torch6kernelIfEEvPT_i");
    trace_build_symbol(&b, PROF_SYMBOL_KERNEL_ALIAS, 0, 0x10, 0x20);
    trace_build_symbol(&b, PROF_SYMBOL_KERNEL_NAME, 4, 0x20, 0);
    trace_build_string(&b, 5, "not_mangled");
    trace_build_symbol(&b, PROF_SYMBOL_KERNEL_NAME, 5, 0x30, 0);
    trace_build_close(&b);
    struct model_process *p = load();
    struct model_kernel *k = u64map_get_ptr(&p->kernels, 0x10);
    cr_assert_not_null(k);
    cr_assert_str_eq(k->name, "void torch::kernel<float>(float*, int)");
    cr_assert_eq(k->launches, 3);
    cr_assert_eq(k->errors, 1);
    cr_assert_eq(model_histogram_mode(&k->grids), trace_build_dim3(8, 1, 1));
    cr_assert_eq(model_histogram_mode(&k->blocks), trace_build_dim3(32, 1, 1));
    k = u64map_get_ptr(&p->kernels, 0x99);
    cr_assert_str_eq(k->name, "kernel@0x99");
    k = u64map_get_ptr(&p->kernels, 0x30);
    cr_assert_str_eq(k->name, "not_mangled");
    model_process_free(p);
}

Test(report_model, alias_cycle_does_not_hang)
{
    struct trace_build b = open_trace(0);
    trace_build_symbol(&b, PROF_SYMBOL_KERNEL_ALIAS, 0, 0x1, 0x2);
    trace_build_symbol(&b, PROF_SYMBOL_KERNEL_ALIAS, 0, 0x2, 0x1);
    trace_build_close(&b);
    struct model_process *p = load();
    char *name = model_kernel_resolve(p, 0x1);
    cr_assert_str_eq(name, "kernel@0x1");
    free(name);
    model_process_free(p);
}

Test(report_model, metadata_threads_lost_and_end)
{
    struct trace_build b = open_trace(0);
    trace_build_meta(&b, "rank", "3");
    trace_build_meta(&b, "argv", "python");
    trace_build_meta(&b, "argv", "a b.py");
    trace_build_meta(&b, "future.key", "x");
    trace_build_thread_name(&b, 9, "loader");
    trace_build_lost(&b, 9, 5);
    trace_build_lost(&b, 9, 2);
    trace_build_note(&b, "cupti off");
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(p->pid, 77);
    cr_assert_eq(p->rank, 3);
    cr_assert_str_eq(p->command, "python 'a b.py'");
    cr_assert_str_eq(model_meta_get(p, "future.key"), "x");
    cr_assert_eq(p->nthreads, 1);
    cr_assert_str_eq(p->threads[0].name, "loader");
    cr_assert_eq(p->threads[0].lost, 7);
    cr_assert_eq(p->lost, 7);
    cr_assert_eq(p->nnotes, 1);
    cr_assert_not(p->clean_end);
    model_process_free(p);
}

/* Two processes with different API ids for the same names: merged by name, ordered. */
static struct model_process *process_with(const char *file, unsigned base, uint64_t malloc_ns,
                                          uint64_t sync_ns, int frees)
{
    strcpy(path, file);
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_api_name(&b, base, PROF_CAT_MEMORY, "cudaMalloc", "device_alloc,bytes");
    trace_build_api_name(&b, base + 1, PROF_CAT_SYNC, "cudaStreamSynchronize", "stream");
    trace_build_api_name(&b, base + 2, PROF_CAT_MEMORY, "cudaFree", "free_ptr");
    trace_build_thread(&b, 1);
    trace_build_call(&b, base, 0, 0, malloc_ns, 2, 0x10ull, 1000ull);
    trace_build_call(&b, base + 1, 0, 0, sync_ns, 1, 0ull);
    trace_build_call(&b, base + 1, 4, 0, sync_ns, 1, 0ull);
    for (int i = 0; i < frees; i++)
        trace_build_call(&b, base + 2, 0, 0, 1, 1, 0x1ull);
    trace_build_close(&b);
    struct model_process *p = load();
    unlink(path);
    return p;
}

Test(report_model, summary_merges_by_name_sorts_and_limits)
{
    struct model_process **procs = malloc(2 * sizeof *procs);
    procs[0] = process_with("/tmp/test_report_model_p0", 0, 100, 10, 0);
    procs[1] = process_with("/tmp/test_report_model_p1", 40, 300, 20, 5);
    struct summary s;
    summary_build(&s, procs, 2);
    cr_assert_eq(s.napi, 3);
    /* default: total descending */
    cr_assert_str_eq(s.api[0].name, "cudaMalloc");
    cr_assert_eq(s.api[0].calls, 2);
    cr_assert_eq(s.api[0].total_ns, 400);
    cr_assert_eq(s.api[0].min_ns, 100);
    cr_assert_eq(s.api[0].max_ns, 300);
    cr_assert_float_eq(s.api[0].avg_ns, 200.0, 1e-9);
    cr_assert_str_eq(s.api[1].name, "cudaStreamSynchronize");
    cr_assert_eq(s.api[1].errors, 2);
    cr_assert_eq(s.api[1].total_ns, 60);
    cr_assert_float_eq(s.api[0].percent, 100.0 * 400 / 465, 1e-9);
    summary_sort(&s, SUMMARY_SORT_CALLS);
    cr_assert_str_eq(s.api[0].name, "cudaFree");
    cr_assert_str_eq(s.api[1].name, "cudaStreamSynchronize");
    summary_sort(&s, SUMMARY_SORT_NAME);
    cr_assert_str_eq(s.api[0].name, "cudaFree");
    cr_assert_str_eq(s.api[2].name, "cudaStreamSynchronize");
    summary_sort(&s, SUMMARY_SORT_ERRORS);
    cr_assert_str_eq(s.api[0].name, "cudaStreamSynchronize");
    summary_sort(&s, SUMMARY_SORT_MIN);
    cr_assert_str_eq(s.api[0].name, "cudaMalloc");
    /* Memory: counts summed, peak the largest single process. */
    cr_assert_eq(s.mem[MODEL_SPACE_DEVICE].alloc_count, 2);
    cr_assert_eq(s.mem[MODEL_SPACE_DEVICE].peak_bytes, 1000);
    enum summary_sort key;
    cr_assert_eq(summary_parse_sort("avg", &key), 0);
    cr_assert_eq(key, SUMMARY_SORT_AVG);
    cr_assert_eq(summary_parse_sort("bogus", &key), -1);
    summary_free(&s);
}

Test(report_model, run_selection_picks_latest)
{
    struct model_process **procs = malloc(3 * sizeof *procs);
    const char *runs[] = {"old", "new", "old"};
    const char *starts[] = {"100", "500", "90"};
    for (int i = 0; i < 3; i++) {
        procs[i] = model_process_new("x", 0);
        procs[i]->run_id = strdup(runs[i]);
        procs[i]->start_realtime_ns = strtoull(starts[i], NULL, 10);
    }
    size_t n = 3;
    char *notes = NULL;
    size_t notes_len = 0;
    FILE *f = open_memstream(&notes, &notes_len);
    cr_assert_eq(summary_select_run(procs, &n, NULL, 0, f), 0);
    fclose(f);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(procs[0]->run_id, "new");
    cr_assert(strstr(notes, "--run ID"), "%s", notes);
    cr_assert(strstr(notes, "old (2 files)"), "%s", notes);
    free(notes);
    model_process_free(procs[0]);
    free(procs);
}

/* A damaged file can hold any tick count or rate: conversions saturate instead of casting
 * a double past 2^64 (undefined; on x86 the sum read back as 0). */
Test(report_model, tick_conversions_saturate)
{
    struct trace_build b = open_trace(0);
    trace_build_api_name(&b, 0, PROF_CAT_SYNC, "cudaDeviceSynchronize", "");
    trace_build_call(&b, 0, 0, 0, UINT64_MAX, 0);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(api_named(p, "cudaDeviceSynchronize")->total_ns, UINT64_MAX);
    cr_assert_eq(model_ticks_to_monotonic_ns(p, UINT64_MAX), UINT64_MAX);
    model_process_free(p);

    /* TSC: first CLOCK pair near the top of the u64 range, 1 tick per ns. */
    b = open_trace(PROF_FEATURE_TSC_CLOCK);
    trace_build_clock(&b, 0, UINT64_MAX - 1000, 0);
    trace_build_clock(&b, 1000, UINT64_MAX, 0);
    trace_build_close(&b);
    p = load();
    cr_assert_eq(model_ticks_to_monotonic_ns(p, UINT64_MAX), UINT64_MAX);
    cr_assert_eq(model_ticks_to_ns(p, UINT64_MAX), UINT64_MAX);
    model_process_free(p);
}

/* A META tsc_hz that gives no finite rate (1e9 / 1e-300 is inf) counts as none. */
Test(report_model, tsc_hz_without_a_finite_rate_is_ignored)
{
    struct trace_build b = open_trace(PROF_FEATURE_TSC_CLOCK);
    trace_build_meta(&b, "tsc_hz", "1e-300");
    trace_build_api_name(&b, 0, PROF_CAT_SYNC, "cudaDeviceSynchronize", "");
    trace_build_call(&b, 0, 0, 1000, 5000, 0);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(api_named(p, "cudaDeviceSynchronize")->total_ns, 4000);
    cr_assert_eq(p->nwarnings, 1);
    cr_assert(strstr(p->warnings[0], "no META tsc_hz"), "%s", p->warnings[0]);
    model_process_free(p);
}

/* Every thread of a file with many keeps its own counts (threads are found through a
 * map; test/bench/bench_report.c measures the rate). */
Test(report_model, many_threads_keep_their_counts)
{
    enum { N = 20000 };
    struct trace_build b = open_trace(0);
    for (uint32_t i = 0; i < N; i++) {
        trace_build_thread(&b, 100 + i);
        trace_build_lost(&b, 100 + i, i % 7);
    }
    trace_build_thread_name(&b, 100 + N / 2, "middle");
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_eq(p->nthreads, N);
    for (uint32_t i = 0; i < N; i++) {
        cr_assert_eq(p->threads[i].tid, 100 + i);
        cr_assert_eq(p->threads[i].lost, i % 7, "thread %u", 100 + i);
    }
    cr_assert_str_eq(p->threads[N / 2].name, "middle");
    model_process_free(p);
}

/* SAMPLE grew at its end (op and NVTX range): a record of the first form (24 bytes, as
 * older writers made it) still reads, as a sample in no op and no range. */
Test(report_model, samples_of_both_forms_by_op_and_range)
{
    struct trace_build b = open_trace(PROF_FEATURE_STACKS);
    trace_build_string(&b, 5, "aten::mm");
    trace_build_string(&b, 6, "heavy_range");
    trace_build_thread(&b, 9);
    struct prof_rec_sample old = {
        {PROF_REC_SAMPLE, PROF_REC_SAMPLE_FIRST_SIZE}, 0, 100, 0, 2, 0, 0};
    trace_build_raw(&b, &old, PROF_REC_SAMPLE_FIRST_SIZE);
    struct prof_rec_sample now = {{PROF_REC_SAMPLE, sizeof now}, 0, 200, 0, 3, 5, 6};
    trace_build_raw(&b, &now, sizeof now);
    trace_build_close(&b);
    struct model_process *p = load();
    cr_assert_not_null(p->stacks);
    cr_assert_eq(p->stacks->sample_count, 5);
    const struct model_sample_tally *tallies[2] = {&p->stacks->by_op, &p->stacks->by_range};
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(tallies[t]->n, 2);
        for (size_t i = 0; i < 2; i++)
            cr_assert_eq(tallies[t]->rows[i].count, tallies[t]->rows[i].sid ? 3u : 2u);
    }
    cr_assert_eq(p->stacks->by_op.rows[1].sid, 5);
    cr_assert_eq(p->stacks->by_range.rows[1].sid, 6);
    model_process_free(p);
}

/* idmap (the Python nodes' and functions' index) agrees with a plain u64map on ids in
 * order, ids far out (kept in the hash map), id 0, overwrites and values too large for the
 * array. */
Test(report_model, idmap_agrees_with_a_hash_map)
{
    struct idmap m;
    struct u64map ref;
    idmap_init(&m);
    u64map_init(&ref);
    uint64_t x = 88172645463325252ULL;
    for (uint64_t i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t id = x % 8 == 0    ? x >> 20    /* far out */
                      : x % 8 == 1  ? x % 1000   /* an id seen before: overwrite */
                      : x % 64 == 2 ? 0          /* id 0 */
                                    : i * 3 / 4; /* about in order */
        uint64_t value = x % 97 == 0 ? (1ULL << 32) + i : i + 1;
        cr_assert_eq(idmap_set(&m, id, value), 0);
        *u64map_slot(&ref, id) = value;
    }
    size_t it = 0;
    uint64_t key, value, n = 0;
    while (u64map_next(&ref, &it, &key, &value)) {
        cr_assert_eq(idmap_get(&m, key), value, "id %llu", (unsigned long long)key);
        n++;
    }
    cr_assert_eq(m.count + m.sparse.count, n);
    cr_assert_gt(m.sparse.count, 0);
    cr_assert_gt(m.count, n / 2);
    cr_assert_eq(idmap_get(&m, 1ULL << 62), 0);
    cr_assert_eq(idmap_get(&m, m.cap + 1),
                 u64map_find(&ref, m.cap + 1) ? *u64map_find(&ref, m.cap + 1) : 0);
    idmap_free(&m);
    u64map_free(&ref);
}
