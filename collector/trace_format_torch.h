/* The trace format's PyTorch records (TORCH_OP, TORCH_OP_SHORT, TORCH_MEM, TORCH_DEV_MEM,
 * TORCH_NODE, TORCH_STATS, TORCH_MEM_TOTALS, TORCH_SCOPE): part of trace_format.h, which
 * includes it where they stood (include trace_format.h, not this); see there for the
 * records' common rules. */
#ifndef PROF_TRACE_FORMAT_TORCH_H
#define PROF_TRACE_FORMAT_TORCH_H

/* ---- PyTorch ----
 * TORCH_OP records follow a THREAD record (the thread that ran the op: autograd threads
 * included) and are written when the op ends, so an op's children come before it.
 * depth is the number of enclosing TORCH_OP spans on the thread when it began. */
struct prof_rec_torch_op {
    struct prof_record_header h;
    uint32_t name_sid;
    uint64_t start; /* ticks */
    uint64_t end;
    int64_t sequence_nr; /* autograd sequence number linking forward and backward; -1: none */
    uint64_t fwd_thread; /* for a backward op: torch's id of the forward thread; else 0 */
    uint8_t scope; /* at::RecordScope: 0 FUNCTION, 1 BACKWARD_FUNCTION, 2 TORCHSCRIPT_FUNCTION,
                    * 3 KERNEL_FUNCTION_DTYPE, 4 CUSTOM_CLASS, 5 BUILD_FEATURE, 6 LITE_INTERPRETER,
                    * 7 USER_SCOPE, 8 STATIC_RUNTIME_OP, 9 STATIC_RUNTIME_MODEL */
    uint8_t depth;
    uint16_t reserved;
    uint32_t shapes_sid; /* input shapes and dtypes as text when PROF_SHAPES=1; else 0 */
};
_Static_assert(sizeof(struct prof_rec_torch_op) == 48, "torch op record");

/* The same op in two thirds of the bytes, written when it fits: no forward thread, an
 * autograd sequence number within int32, shorter than 2^32 ticks. Readers widen it to a
 * TORCH_OP (report/read/trace_read.c): the timeline's records are most of a torch job's
 * trace, and their bytes its collector's cost. */
struct prof_rec_torch_op_short {
    struct prof_record_header h;
    uint32_t name_sid;
    uint64_t start;    /* ticks */
    uint32_t duration; /* ticks: end - start */
    int32_t sequence_nr;
    uint8_t scope;
    uint8_t depth;
    uint16_t reserved;
    uint32_t shapes_sid;
};
_Static_assert(sizeof(struct prof_rec_torch_op_short) == 32, "short torch op record");

/* One CPU tensor allocation (bytes > 0) or free (bytes < 0; 0: a free of a block whose
 * allocation was not seen, which a reader ignores), by c10::alloc_cpu / c10::free_cpu, or
 * a CPU block another allocator reported (at::MapAllocator's shared-memory storage, which
 * also comes as a TORCH_DEV_MEM record of device CPU).
 * Follows a THREAD record (the thread that called it); the op it belongs to is the
 * innermost TORCH_OP span of that thread holding ticks. py_node is the innermost Python
 * call-tree node (PY_NODE id) of that thread at the call; 0: none or Python not profiled
 * (older writers wrote 0 here as a reserved field). */
struct prof_rec_torch_mem {
    struct prof_record_header h;
    uint32_t py_node;
    int64_t bytes;
    uint64_t ptr;
    uint64_t ticks;
};
_Static_assert(sizeof(struct prof_rec_torch_mem) == 32, "torch mem record");
_Static_assert(offsetof(struct prof_rec_torch_mem, py_node) == 4, "torch mem py_node offset");
_Static_assert(offsetof(struct prof_rec_torch_mem, bytes) == 8, "torch mem bytes offset");
_Static_assert(offsetof(struct prof_rec_torch_mem, ticks) == 24, "torch mem ticks offset");

/* One report of torch's allocator reporting interface (c10::reportMemoryUsageToProfiler),
 * which the CUDA caching allocator (and other device allocators) call for every block
 * handed out (bytes > 0) or given back (bytes < 0). total_allocated / total_reserved are
 * the allocator's own figures for that device after the call. device_type is
 * c10::DeviceType (0 CPU, 1 CUDA, ...); CPU reports repeat what TORCH_MEM records say
 * (the CPU allocator reports while torch.profiler's profile_memory is on; blocks it did
 * not hand out are written as TORCH_MEM too), so readers skip them.
 * Follows a THREAD record; op and py_node as for TORCH_MEM. */
struct prof_rec_torch_dev_mem {
    struct prof_record_header h;
    uint32_t py_node;
    int64_t bytes;
    uint64_t ptr;
    uint64_t ticks;
    uint64_t total_allocated;
    uint64_t total_reserved;
    int8_t device_type;
    int8_t device_index; /* -1: the current device */
    uint8_t reserved[6];
};
_Static_assert(sizeof(struct prof_rec_torch_dev_mem) == 56, "torch device mem record");
_Static_assert(offsetof(struct prof_rec_torch_dev_mem, bytes) == 8, "dev mem bytes offset");
_Static_assert(offsetof(struct prof_rec_torch_dev_mem, device_type) == 48, "dev mem device offset");

/* The tensor memory of one device of the process, counted in the process as every
 * TORCH_MEM / TORCH_DEV_MEM record is made (before the ring, which may drop it), so these
 * figures are exact whatever the ring lost. They follow what a reader does with those
 * records: a TORCH_MEM free of an unknown block (bytes 0) and TORCH_DEV_MEM reports of
 * device CPU count nowhere; every other record of the device counts as an allocation
 * (bytes > 0) or a free (bytes < 0); live bytes are their sum in the order the process
 * made them; peak_bytes is the live bytes after the allocation that first reached the
 * most (INT64_MIN: no allocation yet), peak_ticks that allocation's ticks (the same as its
 * record's). Cumulative since this file started: a later record of the same device
 * replaces an earlier one. Process-wide: the THREAD record before it does not apply. */
