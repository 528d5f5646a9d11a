/* model: what one trace file (one process) says, aggregated while its records stream by:
 * metadata, threads, API names and calls, kernels, memory and copies. Raw records are not
 * kept; only memory calls are held until the file ends, to pair allocations and frees in
 * time order across threads. Times are aggregated in ticks and converted to nanoseconds
 * once the file's CLOCK records are all known (model_finish). */
#ifndef REPORT_MODEL_H
#define REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "model_torch.h"
#include "trace_format.h"

/* Arguments the reporter understands, by the names API_NAME records give them. */
enum model_arg {
    MODEL_ARG_STREAM,
    MODEL_ARG_BYTES,
    MODEL_ARG_KIND,
    MODEL_ARG_DEVICE,
    MODEL_ARG_SRC_DEVICE,
    MODEL_ARG_DST_DEVICE,
    MODEL_ARG_FUNC,
    MODEL_ARG_GRID,
    MODEL_ARG_BLOCK,
    MODEL_ARG_SHMEM,
    MODEL_ARG_DEVICE_ALLOC,
    MODEL_ARG_HOST_ALLOC,
    MODEL_ARG_MANAGED_ALLOC,
    MODEL_ARG_FREE_PTR,
    MODEL_ARG_EVENT,
    MODEL_ARG_GRAPH_EXEC,
    MODEL_ARG_VALUE,
    MODEL_ARG_SET_DEVICE,
    MODEL_ARG_COUNT
};

enum model_space {
    MODEL_SPACE_DEVICE,
    MODEL_SPACE_HOST_PINNED,
    MODEL_SPACE_MANAGED,
    MODEL_SPACE_COUNT
};

enum model_direction {
    MODEL_DIR_HTOH, /* cudaMemcpyKind 0..4 in order */
    MODEL_DIR_HTOD,
    MODEL_DIR_DTOH,
    MODEL_DIR_DTOD,
    MODEL_DIR_DEFAULT,
    MODEL_DIR_PTOP,
    MODEL_DIR_MEMSET,
    MODEL_DIR_UNKNOWN,
    MODEL_DIR_COUNT
};

struct model_mem_stats {
    uint64_t alloc_count, alloc_bytes;
    uint64_t free_count, free_bytes;
    uint64_t peak_bytes;
    uint64_t live_bytes; /* while pairing; what is still allocated at the end */
};

struct model_copy_stats {
    uint64_t calls, errors, bytes;
    uint64_t ticks, ns;
};

struct model_api {
    int defined; /* an API_NAME record named it */
    uint16_t id;
    uint8_t category;
    char *name;
    size_t nargs;
    char **arg_names;
    int role[MODEL_ARG_COUNT]; /* argument index of each role, or -1 */
    int is_set_device;
    uint64_t calls, errors; /* recorded calls and dropped ones (LOST_CALLS) */
    uint64_t recorded;      /* calls with a record of their own: min and max come from these */
    uint64_t total_ticks, min_ticks, max_ticks;
    uint64_t total_ns, min_ns, max_ns; /* set by model_finish */
    int library;                       /* a library call (cuBLAS, cuBLASLt, cuDNN): a span */
    uint64_t gpu_kernels, gpu_ns;      /* kernels launched inside its calls (model_gpu.c) */
};

struct model_thread {
    uint32_t tid;
    char *name;
    uint64_t calls;
    uint64_t api_ticks, api_ns;
    uint64_t lost;
    int device; /* current device (cudaSetDevice), 0 at start */
};

struct model_kernel {
    uint64_t func; /* the address a launch passed */
    char *name;    /* demangled, set by model_finish */
    uint64_t launches, errors;
    uint64_t ticks, ns;
    struct u64map grids;  /* packed dim3 -> launches */
    struct u64map blocks; /* packed dim3 -> launches */
};

struct model_meta {
    char *key;
    char *value;
};

struct model_mem_event; /* private to model_memory.c */

/* ---- Python call trees (model_python.c) ---- */

