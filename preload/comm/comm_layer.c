/* The communication layer: NCCL and MPI calls (PROF_COMM). Nothing to start: the
 * wrappers find the real libraries on their first call. */
#include "comm_layer.h"
#include "layer.h"

static void comm_setup(int enabled)
{
    comm_nccl_setup(enabled);
    comm_mpi_setup(enabled);
}

const struct preload_layer comm_layer = {
    .name = "comm",
    .enable = SETTING_PROF_COMM,
    .setup = comm_setup,
};
