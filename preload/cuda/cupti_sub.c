/* The CUPTI subscriber. Activity records (kernels, memcpy, memset) arrive in buffers that
 * CUPTI hands back on one of its threads; they are converted to our records and queued
 * (under a mutex: never on an application thread's hot path) for the collector. The
 * callback API reports every runtime and driver call on the calling thread, where its
 * correlation id, times and the running Python function are recorded in the thread's
 * ring. Failures (no driver: 999; another subscriber: Nsight, Kineto) turn this part
 * off with one line on stderr; the rest of profiling goes on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "clock.h"
#include "layer.h"
#include "collector.h"
#include "cupti_sub.h"
#include "emit.h"
#include "resolve.h"
#include "settings.h"
#include "window.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define CUPTI_BUFFER_BYTES (4u << 20)
#define CUPTI_MAX_CBID 4096

int cupti_started;
static int cupti_enabled;
static pthread_mutex_t cupti_start_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle cupti_subscriber;

static struct {
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*EnableDomain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
    CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                  CUpti_CallbackId);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*GetVersion)(uint32_t *);
    CUptiResult (*GetDeviceId)(CUcontext, uint32_t *);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
} cupti;

/* GPU records converted from CUPTI buffers, waiting for the collector. */
static pthread_mutex_t cupti_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *cupti_queue;
static size_t cupti_queue_used, cupti_queue_cap;
static uint64_t cupti_dropped;

/* Which (domain, cbid) names were written already. */
static _Atomic uint8_t cupti_named[3][CUPTI_MAX_CBID / 8];

/* Per thread: the runtime call in progress, so the driver calls it makes are not
 * recorded twice. */
static __thread uint32_t cupti_runtime_depth PROF_TLS;
static __thread uint64_t cupti_call_start[8] PROF_TLS;
static __thread uint32_t cupti_call_depth PROF_TLS;

