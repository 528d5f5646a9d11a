/* The sampler's unwinder: libunwind's "remote" interface over this process, with our own
 * accessors, started from the signal's context. libunwind's local unwinder
 * (libunwind.so: unw_backtrace, unw_step) finds a frame's unwind table with
 * dl_iterate_phdr, which takes the loader's lock, under its own cache lock: from a signal
 * handler that deadlocks when the interrupted thread, or one that waits for a lock the
 * interrupted thread holds (malloc's, libunwind's cache lock), is in dlopen, dlclose or
 * dl_iterate_phdr (seen: a handler holding libunwind's cache lock waited for the loader's
 * lock, whose owner, in dlclose, took a signal and waited for the cache lock). Here the
 * handler takes no lock of anyone else's: memory is read in place, registers come from
 * the signal's context, and unwind tables are found in a table of the loaded objects'
 * exec segments and .eh_frame_hdr search tables; the one lock, the address space's own
 * cache's, is taken only by these unwinds, with every signal blocked, and nothing is
 * waited for while it is held (stacks_unwind_new_space).
 *
 * That table is made in normal context (dl_iterate_phdr) at start and again by the
 * collector whenever the loader's counters moved (stacks_maps.c); an unwind holds a count
 * while it uses the current one, and a replaced table is freed only when no unwind is
 * under way. A frame in an object loaded since the last table ends its stack there. Reads
 * inside the table's segments need no check until a dlclose begins (we wrap it), nor in a
 * table made while none was under way; any other page is checked once per unwind
 * (process_vm_readv) before it is read. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "got.h"
#include "resolve.h"
#include "stacks.h"

/* DWARF pointer encodings (LSB, .eh_frame_hdr) */
#define STACKS_PE_ABSPTR 0x00
#define STACKS_PE_UDATA4 0x03
#define STACKS_PE_UDATA8 0x04
#define STACKS_PE_SDATA4 0x0b
#define STACKS_PE_SDATA8 0x0c
#define STACKS_PE_DATAREL 0x30

struct stacks_unwind_object {
    uint64_t start, end; /* a readable segment */
    uint64_t hdr;        /* its object's .eh_frame_hdr */
    uint64_t table;      /* the hdr's binary search table: fde_count (ip, fde) pairs */
    uint64_t fde_count;
    int exec; /* a segment of code: its addresses are looked up */
};

struct stacks_unwind_table {
    struct stacks_unwind_table *retired_next;
    /* stacks_unwind_unloads when it was made, or STACKS_UNWIND_UNTRUSTED: made while a
     * dlclose was under way, it may hold the object that dlclose unmaps */
    uint64_t unloads;
    size_t n, cap;
    struct stacks_unwind_object o[]; /* by start */
};

typedef int (*stacks_search_fn)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *,
                                int, void *);
struct stacks_unwind_api {
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
    stacks_search_fn search_table;
};
static struct stacks_unwind_api stacks_unw;
static unw_addr_space_t stacks_unwind_space;
static struct stacks_unwind_table *_Atomic stacks_unwind_current;
static _Atomic int stacks_unwind_readers;
static struct stacks_unwind_table *stacks_unwind_retired; /* the updater's only */
/* dlclose calls begun: while it has not moved since the table was made, the table's
 * segments are mapped and readable, and the unwinder reads them without asking */
static _Atomic uint64_t stacks_unwind_unloads;
#define STACKS_UNWIND_UNTRUSTED UINT64_MAX
/* dlclose calls under way: while one is, no unwind starts (its sample has no stack), and
 * the dlclose waits for the unwinds begun before it to end (stacks_unwind_readers), so
 * that no object goes while an unwind reads it. Checking a page and reading it are two
 * steps: an object unmapped between them faulted the unwinding thread (in its signal
 * handler; under ThreadSanitizer, whose deferred handlers run with every signal blocked,
 * the process died without a word). */
static _Atomic int stacks_unwind_closing;

/* .eh_frame_hdr (LSB): version 1, the encodings of eh_frame_ptr, fde_count and the table;
 * the table must be the usual datarel|sdata4 pairs. 0 when the object is not usable. */
