/* PyTorch op trees (TORCH_NODE / TORCH_STATS): the operator table's counts, times and
 * memory come from them, whatever the timeline (TORCH_OP spans) kept; the CUDA columns and
 * the memory timeline from what it kept; the report says how many spans it kept, and a
 * loss of spans alone does not call the counts short.
 *
 * Trace (ticks are ns; pid 7400), thread 7400, tree as torch_ops.c writes it:
 *   n1 aten::mean              calls 3 raw 3  total 3000 self 1200  mem 4096/1024
 *     n2 aten::mean  (folded)  calls 0 raw 3  (every call the only child of a mean)
 *       n3 aten::div_          calls 3 raw 3  total 600  self 600   mem -512/-512
 *   n4 my_scope USER_SCOPE     calls 2 raw 2  total 5000 self 5000
 *   n1 is written twice: the second STATS replaces the first.
 * Spans kept: one aten::mean 100-1100 with a launch at 200 (kernel 50 ns), one aten::div_
 * 300-500; a LOST record says 9 records were dropped (= 11 raw calls - 2 spans). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "report_test.h"
#include "summary.h"
#include "tables.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_torch_tree");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_torch_tree, .init = setup, .fini = teardown);

enum { S_MEAN = 1, S_DIV, S_SCOPE, S_GEMM };

static void node(struct trace_build *b, uint32_t id, uint32_t parent, uint32_t name, uint8_t scope)
{
    struct prof_rec_torch_node r;
    memset(&r, 0, sizeof r);
    r.node_id = id;
    r.parent_id = parent;
    r.name_sid = name;
    r.scope = scope;
    trace_build_record(b, PROF_REC_TORCH_NODE, &r, sizeof r, NULL, NULL);
}

static void stats(struct trace_build *b, uint32_t id, uint64_t calls, uint64_t raw, uint64_t total,
                  uint64_t self, int64_t mem, int64_t self_mem)
{
    struct prof_rec_torch_stats r;
    memset(&r, 0, sizeof r);
    r.node_id = id;
    r.calls = calls;
    r.raw_calls = raw;
    r.total_ticks = total;
    r.self_ticks = self;
    r.cpu_mem = mem;
    r.self_cpu_mem = self_mem;
    trace_build_record(b, PROF_REC_TORCH_STATS, &r, sizeof r, NULL, NULL);
}

static int write_trace(void)
{
    struct trace_build b;
    if (trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0) != 0)
        return -1;
    trace_build_meta(&b, "pid", "7400");
    trace_build_meta(&b, "ppid", "1");
    trace_build_meta(&b, "argv", "python3");
    trace_build_meta(&b, "run_id", "run-tree");
    trace_build_meta(&b, "torch.scheme", "calltree");
    trace_build_clock(&b, 0, 0, 7000000000ull);
    trace_build_string(&b, S_MEAN, "aten::mean");
    trace_build_string(&b, S_DIV, "aten::div_");
    trace_build_string(&b, S_SCOPE, "my_scope");
    trace_build_string(&b, S_GEMM, "gemm");
    trace_build_thread(&b, 7400);
    trace_build_torch_op(&b, S_DIV, 300, 500, -1, 0, 0, 2, 0);
    trace_build_gpu_api(&b, PROF_GPU_API_RUNTIME, 211, 1, 0, 200, 201);
    trace_build_torch_op(&b, S_MEAN, 100, 1100, -1, 0, 0, 0, 0);
    trace_build_lost(&b, 7400, 9);
    node(&b, 1, 0, S_MEAN, 0);
    stats(&b, 1, 1, 1, 1000, 400, 2048, 512);
    node(&b, 2, 1, S_MEAN, 0);
    node(&b, 3, 2, S_DIV, 0);
    node(&b, 4, 0, S_SCOPE, 7);
    stats(&b, 1, 3, 3, 3000, 1200, 4096, 1024);
    stats(&b, 2, 0, 3, 0, 0, 0, 0);
    stats(&b, 3, 3, 3, 600, 600, -512, -512);
    stats(&b, 4, 2, 2, 5000, 5000, 0, 0);
    trace_build_gpu_kernel(&b, 1, 250, 300, S_GEMM, 0, 7, trace_build_dim3(1, 1, 1),
                           trace_build_dim3(32, 1, 1), 0);
    trace_build_clock(&b, 100000, 100000, 7000100000ull);
    trace_build_end(&b, 100000, 13, 9);
    return trace_build_close(&b);
}

static const struct summary_op_row *row(const struct summary *s, const char *name)
{
    for (size_t i = 0; i < s->torch.nrows; i++)
        if (!strcmp(s->torch.rows[i].name, name))
            return &s->torch.rows[i];
    return NULL;
}

Test(report_torch_tree, table_from_the_trees_cuda_from_the_spans)
{
    cr_assert_eq(write_trace(), 0);
    struct model_process **procs = malloc(sizeof *procs); /* the summary owns it */
    cr_assert_not_null(procs);
    procs[0] = report_test_load(path);
    struct summary s;
    summary_build(&s, procs, 1);
    cr_assert_eq(s.torch.nrows, 3, "mean, div_, my_scope; the folded node makes no row");
    const struct summary_op_row *mean = row(&s, "aten::mean"), *div = row(&s, "aten::div_");
    cr_assert(mean && div);
    cr_expect_eq(mean->calls, 3);
    cr_expect_eq(mean->cpu_total_ns, 3000);
    cr_expect_eq(mean->self_cpu_ns, 1200);
    cr_expect_eq(mean->cpu_mem, 4096);
    cr_expect_eq(mean->self_cpu_mem, 1024);
    cr_expect_eq(mean->cuda_total_ns, 50, "the kernel of the span the timeline kept");
    cr_expect_eq(mean->self_cuda_ns, 50);
    cr_expect_eq(div->calls, 3);
    cr_expect_eq(div->cpu_mem, -512);
    cr_expect_eq(row(&s, "my_scope")->calls, 2);
    summary_free(&s);
}

