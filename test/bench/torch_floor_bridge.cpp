// Bench only (test/bench/bench_op_floor.py): the floor of profrun's op layer, which is what
// libtorch itself spends once one global RecordFunction callback is registered. Same
// registration as preload/torch/torch_bridge.cpp (every scope, no inputs), but the start
// and end callbacks do nothing, so what remains is torch's own cost.
#include <ATen/record_function.h>

#include <memory>

namespace
{

std::unique_ptr<at::ObserverContext> floor_start(const at::RecordFunction &)
{
    return nullptr;
}

void floor_end(const at::RecordFunction &, at::ObserverContext *)
{
}

} // namespace

extern "C" __attribute__((visibility("default"))) int bench_floor_install(void)
{
    try {
        at::addGlobalCallback(at::RecordFunctionCallback(floor_start, floor_end).needsInputs(false));
    } catch (...) {
        return -1;
    }
    return 0;
}
