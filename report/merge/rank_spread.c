/* Values over the ranks: see rank_spread.h. */
#include "rank_spread.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "sort_keys.h"

struct rank_spread rank_spread_of(const uint64_t *values, const int64_t *ranks, size_t n)
{
    struct rank_spread s = {0, 0, 0, -1, n};
    if (!n)
        return s;
    uint64_t *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        report_oom();
    memcpy(sorted, values, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, sort_u64_cmp);
    s.min = sorted[0];
    s.median = sorted[(n - 1) / 2];
    s.max = sorted[n - 1];
    free(sorted);
    for (size_t i = 0; i < n; i++)
        if (values[i] == s.max && (s.rank_at_max < 0 || ranks[i] < s.rank_at_max))
            s.rank_at_max = ranks[i];
    return s;
}

static int rank_spread_i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void rank_table_init(struct rank_table *t, struct model_process *const *procs, size_t nprocs)
{
    memset(t, 0, sizeof *t);
    int64_t *ids = malloc((nprocs + 1) * sizeof *ids);
    if (!ids)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < nprocs; i++)
        if (procs[i]->rank >= 0)
            ids[n++] = procs[i]->rank;
    qsort(ids, n, sizeof *ids, rank_spread_i64_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (!distinct || ids[distinct - 1] != ids[i])
            ids[distinct++] = ids[i];
    if (distinct < 2) {
        free(ids);
        return;
    }
    t->nranks = distinct;
    t->rank_of = ids;
    t->proc_rank = malloc((nprocs + 1) * sizeof *t->proc_rank);
    if (!t->proc_rank)
        report_oom();
    for (size_t i = 0; i < nprocs; i++) {
        t->proc_rank[i] = SIZE_MAX;
        size_t lo = 0, hi = distinct;
        while (procs[i]->rank >= 0 && lo < hi) { /* binary search of its rank */
            size_t m = lo + (hi - lo) / 2;
            if (ids[m] < procs[i]->rank)
                lo = m + 1;
            else
                hi = m;
        }
        if (procs[i]->rank >= 0 && lo < distinct && ids[lo] == procs[i]->rank)
            t->proc_rank[i] = lo;
    }
}

void rank_table_add(struct rank_table *t, size_t row, size_t proc, uint64_t value)
{
    if (!t->nranks || t->proc_rank[proc] == SIZE_MAX)
        return;
    if (row >= t->nrows) {
        size_t rows = row + 1 > 2 * t->nrows ? row + 1 : 2 * t->nrows;
        t->values = realloc(t->values, rows * t->nranks * sizeof *t->values);
        t->had = realloc(t->had, rows * t->nranks * sizeof *t->had);
        if (!t->values || !t->had)
            report_oom();
        memset(t->values + t->nrows * t->nranks, 0,
               (rows - t->nrows) * t->nranks * sizeof *t->values);
        memset(t->had + t->nrows * t->nranks, 0, (rows - t->nrows) * t->nranks);
        t->nrows = rows;
    }
    size_t cell = row * t->nranks + t->proc_rank[proc];
    t->values[cell] += value;
    t->had[cell] = 1;
}

struct rank_spread rank_table_spread(const struct rank_table *t, size_t row)
{
    struct rank_spread none = {0, 0, 0, -1, 0};
    if (!t->nranks || row >= t->nrows)
        return none;
    uint64_t *v = malloc(t->nranks * sizeof *v);
    int64_t *r = malloc(t->nranks * sizeof *r);
    if (!v || !r)
        report_oom();
    size_t n = 0;
    for (size_t k = 0; k < t->nranks; k++)
        if (t->had[row * t->nranks + k]) {
            v[n] = t->values[row * t->nranks + k];
            r[n++] = t->rank_of[k];
        }
    struct rank_spread s = rank_spread_of(v, r, n);
    free(v);
    free(r);
    return s;
}

void rank_table_free(struct rank_table *t)
{
    free(t->rank_of);
    free(t->proc_rank);
    free(t->values);
    free(t->had);
    memset(t, 0, sizeof *t);
}
