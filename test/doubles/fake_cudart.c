/* TEST DOUBLE of the device side, for machines without a GPU: a libcudart.so.13 look-alike
 * (same SONAME, same symbol version, built from the real CUDA headers) whose "device" is host
 * memory and a clock. It is not profiler code; tests select it with
 * LD_LIBRARY_PATH=$(BUILD)/test/doubles. This file: memory, copies, streams, events, devices,
 * errors; fake_cudart_launch.c: kernel registration, launches, graphs; fake_cudart_api.c: the
 * exported entry points, which report every call and its device work to the fake libcupti
 * (fake_cupti.c) when one is loaded.
 *
 * Model: allocations are aligned host allocations tracked by kind, so a bad free fails with
 * cudaErrorInvalidValue; copies and memsets really move bytes, at once, then occupy their
 * stream for a time by size; a kernel or graph launch validates its configuration and
 * occupies its stream for FAKE_CUDA_KERNEL_NS (default 20000) without running anything;
 * synchronizing calls (and synchronous copies) wait until that time has passed. The legacy
 * default stream waits for all work, a blocking stream waits for the default stream, a
 * non-blocking stream only for itself. Events record the time at which their stream drains.
 * FAKE_CUDA_DEVICE_COUNT (default 1) sets the device count; 0 makes device calls fail with
 * cudaErrorNoDevice. cudaGetDevice takes no lock: benchmarks use it as the cheapest call
 * there is. Internal work goes through hidden functions only (fake_impl_*), so an interposed
 * wrapper never sees one API call as two. */
#define _GNU_SOURCE
#include "fake_cudart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_EVENT_MAGIC 0x45564e54U
#define FAKE_ALLOC_BUCKETS 4096
#define FAKE_ALIGN 256

struct fake_alloc {
    void *ptr;
    size_t size;
    enum fake_alloc_kind kind;
    struct fake_alloc *next;
};

struct CUevent_st {
    uint32_t magic;
    unsigned int flags;
    int recorded;
    uint64_t time_ns;
};

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_alloc *fake_allocs[FAKE_ALLOC_BUCKETS];
static struct CUstream_st fake_default_stream = {FAKE_STREAM_MAGIC, 0, 0, FAKE_DEFAULT_STREAM_ID};
static uint32_t fake_next_stream_id = FAKE_DEFAULT_STREAM_ID + 6;
static uint64_t fake_device_busy_until_ns;
uint64_t fake_kernel_ns = 20000;
int fake_device_count = 1;

__thread int fake_current_device __attribute__((tls_model("initial-exec")));
__thread cudaError_t fake_last_error __attribute__((tls_model("initial-exec")));

static long fake_env_long(const char *name, long fallback)
{
    const char *text = getenv(name);
    char *end;
    long value;

    if (!text || !*text)
        return fallback;
    value = strtol(text, &end, 10);
    return (*end || value < 0) ? fallback : value;
}

__attribute__((constructor)) static void fake_init(void)
{
    fake_kernel_ns = (uint64_t)fake_env_long("FAKE_CUDA_KERNEL_NS", 20000);
    fake_device_count = (int)fake_env_long("FAKE_CUDA_DEVICE_COUNT", 1);
}

uint64_t fake_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The "device" is busy until deadline: spin like the real runtime's default schedule, but
 * sleep through long waits so that a 2-core machine keeps a core for the profiler. */
void fake_wait_until(uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = fake_now_ns();
        if (now >= deadline_ns)
            return;
        if (deadline_ns - now > 200000) {
            uint64_t nap = deadline_ns - now - 100000;
            struct timespec ts = {(time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull)};
            nanosleep(&ts, NULL);
        }
    }
}

static uint64_t fake_max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

cudaError_t fake_result(cudaError_t err)
{
    if (err != cudaSuccess)
        fake_last_error = err;
    return err;
}

int fake_no_device(void)
{
    return fake_device_count <= 0;
}

/* ---- allocations ---- */

static size_t fake_bucket(const void *ptr)
{
    return (size_t)(((uintptr_t)ptr >> 8) * 0x9e3779b97f4a7c15ull >> 52) % FAKE_ALLOC_BUCKETS;
}

static cudaError_t fake_alloc(void **out, size_t size, enum fake_alloc_kind kind)
{
    struct fake_alloc *node;
    void *ptr;

    if (!out)
        return fake_result(cudaErrorInvalidValue);
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    *out = NULL;
    if (size == 0)
        return cudaSuccess;
    ptr = aligned_alloc(FAKE_ALIGN, (size + FAKE_ALIGN - 1) / FAKE_ALIGN * FAKE_ALIGN);
    node = malloc(sizeof(*node));
    if (!ptr || !node) {
        free(ptr);
        free(node);
        return fake_result(cudaErrorMemoryAllocation);
    }
    node->ptr = ptr;
    node->size = size;
    node->kind = kind;
    pthread_mutex_lock(&fake_lock);
    node->next = fake_allocs[fake_bucket(ptr)];
    fake_allocs[fake_bucket(ptr)] = node;
    pthread_mutex_unlock(&fake_lock);
    *out = ptr;
    return cudaSuccess;
}

