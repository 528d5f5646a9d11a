/* Tensor memory counted in the process (TORCH_MEM_TOTALS): the record round trip, and the
 * memory figures the report takes from it when the ring dropped memory records.
 *
 * Trace (ticks are ns; pid 7500), thread 7500: ops aten::empty 100-300, aten::add 400-600.
 *   CPU records kept: +1000 at 150 (in empty), +3000 at 450 (in add). The process counted
 *   3 allocations (4500 bytes) and 2 frees (1500 bytes): live 3000, peak 4000 at 450. An
 *   earlier, smaller CPU totals record comes first: the later one replaces it.
 *   CUDA:0: every record lost; totals 2 allocations (8192), 1 free (4096), live 4096,
 *   peak 8192 at 700, allocator reserved at most 16384. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "report_test.h"
#include "summary_file.h"
#include "trace_read.h"

static char path[64], summary[64];

static void setup(void)
{
    report_test_temp(path, "report_torch_totals");
    report_test_temp(summary, "report_torch_totals_sum");
}

static void teardown(void)
{
    unlink(path);
    unlink(summary);
}

TestSuite(report_torch_totals, .init = setup, .fini = teardown);

enum { S_EMPTY = 1, S_ADD };

static const struct prof_rec_torch_mem_totals cpu_early = {.device_type = 0,
                                                           .device_index = -1,
                                                           .alloc_count = 1,
                                                           .alloc_bytes = 1000,
                                                           .live_bytes = 1000,
                                                           .peak_bytes = 1000,
                                                           .peak_ticks = 150};
static const struct prof_rec_torch_mem_totals cpu_final = {.device_type = 0,
                                                           .device_index = -1,
                                                           .alloc_count = 3,
                                                           .alloc_bytes = 4500,
                                                           .free_count = 2,
                                                           .free_bytes = 1500,
                                                           .live_bytes = 3000,
                                                           .peak_bytes = 4000,
                                                           .peak_ticks = 450};
static const struct prof_rec_torch_mem_totals cuda0 = {.device_type = 1,
                                                       .device_index = 0,
                                                       .alloc_count = 2,
                                                       .alloc_bytes = 8192,
                                                       .free_count = 1,
                                                       .free_bytes = 4096,
                                                       .live_bytes = 4096,
                                                       .peak_bytes = 8192,
                                                       .peak_ticks = 700,
                                                       .reserved_peak = 16384};

static int write_trace(int with_totals)
{
    struct trace_build b;
    if (trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0) != 0)
        return -1;
    trace_build_meta(&b, "pid", "7500");
    trace_build_meta(&b, "ppid", "1");
    trace_build_meta(&b, "argv", "python3");
    trace_build_meta(&b, "run_id", "run-totals");
    trace_build_clock(&b, 0, 0, 7000000000ull);
    trace_build_string(&b, S_EMPTY, "aten::empty");
    trace_build_string(&b, S_ADD, "aten::add");
    trace_build_thread(&b, 7500);
    trace_build_torch_mem(&b, 1000, 0x1000, 150, 0);
    trace_build_torch_op(&b, S_EMPTY, 100, 300, -1, 0, 0, 0, 0);
    trace_build_torch_mem(&b, 3000, 0x2000, 450, 0);
    trace_build_torch_op(&b, S_ADD, 400, 600, -1, 0, 0, 0, 0);
    trace_build_lost(&b, 7500, 6);
    if (with_totals) {
        trace_build_torch_mem_totals(&b, &cpu_early);
        trace_build_torch_mem_totals(&b, &cuda0);
        trace_build_torch_mem_totals(&b, &cpu_final);
    }
    trace_build_clock(&b, 100000, 100000, 7000100000ull);
    trace_build_end(&b, 100000, 10, 6);
    return trace_build_close(&b);
}

Test(report_torch_totals, record_round_trip)
{
    cr_assert_eq(write_trace(1), 0);
    char err[256];
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct trace_record rec;
    int seen = 0;
    while (trace_reader_next(r, &rec) == 1) {
        if (rec.type != PROF_REC_TORCH_MEM_TOTALS)
            continue;
        cr_assert_eq(rec.size, sizeof(struct prof_rec_torch_mem_totals));
        const struct prof_rec_torch_mem_totals *want = seen == 0   ? &cpu_early
                                                       : seen == 1 ? &cuda0
                                                                   : &cpu_final;
        const struct prof_rec_torch_mem_totals *got = rec.data;
        cr_assert_eq(memcmp((const char *)got + 4, (const char *)want + 4, sizeof *got - 4), 0,
                     "record %d", seen);
        seen++;
    }
    cr_assert_eq(seen, 3);
    cr_assert_str_eq(trace_record_type_name(PROF_REC_TORCH_MEM_TOTALS), "TORCH_MEM_TOTALS");
    trace_reader_close(r);
}

static void check_exact(const struct model_process *p)
{
    const struct model_torch_memory *m = &p->torch.memory;
    cr_assert(m->any && m->exact);
    cr_assert_eq(m->alloc_count, 3);
    cr_assert_eq(m->free_count, 2);
    cr_assert_eq(m->allocated, 4500);
    cr_assert_eq(m->freed, 1500);
    cr_assert_eq(m->live_at_end, 3000);
    cr_assert_eq(m->peak_bytes, 4000);
    cr_assert_eq(m->peak_ns, 450);
    cr_assert_eq(m->records_lost, 3, "5 counted, 2 kept");
    cr_assert(!m->peak_unattributed);
    cr_assert_str_eq(m->peak_op, "aten::add", "the kept record at the peak's ticks");
    cr_assert_eq(p->torch.ndevices, 1, "a device whose records were all lost still shows");
    const struct model_torch_memory *d = &p->torch.devices[0];
    cr_assert(d->any && d->exact);
    cr_assert_eq(d->dev_type, 1);
    cr_assert_eq(d->dev_index, 0);
    cr_assert_eq(d->peak_bytes, 8192);
    cr_assert_eq(d->peak_ns, 700);
    cr_assert_eq(d->allocated, 8192);
    cr_assert_eq(d->freed, 4096);
    cr_assert_eq(d->live_at_end, 4096);
    cr_assert_eq(d->reserved_peak, 16384);
    cr_assert_eq(d->records_lost, 3);
    cr_assert(d->peak_unattributed);
    cr_assert_null(d->peak_op);
}

Test(report_torch_totals, figures_from_the_counters)
{
    cr_assert_eq(write_trace(1), 0);
    struct model_process *p = report_test_load(path);
    check_exact(p);
    int warned = 0;
    for (size_t i = 0; i < p->nwarnings; i++)
        warned += strstr(p->warnings[i], "3 of 5 CPU tensor memory records lost") != NULL ||
                  strstr(p->warnings[i], "3 of 3 CUDA:0 tensor memory records lost") != NULL;
    cr_assert_eq(warned, 2);
    model_process_free(p);
}

Test(report_torch_totals, summary_keeps_them)
{
    cr_assert_eq(write_trace(1), 0);
    struct model_process *p = report_test_load(path);
    char err[256];
    cr_assert_eq(summary_file_write(summary, p, NULL, err, sizeof err), 0, "%s", err);
    model_process_free(p);
    struct model_process *q = summary_file_load(summary, err, sizeof err);
    cr_assert_not_null(q, "%s", err);
    check_exact(q);
    model_process_free(q);
}

Test(report_torch_totals, older_traces_from_the_records)
{
    cr_assert_eq(write_trace(0), 0);
    struct model_process *p = report_test_load(path);
    const struct model_torch_memory *m = &p->torch.memory;
    cr_assert(m->any && !m->exact);
    cr_assert_eq(m->alloc_count, 2);
    cr_assert_eq(m->free_count, 0);
    cr_assert_eq(m->allocated, 4000);
    cr_assert_eq(m->live_at_end, 4000);
    cr_assert_eq(m->peak_bytes, 4000);
    cr_assert_eq(m->records_lost, 0);
    cr_assert_eq(p->torch.ndevices, 0);
    model_process_free(p);
}
