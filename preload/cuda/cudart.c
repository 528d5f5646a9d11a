/* CUDA runtime interposition: wrappers generated from cudart.def, plus the two
 * registration entry points that need their own logic (kernel names). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "clock.h"
#include "layer.h"
#include "cudart.h"
#include "cupti_sub.h"
#include "emit.h"
#include "resolve.h"
#include "stacks.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define PROF_STRIP(...) __VA_ARGS__
#define CUDART_PTR(p) ((uint64_t)(uintptr_t)(p))
/* An output pointer argument, read only when the call succeeded. */
#define CUDART_OUT_PTR(pp) (rc == cudaSuccess && (pp) ? (uint64_t)(uintptr_t) * (pp) : 0)

int cudart_enabled;

static inline uint64_t cudart_pack_dim3(dim3 d)
{
    return (uint64_t)d.x | ((uint64_t)(d.y & 0xffff) << 32) | ((uint64_t)(d.z & 0xffff) << 48);
}

enum cudart_api {
#define PROF_CUDART_FN(name, cat, params, args, argnames, record) CUDART_API_##name,
#include "cudart.def"
#undef PROF_CUDART_FN
    CUDART_API_cudaRegisterFunction,
    CUDART_API_cudaGetKernel,
    CUDART_API_COUNT
};

static struct prof_api_desc cudart_apis[] = {
#define PROF_CUDART_FN(name, cat, params, args, argnames, record)                                  \
    {PROF_API_CUDART_BASE + CUDART_API_##name, PROF_CAT_##cat, 0, #name, argnames},
#include "cudart.def"
#undef PROF_CUDART_FN
    {PROF_API_CUDART_BASE + CUDART_API_cudaRegisterFunction, PROF_CAT_OTHER, 0,
     "__cudaRegisterFunction", "stub"},
    {PROF_API_CUDART_BASE + CUDART_API_cudaGetKernel, PROF_CAT_OTHER, 0, "__cudaGetKernel", "stub"},
};
_Static_assert(sizeof cudart_apis / sizeof cudart_apis[0] == CUDART_API_COUNT, "one row per API");

/* Real entry points, resolved on first use. */
#define PROF_CUDART_FN(name, cat, params, args, argnames, record)                                  \
    typedef cudaError_t(*cudart_##name##_fn) params;                                               \
    static cudart_##name##_fn cudart_real_##name;
#include "cudart.def"
#undef PROF_CUDART_FN

static void *cudart_resolve(const char *name)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, "libcudart");
    prof_tls_busy--;
    if (!p)
        collector_note("cannot find the real %s; the call fails with cudaErrorUnknown", name);
    errno = saved;
    return p;
}

/* The process uses CUDA: note the versions, start GPU activity (CUPTI). */
static int cudart_used;

static void cudart_first_use(void)
{
    cudart_used = 1;
    prof_tls_busy++;
    typedef cudaError_t (*version_fn)(int *);
    version_fn runtime = (version_fn)resolve_symbol("cudaRuntimeGetVersion", "libcudart");
    version_fn driver = (version_fn)resolve_symbol("cudaDriverGetVersion", "libcudart");
    int v = 0;
    char text[16];
    if (runtime && runtime(&v) == cudaSuccess) {
        snprintf(text, sizeof text, "%d", v);
        collector_add_meta("cuda_runtime_version", text);
    }
    v = 0;
    if (driver && driver(&v) == cudaSuccess) {
        snprintf(text, sizeof text, "%d", v); /* 0: no driver */
        collector_add_meta("cuda_driver_version", text);
    }
    prof_tls_busy--;
    cupti_start();
}

