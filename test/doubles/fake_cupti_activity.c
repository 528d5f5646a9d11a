/* TEST DOUBLE of CUPTI (see fake_cupti.c): the activity API. Records are the real CUDA 13
 * structs (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4,
 * CUpti_ActivityAPI, CUpti_ActivityExternalCorrelation), written one after another, 8-byte
 * aligned, into the buffer the client's bufferRequested callback hands out. A buffer goes back
 * through bufferCompleted when the next record does not fit (or maxNumRecords is reached), on
 * cuptiActivityFlushAll (flag 0: only when all its device work has ended; FORCED: always, even
 * empty) and on cuptiFinalize. Records with no buffer to go to are counted as dropped.
 *
 * Clock: CLOCK_REALTIME ns, like the real library, or the callback given to
 * cuptiActivityRegisterTimestampCallback before the first cuptiActivityEnable; a callback
 * registered later is ignored (with a note on stderr). Device times become CUPTI times by the
 * offset between the two clocks, measured when the first activity kind is enabled. Kernels report
 * 32 registers per thread and no static shared memory; a kernel's and a copy's correlationId and
 * runtimeCorrelationId are those of the runtime call that queued it (there is no driver). */
#define _GNU_SOURCE
#include "fake_cupti.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FC_ALIGN ACTIVITY_RECORD_ALIGNMENT
#define FC_EXT_DEPTH 64

struct fc_buffer {
    uint8_t *base;
    size_t size, used, max_records, records;
    uint64_t last_end_mono; /* when the device work of its records has all ended */
};

/* Recursive: bufferRequested runs under it and may call back into CUPTI. */
static pthread_mutex_t fc_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static uint8_t fc_kinds[CUPTI_ACTIVITY_KIND_COUNT];
static int fc_kinds_on;    /* how many kinds are enabled */
static int fc_kinds_ever;  /* a kind was enabled: the clock is fixed from then on */
static int fc_latency;     /* cuptiActivityEnableLatencyTimestamps */
static uint64_t fc_offset; /* CUPTI time - device time, fixed with the clock */
static int fc_offset_set;
static CUpti_TimestampCallbackFunc fc_clock;
static CUpti_BuffersCallbackRequestFunc fc_requested;
static CUpti_BuffersCallbackCompleteFunc fc_completed;
static struct fc_buffer fc_buf;
static size_t fc_dropped;
static CUpti_ActivityThreadIdType fc_thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
static int64_t fc_grid_id;

static __thread uint64_t fc_ext_ids[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][FC_EXT_DEPTH];
static __thread unsigned fc_ext_depth[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

/* ---- clock ---- */

static uint64_t fc_clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fc_now(void)
{
    CUpti_TimestampCallbackFunc clock = __atomic_load_n(&fc_clock, __ATOMIC_ACQUIRE);

    return clock ? clock() : fc_clock_ns(CLOCK_REALTIME);
}

/* CUPTI time - device time, read around the CUPTI clock so that its cost cancels out. */
static uint64_t fc_measure_offset(void)
{
    uint64_t before = fc_clock_ns(CLOCK_MONOTONIC), now = fc_now();
    uint64_t after = fc_clock_ns(CLOCK_MONOTONIC);

    return now - (before + (after - before) / 2);
}

/* Unsigned wrap-around makes the offset right whichever clock is ahead. One offset for the
 * whole session keeps durations and the order of records exact. */
uint64_t fc_from_mono(uint64_t mono_ns)
{
    if (__atomic_load_n(&fc_offset_set, __ATOMIC_ACQUIRE))
        return mono_ns + fc_offset;
    return mono_ns + fc_measure_offset();
}

FC_API CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = fc_now();
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    int late;

    if (!funcTimestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    pthread_mutex_lock(&fc_lock);
    late = fc_kinds_ever;
    if (!late)
        __atomic_store_n(&fc_clock, funcTimestamp, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fc_lock);
    if (late)
        fprintf(stderr, "fake libcupti (test double): timestamp callback registered after an "
                        "activity kind was enabled: ignored\n");
    return CUPTI_SUCCESS;
}

/* ---- kinds ---- */

int fc_activity_any(void)
{
    return __atomic_load_n(&fc_kinds_on, __ATOMIC_RELAXED) > 0;
}

int fc_activity_on(CUpti_ActivityKind kind)
{
    return (unsigned)kind < CUPTI_ACTIVITY_KIND_COUNT &&
           __atomic_load_n(&fc_kinds[kind], __ATOMIC_RELAXED);
}

static CUptiResult fc_activity_switch(CUpti_ActivityKind kind, uint8_t on)
{
    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&fc_lock);
    if (fc_kinds[kind] != on) {
        __atomic_store_n(&fc_kinds[kind], on, __ATOMIC_RELAXED);
        __atomic_add_fetch(&fc_kinds_on, on ? 1 : -1, __ATOMIC_RELAXED);
    }
    if (on && !fc_kinds_ever) {
        fc_kinds_ever = 1;
        fc_offset = fc_measure_offset();
        __atomic_store_n(&fc_offset_set, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&fc_lock);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    return fc_activity_switch(kind, 1);
}

FC_API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    return fc_activity_switch(kind, 0);
}

