/* TEST DOUBLE of NVIDIA's CUPTI, for machines without a GPU: a libcupti.so.13 look-alike
 * (same SONAME and symbol version, built from the real CUDA 13 CUPTI headers, with their
 * structs and enums) that implements the subset of the callback and activity APIs a profiler
 * uses. It is not profiler code; tests select it with LD_LIBRARY_PATH=$(BUILD)/test/doubles
 * (or by path). Its GPU is the fake libcudart (fake_cudart*.c), which reports every runtime
 * call and every kernel, copy and memset through fake_cupti_link.h. This file: subscriber,
 * callbacks, names, ids, knobs; fake_cupti_activity.c: activity kinds, buffers, records, clock.
 *
 * Model: one subscriber; a runtime call of the fake runtime gets a correlation id (increasing,
 * process-wide) while a subscriber exists or an activity kind is enabled, and calls the
 * subscriber's callback at ENTER and EXIT when its runtime cbid is enabled (functionParams is
 * NULL; symbolName is the kernel's name for launches). Resource callbacks: stream created and
 * destroy-starting, context destroy-starting (cudaDeviceReset, and at exit from the fake
 * runtime's atexit handler, as the real runtime tears down). There is no driver layer: no
 * driver callbacks or records, no context-created callback. Knobs: FAKE_CUPTI_BUSY=1, another
 * profiler holds CUPTI (cuptiSubscribe answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
 * FAKE_CUPTI_NO_DRIVER=1, no driver (the calls that need one answer CUPTI_ERROR_UNKNOWN, as the
 * real library does); FAKE_CUPTI_FLUSH_AT_EXIT=1, a forced flush when the library unloads. */
#define _GNU_SOURCE
#include "fake_cupti.h"

#include "fake_cupti_names.h" /* generated from the CUPTI headers by doubles.mk */

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
    uint8_t runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE]; /* enabled runtime cbids */
    uint8_t resource[CUPTI_CBID_RESOURCE_SIZE];     /* enabled resource cbids */
    uint8_t domains[CUPTI_CB_DOMAIN_SIZE];          /* other domains: recorded, never called */
};

/* The one context the fake device has; only its address is ever used. */
struct CUctx_st {
    int unused;
};

int fc_no_driver;
static int fc_busy;
static int fc_flush_at_exit;
static struct CUctx_st fc_context;
static struct CUpti_Subscriber_st fc_subscriber_storage;
static struct CUpti_Subscriber_st *fc_subscriber; /* NULL, or &fc_subscriber_storage */
static pthread_mutex_t fc_subscribe_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t fc_correlation;
static const struct fake_cudart_link *fc_cudart;

static int fc_env_flag(const char *name)
{
    const char *text = getenv(name);

    return text && *text && strcmp(text, "0") != 0;
}

static struct CUpti_Subscriber_st *fc_current_subscriber(void)
{
    return __atomic_load_n(&fc_subscriber, __ATOMIC_ACQUIRE);
}

/* ---- the link with the fake runtime ---- */

static void fc_api_enter(struct fake_cupti_call *call);
static void fc_api_exit(struct fake_cupti_call *call, void *result, uint32_t code);

static void fc_resource(enum fake_cupti_resource what, const void *stream);

static const struct fake_cupti_link fc_link = {
    FAKE_CUPTI_LINK_VERSION, fc_api_enter,    fc_api_exit, fc_activity_kernel,
    fc_activity_copy,        fc_activity_set, fc_resource,
};

FC_API const struct fake_cupti_link *fake_cupti_attach_cudart(const struct fake_cudart_link *rt)
{
    __atomic_store_n(&fc_cudart, rt && rt->version == FAKE_CUPTI_LINK_VERSION ? rt : NULL,
                     __ATOMIC_RELEASE);
    return &fc_link;
}

/* Finds a fake runtime loaded before us: attach (link non-NULL) or detach (NULL). */
static void fc_link_runtime(const struct fake_cupti_link *link)
{
    void *lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    fake_cudart_attach_fn attach;

    if (!lib)
        return;
    *(void **)&attach = dlsym(lib, FAKE_CUDART_ATTACH_SYMBOL);
    if (attach) {
        const struct fake_cudart_link *rt = attach(link);
        __atomic_store_n(&fc_cudart, link && rt->version == FAKE_CUPTI_LINK_VERSION ? rt : NULL,
                         __ATOMIC_RELEASE);
    }
    dlclose(lib);
}

__attribute__((constructor)) static void fc_init(void)
{
    fc_busy = fc_env_flag("FAKE_CUPTI_BUSY");
    fc_no_driver = fc_env_flag("FAKE_CUPTI_NO_DRIVER");
    fc_flush_at_exit = fc_env_flag("FAKE_CUPTI_FLUSH_AT_EXIT");
    fc_link_runtime(&fc_link);
}

