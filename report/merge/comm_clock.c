/* Clock offsets between hosts: see comm_clock.h. */
#include "comm_clock.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void comm_clock_init(struct comm_clock *c, struct comm_host *hosts, size_t nhosts)
{
    memset(c, 0, sizeof *c);
    c->hosts = hosts;
    c->nhosts = nhosts;
    c->diffs = calloc(nhosts + 1, sizeof *c->diffs);
    c->ndiffs = calloc(nhosts + 1, sizeof *c->ndiffs);
    if (!c->diffs || !c->ndiffs)
        report_oom();
}

void comm_clock_add(struct comm_clock *c, size_t h, uint64_t end_ns, uint64_t ref_ns)
{
    if (h >= c->nhosts || c->ndiffs[h] >= COMM_CLOCK_SAMPLES)
        return;
    if (!c->diffs[h]) {
        c->diffs[h] = malloc(COMM_CLOCK_SAMPLES * sizeof *c->diffs[h]);
        if (!c->diffs[h])
            report_oom();
    }
    c->diffs[h][c->ndiffs[h]++] = (int64_t)(end_ns - ref_ns); /* wraps, never undefined */
}

static int comm_clock_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void comm_clock_finish(struct comm_clock *c)
{
    for (size_t h = 0; h < c->nhosts; h++) {
        size_t n = c->ndiffs[h];
        int64_t *d = c->diffs[h];
        c->hosts[h].samples = n;
        if (n) {
            qsort(d, n, sizeof *d, comm_clock_cmp);
            int64_t median = d[(n - 1) / 2];
            for (size_t i = 0; i < n; i++) { /* |d - median|, sorted again */
                uint64_t a = d[i] >= median ? (uint64_t)d[i] - (uint64_t)median
                                            : (uint64_t)median - (uint64_t)d[i];
                d[i] = (int64_t)(a > INT64_MAX ? INT64_MAX : a);
            }
            qsort(d, n, sizeof *d, comm_clock_cmp);
            c->hosts[h].offset_ns = median;
            c->hosts[h].uncertainty_ns = (uint64_t)d[(n - 1) / 2];
        }
        free(d);
    }
    free(c->diffs);
    free(c->ndiffs);
    c->diffs = NULL;
    c->ndiffs = NULL;
}