struct model_py_func {
    uint32_t id;
    uint32_t name_sid, qualname_sid, file_sid, module_sid; /* resolved by model_finish */
    uint32_t line;
    uint16_t kind;                               /* enum prof_py_func_kind */
    const char *name, *qualname, *file, *module; /* into the process's strings; NULL: unknown */
};

/* One call path of one thread. Stats are the last PY_STATS of the node (they are
 * cumulative), in ticks while reading and in ns after model_finish. */
struct model_py_node {
    uint32_t id, parent, func;
    uint32_t tid;
    int defined; /* a PY_NODE record named it (else only PY_STATS did) */
    uint64_t calls, total_ticks, self_ticks, api_calls, api_ticks;
    uint64_t total_ns, self_ns, api_ns;
    uint64_t gpu_kernels, gpu_ns; /* kernels launched with this node innermost (model_gpu.c) */
};

struct model_py_gap {
    uint32_t tid, reason;
    uint64_t start_ticks, end_ticks; /* end 0: until the end of the trace */
    uint64_t start_ns, end_ns;       /* CLOCK_MONOTONIC; end_ns 0 as end_ticks */
};

/* Per thread: the functions its call tree holds and its calls (a summary keeps these
 * in place of the trees). */
struct model_py_thread_total {
    uint32_t tid;
    uint64_t functions, calls;
};

/* A PY_SPAN record (a call above the span threshold), kept for the steps (model_steps.c). */
struct model_py_span {
    uint64_t start, end; /* ticks */
    uint32_t node, tid;
};

struct model_python {
    struct model_py_span *span_list; /* freed by model_steps_finish (model_steps_keep_spans) */
    int8_t *node_action; /* per node (as nodes): its built-in action (model_torch_actions.c),
                          * -1: none; made at the end of the Python part */
    uint8_t *node_recompute; /* per node: 1 when a forward call under a backward's (activation
                              * checkpointing recomputing), made with node_action */
    int8_t *node_phase;      /* per node: its phase (model_steps_python_phase), made with them */
    struct model_builtin_memo *builtin_memo; /* model_torch_actions.c, until its part ends */
    size_t nspan_list, cap_span_list;
    struct model_py_func *funcs;
    size_t nfuncs, cap_funcs;
    struct idmap func_index; /* func_id -> index + 1 */
    struct model_py_node *nodes;
    size_t nnodes, cap_nodes;
    struct idmap node_index; /* node_id -> index + 1 */
    struct model_py_gap *gaps;
    size_t ngaps, cap_gaps;
    uint64_t spans;
    struct model_py_thread_total *thread_totals; /* read from a summary only */
    size_t nthread_totals;
    /* The part of the process asked (profreport --phase, enum model_window), from the step
     * thread's cuts (model_python_window.c): window_rows are the counts in the part of
     * the nodes that ran in it (the step thread's alone), by node index, steps
     * window_first to window_last; window MODEL_WINDOW_ALL: the tables give the whole
     * process, window_miss says why (enum model_py_window_miss). */
    struct model_py_window_row *window_rows;
    size_t nwindow_rows;
    uint8_t window, window_miss;
    uint32_t window_tid;
    uint64_t window_ns, window_first, window_last;
    size_t window_steps;
    struct model_py_cut *cuts; /* PY_CUT and PY_CUT_STATS records, until the file ends */
    size_t ncuts, cap_cuts;
    struct model_py_cut_stats *cut_stats;
    size_t ncut_stats, cap_cut_stats;
};

struct model_py_window_row {
    size_t index; /* in nodes */
    uint64_t calls, total_ns, self_ns, api_calls, api_ns;
    uint64_t gpu_kernels, gpu_ns; /* kernels launched with it innermost in the part */
};

struct model_py_cut {
    uint32_t tid, cut; /* cut 0: the thread's cuts are incomplete */
    uint64_t ticks, ns;
};
struct model_py_cut_stats {
    uint32_t node, cut;
    uint64_t v[5]; /* calls, total, self, api calls, api ticks */
};