__attribute__((destructor)) static void fc_fini(void)
{
    if (fc_flush_at_exit && !fc_no_driver)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    fc_link_runtime(NULL);
}

/* ---- runtime calls: correlation ids and callbacks ---- */

static void fc_callback(struct CUpti_Subscriber_st *sub, struct fake_cupti_call *call,
                        CUpti_ApiCallbackSite site, void *result)
{
    CUpti_CallbackData data;

    memset(&data, 0, sizeof(data));
    data.callbackSite = site;
    data.functionName = call->name;
    data.functionParams = NULL;
    data.functionReturnValue = result;
    data.symbolName = call->symbol;
    data.context = &fc_context;
    data.contextUid = FC_CONTEXT_ID;
    data.correlationData = &call->correlation_data;
    data.correlationId = call->correlation_id;
    sub->callback(sub->userdata, CUPTI_CB_DOMAIN_RUNTIME_API, call->cbid, &data);
}

static int fc_runtime_enabled(struct CUpti_Subscriber_st *sub, uint32_t cbid)
{
    return sub && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE &&
           __atomic_load_n(&sub->runtime[cbid], __ATOMIC_RELAXED);
}

static void fc_api_enter(struct fake_cupti_call *call)
{
    struct CUpti_Subscriber_st *sub = fc_current_subscriber();

    if (!sub && !fc_activity_any())
        return;
    call->correlation_id = __atomic_add_fetch(&fc_correlation, 1, __ATOMIC_RELAXED);
    call->start = fc_now();
    if (fc_runtime_enabled(sub, call->cbid))
        fc_callback(sub, call, CUPTI_API_ENTER, NULL);
}

static void fc_api_exit(struct fake_cupti_call *call, void *result, uint32_t code)
{
    struct CUpti_Subscriber_st *sub;
    uint64_t end;

    if (!call->correlation_id)
        return;
    end = fc_now();
    sub = fc_current_subscriber();
    if (fc_runtime_enabled(sub, call->cbid))
        fc_callback(sub, call, CUPTI_API_EXIT, result);
    fc_activity_api(call, end, code);
}

static void fc_resource(enum fake_cupti_resource what, const void *stream)
{
    static const CUpti_CallbackIdResource cbids[] = {
        [FAKE_CUPTI_CONTEXT_CREATED] = CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        [FAKE_CUPTI_CONTEXT_DESTROY_STARTING] = CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        [FAKE_CUPTI_STREAM_CREATED] = CUPTI_CBID_RESOURCE_STREAM_CREATED,
        [FAKE_CUPTI_STREAM_DESTROY_STARTING] = CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING,
    };
    struct CUpti_Subscriber_st *sub = fc_current_subscriber();
    CUpti_ResourceData data;

    if (!sub || !__atomic_load_n(&sub->resource[cbids[what]], __ATOMIC_RELAXED))
        return;
    memset(&data, 0, sizeof(data));
    data.context = &fc_context;
    data.resourceHandle.stream = (CUstream)stream;
    sub->callback(sub->userdata, CUPTI_CB_DOMAIN_RESOURCE, cbids[what], &data);
}

/* ---- subscribing ---- */

FC_API CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                           CUpti_CallbackFunc callback, void *userdata)
{
    CUptiResult result = CUPTI_SUCCESS;

    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *subscriber = NULL;
    if (fc_no_driver)
        return CUPTI_ERROR_UNKNOWN;
    pthread_mutex_lock(&fc_subscribe_lock);
    if (fc_busy || fc_subscriber) {
        result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    } else {
        memset(&fc_subscriber_storage, 0, sizeof(fc_subscriber_storage));
        fc_subscriber_storage.callback = callback;
        fc_subscriber_storage.userdata = userdata;
        /* Release: the callback is in place before a runtime call can see the subscriber. */
        __atomic_store_n(&fc_subscriber, &fc_subscriber_storage, __ATOMIC_RELEASE);
        *subscriber = &fc_subscriber_storage;
    }
    pthread_mutex_unlock(&fc_subscribe_lock);
    return result;
}

FC_API CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                              CUpti_CallbackFunc callback, void *userdata,
                                              CUpti_SubscriberParams *params)
{
    static const char other[] = "fake-other-profiler";
    CUptiResult result = cuptiSubscribe(subscriber, callback, userdata);

    if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params &&
        params->oldSubscriberName && params->oldSubscriberSize > 0) {
        strncpy(params->oldSubscriberName, fc_busy ? other : "fake-subscriber",
                params->oldSubscriberSize - 1);
        params->oldSubscriberName[params->oldSubscriberSize - 1] = '\0';
    }
    return result;
}

static int fc_is_subscriber(CUpti_SubscriberHandle subscriber)
{
    return subscriber && subscriber == fc_current_subscriber();
}

