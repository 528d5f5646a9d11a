/* TEST DOUBLE of the device side (see fake_cudart.c): the exported entry points of the fake
 * libcudart that return cudaError_t (one per row of fake_cudart_api.def), and what they tell a
 * fake libcupti.so.13 through the private link of fake_cupti_link.h: each call's ENTER and
 * EXIT, and the kernels, copies and memsets it puts on a stream. Without a fake CUPTI an entry
 * point costs one atomic load more than its implementation. */
#define _GNU_SOURCE
#include "fake_cudart.h"

#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

static const struct fake_cupti_link *fake_cupti;
/* The call whose device work is being done, for the work's correlation id. */
static __thread struct fake_cupti_call *fake_current_call
    __attribute__((tls_model("initial-exec")));

static uint32_t fake_stream_id(const void *stream)
{
    const struct CUstream_st *s = fake_stream((cudaStream_t)stream);

    return s ? s->id : 0;
}

static const struct fake_cudart_link fake_cudart_self = {FAKE_CUPTI_LINK_VERSION, fake_stream_id};

static void fake_cupti_store(const struct fake_cupti_link *link)
{
    if (link && link->version != FAKE_CUPTI_LINK_VERSION)
        link = NULL;
    /* Release: the link's fields are written before any thread may read them through it. */
    __atomic_store_n(&fake_cupti, link, __ATOMIC_RELEASE);
}

/* The fake CUPTI calls this from its constructor when it loads after us, and with NULL from
 * its destructor. */
FAKE_API const struct fake_cudart_link *fake_cudart_attach_cupti(const struct fake_cupti_link *link)
{
    fake_cupti_store(link);
    return &fake_cudart_self;
}

/* When the fake CUPTI loaded first, attach to it. The real libcupti lacks the symbol. */
__attribute__((constructor)) static void fake_cupti_find(void)
{
    void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    fake_cupti_attach_fn attach;

    if (!lib)
        return;
    *(void **)&attach = dlsym(lib, FAKE_CUPTI_ATTACH_SYMBOL);
    if (attach)
        fake_cupti_store(attach(&fake_cudart_self));
    dlclose(lib);
}

static inline const struct fake_cupti_link *fake_cupti_linked(void)
{
    return __atomic_load_n(&fake_cupti, __ATOMIC_ACQUIRE);
}

void fake_do_resource(enum fake_cupti_resource what, const void *stream)
{
    const struct fake_cupti_link *cupti = fake_cupti_linked();

    if (cupti)
        cupti->resource(what, stream);
}

/* The real runtime destroys its primary context at exit, from a handler registered at its
 * first call: after the profiler's own, so it runs before them. */
static void fake_teardown(void)
{
    fake_do_resource(FAKE_CUPTI_CONTEXT_DESTROY_STARTING, NULL);
}

static void fake_register_teardown(void)
{
    atexit(fake_teardown);
}

/* The primary context is made at the first call that needs one (not a version, error or
 * device query): a CUPTI linked by then hears of it; one linked later (an attach's) does
 * not, as with the real runtime. */
static void fake_context_created(void)
{
    fake_do_resource(FAKE_CUPTI_CONTEXT_CREATED, NULL);
}

static pthread_once_t fake_context_once = PTHREAD_ONCE_INIT;

static int fake_needs_context(uint32_t cbid)
{
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000:
        return 0;
    default:
        return 1;
    }
}

static pthread_once_t fake_teardown_once = PTHREAD_ONCE_INIT;

/* ---- the entry points ---- */

static inline cudaError_t fake_call_exit(const struct fake_cupti_link *cupti,
                                         struct fake_cupti_call *call,
                                         struct fake_cupti_call *outer, cudaError_t result)
{
    if (!cupti)
        return result;
    fake_current_call = outer;
    cupti->api_exit(call, &result, (uint32_t)result);
    return result;
}

