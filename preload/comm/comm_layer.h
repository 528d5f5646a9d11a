/* The communication layer's parts (mpi.c, nccl.c) as comm_layer.c starts them. */
#ifndef PROF_COMM_LAYER_H
#define PROF_COMM_LAYER_H

/* Registers the API table; enabled: record calls (else pass them through). */
void comm_mpi_setup(int enabled);
void comm_nccl_setup(int enabled);

#endif
