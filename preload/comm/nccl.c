/* NCCL interposition: wrappers generated from nccl.def. The real functions are found in
 * the loaded libnccl (RTLD_NEXT, or a NOLOAD handle for a library in a local scope), so
 * libprof.so needs no NCCL at build or run time. Communicators are named at their init:
 * the id every rank shares comes from the ncclUniqueId they were made from. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "clock.h"
#include "comm.h"
#include "comm_layer.h"
#include "emit.h"
#include "stacks.h"
#include "resolve.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define PROF_STRIP(...) __VA_ARGS__
#define NCCL_U64(v) ((uint64_t)(int64_t)(v))
#define NCCL_PTR(p) ((uint64_t)(uintptr_t)(p))
#define NCCL_NO_COMM ((nccl_comm)0)
/* The communicator an init call made, read only when it succeeded. */
#define NCCL_OUT(pp) (rc == 0 && (pp) ? *(pp) : NCCL_NO_COMM)
/* ncclSystemError: what a wrapper returns when the real function cannot be found. */
#define NCCL_PROF_SYSTEM_ERROR 2
/* ncclInProgress: a nonblocking communicator's call that was issued, not a failure. */
#define NCCL_IN_PROGRESS 7
#define NCCL_LIB_STEM "libnccl"

typedef struct nccl_opaque *nccl_comm;
typedef struct {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} nccl_unique_id;

static int nccl_enabled;

enum nccl_api {
#define PROF_NCCL_FN(name, params, args, after, comm, argnames, record) NCCL_API_##name,
#include "nccl.def"
#undef PROF_NCCL_FN
    NCCL_API_COUNT
};
_Static_assert(NCCL_API_COUNT <= 256, "NCCL ids stay below the next library's base");

static struct prof_api_desc nccl_apis[] = {
#define PROF_NCCL_FN(name, params, args, after, comm, argnames, record)                            \
    {PROF_API_NCCL_BASE + NCCL_API_##name, PROF_CAT_COMM, 0, #name,                                \
     argnames ",comm,comm_size,comm_rank"},
#include "nccl.def"
#undef PROF_NCCL_FN
};

#define PROF_NCCL_FN(name, params, args, after, comm, argnames, record)                            \
    typedef int(*nccl_##name##_fn) params;                                                         \
    static nccl_##name##_fn nccl_real_##name;
#include "nccl.def"
#undef PROF_NCCL_FN

static void *nccl_resolve(const char *name)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, NCCL_LIB_STEM);
    prof_tls_busy--;
    errno = saved;
    return p;
}

/* Element sizes of ncclDataType_t: int8, uint8, int32, uint32, int64, uint64, float16,
 * float32, float64, bfloat16, float8e4m3, float8e5m2. */
static inline uint64_t nccl_bytes(size_t count, int dtype)
{
    static const uint8_t size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    if (dtype < 0 || (size_t)dtype >= sizeof size)
        return 0;
    return (uint64_t)count * size[dtype];
}

/* ---- communicators ---- */

struct nccl_comm_info {
    uint64_t key, size, rank;
};

#define NCCL_COMM_SLOTS 256
struct nccl_comm_slot {
    _Atomic uintptr_t handle; /* 0: free */
    struct nccl_comm_info info;
};
static struct nccl_comm_slot nccl_comms[NCCL_COMM_SLOTS];
static pthread_mutex_t nccl_comms_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct nccl_comm_info nccl_comm_unknown;

typedef int (*nccl_comm_int_fn)(nccl_comm, int *);
static nccl_comm_int_fn nccl_comm_count, nccl_comm_user_rank;

/* Slots fill in order (0: never used, the end of the list); a destroyed communicator's
 * slot becomes a tombstone that a later one may take, since NCCL's next communicator may
 * get the same address. */
#define NCCL_COMM_TOMBSTONE UINTPTR_MAX

static struct nccl_comm_slot *nccl_find(uintptr_t h)
{
    for (int i = 0; i < NCCL_COMM_SLOTS; i++) {
        /* acquire: the slot's info was written before its handle */
        uintptr_t s = atomic_load_explicit(&nccl_comms[i].handle, memory_order_acquire);
        if (s == h)
            return &nccl_comms[i];
        if (s == 0)
            return NULL;
    }
    return NULL;
}