enum model_py_window_miss {
    MODEL_PY_WINDOW_MISS_NONE,
    MODEL_PY_WINDOW_MISS_NO_STEPS,
    MODEL_PY_WINDOW_MISS_NO_CUTS,
    MODEL_PY_WINDOW_MISS_DROPPED,
    MODEL_PY_WINDOW_MISS_SUMMARY,
    MODEL_PY_WINDOW_MISS_FAILED,
    MODEL_PY_WINDOW_MISS_BACKWARD /* steps from backward passes: no counts kept at them */
};
const char *model_python_window_miss_text(unsigned miss);

/* ---- GPU (CUPTI) records and NVTX ranges (model_gpu.c, model_nvtx.c) ----
 * GPU operations are kept (compactly) until the file ends: a kernel is tied to the call
 * that launched it through its correlation id, and the GPU_API record may come before or
 * after it. */

/* API_NAME category of library calls (cuBLAS, cuBLASLt, cuDNN): PROF_CAT_LIBRARY in the
 * format header once it ships; a reader must not need the header to know it. */
#define MODEL_CAT_LIBRARY 8

enum model_gpu_kind { MODEL_GPU_KERNEL, MODEL_GPU_MEMCPY, MODEL_GPU_MEMSET };

/* One kernel, copy or set as the GPU ran it; CLOCK_MONOTONIC ns. */
struct model_gpu_op {
    uint64_t start_ns, end_ns;
    uint32_t correlation;
    uint32_t device, stream;
    uint32_t row;    /* kernel: index in gpu.kernels */
    uint32_t config; /* kernel: index in gpu.configs */
    uint8_t kind;    /* enum model_gpu_kind */
};

/* A kernel's launch configuration (grid, block: packed dim3). */
struct model_gpu_config {
    uint64_t grid, block;
    uint32_t registers;
};

/* GPU kernels of one process by name. */
struct model_gpu_kernel {
    uint32_t name_sid;
    char *name; /* demangled, set by model_finish */
    uint64_t calls, total_ns, min_ns, max_ns;
    struct u64map grids, blocks, registers; /* value -> calls */
    struct u64map py_calls, py_ns; /* Python func id -> kernels launched from it, their GPU ns */
};

struct model_gpu_copy {
    uint8_t copy_kind, src_kind, dst_kind; /* CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind */
    uint64_t calls, bytes, ns;
};

struct model_gpu_set {
    uint32_t device;
    uint64_t calls, bytes, ns;
};

/* One GPU_API record: a runtime or driver call CUPTI saw. */
struct model_gpu_call {
    uint64_t start, end; /* ticks */
    uint32_t tid, correlation, py_node;
    uint16_t domain, cbid;
    uint32_t lib_api; /* API id + 1 of the innermost library call around it; 0: none */
    uint32_t api;     /* index + 1 in gpu.apis: its (domain, cbid), found once as it is read */
};

/* CUPTI's calls by (domain, callback id). */
struct model_gpu_api {
    uint16_t domain, cbid;
    char *name; /* GPU_API_NAME's, or "cupti#domain:cbid" */
    uint64_t calls, total_ticks, max_ticks;
    uint64_t total_ns, max_ns; /* set by model_finish */
};

/* A library call on one thread (API_CALL of a library API). */
struct model_lib_span {
    uint64_t start, end; /* ticks */
    uint32_t tid;
    uint16_t api;
};

struct model_gpu_device {
    uint32_t device;
    char *name;
    uint64_t global_memory_bytes;
    uint32_t sm_count, core_clock_khz, memory_clock_khz;
    uint16_t compute_major, compute_minor;
};

/* Busy time of one device (stream -1) or one stream: the union of its operations'
 * intervals within the process's wall time. */
struct model_gpu_busy {
    uint32_t device;
    int64_t stream;
    uint64_t busy_ns;
};

struct model_nvtx_event {
    uint64_t ticks, id;
    uint32_t tid, name_sid, domain_sid;
    uint16_t kind;  /* enum prof_nvtx_kind; an ACTION record's START/STOP as START/END */
    uint8_t action; /* from an ACTION record (Lightning's profiler), not NVTX */
};