/* Frees ptr if it is a live allocation of one of the kinds in kind_mask. */
static cudaError_t fake_release(void *ptr, unsigned kind_mask)
{
    struct fake_alloc **link, *found = NULL;

    if (!ptr)
        return cudaSuccess;
    pthread_mutex_lock(&fake_lock);
    for (link = &fake_allocs[fake_bucket(ptr)]; *link; link = &(*link)->next) {
        if ((*link)->ptr == ptr && (kind_mask & (1u << (*link)->kind))) {
            found = *link;
            *link = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&fake_lock);
    if (!found)
        return fake_result(cudaErrorInvalidValue);
    free(found->ptr);
    free(found);
    return cudaSuccess;
}

static const struct fake_alloc *fake_find_locked(const void *ptr)
{
    const struct fake_alloc *node;

    for (node = fake_allocs[fake_bucket(ptr)]; node; node = node->next)
        if (node->ptr == ptr)
            return node;
    return NULL;
}

enum fake_alloc_kind fake_alloc_kind_of(const void *ptr)
{
    const struct fake_alloc *node;
    enum fake_alloc_kind kind;

    pthread_mutex_lock(&fake_lock);
    node = fake_find_locked(ptr);
    kind = node ? node->kind : FAKE_UNTRACKED;
    pthread_mutex_unlock(&fake_lock);
    return kind;
}

/* ---- streams, events and the device clock ---- */

struct CUstream_st *fake_stream(cudaStream_t stream)
{
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return &fake_default_stream;
    return stream->magic == FAKE_STREAM_MAGIC ? stream : NULL;
}

/* When new work on s may start; the caller holds fake_lock. */
static uint64_t fake_stream_ready_locked(const struct CUstream_st *s)
{
    if (s == &fake_default_stream)
        return fake_device_busy_until_ns;
    if (s->flags & cudaStreamNonBlocking)
        return s->busy_until_ns;
    return fake_max_u64(s->busy_until_ns, fake_default_stream.busy_until_ns);
}

uint64_t fake_enqueue(struct CUstream_st *s, uint64_t duration_ns)
{
    uint64_t start, end;

    pthread_mutex_lock(&fake_lock);
    start = fake_max_u64(fake_now_ns(), fake_stream_ready_locked(s));
    end = start + duration_ns;
    s->busy_until_ns = end;
    fake_device_busy_until_ns = fake_max_u64(fake_device_busy_until_ns, end);
    pthread_mutex_unlock(&fake_lock);
    return start;
}

uint64_t fake_device_idle_at(void)
{
    uint64_t t;

    pthread_mutex_lock(&fake_lock);
    t = fake_device_busy_until_ns;
    pthread_mutex_unlock(&fake_lock);
    return t;
}

static uint64_t fake_stream_idle_at(struct CUstream_st *s)
{
    uint64_t t;

    pthread_mutex_lock(&fake_lock);
    t = fake_stream_ready_locked(s);
    pthread_mutex_unlock(&fake_lock);
    return t;
}

static struct CUevent_st *fake_event(cudaEvent_t event)
{
    return (event && event->magic == FAKE_EVENT_MAGIC) ? event : NULL;
}

/* ---- memory ---- */

cudaError_t fake_impl_cudaMalloc(void **devPtr, size_t size)
{
    return fake_alloc(devPtr, size, FAKE_DEVICE);
}

cudaError_t fake_impl_cudaFree(void *devPtr)
{
    return fake_release(devPtr, 1u << FAKE_DEVICE | 1u << FAKE_MANAGED);
}

cudaError_t fake_impl_cudaMallocHost(void **ptr, size_t size)
{
    return fake_alloc(ptr, size, FAKE_HOST);
}

cudaError_t fake_impl_cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (flags & ~0xfu)
        return fake_result(cudaErrorInvalidValue);
    return fake_alloc(pHost, size, FAKE_HOST);
}

cudaError_t fake_impl_cudaFreeHost(void *ptr)
{
    return fake_release(ptr, 1u << FAKE_HOST);
}

cudaError_t fake_impl_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return fake_result(cudaErrorInvalidValue);
    return fake_alloc(devPtr, size, FAKE_MANAGED);
}

cudaError_t fake_impl_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    if (!fake_stream(hStream))
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_alloc(devPtr, size, FAKE_DEVICE);
}

