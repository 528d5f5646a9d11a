/* NVTX pushed ranges (nvtx_ranges.c): each thread's open pushes, so that a POP names its
 * range, and the sums of the ranges whose POP record a full ring dropped. */
#ifndef PROF_NVTX_RANGES_H
#define PROF_NVTX_RANGES_H

#include <stdatomic.h>
#include <stdint.h>

/* A POP record carries its PUSH's name and ticks, so a range counts whatever became of
 * its PUSH record. When the POP record itself finds the ring full, the range goes into
 * its thread's sums, which the collector writes as NVTX_LOST records (a source). The
 * thread's block is made at its first push and kept: threads that push NVTX ranges are
 * few and long-lived (a pool thread leaves 7 KiB behind). */
#define NVTX_STACK_MAX 128
#define NVTX_LOST_SLOTS 64

struct nvtx_open {
    uint32_t name_sid;
    uint64_t start;
};

struct nvtx_lost {
    _Atomic uint64_t key;          /* domain_sid << 32 | name_sid, + 1 (0: free); set once */
    _Atomic uint64_t count, ticks; /* written by the thread only */
    uint64_t written_count, written_ticks; /* the collector's */
};

struct nvtx_thread {
    struct nvtx_thread *_Atomic next;
    uint32_t tid;
    int depth[2]; /* the default domain, the others */
    struct nvtx_open stack[2][NVTX_STACK_MAX];
    struct nvtx_lost lost[NVTX_LOST_SLOTS];
};

/* The calling thread's block, made at its first push; NULL without memory. */
struct nvtx_thread *nvtx_thread_here(void);
/* A range whose POP record found the ring full. */
void nvtx_lost_add(struct nvtx_thread *nt, uint32_t domain_sid, uint32_t name_sid, uint64_t ticks);
/* The calling thread's innermost open push (the default domain's, else another
 * domain's): its name's string id, 0 if none. Async-signal-safe. */
uint32_t nvtx_ranges_current(void);
/* The collector's source: NVTX_LOST records for what the sums gained. */
void nvtx_lost_drain(int fresh, int last);

#endif
