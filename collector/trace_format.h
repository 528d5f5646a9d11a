/* The profrun trace file format: the one header shared by the writer (collector/) and
 * the reader (report/).
 *
 * A trace is a file header followed by records. Every record starts with
 * struct prof_record_header {type, size}; size counts the header, is a multiple of 8 and
 * lets a reader skip a type it does not know. Records are appended only, so a file cut
 * anywhere reads up to the last whole record.
 *
 * Records written by the collector on behalf of a thread are preceded by a
 * PROF_REC_THREAD record naming that thread: every record up to the next THREAD record
 * belongs to it. Timestamps are raw clock ticks; PROF_REC_CLOCK records pair ticks with
 * CLOCK_MONOTONIC and CLOCK_REALTIME nanoseconds so a reader converts them. */
#ifndef PROF_TRACE_FORMAT_H
#define PROF_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define PROF_TRACE_MAGIC "PROFTRC\n"
#define PROF_TRACE_MAGIC_LEN 8
#define PROF_TRACE_VERSION 1
#define PROF_RECORD_ALIGN 8
#define PROF_RECORD_MAX 65528 /* size is a u16 and a multiple of 8 */

/* Feature bits: what the writer may emit. A reader ignores bits it does not know. */
enum prof_feature {
    PROF_FEATURE_CUDART = 1u << 0,    /* CUDA runtime wrappers */
    PROF_FEATURE_TSC_CLOCK = 1u << 1, /* ticks are TSC cycles, else CLOCK_MONOTONIC ns */
    PROF_FEATURE_STACKS = 1u << 2     /* API calls may be followed by a STACK_REF */
};

struct prof_file_header {
    char magic[PROF_TRACE_MAGIC_LEN];
    uint16_t version;
    uint16_t header_size; /* bytes from the start of the file to the first record */
    uint32_t features;
    uint64_t reserved;
};
_Static_assert(sizeof(struct prof_file_header) == 24, "file header is 24 bytes");
_Static_assert(offsetof(struct prof_file_header, version) == 8, "version offset");
_Static_assert(offsetof(struct prof_file_header, header_size) == 10, "header_size offset");
_Static_assert(offsetof(struct prof_file_header, features) == 12, "features offset");

