/* TEST DOUBLE of the device side (see fake_cudart.c): kernel registration as nvcc
 * -cudart shared emits it, <<<>>> configurations, kernel and graph launches. A launch checks
 * its function and configuration, then occupies its stream for FAKE_CUDA_KERNEL_NS. */
#define _GNU_SOURCE
#include "fake_cudart.h"

#include <stdlib.h>

#define FAKE_GRAPH_MAGIC 0x47525048U
#define FAKE_EXEC_MAGIC 0x47455845U
#define FAKE_KERNEL_MAGIC 0x4b524e4cU

struct CUgraph_st {
    uint32_t magic;
};

struct CUgraphExec_st {
    uint32_t magic;
};

struct CUkern_st {
    uint32_t magic;
    const void *host_fun;
    const char *name;
    struct CUkern_st *next;
};

struct fake_launch_config {
    dim3 grid;
    dim3 block;
    size_t shared_mem;
    cudaStream_t stream;
};

static struct CUkern_st *fake_kernels;
static int fake_fatbin_token;
static __thread struct fake_launch_config fake_config_stack[16]
    __attribute__((tls_model("initial-exec")));
static __thread int fake_config_depth __attribute__((tls_model("initial-exec")));

/* ---- kernels ---- */

static struct CUkern_st *fake_kernel_register(const void *host_fun, const char *name)
{
    struct CUkern_st *k;

    pthread_mutex_lock(&fake_lock);
    for (k = fake_kernels; k; k = k->next)
        if (k->host_fun == host_fun)
            break;
    if (!k && (k = calloc(1, sizeof(*k)))) {
        k->magic = FAKE_KERNEL_MAGIC;
        k->host_fun = host_fun;
        k->name = name;
        k->next = fake_kernels;
        fake_kernels = k;
    }
    pthread_mutex_unlock(&fake_lock);
    return k;
}

/* A launchable function is a registered host stub or a handle from __cudaGetKernel. */
static struct CUkern_st *fake_kernel_lookup(const void *fun)
{
    struct CUkern_st *k;

    pthread_mutex_lock(&fake_lock);
    for (k = fake_kernels; k; k = k->next)
        if (k->host_fun == fun || (const void *)k == fun)
            break;
    pthread_mutex_unlock(&fake_lock);
    return k;
}

static cudaError_t fake_check_dims(dim3 grid, dim3 block)
{
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
        return cudaErrorInvalidConfiguration;
    if (grid.y > 65535 || grid.z > 65535 || block.z > 64 ||
        (uint64_t)block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

const char *fake_kernel_name(const void *fun)
{
    struct CUkern_st *k = fun ? fake_kernel_lookup(fun) : NULL;

    return k ? k->name : NULL;
}

static cudaError_t fake_launch(const void *fun, dim3 grid, dim3 block, size_t shared_mem,
                               cudaStream_t stream)
{
    struct CUstream_st *s;
    struct CUkern_st *k;
    cudaError_t err;

    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if (!fun || !(k = fake_kernel_lookup(fun)))
        return fake_result(cudaErrorInvalidDeviceFunction);
    if ((err = fake_check_dims(grid, block)) != cudaSuccess)
        return fake_result(err);
    if (!(s = fake_stream(stream)))
        return fake_result(cudaErrorInvalidResourceHandle);
    fake_do_kernel(s, k->name, grid, block, shared_mem);
    return cudaSuccess;
}

/* ---- registration and <<<>>> support, as emitted by nvcc -cudart shared ---- */

FAKE_API void **__cudaRegisterFatBinary(void *fatCubin)
{
    (void)fatCubin;
    return (void **)&fake_fatbin_token;
}

FAKE_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

FAKE_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

FAKE_API char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

FAKE_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                     const char *deviceName, int thread_limit, uint3 *tid,
                                     uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid, (void)bid;
    (void)bDim, (void)gDim, (void)wSize;
    fake_kernel_register(hostFun, deviceName);
}

FAKE_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                const char *deviceName, int ext, size_t size, int constant,
                                int global)
{
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext;
    (void)size, (void)constant, (void)global;
}

