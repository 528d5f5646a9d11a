/* The event clock: TSC cycles where the CPU has an invariant TSC, else CLOCK_MONOTONIC
 * nanoseconds. Records store raw ticks; PROF_REC_CLOCK records let the reader convert. */
#ifndef PROF_CLOCK_H
#define PROF_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PROF_CLOCK_HAVE_TSC 1
#endif

extern int prof_clock_tsc; /* set once by clock_init, read on every event */
/* Ticks per second once measured (the collector does, 20 ms after it starts); 0 before. */
extern _Atomic uint64_t prof_clock_hz;

void clock_init(void);
/* Ticks per second estimated from the load-time sample to now, for the first moments
 * before prof_clock_hz is measured (the collector does so 20 ms after it starts); 0
 * within the first millisecond. */
uint64_t clock_hz_estimate(void);
uint64_t clock_monotonic_ns(void);
uint64_t clock_realtime_ns(void);
/* Fills a (ticks, monotonic, realtime) triple taken as close together as we can. */
void clock_sample(uint64_t *ticks, uint64_t *monotonic_ns, uint64_t *realtime_ns);

static inline uint64_t prof_clock_ticks(void)
{
#ifdef PROF_CLOCK_HAVE_TSC
    if (prof_clock_tsc)
        return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