enum prof_record_type {
    PROF_REC_PAD = 0,         /* filler; skipped */
    PROF_REC_META = 1,        /* process metadata: header, then "key\0value\0" at byte 4 */
    PROF_REC_STRING = 2,      /* interned string: id, text */
    PROF_REC_API_NAME = 3,    /* API id -> name, category, argument names */
    PROF_REC_THREAD = 4,      /* the records that follow belong to this thread */
    PROF_REC_THREAD_NAME = 5, /* thread id -> name */
    PROF_REC_CLOCK = 6,       /* ticks <-> monotonic and realtime nanoseconds */
    PROF_REC_LOST = 7,        /* events a full ring dropped */
    PROF_REC_API_CALL = 8,    /* one intercepted call; u64 arguments may follow */
    PROF_REC_SYMBOL = 9,      /* an address (host function, kernel handle) -> string id */
    PROF_REC_NOTE = 10,       /* a message from the profiler (a part turned off, …) */
    PROF_REC_END = 11,        /* the process finished writing cleanly */
    PROF_REC_LOST_CALLS = 12, /* calls of one API whose records a full ring dropped */
    PROF_REC_PY_FUNC = 13,    /* a Python function, or a C function called from Python */
    PROF_REC_PY_NODE = 14,    /* a node of one thread's Python call tree */
    PROF_REC_PY_STATS = 15,   /* cumulative counts and times of one call-tree node */
    PROF_REC_PY_SPAN = 16,    /* one Python call above the span threshold (timeline) */
    PROF_REC_PY_GAP = 17,     /* an interval this thread's Python calls were not seen */
    PROF_REC_GPU_KERNEL = 18, /* a kernel that ran on a GPU (CUPTI) */
    PROF_REC_GPU_MEMCPY = 19, /* a copy that ran on a GPU (CUPTI) */
    PROF_REC_GPU_MEMSET = 20, /* a memset that ran on a GPU (CUPTI) */
    PROF_REC_GPU_API =
        21, /* a CUDA runtime or driver call CUPTI reported, with its correlation id */
    PROF_REC_GPU_API_NAME = 22, /* CUPTI (domain, callback id) -> name */
    PROF_REC_GPU_DEVICE = 23,   /* properties of one GPU */
    PROF_REC_NVTX = 24,         /* an NVTX range push/pop/start/end or mark */
    PROF_REC_TORCH_OP = 25,     /* one PyTorch operator or record_function scope (RecordFunction) */
    PROF_REC_TORCH_MEM = 26,    /* one c10::alloc_cpu / c10::free_cpu call (CPU tensor memory) */
    PROF_REC_TORCH_DEV_MEM = 27,    /* one report of torch's allocators (CUDA caching allocator) */
    PROF_REC_ACTION = 28,           /* a named action started or stopped (Lightning's profiler) */
    PROF_REC_TORCH_NODE = 29,       /* a node of one thread's PyTorch operator tree */
    PROF_REC_TORCH_STATS = 30,      /* cumulative counts, times and memory of one such node */
    PROF_REC_NVTX_LOST = 31,        /* NVTX ranges whose POP a full ring dropped, summed per name */
    PROF_REC_TORCH_MEM_TOTALS = 32, /* tensor memory of one device, counted in the process */
    /* Call stacks (preload/stacks/); numbered apart so other record types can grow. */
    PROF_REC_STACK = 40,     /* a distinct native call stack: id -> return addresses */
    PROF_REC_STACK_REF = 41, /* the stack of the thread's API_CALL that started at `start` */
    PROF_REC_MAP = 42,       /* a loaded object: path, load bias, address range, build id */
    PROF_REC_SAMPLE = 43,    /* one CPU-time sample of a thread: its stack */
    PROF_REC_STACK_MEM = 44, /* a large tensor block allocated (with its stack) or freed */
    /* Python frames read by the sampler itself (no Python hook needed) */
    PROF_REC_PY_CODE = 45,   /* a code object the sampler saw: id -> qualname, file, line */
    PROF_REC_SAMPLE_PY = 46, /* the Python frames of the SAMPLE that follows it */
    /* a thread's Python counts taken at training-step boundaries */
    PROF_REC_PY_CUT = 47,       /* one cut: its number and time */
    PROF_REC_PY_CUT_STATS = 48, /* one node's counts at a cut */
    PROF_REC_TORCH_SCOPE = 49,  /* a record_function scope that marks steps, never dropped */
    PROF_REC_PY_GC = 50,        /* one collection of Python's garbage collector */
    PROF_REC_LOST_KEPT = 51,    /* of a LOST record's events, the kept ones (phase spans) */
    PROF_REC_TORCH_OP_SHORT = 52, /* a TORCH_OP in 32 bytes (most ops): readers widen it */
    PROF_REC_TYPE_COUNT
};

struct prof_record_header {
    uint16_t type;
    uint16_t size; /* whole record, header included; multiple of 8 */
};
_Static_assert(sizeof(struct prof_record_header) == 4, "record header is 4 bytes");

/* Categories of intercepted API calls. */
enum prof_api_category {
    PROF_CAT_OTHER = 0,
    PROF_CAT_MEMORY = 1, /* allocation and free */
    PROF_CAT_COPY = 2,
    PROF_CAT_SET = 3,
    PROF_CAT_LAUNCH = 4,
    PROF_CAT_SYNC = 5,
    PROF_CAT_STREAM = 6, /* streams and events */
    PROF_CAT_DEVICE = 7,
    PROF_CAT_LIBRARY = 8, /* cuBLAS, cuBLASLt, cuDNN compute calls (library spans) */
    PROF_CAT_COMM = 9,    /* NCCL and MPI calls (spans; see preload/comm/comm.h) */
    PROF_CAT_COUNT
};

/* One intercepted call: 24 bytes, then (size - 24) / 8 u64 arguments whose names the
 * API_NAME record of the same api id lists, comma separated. The names a reader may rely on:
 *   bytes          size of an allocation, copy or set
 *   kind           cudaMemcpyKind (0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 Default)
 *   src_device, dst_device  devices of a peer copy
 *   device_alloc, host_alloc, managed_alloc  pointer an allocation returned (0 on failure)
 *   free_ptr       pointer freed
 *   set_device     device a successful call makes the thread's current one
 *   device         device a call asks about
 *   func           host stub or cudaKernel_t of a launch (see SYMBOL)
 *   stub           host stub a registration call names (not a launch)
 *   grid, block    dim3: x in bits 0-31, y in 32-47, z in 48-63
 *   shmem, stream, event, graph_exec, value, count  as named
 * Readers ignore names they do not know. */