cudaError_t fake_impl_cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    if (!fake_stream(hStream))
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_release(devPtr, 1u << FAKE_DEVICE | 1u << FAKE_MANAGED);
}

cudaError_t fake_impl_cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return fake_result(cudaErrorInvalidValue);
    *total_bytes = 80ull << 30;
    *free_bytes = 79ull << 30;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                               const void *ptr)
{
    const struct fake_alloc *node;

    if (!attributes)
        return fake_result(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof(*attributes));
    pthread_mutex_lock(&fake_lock);
    node = fake_find_locked(ptr);
    attributes->type = !node                       ? cudaMemoryTypeUnregistered
                       : node->kind == FAKE_HOST   ? cudaMemoryTypeHost
                       : node->kind == FAKE_DEVICE ? cudaMemoryTypeDevice
                                                   : cudaMemoryTypeManaged;
    pthread_mutex_unlock(&fake_lock);
    attributes->device = fake_current_device;
    attributes->devicePointer = (void *)ptr;
    attributes->hostPointer = (void *)ptr;
    return cudaSuccess;
}

/* ---- copies and memsets: the bytes really move, at once ---- */

static cudaError_t fake_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                             struct CUstream_st *s, int async)
{
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if ((unsigned)kind > cudaMemcpyDefault)
        return fake_result(cudaErrorInvalidMemcpyDirection);
    if (count && (!dst || !src))
        return fake_result(cudaErrorInvalidValue);
    if (count)
        memmove(dst, src, count);
    fake_do_copy(s, dst, src, count, kind, async);
    return cudaSuccess;
}

static cudaError_t fake_copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind,
                                struct CUstream_st *s, int async)
{
    size_t row;

    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if ((unsigned)kind > cudaMemcpyDefault)
        return fake_result(cudaErrorInvalidMemcpyDirection);
    if (width > dpitch || width > spitch)
        return fake_result(cudaErrorInvalidPitchValue);
    if (width && height && (!dst || !src))
        return fake_result(cudaErrorInvalidValue);
    for (row = 0; row < height; row++)
        memmove((char *)dst + row * dpitch, (const char *)src + row * spitch, width);
    fake_do_copy(s, dst, src, (uint64_t)width * height, kind, async);
    return cudaSuccess;
}

static cudaError_t fake_peer_check(int dstDevice, int srcDevice)
{
    if (dstDevice < 0 || dstDevice >= fake_device_count || srcDevice < 0 ||
        srcDevice >= fake_device_count)
        return cudaErrorInvalidDevice;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    fake_wait_until(fake_device_idle_at());
    return fake_copy(dst, src, count, kind, &fake_default_stream, 0);
}

cudaError_t fake_impl_cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_copy(dst, src, count, kind, s, 1);
}

cudaError_t fake_impl_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind)
{
    fake_wait_until(fake_device_idle_at());
    return fake_copy_2d(dst, dpitch, src, spitch, width, height, kind, &fake_default_stream, 0);
}

cudaError_t fake_impl_cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_copy_2d(dst, dpitch, src, spitch, width, height, kind, s, 1);
}

cudaError_t fake_impl_cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                     size_t count)
{
    cudaError_t err = fake_peer_check(dstDevice, srcDevice);

    if (err != cudaSuccess)
        return fake_result(err);
    fake_wait_until(fake_device_idle_at());
    return fake_copy(dst, src, count, cudaMemcpyDeviceToDevice, &fake_default_stream, 0);
}

cudaError_t fake_impl_cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                          size_t count, cudaStream_t stream)
{
    cudaError_t err = fake_peer_check(dstDevice, srcDevice);
    struct CUstream_st *s = fake_stream(stream);

    if (err != cudaSuccess)
        return fake_result(err);
    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_copy(dst, src, count, cudaMemcpyDeviceToDevice, s, 1);
}

static cudaError_t fake_memset(void *devPtr, int value, size_t count, struct CUstream_st *s,
                               int async)
{
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if (count && !devPtr)
        return fake_result(cudaErrorInvalidValue);
    memset(devPtr, value, count);
    fake_do_set(s, devPtr, value, count, async);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaMemset(void *devPtr, int value, size_t count)
{
    return fake_memset(devPtr, value, count, &fake_default_stream, 0);
}

cudaError_t fake_impl_cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_memset(devPtr, value, count, s, 1);
}

/* ---- synchronization ---- */

cudaError_t fake_impl_cudaDeviceSynchronize(void)
{
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    fake_wait_until(fake_device_idle_at());
    return cudaSuccess;
}

cudaError_t fake_impl_cudaStreamSynchronize(cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    fake_wait_until(fake_stream_idle_at(s));
    return cudaSuccess;
}

