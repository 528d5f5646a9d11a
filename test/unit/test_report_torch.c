/* PyTorch operators (TORCH_OP): nesting by time into self and total CPU time, kernels tied
 * to the ops around their launch (CUDA columns), rows by name or by name and shapes,
 * torch's sort keys and units, record_function scopes and the built-in loop actions. The
 * numbers are those test/fixtures/traces/torch_traces.h documents. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/torch_traces.h"
#include "model.h"
#include "summary.h"
#include "tables.h"
#include "timeline.h"
#include "report_test.h"

#define U TORCH_U

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_torch");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_torch, .init = setup, .fini = teardown);

static void build_n(struct summary *s, size_t n)
{
    struct model_process **procs = malloc(n * sizeof *procs);
    cr_assert_not_null(procs);
    for (size_t i = 0; i < n; i++)
        procs[i] = report_test_load(path);
    summary_build(s, procs, n);
}

static const struct summary_op_row *op_named(const struct summary *s, const char *name,
                                             const char *shapes)
{
    for (size_t i = 0; i < s->torch.nrows; i++) {
        const struct summary_op_row *r = &s->torch.rows[i];
        if (!strcmp(r->name, name) && (!shapes || (r->shapes && !strcmp(r->shapes, shapes))))
            return r;
    }
    return NULL;
}

static const struct summary_action_row *action_named(const struct summary *s, const char *name)
{
    for (size_t i = 0; i < s->gpu.nactions; i++)
        if (!strcmp(s->gpu.actions[i].name, name))
            return &s->gpu.actions[i];
    return NULL;
}

/* name, calls, self CPU, CPU total, self CUDA, CUDA total (U) */
static void expect_op(const struct summary *s, const char *name, uint64_t calls, uint64_t self,
                      uint64_t total, uint64_t self_cuda, uint64_t cuda)
{
    const struct summary_op_row *r = op_named(s, name, NULL);
    cr_assert_not_null(r, "no row %s", name);
    cr_expect_eq(r->calls, calls, "%s calls %llu", name, (unsigned long long)r->calls);
    cr_expect_eq(r->self_cpu_ns, self * U, "%s self %llu", name,
                 (unsigned long long)r->self_cpu_ns);
    cr_expect_eq(r->cpu_total_ns, total * U, "%s total %llu", name,
                 (unsigned long long)r->cpu_total_ns);
    cr_expect_eq(r->self_cuda_ns, self_cuda * U, "%s self cuda %llu", name,
                 (unsigned long long)r->self_cuda_ns);
    cr_expect_eq(r->cuda_total_ns, cuda * U, "%s cuda %llu", name,
                 (unsigned long long)r->cuda_total_ns);
}

Test(report_torch, ops_nest_by_time_into_self_and_total)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    cr_assert_eq(s.torch.records, 13);
    cr_assert_eq(s.torch.nrows, 8);
    expect_op(&s, "aten::addmm", 2, 280, 280, 18, 18);
    expect_op(&s, "my_scope", 2, 130, 600, 0, 20);
    expect_op(&s, "aten::mm", 1, 80, 80, 10, 10);
    expect_op(&s, "aten::clamp_min", 1, 60, 60, 2, 2);
    expect_op(&s, "aten::relu", 2, 60, 120, 0, 2);
    expect_op(&s, "aten::linear", 2, 55, 350, 0, 18);
    expect_op(&s, "AddmmBackward0", 1, 20, 100, 0, 10);
    expect_op(&s, "aten::t", 2, 15, 15, 0, 0);
    /* Self CPU adds up to the time the top-level ops cover; no row has shapes ungrouped. */
    cr_assert_eq(s.torch.self_cpu_total_ns, 700 * U);
    for (size_t i = 0; i < s.torch.nrows; i++)
        cr_assert_null(s.torch.rows[i].shapes);
    summary_free(&s);
}

