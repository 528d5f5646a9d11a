// The libtorch side of profrun's PyTorch layer: one global RecordFunction callback whose
// start and end call back into libprof.so (preload/torch.c). libprof.so embeds this file
// and torch.h, builds them against the torch a process loads (once, cached) and dlopens
// the result; see torch.c. Keep it minimal: it is compiled on users' machines.
#include <ATen/record_function.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "torch.h"

namespace
{

const prof_torch_hooks *bridge_hooks;

// Appends to buf[len] at *used; never overflows, stops at the end.
void bridge_append(char *buf, size_t len, size_t *used, const char *text)
{
    size_t n = std::strlen(text);
    if (*used + n + 1 > len)
        n = *used + 1 < len ? len - *used - 1 : 0;
    std::memcpy(buf + *used, text, n);
    *used += n;
    buf[*used] = '\0';
}

// "float[8, 1, 8, 8], long int[8], [1, 1], Scalar, None": one entry per input.
void bridge_shapes(const at::RecordFunction &fn, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    char num[32];
    bool first = true;
    for (const c10::IValue &v : fn.inputs()) {
        if (!first)
            bridge_append(buf, len, &used, ", ");
        first = false;
        if (v.isTensor()) {
            const at::Tensor &t = v.toTensor();
            if (!t.defined()) {
                bridge_append(buf, len, &used, "undefined");
                continue;
            }
            c10::string_view dtype = t.dtype().name(); // "float", as torch.profiler says
            bridge_append(buf, len, &used, std::string(dtype.data(), dtype.size()).c_str());
            bridge_append(buf, len, &used, "[");
            bool first_dim = true;
            for (int64_t d : t.sizes()) {
                std::snprintf(num, sizeof num, first_dim ? "%lld" : ", %lld", (long long)d);
                bridge_append(buf, len, &used, num);
                first_dim = false;
            }
            bridge_append(buf, len, &used, "]");
        } else if (v.isIntList()) {
            bridge_append(buf, len, &used, "[");
            bool first_item = true;
            for (int64_t d : v.toIntVector()) {
                std::snprintf(num, sizeof num, first_item ? "%lld" : ", %lld", (long long)d);
                bridge_append(buf, len, &used, num);
                first_item = false;
            }
            bridge_append(buf, len, &used, "]");
        } else if (v.isTensorList()) {
            std::snprintf(num, sizeof num, "TensorList[%zu]", v.toTensorList().size());
            bridge_append(buf, len, &used, num);
        } else if (v.isScalar()) {
            bridge_append(buf, len, &used, "Scalar");
        } else if (v.isNone()) {
            bridge_append(buf, len, &used, "None");
        } else {
            bridge_append(buf, len, &used, v.tagKind().c_str());
        }
    }
}

std::unique_ptr<at::ObserverContext> bridge_start(const at::RecordFunction &fn)
{
    try {
        prof_torch_op_info op;
        op.name = fn.name();
        op.shapes = nullptr;
        op.sequence_nr = fn.seqNr();
        op.fwd_thread = fn.forwardThreadId();
        op.scope = static_cast<uint8_t>(fn.scope());
        op.handle = reinterpret_cast<uintptr_t>(&fn);
        thread_local char shapes[1024];
        if (bridge_hooks->want_shapes) {
            bridge_shapes(fn, shapes, sizeof shapes);
            op.shapes = shapes;
        }
        bridge_hooks->begin(&op);
    } catch (...) {
        // Never let the profiler throw into an operator.
    }
    // No context: the end finds the op by the RecordFunction's address (stable from
    // start to end), which saves an allocation per op.
    return nullptr;
}

void bridge_end(const at::RecordFunction &fn, at::ObserverContext *)
{
    bridge_hooks->end(reinterpret_cast<uintptr_t>(&fn));
}

} // namespace

// at::RecordScope::USER_SCOPE in this torch (record_function scopes, torch.optim's step
// among them): its number depends on the torch the plugin is built against.
extern "C" __attribute__((visibility("default"))) int prof_torch_bridge_user_scope(void)
{
    return static_cast<int>(at::RecordScope::USER_SCOPE);
}

extern "C" __attribute__((visibility("default"))) int
prof_torch_bridge_install(const prof_torch_hooks *hooks, char *err, unsigned err_len)
{
    if (!hooks || hooks->version != PROF_TORCH_HOOKS_VERSION) {
        std::snprintf(err, err_len, "hooks version mismatch");
        return -1;
    }
    bridge_hooks = hooks;
    try {
        // Every scope (torch.profiler's default too): ops, autograd nodes, record_function.
        at::addGlobalCallback(at::RecordFunctionCallback(bridge_start, bridge_end)
                                  .needsInputs(hooks->want_shapes != 0));
    } catch (const std::exception &e) {
        std::snprintf(err, err_len, "at::addGlobalCallback failed: %s", e.what());
        return -1;
    } catch (...) {
        std::snprintf(err, err_len, "at::addGlobalCallback failed");
        return -1;
    }
    return 0;
}
