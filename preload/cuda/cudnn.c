/* cuDNN interposition: wrappers generated from cudnn.def. They wrap the exports of the
 * front library libcudnn.so.9, which loads its sub-libraries (libcudnn_cnn, _ops, ...)
 * itself and calls them through its own pointers, not through ours. */
#include <errno.h>
#include <stdint.h>

/* The parts of <cudnn.h>, which preload/cudnn.h would shadow. */
#include <cudnn_adv.h>
#include <cudnn_cnn.h>
#include <cudnn_graph.h>
#include <cudnn_ops.h>

#include "clock.h"
#include "layer.h"
#include "cublas_wrap.h"
#include "cudnn_wrap.h"
#include "emit.h"
#include "resolve.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define PROF_STRIP(...) __VA_ARGS__
#define CUDNN_PTR(p) ((uint64_t)(uintptr_t)(p))
/* An output pointer argument, read only when the call succeeded. */
#define CUDNN_OUT_PTR(pp) (rc == CUDNN_STATUS_SUCCESS && (pp) ? (uint64_t)(uintptr_t) * (pp) : 0)
#define CUDNN_STREAM(handle) cudnn_stream_of(handle, rc)
/* The front library only: its sub-libraries export the same names. */
#define CUDNN_LIB "libcudnn.so"

static int cudnn_enabled;

enum cudnn_api {
#define PROF_CUDNN_FN(name, cat, params, args, argnames, record) CUDNN_API_##name,
#include "cudnn.def"
#undef PROF_CUDNN_FN
    CUDNN_API_COUNT
};
_Static_assert(CUDNN_API_COUNT <= 256, "cuDNN ids stay below the next library's base");

/* Every row names at least one argument, so appending ",nested" keeps the list well formed. */
#define PROF_CUDNN_FN(name, cat, params, args, argnames, record)                                   \
    _Static_assert(sizeof(argnames) > 1, #name " records an argument");
#include "cudnn.def"
#undef PROF_CUDNN_FN

static struct prof_api_desc cudnn_apis[] = {
#define PROF_CUDNN_FN(name, cat, params, args, argnames, record)                                   \
    {PROF_API_CUDNN_BASE + CUDNN_API_##name, PROF_CAT_##cat, 0, #name, argnames ",nested"},
#include "cudnn.def"
#undef PROF_CUDNN_FN
};
_Static_assert(sizeof cudnn_apis / sizeof cudnn_apis[0] == CUDNN_API_COUNT, "one row per API");

/* Real entry points, resolved on first use. */
#define PROF_CUDNN_FN(name, cat, params, args, argnames, record)                                   \
    typedef cudnnStatus_t(*cudnn_##name##_fn) params;                                              \
    static cudnn_##name##_fn cudnn_real_##name;
#include "cudnn.def"
#undef PROF_CUDNN_FN

static void *cudnn_resolve(const char *name)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, CUDNN_LIB);
    prof_tls_busy--;
    if (!p)
        collector_note("cannot find the real %s; the call fails with CUDNN_STATUS_NOT_INITIALIZED",
                       name);
    errno = saved;
    return p;
}

/* Whether this call is recorded: not from inside the profiler, not when turned off. */
static inline int cudnn_capture(void)
{
    return cudnn_enabled && !prof_tls_busy &&
           atomic_load_explicit(&prof_recording, memory_order_relaxed);
}

/* The stream a successful call ran on: the handle's, asked from cuDNN itself. */
typedef cudnnStatus_t (*cudnn_get_stream_fn)(cudnnHandle_t, cudaStream_t *);
static cudnn_get_stream_fn cudnn_real_get_stream;

static uint64_t cudnn_stream_of(cudnnHandle_t handle, cudnnStatus_t rc)
{
    if (rc != CUDNN_STATUS_SUCCESS || !handle)
        return 0;
    if (!cudnn_real_get_stream) {
        cudnn_real_get_stream = (cudnn_get_stream_fn)resolve_symbol("cudnnGetStream", CUDNN_LIB);
        if (!cudnn_real_get_stream)
            return 0;
    }
    cudaStream_t stream = NULL;
    if (cudnn_real_get_stream(handle, &stream) != CUDNN_STATUS_SUCCESS)
        return 0;
    return CUDNN_PTR(stream);
}

#define PROF_CUDNN_FN(name, cat, params, args, argnames, record)                                   \
    PROF_EXPORT cudnnStatus_t name params                                                          \
    {                                                                                              \
        cudnn_##name##_fn real = cudnn_real_##name;                                                \
        if (__builtin_expect(real == NULL, 0)) {                                                   \
            real = (cudnn_##name##_fn)cudnn_resolve(#name);                                        \
            if (!real)                                                                             \
                return CUDNN_STATUS_NOT_INITIALIZED;                                               \
            cudnn_real_##name = real;                                                              \
        }                                                                                          \
        if (!cudnn_capture())                                                                      \
            return real args;                                                                      \
        unsigned prof_depth = prof_tls_lib_depth++;                                                \
        uint64_t prof_t0 = prof_clock_ticks();                                                     \
        cudnnStatus_t rc = real args;                                                              \
        uint64_t prof_t1 = prof_clock_ticks();                                                     \
        prof_tls_lib_depth = prof_depth;                                                           \
        int saved_errno = errno;                                                                   \
        prof_tls_busy++;                                                                           \
        uint64_t recorded[] = {PROF_STRIP record, prof_depth};                                     \
        emit_api_call(PROF_API_CUDNN_BASE + CUDNN_API_##name, rc, prof_t0, prof_t1, recorded,      \
                      sizeof recorded / sizeof recorded[0]);                                       \
        prof_tls_busy--;                                                                           \
        errno = saved_errno;                                                                       \
        return rc;                                                                                 \
    }
#include "cudnn.def"
#undef PROF_CUDNN_FN

static void cudnn_init(int enabled)
{
    cudnn_enabled = enabled;
    collector_add_api_table(cudnn_apis, CUDNN_API_COUNT);
}

const struct preload_layer cudnn_layer = {
    .name = "cudnn",
    .enable = SETTING_PROF_CUDNN,
    .setup = cudnn_init,
};