static const char *cupti_error(CUptiResult r)
{
    const char *s = NULL;
    if (cupti.GetResultString)
        cupti.GetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static uint64_t CUPTIAPI cupti_timestamp(void)
{
    return clock_monotonic_ns(); /* GPU records then share CLOCK_MONOTONIC with our CLOCK pairs */
}

/* Caller holds cupti_queue_lock. */
static void cupti_queue_put(const void *rec, size_t len)
{
    if (cupti_queue_used + len > cupti_queue_cap) {
        size_t cap = cupti_queue_cap ? cupti_queue_cap * 2 : 1u << 20;
        while (cap < cupti_queue_used + len)
            cap *= 2;
        uint8_t *q = realloc(cupti_queue, cap);
        if (!q) {
            cupti_dropped++;
            return;
        }
        cupti_queue = q;
        cupti_queue_cap = cap;
    }
    memcpy(cupti_queue + cupti_queue_used, rec, len);
    cupti_queue_used += len;
}

/* Kernel names: CUPTI hands the same name pointer for every launch of a function, so the
 * string id is looked up by pointer first (under cupti_queue_lock). */
#define CUPTI_NAME_CACHE 1024
static struct {
    const char *name;
    uint32_t sid;
} cupti_name_cache[CUPTI_NAME_CACHE];

static uint32_t cupti_kernel_name(const char *name)
{
    if (!name)
        name = "(unnamed kernel)";
    size_t slot = ((uintptr_t)name >> 4) % CUPTI_NAME_CACHE;
    if (cupti_name_cache[slot].name == name)
        return cupti_name_cache[slot].sid;
    uint32_t sid = collector_intern(name);
    cupti_name_cache[slot].name = name;
    cupti_name_cache[slot].sid = sid;
    return sid;
}

static uint64_t cupti_pack_dim3(int32_t x, int32_t y, int32_t z)
{
    return (uint64_t)(uint32_t)x | ((uint64_t)(y & 0xffff) << 32) | ((uint64_t)(z & 0xffff) << 48);
}

/* Capture windows (window.c): the correlation ids of the calls made while recording, as
 * intervals (ids only grow). GPU work whose call was made outside every interval is
 * dropped, as the call itself was. Past CUPTI_WINDOWS intervals everything is kept. */
#define CUPTI_WINDOWS 256
static _Atomic uint32_t cupti_win_lo[CUPTI_WINDOWS], cupti_win_hi[CUPTI_WINDOWS];
static _Atomic int cupti_win_count; /* intervals begun */
static _Atomic int cupti_win_open;  /* the last one still grows */
static pthread_mutex_t cupti_win_lock = PTHREAD_MUTEX_INITIALIZER;

static void cupti_window_note(uint32_t correlation)
{
    if (!atomic_load_explicit(&cupti_win_open, memory_order_acquire)) {
        pthread_mutex_lock(&cupti_win_lock);
        int n = atomic_load(&cupti_win_count);
        if (!atomic_load(&cupti_win_open) && n < CUPTI_WINDOWS) {
            atomic_store(&cupti_win_lo[n], correlation);
            atomic_store(&cupti_win_hi[n], correlation);
            atomic_store(&cupti_win_count, n + 1);
        }
        atomic_store_explicit(&cupti_win_open, 1, memory_order_release);
        pthread_mutex_unlock(&cupti_win_lock);
    }
    int n = atomic_load(&cupti_win_count);
    if (n == 0 || n > CUPTI_WINDOWS)
        return;
    _Atomic uint32_t *hi = &cupti_win_hi[n - 1];
    uint32_t cur = atomic_load_explicit(hi, memory_order_relaxed);
    while (cur < correlation && !atomic_compare_exchange_weak(hi, &cur, correlation))
        ;
}

static int cupti_window_has(uint32_t correlation)
{
    int n = atomic_load(&cupti_win_count);
    if (n >= CUPTI_WINDOWS)
        return 1;
    for (int i = 0; i < n; i++)
        if (correlation >= atomic_load(&cupti_win_lo[i]) &&
            correlation <= atomic_load(&cupti_win_hi[i]))
            return 1;
    return 0;
}

static void cupti_convert(CUpti_Activity *a)
{
    if (window_active) {
        uint32_t correlation =
            a->kind == CUPTI_ACTIVITY_KIND_KERNEL ||
                    a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                ? ((CUpti_ActivityKernel10 *)a)->correlationId
            : a->kind == CUPTI_ACTIVITY_KIND_MEMCPY ? ((CUpti_ActivityMemcpy6 *)a)->correlationId
            : a->kind == CUPTI_ACTIVITY_KIND_MEMSET ? ((CUpti_ActivityMemset4 *)a)->correlationId
                                                    : 0;
        if (correlation && !cupti_window_has(correlation))
            return;
    }
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)a;
        struct prof_rec_gpu_kernel r;
        memset(&r, 0, sizeof r);
        r.h.type = PROF_REC_GPU_KERNEL;
        r.h.size = sizeof r;
        r.correlation = k->correlationId;
        r.start_ns = k->start;
        r.end_ns = k->end;
        r.name_sid = cupti_kernel_name(k->name);
        r.device = k->deviceId;
        r.context = k->contextId;
        r.stream = k->streamId;
        r.grid = cupti_pack_dim3(k->gridX, k->gridY, k->gridZ);
        r.block = cupti_pack_dim3(k->blockX, k->blockY, k->blockZ);
        r.registers = k->registersPerThread;
        r.shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
        cupti_queue_put(&r, sizeof r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)a;
        struct prof_rec_gpu_memcpy r;
        memset(&r, 0, sizeof r);
        r.h.type = PROF_REC_GPU_MEMCPY;
        r.h.size = sizeof r;
        r.correlation = m->correlationId;
        r.start_ns = m->start;
        r.end_ns = m->end;
        r.bytes = m->bytes;
        r.copy_kind = m->copyKind;
        r.src_kind = m->srcKind;
        r.dst_kind = m->dstKind;
        r.flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? PROF_GPU_COPY_ASYNC : 0;
        r.device = m->deviceId;
        r.stream = m->streamId;
        cupti_queue_put(&r, sizeof r);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)a;
        struct prof_rec_gpu_memset r;
        memset(&r, 0, sizeof r);
        r.h.type = PROF_REC_GPU_MEMSET;
        r.h.size = sizeof r;
        r.correlation = m->correlationId;
        r.start_ns = m->start;
        r.end_ns = m->end;
        r.bytes = m->bytes;
        r.value = m->value;
        r.device = m->deviceId;
        r.stream = m->streamId;
        cupti_queue_put(&r, sizeof r);
        break;
    }
    default:
        break;
    }
}

