/* comm_window: the steps the ranks are compared on (comm_merge.h: by_steps, step_lo,
 * step_hi), each rank's time over them, and which of its matched calls fall in them. */
#ifndef REPORT_COMM_WINDOW_H
#define REPORT_COMM_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "comm_match.h"
#include "comm_merge.h"
#include "summary.h"

/* The processes of one rank. */
struct comm_merge_rank {
    const struct model_process **procs;
    size_t nprocs, cap;
};

/* Whether some process recorded under a capture window (META window). */
int comm_window_recorded(const struct summary *s);
/* Sets r's window of steps (by_steps, step_lo, step_hi, step_shift...). */
void comm_window_steps(struct comm_report *r, const struct comm_merge_rank *ranks,
                       const size_t *rank_host, int windowed);
/* Rank k's time over the window's steps. */
void comm_window_rank_steps(struct comm_report *r, size_t k, const struct comm_merge_rank *rank);

/* Whether each of a rank's matched calls (in comm_match_number's order; start + offset:
 * CLOCK_REALTIME of its host) is in one of the window's steps of rank k, one bit each. */
struct comm_window_calls {
    uint8_t *bits;
    size_t n;
};
void comm_window_fill(struct comm_window_calls *w, const struct comm_report *r, size_t k,
                      const struct comm_merge_rank *rank, const struct comm_match_call *mc,
                      size_t n, uint64_t offset);
/* The i-th call's bit; one beyond the first pass's calls (a summary changed since) asks. */
int comm_window_at(const struct comm_window_calls *w, size_t i, const struct comm_report *r,
                   size_t k, const struct comm_merge_rank *rank, const struct comm_match_call *call,
                   uint64_t offset);

#endif