Test(report_torch, cuda_only_from_launches_inside_ops_of_the_thread)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    /* corr 5 was launched outside any op, corr 7 inside AddmmBackward0's span but on the
     * main thread: neither counts; every other kernel counts once as self CUDA. */
    cr_assert_eq(s.torch.self_cuda_total_ns, 30 * U);
    cr_assert_eq(s.gpu.kernel_ns, 36 * U);
    cr_assert(s.torch.any_cuda);
    const struct summary_op_row *addmm = op_named(&s, "aten::addmm", NULL);
    cr_assert_float_eq(addmm->cuda_avg_ns, 9.0 * U, 1e-6);
    cr_assert_float_eq(addmm->cpu_avg_ns, 140.0 * U, 1e-6);
    summary_free(&s);
}

Test(report_torch, percentages_are_of_the_self_cpu_sum)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    const struct summary_op_row *addmm = op_named(&s, "aten::addmm", NULL);
    const struct summary_op_row *scope = op_named(&s, "my_scope", NULL);
    const struct summary_op_row *mm = op_named(&s, "aten::mm", NULL);
    cr_assert_float_eq(addmm->self_cpu_percent, 40.0, 1e-9);
    cr_assert_float_eq(addmm->self_cuda_percent, 60.0, 1e-9);
    cr_assert_float_eq(scope->self_cpu_percent, 100.0 * 130 / 700, 1e-9);
    cr_assert_float_eq(scope->cpu_total_percent, 100.0 * 600 / 700, 1e-9);
    cr_assert_float_eq(mm->self_cuda_percent, 100.0 / 3, 1e-9);
    summary_free(&s);
}

Test(report_torch, group_by_shape_splits_rows)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    summary_build_torch(&s, 1);
    cr_assert(s.torch.by_shape);
    cr_assert_eq(s.torch.nrows, 10);
    const struct summary_op_row *a1 = op_named(&s, "aten::addmm", "[[4], [8, 16], [16, 4]]");
    const struct summary_op_row *a2 = op_named(&s, "aten::addmm", "[[4], [2, 16], [16, 4]]");
    cr_assert(a1 && a2);
    cr_assert_eq(a1->self_cpu_ns, 160 * U);
    cr_assert_eq(a2->self_cpu_ns, 120 * U);
    cr_assert_eq(a1->self_cuda_ns, 10 * U);
    cr_assert_eq(op_named(&s, "aten::linear", "[[2, 16], [4, 16], [4]]")->self_cpu_ns, 25 * U);
    cr_assert_eq(op_named(&s, "aten::t", "[[4, 16]]")->calls, 2);
    cr_assert_eq(op_named(&s, "aten::relu", "[[8, 4]]")->calls, 2);
    cr_assert_str_eq(op_named(&s, "aten::mm", NULL)->shapes, ""); /* recorded without */
    cr_assert_eq(s.torch.self_cpu_total_ns, 700 * U);
    /* And back. */
    summary_build_torch(&s, 0);
    cr_assert_eq(s.torch.nrows, 8);
    summary_free(&s);
}