/* Spent buffers are kept for reuse: fresh 4 MiB each time cost page faults per kernel. */
#define CUPTI_SPARE_BUFFERS 8
static uint8_t *cupti_spare[CUPTI_SPARE_BUFFERS];
static int cupti_spare_count;

static void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    pthread_mutex_lock(&cupti_queue_lock);
    *buffer = cupti_spare_count ? cupti_spare[--cupti_spare_count] : NULL;
    pthread_mutex_unlock(&cupti_queue_lock);
    /* CUPTI wants 8-byte alignment; aligned_alloc gives it. */
    if (!*buffer)
        *buffer = aligned_alloc(8, CUPTI_BUFFER_BYTES);
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)size;
    prof_tls_busy++;
    CUpti_Activity *a = NULL;
    pthread_mutex_lock(&cupti_queue_lock); /* once per buffer, not per record */
    while (cupti.ActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
        cupti_convert(a);
    if (cupti_spare_count < CUPTI_SPARE_BUFFERS) {
        cupti_spare[cupti_spare_count++] = buffer;
        buffer = NULL;
    }
    pthread_mutex_unlock(&cupti_queue_lock);
    size_t dropped = 0;
    if (cupti.ActivityGetNumDroppedRecords &&
        cupti.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        pthread_mutex_lock(&cupti_queue_lock);
        cupti_dropped += dropped;
        pthread_mutex_unlock(&cupti_queue_lock);
    }
    free(buffer);
    prof_tls_busy--;
}

static void cupti_name_once(uint16_t domain, uint32_t cbid)
{
    if (domain > 2 || cbid >= CUPTI_MAX_CBID)
        return;
    uint8_t bit = (uint8_t)(1u << (cbid & 7));
    if (atomic_fetch_or(&cupti_named[domain][cbid / 8], bit) & bit)
        return;
    const char *name = NULL;
    if (cupti.GetCallbackName(domain == PROF_GPU_API_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                             : CUPTI_CB_DOMAIN_DRIVER_API,
                              cbid, &name) != CUPTI_SUCCESS ||
        !name)
        name = "(unknown CUDA call)";
    uint8_t rec[256];
    struct prof_rec_gpu_api_name *h = (struct prof_rec_gpu_api_name *)rec;
    size_t n = strlen(name);
    if (n > sizeof rec - sizeof *h - 1)
        n = sizeof rec - sizeof *h - 1;
    memset(rec, 0, sizeof rec);
    h->h.type = PROF_REC_GPU_API_NAME;
    h->h.size = (uint16_t)prof_record_align((uint32_t)(sizeof *h + n + 1));
    h->domain = domain;
    h->cbid = (uint16_t)cbid;
    memcpy(rec + sizeof *h, name, n);
    collector_add_process_record(rec, h->h.size);
}

static void cupti_api_record(uint16_t domain, uint32_t cbid, uint32_t correlation, uint64_t start,
                             uint64_t end)
{
    if (!atomic_load_explicit(&prof_recording, memory_order_relaxed)) {
        if (window_active)
            atomic_store_explicit(&cupti_win_open, 0, memory_order_release);
        return;
    }
    struct prof_thread *t = emit_thread();
    if (!t)
        return;
    if (window_active)
        cupti_window_note(correlation);
    cupti_name_once(domain, cbid);
    struct prof_rec_gpu_api *r = ring_reserve(&t->ring, sizeof *r);
    if (!r)
        return;
    r->h.type = PROF_REC_GPU_API;
    r->h.size = sizeof *r;
    r->domain = domain;
    r->cbid = (uint16_t)cbid;
    r->correlation = correlation;
    r->py_node = prof_current_py_node ? prof_current_py_node() : 0;
    r->start = start;
    r->end = end;
    ring_commit(&t->ring);
}

static _Atomic uint64_t cupti_described; /* the devices given a GPU_DEVICE record */

/* A GPU_DEVICE record for device dev, from the driver API (which the process has loaded by
 * then; nothing here creates a context). Once per device. */
