/* tables: the text report, aligned columns for a terminal. */
#ifndef REPORT_TABLES_H
#define REPORT_TABLES_H

#include <stdint.h>
#include <stdio.h>

#include "summary.h"

/* Prints every table of s; limit (0 = all) caps the API and kernel tables. When the
 * inputs hold Python data, a short Python table follows the CUDA tables and the CUDA
 * tables that would be empty are left out. */
void tables_print(FILE *out, const struct summary *s, size_t limit);
/* How a process's trace ended: "clean", "ended by signal 15 (SIGTERM)", "still running when
 * read" (its pid alive with the start time the trace recorded, on this machine), or
 * "process did not finish writing (killed?)"; buf holds it when it is made. */
const char *tables_end_text(const struct model_process *p, char *buf, size_t len);
/* After --ops, --kernels or --actions of two ranks or more: each of the first n rows'
 * value per rank (min / median / max, the rank at the max). rows: n structs of stride
 * bytes, each with its name (a char *) at name_at and its struct rank_spread at
 * spread_at (offsetof); with kernel_names, the names as format_kernel_name shows them. */
void tables_over_ranks(FILE *out, const char *value, const void *rows, size_t n, size_t stride,
                       size_t name_at, size_t spread_at, int kernel_names);
/* After a kernel table whose names format_kernel_name shortened: says so, once. */
void tables_kernel_names_note(FILE *out, int shortened);
/* How many rows the table after a view shows: its limit, else at most 20. */
size_t tables_over_ranks_rows(size_t nrows, size_t limit);
/* The library of an intercepted API by its name: "CUDA runtime", "CUDA driver", "cuBLAS",
 * "cuDNN", "NCCL", "MPI" or "Other". */
const char *tables_api_library(const char *name);

/* tables_gpu.c */
/* --kernels: every GPU kernel CUPTI recorded (limit rows, 0 = all), in s's order. */
void tables_gpu_kernels(FILE *out, const struct summary *s, size_t limit);
/* The default report's section: the first limit (0: 15) kernels; nothing without any. */
void tables_gpu_section(FILE *out, const struct summary *s, size_t limit);
/* --gpu: devices, utilization, copies and sets, library calls, CUPTI-only calls. */
void tables_gpu(FILE *out, const struct summary *s, size_t limit);
/* --actions: Lightning's actions, record_function scopes, built-in PyTorch loop actions and
 * NVTX ranges as Lightning's SimpleProfiler shows actions (with a Source column; % of the
 * training, summary_actions.c), and NVTX marks. */
void tables_actions(FILE *out, const struct summary *s, size_t limit);
/* Whether the actions table has a GPU time column: the run had GPU work. */
int tables_actions_have_gpu(const struct summary *s);
/* What the actions table folded, kept apart or counts its own way, a line "  (...)" each
 * (the text and HTML reports). */
void tables_actions_all_notes(FILE *out, const struct summary *s);
/* The actions table in the default report (every row, up to 200, unless limit), when there
 * are actions. */
void tables_actions_section(FILE *out, const struct summary *s, size_t limit);

/* --threads: the processes and every thread (the default report lists the threads that
 * made an intercepted API call or lost events, and counts the others). */
void tables_threads_view(FILE *out, const struct summary *s);

/* --memory: the PyTorch memory section, then the allocation and copy tables. */
void tables_memory_view(FILE *out, const struct summary *s);

/* tables_torch.c */
/* --ops: torch.profiler's key_averages() table, in s's op order (limit rows, 0 = all). */
void tables_ops(FILE *out, const struct summary *s, size_t limit);
/* The default report's section: the first limit (0: 15) ops; nothing without any. */
void tables_ops_section(FILE *out, const struct summary *s, size_t limit);
/* The "PyTorch CPU memory" section: per process, the peak of live CPU tensor bytes with
 * the op and Python function that reached it, and the totals; nothing without TORCH_MEM
 * records. _default: with a blank line after, limit lines (0: every one; else the largest
 * peaks and the most growth, the others counted). */
