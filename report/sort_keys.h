/* Sorting records by keys without a call per comparison: qsort's comparator calls, on
 * indices into the records, were a sixth of `--summarize`'s time on a real rank. The caller
 * fills one key per record, its index last; the order is the keys' in turn, then the index:
 * a total order, so the result is qsort's with the comparator that reads the same fields. */
#ifndef PROF_SORT_KEYS_H
#define PROF_SORT_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct sort_key {
    uint64_t k[4]; /* compared in turn; a key wanted descending is stored as ~key */
    size_t idx;
};

/* Orders keys[0, n) (a merge sort of runs sorted by insertion); order, when not NULL, gets
 * their indices in that order. */
void sort_keys(struct sort_key *keys, size_t n, size_t *order);

/* Orders records[0, n) (each size bytes) into out[0, n) by keys[0, n), which the caller
 * filled with each record's index (they are sorted too): out may be records itself (then
 * the records move through a copy). Inline: each caller's size is a constant, so each
 * record's copy is a few moves, not a call. */
static inline void sort_records(void *out, const void *records, size_t n, size_t size,
                                struct sort_key *keys)
{
    sort_keys(keys, n, NULL);
    if (!n)
        return;
    char *copy = out == records ? malloc(n * size + 1) : NULL, *to = copy ? copy : out;
    if (out == records && !copy)
        report_oom();
    for (size_t i = 0; i < n; i++)
        memcpy(to + i * size, (const char *)records + keys[i].idx * size, size);
    if (copy) {
        memcpy(out, copy, n * size);
        free(copy);
    }
}

/* One key and what goes with it: where the order needs one key alone, a record packed in
 * 16 bytes sorts in place, not through a 40-byte key and a copy back. */
struct sort_pair {
    uint64_t key, value;
};

/* Orders pairs[0, n) by key, those of equal keys in the order given (stable: qsort's
 * order with the index last); the same merge sort. */
void sort_pairs(struct sort_pair *pairs, size_t n);

/* qsort's comparator of uint64_t values, ascending. */
int sort_u64_cmp(const void *a, const void *b);

#endif