/* Where an action comes from. */
enum model_action_source {
    MODEL_ACTION_NVTX,            /* an NVTX range (model_nvtx.c) */
    MODEL_ACTION_RECORD_FUNCTION, /* a record_function scope: TORCH_OP USER_SCOPE (model_torch.c) */
    MODEL_ACTION_BUILTIN,         /* a PyTorch loop function of the Python call tree
                                   * (model_torch_actions.c) */
    MODEL_ACTION_LIGHTNING        /* Lightning's profiler start/stop: ACTION records
                                   * (model_nvtx.c) */
};

/* NVTX ranges (or marks), record_function scopes or built-in actions of one process merged
 * by name. */
struct model_action {
    char *name;
    uint64_t calls, total_ns, gpu_ns, kernels;
    uint8_t source; /* enum model_action_source */
};

struct model_nvtx_lost {
    uint32_t name_sid, domain_sid;
    uint64_t count, ticks;
};

/* What the findings need of a process's GPU timeline, drawn from it once at the end of the
 * file (model_gpu_facts.c) so that a summary, which has no timeline, keeps it too. */
struct model_gpu_idle {
    uint32_t device;
    uint64_t ngaps, longest_ns; /* its idle gaps within the wall time, the longest */
    uint64_t api_ns, api_calls; /* CUDA calls CUPTI saw overlapping the gaps */
    uint32_t top_node;          /* the Python node with the most call time in them; 0 */
    uint64_t top_ns;
};

struct model_gpu_facts {
    struct model_gpu_idle *idle; /* one per device with operations */
    size_t nidle;
    /* The Python node under which CUPTI saw the most synchronizing / blocking-copy time. */
    uint32_t sync_node;
    uint64_t sync_ns;
    /* Kernel durations rounded to 3 significant digits (ns) -> kernels. */
    struct u64map kernel_durations;
    uint64_t kernels;
};

struct model_gpu {
    struct model_gpu_op *ops;
    size_t nops, cap_ops;
    struct model_gpu_kernel *kernels;
    size_t nkernels, cap_kernels;
    struct u64map kernel_index; /* name_sid -> index + 1 */
    struct model_gpu_config *configs;
    size_t nconfigs, cap_configs;
    struct u64map config_index; /* hash of a config -> index + 1, probing on */
    struct model_gpu_copy *copies;
    size_t ncopies, cap_copies;
    struct model_gpu_set *sets;
    size_t nsets, cap_sets;
    struct model_gpu_call *calls;
    size_t ncalls, cap_calls;
    struct u64map call_index; /* correlation -> index + 1 in calls (the first record) */
    /* per op, a kernel's launching call (model_gpu_op_call): index + 1 in calls, 0: none;
     * made by model_gpu_finish, once every call is read */
    uint32_t *op_call;
    struct model_gpu_api *apis;
    size_t napis, cap_apis;
    struct u64map api_index; /* domain << 16 | cbid -> index + 1 */
    struct model_lib_span *lib_spans;
    size_t nlib_spans, cap_lib_spans;
    struct model_gpu_device *devices;
    size_t ndevices, cap_devices;
    struct model_gpu_busy *busy; /* per device, then its streams; set by model_finish */
    size_t nbusy;
    uint64_t kernel_ns;    /* GPU time of every kernel */
    uint64_t unattributed; /* kernels whose correlation matches no GPU_API record */

    struct model_nvtx_event *nvtx;
    size_t nnvtx, cap_nvtx;
    struct model_action *actions, *marks; /* set by model_finish */
    size_t nactions, nmarks;
    uint64_t nvtx_unclosed, nvtx_unmatched;
    struct model_nvtx_lost *nvtx_lost; /* NVTX_LOST records: ranges whose POP was dropped */
    size_t nnvtx_lost, cap_nvtx_lost;
    uint64_t nvtx_lost_calls;
    size_t lightning_actions;   /* of actions, the last ones come from Lightning's profiler */
    uint64_t lightning_span_ns; /* from the first Lightning action's start to the last end */
    int summary_had_records;    /* read from a summary: its trace held GPU or NVTX records */
    struct model_gpu_facts facts;
};

