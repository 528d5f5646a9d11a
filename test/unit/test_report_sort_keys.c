/* sort_keys: the order qsort gives with a comparator over the same fields, ties and
 * descending keys (stored as ~key) included, at every size around the insertion runs. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "sort_keys.h"

struct rec {
    uint64_t tid, start, end, depth;
};

static const struct rec *sorting;

static int rec_cmp(const void *a, const void *b)
{
    const struct rec *x = &sorting[*(const size_t *)a], *y = &sorting[*(const size_t *)b];
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the longer first */
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

Test(sort_keys, same_order_as_qsort)
{
    static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 33, 1000, 4099};
    srand(7);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        struct rec *r = malloc((n + 1) * sizeof *r);
        struct sort_key *keys = malloc((n + 1) * sizeof *keys);
        size_t *want = malloc((n + 1) * sizeof *want), *got = malloc((n + 1) * sizeof *got);
        cr_assert(r && keys && want && got);
        for (size_t i = 0; i < n; i++) { /* few distinct values: many ties */
            r[i] = (struct rec){(uint64_t)(rand() % 3), (uint64_t)(rand() % 5),
                                (uint64_t)(rand() % 4) + (i % 2 ? UINT64_MAX - 3 : 0),
                                (uint64_t)(rand() % 2)};
            keys[i] = (struct sort_key){{r[i].tid, r[i].start, ~r[i].end, r[i].depth}, i};
            want[i] = i;
        }
        sorting = r;
        qsort(want, n, sizeof *want, rec_cmp);
        sort_keys(keys, n, got);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(got[i], want[i], "n %zu, at %zu", n, i);
            cr_assert_eq(keys[i].idx, want[i]);
        }
        free(r);
        free(keys);
        free(want);
        free(got);
    }
}

static const struct sort_pair *pairing;

static int pair_cmp(const void *a, const void *b)
{
    const struct sort_pair *x = &pairing[*(const size_t *)a], *y = &pairing[*(const size_t *)b];
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* sort_pairs: qsort's order by key with the index last (equal keys keep their order), the
 * values moved with their keys, at every size around the insertion runs. */
Test(sort_pairs, same_order_as_qsort)
{
    static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 33, 1000, 4099};
    srand(11);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        struct sort_pair *given = malloc((n + 1) * sizeof *given);
        struct sort_pair *got = malloc((n + 1) * sizeof *got);
        size_t *want = malloc((n + 1) * sizeof *want);
        cr_assert(given && got && want);
        for (size_t i = 0; i < n; i++) { /* few distinct keys: many ties; the largest too */
            uint64_t key = (uint64_t)(rand() % 7);
            given[i] = got[i] = (struct sort_pair){i % 5 ? key : UINT64_MAX - key % 2, i};
            want[i] = i;
        }
        pairing = given;
        qsort(want, n, sizeof *want, pair_cmp);
        sort_pairs(got, n);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(got[i].value, want[i], "n %zu, at %zu", n, i);
            cr_assert_eq(got[i].key, given[want[i]].key);
        }
        free(given);
        free(got);
        free(want);
    }
}

/* Runs already in order (a merge that copies them whole): sorted, reversed and blockwise
 * sorted inputs, with ties, give qsort's order to both sorts. */
Test(sort_keys, inputs_partly_in_order)
{
    static const size_t sizes[] = {17, 32, 33, 100, 1000, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        for (int shape = 0; shape < 3; shape++) {
            struct rec *r = malloc(n * sizeof *r);
            struct sort_key *keys = malloc(n * sizeof *keys);
            struct sort_pair *pairs = malloc(n * sizeof *pairs);
            size_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
            cr_assert(r && keys && pairs && want && got);
            for (size_t i = 0; i < n; i++) {
                uint64_t v = shape == 0 ? i / 3 : shape == 1 ? (n - i) / 3 : (i % 64) / 2;
                r[i] = (struct rec){v % 2, v, v, 0};
                keys[i] = (struct sort_key){{r[i].tid, r[i].start, ~r[i].end, r[i].depth}, i};
                pairs[i] = (struct sort_pair){v, i};
                want[i] = i;
            }
            sorting = r;
            qsort(want, n, sizeof *want, rec_cmp);
            sort_keys(keys, n, got);
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(got[i], want[i], "sort_keys: n %zu, shape %d, at %zu", n, shape, i);
            for (size_t i = 0; i < n; i++) {
                r[i] = (struct rec){0, pairs[i].key, UINT64_MAX, 0};
                want[i] = i;
            }
            qsort(want, n, sizeof *want, rec_cmp);
            sort_pairs(pairs, n);
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(pairs[i].value, want[i], "sort_pairs: n %zu, shape %d, at %zu", n,
                             shape, i);
            free(r);
            free(keys);
            free(pairs);
            free(want);
            free(got);
        }
    }
}
