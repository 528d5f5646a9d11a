/* bench_merge_gen: see bench_merge_gen.h. Times are CLOCK_MONOTONIC nanoseconds (no TSC
 * feature bit), so ticks and CUPTI's GPU times share one clock; each rank's monotonic clock
 * starts elsewhere (another boot time per node), and META start_realtime_ns /
 * start_monotonic_ns put every rank's step k at the same CLOCK_REALTIME instant. */
#define _GNU_SOURCE
#include "bench_merge_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"

#define GEN_US 1000ull
#define GEN_TID_MAIN 0 /* + pid */
#define GEN_TID_AUTOGRAD 1
#define GEN_API_LAUNCH 40                    /* cudart's cudaLaunchKernel row */
#define GEN_API_ALLREDUCE (1024 + 8)         /* NCCL's base + ncclAllReduce's row */
#define GEN_CBID_LAUNCH 211                  /* runtime cudaLaunchKernel_v7000 */
#define GEN_CBID_LAUNCH_EX 652               /* driver cuLaunchKernelEx (NCCL's launch) */
#define GEN_COMM_ID 0x5be0cd19137e2179ull    /* the world communicator's id */
#define GEN_REALTIME0 1763971200000000000ull /* every rank's step 0 on CLOCK_REALTIME */
#define GEN_STUB(k) (0x55d0c0de0000ull + 0x40ull * (k))
#define GEN_PTR(k) (0x7f3a00000000ull + 0x4000000ull * (k))

static const uint64_t gen_bucket_count[BENCH_GEN_ALLREDUCES] = {6553600, 6553600, 4194304,
                                                                1048576}; /* fp32 elements */

/* ---- strings ---- */

enum gen_kernel {
    GK_ADDMM0, /* .. GK_ADDMM0 + 3 */
    GK_RELU = GK_ADDMM0 + BENCH_GEN_LAYERS,
    GK_LOG_SOFTMAX,
    GK_NLL,
    GK_NLL_BACKWARD,
    GK_MM0,
    GK_ADD = GK_MM0 + BENCH_GEN_LAYERS,
    GK_NCCL_LL128,
    GK_NCCL_LL,
    GK_COUNT
};

static const char *const gen_kernel_names[GK_COUNT] = {
    "ampere_sgemm_128x128_tn",
    "ampere_sgemm_128x64_tn",
    "ampere_sgemm_64x64_tn",
    "ampere_sgemm_32x128_tn",
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_21clamp_min_kernel_cudaERNS_"
    "18TensorIteratorBaseERKN3c106ScalarEENKUlvE_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EEEEviT0_"
    "T1_",
    "_ZN2at6native43_GLOBAL__N__softmax_cu_cunn_SoftMaxForwardILi4EfffNS1_"
    "22LogSoftMaxForwardEpilogueEEEvPT2_PKT0_l",
    "_ZN2at6native51_GLOBAL__N__nll_loss_forward_reduce_cuda_kernel_2dIflEEvPT_S3_PKS2_PKT0_"
    "S3_bllll",
    "_ZN2at6native52_GLOBAL__N__nll_loss_backward_reduce_cuda_kernel_2dIflEEvPT_PKS2_PKT0_"
    "S5_S5_blll",
    "ampere_sgemm_128x128_nn",
    "ampere_sgemm_128x64_nt",
    "ampere_sgemm_64x64_nn",
    "ampere_sgemm_32x32_sliced1x4_nt",
    "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_"
    "14BinaryOpListAlphaFunctorIfLi2ELi1ELi1EEEJSt4plusIfEfEEEvT_T0_DpT1_",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL128",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
};

enum gen_op {
    GO_LINEAR,
    GO_T,
    GO_ADDMM,
    GO_RELU,
    GO_CROSS_ENTROPY,
    GO_LOG_SOFTMAX,
    GO_NLL,
    GO_EVAL_NLL,
    GO_NLL_BACKWARD,
    GO_EVAL_ADDMM,
    GO_ADDMM_BACKWARD,
    GO_MM,
    GO_OPTIMIZER,
    GO_ADD,
    GO_COUNT
};

static const char *const gen_op_names[GO_COUNT] = {
    "aten::linear",
    "aten::t",
    "aten::addmm",
    "aten::relu",
    "aten::cross_entropy_loss",
    "aten::_log_softmax",
    "aten::nll_loss_forward",
    "autograd::engine::evaluate_function: NllLossBackward0",
    "aten::nll_loss_backward",
    "autograd::engine::evaluate_function: AddmmBackward0",
    "AddmmBackward0",
    "aten::mm",
    "Optimizer.step#SGD.step",
    "aten::add_",
};

/* ---- the Python call tree ---- */

struct gen_py_func {
    const char *name, *qualname, *file, *module;
    unsigned line;
};

