/* idbits (report/hashmap.c): the sets of correlation ids the timeline exports keep to draw
 * one launch arrow per id, only between a launch and an activity the file has both of. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "hashmap.h"

Test(idbits, holds_exactly_the_ids_added)
{
    struct idbits b;
    idbits_init(&b);
    cr_assert(!idbits_has(&b, 0) && !idbits_has(&b, 12345));
    /* a run from 1 (CUPTI's correlation ids), every third id, and ids far apart */
    for (uint64_t id = 1; id < 100000; id += 3)
        cr_assert_eq(idbits_add(&b, id), 0);
    const uint64_t far[] = {UINT32_MAX, (uint64_t)1 << 40, UINT64_MAX, 511, 512, 513};
    for (size_t i = 0; i < sizeof far / sizeof *far; i++)
        cr_assert_eq(idbits_add(&b, far[i]), 0);
    for (uint64_t id = 0; id < 100010; id++) {
        int want =
            (id >= 1 && id < 100000 && (id - 1) % 3 == 0) || id == 511 || id == 512 || id == 513;
        cr_assert_eq(idbits_has(&b, id), want, "id %llu", (unsigned long long)id);
    }
    for (size_t i = 0; i < sizeof far / sizeof *far; i++)
        cr_assert(idbits_has(&b, far[i]));
    cr_assert(!idbits_has(&b, UINT32_MAX - 1) && !idbits_has(&b, ((uint64_t)1 << 40) + 1));
    /* 100,000 ids in a run: 196 chunks of 512, and one each for the three far ones */
    cr_assert_eq(b.nchunks, 196 + 3);
    idbits_free(&b);
    cr_assert(!idbits_has(&b, 1) && b.nchunks == 0);
}

Test(idbits, chunks_iterate_and_copy)
{
    struct idbits a, c;
    idbits_init(&a);
    idbits_init(&c);
    for (uint64_t id = 0; id < 5000; id += 7)
        idbits_add(&a, id);
    uint64_t key, chunks = 0;
    const uint64_t *w;
    for (size_t i = 0; idbits_next(&a, &i, &key, &w);) {
        cr_assert_eq(w, idbits_chunk(&a, key));
        cr_assert_eq(idbits_set_chunk(&c, key, w), 0);
        chunks++;
    }
    cr_assert_eq(chunks, (5000 + 511) / 512);
    for (uint64_t id = 0; id < 6000; id++)
        cr_assert_eq(idbits_has(&c, id), idbits_has(&a, id));
    cr_assert_null(idbits_chunk(&a, 1000));
    idbits_free(&a);
    idbits_free(&c);
}