Test(report_torch, sort_keys_and_torch_spellings)
{
    enum summary_op_sort k;
    cr_assert_eq(summary_parse_op_sort("self_cpu", &k), 0);
    cr_assert_eq(k, SUMMARY_OP_SORT_SELF_CPU);
    cr_assert_eq(summary_parse_op_sort("cpu_time_total", &k), 0);
    cr_assert_eq(k, SUMMARY_OP_SORT_CPU_TOTAL);
    cr_assert_eq(summary_parse_op_sort("self_cpu_time_total", &k), 0);
    cr_assert_eq(k, SUMMARY_OP_SORT_SELF_CPU);
    cr_assert_eq(summary_parse_op_sort("cuda_time_total", &k), 0);
    cr_assert_eq(k, SUMMARY_OP_SORT_CUDA_TOTAL);
    cr_assert_eq(summary_parse_op_sort("count", &k), 0);
    cr_assert_eq(k, SUMMARY_OP_SORT_CALLS);
    cr_assert_eq(summary_parse_op_sort("cumtime", &k), -1);

    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    /* Default: self CPU; the tie of relu and clamp_min (60U) by name. */
    const char *by_self[] = {"aten::addmm", "my_scope",     "aten::mm",       "aten::clamp_min",
                             "aten::relu",  "aten::linear", "AddmmBackward0", "aten::t"};
    for (size_t i = 0; i < 8; i++)
        cr_expect_str_eq(s.torch.rows[i].name, by_self[i]);
    summary_sort_torch(&s, SUMMARY_OP_SORT_CPU_TOTAL);
    cr_expect_str_eq(s.torch.rows[0].name, "my_scope");
    cr_expect_str_eq(s.torch.rows[1].name, "aten::linear");
    summary_sort_torch(&s, SUMMARY_OP_SORT_SELF_CUDA);
    cr_expect_str_eq(s.torch.rows[0].name, "aten::addmm");
    cr_expect_str_eq(s.torch.rows[1].name, "aten::mm");
    summary_sort_torch(&s, SUMMARY_OP_SORT_CUDA_TOTAL);
    cr_expect_str_eq(s.torch.rows[0].name, "my_scope");
    summary_sort_torch(&s, SUMMARY_OP_SORT_CALLS);
    cr_expect_eq(s.torch.rows[0].calls, 2);
    cr_expect_str_eq(s.torch.rows[0].name, "aten::addmm");
    summary_sort_torch(&s, SUMMARY_OP_SORT_NAME);
    cr_expect_str_eq(s.torch.rows[0].name, "AddmmBackward0");
    cr_expect_str_eq(s.torch.rows[7].name, "my_scope");
    summary_free(&s);
}

Test(report_torch, processes_merge_by_name)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 2);
    cr_assert_eq(s.torch.nrows, 8);
    expect_op(&s, "aten::addmm", 4, 560, 560, 36, 36);
    cr_assert_float_eq(op_named(&s, "aten::addmm", NULL)->self_cpu_percent, 40.0, 1e-9);
    cr_assert_eq(action_named(&s, "forward")->calls, 6);
    cr_assert_eq(s.gpu.action_wall_ns, 2 * 4000 * U);
    cr_assert_eq(s.gpu.action_base_ns, 2 * 2190 * U); /* summed over the processes */
    summary_free(&s);
}

Test(report_torch, scopes_and_builtin_actions)
{
    cr_assert_eq(torch_trace_main(path), 0);
    struct summary s;
    build_n(&s, 1);
    cr_assert_eq(s.gpu.nactions, 5);
    static const struct {
        const char *name;
        uint64_t calls, total, gpu;
        uint8_t source;
    } want[] = {
        {"forward", 3, 890, 20, MODEL_ACTION_BUILTIN},
        {"backward", 2, 600, 1, MODEL_ACTION_BUILTIN},
        {"my_scope", 2, 600, 20, MODEL_ACTION_RECORD_FUNCTION},
        {"optimizer_step", 2, 400, 5, MODEL_ACTION_BUILTIN},
        {"dataloader_next", 3, 300, 0, MODEL_ACTION_BUILTIN},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const struct summary_action_row *a = &s.gpu.actions[i]; /* by total, then name */
        cr_expect_str_eq(a->name, want[i].name);
        cr_expect_eq(a->calls, want[i].calls, "%s calls", a->name);
        cr_expect_eq(a->total_ns, want[i].total * U, "%s total", a->name);
        cr_expect_eq(a->gpu_ns, want[i].gpu * U, "%s gpu", a->name);
        cr_expect_eq(a->source, want[i].source, "%s source", a->name);
    }
    /* Shares of the training: the built-in loop actions, none inside another here. */
    cr_assert_eq(s.gpu.action_base, SUMMARY_ACTION_BASE_BUILTIN);
    cr_assert_eq(s.gpu.action_base_ns, (890 + 600 + 400 + 300) * U);
    cr_assert_float_eq(action_named(&s, "forward")->percent, 100.0 * 890 / 2190, 1e-9);
    cr_assert_eq(s.gpu.action_folded + s.gpu.action_unfolded, 0);
    cr_assert_eq(s.gpu.action_wall_ns, 4000 * U);
    cr_assert_eq(s.gpu.action_gpu_ns, 36 * U);
    cr_assert_eq(s.gpu.action_sources,
                 1 << MODEL_ACTION_RECORD_FUNCTION | 1 << MODEL_ACTION_BUILTIN);
    summary_free(&s);
}