static const struct gen_py_func gen_py_funcs[] = {
    /* 0 */ {"<module>", "<module>", "/job/train.py", "__main__", 1},
    {"main", "main", "/job/train.py", "__main__", 88},
    {"train_step", "train_step", "/job/train.py", "__main__", 41},
    {"__next__", "_BaseDataLoaderIter.__next__", "torch/utils/data/dataloader.py",
     "torch.utils.data.dataloader", 626},
    {"_next_data", "_SingleProcessDataLoaderIter._next_data", "torch/utils/data/dataloader.py",
     "torch.utils.data.dataloader", 671},
    /* 5 */
    {"fetch", "_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py",
     "torch.utils.data._utils.fetch", 46},
    {"_call_impl", "Module._call_impl", "torch/nn/modules/module.py", "torch.nn.modules.module",
     1520},
    {"forward", "Net.forward", "/job/train.py", "__main__", 20},
    {"forward", "Linear.forward", "torch/nn/modules/linear.py", "torch.nn.modules.linear", 115},
    {"<built-in function linear>", NULL, "~", NULL, 0},
    /* 10 */
    {"forward", "ReLU.forward", "torch/nn/modules/activation.py", "torch.nn.modules.activation",
     100},
    {"relu", "relu", "torch/nn/functional.py", "torch.nn.functional", 1457},
    {"<built-in method relu of type object>", NULL, "~", NULL, 0},
    {"forward", "CrossEntropyLoss.forward", "torch/nn/modules/loss.py", "torch.nn.modules.loss",
     1178},
    {"cross_entropy", "cross_entropy", "torch/nn/functional.py", "torch.nn.functional", 3029},
    /* 15 */
    {"<built-in method cross_entropy_loss of PyCapsule object>", NULL, "~", NULL, 0},
    {"backward", "Tensor.backward", "torch/_tensor.py", "torch._tensor", 466},
    {"backward", "backward", "torch/autograd/__init__.py", "torch.autograd", 165},
    {"_engine_run_backward", "_engine_run_backward", "torch/autograd/graph.py",
     "torch.autograd.graph", 739},
    {"<method 'run_backward' of 'torch._C._EngineBase' objects>", NULL, "~", NULL, 0},
    /* 20 */
    {"wrapper", "Optimizer.profile_hook_step.<locals>.wrapper", "torch/optim/optimizer.py",
     "torch.optim.optimizer", 373},
    {"step", "SGD.step", "torch/optim/sgd.py", "torch.optim.sgd", 63},
    {"sgd", "sgd", "torch/optim/sgd.py", "torch.optim.sgd", 213},
    {"_single_tensor_sgd", "_single_tensor_sgd", "torch/optim/sgd.py", "torch.optim.sgd", 279},
    {"<method 'add_' of 'torch._C.TensorBase' objects>", NULL, "~", NULL, 0},
    /* 25 */
    {"zero_grad", "Optimizer.zero_grad", "torch/optim/optimizer.py", "torch.optim.optimizer", 910},
    {"__enter__", "record_function.__enter__", "torch/autograd/profiler.py",
     "torch.autograd.profiler", 745},
    /* 27..: builtins the fillers call */
    {"<built-in method builtins.isinstance>", NULL, "~", NULL, 0},
    {"<built-in method builtins.len>", NULL, "~", NULL, 0},
    {"<built-in method builtins.getattr>", NULL, "~", NULL, 0},
    /* 30 */
    {"<built-in method builtins.hasattr>", NULL, "~", NULL, 0},
    {"<method 'append' of 'list' objects>", NULL, "~", NULL, 0},
    {"<method 'get' of 'dict' objects>", NULL, "~", NULL, 0},
    {"<method 'items' of 'dict' objects>", NULL, "~", NULL, 0},
    {"<built-in method builtins.iter>", NULL, "~", NULL, 0},
    /* 35 */
    {"<built-in method builtins.next>", NULL, "~", NULL, 0},
    {"<built-in method torch._C._get_tracing_state>", NULL, "~", NULL, 0},
    {"<built-in method torch._C._are_functorch_transforms_active>", NULL, "~", NULL, 0},
    {"<method 'values' of 'dict' objects>", NULL, "~", NULL, 0},
};
#define GEN_PY_FUNCS (sizeof gen_py_funcs / sizeof gen_py_funcs[0])
#define GEN_PY_FILLER_FIRST 27
#define GEN_PY_FILLERS_PER_NODE 5

/* Structural nodes: function, parent (index; -1: a root), calls and inclusive time per
 * step, intercepted API calls made with the node innermost per step. Fillers (builtins,
 * 5 under each node from train_step down) come after them. */
struct gen_py_node {
    int func, parent;
    unsigned calls;
    uint64_t total_ns;
    unsigned api_calls;
};

