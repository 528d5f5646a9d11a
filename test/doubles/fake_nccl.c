/* TEST DOUBLE of NCCL, for machines without a GPU: a libnccl.so.2 look-alike with NCCL's
 * entry points and ABI (enums as int, ncclUniqueId as 128 bytes by value, opaque
 * communicators). It is not profiler code; tests select it with
 * LD_LIBRARY_PATH=$(BUILD)/test/doubles.
 *
 * Model: no data moves and nothing is launched. A communicator remembers its size and rank;
 * ncclCommInitRank checks 0 <= rank < nranks, ncclCommSplit gives the members of a color a
 * communicator of FAKE_NCCL_SPLIT_SIZE ranks (default: the parent's size) at the parent's
 * rank modulo that size, and NULL for NCCL_SPLIT_NOCOLOR (-1). Collectives check their
 * communicator, count, type and op (ncclInvalidArgument else) and return ncclSuccess; each
 * takes FAKE_NCCL_CALL_NS (default 0) of busy time. ncclGroupEnd fails without a matching
 * ncclGroupStart. ncclGetUniqueId fills the id from the pid and a counter. A new
 * communicator takes the memory of the last one destroyed, when there is one.
 * FAKE_NCCL_STRICT=1: ncclCommCount and ncclCommUserRank abort on what is not a live
 * communicator, as the real ones may crash on a bad pointer. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_NCCL_EXPORT __attribute__((visibility("default")))
#define FAKE_NCCL_MAGIC 0x4e43434cu

enum {
    fake_ncclSuccess = 0,
    fake_ncclInvalidArgument = 4,
    fake_ncclInvalidUsage = 5,
    fake_ncclNumTypes = 12,
    fake_ncclNumOps = 5
};

typedef struct {
    char internal[128];
} ncclUniqueId;

struct fake_nccl_comm {
    uint32_t magic;
    int nranks, rank;
};
typedef struct fake_nccl_comm *ncclComm_t;

static __thread int fake_nccl_group_depth;

static void fake_nccl_busy(void)
{
    const char *v = getenv("FAKE_NCCL_CALL_NS");
    long ns = v ? atol(v) : 0;
    if (ns <= 0)
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static int fake_nccl_valid(ncclComm_t comm)
{
    return comm && comm->magic == FAKE_NCCL_MAGIC;
}

/* Destroyed communicators' memory, reused last in first out (as NCCL's allocations may
 * be): a new communicator can get the address of the one destroyed before it. */
static ncclComm_t fake_nccl_freed[16];
static int fake_nccl_nfreed;

static ncclComm_t fake_nccl_new(int nranks, int rank)
{
    ncclComm_t c = fake_nccl_nfreed ? fake_nccl_freed[--fake_nccl_nfreed] : calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->magic = FAKE_NCCL_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    return c;
}

FAKE_NCCL_EXPORT int ncclGetUniqueId(ncclUniqueId *id)
{
    static int counter;
    if (!id)
        return fake_ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    int pid = getpid(), n = ++counter;
    memcpy(id->internal, &pid, sizeof pid);
    memcpy(id->internal + sizeof pid, &n, sizeof n);
    return fake_ncclSuccess;
}

/* Internal work goes through static functions only, so an interposed wrapper never sees
 * one call as two. */
static int fake_nccl_init_rank(ncclComm_t *comm, int nranks, int rank)
{
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
        return fake_ncclInvalidArgument;
    *comm = fake_nccl_new(nranks, rank);
    return *comm ? fake_ncclSuccess : fake_ncclInvalidUsage;
}

FAKE_NCCL_EXPORT int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    (void)commId;
    return fake_nccl_init_rank(comm, nranks, rank);
}

/* NCCL 2.23's scalable init: not wrapped by the profiler (a communicator it cannot name). */
FAKE_NCCL_EXPORT int ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int myrank, int nId,
                                              ncclUniqueId *commIds, void *config)
{
    (void)nId;
    (void)commIds;
    (void)config;
    return fake_nccl_init_rank(comm, nranks, myrank);
}

FAKE_NCCL_EXPORT int ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                            int rank, void *config)
{
    (void)commId;
    (void)config;
    return fake_nccl_init_rank(comm, nranks, rank);
}

FAKE_NCCL_EXPORT int ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    (void)devlist;
    if (!comms || ndev < 1)
        return fake_ncclInvalidArgument;
    for (int i = 0; i < ndev; i++)
        comms[i] = fake_nccl_new(ndev, i);
    return fake_ncclSuccess;
}

