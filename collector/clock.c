#include "clock.h"

#ifdef PROF_CLOCK_HAVE_TSC
#include <cpuid.h>
#endif

int prof_clock_tsc;
_Atomic uint64_t prof_clock_hz;
static uint64_t clock_base_ticks, clock_base_ns; /* a (ticks, monotonic) pair at load */

void clock_init(void)
{
    atomic_store(&prof_clock_hz, 1000000000u); /* CLOCK_MONOTONIC ns, unless TSC below */
#ifdef PROF_CLOCK_HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC is invariant (constant rate, runs in every
     * C-state), so ticks from any core of this machine share one time base. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) {
        prof_clock_tsc = 1;
        atomic_store(&prof_clock_hz, 0);
    }
#endif
    uint64_t real;
    clock_sample(&clock_base_ticks, &clock_base_ns, &real);
}

static uint64_t clock_read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void)
{
    return clock_read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_realtime_ns(void)
{
    return clock_read_ns(CLOCK_REALTIME);
}

void clock_sample(uint64_t *ticks, uint64_t *monotonic_ns, uint64_t *realtime_ns)
{
    uint64_t before = prof_clock_ticks();
    *monotonic_ns = clock_monotonic_ns();
    uint64_t after = prof_clock_ticks();
    *realtime_ns = clock_realtime_ns();
    *ticks = before + (after - before) / 2;
}

uint64_t clock_hz_estimate(void)
{
    uint64_t hz = atomic_load_explicit(&prof_clock_hz, memory_order_relaxed);
    if (hz || !clock_base_ns)
        return hz;
    uint64_t ticks, ns, real;
    clock_sample(&ticks, &ns, &real);
    if (ns < clock_base_ns + 1000000u || ticks <= clock_base_ticks)
        return 0;
    return (uint64_t)((double)(ticks - clock_base_ticks) * 1e9 / (double)(ns - clock_base_ns));
}
