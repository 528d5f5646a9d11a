/* Shared internals of the fake libcudart (a TEST DOUBLE of the device side, see
 * fake_cudart.c). Everything here is hidden: only cuda* and __cuda* leave the library. */
#ifndef FAKE_CUDART_H
#define FAKE_CUDART_H

#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdint.h>

#define FAKE_API __attribute__((visibility("default")))
#define FAKE_STREAM_MAGIC 0x5354524dU

struct CUstream_st {
    uint32_t magic;
    unsigned int flags;
    uint64_t busy_until_ns; /* device time at which this stream's last work ends */
};

#pragma GCC visibility push(hidden)
extern pthread_mutex_t fake_lock;
extern uint64_t fake_kernel_ns;

/* Records err as the thread's last error when it is one; returns err. */
cudaError_t fake_result(cudaError_t err);
/* FAKE_CUDA_DEVICE_COUNT=0: every device call fails with cudaErrorNoDevice. */
int fake_no_device(void);
/* The stream behind a handle (NULL and the special handles are the default stream), or NULL. */
struct CUstream_st *fake_stream(cudaStream_t stream);
/* Occupies s for duration_ns of device time, after the work it must wait for. */
void fake_enqueue(struct CUstream_st *s, uint64_t duration_ns);
#pragma GCC visibility pop

#endif
