/* Shared internals of the fake libcudart (a TEST DOUBLE of the device side, see
 * fake_cudart.c). Everything here is hidden: only cuda*, __cuda* and the fake CUPTI's attach
 * function (fake_cupti_link.h) leave the library. */
#ifndef FAKE_CUDART_H
#define FAKE_CUDART_H

#include "fake_cupti_link.h"

#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdint.h>

#define FAKE_API __attribute__((visibility("default")))
#define FAKE_STREAM_MAGIC 0x5354524dU

#define FAKE_DEFAULT_STREAM_ID 7 /* the legacy default stream's id in real CUPTI records */

struct CUstream_st {
    uint32_t magic;
    unsigned int flags;
    uint64_t busy_until_ns; /* device time at which this stream's last work ends */
    uint32_t id;            /* CUPTI stream id */
};

enum fake_alloc_kind { FAKE_DEVICE, FAKE_HOST, FAKE_MANAGED, FAKE_UNTRACKED };

#pragma GCC visibility push(hidden)
extern pthread_mutex_t fake_lock;
extern uint64_t fake_kernel_ns;

/* Records err as the thread's last error when it is one; returns err. */
cudaError_t fake_result(cudaError_t err);
/* Shared between fake_cudart.c and fake_cudart_device.c. */
extern int fake_device_count;
extern __thread int fake_current_device __attribute__((tls_model("initial-exec")));
extern __thread cudaError_t fake_last_error __attribute__((tls_model("initial-exec")));
uint64_t fake_device_idle_at(void);
/* FAKE_CUDA_DEVICE_COUNT=0: every device call fails with cudaErrorNoDevice. */
int fake_no_device(void);
/* The stream behind a handle (NULL and the special handles are the default stream), or NULL. */
struct CUstream_st *fake_stream(cudaStream_t stream);
/* Occupies s for duration_ns of device time, after the work it must wait for; returns the
 * device time at which that work starts. */
uint64_t fake_enqueue(struct CUstream_st *s, uint64_t duration_ns);
/* The kind of the allocation that starts at ptr (FAKE_UNTRACKED: not one of ours). */
enum fake_alloc_kind fake_alloc_kind_of(const void *ptr);
/* Host ns on the fake runtime's clock (CLOCK_MONOTONIC). */
uint64_t fake_now_ns(void);
void fake_wait_until(uint64_t deadline_ns);

/* fake_cudart_launch.c: the registered (mangled) name of a launchable function, or NULL. */
const char *fake_kernel_name(const void *fun);

/* fake_cudart_api.c: the device work of the current call. Each occupies stream s for the
 * work's duration (a kernel FAKE_CUDA_KERNEL_NS, a copy or memset by its size) and tells a
 * linked fake CUPTI about it; a synchronous copy (async 0) then waits for its end. */
void fake_do_kernel(struct CUstream_st *s, const char *name, dim3 grid, dim3 block,
                    size_t dynamic_shared);
void fake_do_copy(struct CUstream_st *s, void *dst, const void *src, uint64_t bytes,
                  enum cudaMemcpyKind kind, int async);
void fake_do_set(struct CUstream_st *s, void *ptr, int value, uint64_t bytes, int async);
/* Tells a linked fake CUPTI about a context or stream event. */
void fake_do_resource(enum fake_cupti_resource what, const void *stream);

/* The implementations behind the exported entry points of fake_cudart_api.def. */
#define FAKE_RT(name, cbid, params, args, symbol) cudaError_t fake_impl_##name params;
#include "fake_cudart_api.def"
#undef FAKE_RT
#pragma GCC visibility pop

#endif
