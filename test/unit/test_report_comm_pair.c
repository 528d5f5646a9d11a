/* torch.distributed's two records of one collective (the dispatcher's c10d:: op and the
 * process group's work span) counted once: the pairing, the time the records cover, and
 * the merge over ranks that counts each collective's lateness once. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "comm_merge.h"
#include "comm_pair.h"
#include "model.h"
#include "report_test.h"
#include "summary.h"

static struct model_comm_call torch_call(const char *name, uint64_t start, uint64_t end,
                                         uint32_t tid)
{
    return (struct model_comm_call){.name = name,
                                    .start_ns = start,
                                    .end_ns = end,
                                    .peer = -1,
                                    .tid = tid,
                                    .source = MODEL_COMM_TORCH_OP};
}

static const struct model_comm_call *named_at(const struct model_comm_call *calls, size_t n,
                                              const char *name, uint64_t start)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(calls[i].name, name) && calls[i].start_ns == start)
            return &calls[i];
    cr_assert_fail("no %s at %llu", name, (unsigned long long)start);
    return NULL;
}

Test(report_comm_pair, each_work_span_goes_with_the_op_that_queued_it)
{
    struct model_comm_call calls[] = {
        /* two allreduces queued (thread 1) before gloo's worker (thread 2) starts the first */
        torch_call("c10d::allreduce_", 100, 110, 1),
        torch_call("c10d::allreduce_", 120, 125, 1),
        torch_call("gloo:all_reduce", 130, 200, 2),
        torch_call("gloo:all_reduce", 200, 260, 2),
        /* a broadcast whose work runs inside its op */
        torch_call("c10d::broadcast_", 300, 310, 1),
        torch_call("gloo:broadcast", 305, 330, 1),
        /* NCCL's barrier: an allreduce */
        torch_call("c10d::barrier", 400, 405, 1),
        torch_call("nccl:all_reduce", 401, 450, 1),
        /* a work span no op queued (older PyTorch), and an op that queued nothing after */
        torch_call("gloo:all_gather", 500, 520, 2),
        torch_call("c10d::allgather_", 600, 610, 1),
        /* an MPI call as it is */
        {.name = "MPI_Allreduce", .start_ns = 700, .end_ns = 720, .peer = -1, .bytes = 8},
    };
    size_t ncalls = sizeof calls / sizeof calls[0], n;
    struct model_comm_call *c = comm_pair_collectives(calls, ncalls, &n);
    cr_assert_eq(n, 7);
    /* arrival: the op's start; end: the work's; the caller's thread; the work's name */
    const struct model_comm_call *a0 = named_at(c, n, "gloo:all_reduce", 100);
    cr_assert_eq(a0->end_ns, 200);
    cr_assert_eq(a0->tid, 1);
    cr_assert_eq(named_at(c, n, "gloo:all_reduce", 120)->end_ns, 260);
    cr_assert_eq(named_at(c, n, "gloo:broadcast", 300)->end_ns, 330);
    cr_assert_eq(named_at(c, n, "nccl:all_reduce", 400)->end_ns, 450);
    cr_assert_eq(named_at(c, n, "gloo:all_gather", 500)->end_ns, 520);
    cr_assert_eq(named_at(c, n, "c10d::allgather_", 600)->end_ns, 610);
    cr_assert_eq(named_at(c, n, "MPI_Allreduce", 700)->bytes, 8);
    for (size_t i = 0; i < n; i++)
        cr_assert(strcmp(c[i].name, "c10d::allreduce_") && strcmp(c[i].name, "c10d::broadcast_") &&
                      strcmp(c[i].name, "c10d::barrier"),
                  "%s left unpaired", c[i].name);
    free(c);
    /* the time the records cover, overlaps once: 100-110, 120-125, 130-260, 300-330,
     * 400-450, 500-520, 600-610, 700-720 */
    const struct model_comm_call *raw[sizeof calls / sizeof calls[0]];
    for (size_t i = 0; i < ncalls; i++)
        raw[i] = &calls[i];
    cr_assert_eq(comm_pair_covered_ns(raw, ncalls), 10 + 5 + 130 + 30 + 50 + 20 + 10 + 20);
    struct model_comm m = {.calls = calls, .ncalls = ncalls};
    uint64_t collectives, ns;
    comm_pair_process(&m, &collectives, &ns);
    cr_assert_eq(collectives, 7);
    cr_assert_eq(ns, 275);
}

