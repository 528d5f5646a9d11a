/* CUDA runtime interposition (cudart.def). */
#ifndef PROF_CUDART_H
#define PROF_CUDART_H

#define PROF_API_CUDART_BASE 0

/* Registers the API table; enabled: record calls (else they only pass through). */
void cudart_init(int enabled);

#endif
