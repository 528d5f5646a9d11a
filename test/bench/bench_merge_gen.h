/* bench_merge_gen: realistic generated rank traces of a data-parallel training job, for
 * bench_merge. Each rank's trace holds, per training step: a Python call tree (about 160
 * nodes, defined once; cumulative PY_STATS every BENCH_GEN_STATS_EVERY steps and at the
 * end), 32 PyTorch operators on two threads (forward and optimizer on the main thread,
 * backward on the autograd thread), a cudaLaunchKernel per compute kernel with its CUPTI
 * GPU_API and GPU_KERNEL, tensor memory allocated in the forward and freed in the
 * backward, 4 ncclAllReduce calls (one per gradient bucket, each with its NCCL kernel) and
 * an NVTX range. One rank (slow_rank) spends 2 ms more in each layer's backward, so it
 * arrives last at every allreduce while the others wait for it.
 *
 * A step is encoded once per rank as a template and copied with its times and
 * correlation ids patched, so writing runs at the speed of the disk. */
#ifndef BENCH_MERGE_GEN_H
#define BENCH_MERGE_GEN_H

#include <stdint.h>

#define BENCH_GEN_ALLREDUCES 4     /* ncclAllReduce calls per step */
#define BENCH_GEN_LAYERS 4         /* linear layers: one gradient bucket each */
#define BENCH_GEN_STEP_NS 20000000 /* every rank's step, wait included */
#define BENCH_GEN_LATE_NS 2000000  /* the slow rank's extra compute before each allreduce */
#define BENCH_GEN_STATS_EVERY 64   /* steps between two PY_STATS dumps */

struct bench_gen_config {
    unsigned ranks, ranks_per_node, slow_rank;
    unsigned long long steps; /* per rank: bench_gen_steps_for() */
};

/* What every rank's trace holds per step, for the checks. */
struct bench_gen_expect {
    unsigned long long allreduce_bytes; /* the 4 calls' bytes together */
    unsigned launches;                  /* cudaLaunchKernel calls (compute kernels) */
    unsigned kernels;                   /* GPU kernels, NCCL's included */
    unsigned addmm, mm, ops;            /* aten::addmm, aten::mm, every TORCH_OP */
    unsigned py_nodes;
};

/* The steps that make a rank's trace about bytes long (at least 2). */
unsigned long long bench_gen_steps_for(unsigned long long bytes);
void bench_gen_expect(struct bench_gen_expect *e);

/* Writes rank's trace to path; 0, or -1 with errno set. *bytes: the file's size. */
int bench_gen_rank(const struct bench_gen_config *c, unsigned rank, const char *path,
                   unsigned long long *bytes);

#endif
