/* MPI interposition through the profiling interface: wrappers generated from mpi.def call
 * PMPI_<name>, resolved at run time, so libprof.so links no MPI library. When no MPI is
 * loaded nothing calls these MPI_* definitions; if a program calls one anyway (it probed
 * for the symbol), it gets MPI_ERR_OTHER and one message.
 *
 * Handles are passed through as 64-bit values (mpi_handle): Open MPI's are pointers,
 * MPICH's 32-bit ints, which the x86-64 calling convention carries in the low half of the
 * same register or stack slot, so forwarding is exact for both. Communicator ids assume
 * Open MPI's MPI_COMM_WORLD symbol, else MPICH's constant handle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "comm_layer.h"
#include "emit.h"
#include "stacks.h"
#include "resolve.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define PROF_STRIP(...) __VA_ARGS__
/* A signed int widened so that -1 (MPI_ANY_SOURCE, ...) reads back as -1. */
#define MPI_U64(v) ((uint64_t)(int64_t)(v))
#define MPI_NO_COMM ((mpi_handle)0)
/* MPI_ERR_OTHER in both Open MPI (16) and MPICH (15) is nonzero; 16 says "failed". */
#define MPI_PROF_ERR_OTHER 16
#define MPI_LIB_STEM "libmpi"

typedef struct mpi_opaque *mpi_handle;

static int mpi_enabled;

enum mpi_api {
#define PROF_MPI_FN(name, params, args, comm, argnames, record) MPI_API_##name,
#include "mpi.def"
#undef PROF_MPI_FN
    MPI_API_COUNT
};
_Static_assert(MPI_API_COUNT <= 256, "MPI ids stay below the next library's base");

static struct prof_api_desc mpi_apis[] = {
#define PROF_MPI_FN(name, params, args, comm, argnames, record)                                    \
    {PROF_API_MPI_BASE + MPI_API_##name, PROF_CAT_COMM, 0, #name,                                  \
     argnames ",comm,comm_size,comm_rank"},
#include "mpi.def"
#undef PROF_MPI_FN
};

#define PROF_MPI_FN(name, params, args, comm, argnames, record)                                    \
    typedef int(*mpi_##name##_fn) params;                                                          \
    static mpi_##name##_fn mpi_real_##name;
#include "mpi.def"
#undef PROF_MPI_FN

/* The PMPI functions the recorded values need. */
typedef int (*mpi_type_size_fn)(mpi_handle, int *);
typedef int (*mpi_comm_int_fn)(mpi_handle, int *);
typedef int (*mpi_comm_group_fn)(mpi_handle, mpi_handle *);
typedef int (*mpi_group_translate_fn)(mpi_handle, int, const int *, mpi_handle, int *);
typedef int (*mpi_group_free_fn)(mpi_handle *);
typedef int (*mpi_flag_fn)(int *);
static mpi_type_size_fn mpi_type_size;
static mpi_comm_int_fn mpi_comm_size, mpi_comm_rank;
static mpi_comm_group_fn mpi_comm_group;
static mpi_group_translate_fn mpi_group_translate;
static mpi_group_free_fn mpi_group_free;
static mpi_flag_fn mpi_initialized, mpi_finalized;
static _Atomic int mpi_helpers_state; /* 0 not tried, 1 ready, -1 missing */

static void *mpi_resolve(const char *name)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, MPI_LIB_STEM);
    prof_tls_busy--;
    errno = saved;
    return p;
}

/* The real function; said once per function (said: its flag) when it cannot be found. */
static void *mpi_resolve_real(const char *name, _Atomic int *said)
{
    void *p = mpi_resolve(name);
    if (!p && !atomic_exchange_explicit(said, 1, memory_order_relaxed))
        collector_note("cannot find %s (no MPI library loaded?); the MPI call fails with "
                       "MPI_ERR_OTHER",
                       name);
    return p;
}

