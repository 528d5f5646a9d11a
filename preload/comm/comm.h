/* The communication layer (NCCL, MPI): API id ranges and the communicator fields every
 * collective and point-to-point row records.
 *
 * Calls are API_CALL records of category PROF_CAT_COMM. The argument names a reader
 * relies on (beside trace_format.h's list):
 *   bytes      bytes of the operation as nccl-tests counts them: count x type size, the
 *              whole gathered / scattered buffer (count x size x ranks) for allgather,
 *              gather, scatter, alltoall, reduce_scatter
 *   count      element count as passed; dtype the library's type (NCCL: ncclDataType_t;
 *              MPI: 0, its handles mean nothing outside the process); op ncclRedOp_t
 *   peer       the other rank of a point-to-point call (-1 as u64 for MPI_ANY_SOURCE)
 *   root       the root of a rooted collective
 *   comm       the communicator's id, the same value on every rank in it (NCCL: a hash of
 *              its ncclUniqueId, or of the parent's id and color for a split; MPI: size << 32
 *              | the world rank of its rank 0); 0 when unknown
 *   comm_size, comm_rank   its size and this process's place in it
 *   stream     the CUDA stream (NCCL)
 *   requests   requests waited on or tested (MPI waits) */
#ifndef PROF_COMM_H
#define PROF_COMM_H

#define PROF_API_NCCL_BASE 1024
#define PROF_API_MPI_BASE 1280

/* FNV-1a over n bytes, for communicator ids. */
static inline unsigned long long comm_hash(const void *data, unsigned long n, unsigned long long h)
{
    const unsigned char *p = data;
    for (unsigned long i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}
#define COMM_HASH_SEED 1469598103934665603ull

#endif