static void cupti_describe_ordinal(uint32_t dev)
{
    if (dev >= 64 || atomic_fetch_or(&cupti_described, 1ull << dev) & (1ull << dev))
        return;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda)
        return;
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(cuda, "cuDeviceGet");
    int (*name)(char *, int, int) = (int (*)(char *, int, int))dlsym(cuda, "cuDeviceGetName");
    int (*mem)(size_t *, int) = (int (*)(size_t *, int))dlsym(cuda, "cuDeviceTotalMem_v2");
    int (*attr)(int *, int, int) = (int (*)(int *, int, int))dlsym(cuda, "cuDeviceGetAttribute");
    int handle = 0;
    if (!get || !name || !mem || !attr || get(&handle, (int)dev) != 0) {
        dlclose(cuda);
        return;
    }
    uint8_t rec[sizeof(struct prof_rec_gpu_device) + 256];
    memset(rec, 0, sizeof rec);
    struct prof_rec_gpu_device *d = (struct prof_rec_gpu_device *)rec;
    char text[256] = "";
    name(text, sizeof text - 1, handle);
    size_t bytes = 0;
    mem(&bytes, handle);
    int v = 0;
    d->device = dev;
    d->global_memory_bytes = bytes;
    d->sm_count = attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, handle) == 0 ? (uint32_t)v : 0;
    d->core_clock_khz = attr(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, handle) == 0 ? (uint32_t)v : 0;
    d->memory_clock_khz =
        attr(&v, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, handle) == 0 ? (uint32_t)v : 0;
    d->compute_major =
        attr(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle) == 0 ? (uint16_t)v : 0;
    d->compute_minor =
        attr(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle) == 0 ? (uint16_t)v : 0;
    size_t n = strlen(text);
    memcpy(rec + sizeof *d, text, n + 1);
    d->h.type = PROF_REC_GPU_DEVICE;
    d->h.size = (uint16_t)prof_record_align((uint32_t)(sizeof *d + n + 1));
    collector_add_process_record(rec, d->h.size);
    dlclose(cuda);
}

/* The device of a new context. */
static void cupti_describe_device(CUcontext ctx)
{
    uint32_t dev = 0;
    if (cupti.GetDeviceId && cupti.GetDeviceId(ctx, &dev) == CUPTI_SUCCESS)
        cupti_describe_ordinal(dev);
}

void cupti_describe_devices(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda)
        return;
    int (*count)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
    int n = 0;
    if (count && count(&n) == 0)
        for (int i = 0; i < n && i < 64; i++)
            cupti_describe_ordinal((uint32_t)i);
    dlclose(cuda);
}

static void CUPTIAPI cupti_callback(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        /* Before a context goes, its activity must be out: flush. */
        const CUpti_ResourceData *rd = data;
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
            cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && rd)
            cupti_describe_device(rd->context);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData *cb = data;
    int runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (cupti_call_depth < 8)
            cupti_call_start[cupti_call_depth] = prof_clock_ticks();
        cupti_call_depth++;
        cupti_runtime_depth += runtime;
        return;
    }
    uint64_t end = prof_clock_ticks();
    if (cupti_call_depth)
        cupti_call_depth--;
    cupti_runtime_depth -= runtime && cupti_runtime_depth;
    /* A driver call made by a runtime call shares its correlation id: record the
     * runtime call only. Driver calls from code with its own runtime (cuBLAS, cuDNN,
     * statically linked programs) are the only sight of those launches. */
    if (!runtime && cupti_runtime_depth)
        return;
    uint64_t start = cupti_call_depth < 8 ? cupti_call_start[cupti_call_depth] : end;
    cupti_api_record(runtime ? PROF_GPU_API_RUNTIME : PROF_GPU_API_DRIVER, cbid, cb->correlationId,
                     start, end);
}

