/* summary: the tables of a report, merged over the processes (trace files) selected:
 * run selection, API rows merged by name, kernels merged by name, memory and copies
 * summed, warnings gathered. The text, JSON and CSV writers print a summary. */
#ifndef REPORT_SUMMARY_H
#define REPORT_SUMMARY_H

#include <stdio.h>

#include "model.h"
#include "pystats.h"
#include "rank_spread.h"

struct jobs_report;

struct summary_api_row {
    char *name;
    unsigned category;
    uint64_t calls, errors;
    uint64_t total_ns, min_ns, max_ns;
    double avg_ns, percent;
};

struct summary_kernel_row {
    char *name;
    uint64_t launches, errors, total_ns;
    double avg_ns;
    uint64_t grid, block; /* packed dim3, the most common of each */
    int has_grid, has_block;
    struct u64map grids, blocks;
};

/* ---- GPU (summary_gpu.c) ---- */

/* A Python function kernels were launched from. */
struct summary_launch_site {
    char *qualname, *file; /* owned */
    uint32_t line;
    uint64_t calls, gpu_ns;
};

struct summary_gpu_kernel_row {
    char *name;
    uint64_t calls, total_ns, min_ns, max_ns;
    double avg_ns, percent;
    uint64_t grid, block, registers; /* the most common of each */
    struct u64map grids, blocks, regs;
    struct summary_launch_site *sites; /* by GPU time, descending */
    size_t nsites;
    struct rank_spread over_ranks; /* GPU time per rank (ranks 0: fewer than two ranks) */
};

struct summary_gpu_copy_row {
    uint8_t copy_kind, src_kind, dst_kind;
    uint64_t calls, bytes, total_ns;
};

struct summary_gpu_set_row {
    uint32_t device;
    uint64_t calls, bytes, total_ns;
};

struct summary_library_row {
    char *name;
    uint64_t calls, cpu_ns, gpu_ns, kernels;
};

/* Calls CUPTI saw that no wrapper recorded, by name. */
struct summary_cupti_row {
    char *name;
    uint16_t domain;
    uint64_t calls, total_ns, max_ns;
    double avg_ns;
};

struct summary_action_row {
    char *name;
    uint64_t calls, total_ns, gpu_ns, kernels;
    double mean_ns, percent;       /* percent: of the gpu.action_base_ns */
    uint8_t source;                /* enum model_action_source */
    uint8_t folded_scope;          /* its "[pl][profile]" scope folded in (Lightning) */
    struct rank_spread over_ranks; /* total time per rank (ranks 0: fewer than two ranks) */
};

/* The time the actions' percentages are of, the best there is that holds each action's
 * whole-process total (summary_actions.c): */
enum summary_action_base {
    SUMMARY_ACTION_BASE_WALL,      /* the processes' wall time */
    SUMMARY_ACTION_BASE_LIGHTNING, /* first Lightning action's start to the last one's end */
    SUMMARY_ACTION_BASE_STEPS,     /* the ProfilerStep#N scopes (torch.profiler's steps) */
    SUMMARY_ACTION_BASE_BUILTIN,   /* the built-in loop actions, one inside another once */
    SUMMARY_ACTION_BASE_TRAINING   /* the first step's start to steps.actions_end_ns */
};