/* Activation checkpointing: the forwards recomputed inside backward (under Tensor.backward
 * on the step thread, under the autograd engine's callbacks on its own thread) are
 * backward's calls, time and kernels, not forwards; the reentrant checkpoint's backward
 * inside is no second backward; Function.apply, a Function's forward side, is no engine
 * callback (torch_traces.h, torch_trace_ckpt). */
Test(report_torch, recomputed_forwards_are_backward)
{
    cr_assert_eq(torch_trace_ckpt(path), 0);
    struct summary s;
    build_n(&s, 1);
    const struct summary_action_row *f = action_named(&s, "forward");
    const struct summary_action_row *b = action_named(&s, "backward");
    const struct summary_action_row *o = action_named(&s, "optimizer_step");
    cr_assert(f && b && o);
    cr_expect_eq(f->calls, 3);
    cr_expect_eq(f->total_ns, 330 * U);
    cr_expect_eq(f->gpu_ns, 0);
    cr_expect_eq(b->calls, 2);
    cr_expect_eq(b->total_ns, 600 * U);
    cr_expect_eq(b->gpu_ns, 3 * U);
    cr_expect_eq(o->calls, 2);
    cr_expect_eq(s.procs[0]->torch.builtin_top_ns, 980 * U);
    summary_free(&s);
}

Test(report_torch, torch_units)
{
    char b[32];
    tables_torch_time(812, b, sizeof b);
    cr_assert_str_eq(b, "0.812us");
    tables_torch_time(3250000, b, sizeof b);
    cr_assert_str_eq(b, "3.250ms");
    tables_torch_time(2503000000.0, b, sizeof b);
    cr_assert_str_eq(b, "2.503s");
    tables_torch_share(1, 8, b, sizeof b);
    cr_assert_str_eq(b, "12.50%");
    tables_torch_share(0, 0, b, sizeof b);
    cr_assert_str_eq(b, "NaN");
    tables_torch_memory(512, b, sizeof b);
    cr_assert_str_eq(b, "512 b");
    tables_torch_memory(1536, b, sizeof b);
    cr_assert_str_eq(b, "1.50 Kb");
    tables_torch_memory(3 * 1024 * 1024, b, sizeof b);
    cr_assert_str_eq(b, "3.00 Mb");
    tables_torch_memory(2LL * 1024 * 1024 * 1024, b, sizeof b);
    cr_assert_str_eq(b, "2.00 Gb");
    tables_torch_memory(-2048, b, sizeof b);
    cr_assert_str_eq(b, "-2.00 Kb");
}

/* Ops whose records come in any order still nest by time; an op overlapping a sibling
 * without holding it is no child of it, and says so. */
Test(report_torch, nesting_does_not_depend_on_record_order)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "outer");
    trace_build_string(&b, 2, "inner");
    trace_build_string(&b, 3, "skewed");
    trace_build_thread(&b, 9);
    trace_build_torch_op(&b, 1, 1000, 2000, -1, 0, 0, 0, 0); /* parent first, this time */
    trace_build_torch_op(&b, 2, 1100, 1300, -1, 0, 0, 1, 0);
    trace_build_torch_op(&b, 2, 1500, 1600, -1, 0, 0, 1, 0);
    trace_build_torch_op(&b, 3, 1900, 2500, -1, 0, 0, 1, 0); /* starts inside, ends after */
    cr_assert_eq(trace_build_close(&b), 0);
    struct model_process *p = report_test_load(path);
    const struct model_torch *t = &p->torch;
    cr_assert_eq(t->nrows, 3);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct model_torch_row *r = &t->rows[i];
        if (!strcmp(r->name, "outer"))
            cr_expect_eq(r->self_cpu_ns, 700);
        else if (!strcmp(r->name, "inner"))
            cr_expect(r->calls == 2 && r->self_cpu_ns == 300 && r->cpu_total_ns == 300);
        else
            cr_expect_eq(r->self_cpu_ns, 600);
    }
    cr_assert_eq(t->unnested, 1);
    cr_assert_eq(p->nwarnings, 1);
    cr_assert_null(t->ops); /* the raw ops are gone once the rows are made */
    model_process_free(p);
}