FC_API CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind)
{
    (void)context;
    return fc_activity_switch(kind, 1);
}

FC_API CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context, CUpti_ActivityKind kind)
{
    (void)context;
    return fc_activity_switch(kind, 0);
}

FC_API CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
    __atomic_store_n(&fc_latency, enable != 0, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

/* Accepted and ignored: the fake has no device buffers to size. */
FC_API CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr,
                                                      size_t *valueSize, void *value)
{
    (void)attr;
    return valueSize && value ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FC_API CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
    if ((unsigned)type >= CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    __atomic_store_n(&fc_thread_id_type, type, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
    if (!type)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *type = __atomic_load_n(&fc_thread_id_type, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

/* ---- buffers ---- */

static size_t fc_record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
    default:
        return 0;
    }
}

static size_t fc_align_offset(const uint8_t *base)
{
    return (size_t)(-(uintptr_t)base & (FC_ALIGN - 1));
}

static void fc_request_locked(void)
{
    uint8_t *base = NULL;
    size_t size = 0, max_records = 0;

    fc_requested(&base, &size, &max_records);
    memset(&fc_buf, 0, sizeof(fc_buf));
    if (!base || size <= fc_align_offset(base))
        return;
    fc_buf.base = base;
    fc_buf.size = size;
    fc_buf.used = fc_align_offset(base);
    fc_buf.max_records = max_records;
}

static int fc_buffer_full_for(const struct fc_buffer *b, size_t size)
{
    return b->used + size > b->size || (b->max_records && b->records >= b->max_records);
}

static void fc_deliver(struct fc_buffer *b)
{
    if (b->base)
        fc_completed(NULL, 0, b->base, b->size, b->used);
}

/* Copies one record into the client's buffer; a filled buffer goes back to the client. */
static void fc_emit(const void *record, size_t size, uint64_t end_mono)
{
    struct fc_buffer full = {0};

    pthread_mutex_lock(&fc_lock);
    if (!fc_requested) {
        fc_dropped++;
        pthread_mutex_unlock(&fc_lock);
        return;
    }
    if (fc_buf.base && fc_buf.records && fc_buffer_full_for(&fc_buf, size)) {
        full = fc_buf;
        memset(&fc_buf, 0, sizeof(fc_buf));
    }
    if (!fc_buf.base)
        fc_request_locked();
    if (!fc_buf.base || fc_buffer_full_for(&fc_buf, size)) {
        fc_dropped++;
    } else {
        memcpy(fc_buf.base + fc_buf.used, record, size);
        fc_buf.used += size;
        fc_buf.records++;
        if (end_mono > fc_buf.last_end_mono)
            fc_buf.last_end_mono = end_mono;
    }
    pthread_mutex_unlock(&fc_lock);
    /* Outside the lock: the client's callback may take its own locks and call CUPTI. */
    fc_deliver(&full);
}

FC_API CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&fc_lock);
    fc_requested = funcBufferRequested;
    fc_completed = funcBufferCompleted;
    pthread_mutex_unlock(&fc_lock);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    struct fc_buffer out = {0};
    int forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;

    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    pthread_mutex_lock(&fc_lock);
    if (!fc_requested) {
        pthread_mutex_unlock(&fc_lock);
        return CUPTI_ERROR_INVALID_OPERATION;
    }
    if (fc_buf.base &&
        (forced || (fc_buf.records && fc_buf.last_end_mono <= fc_clock_ns(CLOCK_MONOTONIC)))) {
        out = fc_buf;
        memset(&fc_buf, 0, sizeof(fc_buf));
    }
    pthread_mutex_unlock(&fc_lock);
    fc_deliver(&out);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    (void)context, (void)streamId;
    return cuptiActivityFlushAll(flag);
}

