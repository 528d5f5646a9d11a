/* CUDA runtime interposition (cudart.def). */
#ifndef PROF_CUDART_H
#define PROF_CUDART_H

#define PROF_API_CUDART_BASE 0

#endif