static int mpi_helpers(void)
{
    int state = atomic_load_explicit(&mpi_helpers_state, memory_order_acquire);
    if (state)
        return state > 0;
    mpi_type_size = (mpi_type_size_fn)mpi_resolve("PMPI_Type_size");
    mpi_comm_size = (mpi_comm_int_fn)mpi_resolve("PMPI_Comm_size");
    mpi_comm_rank = (mpi_comm_int_fn)mpi_resolve("PMPI_Comm_rank");
    mpi_comm_group = (mpi_comm_group_fn)mpi_resolve("PMPI_Comm_group");
    mpi_group_translate = (mpi_group_translate_fn)mpi_resolve("PMPI_Group_translate_ranks");
    mpi_group_free = (mpi_group_free_fn)mpi_resolve("PMPI_Group_free");
    mpi_initialized = (mpi_flag_fn)mpi_resolve("PMPI_Initialized");
    mpi_finalized = (mpi_flag_fn)mpi_resolve("PMPI_Finalized");
    state = mpi_type_size && mpi_comm_size && mpi_comm_rank && mpi_comm_group &&
                    mpi_group_translate && mpi_group_free && mpi_initialized && mpi_finalized
                ? 1
                : -1;
    if (state < 0)
        collector_note("MPI: PMPI helper functions missing; bytes and communicators not recorded");
    /* release: a thread that reads 1 also sees the pointers */
    atomic_store_explicit(&mpi_helpers_state, state, memory_order_release);
    return state > 0;
}

/* ---- communicators: id, size and rank, asked once per handle ---- */

struct mpi_comm_info {
    uint64_t key, size, rank;
};

/* Slots are filled in order; a freed communicator's slot becomes a tombstone that the next
 * new one may take. A handle is an address that MPI reuses once the communicator is freed
 * (MPI_Comm_free below forgets it), so each thread's one-entry cache also checks the epoch,
 * which every free advances. */
#define MPI_COMM_SLOTS 64
#define MPI_COMM_TOMBSTONE UINTPTR_MAX
struct mpi_comm_slot {
    _Atomic uintptr_t handle; /* 0: never used (the end of the list); tombstone: freed */
    struct mpi_comm_info info;
};
static struct mpi_comm_slot mpi_comms[MPI_COMM_SLOTS];
static pthread_mutex_t mpi_comms_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct mpi_comm_info mpi_comm_unknown;
static _Atomic unsigned mpi_comm_epoch;
static __thread uintptr_t mpi_tls_last_comm PROF_TLS;
static __thread unsigned mpi_tls_last_epoch PROF_TLS;
static __thread const struct mpi_comm_info *mpi_tls_last_info PROF_TLS;

static mpi_handle mpi_world(void)
{
    static mpi_handle world;
    if (!world) {
        /* Open MPI: MPI_COMM_WORLD is &ompi_mpi_comm_world; MPICH: the constant 0x44000000. */
        void *ompi = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
        world = ompi ? (mpi_handle)ompi : (mpi_handle)(uintptr_t)0x44000000;
    }
    return world;
}

static int mpi_usable(void)
{
    int init = 0, fin = 0;
    return mpi_helpers() && mpi_initialized(&init) == 0 && init && mpi_finalized(&fin) == 0 && !fin;
}

static void mpi_comm_describe(mpi_handle comm, struct mpi_comm_info *info)
{
    int size = 0, rank = 0, zero = 0, root_in_world = 0;
    if (mpi_comm_size(comm, &size) != 0 || mpi_comm_rank(comm, &rank) != 0)
        return;
    info->size = (uint64_t)size;
    info->rank = (uint64_t)rank;
    mpi_handle group = 0, world_group = 0;
    if (mpi_comm_group(comm, &group) == 0 && mpi_comm_group(mpi_world(), &world_group) == 0 &&
        mpi_group_translate(group, 1, &zero, world_group, &root_in_world) == 0)
        info->key = (uint64_t)size << 32 | (uint32_t)root_in_world;
    if (group)
        mpi_group_free(&group);
    if (world_group)
        mpi_group_free(&world_group);
}