static const struct gen_py_node gen_py_tree[] = {
    {0, -1, 0, 0, 0},               /* <module>: once, the whole run */
    {1, 0, 0, 0, 0},                /* main: once */
    {2, 1, 1, 19600 * GEN_US, 0},   /* train_step */
    {3, 2, 1, 500 * GEN_US, 0},     /* DataLoader __next__ */
    {4, 3, 1, 450 * GEN_US, 0},     /* _next_data */
    {5, 4, 1, 400 * GEN_US, 0},     /* fetch */
    {6, 2, 2, 4900 * GEN_US, 0},    /* model(x), loss_fn(y, t) */
    {7, 6, 1, 3950 * GEN_US, 0},    /* Net.forward */
    {6, 7, 7, 3800 * GEN_US, 0},    /* 4 Linear, 3 ReLU modules */
    {8, 8, 4, 2400 * GEN_US, 0},    /* Linear.forward */
    {9, 9, 4, 2300 * GEN_US, 4},    /* F.linear: the addmm launches */
    {10, 8, 3, 900 * GEN_US, 0},    /* ReLU.forward */
    {11, 11, 3, 850 * GEN_US, 0},   /* F.relu */
    {12, 12, 3, 800 * GEN_US, 3},   /* torch.relu: its launches */
    {13, 6, 1, 880 * GEN_US, 0},    /* CrossEntropyLoss.forward */
    {14, 14, 1, 860 * GEN_US, 0},   /* F.cross_entropy */
    {15, 15, 1, 840 * GEN_US, 2},   /* its two launches */
    {16, 2, 1, 12500 * GEN_US, 0},  /* loss.backward() */
    {17, 17, 1, 12480 * GEN_US, 0}, /* torch.autograd.backward */
    {18, 18, 1, 12450 * GEN_US, 0}, /* _engine_run_backward */
    {19, 19, 1, 12400 * GEN_US, 0}, /* run_backward: the autograd thread works */
    {20, 2, 1, 1500 * GEN_US, 0},   /* optimizer.step() (hook wrapper) */
    {21, 21, 1, 1450 * GEN_US, 0},  /* SGD.step */
    {22, 22, 1, 1300 * GEN_US, 0},  /* sgd */
    {23, 23, 1, 1250 * GEN_US, 0},  /* _single_tensor_sgd */
    {24, 24, 4, 1000 * GEN_US, 4},  /* param.add_: the launches */
    {25, 2, 1, 100 * GEN_US, 0},    /* optimizer.zero_grad() */
    {26, 21, 1, 20 * GEN_US, 0},    /* record_function("Optimizer.step#SGD.step") */
};
#define GEN_PY_TREE (sizeof gen_py_tree / sizeof gen_py_tree[0])
#define GEN_PY_FIRST_FILLED 2
#define GEN_PY_NODES (GEN_PY_TREE + (GEN_PY_TREE - GEN_PY_FIRST_FILLED) * GEN_PY_FILLERS_PER_NODE)
#define GEN_NODE_LINEAR 11 /* node ids (index + 1) that launch */
#define GEN_NODE_RELU 14
#define GEN_NODE_LOSS 17
#define GEN_NODE_ADD 26
#define GEN_LAUNCH_NS 8000 /* a cudaLaunchKernel's CPU time */

struct gen_node {
    uint32_t func_id, parent_id; /* ids: index + 1; 0: none */
    unsigned calls, api_calls;
    uint64_t total_ns, self_ns;
};

/* Every node of the tree with its per-step self time (fillers: 1-3 calls of 400 ns). */
static void gen_py_nodes(struct gen_node *n)
{
    size_t k = 0;
    for (size_t i = 0; i < GEN_PY_TREE; i++, k++)
        n[k] = (struct gen_node){(uint32_t)gen_py_tree[i].func + 1,
                                 (uint32_t)(gen_py_tree[i].parent + 1),
                                 gen_py_tree[i].calls,
                                 gen_py_tree[i].api_calls,
                                 gen_py_tree[i].total_ns,
                                 0};
    for (size_t i = GEN_PY_FIRST_FILLED; i < GEN_PY_TREE; i++)
        for (unsigned f = 0; f < GEN_PY_FILLERS_PER_NODE; f++, k++) {
            unsigned pool = GEN_PY_FUNCS - GEN_PY_FILLER_FIRST;
            unsigned calls = 1 + (unsigned)((i + f) % 3);
            n[k] = (struct gen_node){GEN_PY_FILLER_FIRST + (uint32_t)((i * 3 + f) % pool) + 1,
                                     (uint32_t)i + 1,
                                     calls,
                                     0,
                                     400ull * calls,
                                     0};
        }
    for (size_t i = 0; i < GEN_PY_NODES; i++)
        n[i].self_ns = n[i].total_ns;
    for (size_t i = 0; i < GEN_PY_NODES; i++)
        if (n[i].parent_id)
            n[n[i].parent_id - 1].self_ns -= n[i].total_ns; /* trees above are consistent */
}

/* ---- output: one big buffer, written with write(2) ---- */

struct gen_out {
    int fd, failed;
    unsigned char *buf;
    size_t len, cap;
    unsigned long long bytes, records;
};

