/* model_torch: the PyTorch operators of one process in the model (model.h): their spans,
 * tensor memory, op trees and table rows (model_torch.c), and the part of the process the
 * rows cover (model_torch_window.c). */
#ifndef REPORT_MODEL_TORCH_H
#define REPORT_MODEL_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct model_action;
struct model_process;

/* ---- PyTorch operators (model_torch.c) ---- */

/* at::RecordScope values the reporter treats apart. */
#define MODEL_TORCH_SCOPE_BACKWARD 1
#define MODEL_TORCH_SCOPE_USER 7

/* One TORCH_OP record, kept until the file ends (its children come before it). */
struct model_torch_op {
    uint64_t start, end; /* ticks */
    int64_t sequence_nr;
    uint32_t tid, name_sid, shapes_sid;
    uint8_t scope, depth;
    /* Set by model_torch_finish: */
    uint64_t self_ticks;            /* the span minus its children's on the thread */
    uint64_t self_cuda_ns, cuda_ns; /* kernels with this op innermost; under it */
    uint64_t self_kernels, kernels;
    int64_t self_cpu_mem,
        cpu_mem; /* bytes allocated minus freed with this op innermost; under it */
    int64_t self_dev_mem, dev_mem; /* the same for device (CUDA) memory */
};

/* c10::DeviceType of CPU memory (TORCH_MEM records). */
#define MODEL_TORCH_DEVICE_CPU 0

/* One TORCH_MEM record (a free of an unknown block is not kept) or TORCH_DEV_MEM record
 * of a device. */
struct model_torch_mem {
    uint64_t ticks;
    uint32_t tid;
    uint32_t py_node; /* innermost Python node at the call; 0: none */
    int64_t bytes;
    uint64_t ptr;      /* the block's address */
    uint64_t reserved; /* the allocator's reserved bytes after it (devices); else 0 */
    int8_t dev_type;   /* c10::DeviceType; MODEL_TORCH_DEVICE_CPU for TORCH_MEM */
    int8_t dev_index;  /* -1 for CPU */
    uint32_t seq;      /* order read: ties in time keep it */
    uint32_t op;   /* index + 1 in ops of the innermost op holding it (set at the end); 0: none */
    uint32_t pair; /* a free: index + 1 of the allocation it frees (model_torch_memory_part.c,
                    * in mems' time order); 0: none known */
};

/* One change of the live CPU tensor bytes: ns since the process start. */
struct model_torch_mem_point {
    uint64_t ns;
    int64_t live;
};

/* The tensor memory of one device in the part asked (profreport --phase; the steady steps
 * by default), from the memory records (model_torch_memory_part.c): made only when the
 * ring kept every record of the device. window MODEL_WINDOW_ALL: not made, miss (enum
 * model_window_miss) says why (none: the whole process was asked). */
struct model_torch_memory_part {
    uint8_t window, miss;
    uint64_t start_ns, window_ns; /* its start since the process start, its length */
    uint64_t steps;
    uint64_t steps_grown; /* of the steps after the first, those whose live bytes at their end
                           * exceed those at their start */
    int64_t live_start, live_end; /* live bytes as the part begins, and once it has ended */
    int64_t live_first_end;       /* once its first step ended (0 steps: live_start) */
    int64_t peak_bytes;           /* the most live bytes at once in it (first reached) */
    uint64_t peak_ns;             /* since the process start */
    uint8_t peak_inside;          /* an allocation in the part reached it (else: its start) */
    uint64_t allocated, freed, alloc_count, free_count;
    /* The allocation site (innermost op and Python node) whose live bytes grew the most in
     * the part after its first step (a step's one-time allocations, as the gradients' or an
     * optimizer's state, are not growth; 0 steps: the whole part): its allocations there
     * less the frees there of its blocks, in grew_bytes (0: no site grew). */
    int64_t grew_bytes;
    /* The sites of the peak's allocation (when peak_inside) and of the growth: op (a string
     * id; 0: none; op "(unknown op)" when the trace lacks its name), the innermost
     * Python-code function and the innermost one in the program's own files
     * (model_torch_py_own_func_at; func ids, 0: none). */
    struct model_torch_mem_site {
        uint32_t op_sid, func, own;
        const char *op;
    } peak, grew;
};