/* Names a communicator (replacing what an earlier one at the same address left). */
static void nccl_set(nccl_comm comm, uint64_t key, int size, int rank)
{
    uintptr_t h = (uintptr_t)comm;
    if (!h)
        return;
    pthread_mutex_lock(&nccl_comms_lock);
    int slot = -1;
    for (int i = 0; i < NCCL_COMM_SLOTS; i++) {
        uintptr_t s = atomic_load_explicit(&nccl_comms[i].handle, memory_order_relaxed);
        if (s == h) {
            slot = i;
            break;
        }
        if (s == NCCL_COMM_TOMBSTONE && slot < 0)
            slot = i;
        if (s == 0) {
            if (slot < 0)
                slot = i;
            break;
        }
    }
    if (slot >= 0) {
        nccl_comms[slot].info.key = key;
        nccl_comms[slot].info.size = (uint64_t)size;
        nccl_comms[slot].info.rank = (uint64_t)rank;
        /* release: readers that see the handle see the info */
        atomic_store_explicit(&nccl_comms[slot].handle, h, memory_order_release);
    }
    pthread_mutex_unlock(&nccl_comms_lock);
}

/* After a successful ncclCommDestroy / ncclCommAbort. */
static void nccl_forget(int rc, nccl_comm comm)
{
    uintptr_t h = (uintptr_t)comm;
    if (rc != 0 || !h)
        return;
    pthread_mutex_lock(&nccl_comms_lock);
    struct nccl_comm_slot *s = nccl_find(h);
    if (s)
        atomic_store_explicit(&s->handle, NCCL_COMM_TOMBSTONE, memory_order_relaxed);
    pthread_mutex_unlock(&nccl_comms_lock);
}

/* What the table knows of a communicator, without asking NCCL. */
static const struct nccl_comm_info *nccl_comm_known(nccl_comm comm)
{
    struct nccl_comm_slot *s = comm ? nccl_find((uintptr_t)comm) : NULL;
    return s ? &s->info : &nccl_comm_unknown;
}

static const struct nccl_comm_info *nccl_comm_info(nccl_comm comm)
{
    uintptr_t h = (uintptr_t)comm;
    if (!h)
        return &nccl_comm_unknown;
    struct nccl_comm_slot *s = nccl_find(h);
    if (s)
        return &s->info;
    /* Made before we could see it (or by an init we do not wrap): size and rank from
     * NCCL, no shared id. */
    if (!nccl_comm_count)
        nccl_comm_count = (nccl_comm_int_fn)nccl_resolve("ncclCommCount");
    if (!nccl_comm_user_rank)
        nccl_comm_user_rank = (nccl_comm_int_fn)nccl_resolve("ncclCommUserRank");
    int size = 0, rank = 0;
    if (!nccl_comm_count || !nccl_comm_user_rank || nccl_comm_count(comm, &size) != 0 ||
        nccl_comm_user_rank(comm, &rank) != 0)
        return &nccl_comm_unknown;
    nccl_set(comm, 0, size, rank);
    s = nccl_find(h);
    return s ? &s->info : &nccl_comm_unknown;
}

static int nccl_register_init(int rc, const nccl_comm *comm, const nccl_unique_id *id, int nranks,
                              int rank)
{
    if (rc == 0 && comm)
        nccl_set(*comm, comm_hash(id->internal, sizeof id->internal, COMM_HASH_SEED), nranks, rank);
    return 0;
}

/* One process, ndev communicators of one clique: their id is this process's. */
static int nccl_register_all(int rc, const nccl_comm *comms, int ndev)
{
    if (rc != 0 || !comms)
        return 0;
    uint64_t seed[2] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)comms[0]};
    uint64_t key = comm_hash(seed, sizeof seed, COMM_HASH_SEED);
    for (int i = 0; i < ndev; i++)
        nccl_set(comms[i], key, ndev, i);
    return 0;
}

