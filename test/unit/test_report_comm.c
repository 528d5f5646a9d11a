/* Communication across ranks: kinds and bus bandwidth factors, calls on the one
 * CLOCK_REALTIME axis, the k-th call of a collective matched over the ranks (last arrival,
 * wait, lateness), spreads over the ranks, torch.distributed ops, NCCL kernels owned by
 * their call. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "comm_merge.h"
#include "model.h"
#include "report_test.h"
#include "summary.h"

#define RANKS 3
static char paths[RANKS][64];

static void setup(void)
{
    for (int r = 0; r < RANKS; r++)
        report_test_temp(paths[r], "report_comm");
}

static void teardown(void)
{
    for (int r = 0; r < RANKS; r++)
        unlink(paths[r]);
}

TestSuite(report_comm, .init = setup, .fini = teardown);

Test(report_comm, kinds_and_bus_bandwidth_factors)
{
    cr_assert_eq(comm_kind_of("MPI_Allreduce"), COMM_KIND_ALLREDUCE);
    cr_assert_eq(comm_kind_of("ncclAllReduce"), COMM_KIND_ALLREDUCE);
    cr_assert_eq(comm_kind_of("c10d::allreduce_"), COMM_KIND_ALLREDUCE);
    cr_assert_eq(comm_kind_of("gloo:all_reduce"), COMM_KIND_ALLREDUCE);
    cr_assert_eq(comm_kind_of("MPI_Reduce_scatter_block"), COMM_KIND_REDUCE_SCATTER);
    cr_assert_eq(comm_kind_of("ncclReduceScatter"), COMM_KIND_REDUCE_SCATTER);
    cr_assert_eq(comm_kind_of("c10d::_allgather_base_"), COMM_KIND_ALLGATHER);
    cr_assert_eq(comm_kind_of("MPI_Bcast"), COMM_KIND_BROADCAST);
    cr_assert_eq(comm_kind_of("ncclBroadcast"), COMM_KIND_BROADCAST);
    cr_assert_eq(comm_kind_of("MPI_Reduce"), COMM_KIND_REDUCE);
    cr_assert_eq(comm_kind_of("MPI_Gatherv"), COMM_KIND_GATHER);
    cr_assert_eq(comm_kind_of("MPI_Alltoallv"), COMM_KIND_ALLTOALL);
    cr_assert_eq(comm_kind_of("MPI_Barrier"), COMM_KIND_BARRIER);
    cr_assert_eq(comm_kind_of("MPI_Sendrecv"), COMM_KIND_P2P);
    cr_assert_eq(comm_kind_of("ncclRecv"), COMM_KIND_P2P);
    cr_assert_eq(comm_kind_of("MPI_Waitall"), COMM_KIND_WAIT);
    cr_assert_eq(comm_kind_of("ncclGroupEnd"), COMM_KIND_WAIT);
    cr_assert_eq(comm_kind_of("MPI_Init_thread"), COMM_KIND_SETUP);
    cr_assert_eq(comm_kind_of("ncclCommSplit"), COMM_KIND_SETUP);
    /* nccl-tests' PERFORMANCE.md */
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_ALLREDUCE, 8), 2.0 * 7 / 8, 1e-12);
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_ALLGATHER, 8), 7.0 / 8, 1e-12);
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_REDUCE_SCATTER, 4), 3.0 / 4, 1e-12);
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_BROADCAST, 8), 1.0, 1e-12);
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_REDUCE, 8), 1.0, 1e-12);
    cr_assert_float_eq(comm_busbw_factor(COMM_KIND_BARRIER, 8), 0.0, 1e-12);
}

/* Rank r's process: its monotonic clock starts at r * 1000 ns off the others', so only
 * the CLOCK_REALTIME conversion (META start pairs) lines its calls up. Three allreduces
 * of 8000 bytes on communicator 0x400000000 whose arrivals (realtime - 5e9) are
 *   call 0: rank 0 at 10000, rank 1 at 12000, rank 2 at 40000 (last, 28000 after rank 1)
 *   call 1: rank 0 at 100000, rank 1 at 130000 (last by 5000), rank 2 at 125000
 *   call 2: every rank at 200000
 * each ending at 50000 / 140000 / 201000 on every rank; a barrier that rank 2 never makes,
 * and a send, which is not matched. */