struct prof_rec_api_call {
    struct prof_record_header h;
    uint16_t api;
    int16_t result; /* the call's return code, clamped to the int16 range */
    uint64_t start; /* ticks */
    uint64_t end;   /* ticks */
};
_Static_assert(sizeof(struct prof_rec_api_call) == 24, "call record is 24 bytes");
_Static_assert(offsetof(struct prof_rec_api_call, start) == 8, "call start offset");
_Static_assert(offsetof(struct prof_rec_api_call, end) == 16, "call end offset");

/* API_NAME: followed by "name\0arg,names\0", padded to 8. */
struct prof_rec_api_name {
    struct prof_record_header h;
    uint16_t api;
    uint8_t category;
    uint8_t nargs;
};
_Static_assert(sizeof(struct prof_rec_api_name) == 8, "api name record header");

/* STRING: followed by the NUL-terminated text, padded to 8. */
struct prof_rec_string {
    struct prof_record_header h;
    uint32_t id;
};
_Static_assert(sizeof(struct prof_rec_string) == 8, "string record header");

struct prof_rec_thread {
    struct prof_record_header h;
    uint32_t tid;
};
_Static_assert(sizeof(struct prof_rec_thread) == 8, "thread record");

/* THREAD_NAME: followed by the NUL-terminated name, padded to 8. */
struct prof_rec_thread_name {
    struct prof_record_header h;
    uint32_t tid;
};
_Static_assert(sizeof(struct prof_rec_thread_name) == 8, "thread name record header");

struct prof_rec_clock {
    struct prof_record_header h;
    uint32_t reserved;
    uint64_t ticks;
    uint64_t monotonic_ns;
    uint64_t realtime_ns;
};
_Static_assert(sizeof(struct prof_rec_clock) == 32, "clock record");
_Static_assert(offsetof(struct prof_rec_clock, ticks) == 8, "clock ticks offset");

struct prof_rec_lost {
    struct prof_record_header h;
    uint32_t tid;
    uint64_t count; /* events dropped since the previous LOST record of this thread */
};
_Static_assert(sizeof(struct prof_rec_lost) == 16, "lost record");

/* Follows a LOST record: how many of its events were ones the ring keeps room for (a
 * training phase's span, ring_reserve_kept) — 0 of them when no such record follows.
 * The room kept is META ring_kept_bytes. */
struct prof_rec_lost_kept {
    struct prof_record_header h;
    uint32_t tid;
    uint64_t count;
};
_Static_assert(sizeof(struct prof_rec_lost_kept) == 16, "lost kept record");

/* What dropped API_CALL records held, summed per API and thread, so that call counts,
 * errors and total time stay exact when the timeline loses records. Counts since the
 * previous LOST_CALLS record of the same api and thread. */
struct prof_rec_lost_calls {
    struct prof_record_header h;
    uint16_t api;
    uint16_t reserved;
    uint32_t tid;
    uint32_t reserved2;
    uint64_t calls;
    uint64_t errors;
    uint64_t ticks; /* sum of (end - start) */
};
_Static_assert(sizeof(struct prof_rec_lost_calls) == 40, "lost calls record");
_Static_assert(offsetof(struct prof_rec_lost_calls, calls) == 16, "lost calls offset");

/* API ids are below this (each interposed library has a base; see preload/). */
#define PROF_API_MAX 2048

/* SYMBOL kinds: a host stub address registered for a kernel, or a kernel handle
 * (cudaKernel_t) whose target is another address. */
enum prof_symbol_kind {
    PROF_SYMBOL_KERNEL_NAME = 1, /* address -> string id of the (mangled) kernel name */
    PROF_SYMBOL_KERNEL_ALIAS = 2 /* address -> the address in 'target' */
};

struct prof_rec_symbol {
    struct prof_record_header h;
    uint16_t kind;
    uint16_t reserved;
    uint32_t string_id;
    uint32_t reserved2;
    uint64_t address;
    uint64_t target;
};
_Static_assert(sizeof(struct prof_rec_symbol) == 32, "symbol record");