static const struct mpi_comm_info *mpi_comm_info(mpi_handle comm)
{
    uintptr_t h = (uintptr_t)comm;
    if (h == 0)
        return &mpi_comm_unknown;
    unsigned epoch = atomic_load_explicit(&mpi_comm_epoch, memory_order_acquire);
    if (h == mpi_tls_last_comm && epoch == mpi_tls_last_epoch)
        return mpi_tls_last_info;
    const struct mpi_comm_info *found = NULL;
    for (int i = 0; i < MPI_COMM_SLOTS && !found; i++) {
        /* acquire: the slot's info was written before its handle */
        uintptr_t s = atomic_load_explicit(&mpi_comms[i].handle, memory_order_acquire);
        if (s == h)
            found = &mpi_comms[i].info;
        else if (s == 0)
            break;
    }
    if (!found) {
        if (!mpi_usable())
            return &mpi_comm_unknown;
        pthread_mutex_lock(&mpi_comms_lock);
        int free_slot = -1;
        for (int i = 0; i < MPI_COMM_SLOTS; i++) {
            uintptr_t s = atomic_load_explicit(&mpi_comms[i].handle, memory_order_relaxed);
            if (s == h) {
                found = &mpi_comms[i].info;
                break;
            }
            if (s == MPI_COMM_TOMBSTONE && free_slot < 0)
                free_slot = i;
            if (s == 0) {
                if (free_slot < 0)
                    free_slot = i;
                break;
            }
        }
        if (!found && free_slot >= 0) {
            struct mpi_comm_slot *slot = &mpi_comms[free_slot];
            memset(&slot->info, 0, sizeof slot->info);
            mpi_comm_describe(comm, &slot->info);
            /* release: readers that see the handle see the info */
            atomic_store_explicit(&slot->handle, h, memory_order_release);
            found = &slot->info;
        }
        pthread_mutex_unlock(&mpi_comms_lock);
        if (!found)
            return &mpi_comm_unknown; /* table full: the communicator goes unnamed */
    }
    mpi_tls_last_comm = h;
    mpi_tls_last_epoch = epoch;
    mpi_tls_last_info = found;
    return found;
}

/* The communicator is going: its handle may come back as another one. */
static void mpi_comm_forget(uintptr_t h)
{
    if (!h)
        return;
    pthread_mutex_lock(&mpi_comms_lock);
    for (int i = 0; i < MPI_COMM_SLOTS; i++) {
        uintptr_t s = atomic_load_explicit(&mpi_comms[i].handle, memory_order_relaxed);
        if (s == 0)
            break;
        if (s == h)
            atomic_store_explicit(&mpi_comms[i].handle, MPI_COMM_TOMBSTONE, memory_order_relaxed);
    }
    /* release: a thread that sees the new epoch also sees the tombstone */
    atomic_fetch_add_explicit(&mpi_comm_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&mpi_comms_lock);
}

static inline uint64_t mpi_size(mpi_handle comm)
{
    return mpi_comm_info(comm)->size;
}

static inline int mpi_is_root(int root, mpi_handle comm)
{
    return mpi_comm_info(comm)->rank == (uint64_t)(int64_t)root;
}

