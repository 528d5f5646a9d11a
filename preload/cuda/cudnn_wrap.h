/* cuDNN interposition (cudnn.def). Calls nest with cuBLAS ones through
 * prof_tls_lib_depth (cublas.h). */
#ifndef PROF_CUDNN_H
#define PROF_CUDNN_H

#define PROF_API_CUDNN_BASE 512

#endif