/* NOTE: followed by the NUL-terminated message, padded to 8. */
struct prof_rec_note {
    struct prof_record_header h;
    uint32_t reserved;
};
_Static_assert(sizeof(struct prof_rec_note) == 8, "note record header");

struct prof_rec_end {
    struct prof_record_header h;
    uint32_t signal; /* the signal that ended the process (its default action), or 0 */
    uint64_t ticks;
    uint64_t events_written;
    uint64_t events_lost;
};
_Static_assert(sizeof(struct prof_rec_end) == 32, "end record");

/* ---- Python ----
 * Python calls are aggregated per thread into a call tree (META python.scheme =
 * "calltree"): a node is a call path (parent node + function). The tree's counts are
 * exact — every call and return the interpreter reported — whatever the volume; only the
 * timeline (PY_SPAN) is limited to calls at or above META python.span_threshold_ns.
 * PY_NODE and PY_STATS records follow a THREAD record naming the tree's thread; node ids
 * are unique in the process, 0 means "no parent" (a root). PY_STATS values are
 * cumulative: a later record for the same node replaces an earlier one. */

enum prof_py_func_kind {
    PROF_PY_FUNC_PYTHON = 1, /* a code object: name is co_name, file and line its own */
    PROF_PY_FUNC_C = 2       /* a builtin: name as cProfile shows it, e.g.
                              * "<built-in method builtins.len>" or
                              * "<method 'append' of 'list' objects>"; file "~", line 0 */
};

struct prof_rec_py_func {
    struct prof_record_header h;
    uint32_t func_id;
    uint32_t name_sid;     /* string ids (STRING records); 0 = unknown */
    uint32_t qualname_sid; /* qualified name (co_qualname, or built for Python < 3.11) */
    uint32_t file_sid;
    uint32_t module_sid;
    uint32_t line; /* co_firstlineno */
    uint16_t kind;
    uint16_t reserved;
};
_Static_assert(sizeof(struct prof_rec_py_func) == 32, "py func record");

struct prof_rec_py_node {
    struct prof_record_header h;
    uint32_t node_id;
    uint32_t parent_id; /* 0: called at the top of this thread's stack */
    uint32_t func_id;
};
_Static_assert(sizeof(struct prof_rec_py_node) == 16, "py node record");

struct prof_rec_py_stats {
    struct prof_record_header h;
    uint32_t node_id;
    uint64_t calls;
    uint64_t total_ticks; /* inclusive time of every call of this node */
    uint64_t self_ticks;  /* total_ticks minus the time of the node's children */
    uint64_t api_calls;   /* intercepted API calls (CUDA, ...) made with this node innermost */
    uint64_t api_ticks;   /* their time */
};
_Static_assert(sizeof(struct prof_rec_py_stats) == 48, "py stats record");
_Static_assert(offsetof(struct prof_rec_py_stats, calls) == 8, "py stats calls offset");

/* Python counts at training-step boundaries (python_tree_cuts.c), so that a report can give
 * the Python functions of a run of steps exactly: the thread that ends a step (the end of
 * an Optimizer.step# scope; once a ProfilerStep# scope began on it, the start of each)
 * cuts its own call tree there, the boundaries numbered 1, 2, ... A node's counts at cut n
 * are those of its PY_CUT_STATS record with the smallest cut >= n; with none, its final
 * counts (PY_STATS). A call under way at the cut counts its time up to the cut (its call
 * counts when it returns). A PY_CUT record says that cut n was taken, at `ticks`; cut 0:
 * some of the thread's records could not be written, none of its cuts holds. Every
 * boundary is cut, and only some cuts are kept (the first 8, the 16th and 32nd, and the last
 * before the process ended); the records of those are complete unless the thread's ring
 * dropped events (LOST). */
struct prof_rec_py_cut {
    struct prof_record_header h;
    uint32_t tid; /* the thread whose tree was cut */
    uint32_t cut; /* 1-based, per thread */
    uint32_t reserved;
    uint64_t ticks;
};
_Static_assert(sizeof(struct prof_rec_py_cut) == 24, "py cut record");

