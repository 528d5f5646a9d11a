/* comm_merge: the ranks of a run side by side: per-rank time (--ranks), collectives merged
 * over the ranks (--comm) and the last rank to arrive at each collective (--stragglers).
 *
 * Ranks are the processes with a rank in their META (every process when none has one);
 * processes of one rank are taken together. Times are on CLOCK_REALTIME, which the ranks of
 * one host share; across hosts the clocks' offsets are not estimated yet, and the report
 * says so when the inputs come from several hosts.
 *
 * Matching: the k-th call of one collective (same name) on one communicator on each rank
 * is one collective operation. Its last rank to arrive is the one whose call started last;
 * a rank's wait is the time of its call before that arrival (at most the call's time), the
 * rest of the call is transfer. A torch.distributed collective is one call, though PyTorch
 * records it twice (comm_pair.h): lateness, last arrivals, the straggler rows and the rows
 * of --comm count it once. */
#ifndef REPORT_COMM_MERGE_H
#define REPORT_COMM_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "comm_clock.h"
#include "rank_spread.h"
#include "model.h"
#include "summary.h"

enum comm_kind {
    COMM_KIND_ALLREDUCE,
    COMM_KIND_REDUCE_SCATTER,
    COMM_KIND_ALLGATHER,
    COMM_KIND_ALLTOALL,
    COMM_KIND_BROADCAST,
    COMM_KIND_REDUCE,
    COMM_KIND_GATHER,
    COMM_KIND_SCATTER,
    COMM_KIND_BARRIER,
    COMM_KIND_P2P,  /* send, receive */
    COMM_KIND_WAIT, /* MPI waits and tests, NCCL groups */
    COMM_KIND_SETUP /* init, finalize, communicators */
};

/* One rank's part of a --comm row. */
struct comm_rank_part {
    int64_t rank;
    uint64_t calls, time_ns, wait_ns;
};

/* One row of --comm: one collective (or call) by name. */
struct comm_row {
    char *name;
    uint8_t source; /* enum model_comm_source */
    enum comm_kind kind;
    uint32_t ranks;                          /* ranks that made the call */
    uint32_t comm_size;                      /* the largest communicator it ran on */
    uint64_t calls, bytes, time_ns, wait_ns; /* summed over the ranks */
    uint64_t matched;                        /* operations matched across ranks */
    int64_t last_rank;        /* the rank most often last at them (the lowest on a tie); -1 */
    uint64_t last_count;      /* how often it was */
    uint64_t late_ns;         /* its lateness summed over those operations */
    uint64_t gpu_ns, kernels; /* kernels launched inside its calls (NCCL): their GPU time */
    /* bytes / time, and nccl-tests' bus bandwidth; the time is the GPU time of the call's
     * kernels when it launched any (NCCL: the CPU call only enqueues), else the call's. */
    double algbw_gbs, busbw_gbs;
    struct rank_spread time, wait, calls_per_rank;
    struct comm_rank_part *per_rank; /* the ranks that made the call, by rank */
    size_t nper_rank;
};

/* One row of --ranks. */
struct comm_rank_row {
    int64_t rank;
    size_t nprocs;
    const char *host;
    uint64_t wall_ns, steps, step_ns, compute_ns, comm_ns, wait_ns, idle_ns;
    /* Operations it arrived last at, and by how much: with steps (by_steps), those inside
     * the steps compared, as wall and wait are; run_: every matched operation of the run,
     * as --stragglers lists them. */
    uint64_t last_arrivals, late_ns;
    uint64_t run_last_arrivals, run_late_ns;
    uint64_t data_ns; /* in data loading: the dataloader_next actions (built in, Lightning) */
    uint64_t sync_ns; /* in host-device syncs: synchronizing calls and blocking copies */
    /* With steps (comm_report.by_steps): the window's steps split as model.h says; then
     * wall = compute + comm + data + sync + idle, comm is the exposed communication,
     * comm_total_ns all of it, wait <= comm. */
    uint64_t part_ns[MODEL_STEP_PART_COUNT];
    uint64_t comm_total_ns, gpu_busy_ns;
};