cudaError_t fake_impl_cudaStreamQuery(cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s)
        return fake_result(cudaErrorInvalidResourceHandle);
    return fake_now_ns() >= fake_stream_idle_at(s) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t fake_impl_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags)
{
    struct CUstream_st *s = fake_stream(stream);
    struct CUevent_st *e = fake_event(event);

    (void)flags;
    if (!s || !e)
        return fake_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&fake_lock);
    if (e->recorded)
        s->busy_until_ns = fake_max_u64(s->busy_until_ns, e->time_ns);
    pthread_mutex_unlock(&fake_lock);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaEventSynchronize(cudaEvent_t event)
{
    struct CUevent_st *e = fake_event(event);
    uint64_t t;

    if (!e)
        return fake_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&fake_lock);
    t = e->recorded ? e->time_ns : 0;
    pthread_mutex_unlock(&fake_lock);
    fake_wait_until(t);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaEventQuery(cudaEvent_t event)
{
    struct CUevent_st *e = fake_event(event);
    uint64_t t;

    if (!e)
        return fake_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&fake_lock);
    t = e->recorded ? e->time_ns : 0;
    pthread_mutex_unlock(&fake_lock);
    return fake_now_ns() >= t ? cudaSuccess : cudaErrorNotReady;
}

/* ---- stream and event objects ---- */

static cudaError_t fake_stream_create(cudaStream_t *pStream, unsigned int flags)
{
    struct CUstream_st *s;

    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return fake_result(cudaErrorInvalidValue);
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if (!(s = calloc(1, sizeof(*s))))
        return fake_result(cudaErrorMemoryAllocation);
    s->magic = FAKE_STREAM_MAGIC;
    s->flags = flags;
    s->id = __atomic_fetch_add(&fake_next_stream_id, 1, __ATOMIC_RELAXED);
    *pStream = s;
    fake_do_resource(FAKE_CUPTI_STREAM_CREATED, s);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaStreamCreate(cudaStream_t *pStream)
{
    return fake_stream_create(pStream, cudaStreamDefault);
}

cudaError_t fake_impl_cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return fake_stream_create(pStream, flags);
}

cudaError_t fake_impl_cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                   int priority)
{
    (void)priority;
    return fake_stream_create(pStream, flags);
}

cudaError_t fake_impl_cudaStreamDestroy(cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);

    if (!s || s == &fake_default_stream)
        return fake_result(cudaErrorInvalidResourceHandle);
    fake_do_resource(FAKE_CUPTI_STREAM_DESTROY_STARTING, s);
    s->magic = 0;
    free(s);
    return cudaSuccess;
}

static cudaError_t fake_event_create(cudaEvent_t *event, unsigned int flags)
{
    struct CUevent_st *e;

    if (!event || (flags & ~0xfu))
        return fake_result(cudaErrorInvalidValue);
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if (!(e = calloc(1, sizeof(*e))))
        return fake_result(cudaErrorMemoryAllocation);
    e->magic = FAKE_EVENT_MAGIC;
    e->flags = flags;
    *event = e;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaEventCreate(cudaEvent_t *event)
{
    return fake_event_create(event, cudaEventDefault);
}

cudaError_t fake_impl_cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return fake_event_create(event, flags);
}

cudaError_t fake_impl_cudaEventDestroy(cudaEvent_t event)
{
    struct CUevent_st *e = fake_event(event);

    if (!e)
        return fake_result(cudaErrorInvalidResourceHandle);
    e->magic = 0;
    free(e);
    return cudaSuccess;
}

static cudaError_t fake_event_record(cudaEvent_t event, cudaStream_t stream)
{
    struct CUstream_st *s = fake_stream(stream);
    struct CUevent_st *e = fake_event(event);

    if (!s || !e)
        return fake_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&fake_lock);
    e->time_ns = fake_max_u64(fake_now_ns(), fake_stream_ready_locked(s));
    e->recorded = 1;
    pthread_mutex_unlock(&fake_lock);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return fake_event_record(event, stream);
}

cudaError_t fake_impl_cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags)
{
    (void)flags;
    return fake_event_record(event, stream);
}

cudaError_t fake_impl_cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    struct CUevent_st *a = fake_event(start), *b = fake_event(end);
    uint64_t now = fake_now_ns();
    cudaError_t err = cudaSuccess;

    if (!ms || !a || !b)
        return fake_result(!ms ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&fake_lock);
    if ((a->flags | b->flags) & cudaEventDisableTiming)
        err = cudaErrorInvalidResourceHandle;
    else if (!a->recorded || !b->recorded || now < a->time_ns || now < b->time_ns)
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)((int64_t)(b->time_ns - a->time_ns)) / 1e6);
    pthread_mutex_unlock(&fake_lock);
    return err == cudaErrorNotReady ? err : fake_result(err);
}