static int stacks_unwind_read_hdr(const uint8_t *hdr, uint64_t *table, uint64_t *count)
{
    if (hdr[0] != 1 || hdr[3] != (STACKS_PE_DATAREL | STACKS_PE_SDATA4))
        return 0;
    const uint8_t *p = hdr + 4;
    switch (hdr[1] & 0x0f) { /* eh_frame_ptr: skipped */
    case STACKS_PE_UDATA4:
    case STACKS_PE_SDATA4:
        p += 4;
        break;
    case STACKS_PE_UDATA8:
    case STACKS_PE_SDATA8:
    case STACKS_PE_ABSPTR:
        p += 8;
        break;
    default:
        return 0;
    }
    uint32_t n;
    if ((hdr[2] & 0x0f) != STACKS_PE_UDATA4 && (hdr[2] & 0x0f) != STACKS_PE_SDATA4)
        return 0;
    memcpy(&n, p, 4);
    *table = (uint64_t)(uintptr_t)(p + 4);
    *count = n;
    return 1;
}

static int stacks_unwind_add(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct stacks_unwind_table **tp = arg;
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
    uint64_t table, count;
    if (!eh || !*tp ||
        !stacks_unwind_read_hdr((const uint8_t *)(info->dlpi_addr + eh->p_vaddr), &table, &count))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
            continue;
        struct stacks_unwind_table *t = *tp;
        if (t->n == t->cap) {
            size_t cap = t->cap * 2;
            t = realloc(t, sizeof *t + cap * sizeof t->o[0]);
            if (!t) {
                free(*tp);
                *tp = NULL;
                return 1;
            }
            t->cap = cap;
            *tp = t;
        }
        t->o[t->n++] = (struct stacks_unwind_object){info->dlpi_addr + ph->p_vaddr,
                                                     info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                                                     info->dlpi_addr + eh->p_vaddr,
                                                     table,
                                                     count,
                                                     (ph->p_flags & PF_X) != 0};
    }
    return 0;
}

static int stacks_unwind_by_start(const void *a, const void *b)
{
    const struct stacks_unwind_object *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

void stacks_unwind_refresh(void)
{
    if (!stacks_unwind_space)
        return;
    size_t cap = 64;
    struct stacks_unwind_table *t = malloc(sizeof *t + cap * sizeof t->o[0]);
    if (!t)
        return;
    t->retired_next = NULL;
    /* dlclose raises closing before unloads (seq_cst): a count that holds a dlclose's
     * raise is read with that dlclose's closing raised, until it has unmapped its object.
     * Made then, the table may list that object (it is unmapped after this walk; under
     * ThreadSanitizer a sample taken in the library's destructors is handled after the
     * dlclose, and read the unmapped code: a crash), so its pages are checked. */
    uint64_t unloads = atomic_load(&stacks_unwind_unloads);
    t->unloads = atomic_load(&stacks_unwind_closing) ? STACKS_UNWIND_UNTRUSTED : unloads;
    t->n = 0;
    t->cap = cap;
    dl_iterate_phdr(stacks_unwind_add, &t);
    if (!t)
        return; /* no memory: the table in use stays */
    qsort(t->o, t->n, sizeof t->o[0], stacks_unwind_by_start);
    struct stacks_unwind_table *old = atomic_exchange(&stacks_unwind_current, t);
    stacks_unw.flush_cache(stacks_unwind_space, 0, 0);
    if (old) {
        old->retired_next = stacks_unwind_retired;
        stacks_unwind_retired = old;
    }
    /* seq_cst with the readers' count: a lookup that still holds a retired table has its
     * count up until it is done with it */
    if (atomic_load(&stacks_unwind_readers) == 0)
        while (stacks_unwind_retired) {
            struct stacks_unwind_table *next = stacks_unwind_retired->retired_next;
            free(stacks_unwind_retired);
            stacks_unwind_retired = next;
        }
}

/* Whether table t's segments may be read without a check: no dlclose began since it was
 * made, nor was one under way then. */
static inline int stacks_unwind_trusted(const struct stacks_unwind_table *t)
{
    return t->unloads == atomic_load_explicit(&stacks_unwind_unloads, memory_order_relaxed);
}

/* Whether the table in use is not trusted: the updater's next pass makes a new one, so
 * that its segments are read again without a check. */
int stacks_unwind_stale(void)
{
    const struct stacks_unwind_table *t = atomic_load(&stacks_unwind_current);
    return t && !stacks_unwind_trusted(t);
}

/* ---- the accessors: async-signal-safe, no lock ---- */

/* One unwind: the signal's context, the table it holds, the pages it found readable. A
 * frame without unwind rules is left by its frame pointer, which may be anything: a page
 * outside the table's segments is checked once before it is read. */
#define STACKS_GOOD_PAGES 16
struct stacks_unwind_arg {
    const ucontext_t *uc;
    const struct stacks_unwind_table *table;
    uintptr_t good[STACKS_GOOD_PAGES];
    unsigned ngood;
};

/* The table's segment that holds addr, or NULL. */
static const struct stacks_unwind_object *stacks_unwind_segment(const struct stacks_unwind_table *t,
                                                                uintptr_t addr)
{
    size_t lo = 0, hi = t ? t->n : 0;
    while (lo < hi) { /* the last segment starting at or before addr */
        size_t mid = lo + (hi - lo) / 2;
        if (t->o[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && addr < t->o[lo - 1].end ? &t->o[lo - 1] : NULL;
}

static int stacks_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                                 int need_unwind_info, void *arg)
{
    const struct stacks_unwind_object *o =
        stacks_unwind_segment(((struct stacks_unwind_arg *)arg)->table, (uintptr_t)ip);
    /* an address in no code of the table (an object loaded since, or code made at run
     * time) ends the stack: libunwind's guess from the frame pointer (ENOINFO) is mostly
     * wrong in code built without one */
    if (!o || !o->exec)
        return -UNW_ESTOPUNWIND;
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = o->start;
    di.end_ip = o->end;
    di.u.rti.segbase = o->hdr;
    di.u.rti.table_data = o->table;
    di.u.rti.table_len = o->fde_count * 8 / sizeof(unw_word_t);
    return stacks_unw.search_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void stacks_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as;
    (void)pi;
    (void)arg; /* libunwind frees the table-format info it made itself */
}

static int stacks_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as;
    (void)addr;
    (void)arg;
    return -UNW_ENOINFO;
}

static int stacks_page_readable(struct stacks_unwind_arg *u, uintptr_t page)
{
    for (unsigned i = 0; i < u->ngood && i < STACKS_GOOD_PAGES; i++)
        if (u->good[i] == page)
            return 1;
    if (stacks_unwind_trusted(u->table) && stacks_unwind_segment(u->table, page))
        return 1; /* unwind tables, mostly: the segments of objects still loaded */
    /* a read by the kernel: EFAULT where a read of ours would fault (unmapped, guard
     * pages); where that call is not allowed, msync says at least whether it is mapped */
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)page, 1};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n != 1 && (n != -1 || errno == EFAULT || msync((void *)page, 1, MS_ASYNC) != 0))
        return 0;
    u->good[u->ngood++ % STACKS_GOOD_PAGES] = page;
    return 1;
}