static void gen_flush(struct gen_out *o)
{
    size_t done = 0;
    while (!o->failed && done < o->len) {
        ssize_t w = write(o->fd, o->buf + done, o->len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->failed = errno ? errno : EIO;
        else
            done += (size_t)w;
    }
    o->bytes += o->len;
    o->len = 0;
}

static void gen_append(struct gen_out *o, const void *data, size_t n)
{
    if (o->len + n > o->cap)
        gen_flush(o);
    memcpy(o->buf + o->len, data, n); /* n is far below cap: a template or a section */
    o->len += n;
}

/* A section of records built with trace_build in memory. */
struct gen_mem {
    struct trace_build b;
    char *data;
    size_t size;
};

static int gen_mem_open(struct gen_mem *m)
{
    memset(m, 0, sizeof *m);
    m->b.f = open_memstream(&m->data, &m->size);
    return m->b.f ? 0 : -1;
}

static void gen_mem_close(struct gen_mem *m, struct gen_out *o)
{
    fclose(m->b.f);
    if (o) {
        gen_append(o, m->data, m->size);
        o->records += m->b.records;
    }
    free(m->data);
}

/* ---- the step template ---- */

struct gen_tpl {
    char *data;
    size_t size;
    unsigned long long records;
    uint32_t *times, *corrs; /* offsets of u64 times (+ step start) and u32 correlation ids */
    size_t ntimes, ncorrs, cap_times, cap_corrs;
    uint32_t nextcorr;
    struct gen_mem m;
    uint32_t pid, tid_now;
    unsigned char *kernels; /* GPU_KERNEL records, written after the step's CPU records */
    size_t kernels_len;
};

static void gen_tpl_mark(uint32_t **list, size_t *n, size_t *cap, uint64_t off)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        *list = realloc(*list, *cap * sizeof **list);
        if (!*list) {
            fprintf(stderr, "bench_merge: out of memory\n");
            exit(1);
        }
    }
    (*list)[(*n)++] = (uint32_t)off;
}

static void gen_time(struct gen_tpl *t, uint64_t rec, size_t field)
{
    gen_tpl_mark(&t->times, &t->ntimes, &t->cap_times, rec + field);
}

static void gen_corr(struct gen_tpl *t, uint64_t rec, size_t field)
{
    gen_tpl_mark(&t->corrs, &t->ncorrs, &t->cap_corrs, rec + field);
}

static void gen_thread(struct gen_tpl *t, uint32_t which)
{
    if (t->tid_now == t->pid + which)
        return;
    t->tid_now = t->pid + which;
    trace_build_thread(&t->m.b, t->tid_now);
}

static void gen_op(struct gen_tpl *t, enum gen_op op, uint64_t s, uint64_t e, unsigned depth)
{
    uint64_t at = t->m.b.offset;
    unsigned scope = op == GO_ADDMM_BACKWARD ? 1 : op == GO_OPTIMIZER ? 7 : 0;
    trace_build_torch_op(&t->m.b, (uint32_t)op + 100, s, e, -1, 0, scope, depth, 0);
    gen_time(t, at, offsetof(struct prof_rec_torch_op, start));
    gen_time(t, at, offsetof(struct prof_rec_torch_op, end));
}

static void gen_mem_event(struct gen_tpl *t, int64_t bytes, unsigned block, uint64_t ticks,
                          uint32_t py_node)
{
    uint64_t at = t->m.b.offset;
    trace_build_torch_mem(&t->m.b, bytes, GEN_PTR(block), ticks, py_node);
    gen_time(t, at, offsetof(struct prof_rec_torch_mem, ticks));
}

/* One GPU kernel of the step, kept aside until the step's CPU records are written. */
static void gen_kernel(struct gen_tpl *t, uint32_t corr, enum gen_kernel k, uint64_t s, uint64_t e,
                       uint32_t stream)
{
    struct prof_rec_gpu_kernel r;
    memset(&r, 0, sizeof r);
    r.h = (struct prof_record_header){PROF_REC_GPU_KERNEL, sizeof r};
    r.correlation = corr;
    r.start_ns = s;
    r.end_ns = e;
    r.name_sid = (uint32_t)k + 1;
    r.context = 1;
    r.stream = stream;
    r.grid = trace_build_dim3(stream == 13 ? 32 : 1024, 1, 1);
    r.block = trace_build_dim3(stream == 13 ? 640 : 256, 1, 1);
    r.registers = stream == 13 ? 96 : 64;
    t->kernels = realloc(t->kernels, t->kernels_len + sizeof r);
    if (!t->kernels) {
        fprintf(stderr, "bench_merge: out of memory\n");
        exit(1);
    }
    memcpy(t->kernels + t->kernels_len, &r, sizeof r);
    t->kernels_len += sizeof r;
}

/* cudaLaunchKernel at s: the wrapper's API_CALL, CUPTI's GPU_API, the kernel at ks. */
static void gen_launch(struct gen_tpl *t, enum gen_kernel k, uint64_t s, uint32_t py_node,
                       uint64_t ks, uint64_t kns)
{
    uint32_t corr = ++t->nextcorr;
    uint64_t at = t->m.b.offset;
    trace_build_call(&t->m.b, GEN_API_LAUNCH, 0, s, s + GEN_LAUNCH_NS, 5, GEN_STUB(k),
                     trace_build_dim3(1024, 1, 1), trace_build_dim3(256, 1, 1), 0ull, 0x7ull);
    gen_time(t, at, offsetof(struct prof_rec_api_call, start));
    gen_time(t, at, offsetof(struct prof_rec_api_call, end));
    at = t->m.b.offset;
    trace_build_gpu_api(&t->m.b, PROF_GPU_API_RUNTIME, GEN_CBID_LAUNCH, corr, py_node, s + 500,
                        s + GEN_LAUNCH_NS - 500);
    gen_corr(t, at, offsetof(struct prof_rec_gpu_api, correlation));
    gen_time(t, at, offsetof(struct prof_rec_gpu_api, start));
    gen_time(t, at, offsetof(struct prof_rec_gpu_api, end));
    gen_kernel(t, corr, k, ks, ks + kns, 7);
}

