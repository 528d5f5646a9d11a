/* timeline: the events of one trace file as spans, counters and launches in CLOCK_MONOTONIC
 * ns, handed one at a time to a writer (the Perfetto and Chrome trace exports), never held.
 *
 * Two passes over the file: timeline_load_defs keeps only what names and times the events
 * (META, strings, API and thread names, CLOCK, symbols, Python functions and nodes, GPU
 * devices) — its size grows with the program, not with the run; timeline_stream then reads
 * the file again and calls back once per event in file order. Spans come when they end
 * (a parent after its children); NVTX ranges and Lightning actions are paired on the way
 * with a stack per thread (or per range id / action name) holding only what is open. */
#ifndef REPORT_TIMELINE_H
#define REPORT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum timeline_kind {
    TIMELINE_PYTHON,  /* PY_SPAN: a Python call above the span threshold */
    TIMELINE_OP,      /* TORCH_OP other than a record_function scope */
    TIMELINE_SCOPE,   /* TORCH_OP of USER_SCOPE: record_function("...") */
    TIMELINE_API,     /* API_CALL of the CUDA runtime (our wrappers) */
    TIMELINE_LIBRARY, /* API_CALL of cuBLAS, cuBLASLt, cuDNN */
    TIMELINE_COMM,    /* API_CALL of NCCL or MPI */
    TIMELINE_RUNTIME, /* GPU_API, CUPTI's runtime domain: carries the correlation id */
    TIMELINE_DRIVER,  /* GPU_API, CUPTI's driver domain */
    TIMELINE_NVTX,    /* an NVTX range (or a mark: start == end) */
    TIMELINE_ACTION,  /* a Lightning action (ACTION START .. STOP) */
    TIMELINE_KERNEL,  /* GPU_KERNEL */
    TIMELINE_MEMCPY,  /* GPU_MEMCPY */
    TIMELINE_MEMSET,  /* GPU_MEMSET */
    TIMELINE_MEMORY,  /* live tensor bytes of one device after an allocation or free */
    TIMELINE_STEP,    /* a training step (model.h), "ProfilerStep#N", after the other events;
                       * not sent when the trace has torch's own ProfilerStep#N scopes */
    TIMELINE_KIND_COUNT
};

struct timeline_event {
    uint8_t kind;
    uint32_t tid;              /* CPU events (MEMORY: the calling thread) */
    uint32_t device, stream;   /* GPU events */
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; MEMORY: both the time of the change */
    const char *name;
    uint64_t name_key;    /* unique per name within the process: kind << 48 | source id */
    uint32_t correlation; /* RUNTIME, DRIVER and GPU events; 0: none */
    uint32_t cbid;        /* RUNTIME, DRIVER */
    const char *shapes;   /* OP, SCOPE with PROF_SHAPES=1; else NULL */
    uint32_t shapes_sid;
    int64_t sequence_nr;                   /* OP, SCOPE; -1: none */
    uint8_t scope;                         /* OP: at::RecordScope (1: a backward function) */
    uint64_t bytes;                        /* MEMCPY, MEMSET */
    uint8_t copy_kind, src_kind, dst_kind; /* MEMCPY (CUPTI's kinds) */
    uint32_t py_node;                      /* PYTHON: the call-tree node */
    uint64_t grid, block;  /* KERNEL: dim3 packed as the record's (x | y << 32 | z << 48) */
    uint32_t registers;    /* KERNEL: per thread */
    uint32_t shared_bytes; /* KERNEL: static + dynamic shared memory per block */
    /* MEMORY: device (c10::DeviceType, index; CPU is 0, -1), change, live and reserved
     * bytes after it (reserved: devices only), the block's address. */
    int8_t dev_type, dev_index;
    int64_t delta, live;
    uint64_t reserved, ptr;
};

/* A writer's callback: 0 to go on, -1 to stop (timeline_stream then returns -1). */
typedef int (*timeline_fn)(void *ctx, const struct timeline_event *ev);

/* The definitions of one trace file (no event is kept): a model whose names, threads,
 * Python tree and clock fit are filled and whose tables are empty. NULL with a one-line
 * message in err when the file cannot be read as a trace. */
struct model_process *timeline_load_defs(const char *path, char *err, size_t errlen);

/* Sets of ids (idbits, hashmap.h), out of memory ending the report. */
void timeline_bits_add(struct idbits *bits, uint64_t id);
/* Adds id; 1 when it was not in bits yet. */
int timeline_bits_once(struct idbits *bits, uint64_t id);

/* 1 when p's file has both a CUPTI API call (the launch) and a GPU activity (kernel, copy,
 * set) with this correlation id: a launch arrow (flow) is drawn only between the two, so
 * that none starts without an end — a launch that failed or that made no activity (a
 * graph launch whose kernels CUPTI did not record) — or ends without a start. */
int timeline_has_flow(const struct model_process *p, uint32_t correlation);
/* Fills what timeline_has_flow reads for a model read whole (model_load_file), from its
 * GPU calls and activities; timeline_load_defs fills it as it reads. */
void timeline_flows_prepare(struct model_process *p);

/* Reads p->file again and calls fn for each event. 0, or -1 with a message in err (a file
 * that became unreadable, or fn asked to stop). */
int timeline_stream(const struct model_process *p, timeline_fn fn, void *ctx, char *err,
                    size_t errlen);

/* The spans of one track (a thread's, in a writer), made to nest: readers that build a
 * stack per thread (speedscope, HTA, TensorBoard's plugin, Perfetto) mis-nest the rest of a
 * thread after two spans that overlap without one holding the other. A span that begins
 * inside an earlier one and ends after it — a record_function scope begins inside the
 * Python call (_record_function_enter) that opens it and outlives it; its __exit__ call
 * begins inside the scope — is clipped to begin where that one ends: the later-ending span
 * gives up the overlap (at most the length of the call that opened it), neither is moved
 * under the other. A span that comes after one that ends later (out of the usual end
 * order) is clipped to end where that one begins if it overlaps its start. Keeps the last
 * few thousand top-level spans: memory stays bounded. */
struct timeline_nest;
struct timeline_nest *timeline_nest_new(void);
void timeline_nest_clip(struct timeline_nest *t, uint64_t *start, uint64_t *end);
void timeline_nest_free(struct timeline_nest *t);

/* Offset to add to a CLOCK_MONOTONIC time of p for CLOCK_REALTIME (from META
 * start_realtime_ns and start_monotonic_ns); 0 when unknown. */
int64_t timeline_realtime_offset(const struct model_process *p);

/* "python3 train.py" with " [rank N]" when ranked; into buf. */
const char *timeline_process_label(const struct model_process *p, char *buf, size_t len);

#endif