/* CPU tensor memory (TORCH_MEM with py_node): live bytes in time over both threads, the
 * peak, the op and Python function that reached it (torch_traces.h, torch_trace_mem). */
Test(report_torch, memory_peak_over_threads)
{
    cr_assert_eq(torch_trace_mem(path), 0);
    struct model_process *p = report_test_load(path);
    const struct model_torch_memory *m = &p->torch.memory;
    cr_assert(m->any);
    cr_assert_eq(m->peak_bytes, 10644);
    cr_assert_eq(m->peak_ns, 330 * U);
    cr_assert_str_eq(m->peak_op, "aten::relu");
    const struct model_py_func *f = model_torch_peak_func(p, m);
    cr_assert_not_null(f);
    cr_assert_str_eq(f->qualname, "Net.forward");
    cr_assert_str_eq(f->file, "/w/train.py");
    cr_assert_eq(f->line, 10);
    cr_assert_eq(m->allocated, 11744);
    cr_assert_eq(m->freed, 4548);
    cr_assert_eq(m->live_at_end, 7196);
    cr_assert_eq(m->ntimeline, 9);
    static const int64_t live[] = {1000, 5096, 7144, 6144, 7644, 10644, 9144, 7096, 7196};
    static const uint64_t at[] = {105, 150, 200, 250, 260, 330, 340, 350, 600};
    for (size_t i = 0; i < 9; i++) {
        cr_assert_eq(m->timeline[i].live, live[i], "row %zu", i);
        cr_assert_eq(m->timeline[i].ns, at[i] * U, "row %zu", i);
    }
    model_process_free(p);
}

/* Device memory (TORCH_DEV_MEM) of the same trace: one timeline per device, the CPU
 * reports ignored (they repeat TORCH_MEM), CUDA Mem per op (torch_traces.h). */
Test(report_torch, device_memory_per_device_and_op)
{
    cr_assert_eq(torch_trace_mem(path), 0);
    struct model_process *p = report_test_load(path);
    const struct model_torch *t = &p->torch;
    cr_assert_eq(t->dev_mem_records, 5);
    cr_assert_eq(t->memory.allocated, 11744); /* the CPU report added nothing */
    cr_assert_eq(t->ndevices, 2);
    const struct model_torch_memory *c0 = &t->devices[0], *c1 = &t->devices[1];
    char name[48];
    cr_assert_str_eq(model_torch_device_name(c0->dev_type, c0->dev_index, name, sizeof name),
                     "CUDA:0");
    cr_assert_str_eq(model_torch_device_name(c1->dev_type, c1->dev_index, name, sizeof name),
                     "CUDA:1");
    cr_assert_eq(c0->peak_bytes, 12288);
    cr_assert_eq(c0->peak_ns, 335 * U);
    cr_assert_str_eq(c0->peak_op, "aten::relu");
    const struct model_py_func *f = model_torch_peak_func(p, c0);
    cr_assert(f && !strcmp(f->qualname, "Net.forward"));
    cr_assert_eq(c0->allocated, 12288);
    cr_assert_eq(c0->freed, 8192);
    cr_assert_eq(c0->live_at_end, 4096);
    cr_assert_eq(c0->reserved_peak, 2u << 20);
    cr_assert_eq(c0->ntimeline, 3);
    cr_assert_eq(c1->peak_bytes, 512);
    cr_assert_null(c1->peak_op);
    cr_assert_eq(c1->reserved_peak, 20u << 20);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct model_torch_row *r = &t->rows[i];
        if (!strcmp(r->name, "aten::addmm"))
            cr_expect(r->self_dev_mem == 8192 && r->dev_mem == 8192);
        else if (!strcmp(r->name, "aten::linear"))
            cr_expect(r->self_dev_mem == 0 && r->dev_mem == 8192);
        else if (!strcmp(r->name, "aten::relu"))
            cr_expect(r->self_dev_mem == -4096 && r->dev_mem == -4096);
    }
    model_process_free(p);

    struct summary s; /* the merged rows carry it, and sort by it */
    build_n(&s, 1);
    enum summary_op_sort k;
    cr_assert_eq(summary_parse_op_sort("self_cuda_memory_usage", &k), 0);
    summary_sort_torch(&s, k);
    cr_assert_str_eq(s.torch.rows[0].name, "aten::addmm");
    cr_assert_eq(s.torch.rows[0].self_dev_mem, 8192);
    cr_assert_eq(summary_parse_op_sort("cpu_memory_usage", &k), 0);
    summary_sort_torch(&s, k);
    /* 4096 + 2048 - 1000 under both; the tie by name */
    cr_assert_str_eq(s.torch.rows[0].name, "aten::addmm");
    cr_assert_str_eq(s.torch.rows[1].name, "aten::linear");
    cr_assert_eq(s.torch.rows[1].cpu_mem, 5144);
    cr_assert_eq(s.torch.dev_mem_records, 5);
    summary_free(&s);
}