#include "model_gpu_part.h" /* the GPU tables of one part (model_gpu_window.c) */

/* ---- communication (model_comm.c) ----
 * NCCL and MPI calls (API_CALL records of category PROF_CAT_COMM) and torch.distributed's
 * operators (TORCH_OP records named c10d::*, gloo:*, nccl:*, mpi:*, ucc:*), kept one by
 * one for the cross-rank merge (report/merge/comm_merge.c). */

enum model_comm_source {
    MODEL_COMM_CALL,    /* a wrapped NCCL or MPI call */
    MODEL_COMM_TORCH_OP /* a torch.distributed operator */
};

struct model_comm_call {
    const char *name; /* into model_comm.names */
    /* CLOCK_REALTIME ns once the file is read (ticks while reading): the one time axis of
     * the ranks of one host. */
    uint64_t start_ns, end_ns;
    uint64_t bytes; /* 0: not known (torch ops) */
    uint64_t comm;  /* the communicator's cross-rank id; 0: unknown or the default group */
    uint32_t comm_size;
    int32_t peer; /* point to point: the other rank; else -1 */
    uint32_t tid;
    uint8_t source; /* enum model_comm_source */
    uint8_t setup;  /* init, finalize, communicator management: not communication time */
    uint8_t failed; /* returned an error: no bytes, not matched across ranks */
};

struct model_comm {
    struct model_comm_call *calls; /* in record order */
    size_t ncalls, cap_calls;
    /* The calls' names, owned here: an API or string id named again later in the trace
     * frees the text the model had, so calls keep a copy of each distinct name. */
    char **names;
    size_t nnames, cap_names;
    struct u64map name_index;   /* hash of a name -> index + 1 in names, probing on */
    int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the process start */
};

#include "model_steps.h" /* the training steps (model_steps.c) */

/* torch.distributed's operators by name: c10d::*, gloo:*, nccl:*, mpi:*, ucc:*. */
int model_comm_is_torch_op(const char *name);

struct model_process {
    char *file;
    uint64_t file_bytes; /* the trace's size when read */
    uint32_t features;
    uint64_t records;
    int clean_end;  /* an END record was read */
    int end_signal; /* the signal that ended the process (its END record's), 0: none */
    int truncated;  /* the reader stopped at a cut-off or corrupt record */
    char *stop_warning;

    struct model_meta *meta;
    size_t nmeta;
    int64_t pid, ppid; /* -1 when unknown */
    int pid_instance;  /* 0; k: the k-th other process with this host and pid (pid_clash.h) */
    int64_t rank;      /* -1 when not set */
    char *host, *run_id, *command;
    uint64_t start_realtime_ns;
    double tsc_hz;

    struct model_thread *threads;
    size_t nthreads, cap_threads;
    struct u64map thread_index; /* tid -> index + 1 in threads */
    size_t current_thread;      /* index in threads, or SIZE_MAX before a THREAD record */

    struct model_api **apis; /* indexed by api id */
    size_t napis;

    struct u64map strings;      /* string id -> char * */
    struct u64map kernel_names; /* address -> string id */
    struct u64map kernel_alias; /* address -> address */
    struct u64map kernels;      /* func -> struct model_kernel * */

    struct model_copy_stats copies[MODEL_DIR_COUNT];
    struct model_mem_stats mem[MODEL_SPACE_COUNT];
    struct model_mem_stats *device_mem; /* device space per device id, if set_device_used */
    size_t ndevice_mem;
    int set_device_used;
    uint64_t unmatched_frees;

    struct model_mem_event *mem_events;
    size_t nmem_events, cap_mem_events;

    char **notes;
    size_t nnotes;
    char **warnings;
    size_t nwarnings;