/* Rank's step, times from the step's start. */
static int gen_tpl_build(struct gen_tpl *t, const struct bench_gen_config *c, unsigned rank)
{
    memset(t, 0, sizeof *t);
    if (gen_mem_open(&t->m) != 0)
        return -1;
    t->pid = 10000 + rank;
    t->tid_now = 0;
    int slow = rank == c->slow_rank;
    uint64_t late = slow ? BENCH_GEN_LATE_NS : 0;
    uint64_t jitter = slow ? 0 : (rank * 7919u % 97u) * GEN_US; /* arrival order */
    uint64_t exit_jitter = (rank % 5u) * GEN_US;
    struct trace_build *b = &t->m.b;
    uint64_t at;

    gen_thread(t, GEN_TID_MAIN);
    at = b->offset;
    trace_build_nvtx(b, PROF_NVTX_PUSH, 200, 0, 0, 0);
    gen_time(t, at, offsetof(struct prof_rec_nvtx, ticks));
    /* forward: 4 x (linear > t, addmm), relu after the first three */
    for (unsigned i = 0; i < BENCH_GEN_LAYERS; i++) {
        uint64_t f = (600 + 900 * i) * GEN_US;
        gen_op(t, GO_T, f + 10 * GEN_US, f + 40 * GEN_US, 1);
        gen_mem_event(t, 4 << 20, 2 * i, f + 60 * GEN_US, GEN_NODE_LINEAR);
        gen_launch(t, GK_ADDMM0 + i, f + 100 * GEN_US, GEN_NODE_LINEAR, f + 120 * GEN_US,
                   (300 - 40 * i) * GEN_US);
        gen_op(t, GO_ADDMM, f + 50 * GEN_US, f + 490 * GEN_US, 1);
        gen_op(t, GO_LINEAR, f, f + 500 * GEN_US, 0);
        if (i + 1 < BENCH_GEN_LAYERS) {
            gen_mem_event(t, 4 << 20, 2 * i + 1, f + 530 * GEN_US, GEN_NODE_RELU);
            gen_launch(t, GK_RELU, f + 600 * GEN_US, GEN_NODE_RELU, f + 620 * GEN_US, 80 * GEN_US);
            gen_op(t, GO_RELU, f + 520 * GEN_US, f + 880 * GEN_US, 0);
        }
    }
    gen_mem_event(t, 1 << 20, 8, 4320 * GEN_US, GEN_NODE_LOSS);
    gen_launch(t, GK_LOG_SOFTMAX, 4400 * GEN_US, GEN_NODE_LOSS, 4420 * GEN_US, 100 * GEN_US);
    gen_op(t, GO_LOG_SOFTMAX, 4310 * GEN_US, 4700 * GEN_US, 1);
    gen_mem_event(t, 4096, 9, 4720 * GEN_US, GEN_NODE_LOSS);
    gen_launch(t, GK_NLL, 4800 * GEN_US, GEN_NODE_LOSS, 4820 * GEN_US, 50 * GEN_US);
    gen_op(t, GO_NLL, 4710 * GEN_US, 5190 * GEN_US, 1);
    gen_op(t, GO_CROSS_ENTROPY, 4300 * GEN_US, 5200 * GEN_US, 0);

    /* backward on the autograd thread; an allreduce per layer's gradient bucket */
    gen_thread(t, GEN_TID_AUTOGRAD);
    gen_mem_event(t, -(1 << 20), 8, 5515 * GEN_US, 0);
    gen_mem_event(t, -4096, 9, 5516 * GEN_US, 0);
    gen_launch(t, GK_NLL_BACKWARD, 5520 * GEN_US, 0, 5540 * GEN_US, 40 * GEN_US);
    gen_op(t, GO_NLL_BACKWARD, 5510 * GEN_US, 5590 * GEN_US, 1);
    gen_op(t, GO_EVAL_NLL, 5500 * GEN_US, 5600 * GEN_US, 0);
    for (unsigned p = 0; p < BENCH_GEN_LAYERS; p++) {
        unsigned layer = BENCH_GEN_LAYERS - 1 - p;
        uint64_t s = (5600 + 3100 * p) * GEN_US;
        gen_mem_event(t, -(4 << 20), 2 * layer, s + 25 * GEN_US, 0);
        if (layer + 1 < BENCH_GEN_LAYERS)
            gen_mem_event(t, -(4 << 20), 2 * layer + 1, s + 26 * GEN_US, 0);
        gen_launch(t, GK_MM0 + layer, s + 30 * GEN_US, 0, s + 50 * GEN_US, 400 * GEN_US);
        gen_op(t, GO_MM, s + 20 * GEN_US, s + 680 * GEN_US + late, 2);
        gen_op(t, GO_ADDMM_BACKWARD, s + 10 * GEN_US, s + 690 * GEN_US + late, 1);
        gen_op(t, GO_EVAL_ADDMM, s, s + 700 * GEN_US + late, 0);
        /* Everyone leaves 300 us after the slow rank arrives. */
        uint64_t arrive = s + 710 * GEN_US + (slow ? late : jitter);
        uint64_t leave = s + (710 + 300) * GEN_US + BENCH_GEN_LATE_NS + exit_jitter;
        uint64_t count = gen_bucket_count[p];
        at = b->offset;
        trace_build_call(b, GEN_API_ALLREDUCE, 0, arrive, leave, 8, count * 4, count, 7ull, 0ull,
                         0x13ull, GEN_COMM_ID, (uint64_t)c->ranks, (uint64_t)rank);
        gen_time(t, at, offsetof(struct prof_rec_api_call, start));
        gen_time(t, at, offsetof(struct prof_rec_api_call, end));
        uint32_t corr = ++t->nextcorr;
        at = b->offset;
        trace_build_gpu_api(b, PROF_GPU_API_DRIVER, GEN_CBID_LAUNCH_EX, corr, 0,
                            arrive + 5 * GEN_US, arrive + 12 * GEN_US);
        gen_corr(t, at, offsetof(struct prof_rec_gpu_api, correlation));
        gen_time(t, at, offsetof(struct prof_rec_gpu_api, start));
        gen_time(t, at, offsetof(struct prof_rec_gpu_api, end));
        gen_kernel(t, corr, p + 1 < BENCH_GEN_ALLREDUCES ? GK_NCCL_LL128 : GK_NCCL_LL,
                   arrive + 20 * GEN_US, leave - 10 * GEN_US, 13);
    }

    /* optimizer step on the main thread */
    gen_thread(t, GEN_TID_MAIN);
    for (unsigned i = 0; i < BENCH_GEN_LAYERS; i++) {
        uint64_t s = (18100 + 300 * i) * GEN_US;
        gen_launch(t, GK_ADD, s + 20 * GEN_US, GEN_NODE_ADD, s + 40 * GEN_US, 50 * GEN_US);
        gen_op(t, GO_ADD, s, s + 250 * GEN_US, 1);
    }
    gen_op(t, GO_OPTIMIZER, 18050 * GEN_US, 19450 * GEN_US, 0);
    at = b->offset;
    trace_build_nvtx(b, PROF_NVTX_POP, 200, 0, 0, 19600 * GEN_US);
    gen_time(t, at, offsetof(struct prof_rec_nvtx, id)); /* the PUSH's ticks: 0 + start */
    gen_time(t, at, offsetof(struct prof_rec_nvtx, ticks));

    /* the kernels, as CUPTI's buffer delivers them: after the calls */
    uint64_t kbase = b->offset;
    size_t nk = t->kernels_len / sizeof(struct prof_rec_gpu_kernel);
    for (size_t k = 0; k < nk; k++) {
        uint64_t rec = kbase + k * sizeof(struct prof_rec_gpu_kernel);
        gen_corr(t, rec, offsetof(struct prof_rec_gpu_kernel, correlation));
        gen_time(t, rec, offsetof(struct prof_rec_gpu_kernel, start_ns));
        gen_time(t, rec, offsetof(struct prof_rec_gpu_kernel, end_ns));
    }
    trace_build_raw(b, t->kernels, t->kernels_len);
    b->records += nk;
    t->records = b->records;
    fclose(b->f);
    t->data = t->m.data;
    t->size = t->m.size;
    free(t->kernels);
    t->kernels = NULL;
    return 0;
}