/* Whether this call is recorded: not from inside the profiler, not when turned off. */
static inline int cudart_capture_begin(void)
{
    /* Outside a capture window (prof_recording off) the call costs this one branch. */
    if (prof_tls_busy || !cudart_enabled ||
        !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return 0;
    prof_tls_busy = 1;
    return 1;
}

static inline void cudart_capture_end(void)
{
    prof_tls_busy = 0;
}

#define PROF_CUDART_FN(name, cat, params, args, argnames, record)                                  \
    PROF_EXPORT cudaError_t name params                                                            \
    {                                                                                              \
        cudart_##name##_fn real = cudart_real_##name;                                              \
        if (__builtin_expect(real == NULL, 0)) {                                                   \
            real = (cudart_##name##_fn)cudart_resolve(#name);                                      \
            if (!real)                                                                             \
                return cudaErrorUnknown;                                                           \
            cudart_real_##name = real;                                                             \
        }                                                                                          \
        if (__builtin_expect(!cudart_used, 0))                                                     \
            cudart_first_use();                                                                    \
        if (!cudart_capture_begin())                                                               \
            return real args;                                                                      \
        uint64_t prof_t0 = prof_clock_ticks();                                                     \
        cudaError_t rc = real args;                                                                \
        uint64_t prof_t1 = prof_clock_ticks();                                                     \
        int saved_errno = errno;                                                                   \
        uint64_t recorded[] = {PROF_STRIP record};                                                 \
        emit_api_call(PROF_API_CUDART_BASE + CUDART_API_##name, rc, prof_t0, prof_t1, recorded,    \
                      sizeof recorded / sizeof recorded[0]);                                       \
        stacks_after_call(PROF_API_CUDART_BASE + CUDART_API_##name, prof_t0, prof_t1);             \
        cudart_capture_end();                                                                      \
        errno = saved_errno;                                                                       \
        return rc;                                                                                 \
    }
#include "cudart.def"
#undef PROF_CUDART_FN

/* Hand-written: records the kernel name nvcc registers for a host stub, so launches
 * (which carry only the stub's address) can be named. */
typedef void (*cudart_register_function_fn)(void **, const char *, char *, const char *, int,
                                            uint3 *, uint3 *, dim3 *, dim3 *, int *);
static cudart_register_function_fn cudart_real_register_function;

PROF_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                        const char *deviceName, int thread_limit, uint3 *tid,
                                        uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    cudart_register_function_fn real = cudart_real_register_function;
    if (!real) {
        real = (cudart_register_function_fn)cudart_resolve("__cudaRegisterFunction");
        if (!real)
            return;
        cudart_real_register_function = real;
    }
    if (!cudart_capture_begin()) {
        real(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim,
             wSize);
        return;
    }
    uint64_t start = prof_clock_ticks();
    real(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
    uint64_t end = prof_clock_ticks();
    int saved_errno = errno;
    const char *name = deviceName ? deviceName : deviceFun;
    if (name)
        collector_add_symbol(PROF_SYMBOL_KERNEL_NAME, CUDART_PTR(hostFun), collector_intern(name),
                             0);
    uint64_t recorded[] = {CUDART_PTR(hostFun)};
    emit_api_call(PROF_API_CUDART_BASE + CUDART_API_cudaRegisterFunction, 0, start, end, recorded,
                  1);
    cudart_capture_end();
    errno = saved_errno;
}

/* Hand-written: CUDA 13's <<<>>> launches name a cudaKernel_t handle obtained here from
 * the host stub; recording the pair lets a launch be named. */
typedef cudaError_t (*cudart_get_kernel_fn)(cudaKernel_t *, const void *);
static cudart_get_kernel_fn cudart_real_get_kernel;

PROF_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    cudart_get_kernel_fn real = cudart_real_get_kernel;
    if (!real) {
        real = (cudart_get_kernel_fn)cudart_resolve("__cudaGetKernel");
        if (!real)
            return cudaErrorUnknown;
        cudart_real_get_kernel = real;
    }
    if (!cudart_capture_begin())
        return real(kernel, hostFun);
    uint64_t start = prof_clock_ticks();
    cudaError_t rc = real(kernel, hostFun);
    uint64_t end = prof_clock_ticks();
    int saved_errno = errno;
    if (rc == cudaSuccess && kernel)
        collector_add_symbol(PROF_SYMBOL_KERNEL_ALIAS, CUDART_PTR(*kernel), 0, CUDART_PTR(hostFun));
    uint64_t recorded[] = {CUDART_PTR(hostFun)};
    emit_api_call(PROF_API_CUDART_BASE + CUDART_API_cudaGetKernel, rc, start, end, recorded, 1);
    cudart_capture_end();
    errno = saved_errno;
    return rc;
}

static void cudart_init(int enabled)
{
    cudart_enabled = enabled;
    for (size_t i = 0; i < CUDART_API_COUNT; i++) {
        /* With PROF_STACKS: where the program synchronizes, allocates or frees, and copies
         * that block (the ones without Async in the name). */
        uint8_t cat = cudart_apis[i].category;
        if (cat == PROF_CAT_SYNC || cat == PROF_CAT_MEMORY ||
            (cat == PROF_CAT_COPY && !strstr(cudart_apis[i].name, "Async")))
            stacks_want_api(cudart_apis[i].id);
    }
    collector_add_api_table(cudart_apis, CUDART_API_COUNT);
}

const struct preload_layer cudart_layer = {
    .name = "cudart",
    .enable = SETTING_PROF_CUDART,
    .setup = cudart_init,
};