/* Each entry point: ENTER (with the kernel's name for launches), the implementation, EXIT. */
#define FAKE_RT(name, cbid, params, args, kernel_name)                                             \
    FAKE_API cudaError_t name params                                                               \
    {                                                                                              \
        struct fake_cupti_call call = {CUPTI_RUNTIME_TRACE_CBID_##cbid, 0, #name, NULL, 0, 0};     \
        struct fake_cupti_call *outer = fake_current_call;                                         \
        const struct fake_cupti_link *cupti = fake_cupti_linked();                                 \
                                                                                                   \
        if (fake_needs_context(CUPTI_RUNTIME_TRACE_CBID_##cbid))                                   \
            pthread_once(&fake_context_once, fake_context_created);                                \
        if (cupti) {                                                                               \
            pthread_once(&fake_teardown_once, fake_register_teardown);                             \
            call.symbol = kernel_name;                                                             \
            cupti->api_enter(&call);                                                               \
            fake_current_call = &call;                                                             \
        }                                                                                          \
        return fake_call_exit(cupti, &call, outer, fake_impl_##name args);                         \
    }
#include "fake_cudart_api.def"
#undef FAKE_RT

/* ---- device work ---- */

static uint8_t fake_memory_kind(const void *ptr, int device_side)
{
    switch (fake_alloc_kind_of(ptr)) {
    case FAKE_DEVICE:
        return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case FAKE_HOST:
        return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case FAKE_MANAGED:
        return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    default:
        return device_side ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
                           : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    }
}

static int fake_memory_is_device(uint8_t kind)
{
    return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
}

void fake_do_kernel(struct CUstream_st *s, const char *name, dim3 grid, dim3 block,
                    size_t dynamic_shared)
{
    const struct fake_cupti_link *cupti = fake_cupti_linked();
    struct fake_cupti_kernel k = {name,
                                  {grid.x, grid.y, grid.z},
                                  {block.x, block.y, block.z},
                                  (uint32_t)dynamic_shared,
                                  s->id,
                                  0,
                                  0};

    k.start_mono = fake_enqueue(s, fake_kernel_ns);
    k.end_mono = k.start_mono + fake_kernel_ns;
    if (cupti)
        cupti->kernel(fake_current_call, &k);
}

void fake_do_copy(struct CUstream_st *s, void *dst, const void *src, uint64_t bytes,
                  enum cudaMemcpyKind kind, int async)
{
    const struct fake_cupti_link *cupti = fake_cupti_linked();
    struct fake_cupti_copy c = {0, 0, 0, (uint8_t)(async != 0), bytes, s->id, 0, 0};
    int src_device, dst_device;
    uint64_t bytes_per_us;

    c.src_kind =
        fake_memory_kind(src, kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice);
    c.dst_kind =
        fake_memory_kind(dst, kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice);
    if (kind == cudaMemcpyDefault) {
        src_device = fake_memory_is_device(c.src_kind);
        dst_device = fake_memory_is_device(c.dst_kind);
    } else {
        src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
        dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    }
    c.copy_kind =
        src_device
            ? (dst_device ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH)
            : (dst_device ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
    /* PCIe-like 25 GB/s across the bus, 1 TB/s on the device, 10 GB/s host to host. */
    bytes_per_us = src_device && dst_device ? 1000000 : (src_device || dst_device) ? 25000 : 10000;
    c.start_mono = fake_enqueue(s, 1000 + bytes * 1000 / bytes_per_us);
    c.end_mono = c.start_mono + 1000 + bytes * 1000 / bytes_per_us;
    if (cupti)
        cupti->copy(fake_current_call, &c);
    if (!async)
        fake_wait_until(c.end_mono);
}

void fake_do_set(struct CUstream_st *s, void *ptr, int value, uint64_t bytes, int async)
{
    const struct fake_cupti_link *cupti = fake_cupti_linked();
    struct fake_cupti_set m = {
        (uint32_t)value, fake_memory_kind(ptr, 1), (uint8_t)(async != 0), bytes, s->id, 0, 0};
    uint64_t duration = 500 + bytes / 1000;

    m.start_mono = fake_enqueue(s, duration);
    m.end_mono = m.start_mono + duration;
    if (cupti)
        cupti->set(fake_current_call, &m);
}