static void gen_tpl_free(struct gen_tpl *t)
{
    free(t->data);
    free(t->times);
    free(t->corrs);
}

/* ---- the file ---- */

static void gen_py_stats(struct gen_out *o, const struct gen_node *nodes, uint32_t main_tid,
                         unsigned long long steps)
{
    struct gen_mem m;
    if (gen_mem_open(&m) != 0) {
        o->failed = ENOMEM;
        return;
    }
    trace_build_thread(&m.b, main_tid);
    uint64_t run = steps * BENCH_GEN_STEP_NS;
    for (size_t i = 0; i < GEN_PY_NODES; i++) {
        const struct gen_node *n = &nodes[i];
        uint64_t calls = steps * n->calls, total = steps * n->total_ns, self = steps * n->self_ns;
        if (i == 0 || i == 1) { /* <module> and main: one call, the whole run */
            calls = 1;
            total = run + (i == 0 ? 2000000000ull : 1000000000ull);
            self = i == 0 ? 1000000000ull : total - steps * nodes[2].total_ns;
        }
        trace_build_py_stats(&m.b, (uint32_t)i + 1, calls, total, self, steps * n->api_calls,
                             steps * n->api_calls * GEN_LAUNCH_NS);
    }
    gen_mem_close(&m, o);
}

