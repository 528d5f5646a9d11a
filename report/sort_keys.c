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

void sort_keys(struct sort_key *keys, size_t n, size_t *order)
{
    const size_t run = 16;
    for (size_t lo = 0; lo < n; lo += run) { /* insertion sort of short runs */
        size_t hi = lo + run < n ? lo + run : n;
        for (size_t i = lo + 1; i < hi; i++) {
            struct sort_key x = keys[i];
            size_t j = i;
            for (; j > lo && sort_key_before(&x, &keys[j - 1]); j--)
                keys[j] = keys[j - 1];
            keys[j] = x;
        }
    }
    if (n > run) {
        struct sort_key *tmp = malloc(n * sizeof *tmp), *k = keys;
        if (!tmp)
            report_oom();
        struct sort_key *const buf = tmp;
        for (size_t width = run; width < n; width *= 2) {
            for (size_t lo = 0; lo < n; lo += 2 * width) {
                size_t mid = lo + width < n ? lo + width : n;
                size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
                size_t a = lo, b = mid, o = lo;
                if (b < hi && !sort_key_before(&k[b], &k[b - 1])) { /* in order already */
                    memcpy(tmp + lo, k + lo, (hi - lo) * sizeof *k);
                    continue;
                }
                while (a < mid && b < hi)
                    tmp[o++] = sort_key_before(&k[b], &k[a]) ? k[b++] : k[a++];
                while (a < mid)
                    tmp[o++] = k[a++];
                while (b < hi)
                    tmp[o++] = k[b++];
            }
            struct sort_key *swap = k;
            k = tmp;
            tmp = swap;
        }
        if (k != keys)
            memcpy(keys, k, n * sizeof *keys);
        free(buf);
    }
    for (size_t i = 0; order && i < n; i++)
        order[i] = keys[i].idx;
}

/* sort_keys' merge sort with one key: equal keys never move past each other (the insertion
 * moves a pair only past larger keys, and the merge takes the left run's first on a tie). */
void sort_pairs(struct sort_pair *pairs, size_t n)
{
    const size_t run = 16;
    for (size_t lo = 0; lo < n; lo += run) {
        size_t hi = lo + run < n ? lo + run : n;
        for (size_t i = lo + 1; i < hi; i++) {
            struct sort_pair x = pairs[i];
            size_t j = i;
            for (; j > lo && x.key < pairs[j - 1].key; j--)
                pairs[j] = pairs[j - 1];
            pairs[j] = x;
        }
    }
    if (n <= run)
        return;
    struct sort_pair *tmp = malloc(n * sizeof *tmp), *k = pairs;
    if (!tmp)
        report_oom();
    struct sort_pair *const buf = tmp;
    for (size_t width = run; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            if (b < hi && !(k[b].key < k[b - 1].key)) { /* in order already */
                memcpy(tmp + lo, k + lo, (hi - lo) * sizeof *k);
                continue;
            }
            while (a < mid && b < hi)
                tmp[o++] = k[b].key < k[a].key ? k[b++] : k[a++];
            while (a < mid)
                tmp[o++] = k[a++];
            while (b < hi)
                tmp[o++] = k[b++];
        }
        struct sort_pair *swap = k;
        k = tmp;
        tmp = swap;
    }
    if (k != pairs)
        memcpy(pairs, k, n * sizeof *pairs);
    free(buf);
}
