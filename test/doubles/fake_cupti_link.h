/* The private link between the two device-side TEST DOUBLES: the fake libcudart.so.13
 * (fake_cudart*.c) tells the fake libcupti.so.13 (fake_cupti*.c) about every runtime call it
 * serves and every kernel, copy and memset it "executes"; the fake CUPTI turns them into
 * callbacks and activity records. Neither library needs the other.
 *
 * Rendezvous: the profiler loads libcupti with RTLD_LOCAL, so neither side can find the other
 * through the global scope. Each side exports one attach function that takes the other's link
 * and returns its own; whichever library loads second finds the first with
 * dlopen(SONAME, RTLD_NOLOAD) in its constructor and calls its attach function. The fake CUPTI
 * detaches itself in its destructor. Device times cross the link as CLOCK_MONOTONIC ns (the
 * fake runtime's clock); the fake CUPTI converts them to its own clock. */
#ifndef FAKE_CUPTI_LINK_H
#define FAKE_CUPTI_LINK_H

#include <stdint.h>

#define FAKE_CUPTI_LINK_VERSION 2
#define FAKE_CUPTI_ATTACH_SYMBOL "fake_cupti_attach_cudart"
#define FAKE_CUDART_ATTACH_SYMBOL "fake_cudart_attach_cupti"

/* One runtime API call, owned by the fake runtime's entry point from ENTER to EXIT. */
struct fake_cupti_call {
    uint32_t cbid;             /* CUpti_runtime_api_trace_cbid */
    uint32_t correlation_id;   /* 0: CUPTI was not tracing when the call began */
    const char *name;          /* "cudaMalloc": CUpti_CallbackData.functionName */
    const char *symbol;        /* the kernel's name for launches, else NULL */
    uint64_t start;            /* CUPTI time at ENTER */
    uint64_t correlation_data; /* CUpti_CallbackData.correlationData, kept from ENTER to EXIT */
};

struct fake_cupti_kernel {
    const char *name; /* as registered by __cudaRegisterFunction (mangled) */
    uint32_t grid[3], block[3];
    uint32_t dynamic_shared;
    uint32_t stream_id;
    uint64_t start_mono, end_mono;
};

/* Kinds are CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind values. */
struct fake_cupti_copy {
    uint8_t copy_kind, src_kind, dst_kind, async;
    uint64_t bytes;
    uint32_t stream_id;
    uint64_t start_mono, end_mono;
};

struct fake_cupti_set {
    uint32_t value;
    uint16_t memory_kind;
    uint8_t async;
    uint64_t bytes;
    uint32_t stream_id;
    uint64_t start_mono, end_mono;
};

/* Resource events (CUPTI_CB_DOMAIN_RESOURCE): the fake runtime's one context is destroyed by
 * cudaDeviceReset and at exit (an atexit handler registered at the first call, as the real
 * runtime's teardown is). */
enum fake_cupti_resource {
    FAKE_CUPTI_CONTEXT_CREATED, /* at the runtime's first call (to a CUPTI linked by then) */
    FAKE_CUPTI_CONTEXT_DESTROY_STARTING,
    FAKE_CUPTI_STREAM_CREATED,
    FAKE_CUPTI_STREAM_DESTROY_STARTING,
};

/* What the fake CUPTI offers the fake runtime. */
struct fake_cupti_link {
    uint32_t version;
    void (*api_enter)(struct fake_cupti_call *call);
    /* result points at the call's return value; code is that value as a number. */
    void (*api_exit)(struct fake_cupti_call *call, void *result, uint32_t code);
    void (*kernel)(const struct fake_cupti_call *call, const struct fake_cupti_kernel *k);
    void (*copy)(const struct fake_cupti_call *call, const struct fake_cupti_copy *c);
    void (*set)(const struct fake_cupti_call *call, const struct fake_cupti_set *s);
    void (*resource)(enum fake_cupti_resource what, const void *stream);
};

/* What the fake runtime offers the fake CUPTI. */
struct fake_cudart_link {
    uint32_t version;
    /* The CUPTI stream id of a cudaStream_t (0 when the handle is not a stream). */
    uint32_t (*stream_id)(const void *stream);
};

typedef const struct fake_cupti_link *(*fake_cupti_attach_fn)(const struct fake_cudart_link *);
typedef const struct fake_cudart_link *(*fake_cudart_attach_fn)(const struct fake_cupti_link *);

#endif