/* Opens rank r's trace at paths[r]: its META (rank, pid, host node1, run "run", clocks with
 * its monotonic start skew ns late) and MPI_Allreduce's name. */
static void open_rank(struct trace_build *b, int r, uint64_t skew)
{
    cr_assert_eq(trace_build_open(b, paths[r], PROF_TRACE_VERSION, 24, 0), 0);
    char v[32];
    snprintf(v, sizeof v, "%d", r);
    trace_build_meta(b, "rank", v);
    trace_build_meta(b, "pid", v);
    trace_build_meta(b, "host", "node1");
    trace_build_meta(b, "run_id", "run");
    snprintf(v, sizeof v, "%llu", (unsigned long long)(1000000 + skew));
    trace_build_meta(b, "start_monotonic_ns", v);
    trace_build_meta(b, "start_realtime_ns", "5001000000");
    trace_build_api_name(b, 1283, PROF_CAT_COMM, "MPI_Allreduce",
                         "bytes,count,comm,comm_size,comm_rank");
}

static void write_rank(int r)
{
    static const uint64_t arrive[3][RANKS] = {
        {10000, 12000, 40000}, {100000, 130000, 125000}, {200000, 200000, 200000}};
    static const uint64_t leave[3] = {50000, 140000, 201000};
    uint64_t skew = 1000u * (uint64_t)r;
    struct trace_build b;
    open_rank(&b, r, skew);
    trace_build_api_name(&b, 1296, PROF_CAT_COMM, "MPI_Barrier", "bytes,comm,comm_size,comm_rank");
    trace_build_api_name(&b, 1297, PROF_CAT_COMM, "MPI_Send",
                         "bytes,count,peer,tag,comm,comm_size,comm_rank");
    trace_build_thread(&b, 100 + (uint32_t)r);
    for (int k = 0; k < 3; k++) {
        uint64_t s = arrive[k][r] + skew, e = leave[k] + skew;
        trace_build_call(&b, 1283, 0, s, e, 5, 8000ull, 1000ull, 0x400000000ull, 3ull, (uint64_t)r);
    }
    if (r != 2)
        trace_build_call(&b, 1296, 0, 300000 + skew, 301000 + skew, 4, 0ull, 0x400000000ull, 3ull,
                         (uint64_t)r);
    trace_build_call(&b, 1297, 0, 310000 + skew, 311000 + skew, 7, 400ull, 100ull,
                     (uint64_t)((r + 1) % RANKS), 7ull, 0x400000000ull, 3ull, (uint64_t)r);
    trace_build_end(&b, 400000 + skew, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
}

static void load_ranks(struct summary *s)
{
    struct model_process **procs = malloc(RANKS * sizeof *procs);
    cr_assert_not_null(procs);
    for (int r = 0; r < RANKS; r++) {
        write_rank(r);
        procs[r] = report_test_load(paths[r]);
    }
    summary_build(s, procs, RANKS);
}

static const struct comm_row *row_named(const struct comm_report *r, const char *name)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].name, name))
            return &r->rows[i];
    cr_assert_fail("no row %s", name);
    return NULL;
}

Test(report_comm, calls_on_the_realtime_axis)
{
    write_rank(1);
    struct model_process *p = report_test_load(paths[1]);
    cr_assert_eq(p->comm.ncalls, 5);
    /* monotonic 1000 + 10000 + skew 1000 ... realtime = mono - 1001000 + 5001000000 */
    cr_assert_eq(p->comm.calls[0].start_ns, 5000000000ull + 12000);
    cr_assert_eq(p->comm.calls[0].end_ns, 5000000000ull + 50000);
    cr_assert_eq(p->comm.calls[0].bytes, 8000);
    cr_assert_eq(p->comm.calls[0].comm, 0x400000000ull);
    cr_assert_eq(p->comm.calls[0].comm_size, 3);
    cr_assert_eq(p->comm.calls[4].peer, 2);
    cr_assert_eq(p->comm.calls[0].peer, -1);
    model_process_free(p);
}

