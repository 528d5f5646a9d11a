/* PyTorch tensor memory: c10::alloc_cpu / c10::free_cpu interposed, one TORCH_MEM record
 * per call while recording (CPU); c10::reportMemoryUsageToProfiler interposed, one
 * TORCH_DEV_MEM record per report (the CUDA caching allocator and other device
 * allocators report every block they hand out or take back). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "resolve.h"
#include "stacks.h"
#include "torch_memory.h"
#include "torch_ops.h"

#define PROF_EXPORT __attribute__((visibility("default")))

/* ---- CPU tensor memory: c10::alloc_cpu / c10::free_cpu ----
 * Both are called through the PLT (libc10 included), so exporting their mangled names
 * interposes them. Each call while recording writes a TORCH_MEM record; the size of a
 * free comes from a process-wide pointer -> size table (a free may come on another
 * thread). The table is an mmap'ed open-addressing array under a spinlock, sized to the
 * live blocks (it doubles when three quarters full): a table much larger than the blocks
 * put each lookup in a cold cache line and page (a 2 MiB one cost more than the rest of
 * the hook). alloc_cpu is rare next to the op that calls it, and nothing here allocates. */

#define TORCH_DEVICE_CPU 0             /* c10::DeviceType::CPU */
#define TORCH_MEM_MIN_SLOTS (1u << 10) /* 16 KiB */
#define TORCH_MEM_MAX_SLOTS (1u << 20) /* 16 MiB; when full, new blocks are not tracked */

struct torch_mem_slot {
    uint64_t ptr; /* 0: empty */
    uint64_t bytes;
};

typedef void *(*torch_alloc_cpu_fn)(size_t);
typedef void (*torch_free_cpu_fn)(void *);
static _Atomic(torch_alloc_cpu_fn) torch_real_alloc_cpu;
static _Atomic(torch_free_cpu_fn) torch_real_free_cpu;
static _Atomic int torch_mem_enabled; /* set by torch_memory_init: the table is there */
/* Under torch_mem_lock: */
static struct torch_mem_slot *torch_mem_table;
static size_t torch_mem_mask; /* slots - 1 */
static size_t torch_mem_used;
static atomic_flag torch_mem_lock = ATOMIC_FLAG_INIT;

static void torch_mem_lock_take(void)
{
    while (atomic_flag_test_and_set_explicit(&torch_mem_lock, memory_order_acquire))
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
}

static void torch_mem_lock_give(void)
{
    atomic_flag_clear_explicit(&torch_mem_lock, memory_order_release);
}