FC_API CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    CUptiResult result = CUPTI_ERROR_INVALID_PARAMETER;

    pthread_mutex_lock(&fc_subscribe_lock);
    if (fc_is_subscriber(subscriber)) {
        __atomic_store_n(&fc_subscriber, NULL, __ATOMIC_RELEASE);
        result = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&fc_subscribe_lock);
    return result;
}

static int fc_domain_valid(CUpti_CallbackDomain domain)
{
    return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE;
}

static void fc_set_domain(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain, uint8_t on)
{
    uint32_t cbid;

    __atomic_store_n(&sub->domains[domain], on, __ATOMIC_RELAXED);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        for (cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; cbid++)
            __atomic_store_n(&sub->runtime[cbid], on, __ATOMIC_RELAXED);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        for (cbid = 1; cbid < CUPTI_CBID_RESOURCE_SIZE; cbid++)
            __atomic_store_n(&sub->resource[cbid], on, __ATOMIC_RELAXED);
}

FC_API CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain)
{
    if (!fc_is_subscriber(subscriber) || !fc_domain_valid(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    fc_set_domain(subscriber, domain, enable != 0);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable,
                                                  CUpti_SubscriberHandle subscriber)
{
    int domain;

    if (!fc_is_subscriber(subscriber))
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (domain = CUPTI_CB_DOMAIN_DRIVER_API; domain < CUPTI_CB_DOMAIN_SIZE; domain++)
        fc_set_domain(subscriber, (CUpti_CallbackDomain)domain, enable != 0);
    return CUPTI_SUCCESS;
}

static uint32_t fc_cbid_count(CUpti_CallbackDomain domain)
{
    switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
        return CUPTI_RUNTIME_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_DRIVER_API:
        return CUPTI_DRIVER_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RESOURCE:
        return CUPTI_CBID_RESOURCE_SIZE;
    default:
        return 0;
    }
}

FC_API CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!fc_is_subscriber(subscriber) || !fc_domain_valid(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fc_cbid_count(domain) && (cbid == 0 || cbid >= fc_cbid_count(domain)))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        __atomic_store_n(&subscriber->runtime[cbid], enable != 0, __ATOMIC_RELAXED);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        __atomic_store_n(&subscriber->resource[cbid], enable != 0, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable,
                                                  CUpti_SubscriberHandle subscriber,
                                                  CUpti_CallbackDomain domain,
                                                  CUpti_CallbackId cbid)
{
    if (!enable || !fc_is_subscriber(subscriber) || !fc_domain_valid(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fc_cbid_count(domain) && (cbid == 0 || cbid >= fc_cbid_count(domain)))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        *enable = __atomic_load_n(&subscriber->runtime[cbid], __ATOMIC_RELAXED);
    else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        *enable = __atomic_load_n(&subscriber->resource[cbid], __ATOMIC_RELAXED);
    else
        *enable = __atomic_load_n(&subscriber->domains[domain], __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                 const char **name)
{
    const char *found = NULL;

    if (!name)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid < sizeof(fake_cupti_runtime_names) / sizeof(fake_cupti_runtime_names[0]))
        found = fake_cupti_runtime_names[cbid];
    else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
             cbid < sizeof(fake_cupti_driver_names) / sizeof(fake_cupti_driver_names[0]))
        found = fake_cupti_driver_names[cbid];
    if (!found)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = found;
    return CUPTI_SUCCESS;
}

/* ---- versions, results, ids ---- */

FC_API CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    size_t i;

    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (i = 0; i < sizeof(fake_cupti_results) / sizeof(fake_cupti_results[0]); i++) {
        if (fake_cupti_results[i].code == result) {
            *str = fake_cupti_results[i].name;
            return CUPTI_SUCCESS;
        }
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

FC_API CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    (void)context;
    if (!deviceId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *deviceId = FC_DEVICE_ID;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
    if (!contextId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (context && context != &fc_context)
        return CUPTI_ERROR_INVALID_CONTEXT;
    *contextId = FC_CONTEXT_ID;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream,
                                               uint8_t perThreadStream, uint32_t *streamId)
{
    const struct fake_cudart_link *rt = __atomic_load_n(&fc_cudart, __ATOMIC_ACQUIRE);
    uint32_t id;

    (void)context, (void)perThreadStream;
    if (!streamId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!rt || !(id = rt->stream_id(stream)))
        return CUPTI_ERROR_INVALID_STREAM;
    *streamId = id;
    return CUPTI_SUCCESS;
}

FC_API CUptiResult CUPTIAPI cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t *streamId)
{
    return cuptiGetStreamIdEx(context, stream, 0, streamId);
}

FC_API CUptiResult CUPTIAPI cuptiFinalize(void)
{
    pthread_mutex_lock(&fc_subscribe_lock);
    __atomic_store_n(&fc_subscriber, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fc_subscribe_lock);
    if (!fc_no_driver)
        fc_activity_finalize();
    return CUPTI_SUCCESS;
}