    uint64_t lost;       /* sum of LOST records */
    uint64_t lost_kept;  /* of them, the kept ones (LOST_KEPT: training phases' spans) */
    uint64_t lost_calls; /* sum of LOST_CALLS records: dropped calls still in the API sums */
    uint64_t end_lost;   /* END's events_lost */

    size_t nclocks;
    uint64_t clock_first_ticks, clock_first_ns, clock_last_ticks, clock_last_ns;
    double ns_per_tick;

    struct model_python py;
    struct model_gpu gpu;
    struct model_gpu_part gpu_part;
    struct model_torch torch;
    struct model_stacks *stacks; /* model_stacks.c: NULL when the trace holds no stacks */
    struct model_comm comm;
    struct model_steps steps;

    /* Read from a summary (report/summarize/) rather than the trace: the summary's path and
     * its sections read when needed (communication calls, Python functions, steps: comm.calls
     * and steps.steps are then empty, model_steps_load.h). NULL and 0 for a trace. */
    char *summary_file;
    size_t summary_comm_offset, summary_py_offset, summary_steps_offset;
    /* Folded from its trace (summary_file_fold): the summary's bytes, read in place of the
     * file, which is then the trace. */
    uint8_t *summary_bytes;
    size_t summary_len;

    /* The process's wall time, CLOCK_MONOTONIC: from the first to the last CPU event or
     * CLOCK record, whichever reach further (set by model_finish). */
    int cpu_seen;
    uint64_t cpu_first_ticks, cpu_last_ticks;
    uint64_t wall_start_ns, wall_end_ns, wall_ns;

    /* timeline_load_defs: the correlation ids that have both a CUPTI API call and a GPU
     * activity in the file, a bit per id (timeline_bits_*): the launch arrows that the
     * timeline exports may draw. */
    struct idbits timeline_flows;
};

/* Reads a whole trace file into a new process model (model_finish included). On an error
 * that prevents reading it at all, returns NULL with a one-line message in err. A file
 * cut off or corrupt part way is not an error: the model has truncated set and
 * stop_warning says where. */
struct model_process *model_load_file(const char *path, char *err, size_t errlen);
void model_process_free(struct model_process *p);

/* The pieces model_load_file is made of, for tests that feed records themselves. */
struct model_process *model_process_new(const char *file, uint32_t features);
struct trace_record;
void model_add_record(struct model_process *p, const struct trace_record *rec);
void model_finish(struct model_process *p);

/* a + b for byte sums that a damaged file can push past int64 (signed overflow is
 * undefined): saturates at INT64_MAX / INT64_MIN. */