Test(report_comm_pair, a_work_span_run_inside_its_op_goes_with_it_before_queued_ones)
{
    struct model_comm_call calls[] = {
        /* a gloo allreduce queued first; gloo's worker (thread 2) starts it late */
        torch_call("c10d::allreduce_", 100, 105, 1),
        /* an NCCL allreduce on another group, its work run inside its op (thread 1) */
        torch_call("c10d::allreduce_", 110, 130, 1),
        torch_call("nccl:all_reduce", 112, 128, 1),
        torch_call("gloo:all_reduce", 140, 200, 2),
    };
    size_t n;
    struct model_comm_call *c = comm_pair_collectives(calls, 4, &n);
    cr_assert_eq(n, 2);
    /* queue order alone would give the NCCL work to the first op and gloo's to the second */
    cr_assert_eq(named_at(c, n, "nccl:all_reduce", 110)->end_ns, 130); /* the op's end: later */
    cr_assert_eq(named_at(c, n, "gloo:all_reduce", 100)->end_ns, 200);
    free(c);
}

/* Rank r of 2: three allreduces at T = 0, 20000, 40000 (ticks, realtime less 8000); rank
 * 1's c10d::allreduce_ starts 2000 after rank 0's at the first two, together at the third.
 * Each op lasts 500; gloo's work starts 100 after it on the worker thread and ends at
 * T + 10000 on both ranks. */
static void write_torch_rank(const char *path, int r)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    char v[8];
    snprintf(v, sizeof v, "%d", r);
    trace_build_meta(&b, "rank", v);
    trace_build_meta(&b, "pid", v);
    trace_build_meta(&b, "host", "node1");
    trace_build_meta(&b, "run_id", "run");
    trace_build_meta(&b, "world_size", "2");
    trace_build_meta(&b, "start_monotonic_ns", "1000");
    trace_build_meta(&b, "start_realtime_ns", "9000");
    trace_build_string(&b, 1, "c10d::allreduce_");
    trace_build_string(&b, 2, "gloo:all_reduce");
    for (uint64_t k = 0; k < 3; k++) {
        uint64_t t = 1000 + k * 20000, s = t + (r == 1 && k < 2 ? 2000 : 0);
        trace_build_thread(&b, 10);
        trace_build_torch_op(&b, 1, s, s + 500, -1, 0, 0, 0, 0);
        trace_build_thread(&b, 11);
        trace_build_torch_op(&b, 2, s + 600, t + 10000, -1, 0, 7, 0, 0);
    }
    trace_build_end(&b, 70000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
}

Test(report_comm_pair, a_collective_is_late_once)
{
    char paths[2][64];
    struct model_process **procs = malloc(2 * sizeof *procs);
    cr_assert_not_null(procs);
    for (int r = 0; r < 2; r++) {
        report_test_temp(paths[r], "report_comm_pair");
        write_torch_rank(paths[r], r);
        procs[r] = report_test_load(paths[r]);
        cr_assert_eq(procs[r]->comm.ncalls, 6, "the model keeps both records");
    }
    struct summary s;
    summary_build(&s, procs, 2);
    struct comm_report r;
    comm_merge_build(&r, &s);
    cr_assert_eq(r.nrows, 1, "one row, not one per record");
    const struct comm_row *ar = &r.rows[0];
    cr_assert_str_eq(ar->name, "gloo:all_reduce");
    cr_assert_eq(ar->calls, 6);
    cr_assert_eq(ar->matched, 3);
    cr_assert_eq(r.nstragglers, 3);
    /* rank 1 last at two collectives by 2000 each, counted once */
    cr_assert_eq(r.ranks[1].last_arrivals, 2);
    cr_assert_eq(r.ranks[1].late_ns, 4000);
    cr_assert_eq(r.slowest.rank, 1);
    cr_assert_eq(r.slowest.last_arrivals, 2);
    cr_assert_eq(ar->last_count, 2);
    cr_assert_eq(ar->late_ns, 4000);
    /* rank 0 waits from its op's start to rank 1's arrival */
    cr_assert_eq(ar->per_rank[0].wait_ns, 4000);
    cr_assert_eq(ar->per_rank[1].wait_ns, 0);
    /* each collective's time: its op's start to its work's end: rank 0 10000 each, rank 1
     * 8000, 8000, 10000 */
    cr_assert_eq(ar->time_ns, 3 * 10000 + 8000 + 8000 + 10000);
    /* the rank's communication time: what the records cover (op 500, work from 600) */
    cr_assert_eq(r.ranks[0].comm_ns, 3 * (500 + 10000 - 600));
    comm_merge_free(&r);
    summary_free(&s);
    for (int i = 0; i < 2; i++)
        unlink(paths[i]);
}
