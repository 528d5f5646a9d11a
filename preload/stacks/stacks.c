/* The stacks layer (see stacks.h): libunwind, the process's table of distinct stacks,
 * and the stacks of chosen API calls. */
#define _GNU_SOURCE
#include "stacks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "layer.h"
#include "settings.h"

int stacks_on;
uint64_t stacks_min_bytes = UINT64_MAX;
_Atomic uint32_t stacks_generation = 1;

typedef int (*stacks_backtrace_fn)(void **buffer, int size);
static stacks_backtrace_fn stacks_backtrace;

static int stacks_depth = 64;
static uint64_t stacks_slow_us;
static uint8_t stacks_wanted[PROF_API_MAX / 8];

/* ---- the table of distinct stacks ----
 * Open addressing, fixed size, mapped once (pages are touched only as slots fill). A
 * slot is claimed by a CAS on its hash and published by `ready`; a reader that finds a
 * slot claimed but not ready (another thread, or the code this signal interrupted, is
 * filling it) moves on to the next slot rather than wait: the same stack may then get a
 * second id, which costs a record, never a wrong stack. */
#define STACKS_SLOTS (1u << 15)
#define STACKS_PROBES 64

struct stacks_slot {
    _Atomic uint64_t hash; /* 0: free */
    _Atomic uint32_t ready;
    _Atomic uint32_t written; /* the stacks_generation its STACK record was written in */
    uint32_t nframes;
    uint32_t py_node; /* part of the stack's identity: the Python calls around it */
    uint64_t frames[PROF_STACK_MAX_FRAMES];
};

static struct stacks_slot *stacks_table;
static _Atomic uint64_t stacks_table_full;

static uint64_t stacks_hash(const uint64_t *frames, uint32_t n, uint32_t py_node)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n ^ ((uint64_t)py_node << 32);
    for (uint32_t i = 0; i < n; i++) {
        h ^= frames[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1; /* never 0, the free mark */
}

static struct stacks_slot *stacks_intern(const uint64_t *frames, uint32_t n, uint32_t py_node)
{
    uint64_t h = stacks_hash(frames, n, py_node);
    for (uint32_t probe = 0; probe < STACKS_PROBES; probe++) {
        struct stacks_slot *s = &stacks_table[(h + probe) & (STACKS_SLOTS - 1)];
        uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
        if (cur == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong(&s->hash, &expected, h)) {
                memcpy(s->frames, frames, n * sizeof *frames);
                s->nframes = n;
                s->py_node = py_node;
                /* release: a reader that sees ready sees the frames */
                atomic_store_explicit(&s->ready, 1, memory_order_release);
                return s;
            }
            cur = expected;
        }
        if (cur == h && atomic_load_explicit(&s->ready, memory_order_acquire) && s->nframes == n &&
            s->py_node == py_node && memcmp(s->frames, frames, n * sizeof *frames) == 0)
            return s;
    }
    atomic_fetch_add_explicit(&stacks_table_full, 1, memory_order_relaxed);
    return NULL;
}

/* Writes the slot's STACK record into r unless this file has it already. 0 when the
 * ring had no room (the id is then not used: the next use tries again). */
static int stacks_write_definition(struct prof_ring *r, struct stacks_slot *s, uint32_t id)
{
    uint32_t gen = atomic_load_explicit(&stacks_generation, memory_order_relaxed);
    if (atomic_load_explicit(&s->written, memory_order_relaxed) == gen)
        return 1;
    uint32_t size = (uint32_t)sizeof(struct prof_rec_stack) + 8u * s->nframes;
    struct prof_rec_stack *rec = ring_reserve(r, size);
    if (!rec)
        return 0;
    rec->h.type = PROF_REC_STACK;
    rec->h.size = (uint16_t)size;
    rec->stack_id = id;
    rec->nframes = s->nframes;
    rec->py_node = s->py_node;
    memcpy(rec + 1, s->frames, 8u * s->nframes);
    ring_commit(r);
    /* Two threads may both write it: the reader keeps one, the frames are the same. */
    atomic_store_explicit(&s->written, gen, memory_order_relaxed);
    return 1;
}