Test(report_comm, kth_calls_matched_across_ranks)
{
    struct summary s;
    load_ranks(&s);
    struct comm_report r;
    comm_merge_build(&r, &s);
    cr_assert_eq(r.nranks, RANKS);
    cr_assert_eq(r.nhosts, 1);
    const struct comm_row *ar = row_named(&r, "MPI_Allreduce");
    cr_assert_eq(ar->calls, 9);
    cr_assert_eq(ar->bytes, 9 * 8000);
    cr_assert_eq(ar->ranks, 3);
    cr_assert_eq(ar->comm_size, 3);
    cr_assert_eq(ar->matched, 3);
    /* waits: call 0: 30000, 28000, 0; call 1: 30000, 0, 5000; call 2: 0 */
    cr_assert_eq(ar->per_rank[0].wait_ns, 60000);
    cr_assert_eq(ar->per_rank[1].wait_ns, 28000);
    cr_assert_eq(ar->per_rank[2].wait_ns, 5000);
    cr_assert_eq(ar->wait_ns, 93000);
    cr_assert_eq(ar->wait.min, 5000);
    cr_assert_eq(ar->wait.median, 28000);
    cr_assert_eq(ar->wait.max, 60000);
    cr_assert_eq(ar->wait.rank_at_max, 0);
    /* rank 2 last at call 0 by 28000; rank 1 at call 1 by 5000; call 2 a tie: no rank was
     * last */
    cr_assert_eq(r.nstragglers, 3 + 1); /* and the barrier of ranks 0 and 1 */
    const struct comm_straggler *g0 = NULL, *g1 = NULL;
    for (size_t i = 0; i < r.nstragglers; i++) {
        if (!strcmp(r.stragglers[i].name, "MPI_Allreduce") && r.stragglers[i].index == 0)
            g0 = &r.stragglers[i];
        if (!strcmp(r.stragglers[i].name, "MPI_Allreduce") && r.stragglers[i].index == 1)
            g1 = &r.stragglers[i];
    }
    cr_assert(g0 && g1);
    cr_assert_eq(g0->last_rank, 2);
    cr_assert_eq(g0->late_ns, 28000);
    cr_assert_eq(g0->spread_ns, 30000);
    cr_assert_eq(g0->ranks, 3);
    cr_assert_eq(g1->last_rank, 1);
    cr_assert_eq(g1->late_ns, 5000);
    cr_assert_eq(g1->spread_ns, 30000);
    cr_assert_eq(r.ranks[2].last_arrivals, 1);
    cr_assert_eq(r.ranks[2].late_ns, 28000);
    cr_assert_eq(r.ranks[0].last_arrivals, 0);
    cr_assert_eq(r.ranks[1].last_arrivals, 1);
    for (size_t i = 0; i < r.nstragglers; i++)
        if (r.stragglers[i].index == 2 || !strcmp(r.stragglers[i].name, "MPI_Barrier"))
            cr_assert_eq(r.stragglers[i].last_rank, -1, "a tie has no last rank");
    cr_assert_eq(ar->last_rank, 1); /* once each for ranks 1 and 2: the lower rank */
    cr_assert_eq(ar->last_count, 1);
    /* The barrier: ranks 0 and 1 only; the send is not matched. */
    const struct comm_row *barrier = row_named(&r, "MPI_Barrier");
    cr_assert_eq(barrier->ranks, 2);
    cr_assert_eq(barrier->matched, 1);
    const struct comm_row *send = row_named(&r, "MPI_Send");
    cr_assert_eq(send->matched, 0);
    cr_assert_eq(send->wait_ns, 0);
    cr_assert_eq(send->kind, COMM_KIND_P2P);
    /* Bus bandwidth: bytes / time, times 2(n-1)/n. Time per rank: rank 0 40000 + 40000 +
     * 1000, rank 1 38000 + 10000 + 1000, rank 2 10000 + 15000 + 1000. */
    cr_assert_eq(ar->time_ns, 81000 + 49000 + 26000);
    cr_assert_float_eq(ar->algbw_gbs, 72000.0 / 156000.0, 1e-12);
    cr_assert_float_eq(ar->busbw_gbs, 72000.0 / 156000.0 * 4.0 / 3.0, 1e-12);
    cr_assert_eq(ar->time.rank_at_max, 0);
    cr_assert_eq(ar->time.median, 49000);
    /* Per rank: communication time is the union of the calls. */
    cr_assert_eq(r.ranks[2].comm_ns, 10000 + 15000 + 1000 + 1000);
    cr_assert_eq(r.ranks[0].wait_ns, 60000 + 0); /* the barrier: both at 300000 */
    comm_merge_free(&r);
    summary_free(&s);
}

