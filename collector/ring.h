/* Per-thread single-producer/single-consumer byte ring with reserve/commit.
 *
 * The producer is the thread that owns the ring; the consumer is whoever holds the
 * collector's drain lock. Indices run free (never wrapped) and are masked on use; the
 * capacity is a power of two. A record never straddles the end of the buffer: when it
 * would, the producer fills the rest with a PAD record first. A full ring drops the
 * record and counts it; the producer never waits. */
#ifndef PROF_RING_H
#define PROF_RING_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"

struct prof_ring {
    /* Producer's cache line. head is published with release so the consumer that reads
     * it with acquire also sees the record bytes written before it. */
    _Alignas(64) _Atomic uint64_t head;
    uint64_t reserved_head; /* head after the pending reservation (pad included) */
    /* Up to this head position a reservation needs no check: there is room (from the
     * producer's last view of tail, so the consumer's line stays untouched) and no
     * quarter boundary is crossed. */
    uint64_t check_at;
    _Atomic uint64_t dropped;
    _Atomic uint64_t dropped_kept; /* of them, ring_reserve_kept's (its reserve full too) */
    /* Consumer's cache line. tail is released after the bytes were copied out, so the
     * producer that acquires it may overwrite them. */
    _Alignas(64) _Atomic uint64_t tail;
    uint64_t dropped_reported, dropped_kept_reported;
    /* Read-only after init. */
    _Alignas(64) uint8_t *data;
    uint64_t mask;
    uint64_t keep; /* the last bytes of room, for ring_reserve_kept only (ring_keep) */
};

/* Called by a producer whose ring is at least half full (checked each time its head
 * crosses a quarter of the capacity, so at most four times per lap): the
 * collector sets it to wake its thread early instead of at the next flush interval.
 * It must be async-signal-safe and keep errno. NULL: nobody is woken. */
extern void (*ring_half_full_hook)(void);

/* capacity must be a power of two and a multiple of 8. */
void ring_init(struct prof_ring *r, void *buffer, uint64_t capacity);
/* Keeps the last `bytes` of room (a multiple of 8, below the capacity) for
 * ring_reserve_kept: the few records a report needs whole (a training phase's span) still
 * go in when everything else is dropped. Before the first reservation. */
void ring_keep(struct prof_ring *r, uint64_t bytes);

static inline uint64_t ring_capacity(const struct prof_ring *r)
{
    return r->mask + 1;
}

/* Out of line: the reservation ending at `end` crosses check_at. Returns 0 when the ring
 * has no room (counted); else calls ring_half_full_hook when the ring is at least half
 * full, and moves check_at to the next quarter boundary or the end of the room. */
int ring_check(struct prof_ring *r, uint64_t end);
/* The same for ring_reserve_kept: the kept bytes may be used too (check_at left for the
 * others when they are). */
int ring_check_kept(struct prof_ring *r, uint64_t end);

static inline void *ring_reserve_with(struct prof_ring *r, uint32_t size,
                                      int (*check)(struct prof_ring *, uint64_t))
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t offset = head & r->mask;
    uint64_t room_to_end = r->mask + 1 - offset;
    uint64_t need = room_to_end < size ? room_to_end + size : size;

    if (__builtin_expect(head + need > r->check_at, 0) && !check(r, head + need))
        return NULL;
    if (room_to_end < size) {
        struct prof_record_header *pad = (struct prof_record_header *)(r->data + offset);
        pad->type = PROF_REC_PAD;
        pad->size = (uint16_t)room_to_end;
        head += room_to_end;
    }
    r->reserved_head = head + size;
    return r->data + (head & r->mask);
}

/* Returns where to write `size` bytes (a multiple of 8), or NULL when full (counted). */
static inline void *ring_reserve(struct prof_ring *r, uint32_t size)
{
    return ring_reserve_with(r, size, ring_check);
}

/* ring_reserve for a record that may use the kept bytes (ring_keep). */
static inline void *ring_reserve_kept(struct prof_ring *r, uint32_t size)
{
    return ring_reserve_with(r, size, ring_check_kept);
}

static inline void ring_commit(struct prof_ring *r)
{
    atomic_store_explicit(&r->head, r->reserved_head, memory_order_release);
}

/* Consumer side: the readable bytes as at most two contiguous spans. */
struct ring_span {
    const uint8_t *data;
    uint64_t len;
};

/* Fills spans[0..1]; returns the number of readable bytes. */
uint64_t ring_peek(struct prof_ring *r, struct ring_span spans[2]);
/* Gives `len` consumed bytes back to the producer. */
void ring_release(struct prof_ring *r, uint64_t len);
/* Drops counted since the last call (consumer side). */
uint64_t ring_take_dropped(struct prof_ring *r);
/* The same for the kept records dropped (ring_reserve_kept), counted among them. */
uint64_t ring_take_dropped_kept(struct prof_ring *r);

#endif
