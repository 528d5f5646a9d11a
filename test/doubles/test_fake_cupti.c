/* Self-test of the fake libcupti.so.13 (test/doubles/fake_cupti.c) with the fake
 * libcudart.so.13: a small CUDA job with a CUPTI client inside, as a profiler would be. It
 * loads both libraries with dlopen(RTLD_LOCAL), in the order given, subscribes, enables the
 * activity kinds a profiler uses, makes cuda_app-like calls (copies pinned and pageable, sync
 * and async, memsets, launches on two streams, one failing launch) and checks the callbacks
 * and the records against them: counts, correlation ids, names, kinds, bytes, streams, times.
 *
 * Usage: test_fake_cupti LIBCUPTI [cudart-first | cupti-first | busy | nodriver]
 *   busy:     expects another subscriber (run with FAKE_CUPTI_BUSY=1);
 *   nodriver: expects what the real libcupti answers without a driver (run the fake with
 *             FAKE_CUPTI_NO_DRIVER=1, or pass the real library: the two must agree).
 * Exits 0 when every check passes, 1 otherwise, printing one line per failed check. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KERNEL_NS 1000000ull
#define CLOCK_OFFSET_NS 1000000000000ull /* our clock: CLOCK_MONOTONIC + 1000 s */
#define MAX_CALLS 64
#define BUFFER_SIZE 512 /* small, so that full buffers go back during the run */

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

/* ---- the two libraries, by dlsym ---- */

#define CUPTI_FUNCS(X)                                                                             \
    X(cuptiGetVersion)                                                                             \
    X(cuptiGetResultString)                                                                        \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiEnableDomain) X(cuptiEnableCallback) X(cuptiGetCallbackName) X(cuptiActivityEnable)     \
        X(cuptiActivityDisable) X(cuptiActivityRegisterCallbacks) X(cuptiActivityFlushAll)         \
            X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords)                     \
                X(cuptiActivityRegisterTimestampCallback) X(cuptiGetTimestamp)                     \
                    X(cuptiActivityPushExternalCorrelationId)                                      \
                        X(cuptiActivityPopExternalCorrelationId) X(cuptiGetStreamId)               \
                            X(cuptiFinalize)

#define CUDART_FUNCS(X)                                                                            \
    X(cudaMalloc)                                                                                  \
    X(cudaMallocHost)                                                                              \
    X(cudaFree)                                                                                    \
    X(cudaFreeHost)                                                                                \
    X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaMemset) X(cudaMemsetAsync) X(cudaStreamCreate)          \
        X(cudaStreamDestroy) X(cudaStreamSynchronize) X(cudaDeviceSynchronize) X(cudaLaunchKernel)

#define DECLARE(name) __typeof__(&name) name;
static struct {
    CUPTI_FUNCS(DECLARE)
} cupti;
static struct {
    CUDART_FUNCS(DECLARE)
    void **(*RegisterFatBinary)(void *);
    void (*RegisterFunction)(void **, const char *, char *, const char *, int, void *, void *,
                             void *, void *, int *);
} rt;

static void *load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (!lib) {
        printf("FAIL cannot load %s: %s\n", path, dlerror());
        exit(1);
    }
    return lib;
}