/* Accepted and ignored: buffers go back when full and on flushes only. */
FC_API CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
    (void)time;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                              size_t *dropped)
{
    (void)context, (void)streamId;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&fc_lock);
    *dropped = fc_dropped;
    fc_dropped = 0;
    pthread_mutex_unlock(&fc_lock);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                       CUpti_Activity **record)
{
    uint8_t *end = buffer + validBufferSizeBytes, *at;
    size_t size;

    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!*record) {
        at = buffer + fc_align_offset(buffer);
    } else {
        if (!(size = fc_record_size((*record)->kind)))
            return CUPTI_ERROR_INVALID_KIND;
        at = (uint8_t *)*record + size;
    }
    if (at + sizeof(CUpti_Activity) > end)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    size = fc_record_size(((CUpti_Activity *)at)->kind);
    if (!size || at + size > end)
        return CUPTI_ERROR_INVALID_KIND;
    *record = (CUpti_Activity *)at;
    return CUPTI_SUCCESS;
}

void fc_activity_finalize(void)
{
    int kind;

    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&fc_lock);
    for (kind = 0; kind < CUPTI_ACTIVITY_KIND_COUNT; kind++)
        __atomic_store_n(&fc_kinds[kind], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&fc_kinds_on, 0, __ATOMIC_RELAXED);
    fc_kinds_ever = 0;
    __atomic_store_n(&fc_offset_set, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fc_lock);
}

/* ---- external correlation ---- */

