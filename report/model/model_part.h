/* model_part: how the parts of the process model (model_gpu.c, model_python.c, …) plug
 * into model.c. Each part defines one `struct model_part` beside its code: the record
 * types it decodes, what it does with each API call, and its end-of-file and free steps.
 * model_parts.c lists them; model.c dispatches through that table and names no part. */
#ifndef REPORT_MODEL_PART_H
#define REPORT_MODEL_PART_H

#include <stddef.h>
#include <stdint.h>

struct model_process;
struct model_api;
struct prof_rec_api_call;
struct trace_record;

/* tid: the thread of the last THREAD record (0 before the first). */
typedef void (*model_record_fn)(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid);

struct model_record_handler {
    uint16_t type; /* PROF_REC_* */
    model_record_fn on_record;
};

struct model_part {
    const char *name;
    const struct model_record_handler *handlers;
    size_t nhandlers;
    /* Every API_CALL record, after the core has counted it; args: its nargs u64
     * arguments. May be NULL. */
    void (*on_api_call)(struct model_process *p, const struct model_api *api,
                        const struct prof_rec_api_call *call, const uint64_t *args, size_t nargs,
                        uint32_t tid);
    /* At the end of the file, in the table's order, once ticks convert to ns. May be
     * NULL. */
    void (*finish)(struct model_process *p);
    /* Frees what the part holds in p. May be NULL. */
    void (*free)(struct model_process *p);
};

#define MODEL_PART_HANDLERS(h) (h), sizeof(h) / sizeof((h)[0])

/* model_parts.c: every part, the core first, in the order their hooks run. */
extern const struct model_part *const model_parts[];
extern const size_t model_part_count;

extern const struct model_part model_core_part; /* model.c: metadata, threads, API calls */
extern const struct model_part model_memory_part;
extern const struct model_part model_kernel_part;
extern const struct model_part model_python_part;
extern const struct model_part model_gpu_part;
extern const struct model_part model_gpu_facts_part;
extern const struct model_part model_nvtx_part;
extern const struct model_part model_comm_part;
extern const struct model_part model_steps_part;
extern const struct model_part model_python_window_part;
extern const struct model_part model_gpu_window_part;
extern const struct model_part model_torch_part;
extern const struct model_part model_torch_actions_part;

/* model_torch.c: the row of (name, shapes) in p->torch.rows, made when new; index maps
 * name_sid << 32 | shapes_sid to the row's index + 1, cap is the rows' capacity. */
struct u64map;
struct model_torch_row *model_torch_row_of(struct model_process *p, struct u64map *index,
                                           size_t *cap, uint32_t name_sid, uint32_t shapes_sid,
                                           uint8_t scope);
/* model_torch_window.c. Per op (as torch.ops), torch's fold applied when the trace has op
 * trees: an op that is the only child of an op of its name is folded into it (folded), its
 * self time, kernels and memory with it. From the ops sorted by thread and start (order);
 * stack: room for nops indexes. */
struct model_torch_self {
    uint64_t ticks, cuda_ns, kernels;
    int64_t cpu_mem, dev_mem;
    int folded;
};
struct model_torch;
struct model_torch_self *model_torch_fold(const struct model_torch *t, const size_t *order,
                                          size_t *stack);
/* p->torch.rows made from the spans that began and ended within [lo, hi] (CLOCK_MONOTONIC
 * ns), folded as self says. */
void model_torch_rows_of_spans(struct model_process *p, const struct model_torch_self *self,
                               uint64_t lo, uint64_t hi);
/* p->torch.rows replaced by those of the part asked (model_torch_set_window), when the
 * spans hold every op there (self: model_torch_fold's; NULL: no op spans). */
void model_torch_window_rows(struct model_process *p, const struct model_torch_self *self);
/* model_torch_memory_part.c: each device's memory.part, from torch.mems in time order with
 * their ops (model_torch_finish, once the steps and the records lost are known). */
void model_torch_memory_parts(struct model_process *p);
extern const struct model_part model_stacks_part;

#endif