#define BIND(lib, table, name)                                                                     \
    if (!(*(void **)&table.name = dlsym(lib, #name))) {                                            \
        printf("FAIL %s lacks %s\n", #lib, #name);                                                 \
        exit(1);                                                                                   \
    }
#define BIND_CUPTI(name) BIND(cupti_lib, cupti, name)
#define BIND_CUDART(name) BIND(cudart_lib, rt, name)

static void bind_cupti(void *cupti_lib)
{
    CUPTI_FUNCS(BIND_CUPTI)
}

static void bind_cudart(void *cudart_lib)
{
    CUDART_FUNCS(BIND_CUDART)
    *(void **)&rt.RegisterFatBinary = dlsym(cudart_lib, "__cudaRegisterFatBinary");
    *(void **)&rt.RegisterFunction = dlsym(cudart_lib, "__cudaRegisterFunction");
    if (!rt.RegisterFatBinary || !rt.RegisterFunction) {
        printf("FAIL libcudart lacks kernel registration\n");
        exit(1);
    }
}

/* ---- the client: clock, callbacks, buffers ---- */

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI our_clock(void)
{
    return mono_ns() + CLOCK_OFFSET_NS;
}

static uint64_t CUPTIAPI late_clock(void)
{
    return 1;
}

struct seen_call {
    CUpti_CallbackId cbid;
    uint32_t correlation_id;
    int exited;
    int result;
    char name[32], symbol[64];
    int has_context;
};

static struct seen_call calls[MAX_CALLS];
static int ncalls, enters, exits, bad_pairs;
static int streams_created, streams_destroyed, contexts_destroyed;
static cudaStream_t last_stream;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata)
{
    const CUpti_CallbackData *data = cbdata;
    struct seen_call *c;

    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *resource = cbdata;
        if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED)
            streams_created += resource->resourceHandle.stream != NULL;
        if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING)
            streams_destroyed += resource->resourceHandle.stream == (CUstream)last_stream;
        /* As a profiler does: the context's activity must be out before it goes. */
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
            contexts_destroyed++;
            cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        }
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return;
    if (data->callbackSite == CUPTI_API_ENTER) {
        enters++;
        if (ncalls >= MAX_CALLS)
            return;
        c = &calls[ncalls++];
        c->cbid = cbid;
        c->correlation_id = data->correlationId;
        snprintf(c->name, sizeof(c->name), "%s", data->functionName ? data->functionName : "");
        snprintf(c->symbol, sizeof(c->symbol), "%s", data->symbolName ? data->symbolName : "");
        c->has_context = data->context != NULL;
        *data->correlationData = data->correlationId * 7ull;
        return;
    }
    exits++;
    c = ncalls ? &calls[ncalls - 1] : NULL;
    if (!c || c->correlation_id != data->correlationId || c->cbid != cbid ||
        *data->correlationData != data->correlationId * 7ull || !data->functionReturnValue) {
        bad_pairs++;
        return;
    }
    c->exited = 1;
    c->result = *(const cudaError_t *)data->functionReturnValue;
}

static CUpti_ActivityKernel10 kernels[8];
static CUpti_ActivityMemcpy6 copies[8];
static CUpti_ActivityMemset4 sets[8];
static CUpti_ActivityAPI apis[MAX_CALLS];
static CUpti_ActivityExternalCorrelation externals[8];
static int nkernels, ncopies, nsets, napis, nexternals, nother, buffers_back, bad_buffers;

#define KEEP(array, n, record)                                                                     \
    do {                                                                                           \
        if ((n) < (int)(sizeof(array) / sizeof(array[0])))                                         \
            memcpy(&array[(n)], (record), sizeof(array[0]));                                       \
        (n)++;                                                                                     \
    } while (0)

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUFFER_SIZE);
    *size = BUFFER_SIZE;
    *max_records = 0;
}

static void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer,
                                         size_t size, size_t valid)
{
    CUpti_Activity *record = NULL;
    CUptiResult status;

    (void)context, (void)stream_id;
    buffers_back++;
    if (size != BUFFER_SIZE || valid > size)
        bad_buffers++;
    while ((status = cupti.cuptiActivityGetNextRecord(buffer, valid, &record)) == CUPTI_SUCCESS) {
        switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            KEEP(kernels, nkernels, record);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            KEEP(copies, ncopies, record);
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
            KEEP(sets, nsets, record);
            break;
        case CUPTI_ACTIVITY_KIND_RUNTIME:
            KEEP(apis, napis, record);
            break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            KEEP(externals, nexternals, record);
            break;
        default:
            nother++;
        }
    }
    if (status != CUPTI_ERROR_MAX_LIMIT_REACHED)
        bad_buffers++;
    free(buffer);
}

/* ---- the job ---- */

static void scale_stub(void)
{
}

static const char scale_name[] = "_Z5scalePfif";

static const struct seen_call *find_call(uint32_t correlation_id)
{
    for (int i = 0; i < ncalls; i++)
        if (calls[i].correlation_id == correlation_id)
            return &calls[i];
    return NULL;
}

