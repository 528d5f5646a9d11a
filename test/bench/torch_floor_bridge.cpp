// Bench only (test/bench/bench_op_floor.py): the floor of profrun's op layer, which is what
// libtorch itself spends once one global RecordFunction callback is registered. Same
// registration as preload/torch/torch_bridge.cpp (every scope, no inputs), but the start
// and end callbacks do nothing, so what remains is torch's own cost. The clock floor's
// callbacks only read the tick counter, as any profiler that times each op must at its
// start and end (profrun's op layer reads it the same way).
#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace
{

std::unique_ptr<at::ObserverContext> floor_start(const at::RecordFunction &)
{
    return nullptr;
}

void floor_end(const at::RecordFunction &, at::ObserverContext *)
{
}

std::atomic<uint64_t> clock_sink; // a plain store: the reads are not optimized away

inline uint64_t clock_ticks()
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
#endif
}

std::unique_ptr<at::ObserverContext> clock_start(const at::RecordFunction &)
{
    clock_sink.store(clock_ticks(), std::memory_order_relaxed);
    return nullptr;
}

void clock_end(const at::RecordFunction &, at::ObserverContext *)
{
    clock_sink.store(clock_ticks(), std::memory_order_relaxed);
}

int install(at::RecordFunctionCallback::StartCallback start, at::RecordFunctionCallback::EndCallback end)
{
    try {
        at::addGlobalCallback(at::RecordFunctionCallback(start, end).needsInputs(false));
    } catch (...) {
        return -1;
    }
    return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int bench_floor_install(void)
{
    return install(floor_start, floor_end);
}

extern "C" __attribute__((visibility("default"))) int bench_floor_install_clock(void)
{
    return install(clock_start, clock_end);
}
