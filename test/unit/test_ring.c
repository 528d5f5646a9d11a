/* Ring invariants: reserve/commit/peek/release, wrap-around with PAD records, full ring
 * drops and counts, and a producer/consumer stress run across threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "ring.h"

static struct prof_ring ring;
static uint8_t *buffer;

static void ring_setup(uint64_t capacity)
{
    buffer = aligned_alloc(64, capacity);
    ring_init(&ring, buffer, capacity);
}

static void ring_teardown(void)
{
    free(buffer);
}

static void put(uint16_t type, uint32_t size, uint32_t payload)
{
    struct prof_record_header *h = ring_reserve(&ring, size);
    cr_assert_not_null(h, "reserve of %u bytes failed", size);
    h->type = type;
    h->size = (uint16_t)size;
    ((uint32_t *)h)[1] = payload;
    ring_commit(&ring);
}

/* Drains the ring; returns how many non-PAD records it held and checks their payloads
 * count up from *next. */
static int drain_records(uint32_t *next)
{
    struct ring_span spans[2];
    uint64_t avail = ring_peek(&ring, spans);
    int n = 0;
    for (int s = 0; s < 2; s++) {
        const uint8_t *p = spans[s].data;
        uint64_t left = spans[s].len;
        while (left) {
            const struct prof_record_header *h = (const void *)p;
            cr_assert(h->size >= 8 && h->size % 8 == 0 && h->size <= left, "bad size %u", h->size);
            if (h->type != PROF_REC_PAD) {
                cr_assert_eq(((const uint32_t *)h)[1], *next, "payload %u, expected %u",
                             ((const uint32_t *)h)[1], *next);
                (*next)++;
                n++;
            }
            p += h->size;
            left -= h->size;
        }
    }
    ring_release(&ring, avail);
    return n;
}

Test(ring, empty_ring_has_nothing, .init = NULL)
{
    ring_setup(1024);
    struct ring_span spans[2];
    cr_assert_eq(ring_peek(&ring, spans), 0);
    cr_assert_eq(ring_take_dropped(&ring), 0);
    ring_teardown();
}

Test(ring, records_come_out_in_order)
{
    ring_setup(1024);
    for (uint32_t i = 0; i < 10; i++)
        put(PROF_REC_API_CALL, 24, i);
    uint32_t next = 0;
    cr_assert_eq(drain_records(&next), 10);
    cr_assert_eq(next, 10);
    ring_teardown();
}

Test(ring, wraps_with_pad_and_never_splits_a_record)
{
    ring_setup(256);
    uint32_t produced = 0, consumed = 0;
    /* 40-byte records do not divide 256: every lap ends in a PAD. */
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 3; i++)
            put(PROF_REC_API_CALL, 40, produced++);
        drain_records(&consumed);
    }
    cr_assert_eq(consumed, produced);
    cr_assert_eq(ring_take_dropped(&ring), 0);
    ring_teardown();
}

Test(ring, full_ring_drops_and_counts)
{
    ring_setup(256);
    int stored = 0;
    for (int i = 0; i < 20; i++) {
        void *p = ring_reserve(&ring, 24);
        if (p) {
            struct prof_record_header *h = p;
            h->type = PROF_REC_API_CALL;
            h->size = 24;
            ((uint32_t *)h)[1] = (uint32_t)stored;
            ring_commit(&ring);
            stored++;
        }
    }
    cr_assert_eq(stored, 256 / 24, "stored %d", stored);
    cr_assert_eq(ring_take_dropped(&ring), (uint64_t)(20 - stored));
    cr_assert_eq(ring_take_dropped(&ring), 0, "drops are reported once");
    uint32_t next = 0;
    cr_assert_eq(drain_records(&next), stored);
    /* After draining there is room again. */
    cr_assert_not_null(ring_reserve(&ring, 24));
    ring_teardown();
}

/* Puts one 24-byte record through reserve (ring_reserve or ring_reserve_kept); whether
 * it went in. */
static int put_with(void *(*reserve)(struct prof_ring *, uint32_t), uint32_t payload)
{
    struct prof_record_header *h = reserve(&ring, 24);
    if (!h)
        return 0;
    h->type = PROF_REC_API_CALL;
    h->size = 24;
    ((uint32_t *)h)[1] = payload;
    ring_commit(&ring);
    return 1;
}

static void *reserve_plain(struct prof_ring *r, uint32_t size)
{
    return ring_reserve(r, size);
}

static void *reserve_kept(struct prof_ring *r, uint32_t size)
{
    return ring_reserve_kept(r, size);
}