/* The read itself: stack slots and unwind tables, and where a frame pointer led, any
 * readable memory, which other threads may be writing: by design unsynchronized, and
 * inside a sanitizer's redzones, so not instrumented (resolve.h). */
static PROF_UNINSTRUMENTED unw_word_t stacks_read_word(uintptr_t addr)
{
    unw_word_t v;
    __builtin_memcpy(&v, (const void *)addr, sizeof v);
    return v;
}

static int stacks_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *value, int write,
                             void *arg)
{
    (void)as;
    struct stacks_unwind_arg *u = arg;
    uintptr_t first = (uintptr_t)addr & ~(uintptr_t)4095;
    uintptr_t last = ((uintptr_t)addr + sizeof *value - 1) & ~(uintptr_t)4095;
    if (write || !stacks_page_readable(u, first) ||
        (last != first && !stacks_page_readable(u, last)))
        return -UNW_EINVAL;
    *value = stacks_read_word((uintptr_t)addr);
    return 0;
}

/* libunwind's x86-64 register numbers -> the signal context's */
static const int stacks_greg_of[UNW_X86_64_RIP + 1] = {
    [UNW_X86_64_RAX] = REG_RAX, [UNW_X86_64_RDX] = REG_RDX, [UNW_X86_64_RCX] = REG_RCX,
    [UNW_X86_64_RBX] = REG_RBX, [UNW_X86_64_RSI] = REG_RSI, [UNW_X86_64_RDI] = REG_RDI,
    [UNW_X86_64_RBP] = REG_RBP, [UNW_X86_64_RSP] = REG_RSP, [UNW_X86_64_R8] = REG_R8,
    [UNW_X86_64_R9] = REG_R9,   [UNW_X86_64_R10] = REG_R10, [UNW_X86_64_R11] = REG_R11,
    [UNW_X86_64_R12] = REG_R12, [UNW_X86_64_R13] = REG_R13, [UNW_X86_64_R14] = REG_R14,
    [UNW_X86_64_R15] = REG_R15, [UNW_X86_64_RIP] = REG_RIP};