Test(report_comm, launchers_are_not_ranks)
{
    struct summary s;
    struct model_process **procs = malloc((RANKS + 1) * sizeof *procs);
    cr_assert_not_null(procs);
    for (int r = 0; r < RANKS; r++) {
        write_rank(r);
        procs[r] = report_test_load(paths[r]);
    }
    procs[RANKS] = model_process_new("launcher", 0); /* no rank in its META */
    model_finish(procs[RANKS]);
    summary_build(&s, procs, RANKS + 1);
    struct comm_report r;
    comm_merge_build(&r, &s);
    cr_assert_eq(r.nranks, RANKS);
    for (size_t i = 0; i < r.nranks; i++)
        cr_assert_eq(r.ranks[i].rank, (int64_t)i);
    comm_merge_free(&r);
    summary_free(&s);
}

Test(report_comm, torch_distributed_ops_are_communication)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, paths[0], PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "rank", "0");
    trace_build_meta(&b, "world_size", "4");
    trace_build_meta(&b, "start_monotonic_ns", "1000");
    trace_build_meta(&b, "start_realtime_ns", "9000");
    trace_build_string(&b, 1, "c10d::allreduce_");
    trace_build_string(&b, 2, "aten::mm");
    trace_build_string(&b, 3, "gloo:all_reduce");
    trace_build_thread(&b, 7);
    trace_build_torch_op(&b, 2, 2000, 3000, 1, 0, 0, 0, 0);
    trace_build_torch_op(&b, 1, 4000, 4500, 2, 0, 0, 0, 0);
    trace_build_torch_op(&b, 3, 4100, 9000, -1, 0, 0, 0, 0);
    trace_build_end(&b, 10000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    struct model_process *p = report_test_load(paths[0]);
    cr_assert_eq(p->comm.ncalls, 2);
    cr_assert_str_eq(p->comm.calls[0].name, "c10d::allreduce_");
    cr_assert_eq(p->comm.calls[0].start_ns, 12000);
    cr_assert_eq(p->comm.calls[0].source, MODEL_COMM_TORCH_OP);
    cr_assert_eq(p->comm.calls[0].comm_size, 4);
    cr_assert_str_eq(p->comm.calls[1].name, "gloo:all_reduce");
    cr_assert_eq(p->comm.calls[1].end_ns, 17000);
    model_process_free(p);
}