static inline uint64_t mpi_bytes(int count, mpi_handle type)
{
    int size = 0;
    if (count <= 0 || !mpi_helpers() || mpi_type_size(type, &size) != 0 || size < 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

/* Sum of a per-rank count array (one entry per rank of comm) times the type's size. */
static uint64_t mpi_bytes_v(const int *counts, mpi_handle type, mpi_handle comm)
{
    uint64_t n = mpi_size(comm), total = 0;
    if (!counts)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        total += counts[i] > 0 ? (uint64_t)counts[i] : 0;
    return total * mpi_bytes(1, type);
}

/* Outside a capture window (prof_recording off) a call costs this one test. */
static inline int mpi_capture(void)
{
    return mpi_enabled && !prof_tls_busy &&
           atomic_load_explicit(&prof_recording, memory_order_relaxed);
}

/* The one wrapper shape: resolve once, guard, clock, real call, clock, record, errno. */
#define PROF_MPI_FN(name, params, args, comm, argnames, record)                                    \
    PROF_EXPORT int name params                                                                    \
    {                                                                                              \
        mpi_##name##_fn real = mpi_real_##name;                                                    \
        if (__builtin_expect(real == NULL, 0)) {                                                   \
            static _Atomic int prof_said;                                                          \
            real = (mpi_##name##_fn)mpi_resolve_real("P" #name, &prof_said);                       \
            if (!real)                                                                             \
                return MPI_PROF_ERR_OTHER;                                                         \
            mpi_real_##name = real;                                                                \
        }                                                                                          \
        if (!mpi_capture())                                                                        \
            return real args;                                                                      \
        uint64_t prof_t0 = prof_clock_ticks();                                                     \
        int rc = real args;                                                                        \
        uint64_t prof_t1 = prof_clock_ticks();                                                     \
        int saved_errno = errno;                                                                   \
        prof_tls_busy++;                                                                           \
        /* A failed call's arguments may be bad: asking MPI about them would raise the error       \
         * again, on MPI_COMM_WORLD, whose handler may abort. Only its result is kept. */          \
        uint64_t recorded[sizeof((uint64_t[]){PROF_STRIP record, 0, 0, 0}) / sizeof(uint64_t)];    \
        memset(recorded, 0, sizeof recorded);                                                      \
        if (rc == 0) {                                                                             \
            const struct mpi_comm_info *prof_ci = mpi_comm_info(comm);                             \
            uint64_t prof_values[] = {PROF_STRIP record, prof_ci->key, prof_ci->size,              \
                                      prof_ci->rank};                                              \
            memcpy(recorded, prof_values, sizeof recorded);                                        \
        }                                                                                          \
        emit_api_call((uint16_t)(PROF_API_MPI_BASE + MPI_API_##name), rc, prof_t0, prof_t1,        \
                      recorded, sizeof recorded / sizeof recorded[0]);                             \
        stacks_after_call((uint16_t)(PROF_API_MPI_BASE + MPI_API_##name), prof_t0, prof_t1);       \
        prof_tls_busy--;                                                                           \
        errno = saved_errno;                                                                       \
        return rc;                                                                                 \
    }
#include "mpi.def"
#undef PROF_MPI_FN

/* Hand-written: not recorded, but its communicator's handle must be forgotten before MPI
 * can hand the address out again. */
typedef int (*mpi_comm_free_fn)(mpi_handle *);
static mpi_comm_free_fn mpi_real_comm_free;

PROF_EXPORT int MPI_Comm_free(mpi_handle *comm)
{
    mpi_comm_free_fn real = mpi_real_comm_free;
    if (__builtin_expect(real == NULL, 0)) {
        static _Atomic int said;
        real = (mpi_comm_free_fn)mpi_resolve_real("PMPI_Comm_free", &said);
        if (!real)
            return MPI_PROF_ERR_OTHER;
        mpi_real_comm_free = real;
    }
    if (comm) {
        int saved_errno = errno;
        prof_tls_busy++;
        mpi_comm_forget((uintptr_t)*comm);
        prof_tls_busy--;
        errno = saved_errno;
    }
    return real(comm);
}

void comm_mpi_setup(int enabled)
{
    mpi_enabled = enabled;
    for (size_t i = 0; i < MPI_API_COUNT; i++) {
        stacks_want_api(mpi_apis[i].id); /* with PROF_STACKS: where each call came from */
    }
    collector_add_api_table(mpi_apis, MPI_API_COUNT);
}