static int fc_ext_kind_valid(CUpti_ExternalCorrelationKind kind)
{
    return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID &&
           kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

FC_API CUptiResult CUPTIAPI
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    if (!fc_ext_kind_valid(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fc_ext_depth[kind] >= FC_EXT_DEPTH)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    fc_ext_ids[kind][fc_ext_depth[kind]++] = id;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    if (!fc_ext_kind_valid(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!fc_ext_depth[kind])
        return CUPTI_ERROR_QUEUE_EMPTY;
    fc_ext_depth[kind]--;
    if (lastId)
        *lastId = fc_ext_ids[kind][fc_ext_depth[kind]];
    return CUPTI_SUCCESS;
}

/* ---- records ---- */

static uint32_t fc_thread_id(void)
{
    if (__atomic_load_n(&fc_thread_id_type, __ATOMIC_RELAXED) ==
        CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return (uint32_t)syscall(SYS_gettid);
    return (uint32_t)pthread_self();
}

void fc_activity_api(const struct fake_cupti_call *call, uint64_t end, uint32_t code)
{
    CUpti_ActivityExternalCorrelation ext;
    CUpti_ActivityAPI api;
    int kind;

    if (fc_activity_on(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
        for (kind = 0; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; kind++) {
            if (!fc_ext_depth[kind])
                continue;
            memset(&ext, 0, sizeof(ext));
            ext.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
            ext.externalKind = (CUpti_ExternalCorrelationKind)kind;
            ext.externalId = fc_ext_ids[kind][fc_ext_depth[kind] - 1];
            ext.correlationId = call->correlation_id;
            fc_emit(&ext, sizeof(ext), 0);
        }
    }
    if (!fc_activity_on(CUPTI_ACTIVITY_KIND_RUNTIME))
        return;
    memset(&api, 0, sizeof(api));
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    api.cbid = call->cbid;
    api.start = call->start;
    api.end = end;
    api.processId = (uint32_t)getpid();
    api.threadId = fc_thread_id();
    api.correlationId = call->correlation_id;
    api.returnValue = code;
    fc_emit(&api, sizeof(api), 0);
}

void fc_activity_kernel(const struct fake_cupti_call *call, const struct fake_cupti_kernel *k)
{
    CUpti_ActivityKernel10 r;

    memset(&r, 0, sizeof(r));
    if (fc_activity_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
        r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    else if (fc_activity_on(CUPTI_ACTIVITY_KIND_KERNEL))
        r.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    else
        return;
    r.registersPerThread = 32;
    r.start = fc_from_mono(k->start_mono);
    r.end = fc_from_mono(k->end_mono);
    r.completed = r.end;
    r.deviceId = FC_DEVICE_ID;
    r.contextId = FC_CONTEXT_ID;
    r.streamId = k->stream_id;
    r.gridX = (int32_t)k->grid[0];
    r.gridY = (int32_t)k->grid[1];
    r.gridZ = (int32_t)k->grid[2];
    r.blockX = (int32_t)k->block[0];
    r.blockY = (int32_t)k->block[1];
    r.blockZ = (int32_t)k->block[2];
    r.dynamicSharedMemory = (int32_t)k->dynamic_shared;
    r.sharedMemoryExecuted = k->dynamic_shared;
    r.correlationId = call ? call->correlation_id : 0;
    r.gridId = __atomic_add_fetch(&fc_grid_id, 1, __ATOMIC_RELAXED);
    r.name = k->name;
    if (__atomic_load_n(&fc_latency, __ATOMIC_RELAXED)) {
        r.queued = call ? call->start : r.start;
        r.submitted = r.queued;
    }
    if (call && call->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000)
        r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    fc_emit(&r, sizeof(r), k->end_mono);
}

void fc_activity_copy(const struct fake_cupti_call *call, const struct fake_cupti_copy *c)
{
    CUpti_ActivityMemcpy6 r;

    if (!fc_activity_on(CUPTI_ACTIVITY_KIND_MEMCPY))
        return;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = c->copy_kind;
    r.srcKind = c->src_kind;
    r.dstKind = c->dst_kind;
    r.flags = c->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r.bytes = c->bytes;
    r.start = fc_from_mono(c->start_mono);
    r.end = fc_from_mono(c->end_mono);
    r.deviceId = FC_DEVICE_ID;
    r.contextId = FC_CONTEXT_ID;
    r.streamId = c->stream_id;
    r.correlationId = call ? call->correlation_id : 0;
    r.runtimeCorrelationId = r.correlationId;
    r.channelType = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
    r.copyCount = 1;
    fc_emit(&r, sizeof(r), c->end_mono);
}

void fc_activity_set(const struct fake_cupti_call *call, const struct fake_cupti_set *s)
{
    CUpti_ActivityMemset4 r;

    if (!fc_activity_on(CUPTI_ACTIVITY_KIND_MEMSET))
        return;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = s->value;
    r.bytes = s->bytes;
    r.start = fc_from_mono(s->start_mono);
    r.end = fc_from_mono(s->end_mono);
    r.deviceId = FC_DEVICE_ID;
    r.contextId = FC_CONTEXT_ID;
    r.streamId = s->stream_id;
    r.correlationId = call ? call->correlation_id : 0;
    r.flags = s->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    r.memoryKind = s->memory_kind;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    fc_emit(&r, sizeof(r), s->end_mono);
}