static int run_job(void)
{
    void *d = NULL, *h = NULL, *pageable = malloc(4096), *args[1] = {&d};
    cudaStream_t s = NULL;
    CUpti_SubscriberHandle sub = NULL, second = NULL;
    const char *name = NULL;
    uint64_t external = 0, t0, t1;
    uint32_t stream_id = 0;
    size_t dropped = 99;
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
    void **module = rt.RegisterFatBinary(NULL);

    rt.RegisterFunction(module, (const char *)scale_stub, (char *)scale_name, scale_name, -1, NULL,
                        NULL, NULL, NULL, NULL);

    CHECK(cupti.cuptiActivityRegisterTimestampCallback(our_clock) == CUPTI_SUCCESS, "clock");
    CHECK(cupti.cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed) ==
              CUPTI_SUCCESS,
          "buffers");
    CHECK(cupti.cuptiSubscribe(&sub, on_callback, NULL) == CUPTI_SUCCESS, "subscribe");
    CHECK(cupti.cuptiSubscribe(&second, on_callback, NULL) ==
              CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
          "second subscriber refused");
    CHECK(cupti.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS, "domain");
    CHECK(cupti.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS, "resources");
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        CHECK(cupti.cuptiActivityEnable(kinds[i]) == CUPTI_SUCCESS, "enable kind %d", kinds[i]);
    /* Too late: the clock stays ours. */
    CHECK(cupti.cuptiActivityRegisterTimestampCallback(late_clock) == CUPTI_SUCCESS, "late clock");
    CHECK(cupti.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                     &name) == CUPTI_SUCCESS &&
              strcmp(name, "cudaLaunchKernel_v7000") == 0,
          "runtime name %s", name ? name : "(null)");
    CHECK(cupti.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API,
                                     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                     &name) == CUPTI_SUCCESS &&
              strcmp(name, "cuLaunchKernel") == 0,
          "driver name %s", name ? name : "(null)");

    t0 = our_clock();
    /* 16 runtime calls, each traced once; calls[] holds them in this order: the pinned sync
     * copy is calls[3], the async memset calls[6], the launches calls[7..10] (the last one
     * fails), the copy back calls[13]. */
    rt.cudaMalloc(&d, 1 << 20);
    rt.cudaMallocHost(&h, 1 << 20);
    rt.cudaStreamCreate(&s);
    last_stream = s;
    rt.cudaMemcpy(d, h, 1 << 20, cudaMemcpyHostToDevice);
    rt.cudaMemcpyAsync(d, pageable, 4096, cudaMemcpyHostToDevice, s);
    rt.cudaMemset(d, 0, 1 << 20);
    rt.cudaMemsetAsync(d, 1, 512, s);
    cupti.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42);
    rt.cudaLaunchKernel((const void *)scale_stub, (dim3){4, 2, 1}, (dim3){128, 1, 1}, args, 256, s);
    cupti.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &external);
    rt.cudaLaunchKernel((const void *)scale_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, NULL);
    rt.cudaLaunchKernel((const void *)scale_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, NULL);
    CHECK(rt.cudaLaunchKernel((const void *)scale_stub, (dim3){1, 1, 1}, (dim3){2048, 1, 1}, args,
                              0, NULL) == cudaErrorInvalidConfiguration,
          "failing launch");
    rt.cudaStreamSynchronize(s);
    rt.cudaDeviceSynchronize();
    rt.cudaMemcpy(h, d, 1 << 20, cudaMemcpyDeviceToHost);
    CHECK(cupti.cuptiGetStreamId(NULL, s, &stream_id) == CUPTI_SUCCESS && stream_id != 0,
          "stream id %u", stream_id);
    rt.cudaStreamDestroy(s);
    rt.cudaFree(d);
    t1 = our_clock();
    CHECK(external == 42, "popped %llu", (unsigned long long)external);

    CHECK(cupti.cuptiActivityFlushAll(0) == CUPTI_SUCCESS, "flush");
    CHECK(cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS, "forced");
    CHECK(cupti.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS &&
              dropped == 0,
          "dropped %zu", dropped);

    /* Callbacks: 16 calls, ENTER and EXIT each, ids increasing, data kept across the pair. */
    CHECK(enters == 16 && exits == 16 && ncalls == 16, "enters %d exits %d", enters, exits);
    CHECK(bad_pairs == 0, "%d EXIT callbacks did not match their ENTER", bad_pairs);
    for (int i = 1; i < ncalls; i++)
        CHECK(calls[i].correlation_id > calls[i - 1].correlation_id, "ids increase at %d", i);
    CHECK(calls[7].cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 &&
              strcmp(calls[7].name, "cudaLaunchKernel") == 0 &&
              strcmp(calls[7].symbol, scale_name) == 0 && calls[7].has_context,
          "launch %u %s %s", calls[7].cbid, calls[7].name, calls[7].symbol);
    CHECK(strcmp(calls[0].name, "cudaMalloc") == 0 && calls[0].symbol[0] == '\0', "%s",
          calls[0].name);
    CHECK(calls[10].exited && calls[10].result == cudaErrorInvalidConfiguration, "result %d",
          calls[10].result);

    /* Records (1776 bytes): a buffer of 512 bytes holds a few, so several went back while the job
     * ran. */
    CHECK(buffers_back >= 3 && bad_buffers == 0, "buffers back %d, bad %d", buffers_back,
          bad_buffers);
    CHECK(nkernels == 3 && ncopies == 3 && nsets == 2 && napis == 16 && nexternals == 1 &&
              nother == 0,
          "kernels %d copies %d sets %d apis %d externals %d other %d", nkernels, ncopies, nsets,
          napis, nexternals, nother);
    if (failures)
        return failures;
    for (int i = 0; i < 3; i++) {
        const CUpti_ActivityKernel10 *k = &kernels[i];
        const struct seen_call *c = find_call(k->correlationId);
        CHECK(c && c->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "kernel %d's call",
              i);
        CHECK(strcmp(k->name, scale_name) == 0, "kernel name %s", k->name);
        CHECK(k->end - k->start == KERNEL_NS, "kernel %d lasts %llu", i,
              (unsigned long long)(k->end - k->start));
        CHECK(k->start >= t0 && k->end <= t1 + KERNEL_NS, "kernel %d on our clock", i);
        CHECK(k->deviceId == 0 && k->contextId == 1, "kernel %d device/context", i);
    }
    CHECK(kernels[0].gridX == 4 && kernels[0].gridY == 2 && kernels[0].blockX == 128 &&
              kernels[0].dynamicSharedMemory == 256 && kernels[0].streamId == stream_id,
          "first kernel's configuration");
    CHECK(kernels[1].streamId == 7 && kernels[2].streamId == 7, "default stream id");
    CHECK(kernels[1].start >= kernels[0].end, "the legacy default stream waits for stream s");
    CHECK(kernels[2].start >= kernels[1].end, "default stream serializes");
    CHECK(copies[0].copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD &&
              copies[0].srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED &&
              copies[0].dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
              copies[0].bytes == 1 << 20 && copies[0].flags == 0,
          "pinned sync copy");
    CHECK(copies[1].srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE && copies[1].bytes == 4096 &&
              (copies[1].flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) &&
              copies[1].streamId == stream_id,
          "pageable async copy");
    CHECK(copies[2].copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
              copies[2].dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
          "copy back");
    CHECK(copies[0].correlationId == calls[3].correlation_id &&
              copies[2].correlationId == calls[13].correlation_id,
          "copy correlation");
    CHECK(sets[0].bytes == 1 << 20 && sets[1].bytes == 512 && sets[1].value == 1 &&
              sets[1].correlationId == calls[6].correlation_id,
          "memsets");
    CHECK(externals[0].externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 &&
              externals[0].externalId == 42 &&
              externals[0].correlationId == calls[7].correlation_id,
          "external correlation");
    for (int i = 0; i < napis && i < ncalls; i++) {
        CHECK(apis[i].cbid == calls[i].cbid && apis[i].correlationId == calls[i].correlation_id &&
                  apis[i].start <= apis[i].end && apis[i].start >= t0 && apis[i].end <= t1,
              "api record %d", i);
        CHECK((int)apis[i].returnValue == calls[i].result, "api record %d result", i);
    }

    CHECK(streams_created == 1 && streams_destroyed == 1 && contexts_destroyed == 0,
          "stream resources %d %d", streams_created, streams_destroyed);

    CHECK(cupti.cuptiUnsubscribe(sub) == CUPTI_SUCCESS, "unsubscribe");
    CHECK(cupti.cuptiSubscribe(&second, on_callback, NULL) == CUPTI_SUCCESS, "subscribe again");
    CHECK(cupti.cuptiEnableCallback(1, second, CUPTI_CB_DOMAIN_RESOURCE,
                                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) == CUPTI_SUCCESS,
          "context callback");
    /* A last kernel, never flushed here: it must come out at exit (check_exit). */
    rt.cudaLaunchKernel((const void *)scale_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, NULL);
    free(pageable);
    return failures;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Registered before the first CUDA call, so it runs after the fake runtime's teardown. */