FAKE_NCCL_EXPORT int ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                   void *config)
{
    (void)key;
    (void)config;
    if (!fake_nccl_valid(comm) || !newcomm)
        return fake_ncclInvalidArgument;
    if (color == -1) {
        *newcomm = NULL;
        return fake_ncclSuccess;
    }
    const char *v = getenv("FAKE_NCCL_SPLIT_SIZE");
    int size = v && atoi(v) > 0 ? atoi(v) : comm->nranks;
    *newcomm = fake_nccl_new(size, comm->rank % size);
    return *newcomm ? fake_ncclSuccess : fake_ncclInvalidUsage;
}

static int fake_nccl_destroy(ncclComm_t comm)
{
    if (!fake_nccl_valid(comm))
        return fake_ncclInvalidArgument;
    comm->magic = 0;
    if (fake_nccl_nfreed < (int)(sizeof fake_nccl_freed / sizeof fake_nccl_freed[0]))
        fake_nccl_freed[fake_nccl_nfreed++] = comm;
    else
        free(comm);
    return fake_ncclSuccess;
}

FAKE_NCCL_EXPORT int ncclCommDestroy(ncclComm_t comm)
{
    return fake_nccl_destroy(comm);
}

FAKE_NCCL_EXPORT int ncclCommAbort(ncclComm_t comm)
{
    return fake_nccl_destroy(comm);
}

static void fake_nccl_strict(ncclComm_t comm)
{
    const char *v = getenv("FAKE_NCCL_STRICT");
    if (v && !strcmp(v, "1") && !fake_nccl_valid(comm)) {
        fprintf(stderr, "fake_nccl: asked about a communicator that is not one\n");
        abort();
    }
}

FAKE_NCCL_EXPORT int ncclCommCount(const ncclComm_t comm, int *count)
{
    fake_nccl_strict(comm);
    if (!fake_nccl_valid(comm) || !count)
        return fake_ncclInvalidArgument;
    *count = comm->nranks;
    return fake_ncclSuccess;
}

FAKE_NCCL_EXPORT int ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    fake_nccl_strict(comm);
    if (!fake_nccl_valid(comm) || !rank)
        return fake_ncclInvalidArgument;
    *rank = comm->rank;
    return fake_ncclSuccess;
}

FAKE_NCCL_EXPORT int ncclGroupStart(void)
{
    fake_nccl_group_depth++;
    return fake_ncclSuccess;
}

FAKE_NCCL_EXPORT int ncclGroupEnd(void)
{
    if (fake_nccl_group_depth == 0)
        return fake_ncclInvalidUsage;
    fake_nccl_group_depth--;
    return fake_ncclSuccess;
}

static int fake_nccl_check(ncclComm_t comm, int datatype, int op)
{
    if (!fake_nccl_valid(comm) || datatype < 0 || datatype >= fake_ncclNumTypes || op < 0 ||
        op >= fake_ncclNumOps)
        return fake_ncclInvalidArgument;
    fake_nccl_busy();
    return fake_ncclSuccess;
}

static int fake_nccl_check_rank(ncclComm_t comm, int datatype, int rank)
{
    if (fake_nccl_valid(comm) && (rank < 0 || rank >= comm->nranks))
        return fake_ncclInvalidArgument;
    return fake_nccl_check(comm, datatype, 0);
}

FAKE_NCCL_EXPORT int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype,
                                   int op, ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)stream;
    return fake_nccl_check(comm, datatype, op);
}

FAKE_NCCL_EXPORT int ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, int datatype,
                                   int root, ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)stream;
    return fake_nccl_check_rank(comm, datatype, root);
}

FAKE_NCCL_EXPORT int ncclReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype,
                                int op, int root, ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)stream;
    int rc = fake_nccl_check_rank(comm, datatype, root);
    return rc ? rc : fake_nccl_check(comm, datatype, op);
}

FAKE_NCCL_EXPORT int ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   int datatype, ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)sendcount, (void)stream;
    return fake_nccl_check(comm, datatype, 0);
}

FAKE_NCCL_EXPORT int ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                       int datatype, int op, ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)recvcount, (void)stream;
    return fake_nccl_check(comm, datatype, op);
}

FAKE_NCCL_EXPORT int ncclSend(const void *sendbuff, size_t count, int datatype, int peer,
                              ncclComm_t comm, void *stream)
{
    (void)sendbuff, (void)count, (void)stream;
    return fake_nccl_check_rank(comm, datatype, peer);
}

FAKE_NCCL_EXPORT int ncclRecv(void *recvbuff, size_t count, int datatype, int peer, ncclComm_t comm,
                              void *stream)
{
    (void)recvbuff, (void)count, (void)stream;
    return fake_nccl_check_rank(comm, datatype, peer);
}