struct prof_rec_py_cut_stats {
    struct prof_record_header h;
    uint32_t node_id;
    uint32_t cut;
    uint32_t reserved;
    uint64_t calls, total_ticks, self_ticks, api_calls, api_ticks; /* as PY_STATS's */
};
_Static_assert(sizeof(struct prof_rec_py_cut_stats) == 56, "py cut stats record");

struct prof_rec_py_span {
    struct prof_record_header h;
    uint32_t node_id;
    uint64_t start; /* ticks */
    uint64_t end;
};
_Static_assert(sizeof(struct prof_rec_py_span) == 24, "py span record");

enum prof_py_gap_reason {
    PROF_PY_GAP_OTHER_PROFILER = 1 /* the program installed its own profile function */
};

struct prof_rec_py_gap {
    struct prof_record_header h;
    uint32_t reason;
    uint64_t start; /* ticks */
    uint64_t end;   /* ticks; 0: not covered until the end of the trace */
};
_Static_assert(sizeof(struct prof_rec_py_gap) == 24, "py gap record");

/* ---- GPU (CUPTI) ----
 * GPU_KERNEL/MEMCPY/MEMSET times are CLOCK_MONOTONIC nanoseconds (CUPTI's timestamps come
 * from our timestamp callback, which returns them), not ticks: a reader converts CPU
 * ticks to the same clock with the CLOCK records. correlation ties a GPU record to the
 * GPU_API record of the call that launched it (same process). GPU_API records follow a
 * THREAD record (the calling thread) and are timed in ticks like API_CALL; py_node is the
 * innermost Python call-tree node of that thread at the call (0: none). */

struct prof_rec_gpu_kernel {
    struct prof_record_header h;
    uint32_t correlation;
    uint64_t start_ns;
    uint64_t end_ns;
    uint32_t name_sid; /* mangled kernel name */
    uint32_t device;
    uint32_t context;
    uint32_t stream;
    uint64_t grid; /* dim3 packed like API_CALL's grid */
    uint64_t block;
    uint32_t registers;    /* per thread */
    uint32_t shared_bytes; /* static + dynamic */
};
_Static_assert(sizeof(struct prof_rec_gpu_kernel) == 64, "gpu kernel record");

enum prof_gpu_copy_flags {
    PROF_GPU_COPY_ASYNC = 1 /* CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC */
};

struct prof_rec_gpu_memcpy {
    struct prof_record_header h;
    uint32_t correlation;
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t bytes;
    uint8_t copy_kind; /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ... */
    uint8_t src_kind;  /* CUpti_ActivityMemoryKind: 1 pageable, 2 pinned, 3 device, ... */
    uint8_t dst_kind;
    uint8_t flags;
    uint32_t device;
    uint32_t stream;
    uint32_t reserved;
};
_Static_assert(sizeof(struct prof_rec_gpu_memcpy) == 48, "gpu memcpy record");

struct prof_rec_gpu_memset {
    struct prof_record_header h;
    uint32_t correlation;
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t bytes;
    uint32_t value;
    uint32_t device;
    uint32_t stream;
    uint32_t reserved;
};
_Static_assert(sizeof(struct prof_rec_gpu_memset) == 48, "gpu memset record");

enum prof_gpu_api_domain {
    PROF_GPU_API_RUNTIME = 1, /* CUPTI_CB_DOMAIN_RUNTIME_API */
    PROF_GPU_API_DRIVER = 2   /* CUPTI_CB_DOMAIN_DRIVER_API */
};

struct prof_rec_gpu_api {
    struct prof_record_header h;
    uint16_t domain;
    uint16_t cbid;
    uint32_t correlation;
    uint32_t py_node;
    uint64_t start; /* ticks */
    uint64_t end;
};
_Static_assert(sizeof(struct prof_rec_gpu_api) == 32, "gpu api record");

/* GPU_API_NAME: followed by the NUL-terminated name, padded to 8. */
struct prof_rec_gpu_api_name {
    struct prof_record_header h;
    uint16_t domain;
    uint16_t cbid;
};
_Static_assert(sizeof(struct prof_rec_gpu_api_name) == 8, "gpu api name record header");

/* GPU_DEVICE: followed by the NUL-terminated device name, padded to 8. */
struct prof_rec_gpu_device {
    struct prof_record_header h;
    uint32_t device;
    uint64_t global_memory_bytes;
    uint32_t sm_count;
    uint32_t core_clock_khz;
    uint32_t memory_clock_khz;
    uint16_t compute_major;
    uint16_t compute_minor;
};
_Static_assert(sizeof(struct prof_rec_gpu_device) == 32, "gpu device record header");