struct summary_gpu {
    int any; /* the inputs hold GPU or NVTX records */
    struct summary_gpu_kernel_row *kernels;
    size_t nkernels;
    uint64_t kernel_ns, kernel_calls, unattributed;
    struct summary_gpu_copy_row *copies;
    size_t ncopies;
    struct summary_gpu_set_row *sets;
    size_t nsets;
    struct summary_library_row *library;
    size_t nlibrary;
    struct summary_cupti_row *cupti;
    size_t ncupti;
    struct summary_action_row *actions, *marks;
    size_t nactions, nmarks;
    uint64_t action_wall_ns; /* wall time summed over the processes with actions */
    uint64_t action_gpu_ns;  /* GPU time of every kernel of those processes */
    int action_sources;      /* 1 << enum model_action_source of every action */
    /* What the actions' percentages are of (summary_actions.c), summed over the processes */
    enum summary_action_base action_base;
    uint64_t action_base_ns;
    size_t action_base_procs; /* the processes whose spans action_base_ns sums (0: not said) */
    /* The training steps' span (first start to last end), summed over the processes with
     * steps and without Lightning: said beside the base */
    uint64_t action_training_ns;
    size_t action_training_procs;
    /* With the wall time for base despite training steps: the name of a row whose Total
     * exceeds the training (a call outside it; the row keeps the string); else NULL */
    const char *action_outside;
    /* "[pl][profile]X" scopes folded into their Lightning action X; kept as rows of their own
     * because their calls differ from X's (the first such name, NULL: none) */
    size_t action_folded, action_unfolded;
    const char *action_unfolded_example;
    uint64_t action_unfolded_calls[2]; /* the example's calls: as a scope, as the action */
};

/* ---- PyTorch operators (summary_torch.c) ---- */

/* One row of torch.profiler's key_averages() table: ops merged by name (and input shapes
 * when grouped) over the processes. Percentages are of the sums over every row. */
struct summary_op_row {
    char *name;
    char *shapes; /* NULL unless grouped by shape; "" for an op recorded without shapes */
    uint64_t calls;
    uint64_t self_cpu_ns, cpu_total_ns, self_cuda_ns, cuda_total_ns;
    int64_t self_cpu_mem, cpu_mem; /* bytes: torch's self_cpu_memory_usage, cpu_memory_usage */
    int64_t self_dev_mem, dev_mem; /* bytes: self_device_memory_usage, device_memory_usage */
    double cpu_avg_ns, cuda_avg_ns;
    double self_cpu_percent, cpu_total_percent, self_cuda_percent;
    struct rank_spread over_ranks; /* Self CPU per rank (ranks 0: fewer than two ranks) */
};

enum summary_op_sort {
    SUMMARY_OP_SORT_SELF_CPU, /* the default, as torch's examples sort */
    SUMMARY_OP_SORT_CPU_TOTAL,
    SUMMARY_OP_SORT_SELF_CUDA,
    SUMMARY_OP_SORT_CUDA_TOTAL,
    SUMMARY_OP_SORT_CALLS,
    SUMMARY_OP_SORT_NAME,
    SUMMARY_OP_SORT_CPU_MEM, /* torch's cpu_memory_usage, then the self and device forms */
    SUMMARY_OP_SORT_SELF_CPU_MEM,
    SUMMARY_OP_SORT_CUDA_MEM,
    SUMMARY_OP_SORT_SELF_CUDA_MEM
};

struct summary_torch {
    struct summary_op_row *rows;
    size_t nrows;
    int by_shape;
    enum summary_op_sort sort;
    uint64_t records;            /* TORCH_OP records read */
    uint64_t calls;              /* ops counted in the rows */
    uint64_t spans_expected;     /* op spans the trees say were made (0: a trace without) */
    uint64_t mem_records;        /* TORCH_MEM records read: the memory columns are measured */
    uint64_t dev_mem_records;    /* TORCH_DEV_MEM records read (device allocators) */
    uint64_t self_cpu_total_ns;  /* the sum of Self CPU over every row */
    uint64_t self_cuda_total_ns; /* the sum of Self CUDA */
    int any_cuda;                /* some op launched kernels */
};

struct summary_run {
    char *id; /* "" when the files carry no run_id */
    uint64_t start_realtime_ns;
    size_t nfiles;
};

