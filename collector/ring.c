#include "ring.h"

void (*ring_half_full_hook)(void);

void ring_init(struct prof_ring *r, void *buffer, uint64_t capacity)
{
    memset(r, 0, sizeof *r);
    r->data = buffer;
    r->mask = capacity - 1;
}

void ring_keep(struct prof_ring *r, uint64_t bytes)
{
    r->keep = bytes < r->mask + 1 ? bytes : 0;
}

static void ring_count(_Atomic uint64_t *n)
{
    atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

int ring_check(struct prof_ring *r, uint64_t end)
{
    uint64_t cap = r->mask + 1, room = cap - r->keep;
    uint64_t quarter = cap >> 2;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (end - tail > room) {
        ring_count(&r->dropped);
        return 0;
    }
    void (*hook)(void) = ring_half_full_hook;
    if (hook && end - tail >= 2 * quarter)
        hook();
    uint64_t next_quarter = (end | (quarter - 1)) + 1;
    r->check_at = tail + room < next_quarter ? tail + room : next_quarter;
    return 1;
}

int ring_check_kept(struct prof_ring *r, uint64_t end)
{
    uint64_t cap = r->mask + 1;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (end - tail <= cap - r->keep)
        return ring_check(r, end);
    if (end - tail > cap) {
        ring_count(&r->dropped);
        ring_count(&r->dropped_kept);
        return 0;
    }
    return 1; /* in the kept bytes: check_at stays below them for the others */
}

uint64_t ring_peek(struct prof_ring *r, struct ring_span spans[2])
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t avail = head - tail;
    uint64_t offset = tail & r->mask;
    uint64_t first = ring_capacity(r) - offset;

    if (first > avail)
        first = avail;
    spans[0].data = r->data + offset;
    spans[0].len = first;
    spans[1].data = r->data;
    spans[1].len = avail - first;
    return avail;
}

void ring_release(struct prof_ring *r, uint64_t len)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + len, memory_order_release);
}

uint64_t ring_take_dropped(struct prof_ring *r)
{
    uint64_t total = atomic_load_explicit(&r->dropped, memory_order_relaxed);
    uint64_t fresh = total - r->dropped_reported;
    r->dropped_reported = total;
    return fresh;
}

uint64_t ring_take_dropped_kept(struct prof_ring *r)
{
    uint64_t total = atomic_load_explicit(&r->dropped_kept, memory_order_relaxed);
    uint64_t fresh = total - r->dropped_kept_reported;
    r->dropped_kept_reported = total;
    return fresh;
}