static struct torch_mem_slot *torch_mem_map(size_t slots)
{
    void *t = mmap(NULL, slots * sizeof(struct torch_mem_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return t == MAP_FAILED ? NULL : t;
}

static size_t torch_mem_home(uint64_t ptr)
{
    return (size_t)((ptr * 0x9E3779B97F4A7C15ull) >> 40) & torch_mem_mask;
}

/* The slot of ptr, or the empty slot where it would go. */
static size_t torch_mem_find(uint64_t ptr)
{
    size_t i = torch_mem_home(ptr);
    while (torch_mem_table[i].ptr && torch_mem_table[i].ptr != ptr)
        i = (i + 1) & torch_mem_mask;
    return i;
}

/* Twice the slots, every block moved; the table stays as it is when there is no memory. */
static void torch_mem_grow(void)
{
    size_t old_slots = torch_mem_mask + 1;
    struct torch_mem_slot *old = torch_mem_table, *t = torch_mem_map(old_slots * 2);
    if (!t)
        return;
    torch_mem_table = t;
    torch_mem_mask = old_slots * 2 - 1;
    for (size_t i = 0; i < old_slots; i++)
        if (old[i].ptr)
            torch_mem_table[torch_mem_find(old[i].ptr)] = old[i];
    munmap(old, old_slots * sizeof *old);
}

/* The table's three operations: the caller holds torch_mem_lock. */
static void torch_mem_put(uint64_t ptr, uint64_t bytes)
{
    size_t slots = torch_mem_mask + 1;
    if (torch_mem_used + 1 > slots - slots / 4 && slots < TORCH_MEM_MAX_SLOTS)
        torch_mem_grow();
    slots = torch_mem_mask + 1;
    if (torch_mem_used < slots - slots / 8) {
        size_t i = torch_mem_find(ptr);
        if (!torch_mem_table[i].ptr)
            torch_mem_used++;
        torch_mem_table[i].ptr = ptr;
        torch_mem_table[i].bytes = bytes;
    }
}

/* Removes ptr; returns its size, 0 when unknown. Linear probing with backward-shift
 * deletion: no tombstones. */
static uint64_t torch_mem_take(uint64_t ptr)
{
    uint64_t bytes = 0;
    size_t i = torch_mem_find(ptr);
    if (torch_mem_table[i].ptr) {
        bytes = torch_mem_table[i].bytes;
        torch_mem_used--;
        size_t hole = i;
        for (size_t j = (i + 1) & torch_mem_mask; torch_mem_table[j].ptr;
             j = (j + 1) & torch_mem_mask) {
            size_t home = torch_mem_home(torch_mem_table[j].ptr);
            /* j's entry may move into the hole unless its home lies in (hole, j]. */
            int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (stays)
                continue;
            torch_mem_table[hole] = torch_mem_table[j];
            hole = j;
        }
        torch_mem_table[hole].ptr = 0;
        torch_mem_table[hole].bytes = 0;
    }
    return bytes;
}

/* ptr is a block alloc_cpu handed out (and free_cpu has not taken back). */
static int torch_mem_has(uint64_t ptr)
{
    return torch_mem_table[torch_mem_find(ptr)].ptr != 0;
}

/* ---- Exact totals (TORCH_MEM_TOTALS) ----
 * Per device, counted on the allocating thread as each memory record is made, before the
 * ring (which may drop the record): relaxed atomic adds, the peak under a small lock with
 * a sequence count so that the collector reads the peak and its ticks as a pair. They
 * count exactly what the report would count from the records if none were lost (see
 * trace_format.h): a CPU free is counted only when the table above knew its block, so a
 * block allocated before recording (or on another thread) follows the same rule. The
 * CPU's are counted under torch_mem_lock, which each CPU record takes for the table anyway,
 * by relaxed loads and stores: their three locked adds a record were a fifth of perf's
 * samples of a loop of c10::alloc_cpu and free_cpu under profrun. */

#define TORCH_TOTALS_SLOTS 16 /* devices with totals; more are left to the records */

struct torch_mem_totals {
    _Atomic uint32_t key; /* 0: unused; else 1 << 16 | (u8)device_type << 8 | (u8)index */
    atomic_flag peak_lock;
    _Atomic uint64_t alloc_count, alloc_bytes, free_count, free_bytes;
    _Atomic int64_t live, peak;
    _Atomic uint64_t peak_ticks, peak_seq, reserved_peak;
    uint64_t written_allocs, written_frees, written_reserved; /* the collector's */
} __attribute__((aligned(64)));

static struct torch_mem_totals torch_totals[TORCH_TOTALS_SLOTS];

static struct torch_mem_totals *torch_totals_of(int8_t type, int8_t index)
{
    uint32_t key = 1u << 16 | (uint32_t)(uint8_t)type << 8 | (uint8_t)index;
    for (int i = 0; i < TORCH_TOTALS_SLOTS; i++) {
        struct torch_mem_totals *m = &torch_totals[i];
        uint32_t k = atomic_load_explicit(&m->key, memory_order_relaxed);
        if (k == 0 && atomic_compare_exchange_strong_explicit(
                          &m->key, &k, key, memory_order_relaxed, memory_order_relaxed))
            return m;
        if (k == key)
            return m;
    }
    return NULL;
}

static void torch_totals_peak(struct torch_mem_totals *m, int64_t live, uint64_t ticks)
{
    if (live <= atomic_load_explicit(&m->peak, memory_order_relaxed))
        return; /* the common case: no lock */
    while (atomic_flag_test_and_set_explicit(&m->peak_lock, memory_order_acquire))
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    if (live > atomic_load_explicit(&m->peak, memory_order_relaxed)) {
        uint64_t seq = atomic_load_explicit(&m->peak_seq, memory_order_relaxed);
        atomic_store_explicit(&m->peak_seq, seq + 1, memory_order_relaxed);
        /* release: a reader that sees either new value sees the odd count too (and
         * retries); no fence, which ThreadSanitizer does not model */
        atomic_store_explicit(&m->peak, live, memory_order_release);
        atomic_store_explicit(&m->peak_ticks, ticks, memory_order_release);
        atomic_store_explicit(&m->peak_seq, seq + 2, memory_order_release);
    }
    atomic_flag_clear_explicit(&m->peak_lock, memory_order_release);
}

/* *c += v; locked: a CPU total, whose every writer holds torch_mem_lock. */
static inline void torch_totals_bump(_Atomic uint64_t *c, uint64_t v, int locked)
{
    if (locked)
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Returns the live bytes before the add; signed arithmetic wraps, in both ways (C11
 * 7.17.7.5 for the atomic add): no overflow trap. */
static inline int64_t torch_totals_live_add(_Atomic int64_t *live, int64_t bytes, int locked)
{
    if (!locked)
        return atomic_fetch_add_explicit(live, bytes, memory_order_relaxed);
    int64_t was = atomic_load_explicit(live, memory_order_relaxed);
    atomic_store_explicit(live, (int64_t)((uint64_t)was + (uint64_t)bytes), memory_order_relaxed);
    return was;
}

/* One counted record of a device: an allocation (bytes > 0) or a free (bytes < 0);
 * the CPU's caller holds torch_mem_lock (see above). */
static void torch_totals_add(int8_t type, int8_t index, int64_t bytes, uint64_t ticks,
                             uint64_t reserved)
{
    int locked = type == TORCH_DEVICE_CPU;
    struct torch_mem_totals *m = torch_totals_of(type, index);
    if (!m || !bytes)
        return;
    if (bytes > 0) {
        torch_totals_bump(&m->alloc_count, 1, locked);
        torch_totals_bump(&m->alloc_bytes, (uint64_t)bytes, locked);
        int64_t live = torch_totals_live_add(&m->live, bytes, locked);
        torch_totals_peak(m, (int64_t)((uint64_t)live + (uint64_t)bytes), ticks);
    } else {
        torch_totals_bump(&m->free_count, 1, locked);
        torch_totals_bump(&m->free_bytes, 0 - (uint64_t)bytes, locked);
        torch_totals_live_add(&m->live, bytes, locked);
    }
    uint64_t r = atomic_load_explicit(&m->reserved_peak, memory_order_relaxed);
    while (reserved > r &&
           !atomic_compare_exchange_weak_explicit(&m->reserved_peak, &r, reserved,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static void torch_totals_reset(void)
{
    for (int i = 0; i < TORCH_TOTALS_SLOTS; i++) {
        struct torch_mem_totals *m = &torch_totals[i];
        atomic_flag_clear(&m->peak_lock); /* the holder may have been another thread */
        atomic_store(&m->alloc_count, 0);
        atomic_store(&m->alloc_bytes, 0);
        atomic_store(&m->free_count, 0);
        atomic_store(&m->free_bytes, 0);
        atomic_store(&m->live, 0);
        atomic_store(&m->peak, INT64_MIN); /* the first allocation sets it, even below 0 */
        atomic_store(&m->peak_ticks, 0);
        atomic_store(&m->peak_seq, 0);
        atomic_store(&m->reserved_peak, 0);
        m->written_allocs = m->written_frees = m->written_reserved = 0;
    }
}

/* A collector source: one TORCH_MEM_TOTALS record per device whose totals moved since
 * the last one (all of them in a new file). Reads atomics only: safe in a signal handler. */
static void torch_totals_drain(int fresh, int last)
{
    (void)last;
    for (int i = 0; i < TORCH_TOTALS_SLOTS; i++) {
        struct torch_mem_totals *m = &torch_totals[i];
        uint32_t key = atomic_load_explicit(&m->key, memory_order_relaxed);
        if (!key)
            continue;
        struct prof_rec_torch_mem_totals rec;
        memset(&rec, 0, sizeof rec);
        rec.alloc_count = atomic_load_explicit(&m->alloc_count, memory_order_relaxed);
        rec.free_count = atomic_load_explicit(&m->free_count, memory_order_relaxed);
        rec.reserved_peak = atomic_load_explicit(&m->reserved_peak, memory_order_relaxed);
        if (!rec.alloc_count && !rec.free_count)
            continue;
        if (!fresh && rec.alloc_count == m->written_allocs && rec.free_count == m->written_frees &&
            rec.reserved_peak == m->written_reserved)
            continue;
        rec.h.type = PROF_REC_TORCH_MEM_TOTALS;
        rec.h.size = sizeof rec;
        rec.device_type = (int8_t)(key >> 8);
        rec.device_index = (int8_t)key;
        rec.alloc_bytes = atomic_load_explicit(&m->alloc_bytes, memory_order_relaxed);
        rec.free_bytes = atomic_load_explicit(&m->free_bytes, memory_order_relaxed);
        rec.live_bytes = atomic_load_explicit(&m->live, memory_order_relaxed);
        /* bounded: a thread a signal stopped inside the update leaves the count odd */
        for (int tries = 0; tries < 1000; tries++) {
            uint64_t seq = atomic_load_explicit(&m->peak_seq, memory_order_acquire);
            /* acquire: the pair is read before seq is read again */
            rec.peak_bytes = atomic_load_explicit(&m->peak, memory_order_acquire);
            rec.peak_ticks = atomic_load_explicit(&m->peak_ticks, memory_order_acquire);
            if (!(seq & 1) && seq == atomic_load_explicit(&m->peak_seq, memory_order_relaxed))
                break;
        }
        collector_write(&rec, sizeof rec);
        m->written_allocs = rec.alloc_count;
        m->written_frees = rec.free_count;
        m->written_reserved = rec.reserved_peak;
    }
}

/* ---- fork ----
 * The child gets the table whole: the forking thread takes its lock first, as another
 * thread may be in the middle of a grow or a removal. It waits at most
 * TORCH_MEM_FORK_WAIT_MS: a holder that does not come back is this very thread, interrupted
 * inside the lock by a signal handler that forks. The child then starts an empty table:
 * the parent's blocks are unknown to it, as blocks allocated before recording are. */
#define TORCH_MEM_FORK_WAIT_MS 100

static int torch_mem_fork_held; /* the forking thread holds torch_mem_lock */

void torch_memory_before_fork(void)
{
    torch_mem_fork_held = 0;
    if (!atomic_load_explicit(&torch_mem_enabled, memory_order_acquire))
        return;
    for (long waited_us = 0;; waited_us += 50) {
        if (!atomic_flag_test_and_set_explicit(&torch_mem_lock, memory_order_acquire)) {
            torch_mem_fork_held = 1;
            return;
        }
        if (waited_us >= TORCH_MEM_FORK_WAIT_MS * 1000L)
            return;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

void torch_memory_after_fork_parent(void)
{
    if (torch_mem_fork_held)
        torch_mem_lock_give();
}

void torch_memory_after_fork_child(void)
{
    if (!torch_mem_fork_held && atomic_load(&torch_mem_enabled)) {
        struct torch_mem_slot *t = torch_mem_map(TORCH_MEM_MIN_SLOTS);
        if (!t) {
            atomic_store(&torch_mem_enabled, 0);
            collector_note("CPU tensor memory is off in this forked child: its block table "
                           "could not be made");
        } else { /* the parent's table is left mapped: it may be half made */
            torch_mem_table = t;
            torch_mem_mask = TORCH_MEM_MIN_SLOTS - 1;
            torch_mem_used = 0;
        }
    }
    atomic_flag_clear(&torch_mem_lock); /* held by the forking thread, or by none */
    /* the child's file starts empty: its totals from zero (the table keeps the parent's
     * blocks, whose frees count in the child, as their records do) */
    torch_totals_reset();
}

static int torch_mem_on(void)
{
    return atomic_load_explicit(&torch_mem_enabled, memory_order_relaxed) && !prof_tls_busy &&
           atomic_load_explicit(&prof_recording, memory_order_relaxed);
}

/* The thread's innermost Python node, which the memory records carry: it reads the
 * thread's Python state and never allocates. */
static uint32_t torch_mem_py_node(void)
{
    return prof_current_py_node ? prof_current_py_node() : 0;
}

/* Reserves a record in the calling thread's ring (*ring, to commit it) with its Python
 * node filled in; NULL when not recording or the ring is full (counted by the ring). */
static void *torch_mem_reserve(uint32_t size, uint32_t node, struct prof_ring **ring)
{
    struct prof_thread *t = emit_thread();
    if (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return NULL;
    if (__builtin_expect(!atomic_load_explicit(&prof_collector_running, memory_order_relaxed), 0))
        collector_resume();
    struct prof_rec_torch_mem *rec = ring_reserve(&t->ring, size);
    if (rec)
        rec->py_node = node; /* the same offset in both memory records */
    *ring = &t->ring;
    return rec;
}

static void torch_mem_emit(int64_t bytes, uint64_t ptr, uint64_t ticks, uint32_t node)
{
    struct prof_ring *ring;
    struct prof_rec_torch_mem *rec = torch_mem_reserve(sizeof *rec, node, &ring);
    if (!rec)
        return;
    rec->h.type = PROF_REC_TORCH_MEM;
    rec->h.size = sizeof *rec;
    rec->bytes = bytes;
    rec->ptr = ptr;
    rec->ticks = ticks;
    ring_commit(ring);
}

/* A CPU block's report (torch_report_record): counted in the totals when the table does
 * not hold the block; returns whether it did not. */
static int torch_mem_count_unknown(uint64_t ptr, int64_t bytes, uint64_t ticks)
{
    torch_mem_lock_take();
    int unknown = !torch_mem_has(ptr);
    if (unknown)
        torch_totals_add(TORCH_DEVICE_CPU, -1, bytes, ticks, 0);
    torch_mem_lock_give();
    return unknown;
}

static torch_alloc_cpu_fn torch_alloc_cpu_real(void)
{
    torch_alloc_cpu_fn f = atomic_load_explicit(&torch_real_alloc_cpu, memory_order_acquire);
    if (__builtin_expect(!f, 0)) {
        prof_tls_busy++;
        f = (torch_alloc_cpu_fn)resolve_symbol("_ZN3c109alloc_cpuEm", "libc10");
        prof_tls_busy--;
        atomic_store_explicit(&torch_real_alloc_cpu, f, memory_order_release);
    }
    return f;
}

static torch_free_cpu_fn torch_free_cpu_real(void)
{
    torch_free_cpu_fn f = atomic_load_explicit(&torch_real_free_cpu, memory_order_acquire);
    if (__builtin_expect(!f, 0)) {
        prof_tls_busy++;
        f = (torch_free_cpu_fn)resolve_symbol("_ZN3c108free_cpuEPv", "libc10");
        prof_tls_busy--;
        atomic_store_explicit(&torch_real_free_cpu, f, memory_order_release);
    }
    return f;
}

/* void *c10::alloc_cpu(size_t) */
PROF_EXPORT void *_ZN3c109alloc_cpuEm(size_t nbytes)
{
    torch_alloc_cpu_fn real = torch_alloc_cpu_real();
    if (!real)
        abort(); /* only reachable when libc10 calls it, so it is there */
    void *p = real(nbytes);
    if (p && nbytes && torch_mem_on()) {
        int saved = errno;
        uint64_t ticks = prof_clock_ticks();
        torch_mem_lock_take();
        torch_mem_put((uint64_t)(uintptr_t)p, nbytes);
        torch_totals_add(TORCH_DEVICE_CPU, -1, (int64_t)nbytes, ticks, 0);
        torch_mem_lock_give();
        torch_ops_memory((int64_t)nbytes, 0);
        uint32_t node = torch_mem_py_node();
        torch_mem_emit((int64_t)nbytes, (uint64_t)(uintptr_t)p, ticks, node);
        stacks_after_tensor((int64_t)nbytes, (uint64_t)(uintptr_t)p, ticks, node, 0, -1);
        errno = saved;
    }
    return p;
}

/* void c10::free_cpu(void *) */
PROF_EXPORT void _ZN3c108free_cpuEPv(void *data)
{
    torch_free_cpu_fn real = torch_free_cpu_real();
    if (data && atomic_load_explicit(&torch_mem_enabled, memory_order_relaxed)) {
        int saved = errno;
        /* Always forget the block (a later block may reuse the address); record only while
         * recording. */
        int on = torch_mem_on();
        uint64_t ticks = on ? prof_clock_ticks() : 0;
        torch_mem_lock_take();
        uint64_t bytes = torch_mem_take((uint64_t)(uintptr_t)data);
        if (on)
            torch_totals_add(TORCH_DEVICE_CPU, -1, -(int64_t)bytes, ticks, 0);
        torch_mem_lock_give();
        if (on) {
            if (bytes)
                torch_ops_memory(-(int64_t)bytes, 0);
            torch_mem_emit(-(int64_t)bytes, (uint64_t)(uintptr_t)data, ticks, torch_mem_py_node());
            stacks_after_tensor(-(int64_t)bytes, (uint64_t)(uintptr_t)data, ticks, 0, 0, -1);
        }
        errno = saved;
    }
    if (real)
        real(data);
}

/* ---- Device memory: c10::reportMemoryUsageToProfiler ----
 * torch's allocators call it through the PLT (libc10_cuda -> libc10) for every block:
 * it looks for torch.profiler's thread-local reporter and does nothing without one. We
 * record the report and call the real function, so torch.profiler still gets it. Its
 * totals were int64_t up to torch 1.13 and size_t since 2.0: two mangled names, one ABI.
 * c10::Device is two int8_t passed by value in a register. */
struct torch_c10_device {
    int8_t type;
    int8_t index;
};
typedef void (*torch_report_fn)(void *, int64_t, uint64_t, uint64_t, struct torch_c10_device);

static _Atomic(torch_report_fn) torch_real_report_v2, torch_real_report_v1;

static torch_report_fn torch_report_real(_Atomic(torch_report_fn) *slot, const char *symbol)
{
    torch_report_fn f = atomic_load_explicit(slot, memory_order_acquire);
    if (__builtin_expect(!f, 0)) {
        prof_tls_busy++;
        f = (torch_report_fn)resolve_symbol(symbol, "libc10");
        prof_tls_busy--;
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

static void torch_report_record(void *ptr, int64_t bytes, uint64_t allocated, uint64_t reserved,
                                struct torch_c10_device device)
{
    if (!bytes || !torch_mem_on())
        return;
    int saved = errno;
    uint64_t ticks = prof_clock_ticks();
    uint32_t node = torch_mem_py_node();
    if (device.type != 0) {
        torch_ops_memory(bytes, 1);
        torch_totals_add(device.type, device.index, bytes, ticks, reserved);
    } else if (torch_mem_count_unknown((uint64_t)(uintptr_t)ptr, bytes, ticks)) {
        /* A CPU block alloc_cpu did not hand out: at::MapAllocator's shared-memory storage
         * (tensors a DataLoader worker sends), reported always. torch.profiler counts it
         * as CPU memory of the op that maps or unmaps it: so do we. (The DefaultCPUAllocator's
         * own reports, made under profile_memory only, repeat alloc_cpu / free_cpu, which
         * report before free_cpu and after alloc_cpu: the block is in the table then.) */
        torch_ops_memory(bytes, 0);
        torch_mem_emit(bytes, (uint64_t)(uintptr_t)ptr, ticks, node);
    }
    struct prof_ring *ring;
    struct prof_rec_torch_dev_mem *rec = torch_mem_reserve(sizeof *rec, node, &ring);
    if (rec) {
        rec->h.type = PROF_REC_TORCH_DEV_MEM;
        rec->h.size = sizeof *rec;
        rec->bytes = bytes;
        rec->ptr = (uint64_t)(uintptr_t)ptr;
        rec->ticks = ticks;
        rec->total_allocated = allocated;
        rec->total_reserved = reserved;
        rec->device_type = device.type;
        rec->device_index = device.index;
        memset(rec->reserved, 0, sizeof rec->reserved);
        ring_commit(ring);
    }
    if (device.type != 0)
        stacks_after_tensor(bytes, (uint64_t)(uintptr_t)ptr, ticks, node, device.type,
                            device.index);
    errno = saved;
}

/* Both wrappers: record, then call the real function of that name. */
#define TORCH_REPORT_WRAPPER(symbol_name, slot)                                                    \
    PROF_EXPORT void symbol_name(void *ptr, int64_t bytes, uint64_t allocated, uint64_t reserved,  \
                                 struct torch_c10_device device)                                   \
    {                                                                                              \
        torch_report_record(ptr, bytes, allocated, reserved, device);                              \
        torch_report_fn real = torch_report_real(&slot, #symbol_name);                             \
        if (real)                                                                                  \
            real(ptr, bytes, allocated, reserved, device);                                         \
    }

/* void c10::reportMemoryUsageToProfiler(void*, int64_t, size_t, size_t, c10::Device) */
TORCH_REPORT_WRAPPER(_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE, torch_real_report_v2)
/* torch <= 1.13: the totals were int64_t */
TORCH_REPORT_WRAPPER(_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE, torch_real_report_v1)

void torch_memory_init(void)
{
    struct torch_mem_slot *t = torch_mem_map(TORCH_MEM_MIN_SLOTS);
    if (!t)
        return;
    torch_totals_reset();
    collector_add_source(torch_totals_drain);
    torch_mem_lock_take(); /* published by the lock to the hooks that see it enabled */
    torch_mem_table = t;
    torch_mem_mask = TORCH_MEM_MIN_SLOTS - 1;
    torch_mem_lock_give();
    atomic_store(&torch_mem_enabled, 1);
}