/* The rank the others waited for (the most lateness at the collectives; without any,
 * the longest step) and why: its compute, data loading, host syncs and idle time against
 * the median rank's; why names the largest excess ("compute", "data loading", "host
 * syncs", "time outside ops and communication"), or NULL when none is positive. rank -1:
 * no rank stands out. */
struct comm_slowest {
    int64_t rank;
    uint64_t late_ns, last_arrivals;
    int64_t compute_ns, data_ns, sync_ns, idle_ns; /* its value minus the ranks' median */
    const char *why;
    int between; /* why: its time between named steps (--step), none inside them to speak of */
};

/* One matched operation (--stragglers). */
struct comm_straggler {
    const char *name; /* into the rows */
    uint64_t comm;
    size_t index;       /* k: its call number on the communicator, from 0 */
    uint32_t ranks;     /* ranks matched */
    int64_t last_rank;  /* arrived last; -1: the last ones arrived together */
    uint64_t late_ns;   /* its arrival minus the one before it */
    uint64_t spread_ns; /* the last arrival minus the first */
    uint64_t start_ns;  /* the first arrival, CLOCK_REALTIME */
};

struct comm_report {
    struct comm_rank_row *ranks; /* by rank */
    size_t nranks;
    struct comm_row *rows; /* by time, descending */
    size_t nrows;
    struct comm_straggler *stragglers; /* by first arrival */
    size_t nstragglers;
    /* Over the ranks, for --ranks: */
    struct rank_spread wall, steps, step, compute, comm, wait, idle, data, sync;
    struct comm_slowest slowest;
    /* The hosts, the lowest rank's first: their clocks against its (comm_clock.h). With
     * several, every time is on the first host's clock, and cross-rank figures are
     * uncertain by clock_uncertainty_ns (the largest host's; 0 with one host). */
    struct comm_host *hosts;
    size_t nhosts;
    uint64_t clock_uncertainty_ns;
    int clock_unknown;     /* some host shares no collective with the first: not estimated */
    const char *step_name; /* what a step is: the summary's step_name (NULL: built in) */
    int any;               /* some rank made a communication call */
    /* The ranks compared on their steady steps step_lo..step_hi, the steps every rank has
     * (steps_report.h); steps_unequal: the ranks' steady steps differ beyond that window. */
    int by_steps;
    uint8_t step_source; /* enum model_step_source */
    uint64_t step_lo, step_hi; /* in the first rank's step numbers */
    int steps_unequal;
    int steps_by_time;    /* capture windows: steps and collectives matched by time */
    int64_t *step_shift;  /* per rank: what its step numbers add to be the first rank's */
};

void comm_merge_build(struct comm_report *r, const struct summary *s);
void comm_merge_free(struct comm_report *r);
/* The median rank, the one every "the median rank waits ..." figure is of: the index in
 * r->ranks (r->nranks > 0) of the rank whose exposed communication is nearest the ranks'
 * median, the slowest rank (r->slowest) aside. Its wait and its communication are one
 * rank's, so its wait <= its comm. */
size_t comm_median_rank(const struct comm_report *r);
/* Whether the slowest rank (r->slowest, with a reason) holds the others: it waits at most
 * half what the median rank waits per step. When it waits about as long itself, the
 * others' wait is no one rank's (ranks arriving in turn: a loaded machine, balanced work),
 * and communication is the finding, not a rank. */
int comm_slowest_holds_others(const struct comm_report *r);

/* "allreduce", "broadcast", ... for a kind. */
const char *comm_kind_name(enum comm_kind kind);
/* The kind of a call by its name: MPI_Allreduce, ncclAllReduce, c10d::allreduce_,
 * gloo:all_reduce, ... */
enum comm_kind comm_kind_of(const char *name);
/* nccl-tests' bus bandwidth factor for n ranks: 2(n-1)/n for allreduce, (n-1)/n for
 * allgather, reduce-scatter, alltoall, gather, scatter, 1 for broadcast, reduce and point to
 * point; 0 where bytes mean nothing (barrier, waits, setup). */
double comm_busbw_factor(enum comm_kind kind, uint32_t n);

#endif