static int stacks_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *value, int write,
                             void *arg)
{
    (void)as;
    const ucontext_t *uc = ((struct stacks_unwind_arg *)arg)->uc;
    if (write || reg < 0 || reg > UNW_X86_64_RIP)
        return -UNW_EBADREG;
    *value = (unw_word_t)uc->uc_mcontext.gregs[stacks_greg_of[reg]];
    return 0;
}

static int stacks_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *value, int write,
                               void *arg)
{
    (void)as;
    (void)reg;
    (void)value;
    (void)write;
    (void)arg;
    return -UNW_EBADREG;
}

static int stacks_resume(unw_addr_space_t as, unw_cursor_t *cursor, void *arg)
{
    (void)as;
    (void)cursor;
    (void)arg;
    return -UNW_EINVAL;
}

static int stacks_get_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf, size_t len,
                                unw_word_t *offset, void *arg)
{
    (void)as;
    (void)ip;
    (void)buf;
    (void)len;
    (void)offset;
    (void)arg;
    return -UNW_ENOINFO;
}

static unw_accessors_t stacks_accessors = {
    .find_proc_info = stacks_find_proc_info,
    .put_unwind_info = stacks_put_unwind_info,
    .get_dyn_info_list_addr = stacks_get_dyn_info_list_addr,
    .access_mem = stacks_access_mem,
    .access_reg = stacks_access_reg,
    .access_fpreg = stacks_access_fpreg,
    .resume = stacks_resume,
    .get_proc_name = stacks_get_proc_name,
};

/* Whether this thread is in stacks_unwind_context: in the sampler's signal handler, which
 * runs with every signal blocked (stacks_sample.c's sa_mask). */
static __thread int stacks_unwinding PROF_TLS;

/* libunwind's calls to change the signal mask (its GOT entries point here): around each
 * lock it takes, it blocks every signal and then restores the mask, two system calls,
 * about 1 us each on 2026-12-01's VM and 20-25 per sample. Inside our unwinds every signal
 * is blocked already and the mask is restored by the handler's return, so there they are
 * not made; from any other thread, or outside an unwind, they are. */
static int stacks_unwind_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!stacks_unwinding)
        return pthread_sigmask(how, set, old);
    if (old)
        sigfillset(old);
    return 0;
}

static void *stacks_unwind_mask_entry(const char *name, void *cur, int jump_slot,
                                      const struct dl_phdr_info *info, void *arg)
{
    (void)cur;
    (void)jump_slot;
    (void)info;
    (void)arg;
    return strcmp(name, "sigprocmask") == 0 || strcmp(name, "pthread_sigmask") == 0
               ? (void *)stacks_unwind_sigprocmask
               : NULL;
}

static int stacks_unwind_find_library(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_addr != (uintptr_t)arg)
        return 0;
    got_rebind_object(info, stacks_unwind_mask_entry, NULL);
    return 1;
}

/* libunwind's register-state cache, one per address space, by instruction address: a
 * frame met before is unwound without its FDE being looked up and parsed (each parse
 * allocates from libunwind's memory pools, under their locks). A lookup takes the cache's
 * mutex. No thread is interrupted holding it (our handler runs with every signal blocked),
 * and a fork waits for the unwinds under way (stacks_before_fork; a child forked while
 * one was still under way unwinds nothing). Entries are dropped (unw_flush_cache) when an
 * object is unloaded, before any unwind may start again (dlclose below), and whenever the
 * table is made again. */
static unw_addr_space_t stacks_unwind_new_space(void)
{
    unw_addr_space_t space = stacks_unw.create_addr_space(&stacks_accessors, 0);
    if (space && stacks_unw.set_caching_policy(space, UNW_CACHE_GLOBAL) != 0)
        return NULL; /* leaked: once, at start */
    return space;
}

