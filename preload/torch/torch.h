/* The PyTorch layer: operator and record_function spans from libtorch's RecordFunction.
 * libprof.so stays plain C: a small C++ plugin (torch_bridge.cpp, built on demand against
 * the torch the process loaded and cached) registers one global callback whose start and
 * end call the hooks below; everything else (stack, clock, names, records) is here. */
#ifndef PROF_TORCH_H
#define PROF_TORCH_H

#include <stdint.h>

/* What the plugin tells us when an operator or scope begins. */
struct prof_torch_op_info {
    const char *name;    /* RecordFunction::name(); may be freed after the op ends */
    const char *shapes;  /* input shapes and dtypes as text, or NULL */
    int64_t sequence_nr; /* -1: none */
    uint64_t fwd_thread; /* backward ops: torch's id of the forward thread; else 0 */
    uint8_t scope;       /* at::RecordScope */
    uint64_t handle;     /* the RecordFunction's address: end is called with it */
};

#define PROF_TORCH_HOOKS_VERSION 2

/* Passed to prof_torch_bridge_install; lives as long as the process. */
struct prof_torch_hooks {
    uint32_t version; /* PROF_TORCH_HOOKS_VERSION */
    uint32_t want_shapes;
    /* Called when an op starts; returns 0 when it is not recorded. */
    uint64_t (*begin)(const struct prof_torch_op_info *op);
    /* Called when every op ends (recorded or not) with its handle, on the thread that
     * ends it: no per-op context object, so nothing is allocated per op. */
    void (*end)(uint64_t handle);
};

/* The plugin's one entry point: 0 when the callback is registered, else -1 (and a
 * message in err). */
typedef int (*prof_torch_install_fn)(const struct prof_torch_hooks *hooks, char *err,
                                     unsigned err_len);
#define PROF_TORCH_INSTALL_SYMBOL "prof_torch_bridge_install"

#endif