static inline int64_t model_i64_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t model_i64_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* A u64 as a double, and a double rounded to the nearest u64 (0 below 0.5 or NaN,
 * UINT64_MAX from 2^64): below 2^63 through int64, which x86-64 converts in one
 * instruction, the same values (the reports convert every event's ticks). */
static inline double model_u64_double(uint64_t v)
{
    return v < (1ull << 63) ? (double)(int64_t)v : (double)v;
}

static inline uint64_t model_ns_round(double ns)
{
    if (!(ns > 0))
        return 0;
    if (ns < 0x1p63)
        return (uint64_t)(int64_t)(ns + 0.5); /* ns <= 2^63 - 1024: the sum stays below 2^63 */
    if (ns >= 0x1p64)
        return UINT64_MAX;
    return (uint64_t)(ns + 0.5); /* below 2^64 a double is a multiple of 2048 past 2^63 */
}

/* Duration in ticks -> ns with the process's clock fit. */
static inline uint64_t model_ticks_to_ns(const struct model_process *p, uint64_t ticks)
{
    if (p->ns_per_tick == 1.0)
        return ticks; /* CLOCK_MONOTONIC ticks: exact, even past 2^53 */
    return model_ns_round(model_u64_double(ticks) * p->ns_per_tick);
}

/* A timestamp in ticks -> CLOCK_MONOTONIC ns (through the first CLOCK record for TSC). */
static inline uint64_t model_ticks_to_monotonic_ns(const struct model_process *p, uint64_t ticks)
{
    if (!(p->features & PROF_FEATURE_TSC_CLOCK) || p->nclocks == 0)
        return model_ticks_to_ns(p, ticks);
    double d = (model_u64_double(ticks) - model_u64_double(p->clock_first_ticks)) * p->ns_per_tick;
    return model_ns_round(model_u64_double(p->clock_first_ns) + d);
}
/* Its inverse (to within a tick). */
uint64_t model_monotonic_ns_to_ticks(const struct model_process *p, uint64_t ns);
/* The process's start in CLOCK_MONOTONIC ns: META start_monotonic_ns, else the first
 * CLOCK record, else 0. */
uint64_t model_start_monotonic_ns(const struct model_process *p);
const char *model_meta_get(const struct model_process *p, const char *key);
/* Whether p ran Python whose calls were not recorded (PROF_PYTHON=0): no META python.scheme,
 * and it loaded libtorch (META torch_lib) or its executable is a python. What only the
 * Python calls tell (the startup's imports, forward and backward) is then not known. */
int model_python_unrecorded(const struct model_process *p);
/* The first opening of p's capture window (META window_open: "<ns> <why> [<value>
 * [<optimizer steps counted while closed>]]", why "start", "step", "signal", "attach", ...)
 * and how many openings there were. */
struct model_window_open {
    size_t opens;     /* META window_open records; 0: none, the fields below unset */
    int fields;       /* how many of the first one's four fields were read */
    char why[16];     /* the second */
    long value;       /* the third */
    uint64_t counted; /* the fourth */
};
void model_window_first_open(const struct model_process *p, struct model_window_open *o);
/* Whether p's start was not recorded: a capture window or an attach (META window) whose
 * first opening (META window_open) was not the process's start. */
int model_start_unrecorded(const struct model_process *p);
/* Widens the process's CPU event window by [start, end] ticks. */
void model_cpu_event(struct model_process *p, uint64_t start, uint64_t end);
void model_add_warning(struct model_process *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* dim3 packed as x in bits 0-31, y in 32-47, z in 48-63. */
void model_dim3_unpack(uint64_t packed, uint32_t *x, uint32_t *y, uint32_t *z);
/* "x,y,z" */
void model_dim3_format(uint64_t packed, char *buf, size_t len);
/* The most frequent key of a count histogram (ties: the smaller key); 0 if empty. */
uint64_t model_histogram_mode(const struct u64map *hist);

const char *model_arg_name(enum model_arg a);
const char *model_space_name(enum model_space s);
const char *model_direction_name(enum model_direction d);
const char *model_category_name(unsigned category);

/* What each part (model_part.h) offers the rest of the reporter once the model is built.
 *
 * model_memory.c: CUDA memory calls, paired at the end of the file.
 * model_kernel.c: launches and symbol names. The name of a kernel address: follows aliases,
 * demangles; "kernel@0x..." if unknown. Returns a malloc'd string. */
char *model_kernel_resolve(const struct model_process *p, uint64_t address);
/* __cxa_demangle, or a copy of name when it is not a mangled C++ name. */
char *model_demangle(const char *name);

/* model_python.c: PY_FUNC, PY_NODE, PY_STATS, PY_SPAN and PY_GAP records. The function of a node,
 * or NULL when no PY_FUNC record named it. */
const struct model_py_func *model_python_func(const struct model_process *p, uint32_t func_id);
/* A function as the flame graphs and findings name it: "qualname (file:line)", a builtin's
 * name; snprintf's return (the full length). */
int model_python_frame(const struct model_process *p, uint32_t func_id, char *buf, size_t len);
/* As model_python_frame, for a finding's where: a module's top level has no line ("<module>
 * (train.py)": its line 1 is no place in it). */
int model_python_place(const struct model_process *p, uint32_t func_id, char *buf, size_t len);
/* The node of an id, or NULL. */
const struct model_py_node *model_python_node(const struct model_process *p, uint32_t node_id);
const char *model_py_gap_reason_name(uint32_t reason);
/* Whether the profiler built its torch bridge during the run (META torch_bridge_build):
 * then its interval (ticks), thread and the innermost Python node then (0: none). */
int model_torch_bridge_build(const struct model_process *p, uint64_t *start, uint64_t *end,
                             uint64_t *tid, uint32_t *node);

/* model_gpu.c: GPU_* records, library spans (a call of a library API owns the GPU calls
 * inside it); attribution, utilization at the end. */
const char *model_gpu_copy_kind_name(unsigned kind); /* "HtoD", "DtoH", ... */
/* model_gpu_facts.c: a call that waits for the device (…Synchronize…); a copy that returns
 * only once done (cudaMemcpy*, cuMemcpy* without Async); ns rounded to 3 significant
 * digits (the kernel durations of the facts). */
int model_gpu_is_sync_name(const char *name);
int model_gpu_is_blocking_copy(const char *name);
uint64_t model_gpu_round_duration(uint64_t ns);
const char *model_gpu_memory_kind_name(unsigned kind); /* "pageable", "pinned", ... */
/* The call that launched gpu.ops[op] when it is a kernel (by correlation id), else NULL;
 * from the GPU part's finish on. */
const struct model_gpu_call *model_gpu_op_call(const struct model_process *p, size_t op);
/* A CUPTI runtime name without its version tag: "cudaLaunchKernel_v7000" ->
 * "cudaLaunchKernel", into buf. */
void model_gpu_api_base_name(const char *name, char *buf, size_t len);

/* model_nvtx.c: NVTX and ACTION records; ranges paired and summed into actions at the end.
 * model_torch_actions.c: the built-in actions of a plain PyTorch loop, from the Python
 * call trees: forward, backward, optimizer_step, dataloader_next (into p->torch.builtin).
 * model_torch_action_of_node: the action a Python call-tree node runs in (its outermost
 * ancestor that is one), or NULL.
 *
 * model_torch.c: TORCH_OP records; TORCH_MEM and TORCH_DEV_MEM records kept until the end,
 * then given to the ops holding them in time; at the end, nesting (self CPU), the kernels
 * launched inside each op (CUDA), rows by name and shapes, record_function scopes as
 * actions. The Python function at a memory peak of p (m: &p->torch.memory or one of its devices):
 * of m->peak_py_node, the innermost Python-code function on its path (builtins skipped;
 * the innermost one when all are), or NULL. */
const struct model_py_func *model_torch_peak_func(const struct model_process *p,
                                                  const struct model_torch_memory *m);
/* The same for any node of p's Python trees (0: NULL). */
const struct model_py_func *model_torch_py_func_at(const struct model_process *p, uint32_t node);
/* The innermost Python-code function on node's path in the program's own files: not the
 * standard library's, nor a package's (a file under .../lib/pythonX.Y/, site-packages or
 * dist-packages, or "<frozen ...>"); NULL: none. */
const struct model_py_func *model_torch_py_own_func_at(const struct model_process *p,
                                                       uint32_t node);
/* Whether a Python file is the program's own, as model_torch_py_own_func_at says. */
int model_torch_own_file(const char *file);
const char *model_torch_action_of_node(const struct model_process *p, uint32_t node_id);
/* Whether a node is a forward call under a backward's: activation checkpointing
 * recomputing it (its action is backward). */
int model_torch_node_recomputes(const struct model_process *p, uint32_t node_id);
/* Makes py.node_action, which model_torch_action_of_node reads: one pass over the nodes,
 * each path from its parent's (however deep the trees). Keeps its work in py.builtin_memo
 * for the actions table, which frees it (or model_torch_node_actions_free). */
void model_torch_node_actions(struct model_process *p);
void model_torch_node_actions_free(struct model_process *p);
/* "CPU", "CUDA:0", "XPU:1", ... into buf. */
const char *model_torch_device_name(int dev_type, int dev_index, char *buf, size_t len);
/* "FUNCTION", "BACKWARD_FUNCTION", ... "USER_SCOPE" (at::RecordScope), "?" else. */
const char *model_torch_scope_name(unsigned scope);

#endif
