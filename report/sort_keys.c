#include "sort_keys.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static inline int sort_key_before(const struct sort_key *x, const struct sort_key *y)
{
    for (int i = 0; i < 4; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] < y->k[i];
    return x->idx < y->idx;
}

static inline int sort_pair_before(const struct sort_pair *x, const struct sort_pair *y)
{
    return x->key < y->key;
}

/* NAME(items, n): a stable merge sort of n TYPEs, a before b when BEFORE(&a, &b): runs of
 * 16 sorted by insertion, which moves an item only past those it goes before, then merged,
 * the left run's first on a tie; two runs already in order are copied whole. One body for
 * both element types, each with its comparison inlined (no call per comparison). */
#define SORT_MERGE_DEFINE(NAME, TYPE, BEFORE)                                                      \
    static void NAME(TYPE *items, size_t n)                                                        \
    {                                                                                              \
        const size_t run = 16;                                                                     \
        for (size_t lo = 0; lo < n; lo += run) {                                                   \
            size_t hi = lo + run < n ? lo + run : n;                                               \
            for (size_t i = lo + 1; i < hi; i++) {                                                 \
                TYPE x = items[i];                                                                 \
                size_t j = i;                                                                      \
                for (; j > lo && BEFORE(&x, &items[j - 1]); j--)                                   \
                    items[j] = items[j - 1];                                                       \
                items[j] = x;                                                                      \
            }                                                                                      \
        }                                                                                          \
        if (n <= run)                                                                              \
            return;                                                                                \
        TYPE *tmp = malloc(n * sizeof *tmp), *k = items;                                           \
        if (!tmp)                                                                                  \
            report_oom();                                                                          \
        TYPE *const buf = tmp;                                                                     \
        for (size_t width = run; width < n; width *= 2) {                                          \
            for (size_t lo = 0; lo < n; lo += 2 * width) {                                         \
                size_t mid = lo + width < n ? lo + width : n;                                      \
                size_t hi = lo + 2 * width < n ? lo + 2 * width : n;                               \
                size_t a = lo, b = mid, o = lo;                                                    \
                if (b < hi && !BEFORE(&k[b], &k[b - 1])) { /* in order already */                  \
                    memcpy(tmp + lo, k + lo, (hi - lo) * sizeof *k);                               \
                    continue;                                                                      \
                }                                                                                  \
                while (a < mid && b < hi)                                                          \
                    tmp[o++] = BEFORE(&k[b], &k[a]) ? k[b++] : k[a++];                             \
                while (a < mid)                                                                    \
                    tmp[o++] = k[a++];                                                             \
                while (b < hi)                                                                     \
                    tmp[o++] = k[b++];                                                             \
            }                                                                                      \
            TYPE *swap = k;                                                                        \
            k = tmp;                                                                               \
            tmp = swap;                                                                            \
        }                                                                                          \
        if (k != items)                                                                            \
            memcpy(items, k, n * sizeof *items);                                                   \
        free(buf);                                                                                 \
    }

SORT_MERGE_DEFINE(sort_keys_merge, struct sort_key, sort_key_before)
SORT_MERGE_DEFINE(sort_pairs_merge, struct sort_pair, sort_pair_before)

void sort_keys(struct sort_key *keys, size_t n, size_t *order)
{
    sort_keys_merge(keys, n);
    for (size_t i = 0; order && i < n; i++)
        order[i] = keys[i].idx;
}

void sort_pairs(struct sort_pair *pairs, size_t n)
{
    sort_pairs_merge(pairs, n);
}

int sort_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