/* Byte sums a damaged file pushes past int64 saturate (signed overflow is undefined; it
 * wrapped to -2 here). */
Test(report_torch, memory_sums_saturate)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "5");
    trace_build_string(&b, 1, "aten::empty");
    trace_build_thread(&b, 5);
    trace_build_torch_mem(&b, INT64_MAX, 0x1000, 10, 0);
    trace_build_torch_mem(&b, INT64_MAX, 0x2000, 20, 0);
    trace_build_torch_mem(&b, INT64_MIN, 0x3000, 30, 0);
    trace_build_torch_op(&b, 1, 5, 25, 1, 0, 0, 0, 0);
    trace_build_close(&b);
    struct model_process *p = report_test_load(path);
    const struct model_torch *t = &p->torch;
    cr_assert_eq(t->nrows, 1);
    cr_assert_eq(t->rows[0].self_cpu_mem, INT64_MAX);
    cr_assert_eq(t->rows[0].cpu_mem, INT64_MAX);
    cr_assert_eq(t->memory.peak_bytes, INT64_MAX);
    cr_assert_eq(t->memory.freed, (uint64_t)1 << 63);
    model_process_free(p);
}

static int timeline_memory_min(void *ctx, const struct timeline_event *ev)
{
    int64_t *lowest = ctx;
    if (ev->kind == TIMELINE_MEMORY && ev->live < *lowest)
        *lowest = ev->live;
    return 0;
}

/* The timeline exports' live bytes (Chrome's "Total Allocated", Perfetto's counter) sum a
 * device's allocations: a damaged or planted trace whose sizes add past INT64_MAX must
 * saturate as the model's sums do, not overflow (undefined) into a negative total. */
Test(report_torch, timeline_memory_sum_saturates)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "7400");
    trace_build_meta(&b, "start_monotonic_ns", "1000");
    trace_build_clock(&b, TORCH_T0, TORCH_T0, 7000000000ull);
    trace_build_thread(&b, 7400);
    trace_build_torch_dev_mem(&b, 1, 0, INT64_MAX - 10, 0x1000, torch_t(10), 0, 0);
    trace_build_torch_dev_mem(&b, 1, 0, INT64_MAX - 10, 0x2000, torch_t(20), 0, 0);
    trace_build_torch_dev_mem(&b, 1, 0, 4096, 0x3000, torch_t(30), 0, 0);
    trace_build_end(&b, torch_t(100), 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    char err[256];
    struct model_process *p = timeline_load_defs(path, err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    int64_t lowest = INT64_MAX;
    cr_assert_eq(timeline_stream(p, timeline_memory_min, &lowest, err, sizeof err), 0, "%s", err);
    cr_assert_eq(lowest, INT64_MAX - 10);
    model_process_free(p);
}