enum prof_nvtx_kind {
    PROF_NVTX_PUSH = 1, /* nvtxRangePush: a range on this thread's stack */
    PROF_NVTX_POP = 2,
    PROF_NVTX_START = 3, /* nvtxRangeStart: a range that may end on another thread (id) */
    PROF_NVTX_END = 4,
    PROF_NVTX_MARK = 5
};

/* NVTX records follow a THREAD record (the calling thread). A POP names the range it
 * closes: name_sid and, in id, the ticks of its PUSH (both 0 from older writers, or past
 * 128 levels of nesting), so that the range counts even when its PUSH was dropped. */
struct prof_rec_nvtx {
    struct prof_record_header h;
    uint16_t kind;
    uint16_t reserved;
    uint32_t name_sid;   /* 0 for END */
    uint32_t domain_sid; /* 0: the default domain */
    uint64_t id;         /* START/END range id; a POP's PUSH ticks */
    uint64_t ticks;
};
_Static_assert(sizeof(struct prof_rec_nvtx) == 32, "nvtx record");

/* Pushed ranges of one thread, name and domain, whose POP record a full ring dropped:
 * counts since the previous NVTX_LOST of the same thread, name and domain. The actions
 * table counts them; their GPU time is not known. */
struct prof_rec_nvtx_lost {
    struct prof_record_header h;
    uint32_t tid;
    uint32_t name_sid;
    uint32_t domain_sid;
    uint64_t count;
    uint64_t ticks; /* sum of (pop - push) */
};
_Static_assert(sizeof(struct prof_rec_nvtx_lost) == 32, "nvtx lost record");

#include "trace_format_torch.h" /* ---- PyTorch ---- */

/* ---- Python's garbage collector ----
 * One collection, from gc.callbacks (start and stop, on the thread whose allocation set it
 * off, under the GIL): its pause is that thread's, inside whatever call was running. */
struct prof_rec_py_gc {
    struct prof_record_header h;
    uint16_t generation; /* the oldest generation collected: 0, 1, 2 */
    uint16_t reserved;
    uint64_t start; /* ticks */
    uint64_t end;
    uint64_t collected; /* unreachable objects found */
};
_Static_assert(sizeof(struct prof_rec_py_gc) == 32, "python gc record");

/* ---- Actions ----
 * A named action started or stopped by a framework's own profiler calls, as the program
 * made them: Lightning's Trainer calls profiler.start(action_name) / stop(action_name)
 * (PassThroughProfiler by default) around every hook, loop step and dataloader fetch.
 * Follows a THREAD record (the calling thread); a STOP ends the latest open START of the
 * same name in the process. */
enum prof_action_kind { PROF_ACTION_START = 1, PROF_ACTION_STOP = 2 };
enum prof_action_source { PROF_ACTION_LIGHTNING = 1 };

struct prof_rec_action {
    struct prof_record_header h;
    uint16_t kind;   /* enum prof_action_kind */
    uint16_t source; /* enum prof_action_source */
    uint32_t name_sid;
    uint32_t reserved;
    uint64_t ticks;
};
_Static_assert(sizeof(struct prof_rec_action) == 24, "action record");

/* ---- Call stacks (PROF_STACKS, PROF_SAMPLE_HZ) ----
 * A stack is captured in the process as raw return addresses, innermost first, and
 * deduplicated there: the first use of a distinct stack in a file writes its STACK record,
 * every use writes its 4-byte id (STACK_REF or SAMPLE). Addresses are symbolized offline
 * through the MAP records of the objects loaded in the process. The first frames belong
 * to libprof.so itself (the capture); readers drop them by their MAP. */
#define PROF_STACK_MAX_FRAMES 128

struct prof_rec_stack {
    struct prof_record_header h;
    uint32_t stack_id; /* unique in the process; 0 is never used */
    uint32_t nframes;
    uint32_t py_node; /* the thread's innermost Python call-tree node then (0: none) */
    /* followed by nframes u64 addresses, innermost first */
};
_Static_assert(sizeof(struct prof_rec_stack) == 16, "stack record header");