Test(ring, kept_room_takes_the_kept_records_when_the_rest_is_full)
{
    ring_setup(512);
    ring_keep(&ring, 128); /* 384 bytes for all: 16 records; 128 more for the kept: 5 */
    uint32_t n = 0;
    while (put_with(reserve_plain, n))
        n++;
    cr_assert_eq(n, 384 / 24, "plain records stored: %u", n);
    cr_assert_eq(ring_take_dropped(&ring), 1);
    uint32_t kept = 0;
    while (put_with(reserve_kept, n + kept))
        kept++;
    cr_assert_eq(kept, (512 - 384) / 24, "kept records stored: %u", kept);
    /* a plain record still finds no room; the kept one that failed is counted as both */
    cr_assert_eq(put_with(reserve_plain, 0), 0);
    cr_assert_eq(ring_take_dropped(&ring), 2);
    cr_assert_eq(ring_take_dropped_kept(&ring), 1);
    cr_assert_eq(ring_take_dropped_kept(&ring), 0, "kept drops are reported once");
    uint32_t next = 0;
    cr_assert_eq(drain_records(&next), (int)(n + kept));
    /* drained: plain records go in again, up to the kept room */
    cr_assert(put_with(reserve_plain, next));
    ring_teardown();
}

Test(ring, reservation_that_needs_a_pad_counts_the_pad_against_space)
{
    ring_setup(128);
    put(PROF_REC_API_CALL, 96, 0); /* 32 bytes left at the end */
    uint32_t next = 0;
    drain_records(&next);
    /* 48 does not fit in the 32 at the end: pad 32 + 48 = 80 <= 128, succeeds. */
    put(PROF_REC_API_CALL, 48, 1);
    /* 96 more cannot fit (48 used, 80 free but contiguous 80 at start... total would be 144). */
    cr_assert_null(ring_reserve(&ring, 96));
    cr_assert_eq(ring_take_dropped(&ring), 1);
    cr_assert_eq(drain_records(&next), 1);
    ring_teardown();
}

#define STRESS_RECORDS 2000000u

static void *stress_producer(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < STRESS_RECORDS;) {
        uint32_t size = 8 + 8 * (i % 5);
        struct prof_record_header *h = ring_reserve(&ring, size);
        if (!h)
            continue; /* the consumer catches up; the test counts drops separately */
        h->type = PROF_REC_API_CALL;
        h->size = (uint16_t)size;
        ((uint32_t *)h)[1] = i;
        ring_commit(&ring);
        i++;
    }
    return NULL;
}

Test(ring, producer_and_consumer_threads_agree, .timeout = 60)
{
    ring_setup(4096);
    pthread_t th;
    pthread_create(&th, NULL, stress_producer, NULL);
    uint32_t next = 0;
    while (next < STRESS_RECORDS)
        drain_records(&next);
    pthread_join(th, NULL);
    cr_assert_eq(next, STRESS_RECORDS);
    ring_teardown();
}

static int half_full_calls;
static void count_half_full(void)
{
    half_full_calls++;
}

/* The producer wakes the consumer once per quarter of the ring crossed while the ring is
 * at least half full, never while the consumer keeps up. */
Test(ring, half_full_ring_calls_the_hook_once_per_quarter)
{
    ring_setup(256);
    ring_half_full_hook = count_half_full;
    uint32_t next = 0;
    for (uint32_t i = 0; i < 64; i++) {
        put(PROF_REC_API_CALL, 16, i);
        cr_assert_eq(drain_records(&next), 1);
    }
    cr_assert_eq(half_full_calls, 0, "a drained ring called the hook %d times", half_full_calls);
    uint32_t payload = next;
    for (int i = 0; i < 8; i++)
        put(PROF_REC_API_CALL, 16, payload++);
    cr_assert_eq(half_full_calls, 0, "called at %u of 256 bytes", 8 * 16);
    put(PROF_REC_API_CALL, 16, payload++);
    cr_assert_eq(half_full_calls, 1, "past half full: %d calls", half_full_calls);
    for (int i = 0; i < 3; i++)
        put(PROF_REC_API_CALL, 16, payload++);
    cr_assert_eq(half_full_calls, 1, "within one quarter: %d calls", half_full_calls);
    for (int i = 0; i < 4; i++)
        put(PROF_REC_API_CALL, 16, payload++);
    cr_assert_eq(half_full_calls, 2, "next quarter: %d calls", half_full_calls);
    cr_assert_null(ring_reserve(&ring, 16), "a full ring has no room");
    cr_assert_eq(drain_records(&next), 16);
    ring_teardown();
}