struct prof_rec_torch_mem_totals {
    struct prof_record_header h;
    int8_t device_type;  /* c10::DeviceType: 0 CPU (TORCH_MEM), 1 CUDA, ... */
    int8_t device_index; /* as the records say: -1 for CPU or the current device */
    uint16_t reserved;
    uint64_t alloc_count, alloc_bytes;
    uint64_t free_count, free_bytes;
    int64_t live_bytes;
    int64_t peak_bytes;
    uint64_t peak_ticks;
    uint64_t reserved_peak; /* devices: the most total_reserved a report gave; CPU 0 */
};
_Static_assert(sizeof(struct prof_rec_torch_mem_totals) == 72, "torch mem totals record");
_Static_assert(offsetof(struct prof_rec_torch_mem_totals, alloc_count) == 8,
               "torch mem totals counts offset");
_Static_assert(offsetof(struct prof_rec_torch_mem_totals, reserved_peak) == 64,
               "torch mem totals reserved offset");

/* PyTorch operators are also aggregated per thread into a call tree (META torch.scheme =
 * "calltree"), so that counts, times and memory stay exact whatever the op rate: a node is
 * (parent node, op name, input shapes); TORCH_OP spans are the timeline only and may be
 * dropped when the ring is full. TORCH_NODE and TORCH_STATS follow a THREAD record naming
 * the tree's thread; node ids are unique in the process, parent 0 is the top. STATS values
 * are cumulative: a later record for the same node replaces an earlier one.
 * calls follows torch.profiler's key_averages(): an op that is the only child of an op of
 * the same name (aten::div_(Scalar) -> aten::div_(Tensor)) is folded into that parent, its
 * self time and self memory added to the parent's; raw_calls counts every call
 * (RecordFunction start/end pairs), folded ones included, so raw_calls - calls of a
 * node were folded. Memory is what c10's allocators handed out minus what they took back
 * on this thread while the op ran (total: children included; self: this op innermost). */
struct prof_rec_torch_node {
    struct prof_record_header h;
    uint32_t node_id;
    uint32_t parent_id; /* 0: no enclosing op */
    uint32_t name_sid;
    uint32_t shapes_sid; /* 0: shapes not recorded */
    uint8_t scope;       /* at::RecordScope, as TORCH_OP's */
    uint8_t reserved[3];
};
_Static_assert(sizeof(struct prof_rec_torch_node) == 24, "torch node record");

struct prof_rec_torch_stats {
    struct prof_record_header h;
    uint32_t node_id;
    uint64_t calls;       /* as torch.profiler counts them (see above) */
    uint64_t raw_calls;   /* every call, folded ones included */
    uint64_t total_ticks; /* inclusive time of the counted calls */
    uint64_t self_ticks;  /* total minus counted children's, folded children's self added */
    int64_t cpu_mem, self_cpu_mem; /* CPU tensor bytes allocated minus freed */
    int64_t dev_mem, self_dev_mem; /* the same for device memory (TORCH_DEV_MEM reports) */
};
_Static_assert(sizeof(struct prof_rec_torch_stats) == 72, "torch stats record");
_Static_assert(offsetof(struct prof_rec_torch_stats, calls) == 8, "torch stats calls offset");

/* The record_function scopes that mark training steps and their phases (the optimizer's
 * step and zero_grad, torch.profiler's ProfilerStep#N, the DataLoader's batches, DDP's
 * forward) are also kept apart from the ring (torch_ops.c): a thread logs each such
 * USER_SCOPE op it records in its own memory, and the collector writes the log as
 * TORCH_SCOPE records, after a THREAD record. None is ever dropped, so a report finds the
 * step boundaries exactly whatever the ring lost; the TORCH_OP spans of the same ops are
 * the timeline's, and may be dropped. name_sid 0: the thread's log was full from here
 * (its collector fell far behind), the ring's spans are all there is. */
/* torch.nn.functional's losses (" name " each): the training steps count their calls as
 * forward, as a loss module's call is a module's (nn.CrossEntropyLoss()), and the preload
 * spans each call (python_phase_classify). A loss computed outside model() with F.* had
 * been "work outside forward, backward and the optimizer". */
#define PROF_PY_FUNCTIONAL_LOSSES                                                                  \
    " cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "     \
    "binary_cross_entropy_with_logits kl_div poisson_nll_loss gaussian_nll_loss "                  \
    "margin_ranking_loss hinge_embedding_loss multilabel_margin_loss soft_margin_loss "            \
    "multilabel_soft_margin_loss cosine_embedding_loss multi_margin_loss triplet_margin_loss "     \
    "triplet_margin_with_distance_loss ctc_loss "

static inline int prof_torch_scope_kept(const char *name)
{
    static const char *const prefixes[] = {"Optimizer.step#", "Optimizer.zero_grad#",
                                           "ProfilerStep#", "enumerate(DataLoader)#",
                                           "DistributedDataParallel.forward"};
    for (size_t i = 0; name && i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t n = 0;
        while (prefixes[i][n] && name[n] == prefixes[i][n])
            n++;
        if (!prefixes[i][n])
            return 1;
    }
    return 0;
}

struct prof_rec_torch_scope {
    struct prof_record_header h;
    uint32_t name_sid;
    uint64_t start; /* ticks */
    uint64_t end;
};
_Static_assert(sizeof(struct prof_rec_torch_scope) == 24, "torch scope record");
_Static_assert(offsetof(struct prof_rec_torch_scope, start) == 8, "torch scope start offset");

#endif