Test(report_torch_tree, scopes_count_from_the_trees)
{
    cr_assert_eq(write_trace(), 0);
    struct model_process *p = report_test_load(path);
    cr_assert_eq(p->torch.nscopes, 1);
    cr_expect_str_eq(p->torch.scopes[0].name, "my_scope");
    cr_expect_eq(p->torch.scopes[0].calls, 2);
    cr_expect_eq(p->torch.scopes[0].total_ns, 5000);
    model_process_free(p);
}

Test(report_torch_tree, lost_spans_are_a_thinner_timeline_not_short_counts)
{
    cr_assert_eq(write_trace(), 0);
    struct model_process *p = report_test_load(path);
    cr_expect_eq(p->torch.spans_expected, 11);
    cr_expect_eq(p->torch.spans_dropped, 9);
    int kept = 0, short_counts = 0;
    for (size_t i = 0; i < p->nwarnings; i++) {
        kept |= strstr(p->warnings[i], "timeline kept 2 of 11 PyTorch op spans") != NULL;
        short_counts |= strstr(p->warnings[i], "counts are short") != NULL;
    }
    cr_expect(kept);
    cr_expect(!short_counts);
    model_process_free(p);
}

Test(report_torch_tree, title_counts_ops_and_says_what_the_timeline_kept)
{
    cr_assert_eq(write_trace(), 0);
    struct model_process **procs = malloc(sizeof *procs);
    cr_assert_not_null(procs);
    procs[0] = report_test_load(path);
    struct summary s;
    summary_build(&s, procs, 1);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_not_null(out);
    tables_ops(out, &s, 0);
    fclose(out);
    cr_expect(strstr(text, "PyTorch operators (8 ops; the timeline kept 2 of 11 op spans; "
                           "ordered by self_cpu)") != NULL,
              "%s", text);
    free(text);
    summary_free(&s);
}