struct summary {
    struct model_process **procs; /* owned; sorted by rank, pid, file */
    size_t nprocs;
    struct summary_run *runs; /* the runs reported */
    size_t nruns;
    struct summary_api_row *api;
    size_t napi;
    uint64_t api_total_ns;
    struct summary_kernel_row *kernels;
    size_t nkernels;
    struct model_mem_stats mem[MODEL_SPACE_COUNT]; /* counts summed, peak = largest */
    struct model_copy_stats copies[MODEL_DIR_COUNT];
    char **warnings;
    size_t nwarnings;
    struct pystats py; /* Python functions merged over every process and thread */
    enum pystats_sort py_sort;
    uint64_t py_gaps, py_spans; /* summed over the processes */
    struct summary_gpu gpu;
    struct summary_torch torch;
    const struct jobs_report *job; /* jobs.c: job, roles left out, windows; NULL: none */
    size_t nsummaries; /* processes read from summary files (report/summarize/), not traces */
    /* --step: the action (NVTX range, record_function scope, Lightning action or built-in
     * action) whose calls are a rank's steps; NULL: the optimizer's step. */
    const char *step_name;
    int phase; /* --phase: what the flame graphs hold (enum export_phase; 0: all) */
};

enum summary_sort {
    SUMMARY_SORT_TOTAL,
    SUMMARY_SORT_CALLS,
    SUMMARY_SORT_AVG,
    SUMMARY_SORT_MIN,
    SUMMARY_SORT_MAX,
    SUMMARY_SORT_ERRORS,
    SUMMARY_SORT_NAME
};

/* 0 and *out set for "total", "calls", ...; -1 for anything else. */
int summary_parse_sort(const char *s, enum summary_sort *out);

/* Keeps the processes of one run: run_id when not NULL, every run when all_runs, else the
 * latest (largest start_realtime_ns). When the inputs hold several runs and neither was
 * given, says on notes which exist and how to pick. Frees the processes not kept and
 * updates *n. Returns -1 (message on notes) when run_id matches no input. */
int summary_select_run(struct model_process **procs, size_t *n, const char *run_id, int all_runs,
                       FILE *notes);

/* Builds s from procs[0..n), taking ownership of them (and of the array). */
void summary_build(struct summary *s, struct model_process **procs, size_t n);
/* Orders the API and kernel rows: name ascending, any other key descending, ties by
 * name. */
void summary_sort(struct summary *s, enum summary_sort key);
/* Orders the Python functions (default: cumtime). */
void summary_sort_python(struct summary *s, enum pystats_sort key);
void summary_free(struct summary *s);

/* summary_gpu.c: the GPU tables merged over the processes: kernels, copies and sets by
 * kind, library calls and CUPTI-only calls by name, NVTX actions by name. */
void summary_build_gpu(struct summary *s);
void summary_sort_gpu(struct summary *s, enum summary_sort key);
void summary_free_gpu(struct summary_gpu *g);
/* summary_actions.c: the actions (NVTX ranges, record_function scopes, Lightning's actions,
 * built-in loop actions) and NVTX marks merged by source and name, "[pl][profile]X" scopes
 * folded into the Lightning action X, percentages of the action base. */
void summary_actions_build(struct summary *s);
/* "Lightning", "scope", "NVTX", "built-in" (text); "lightning", "record_function", "nvtx",
 * "builtin" (JSON, CSV). */
const char *summary_action_source_name(unsigned source);
const char *summary_action_source_key(unsigned source);

/* summary_torch.c: the PyTorch operator rows. */
/* The name an op or a scope is counted under in the operator and actions tables: name, but
 * torch.profiler's ProfilerStep#N scopes, one a step, all under "ProfilerStep*" as its
 * key_averages() groups them (the timeline exports keep each one's name). */
const char *summary_row_name(const char *name);
#define SUMMARY_PROFILER_STEPS_ROW "ProfilerStep*"
/* self_cpu, cpu_total, self_cuda, cuda_total, calls, name, and torch's spellings
 * self_cpu_time_total, cpu_time_total, self_cuda_time_total, cuda_time_total, count.
 * 0 and *out set, or -1. */
int summary_parse_op_sort(const char *s, enum summary_op_sort *out);
const char *summary_op_sort_name(enum summary_op_sort key);
/* (Re)builds the rows from s->procs: by name, or by name and input shapes. */
void summary_build_torch(struct summary *s, int by_shape);
/* Descending, name ascending; ties by name, then shapes. */
void summary_sort_torch(struct summary *s, enum summary_op_sort key);
void summary_free_torch(struct summary_torch *t);

#endif
