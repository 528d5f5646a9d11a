/* cuBLAS and cuBLASLt interposition (cublas.def), and the call-depth bookkeeping that
 * every library wrapper (cublas.c, cudnn.c) shares. */
#ifndef PROF_CUBLAS_H
#define PROF_CUBLAS_H

#include "collector.h"

#define PROF_API_CUBLAS_BASE 256

/* Library calls (cuBLAS, cuBLASLt, cuDNN) in progress on this thread. cuBLAS calls
 * cuBLASLt through the PLT, so cublasGemmEx runs our cublasLtMatmul wrapper: that inner
 * call is recorded with its `nested` argument set to the depth it started at (1 there),
 * and a reader counts only nested == 0 calls in top-level library time. Not
 * prof_tls_busy: the inner span must still be recorded. */
extern __thread unsigned prof_tls_lib_depth PROF_TLS;

#endif