/* Every rank of the parent that passes the same color lands in the same communicator. */
static int nccl_register_split(int rc, nccl_comm parent, int color, const nccl_comm *newcomm)
{
    if (rc != 0 || !newcomm || !*newcomm)
        return 0;
    uint64_t seed[2] = {nccl_comm_info(parent)->key, (uint64_t)(int64_t)color};
    uint64_t key = comm_hash(seed, sizeof seed, COMM_HASH_SEED);
    nccl_set(*newcomm, 0, 0, 0); /* a stale entry at this address must not answer */
    int size = 0, rank = 0;
    if (!nccl_comm_count)
        nccl_comm_count = (nccl_comm_int_fn)nccl_resolve("ncclCommCount");
    if (!nccl_comm_user_rank)
        nccl_comm_user_rank = (nccl_comm_int_fn)nccl_resolve("ncclCommUserRank");
    if (nccl_comm_count && nccl_comm_user_rank && nccl_comm_count(*newcomm, &size) == 0 &&
        nccl_comm_user_rank(*newcomm, &rank) == 0)
        nccl_set(*newcomm, key, size, rank);
    return 0;
}

/* Outside a capture window (prof_recording off) a call costs this one test. */
static inline int nccl_capture(void)
{
    return nccl_enabled && !prof_tls_busy &&
           atomic_load_explicit(&prof_recording, memory_order_relaxed);
}

/* The one wrapper shape: resolve once, guard, clock, real call, clock, record, errno. */
#define PROF_NCCL_FN(name, params, args, after, comm, argnames, record)                            \
    PROF_EXPORT int name params                                                                    \
    {                                                                                              \
        nccl_##name##_fn real = nccl_real_##name;                                                  \
        if (__builtin_expect(real == NULL, 0)) {                                                   \
            real = (nccl_##name##_fn)nccl_resolve(#name);                                          \
            if (!real) {                                                                           \
                static _Atomic int prof_said; /* said once, however often called */                \
                if (!atomic_exchange_explicit(&prof_said, 1, memory_order_relaxed))                \
                    collector_note("cannot find the real %s; the call fails with "                 \
                                   "ncclSystemError",                                              \
                                   #name);                                                         \
                return NCCL_PROF_SYSTEM_ERROR;                                                     \
            }                                                                                      \
            nccl_real_##name = real;                                                               \
        }                                                                                          \
        if (!nccl_capture())                                                                       \
            return real args;                                                                      \
        uint64_t prof_t0 = prof_clock_ticks();                                                     \
        int rc = real args;                                                                        \
        uint64_t prof_t1 = prof_clock_ticks();                                                     \
        int saved_errno = errno;                                                                   \
        prof_tls_busy++;                                                                           \
        (void)(after);                                                                             \
        /* A failed call's communicator may be bad: only our table is asked about it. */           \
        const struct nccl_comm_info *prof_ci =                                                     \
            rc == 0 || rc == NCCL_IN_PROGRESS ? nccl_comm_info(comm) : nccl_comm_known(comm);      \
        uint64_t recorded[] = {PROF_STRIP record, prof_ci->key, prof_ci->size, prof_ci->rank};     \
        emit_api_call((uint16_t)(PROF_API_NCCL_BASE + NCCL_API_##name), rc, prof_t0, prof_t1,      \
                      recorded, sizeof recorded / sizeof recorded[0]);                             \
        stacks_after_call((uint16_t)(PROF_API_NCCL_BASE + NCCL_API_##name), prof_t0, prof_t1);     \
        if (NCCL_API_##name == NCCL_API_ncclCommDestroy ||                                         \
            NCCL_API_##name == NCCL_API_ncclCommAbort)                                             \
            nccl_forget(rc, comm);                                                                 \
        prof_tls_busy--;                                                                           \
        errno = saved_errno;                                                                       \
        return rc;                                                                                 \
    }
#include "nccl.def"
#undef PROF_NCCL_FN

void comm_nccl_setup(int enabled)
{
    nccl_enabled = enabled;
    for (size_t i = 0; i < NCCL_API_COUNT; i++) {
        stacks_want_api(nccl_apis[i].id); /* with PROF_STACKS: where each call came from */
    }
    collector_add_api_table(nccl_apis, NCCL_API_COUNT);
}