struct prof_rec_stack_ref {
    struct prof_record_header h;
    uint32_t stack_id;
    uint64_t start; /* the start of the thread's API_CALL this stack belongs to */
};
_Static_assert(sizeof(struct prof_rec_stack_ref) == 16, "stack ref record");

struct prof_rec_sample {
    struct prof_record_header h;
    uint32_t stack_id; /* 0: the stack could not be taken (only the time counts) */
    uint64_t ticks;
    uint32_t py_node; /* the thread's innermost Python call-tree node then, 0 if none */
    uint32_t periods; /* sampling periods this sample stands for: 1 + the timer's overruns
                       * (a CPU-time timer fires on the scheduler tick after it expires) */
    /* Added later: a record of the first form ends here (24 bytes); readers check the
     * size. */
    uint32_t op_sid;   /* the thread's innermost PyTorch op then: its name's string, 0: none */
    uint32_t nvtx_sid; /* its innermost pushed NVTX range (the default domain's, else
                        * another domain's): its name's string, 0: none */
};
_Static_assert(sizeof(struct prof_rec_sample) == 32, "sample record");
_Static_assert(offsetof(struct prof_rec_sample, op_sid) == 24, "sample record, first form");
#define PROF_REC_SAMPLE_FIRST_SIZE 24

/* A tensor block of at least PROF_STACK_MIN_BYTES: allocated (bytes > 0, its stack) or
 * freed (bytes < 0, stack_id 0), on the CPU (device_type 0) or a device; the thread's
 * innermost Python node at that moment. Readers find the blocks live at a memory peak. */
struct prof_rec_stack_mem {
    struct prof_record_header h;
    uint32_t stack_id;
    int64_t bytes;
    uint64_t ptr;
    uint64_t ticks;
    uint32_t py_node;
    int8_t device_type;
    int8_t device_index;
    uint16_t reserved;
};
_Static_assert(sizeof(struct prof_rec_stack_mem) == 40, "stack mem record");

/* Python frames read by the sampler from the sampled thread's frame chain (when no Python
 * call-tree node names them: PROF_PYTHON=0). A PY_CODE record defines a code object's id
 * (unique in the process) the first time a thread's samples name it; a SAMPLE_PY record
 * comes right before the SAMPLE record of the same thread and ticks whose Python frames it
 * lists. Both follow a THREAD record; readers that do not know them skip them. */
enum prof_py_code_flags {
    PROF_PY_CODE_QUALNAME = 1 /* the name is co_qualname (3.11+), else co_name */
};

/* PY_CODE: followed by "name\0file\0" (UTF-8), padded to 8. */
struct prof_rec_py_code {
    struct prof_record_header h;
    uint32_t code_id; /* never 0 */
    uint32_t line;    /* co_firstlineno */
    uint32_t flags;   /* enum prof_py_code_flags */
};
_Static_assert(sizeof(struct prof_rec_py_code) == 16, "py code record header");

enum prof_sample_py_flags {
    PROF_SAMPLE_PY_TRUNCATED = 1 /* the thread had more (outer) frames than were read */
};

/* SAMPLE_PY: followed by nframes u32 code ids, innermost first (0: a frame whose code
 * object could not be read), padded to 8. */
struct prof_rec_sample_py {
    struct prof_record_header h;
    uint16_t nframes;
    uint16_t flags; /* enum prof_sample_py_flags */
    uint64_t ticks; /* the ticks of the SAMPLE it belongs to */
};
_Static_assert(sizeof(struct prof_rec_sample_py) == 16, "sample py record header");

/* MAP: followed by the NUL-terminated path, padded to 8. */
struct prof_rec_map {
    struct prof_record_header h;
    uint16_t build_id_len; /* 0: none found */
    uint16_t reserved;
    uint64_t bias;  /* load bias (dlpi_addr): address = bias + ELF virtual address */
    uint64_t start; /* lowest and highest address its PT_LOAD segments cover */
    uint64_t end;
    uint8_t build_id[32];
};
_Static_assert(sizeof(struct prof_rec_map) == 64, "map record header");
_Static_assert(offsetof(struct prof_rec_map, bias) == 8, "map bias offset");

static inline uint32_t prof_record_align(uint32_t n)
{
    return (n + PROF_RECORD_ALIGN - 1) & ~(uint32_t)(PROF_RECORD_ALIGN - 1);
}

#endif
