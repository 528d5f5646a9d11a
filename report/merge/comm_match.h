/* comm_match: matching collective calls across ranks while holding the operations, not
 * the calls. The k-th call of one collective (row) on one communicator on each rank is one
 * operation; an operation keeps what the views need of its arrivals — the latest two, the
 * earliest, the rank of the latest, how many ranks came — so a merge reads each rank's
 * calls once to fill the operations and once more to give each call its wait, one rank at
 * a time (comm_merge.c). */
#ifndef REPORT_COMM_MATCH_H
#define REPORT_COMM_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct comm_match_op {
    size_t row, k;
    uint64_t comm;
    uint64_t last, before, first; /* the latest arrival, the one before it, the earliest */
    size_t last_rank;             /* rank index of the latest (the lowest on a tie) */
    uint32_t nranks;
    int outside; /* ranks compared on their steps: the last rank's call is outside them */
    int has_ref; /* the clock estimate (comm_clock.h): the reference host's earliest exit */
    uint64_t ref_end;
};

/* One matched call of one rank: its k and operation are set by comm_match_number. */
struct comm_match_call {
    size_t row, k;
    uint64_t comm, start, end;
};

struct comm_match {
    struct comm_match_op *ops;
    size_t nops, cap;
    struct u64map index; /* hash of (row, comm, k), probing on -> index + 1 */
    size_t next;         /* the index after the operation found or added last */
};

void comm_match_init(struct comm_match *m);
void comm_match_free(struct comm_match *m);
/* Numbers the calls of one rank: k counts the calls of each (row, communicator) in time
 * order. Sorts calls. */
void comm_match_number(struct comm_match_call *calls, size_t n);
/* Under capture windows, where each rank's trace starts at any iteration: renumbers the
 * calls of one rank (as comm_match_number left them) so that the first call of each
 * collective on a communicator takes the k of ref's call (the first rank's, numbered the
 * same way) that ends nearest to it, the rest following; a collective ends about together
 * on every rank, whoever arrived last. */
void comm_match_align(struct comm_match_call *calls, size_t n, const struct comm_match_call *ref,
                      size_t nref);
/* The operation of a numbered call; added when new and add is set, else NULL when none. */
struct comm_match_op *comm_match_op(struct comm_match *m, const struct comm_match_call *c, int add);
/* Rank index rank arrived at op at start (ranks in increasing index order). */
void comm_match_arrive(struct comm_match_op *op, size_t rank, uint64_t start);
/* The operations in (row, communicator, k) order. */
void comm_match_sort(struct comm_match *m);

#endif