/* Around a fork no stack is taken, and the fork waits for the ones under way: libunwind
 * asks the loader (dl_iterate_phdr) under its lock, and a child that inherited that lock
 * held by a thread it does not have would hang at its first stack. */
static _Atomic int stacks_forking;
static _Atomic int stacks_capturing;
static int stacks_fork_unsettled; /* a capture still under way at the fork */

static uint32_t stacks_capture_with(struct prof_ring *r, uint32_t py_node, void *ucontext,
                                    void *handler_return)
{
    if (!stacks_backtrace || !stacks_table)
        return 0;
    atomic_fetch_add(&stacks_capturing, 1);
    if (atomic_load(&stacks_forking)) {
        atomic_fetch_sub(&stacks_capturing, 1);
        return 0;
    }
    void *buf[PROF_STACK_MAX_FRAMES];
    int n;
    if (ucontext) {
        /* as a backtrace from the handler would begin: a frame of ours, the handler's
         * return (the signal trampoline), then the interrupted frames */
        buf[0] = (void *)(uintptr_t)stacks_capture_in_signal;
        buf[1] = handler_return;
        n = 2 + stacks_unwind_context(ucontext, buf + 2, stacks_depth - 2);
    } else {
        n = stacks_backtrace(buf, stacks_depth);
    }
    atomic_fetch_sub(&stacks_capturing, 1);
    if (n <= 0)
        return 0;
    uint64_t frames[PROF_STACK_MAX_FRAMES];
    for (int i = 0; i < n; i++)
        frames[i] = (uint64_t)(uintptr_t)buf[i];
    struct stacks_slot *s = stacks_intern(frames, (uint32_t)n, py_node);
    if (!s)
        return 0;
    uint32_t id = (uint32_t)(s - stacks_table) + 1;
    return stacks_write_definition(r, s, id) ? id : 0;
}

uint32_t stacks_capture(struct prof_ring *r, uint32_t py_node)
{
    return stacks_capture_with(r, py_node, NULL, NULL);
}

uint32_t stacks_capture_in_signal(struct prof_ring *r, uint32_t py_node, void *ucontext,
                                  void *handler_return)
{
    return stacks_capture_with(r, py_node, ucontext, handler_return);
}

void stacks_want_api(uint16_t api)
{
    if (api < PROF_API_MAX)
        stacks_wanted[api / 8] |= (uint8_t)(1u << (api % 8));
}

static int stacks_is_slow(uint64_t start, uint64_t end)
{
    if (!stacks_slow_us)
        return 0;
    uint64_t hz = prof_clock_tsc ? clock_hz_estimate() : 1000000000u;
    if (!hz)
        return 0; /* the first millisecond: no call is that slow yet */
    return (end - start) >= stacks_slow_us * (hz / 1000000u);
}