/* The collector's source: queued GPU records, and a periodic flush of CUPTI buffers. */
static void cupti_drain(int fresh, int last)
{
    (void)fresh; /* GPU records belong to the process that got them: nothing to repeat */
    static unsigned passes;
    if (collector_drain_in_signal()) { /* no CUPTI call, no waiting: what is queued */
        if (pthread_mutex_trylock(&cupti_queue_lock) != 0)
            return;
    } else {
        if (cupti_started > 0 && last)
            cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* exit, _exit, exec */
        else if (cupti_started > 0 && ++passes % 10 == 0)
            cupti.ActivityFlushAll(0);
        pthread_mutex_lock(&cupti_queue_lock);
    }
    if (cupti_queue_used)
        collector_write(cupti_queue, cupti_queue_used);
    cupti_queue_used = 0;
    uint64_t dropped = 0;
    if (!collector_drain_in_signal()) { /* collector_note formats and allocates */
        dropped = cupti_dropped;
        cupti_dropped = 0;
    }
    pthread_mutex_unlock(&cupti_queue_lock);
    if (dropped)
        collector_note("CUPTI dropped %llu activity records", (unsigned long long)dropped);
}

static void *cupti_open_in(const char *dir)
{
    static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    char path[2 * PATH_MAX];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static int cupti_find_cudart_dir(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    char p[PATH_MAX];
    resolve_object_name(info->dlpi_name, p, sizeof p);
    const char *base = strrchr(p, '/');
    if (base && strncmp(base + 1, "libcudart.so", 12) == 0) {
        snprintf(arg, PATH_MAX, "%.*s", (int)(base - p), p);
        return 1;
    }
    return 0;
}

/* PROF_CUPTI_PATH, one already loaded, beside the loaded libcudart, CUDA_HOME, /usr/local/cuda. */
static void *cupti_open(void)
{
    const char *path = settings_string(SETTING_PROF_CUPTI_PATH);
    if (path[0])
        return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    static const char *const loaded[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (int i = 0; i < 3; i++) {
        void *h = dlopen(loaded[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    char dir[PATH_MAX] = "";
    void *h = NULL;
    if (dl_iterate_phdr(cupti_find_cudart_dir, dir) && dir[0]) {
        h = cupti_open_in(dir);
        /* pip wheels: .../nvidia/cuda_runtime/lib beside .../nvidia/cuda_cupti/lib */
        char sibling[PATH_MAX + 32];
        snprintf(sibling, sizeof sibling, "%s/../../cuda_cupti/lib", dir);
        if (!h)
            h = cupti_open_in(sibling);
    }
    const char *home = settings_env("CUDA_HOME");
    char buf[PATH_MAX];
    if (!h && home && *home) {
        snprintf(buf, sizeof buf, "%s/lib64", home);
        h = cupti_open_in(buf);
        snprintf(buf, sizeof buf, "%s/extras/CUPTI/lib64", home);
        if (!h)
            h = cupti_open_in(buf);
    }
    if (!h)
        h = cupti_open_in("/usr/local/cuda/lib64");
    if (!h)
        h = cupti_open_in("/usr/local/cuda/extras/CUPTI/lib64");
    return h;
}

static int cupti_bind(void *h)
{
#define CUPTI_BIND(field, name)                                                                    \
    if (!(*(void **)&cupti.field = dlsym(h, name)))                                                \
        return -1;
    CUPTI_BIND(Subscribe, "cuptiSubscribe")
    CUPTI_BIND(EnableDomain, "cuptiEnableDomain")
    CUPTI_BIND(EnableCallback, "cuptiEnableCallback")
    CUPTI_BIND(GetCallbackName, "cuptiGetCallbackName")
    CUPTI_BIND(ActivityEnable, "cuptiActivityEnable")
    CUPTI_BIND(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks")
    CUPTI_BIND(ActivityRegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback")
    CUPTI_BIND(ActivityFlushAll, "cuptiActivityFlushAll")
    CUPTI_BIND(ActivityGetNextRecord, "cuptiActivityGetNextRecord")
    CUPTI_BIND(GetVersion, "cuptiGetVersion")
    CUPTI_BIND(GetResultString, "cuptiGetResultString")
#undef CUPTI_BIND
    *(void **)&cupti.ActivityGetNumDroppedRecords = dlsym(h, "cuptiActivityGetNumDroppedRecords");
    *(void **)&cupti.GetDeviceId = dlsym(h, "cuptiGetDeviceId");
    return 0;
}

/* Only the calls that put work on the GPU (launches, copies, sets) get callbacks: they
 * are what correlation ids tie kernels to; everything else (cudaGetDevice,
 * cudaGetLastError, which torch calls constantly) costs nothing. Chosen by name, so new
 * entry points of a newer CUDA are included. */
static void cupti_enable_launch_callbacks(CUpti_CallbackDomain domain, uint32_t count)
{
    static const char *const work[] = {"Launch", "Memcpy", "Memset", "memcpy", "memset"};
    for (uint32_t cbid = 1; cbid < count && cbid < CUPTI_MAX_CBID; cbid++) {
        const char *name = NULL;
        if (cupti.GetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
            continue;
        for (size_t i = 0; i < sizeof work / sizeof work[0]; i++) {
            if (strstr(name, work[i])) {
                cupti.EnableCallback(1, cupti_subscriber, domain, cbid);
                break;
            }
        }
    }
}

static int cupti_subscribe(void)
{
    void *h = cupti_open();
    if (!h) {
        collector_note("libcupti not found (set PROF_CUPTI_PATH); GPU activity is not recorded");
        return -1;
    }
    if (cupti_bind(h) != 0) {
        collector_note("libcupti lacks functions we need; GPU activity is not recorded");
        return -1;
    }
    uint32_t version = 0;
    cupti.GetVersion(&version);
    if (version < CUPTI_API_VERSION / 1000) {
        collector_note("libcupti API version %u is older than %u; GPU activity is not recorded",
                       version, (unsigned)(CUPTI_API_VERSION / 1000));
        return -1;
    }
    char version_text[16];
    snprintf(version_text, sizeof version_text, "%u", version);
    collector_add_meta("cupti.api_version", version_text);
    /* The timestamp callback counts only if registered before any activity kind. */
    CUptiResult r = cupti.ActivityRegisterTimestampCallback(cupti_timestamp);
    if (r == CUPTI_ERROR_UNKNOWN) {
        collector_note("CUPTI does not start (CUPTI_ERROR_UNKNOWN: no GPU driver?); GPU activity "
                       "is not recorded");
        return -1;
    }
    if (r != CUPTI_SUCCESS)
        collector_note("CUPTI keeps its own clock (%s); GPU times are CLOCK_REALTIME",
                       cupti_error(r));
    else
        collector_add_meta("cupti.clock", "monotonic");
    r = cupti.Subscribe(&cupti_subscriber, cupti_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            collector_note("another CUDA profiler (Nsight, torch.profiler) holds CUPTI; GPU "
                           "activity is not recorded");
        else
            collector_note("CUPTI cannot subscribe (%s, %d): no GPU driver? GPU activity is not "
                           "recorded",
                           cupti_error(r), (int)r);
        return -1;
    }
    cupti_enable_launch_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    cupti_enable_launch_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    cupti.EnableDomain(1, cupti_subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    r = cupti.ActivityRegisterCallbacks(cupti_buffer_requested, cupti_buffer_completed);
    static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMSET};
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof kinds / sizeof kinds[0]; i++)
        r = cupti.ActivityEnable(kinds[i]);
    if (r != CUPTI_SUCCESS) {
        collector_note("CUPTI activity cannot be enabled (%s, %d): no GPU driver? kernels and "
                       "copies are not recorded",
                       cupti_error(r), (int)r);
        return 0; /* the callbacks still give the calls and their correlation ids */
    }
    return 1;
}

void cupti_start(void)
{
    /* Not prof_recording: a capture window may be closed at the first CUDA call. */
    if (cupti_started || !cupti_enabled || !collector_is_live())
        return;
    pthread_mutex_lock(&cupti_start_lock);
    if (!cupti_started) {
        prof_tls_busy++;
        int rc = cupti_subscribe();
        cupti_started = rc > 0 ? 1 : -1; /* -1: tried; activity is off */
        if (rc >= 0)
            collector_add_source(cupti_drain);
        prof_tls_busy--;
    }
    pthread_mutex_unlock(&cupti_start_lock);
}

/* The driver calls this during cuInit when CUDA_INJECTION64_PATH names libprof.so: the
 * way to see programs whose CUDA runtime is linked statically. */
PROF_EXPORT int InitializeInjection(void)
{
    cupti_start();
    return 1;
}

static void cupti_init(int enabled)
{
    cupti_enabled = enabled;
}

const struct preload_layer cupti_layer = {
    .name = "cupti",
    .enable = SETTING_PROF_CUPTI,
    .setup = cupti_init,
};