/* META, names, the Python tree: everything before step 0. */
static int gen_head(struct gen_out *o, const struct bench_gen_config *c, unsigned rank,
                    uint64_t mono0, const struct gen_node *nodes)
{
    struct gen_mem m;
    if (gen_mem_open(&m) != 0)
        return -1;
    struct trace_build *b = &m.b;
    struct prof_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PROF_TRACE_MAGIC, PROF_TRACE_MAGIC_LEN);
    h.version = PROF_TRACE_VERSION;
    h.header_size = sizeof h;
    trace_build_raw(b, &h, sizeof h);
    char v[64];
    unsigned node = rank / c->ranks_per_node;
    uint32_t pid = 10000 + rank;
#define GEN_META_NUM(key, value)                                                                   \
    do {                                                                                           \
        snprintf(v, sizeof v, "%llu", (unsigned long long)(value));                                \
        trace_build_meta(b, key, v);                                                               \
    } while (0)
    GEN_META_NUM("pid", pid);
    GEN_META_NUM("ppid", 9000 + node);
    trace_build_meta(b, "profiler_version", "bench");
    snprintf(v, sizeof v, "node%03u", node);
    trace_build_meta(b, "host", v);
    trace_build_meta(b, "exe", "/usr/bin/python3.11");
    trace_build_meta(b, "argv", "/usr/bin/python3");
    trace_build_meta(b, "argv", "train.py");
    trace_build_meta(b, "run_id", "slurm-4242.0");
    trace_build_meta(b, "clock", "monotonic");
    GEN_META_NUM("start_monotonic_ns", mono0);
    GEN_META_NUM("start_realtime_ns", GEN_REALTIME0 - 1000000000ull);
    GEN_META_NUM("rank", rank);
    GEN_META_NUM("local_rank", rank % c->ranks_per_node);
    GEN_META_NUM("world_size", c->ranks);
    GEN_META_NUM("local_world_size", c->ranks_per_node);
    trace_build_meta(b, "role", "rank");
    snprintf(v, sizeof v, "node%03u", node);
    trace_build_meta(b, "node", v);
    trace_build_meta(b, "rank_from", "SLURM_PROCID");
    GEN_META_NUM("node_rank", node);
    trace_build_meta(b, "job_id", "slurm-4242");
    trace_build_meta(b, "run_id_from", "job");
    trace_build_meta(b, "python.scheme", "calltree");
    trace_build_meta(b, "python.span_threshold_ns", "100000");
#undef GEN_META_NUM
    trace_build_clock(b, mono0, mono0, GEN_REALTIME0 - 1000000000ull);
    for (unsigned k = 0; k < GK_COUNT; k++) {
        trace_build_string(b, k + 1, gen_kernel_names[k]);
        trace_build_symbol(b, PROF_SYMBOL_KERNEL_NAME, k + 1, GEN_STUB(k), 0);
    }
    for (unsigned k = 0; k < GO_COUNT; k++)
        trace_build_string(b, 100 + k, gen_op_names[k]);
    trace_build_string(b, 200, "train_step");
    uint32_t sid = 1000;
    for (size_t i = 0; i < GEN_PY_FUNCS; i++) {
        const struct gen_py_func *f = &gen_py_funcs[i];
        uint32_t name = sid++, qual = 0, file = 0, module = 0;
        trace_build_string(b, name, f->name);
        if (f->qualname)
            trace_build_string(b, qual = sid++, f->qualname);
        trace_build_string(b, file = sid++, f->file);
        if (f->module)
            trace_build_string(b, module = sid++, f->module);
        trace_build_py_func(b, (uint32_t)i + 1, name, qual ? qual : name, file, module, f->line,
                            f->line ? PROF_PY_FUNC_PYTHON : PROF_PY_FUNC_C);
    }
    trace_build_api_name(b, GEN_API_LAUNCH, PROF_CAT_LAUNCH, "cudaLaunchKernel",
                         "func,grid,block,shmem,stream");
    trace_build_api_name(b, GEN_API_ALLREDUCE, PROF_CAT_COMM, "ncclAllReduce",
                         "bytes,count,dtype,op,stream,comm,comm_size,comm_rank");
    trace_build_gpu_api_name(b, PROF_GPU_API_RUNTIME, GEN_CBID_LAUNCH, "cudaLaunchKernel_v7000");
    trace_build_gpu_api_name(b, PROF_GPU_API_DRIVER, GEN_CBID_LAUNCH_EX, "cuLaunchKernelEx");
    trace_build_gpu_device(b, 0, "NVIDIA H100 80GB HBM3", 85045477376ull, 132, 1980000, 2619000, 9,
                           0);
    trace_build_thread(b, pid);
    trace_build_thread_name(b, pid, "MainThread");
    for (size_t i = 0; i < GEN_PY_NODES; i++)
        trace_build_py_node(b, (uint32_t)i + 1, nodes[i].parent_id, nodes[i].func_id);
    trace_build_thread(b, pid + GEN_TID_AUTOGRAD);
    trace_build_thread_name(b, pid + GEN_TID_AUTOGRAD, "pt_autograd_0");
    gen_mem_close(&m, o);
    return 0;
}