int stacks_unwind_context(void *ucontext, void **buf, int max)
{
    if (!stacks_unwind_space)
        return 0;
    atomic_fetch_add(&stacks_unwind_readers, 1); /* seq_cst with dlclose's, both ways */
    if (atomic_load(&stacks_unwind_closing)) {
        atomic_fetch_sub(&stacks_unwind_readers, 1);
        return 0;
    }
    struct stacks_unwind_arg arg = {.uc = ucontext, .table = atomic_load(&stacks_unwind_current)};
    unw_cursor_t cursor;
    int n = 0;
    stacks_unwinding = 1;
    if (stacks_unw.init_remote(&cursor, stacks_unwind_space, &arg) == 0)
        do {
            unw_word_t ip;
            if (stacks_unw.get_reg(&cursor, UNW_REG_IP, &ip) != 0 || !ip)
                break;
            buf[n++] = (void *)(uintptr_t)ip;
        } while (n < max && stacks_unw.step(&cursor) > 0);
    stacks_unwinding = 0;
    atomic_fetch_sub(&stacks_unwind_readers, 1);
    return n;
}

#define STACKS_UNWIND_NAME(fn) STACKS_UNWIND_NAME_(fn)
#define STACKS_UNWIND_NAME_(fn) #fn /* libunwind.h maps unw_step to _Ux86_64_step */

int stacks_unwind_start(void)
{
    void *h = dlopen("libunwind-" STACKS_UNWIND_NAME(UNW_TARGET) ".so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    struct stacks_unwind_api a;
    a.create_addr_space = (unw_addr_space_t(*)(unw_accessors_t *, int))dlsym(
        h, STACKS_UNWIND_NAME(unw_create_addr_space));
    a.set_caching_policy = (int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(
        h, STACKS_UNWIND_NAME(unw_set_caching_policy));
    a.init_remote = (int (*)(unw_cursor_t *, unw_addr_space_t, void *))dlsym(
        h, STACKS_UNWIND_NAME(unw_init_remote));
    a.step = (int (*)(unw_cursor_t *))dlsym(h, STACKS_UNWIND_NAME(unw_step));
    a.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(
        h, STACKS_UNWIND_NAME(unw_get_reg));
    a.flush_cache = (void (*)(unw_addr_space_t, unw_word_t, unw_word_t))dlsym(
        h, STACKS_UNWIND_NAME(unw_flush_cache));
    a.search_table =
        (stacks_search_fn)dlsym(h, STACKS_UNWIND_NAME(UNW_OBJ(dwarf_search_unwind_table)));
    if (!a.create_addr_space || !a.set_caching_policy || !a.init_remote || !a.step || !a.get_reg ||
        !a.flush_cache || !a.search_table)
        return -1;
    stacks_unw = a;
    Dl_info lib;
    if (dladdr((void *)a.step, &lib))
        dl_iterate_phdr(stacks_unwind_find_library, lib.dli_fbase);
    unw_addr_space_t space = stacks_unwind_new_space();
    if (!space)
        return -1;
    stacks_unwind_space = space;
    stacks_unwind_refresh();
    if (!atomic_load(&stacks_unwind_current)) {
        stacks_unwind_space = NULL;
        return -1;
    }
    return 0;
}

void stacks_unwind_after_fork_child(int unsettled)
{
    atomic_store(&stacks_unwind_readers, 0); /* only this thread goes on */
    atomic_store(&stacks_unwind_closing, 0);
    /* An unwind under way at the fork (a thread stopped in one past stacks_before_fork's
     * wait) may have held the cache's lock, held for good in the child: the child's
     * samples go without C stacks. Nothing is allocated here: a sanitizer's fork holds
     * its allocator's lock until the child's fork handlers have run. */
    if (unsettled)
        stacks_unwind_space = NULL;
}

/* Marks the tables' segments as possibly unmapped before an object goes (see
 * stacks_unwind_unloads; the collector's next pass makes a new table), and lets the
 * unwinds under way end first (stacks_unwind_closing): 200 ms at most, so that a thread
 * stopped inside one (a debugger) does not hold the program. */
__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static int (*_Atomic real)(void *);
    int (*fn)(void *) = atomic_load_explicit(&real, memory_order_relaxed);
    if (!fn) {
        fn = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        atomic_store_explicit(&real, fn, memory_order_relaxed);
    }
    atomic_fetch_add(&stacks_unwind_closing, 1); /* first: see stacks_unwind_refresh */
    atomic_fetch_add(&stacks_unwind_unloads, 1);
    for (int i = 0; i < 20000 && atomic_load(&stacks_unwind_readers) > 0; i++) {
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
    int rc = fn ? fn(handle) : -1;
    if (stacks_unwind_space) /* the unmapped code's cached rules: before any unwind starts */
        stacks_unw.flush_cache(stacks_unwind_space, 0, 0);
    atomic_fetch_sub(&stacks_unwind_closing, 1);
    return rc;
}