void stacks_after_call_slow(uint16_t api, uint64_t start, uint64_t end)
{
    int wanted = api < PROF_API_MAX && (stacks_wanted[api / 8] & (1u << (api % 8)));
    if (!wanted && !stacks_is_slow(start, end))
        return;
    struct prof_thread *t = prof_tls_thread;
    if (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return;
    int saved = errno;
    /* The Python calls around the call: the report splices them into the native frames. */
    uint32_t id = stacks_capture(&t->ring, prof_current_py_node ? prof_current_py_node() : 0);
    if (id) {
        struct prof_rec_stack_ref *rec = ring_reserve(&t->ring, sizeof *rec);
        if (rec) {
            rec->h.type = PROF_REC_STACK_REF;
            rec->h.size = sizeof *rec;
            rec->stack_id = id;
            rec->start = start;
            ring_commit(&t->ring);
        }
    }
    errno = saved;
}

void stacks_after_tensor_slow(int64_t bytes, uint64_t ptr, uint64_t ticks, uint32_t py_node,
                              int8_t device_type, int8_t device_index)
{
    struct prof_thread *t = prof_tls_thread;
    if (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return;
    int saved = errno;
    uint32_t id = bytes > 0 ? stacks_capture(&t->ring, 0) : 0; /* the record has the node */
    struct prof_rec_stack_mem *rec = ring_reserve(&t->ring, sizeof *rec);
    if (rec) {
        rec->h.type = PROF_REC_STACK_MEM;
        rec->h.size = sizeof *rec;
        rec->stack_id = id;
        rec->bytes = bytes;
        rec->ptr = ptr;
        rec->ticks = ticks;
        rec->py_node = py_node;
        rec->device_type = device_type;
        rec->device_index = device_index;
        rec->reserved = 0;
        ring_commit(&t->ring);
    }
    errno = saved;
}

/* ---- set-up, shared by the two layers of this folder ---- */

/* libunwind and the table; 0 when stacks can be taken. Said once on failure. */
static int stacks_prepare(void)
{
    static int result = 1; /* 1: not tried yet */
    if (result != 1)
        return result;
    result = -1;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    stacks_backtrace = h ? (stacks_backtrace_fn)dlsym(h, "unw_backtrace") : NULL;
    if (!stacks_backtrace || stacks_unwind_start() != 0) {
        stacks_backtrace = NULL;
        collector_note("call stacks are off: libunwind.so.8 or libunwind-x86_64.so.8 cannot be "
                       "loaded (%s)",
                       h ? "a function is missing" : dlerror());
        return result;
    }
    void *t = mmap(NULL, STACKS_SLOTS * sizeof(struct stacks_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED) {
        collector_note("call stacks are off: no memory for the stack table");
        return result;
    }
    stacks_table = t;
    stacks_depth = (int)settings_int(SETTING_PROF_STACK_DEPTH);
    /* The first unwind fills libunwind's caches: not in a signal handler. */
    void *warm[4];
    stacks_backtrace(warm, 4);
    stacks_maps_start();
    result = 0;
    return result;
}

static void stacks_start(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (stacks_prepare() != 0)
        return;
    stacks_slow_us = (uint64_t)settings_int(SETTING_PROF_STACK_SLOW_US);
    stacks_min_bytes = (uint64_t)settings_int(SETTING_PROF_STACK_MIN_BYTES);
    stacks_on = 1;
}

static void stacks_before_fork(void)
{
    if (!stacks_table)
        return;
    stacks_maps_before_fork();
    atomic_store(&stacks_forking, 1);
    /* The captures under way end within microseconds; a thread stopped in one (by a
     * debugger, say) is not waited for longer than a second. */
    for (int i = 0; i < 100000 && atomic_load(&stacks_capturing) > 0; i++)
        usleep(10);
    stacks_fork_unsettled = atomic_load(&stacks_capturing) > 0;
}

static void stacks_after_fork_parent(void)
{
    atomic_store(&stacks_forking, 0);
}

static void stacks_after_fork_child(void)
{
    if (!stacks_table)
        return;
    atomic_store(&stacks_capturing, 0); /* only this thread goes on */
    stacks_unwind_after_fork_child(stacks_fork_unsettled);
    atomic_store(&stacks_forking, 0);
    /* The child writes a new file: every stack it uses needs its record again. */
    atomic_fetch_add(&stacks_generation, 1);
    stacks_maps_after_fork_child();
}

const struct preload_layer stacks_layer = {
    .name = "stacks",
    .enable = SETTING_PROF_STACKS,
    .features = PROF_FEATURE_STACKS,
    .start = stacks_start,
    .before_fork = stacks_before_fork,
    .after_fork_parent = stacks_after_fork_parent,
    .after_fork_child = stacks_after_fork_child,
};

static void sampling_start(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    long hz = settings_int(SETTING_PROF_SAMPLE_HZ);
    if (hz <= 0 || stacks_prepare() != 0)
        return;
    stacks_sample_start(hz);
}

static void sampling_after_fork_child(void)
{
    if (!stacks_on) /* else the stacks layer's own hook has done this part */
        stacks_after_fork_child();
    stacks_sample_after_fork_child();
}

const struct preload_layer sampling_layer = {
    .name = "sampling",
    .enable = SETTING_PROF_SAMPLE_HZ,
    .start = sampling_start,
    .before_fork = stacks_before_fork,
    .after_fork_parent = stacks_after_fork_parent,
    .after_fork_child = sampling_after_fork_child,
};