/* The tensor memory of one device of one process over time, from its memory records in
 * time order over the threads (set by model_torch_finish when it has any). */
struct model_torch_memory {
    int any;                /* allocations or frees of known blocks were read */
    int8_t dev_type;        /* c10::DeviceType: MODEL_TORCH_DEVICE_CPU, 1 CUDA, ... */
    int8_t dev_index;       /* -1 for CPU */
    uint64_t reserved_peak; /* devices: the most bytes the allocator held (cached) at once */
    int64_t peak_bytes;     /* the most live bytes at once (the first time reached) */
    uint64_t peak_ns;       /* since the process start */
    const char *peak_op;    /* innermost op of the allocation that reached it (into the
                             * strings); NULL: none */
    uint32_t peak_op_sid;
    uint32_t peak_py_node; /* of that allocation; 0: none */
    uint64_t allocated, freed;
    int64_t live_at_end;
    uint64_t alloc_count, free_count; /* allocations and frees counted in those */
    /* exact: peak, allocated, freed, live at end and the counts come from the process's
     * own counters (TORCH_MEM_TOTALS), whatever the ring dropped; records_lost: of the
     * records they count, those the trace lacks. peak_unattributed: the record of the
     * allocation that reached the peak is one of them, so peak_op and peak_py_node are
     * unknown. The timeline holds only the records kept. */
    int exact, peak_unattributed;
    uint64_t records_lost;
    struct model_torch_mem_point *timeline;
    size_t ntimeline;
    struct model_torch_memory_part part;
};

/* The latest TORCH_MEM_TOTALS record of one device. */
struct model_torch_totals {
    int8_t dev_type, dev_index;
    uint64_t alloc_count, alloc_bytes, free_count, free_bytes;
    int64_t live_bytes, peak_bytes;
    uint64_t peak_ticks, reserved_peak;
};

/* The operators of one process merged by (name, input shapes), as key_averages does. */
struct model_torch_row {
    uint32_t name_sid, shapes_sid;
    const char *name, *shapes; /* into the process's strings; NULL: unknown */
    uint8_t scope;             /* of the first op seen */
    uint64_t calls;
    uint64_t self_cpu_ticks, cpu_total_ticks;
    uint64_t self_cpu_ns, cpu_total_ns; /* set by model_torch_finish */
    uint64_t self_cuda_ns, cuda_total_ns, kernels;
    int64_t self_cpu_mem, cpu_mem; /* torch's self_cpu_memory_usage, cpu_memory_usage */
    int64_t self_dev_mem, dev_mem; /* self_device_memory_usage, device_memory_usage */
};

/* A node of a thread's op tree (TORCH_NODE) with its latest TORCH_STATS. */
struct model_torch_node {
    uint32_t id, parent, tid, name_sid, shapes_sid;
    uint8_t scope;
    uint64_t calls, raw_calls, total_ticks, self_ticks;
    int64_t cpu_mem, self_cpu_mem, dev_mem, self_dev_mem;
};