Test(report_comm, nccl_call_owns_its_kernels)
{
    /* ncclAllReduce 1000-5000 launches at 2000 (CUPTI's driver call, correlation 1); the
     * kernel runs 7000-7400: the call gets its GPU time. */
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, paths[0], PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_api_name(&b, 1032, PROF_CAT_COMM, "ncclAllReduce",
                         "bytes,count,dtype,op,stream,comm,comm_size,comm_rank");
    trace_build_string(&b, 1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    trace_build_thread(&b, 10);
    trace_build_gpu_api(&b, PROF_GPU_API_DRIVER, 307, 1, 0, 2000, 2100);
    trace_build_call(&b, 1032, 0, 1000, 5000, 8, 4000ull, 1000ull, 7ull, 0ull, 0x50ull, 9ull, 2ull,
                     0ull);
    trace_build_gpu_kernel(&b, 1, 7000, 7400, 1, 0, 1, 0, 0, 0);
    trace_build_end(&b, 10000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    struct model_process *p = report_test_load(paths[0]);
    cr_assert(p->apis[1032]->library);
    cr_assert_eq(p->apis[1032]->gpu_kernels, 1);
    cr_assert_eq(p->apis[1032]->gpu_ns, 400);
    cr_assert_eq(p->gpu.unattributed, 0);
    cr_assert_str_eq(model_category_name(PROF_CAT_COMM), "comm");
    /* --comm: bandwidth over the kernels' GPU time (4000 bytes in 400 ns), not the call's
     * 4000 ns of enqueueing. */
    struct model_process **procs = malloc(sizeof *procs);
    cr_assert_not_null(procs);
    procs[0] = p;
    struct summary s;
    summary_build(&s, procs, 1);
    struct comm_report r;
    comm_merge_build(&r, &s);
    const struct comm_row *row = row_named(&r, "ncclAllReduce");
    cr_assert_eq(row->kernels, 1);
    cr_assert_eq(row->gpu_ns, 400);
    cr_assert_eq(row->time_ns, 4000);
    cr_assert_float_eq(row->algbw_gbs, 10.0, 1e-12);
    comm_merge_free(&r);
    summary_free(&s);
}

Test(report_comm, one_rank_matches_nothing)
{
    /* No operation to match and no row without calls: the empty lists stay empty (the
     * sanitized build checks that nothing sorts a NULL array). */
    struct summary s;
    struct model_process **procs = malloc(2 * sizeof *procs);
    cr_assert_not_null(procs);
    write_rank(0);
    procs[0] = report_test_load(paths[0]);
    summary_build(&s, procs, 1);
    struct comm_report r;
    comm_merge_build(&r, &s);
    cr_assert_eq(r.nranks, 1);
    cr_assert_eq(r.nstragglers, 0);
    cr_assert_eq(row_named(&r, "MPI_Allreduce")->matched, 0);
    cr_assert_eq(r.ranks[0].wait_ns, 0);
    comm_merge_free(&r);
    summary_free(&s);
    struct summary empty;
    procs = malloc(sizeof *procs);
    cr_assert_not_null(procs);
    procs[0] = model_process_new("none", 0);
    model_finish(procs[0]);
    summary_build(&empty, procs, 1);
    comm_merge_build(&r, &empty);
    cr_assert_eq(r.nrows, 0);
    cr_assert(!r.any);
    comm_merge_free(&r);
    summary_free(&empty);
}

/* Two hosts whose clocks differ: host b's CLOCK_REALTIME reads 5 ms ahead of host a's.
 * Four ranks (0, 1 on a; 2, 3 on b) make 21 allreduces; at the k-th, in true time from
 * its start T = k * 10 ms, rank r arrives at T + 10 us * r, except rank 1 (on host a), last
 * by 2 ms at T + 2 ms; every rank leaves at T + 2.1 ms + 1 us * r (exits spread by the
 * collective's latency). Uncorrected, host b's ranks look 5 ms late at every one. */
static void write_host_rank(const char *path, int r)
{
    int host_b = r >= 2;
    uint64_t skew = host_b ? 5000000 : 0;
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    char v[32];
    snprintf(v, sizeof v, "%d", r);
    trace_build_meta(&b, "rank", v);
    trace_build_meta(&b, "pid", v);
    trace_build_meta(&b, "host", host_b ? "b" : "a");
    trace_build_meta(&b, "run_id", "run");
    trace_build_meta(&b, "start_monotonic_ns", "1000000");
    snprintf(v, sizeof v, "%llu", (unsigned long long)(7000000000ull + skew));
    trace_build_meta(&b, "start_realtime_ns", v);
    trace_build_api_name(&b, 1283, PROF_CAT_COMM, "MPI_Allreduce",
                         "bytes,count,comm,comm_size,comm_rank");
    trace_build_thread(&b, 100 + (uint32_t)r);
    for (uint64_t k = 0; k < 21; k++) {
        uint64_t t = 1000000 + k * 10000000; /* monotonic, as the process's own clock */
        uint64_t s = t + (r == 1 ? 2000000 : 10000u * (uint64_t)r);
        uint64_t e = t + 2100000 + 1000u * (uint64_t)r;
        trace_build_call(&b, 1283, 0, s, e, 5, 8000ull, 1000ull, 0x500000000ull, 4ull,
                         (uint64_t)r);
    }
    trace_build_end(&b, 1000000 + 22 * 10000000ull, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
}

Test(report_comm, clock_offsets_between_hosts_from_collective_exits)
{
    char host_paths[4][64];
    struct model_process **procs = malloc(4 * sizeof *procs);
    cr_assert_not_null(procs);
    for (int r = 0; r < 4; r++) {
        report_test_temp(host_paths[r], "report_comm_hosts");
        write_host_rank(host_paths[r], r);
        procs[r] = report_test_load(host_paths[r]);
    }
    struct summary s;
    summary_build(&s, procs, 4);
    struct comm_report r;
    comm_merge_build(&r, &s);
    cr_assert_eq(r.nhosts, 2);
    cr_assert_str_eq(r.hosts[0].host, "a");
    cr_assert_str_eq(r.hosts[1].host, "b");
    /* exits of b's ranks minus a's earliest (rank 0's): 5 ms + 2 us and + 3 us */
    cr_assert_eq(r.hosts[1].samples, 2 * 21);
    cr_assert_eq(r.hosts[1].offset_ns, 5000000 + 2000);
    cr_assert_eq(r.hosts[1].uncertainty_ns, 0); /* the median of |1000, 0, ...| over 42 */
    cr_assert_eq(r.clock_unknown, 0);
    /* On host a's clock, rank 1 is last at every allreduce, by 2 ms less rank 3's 30 us
     * (less the offset's 2 us error: b's ranks read 2 us early). */
    const struct comm_row *ar = row_named(&r, "MPI_Allreduce");
    cr_assert_eq(ar->matched, 21);
    cr_assert_eq(ar->last_rank, 1);
    cr_assert_eq(ar->last_count, 21);
    cr_assert_eq(r.ranks[1].last_arrivals, 21);
    cr_assert_eq(r.ranks[2].last_arrivals + r.ranks[3].last_arrivals, 0);
    for (size_t i = 0; i < r.nstragglers; i++) {
        cr_assert_eq(r.stragglers[i].last_rank, 1);
        cr_assert_eq(r.stragglers[i].late_ns, 2000000 - 30000 + 2000);
    }
    comm_merge_free(&r);
    summary_free(&s);
    for (int i = 0; i < 4; i++)
        unlink(host_paths[i]);
}

/* The median rank the findings and the per-rank table speak of is never the rank the others
 * wait for: of two ranks the lower median of their communication is the slow one's own (a
 * review found "rank 1 holds the others: the median rank (rank 1) waits 10.60 us"). */
Test(report_comm, median_rank_is_not_the_slowest)
{
    struct comm_rank_row rows[4] = {{.rank = 0, .comm_ns = 900},
                                    {.rank = 1, .comm_ns = 100},
                                    {.rank = 2, .comm_ns = 800},
                                    {.rank = 3, .comm_ns = 850}};
    struct comm_report r = {.ranks = rows, .nranks = 2};
    r.slowest.rank = 1;
    r.comm.median = 100; /* (the lower median of 100 and 900) */
    cr_assert_eq(r.ranks[comm_median_rank(&r)].rank, 0);
    r.nranks = 4;
    r.comm.median = 800;
    cr_assert_eq(r.ranks[comm_median_rank(&r)].rank, 2);
    r.slowest.rank = 2; /* then the nearest of the others */
    cr_assert_eq(r.ranks[comm_median_rank(&r)].rank, 3);
    r.slowest.rank = -1; /* none stands out: the nearest of all */
    r.nranks = 1;
    cr_assert_eq(comm_median_rank(&r), 0);
}

/* A rank holds the others only when it waits at most half what the median rank waits: in
 * a balanced job on a loaded machine every rank waits in turn, and the one with the most
 * compute is no cause (a review found "rank 2 holds the others" for a job whose
 * communication, 31 % of its step, was the finding). */
Test(report_comm, a_slowest_rank_that_waits_as_long_holds_no_one)
{
    struct comm_rank_row rows[3] = {{.rank = 0, .comm_ns = 900, .wait_ns = 600, .steps = 10},
                                    {.rank = 1, .comm_ns = 100, .wait_ns = 5, .steps = 10},
                                    {.rank = 2, .comm_ns = 850, .wait_ns = 550, .steps = 10}};
    struct comm_report r = {.ranks = rows, .nranks = 3};
    r.comm.median = 850;
    r.slowest.rank = 1;
    r.slowest.why = "compute";
    cr_assert(comm_slowest_holds_others(&r));
    rows[1].wait_ns = 400; /* 40 per step against the median rank's 55 */
    cr_assert_not(comm_slowest_holds_others(&r));
    r.slowest.why = NULL; /* no reason: none */
    rows[1].wait_ns = 5;
    cr_assert_not(comm_slowest_holds_others(&r));
}

/* Two ranks whose two allreduces run at once, each on its own thread, as DDP's gradient
 * buckets do on gloo's threads: rank 0 arrives at 10000 and 20000, rank 1 at 50000 and
 * 65000; they end at 60000 and 70000 on both. */
static void write_bucket_rank(int r)
{
    static const uint64_t arrive[2][2] = {{10000, 20000}, {50000, 65000}};
    static const uint64_t leave[2] = {60000, 70000};
    struct trace_build b;
    open_rank(&b, r, 0);
    for (int k = 0; k < 2; k++) {
        trace_build_thread(&b, 100 + (uint32_t)(10 * r + k));
        trace_build_call(&b, 1283, 0, arrive[r][k], leave[k], 5, 8000ull, 1000ull, 0x400000000ull,
                         2ull, (uint64_t)r);
    }
    trace_build_end(&b, 400000, 0, 0);
    cr_assert_eq(trace_build_close(&b), 0);
}

Test(report_comm, collectives_at_once_count_their_time_once)
{
    struct model_process *procs[2];
    for (int r = 0; r < 2; r++) {
        write_bucket_rank(r);
        procs[r] = report_test_load(paths[r]);
    }
    struct model_process **list = malloc(2 * sizeof *list);
    cr_assert_not_null(list);
    memcpy(list, procs, sizeof procs);
    struct summary s;
    summary_build(&s, list, 2);
    struct comm_report r;
    comm_merge_build(&r, &s);
    const struct comm_row *ar = row_named(&r, "MPI_Allreduce");
    cr_assert_eq(ar->matched, 2);
    /* rank 0 is in an allreduce from 10000 to 70000 (summed: 50000 + 50000), rank 1 from
     * 50000 to 60000 and 65000 to 70000 */
    cr_assert_eq(ar->per_rank[0].time_ns, 60000);
    cr_assert_eq(ar->per_rank[1].time_ns, 15000);
    cr_assert_eq(ar->time_ns, 75000);
    /* rank 0 waits from 10000 to 50000 and from 20000 to 65000: 55000 (summed: 85000) */
    cr_assert_eq(ar->per_rank[0].wait_ns, 55000);
    cr_assert_eq(ar->per_rank[1].wait_ns, 0);
    cr_assert_eq(ar->wait_ns, 55000);
    cr_assert_eq(r.ranks[0].comm_ns, 60000);
    cr_assert_eq(r.ranks[0].wait_ns, 55000);
    /* rank 1 is late from rank 0's arrivals to its own, once: 55000 (summed: 85000) */
    cr_assert_eq(r.ranks[1].last_arrivals, 2);
    cr_assert_eq(r.ranks[1].late_ns, 55000);
    cr_assert_eq(r.ranks[1].run_late_ns, 55000);
    cr_assert_eq(r.ranks[0].late_ns, 0);
    comm_merge_free(&r);
    summary_free(&s);
}
