/* rank_spread: a value over the ranks of a job — min, median (the lower middle one), max
 * and the rank at the max (the lowest such rank) — for the rows of any table: per op,
 * kernel, action (summary_*.c) and collective (comm_merge.c). */
#ifndef REPORT_RANK_SPREAD_H
#define REPORT_RANK_SPREAD_H

#include <stddef.h>
#include <stdint.h>

struct model_process;

struct rank_spread {
    uint64_t min, median, max;
    int64_t rank_at_max; /* -1: no rank */
    size_t ranks;        /* ranks the value is over */
};

/* values[i] belongs to rank ranks[i]. */
struct rank_spread rank_spread_of(const uint64_t *values, const int64_t *ranks, size_t n);

/* Per table row and rank, the value of the ranks that had the row, filled while rows are
 * merged. With fewer than two ranks among the processes it holds nothing (nranks 0). */
struct rank_table {
    size_t nranks;
    int64_t *rank_of;  /* rank number of each rank index, ascending */
    size_t *proc_rank; /* per process given: its rank index, or SIZE_MAX */
    uint64_t *values;  /* row * nranks + rank index */
    uint8_t *had;
    size_t nrows;
};

void rank_table_init(struct rank_table *t, struct model_process *const *procs, size_t nprocs);
/* Adds value to row for the rank of process proc (an index into the procs given). */
void rank_table_add(struct rank_table *t, size_t row, size_t proc, uint64_t value);
/* The spread of row over the ranks that had it ({0, 0, 0, -1, 0} when none). */
struct rank_spread rank_table_spread(const struct rank_table *t, size_t row);
void rank_table_free(struct rank_table *t);

#endif