void tables_torch_memory_section(FILE *out, const struct summary *s);
void tables_torch_memory_default(FILE *out, const struct summary *s, size_t limit);
/* What the memory figures cover (model_torch_memory_part.c), as tables_torch_window says it. */
const char *tables_torch_memory_window(const struct summary *s, char *note, size_t len);
uint64_t tables_torch_memory_window_ns(const struct summary *s);
/* The part of one process a table's rows cover (enum model_window, enum model_window_miss;
 * the part's length and steps). */
struct tables_part {
    unsigned window, miss;
    uint64_t ns;
    size_t steps;
};
/* Fills part; 0: the process has nothing for the table. */
typedef int (*tables_part_fn)(const struct model_process *p, struct tables_part *part);
/* What a table's rows cover over the processes, as tables_torch_window says it. */
const char *tables_part_note(const struct summary *s, tables_part_fn part_of, char *note,
                             size_t len);
uint64_t tables_part_ns(const struct summary *s, tables_part_fn part_of);
/* What the operator rows cover: "the steady training steps", "the whole process" (with a
 * note in note: "40 steps each, 6.417 s in all; --phase all: the whole process", or why
 * not), or NULL when there is nothing to say (--phase all, or a run without steps). */
const char *tables_torch_window(const struct summary *s, char *note, size_t len);
/* That part's time, summed over the processes it covers (0: the whole process). */
uint64_t tables_torch_window_ns(const struct summary *s);
/* What the actions' percentages are of, in buf: "the training: the 1.263 s from the first
 * training step's start to the last one's end", "the wall time". */
const char *tables_actions_base(const struct summary_gpu *g, char *buf, size_t size);
/* Whether the run has any CUDA event (kernels, device tensor memory, ops' CUDA time): 0,
 * a CPU-only run, whose op tables leave the CUDA columns out. */
int tables_torch_has_cuda(const struct summary *s);
/* torch's units: "812.000us", "3.250ms", "2.503s"; "12.34%" ("NaN" of nothing);
 * "512 b", "1.50 Kb", "2.00 Gb". */
void tables_torch_time(double ns, char *buf, size_t len);
void tables_torch_share(double part, double total, char *buf, size_t len);
void tables_torch_memory(int64_t bytes, char *buf, size_t len);

/* tables_python.c */
enum tables_python_split {
    TABLES_PYTHON_MERGED,      /* one table, functions merged over threads and processes */
    TABLES_PYTHON_PER_THREAD,  /* one table per thread of each process */
    TABLES_PYTHON_PER_PROCESS, /* one table per process */
};
/* The Python report (--python): cProfile's table in s's Python order, limit rows each
 * (0 = all), then the intervals another profiler held Python's hook. */
void tables_python(FILE *out, const struct summary *s, size_t limit,
                   enum tables_python_split split);
/* The short section of the default report: the first limit (0: 15) functions. Prints
 * nothing when the inputs hold no Python data. */
void tables_python_section(FILE *out, const struct summary *s, size_t limit);
/* One line per interval another profiler held Python's hook. */
void tables_python_gaps(FILE *out, const struct summary *s);
/* What the Python rows cover, as tables_torch_window says it for the operator rows: the
 * part's name (note: "the step thread's calls, steps 2-40, 1.532 s; ..." or why not), or
 * NULL when there is nothing to say. */
const char *tables_python_window(const struct summary *s, char *note, size_t len);
/* That part's time, summed over the processes it covers (0: the whole process). */
uint64_t tables_python_window_ns(const struct summary *s);
/* Whether the Python rows have GPU time: a run with GPU work (a part's rows: the kernels
 * launched in it, model_python_window.c). */
int tables_python_gpu(const struct summary *s);

/* tables_gpu.c: what the CUDA API, GPU kernel and CUPTI-call rows cover (model_gpu_window.c),
 * as tables_torch_window says it. */
const char *tables_gpu_window(const struct summary *s, char *note, size_t len);
uint64_t tables_gpu_window_ns(const struct summary *s);
/* " (the whole process)" after the title of a GPU table that stays the whole process's
 * while the API and kernel tables cover a part; else "". */
const char *tables_gpu_whole(const struct summary *s);
/* A GPU table's title: name, the part its rows cover, then printf's fmt (its parenthesis);
 * when the rows cover a part, a line on it. */
void tables_gpu_title(FILE *out, const struct summary *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