FAKE_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                       char *deviceAddress, const char *deviceName, int ext,
                                       size_t size, int constant, int global)
{
    (void)fatCubinHandle, (void)deviceAddress, (void)deviceName, (void)ext, (void)constant;
    (void)global;
    if (hostVarPtrAddress && !*hostVarPtrAddress)
        *hostVarPtrAddress = calloc(1, size ? size : 1);
}

FAKE_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                              struct CUstream_st *stream)
{
    struct fake_launch_config *c;

    if (fake_config_depth >= (int)(sizeof(fake_config_stack) / sizeof(fake_config_stack[0])))
        return 1;
    c = &fake_config_stack[fake_config_depth++];
    c->grid = gridDim;
    c->block = blockDim;
    c->shared_mem = sharedMem;
    c->stream = stream;
    return 0;
}

cudaError_t fake_impl___cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream)
{
    struct fake_launch_config *c;

    if (fake_config_depth <= 0)
        return fake_result(cudaErrorMissingConfiguration);
    c = &fake_config_stack[--fake_config_depth];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shared_mem;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

cudaError_t fake_impl___cudaGetKernel(cudaKernel_t *kernel, const void *fun)
{
    struct CUkern_st *k = fun ? fake_kernel_lookup(fun) : NULL;

    if (!kernel)
        return fake_result(cudaErrorInvalidValue);
    *kernel = k;
    return k ? cudaSuccess : fake_result(cudaErrorInvalidDeviceFunction);
}

cudaError_t fake_impl___cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return fake_launch(kernel, gridDim, blockDim, sharedMem, stream);
}

cudaError_t fake_impl___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return fake_launch(kernel, gridDim, blockDim, sharedMem, stream);
}

cudaError_t fake_impl_cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return fake_launch(func, gridDim, blockDim, sharedMem, stream);
}

cudaError_t fake_impl_cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                          void **args)
{
    (void)args;
    if (!config)
        return fake_result(cudaErrorInvalidValue);
    return fake_launch(func, config->gridDim, config->blockDim, config->dynamicSmemBytes,
                       config->stream);
}

cudaError_t fake_impl_cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                  void **args, size_t sharedMem,
                                                  cudaStream_t stream)
{
    (void)args;
    return fake_launch(func, gridDim, blockDim, sharedMem, stream);
}

/* ---- graphs: opaque handles; a launch occupies its stream like one kernel (the fake CUPTI
 * reports no kernel: the graphs hold no nodes) ---- */

cudaError_t fake_impl_cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    struct CUgraph_st *g;

    if (!pGraph || flags)
        return fake_result(cudaErrorInvalidValue);
    if (!(g = calloc(1, sizeof(*g))))
        return fake_result(cudaErrorMemoryAllocation);
    g->magic = FAKE_GRAPH_MAGIC;
    *pGraph = g;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags)
{
    struct CUgraphExec_st *e;

    (void)flags;
    if (!pGraphExec || !graph || graph->magic != FAKE_GRAPH_MAGIC)
        return fake_result(cudaErrorInvalidValue);
    if (!(e = calloc(1, sizeof(*e))))
        return fake_result(cudaErrorMemoryAllocation);
    e->magic = FAKE_EXEC_MAGIC;
    *pGraphExec = e;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    struct CUstream_st *s;

    if (!graphExec || graphExec->magic != FAKE_EXEC_MAGIC)
        return fake_result(cudaErrorInvalidValue);
    if (!(s = fake_stream(stream)))
        return fake_result(cudaErrorInvalidResourceHandle);
    fake_enqueue(s, fake_kernel_ns);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    if (!graphExec || graphExec->magic != FAKE_EXEC_MAGIC)
        return fake_result(cudaErrorInvalidValue);
    graphExec->magic = 0;
    free(graphExec);
    return cudaSuccess;
}

cudaError_t fake_impl_cudaGraphDestroy(cudaGraph_t graph)
{
    if (!graph || graph->magic != FAKE_GRAPH_MAGIC)
        return fake_result(cudaErrorInvalidValue);
    graph->magic = 0;
    free(graph);
    return cudaSuccess;
}