struct model_torch {
    /* The op trees: when a trace has them (torch.scheme "calltree") the table's counts,
     * times and memory come from them, and the spans (ops) only give the timeline and
     * the CUDA columns. */
    struct model_torch_node *nodes;
    size_t nnodes, cap_nodes;
    struct u64map node_index;   /* node id -> index + 1 */
    uint64_t spans_expected;    /* every op call the trees counted (raw_calls) */
    uint64_t spans_dropped;     /* of those, the spans the timeline does not have */
    struct model_torch_op *ops; /* freed by model_torch_finish */
    size_t nops, cap_ops;
    uint64_t records;             /* TORCH_OP records read */
    struct model_torch_mem *mems; /* freed by model_torch_finish */
    size_t nmems, cap_mems;
    uint64_t mem_records;              /* TORCH_MEM records read */
    uint64_t dev_mem_records;          /* TORCH_DEV_MEM records read, CPU reports included */
    struct model_torch_totals *totals; /* one per device (TORCH_MEM_TOTALS) */
    size_t ntotals, cap_totals;
    struct model_torch_memory memory;   /* CPU */
    struct model_torch_memory *devices; /* one per device with memory records */
    size_t ndevices;
    struct model_torch_row *rows; /* the tables': the part asked (window), or the process */
    size_t nrows;
    struct model_torch_row *whole_rows; /* when rows are a part's: the whole process's */
    size_t nwhole_rows;
    struct model_action *scopes; /* record_function scopes (USER_SCOPE ops) by name */
    size_t nscopes;
    struct model_action *builtin; /* forward, backward, optimizer_step, dataloader_next */
    size_t nbuiltin;
    uint64_t builtin_top_ns; /* the built-in actions' time, one inside another once */
    uint64_t unnested;       /* ops that overlap a sibling instead of nesting */
    /* The part of the process the rows cover (enum model_window, model_torch_window.c):
     * the one asked when the spans hold every op there, else the whole process and
     * window_miss (enum model_window_miss) says why. */
    uint8_t window;
    uint8_t window_miss;
    uint64_t window_ns;  /* the part's length */
    size_t window_steps; /* the training steps in it */
};

/* The part of each process the operator rows cover (profreport --phase), for every
 * process read after; MODEL_WINDOW_ALL (the default) keeps the whole process. */
enum model_window {
    MODEL_WINDOW_ALL,
    MODEL_WINDOW_STEADY, /* the steady training steps, warm-up left out */
    MODEL_WINDOW_STEPS,  /* every training step */
    MODEL_WINDOW_STARTUP /* before the first step */
};
void model_torch_set_window(enum model_window w);
enum model_window model_torch_window_asked(void);
/* The whole process's operator rows, whatever part the table's cover (*n of them). */
const struct model_torch_row *model_torch_whole_rows(const struct model_torch *t, size_t *n);
/* Whether the process ran a backward pass: an autograd node's op (exact: from the op trees,
 * whatever the ring dropped). */
int model_torch_ran_backward(const struct model_torch *t);
/* Why a process's rows are the whole process's though a part was asked. */
enum model_window_miss {
    MODEL_WINDOW_MISS_NONE,
    MODEL_WINDOW_MISS_NO_STEPS,
    MODEL_WINDOW_MISS_DROPPED, /* the ring dropped events: the spans lack ops */
    MODEL_WINDOW_MISS_SUMMARY, /* read from a summary, which holds the steady steps only */
    MODEL_WINDOW_MISS_CALLS,   /* the ring dropped events: the calls kept are not all */
    MODEL_WINDOW_MISS_REOPENED /* a capture window opened more than once: what happened
                                * while it was closed is unknown */
};
const char *model_window_miss_text(unsigned miss);
struct model_process;
/* A process read from its summary (rows, whole_rows and window as --summarize left them,
 * with the steady steps asked): the rows of the part asked now, or the whole process's. */
void model_torch_window_pick(struct model_process *p);
/* The growth the part's sites account for: its live bytes at the end less those after its
 * first step (one step or none: at its start). */
int64_t model_torch_memory_growth(const struct model_torch_memory_part *q);
/* The same for the memory parts (memory.part): the part asked, or none (the reason). */
void model_torch_memory_parts_pick(struct model_process *p);
/* "the steady training steps", ... */
const char *model_window_name(unsigned w);
/* The part asked of p (CLOCK_MONOTONIC ns, the steps' clock) and its steps; 0: p has no
 * steps. */
int model_window_bounds(const struct model_process *p, uint64_t *lo, uint64_t *hi, size_t *nsteps);

#endif
