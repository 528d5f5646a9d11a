/* NVTX pushed ranges: see nvtx_ranges.h. */
#define _GNU_SOURCE
#include "nvtx_ranges.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "trace_format.h"

static __thread struct nvtx_thread *nvtx_tls PROF_TLS;
static struct nvtx_thread *_Atomic nvtx_threads;

struct nvtx_thread *nvtx_thread_here(void)
{
    struct nvtx_thread *nt = nvtx_tls;
    if (__builtin_expect(nt != NULL, 1))
        return nt;
    nt = mmap(NULL, sizeof *nt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nt == MAP_FAILED)
        return NULL;
    nt->tid = (uint32_t)syscall(SYS_gettid);
    struct nvtx_thread *head = atomic_load(&nvtx_threads);
    do
        atomic_store_explicit(&nt->next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&nvtx_threads, &head, nt));
    nvtx_tls = nt;
    return nt;
}

uint32_t nvtx_ranges_current(void)
{
    const struct nvtx_thread *nt = nvtx_tls;
    if (!nt)
        return 0;
    for (int d = 0; d < 2; d++) {
        int depth = nt->depth[d];
        atomic_signal_fence(memory_order_acquire);
        if (depth > 0 && depth <= NVTX_STACK_MAX)
            return nt->stack[d][depth - 1].name_sid;
    }
    return 0;
}

/* A dropped range's sums; the last slot takes whatever finds the table full. */
void nvtx_lost_add(struct nvtx_thread *nt, uint32_t domain_sid, uint32_t name_sid, uint64_t ticks)
{
    uint64_t key = ((uint64_t)domain_sid << 32 | name_sid) + 1;
    struct nvtx_lost *l = &nt->lost[NVTX_LOST_SLOTS - 1];
    for (unsigned i = 0; i < NVTX_LOST_SLOTS - 1; i++) {
        struct nvtx_lost *s = &nt->lost[(key + i) % (NVTX_LOST_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_relaxed);
        if (k == 0) {
            /* release: the collector that sees the key sees zeroed counters */
            atomic_store_explicit(&s->key, key, memory_order_release);
            k = key;
        }
        if (k == key) {
            l = s;
            break;
        }
    }
    if (l == &nt->lost[NVTX_LOST_SLOTS - 1] && !atomic_load(&l->key))
        atomic_store_explicit(&l->key, 1, memory_order_release); /* unnamed: "(other)" */
    atomic_store_explicit(&l->count, atomic_load_explicit(&l->count, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&l->ticks, atomic_load_explicit(&l->ticks, memory_order_relaxed) + ticks,
                          memory_order_relaxed);
}

/* The collector's source: what the sums gained since the last pass. */
void nvtx_lost_drain(int fresh, int last)
{
    (void)fresh;
    (void)last;
    for (struct nvtx_thread *nt = atomic_load(&nvtx_threads); nt;
         nt = atomic_load_explicit(&nt->next, memory_order_relaxed)) {
        int thread_said = 0;
        for (unsigned i = 0; i < NVTX_LOST_SLOTS; i++) {
            struct nvtx_lost *l = &nt->lost[i];
            uint64_t key = atomic_load_explicit(&l->key, memory_order_acquire);
            uint64_t count = atomic_load_explicit(&l->count, memory_order_relaxed);
            if (!key || count == l->written_count)
                continue;
            uint64_t ticks = atomic_load_explicit(&l->ticks, memory_order_relaxed);
            if (!thread_said) {
                collector_write_thread(nt->tid);
                thread_said = 1;
            }
            struct prof_rec_nvtx_lost rec = {{PROF_REC_NVTX_LOST, sizeof rec},
                                             nt->tid,
                                             (uint32_t)((key - 1) & 0xffffffffu),
                                             (uint32_t)((key - 1) >> 32),
                                             count - l->written_count,
                                             ticks - l->written_ticks};
            collector_write(&rec, sizeof rec);
            l->written_count = count;
            l->written_ticks = ticks;
        }
    }
}