static uint64_t gen_mono0(const struct bench_gen_config *c, unsigned rank)
{
    /* each node booted at another time; each rank started a little after its node's first */
    return (100000ull + 3600ull * (rank / c->ranks_per_node)) * 1000000000ull +
           (rank % c->ranks_per_node) * 1234567ull;
}

static int gen_write(const struct bench_gen_config *c, unsigned rank, int fd,
                     unsigned long long *bytes)
{
    struct gen_node nodes[GEN_PY_NODES];
    gen_py_nodes(nodes);
    struct gen_tpl t;
    if (gen_tpl_build(&t, c, rank) != 0)
        return -1;
    struct gen_out o = {.fd = fd, .cap = 4u << 20};
    o.buf = malloc(o.cap);
    unsigned char *step = malloc(t.size);
    if (!o.buf || !step) {
        free(o.buf);
        free(step);
        gen_tpl_free(&t);
        errno = ENOMEM;
        return -1;
    }
    uint64_t mono0 = gen_mono0(c, rank);
    uint64_t first = mono0 + 1000000000ull; /* step 0: GEN_REALTIME0 on every rank */
    if (gen_head(&o, c, rank, mono0, nodes) != 0)
        o.failed = ENOMEM;
    uint32_t ncorr = t.nextcorr;
    for (unsigned long long k = 0; k < c->steps && !o.failed; k++) {
        uint64_t base = first + k * BENCH_GEN_STEP_NS;
        uint32_t corr = (uint32_t)(k * ncorr);
        memcpy(step, t.data, t.size);
        for (size_t i = 0; i < t.ntimes; i++) {
            uint64_t v;
            memcpy(&v, step + t.times[i], 8);
            v += base;
            memcpy(step + t.times[i], &v, 8);
        }
        for (size_t i = 0; i < t.ncorrs; i++) {
            uint32_t v;
            memcpy(&v, step + t.corrs[i], 4);
            v += corr;
            memcpy(step + t.corrs[i], &v, 4);
        }
        gen_append(&o, step, t.size);
        o.records += t.records;
        if ((k + 1) % BENCH_GEN_STATS_EVERY == 0 && k + 1 < c->steps)
            gen_py_stats(&o, nodes, 10000 + rank, k + 1);
    }
    gen_py_stats(&o, nodes, 10000 + rank, c->steps);
    uint64_t end = first + c->steps * BENCH_GEN_STEP_NS;
    struct gen_mem m;
    if (gen_mem_open(&m) == 0) {
        trace_build_clock(&m.b, end, end, GEN_REALTIME0 + c->steps * BENCH_GEN_STEP_NS);
        trace_build_end(&m.b, end, o.records + 2, 0);
        gen_mem_close(&m, &o);
    } else {
        o.failed = ENOMEM;
    }
    gen_flush(&o);
    free(o.buf);
    free(step);
    gen_tpl_free(&t);
    *bytes = o.bytes;
    if (o.failed) {
        errno = o.failed;
        return -1;
    }
    return 0;
}

int bench_gen_rank(const struct bench_gen_config *c, unsigned rank, const char *path,
                   unsigned long long *bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = gen_write(c, rank, fd, bytes);
    int saved = errno;
    if (close(fd) != 0 && rc == 0)
        return -1;
    errno = saved;
    return rc;
}

unsigned long long bench_gen_steps_for(unsigned long long bytes)
{
    struct bench_gen_config c = {.ranks = 2, .ranks_per_node = 2, .slow_rank = 1, .steps = 0};
    struct gen_tpl t;
    if (gen_tpl_build(&t, &c, 0) != 0)
        return 2;
    /* the head is about 12 KB; a PY_STATS dump is 48 bytes a node */
    double per_step = (double)t.size + (double)(GEN_PY_NODES * 48 + 8) / BENCH_GEN_STATS_EVERY;
    gen_tpl_free(&t);
    unsigned long long steps =
        bytes > 12288 ? (unsigned long long)((double)(bytes - 12288) / per_step) : 0;
    return steps < 2 ? 2 : steps;
}

void bench_gen_expect(struct bench_gen_expect *e)
{
    memset(e, 0, sizeof *e);
    for (unsigned i = 0; i < BENCH_GEN_ALLREDUCES; i++)
        e->allreduce_bytes += gen_bucket_count[i] * 4;
    e->launches = 2 * BENCH_GEN_LAYERS + (BENCH_GEN_LAYERS - 1) + 3 + BENCH_GEN_LAYERS;
    e->kernels = e->launches + BENCH_GEN_ALLREDUCES;
    e->addmm = BENCH_GEN_LAYERS;
    e->mm = BENCH_GEN_LAYERS;
    e->ops = 3 * BENCH_GEN_LAYERS + (BENCH_GEN_LAYERS - 1) + 3 + 2 + 3 * BENCH_GEN_LAYERS + 1 +
             BENCH_GEN_LAYERS;
    e->py_nodes = GEN_PY_NODES;
}
