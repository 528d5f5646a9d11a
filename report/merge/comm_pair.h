/* comm_pair: one torch.distributed collective counted once.
 *
 * PyTorch records each collective twice: the dispatcher's operator (c10d::allreduce_, on
 * the thread that called it, from the call until the work is queued) and the process
 * group's work span (gloo:all_reduce, nccl:..., mpi:..., ucc:..., from when the backend
 * starts the work until it completes; gloo starts it on a worker thread, after the work
 * queued before it). The pair is one collective: it arrives at the dispatcher op's start
 * (when the rank's code reached the collective; the work's start is later by whatever the
 * process group had queued) and ends at the work span's end (when the data has moved); it
 * is named as the work span (what the backend ran: NCCL's barrier is an allreduce).
 *
 * Pairing, per process: first a work span run inside a dispatcher op of its kind on its
 * own thread (a blocking backend) goes with that op, whatever other process groups have
 * queued; then, as a process group runs its work in the order it was queued, each other
 * work span, in start order, goes with the earliest dispatcher op of its kind not yet
 * paired that started no later (a barrier's op with an allreduce work too). Two
 * asynchronous backends queueing the same kind at once are not told apart (the dispatcher
 * op does not name its group). A record left alone (older PyTorch has no c10d:: ops; a
 * record lost) stays a collective of its own.
 *
 * Time is not taken from the pairs: a process's communication time is the time its records
 * cover, overlaps once, as the steps' accounting counts it (model_steps.c). Between the
 * dispatcher op and the work's start the rank computes; that is no communication time. */
#ifndef REPORT_COMM_PAIR_H
#define REPORT_COMM_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* The collectives of one process's calls: each pair made one call, every other call as it
 * is, in the calls' order (a pair where its dispatcher op was). A new array of *n calls
 * (free it) whose names point where the calls' do. */
struct model_comm_call *comm_pair_collectives(const struct model_comm_call *calls, size_t ncalls,
                                              size_t *n);
/* A span of time of some row (a collective's name, a rank: the caller's). */
struct comm_span {
    uint64_t start, end;
    size_t row;
};
/* Adds to by_row[row] the time the spans of each row cover, overlaps once (DDP's gradient
 * buckets run at once on two threads): sorts s by row, then start. */
void comm_spans_cover(struct comm_span *s, size_t n, uint64_t *by_row);
/* The time calls cover, setup left out, overlaps once. */
uint64_t comm_pair_covered_ns(const struct model_comm_call *const *calls, size_t n);
/* One process's communication: its collectives and the time its calls cover (setup calls
 * left out of both; failed ones in both). */
void comm_pair_process(const struct model_comm *c, uint64_t *collectives, uint64_t *covered_ns);

#endif
