// Test double of the GPU side of PyTorch's memory: what the CUDA caching allocator
// (libc10_cuda.so, which needs a GPU) tells c10 for every block it hands out or takes
// back — c10::reportMemoryUsageToProfiler(ptr, ±size, allocated, reserved,
// Device(CUDA, i)), called through the PLT into libc10.so as libc10_cuda does. Built
// against Debian's libtorch-dev by test/e2e/test_torch_memory.py.
//
// The sequence (sizes in KiB; reserved is what the allocator holds from cudaMalloc):
//   CUDA:0 +1024 (reserved 2048), +2048 (reserved 4096), -1024, +512, CUDA:1 +256
//   (reserved 2048). CUDA:0 peaks at 3072 KiB live, ends at 2560; CUDA:1 at 256.
// A reporter of its own (what torch.profiler installs) counts the reports that reach
// libc10, so a run under profrun shows that they still do. Prints "reports seen: N".
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <cstdio>
#include <memory>

namespace
{

// The totals are int64_t up to torch 1.13 and size_t since 2.0: take c10's own type.
template <typename F> struct TotalsOf;
template <typename R, typename P, typename S, typename T, typename U, typename D>
struct TotalsOf<R(P, S, T, U, D)> {
    using type = T;
};
using total_t = TotalsOf<decltype(c10::reportMemoryUsageToProfiler)>::type;

struct CountingReporter : public c10::MemoryReportingInfoBase {
    int reports = 0;
    void reportMemoryUsage(void *, int64_t, total_t, total_t, c10::Device) override
    {
        reports++;
    }
    bool memoryProfilingEnabled() const override
    {
        return true;
    }
};

void report(uintptr_t ptr, int64_t kib, int64_t allocated_kib, int64_t reserved_kib, int index)
{
    c10::reportMemoryUsageToProfiler(
        reinterpret_cast<void *>(ptr), kib * 1024, static_cast<total_t>(allocated_kib * 1024),
        static_cast<total_t>(reserved_kib * 1024), c10::Device(c10::DeviceType::CUDA, index));
}

} // namespace

int main()
{
    auto reporter = std::make_shared<CountingReporter>();
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, reporter);
    report(0x7f0000000000, 1024, 1024, 2048, 0);
    report(0x7f0000100000, 2048, 3072, 4096, 0);
    report(0x7f0000000000, -1024, 2048, 4096, 0);
    report(0x7f0000000000, 512, 2560, 4096, 0);
    report(0x7e0000000000, 256, 256, 2048, 1);
    std::printf("reports seen: %d\n", reporter->reports);
    return 0;
}