static void check_exit(void)
{
    CHECK(contexts_destroyed == 1 && nkernels == 4, "at exit: contexts destroyed %d, kernels %d",
          contexts_destroyed, nkernels);
    if (failures) {
        fflush(stdout);
        _exit(1);
    }
}

static int run_busy(void)
{
    CUpti_SubscriberHandle sub = NULL;
    uint64_t t = 0, before = realtime_ns();

    CHECK(cupti.cuptiSubscribe(&sub, on_callback, NULL) ==
                  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED &&
              !sub,
          "busy");
    CHECK(cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS,
          "activity still works");
    CHECK(cupti.cuptiFinalize() == CUPTI_SUCCESS, "finalize");
    CHECK(cupti.cuptiActivityFlushAll(0) == CUPTI_ERROR_INVALID_OPERATION, "flush without buffers");
    /* No timestamp callback: CLOCK_REALTIME, like the real library. */
    CHECK(cupti.cuptiGetTimestamp(&t) == CUPTI_SUCCESS && t >= before && t <= realtime_ns(),
          "CLOCK_REALTIME");
    return failures;
}

/* What libcupti.so.13 answers with no driver: the real one and the fake must agree. */
static int run_nodriver(void)
{
    CUpti_SubscriberHandle sub = NULL;
    const char *text = NULL;
    uint32_t version = 0;
    uint64_t t = 0;

    CHECK(cupti.cuptiGetVersion(&version) == CUPTI_SUCCESS && version == CUPTI_API_VERSION,
          "version %u", version);
    CHECK(cupti.cuptiActivityRegisterTimestampCallback(our_clock) == CUPTI_ERROR_UNKNOWN, "clock");
    CHECK(cupti.cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed) ==
              CUPTI_SUCCESS,
          "buffers");
    CHECK(cupti.cuptiSubscribe(&sub, on_callback, NULL) == CUPTI_ERROR_UNKNOWN && !sub,
          "subscribe");
    CHECK(cupti.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) ==
              CUPTI_ERROR_INVALID_PARAMETER,
          "domain without subscriber");
    CHECK(cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_ERROR_UNKNOWN,
          "enable");
    CHECK(cupti.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                       1) == CUPTI_ERROR_UNKNOWN,
          "push");
    CHECK(cupti.cuptiGetTimestamp(&t) == CUPTI_SUCCESS && t > 0, "timestamp");
    CHECK(cupti.cuptiActivityFlushAll(0) == CUPTI_ERROR_UNKNOWN, "flush");
    CHECK(cupti.cuptiUnsubscribe(sub) == CUPTI_ERROR_INVALID_PARAMETER, "unsubscribe");
    CHECK(cupti.cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &text) == CUPTI_SUCCESS &&
              strcmp(text, "CUPTI_ERROR_UNKNOWN") == 0,
          "result string");
    CHECK(cupti.cuptiFinalize() == CUPTI_SUCCESS, "finalize");
    return failures;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[2] : "cudart-first";
    void *cupti_lib, *cudart_lib;

    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBCUPTI [cudart-first|cupti-first|busy|nodriver]\n", argv[0]);
        return 2;
    }
    setenv("FAKE_CUDA_KERNEL_NS", "1000000", 1);
    if (strcmp(mode, "cupti-first") == 0) {
        cupti_lib = load(argv[1]);
        cudart_lib = load("libcudart.so.13");
    } else if (strcmp(mode, "cudart-first") == 0) {
        cudart_lib = load("libcudart.so.13");
        cupti_lib = load(argv[1]);
    } else {
        cupti_lib = load(argv[1]);
        cudart_lib = NULL;
    }
    bind_cupti(cupti_lib);
    if (cudart_lib) {
        bind_cudart(cudart_lib);
        atexit(check_exit);
        run_job();
    } else if (strcmp(mode, "busy") == 0) {
        run_busy();
    } else if (strcmp(mode, "nodriver") == 0) {
        run_nodriver();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("test_fake_cupti %s: %s\n", mode, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
