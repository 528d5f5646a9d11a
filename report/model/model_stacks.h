/* model_stacks: what one process's trace holds of call stacks (STACK, STACK_REF, MAP,
 * SAMPLE records): the distinct stacks, the loaded objects, and the uses of each stack —
 * by the API calls that carried one, and by CPU-time samples. Symbolization happens later,
 * in report/symbols/. */
#ifndef REPORT_MODEL_STACKS_H
#define REPORT_MODEL_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct model_process;
struct trace_record;

struct model_stack {
    uint32_t id, nframes, py_node;
    uint64_t *frames; /* innermost first, as captured (the profiler's own frames first) */
};

struct model_map {
    char *path;
    uint64_t bias, start, end;
    uint8_t build_id[32];
    uint16_t build_id_len;
};

/* The calls of one API that carried one stack. */
struct model_stack_use {
    uint16_t api;
    uint32_t stack_id;
    uint64_t calls, ticks, ns;
};

/* Samples of one stack with one innermost Python node, or (sampled without the Python
 * hook) one list of Python frames the sampler read. */
struct model_stack_sample {
    uint32_t stack_id, py_node, tid;
    uint32_t py_path; /* index + 1 into model_stacks.py_paths; 0: none */
    uint64_t count;
};

/* A code object the sampler named (PY_CODE): its id in the process. */
struct model_py_code {
    uint32_t id, line;
    char *name, *file;
};

/* A distinct list of Python frames of samples (SAMPLE_PY), innermost first. */
struct model_py_path {
    uint32_t *codes; /* PY_CODE ids; 0: a frame whose code could not be read */
    uint32_t n;
    int truncated; /* the thread had more (outer) frames */
};

/* A STACK_MEM record: a large tensor block allocated (with its stack) or freed. */
struct model_stack_mem {
    uint64_t ticks, ptr;
    int64_t bytes;
    uint32_t stack_id, py_node, tid;
    int8_t device_type, device_index;
};

/* Samples by a name's string id (0: none): the innermost PyTorch op or NVTX range. */
struct model_sample_tally {
    struct {
        uint32_t sid;
        uint64_t count;
    } * rows;
    size_t n, cap;
    struct u64map index; /* sid + 1 -> index + 1 */
};

struct model_stacks {
    struct model_stack *stacks;
    size_t nstacks, cap_stacks;
    struct u64map stack_index; /* id -> index + 1 */
    struct model_map *maps;
    size_t nmaps, cap_maps;
    struct model_stack_use *uses;
    size_t nuses, cap_uses;
    struct u64map use_index; /* api << 32 | stack id -> index + 1 */
    struct model_stack_sample *samples;
    size_t nsamples, cap_samples;
    struct u64map sample_index; /* hash of (stack, py node, tid) -> index + 1 */
    uint64_t sample_count;
    /* SAMPLE records of the first form (24 bytes) carry neither: they count as none */
    struct model_sample_tally by_op, by_range;
    /* Python frames read by the sampler (PY_CODE, SAMPLE_PY): model_stacks_python.c */
    struct model_py_code *py_codes;
    size_t npy_codes, cap_py_codes;
    struct u64map py_code_index; /* id -> index + 1 */
    struct model_py_path *py_paths;
    size_t npy_paths, cap_py_paths;
    struct u64map py_path_index; /* hash of the ids -> index + 1 (probing on a different list) */
    struct {
        uint32_t tid, path; /* path: index + 1 */
        uint64_t ticks;
    } py_pending;            /* the last SAMPLE_PY, for the SAMPLE of the same thread and ticks */
    uint64_t unmatched_refs; /* STACK_REF records whose call was not found */
    struct model_stack_mem *mems;
    size_t nmems, cap_mems;
    /* The last API call of each thread, to tie a STACK_REF to it: tid -> index + 1. */
    struct u64map last_call_index;
    struct {
        uint32_t tid;
        uint16_t api;
        uint64_t start, ticks;
    } * last_calls;
    size_t nlast_calls, cap_last_calls;
};

/* model_stacks_python.c: PY_CODE and SAMPLE_PY records; the Python path a SAMPLE of
 * thread tid at ticks carries (index + 1, 0: none), taken from the pending SAMPLE_PY;
 * freeing. */
void model_stacks_on_py_code(struct model_process *p, const struct trace_record *rec, uint32_t tid);
void model_stacks_on_sample_py(struct model_process *p, const struct trace_record *rec,
                               uint32_t tid);
uint32_t model_stacks_take_py_path(struct model_stacks *st, uint32_t tid, uint64_t ticks);
void model_stacks_python_free(struct model_stacks *st);
/* The code object of an id, or NULL. */
const struct model_py_code *model_py_code_get(const struct model_process *p, uint32_t id);
/* model_stacks.c: p's stacks, made on first use. */
struct model_stacks *model_stacks_of(struct model_process *p);

/* The stack of an id in p, or NULL. */
const struct model_stack *model_stack_get(const struct model_process *p, uint32_t id);

#endif
