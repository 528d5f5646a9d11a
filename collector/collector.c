#include "collector.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "metalog.h"
#include "preamble.h"
#include "redact.h"
#include "writer.h"
#include "writer_guard.h"

#define COLLECTOR_MAX_API_TABLES 16

_Atomic int prof_recording;
_Atomic uint64_t prof_state_gen = 1;
/* 1 from init until the final flush or a failure, windows closed or not: the file is written */
static _Atomic int collector_live;
/* A capture window that opens by time needs the collector's passes with no event yet. */
static _Atomic int collector_keep;
void (*prof_api_observer)(uint64_t ticks);
uint32_t (*prof_current_py_node)(void);
void (*prof_py_cut)(uint64_t ticks);
__thread struct prof_thread *prof_tls_thread PROF_TLS;
__thread int prof_tls_busy PROF_TLS;

static struct collector_config collector_cfg;
static char **collector_argv;
static int collector_argc;
static pid_t collector_pid;
static uint64_t collector_init_ticks, collector_init_mono, collector_init_real;

static struct preamble_api_table collector_api_tables[COLLECTOR_MAX_API_TABLES];
static int collector_api_table_count;

/* Threads push themselves at the head with a CAS; only the drain-lock holder unlinks, and
 * only nodes that are not the head, so pushers and the unlinker never write the same one. */
#define COLLECTOR_MAX_SOURCES 8
static void (*collector_sources[COLLECTOR_MAX_SOURCES])(int fresh, int last);
static _Atomic int collector_source_count; /* released after the slot is filled */
static int collector_sources_fresh = 1;    /* the file is new: sources write everything */

static struct prof_thread *_Atomic collector_threads;
static pthread_key_t collector_thread_key;

/* The drain lock makes its holder the single consumer of every ring and the writer's only
 * user. It holds the owner's tid: a signal handler sees it interrupted the owner: no wait. */
static _Atomic pid_t collector_drain_owner;
static size_t collector_metalog_offset;
static uint64_t collector_written, collector_lost;

/* The collector thread runs only between forks: the prepare handler stops and joins it
 * (so that fork happens in a process without our thread: Python 3.12+ warns about forking
 * a multi-threaded process), and the next event after the fork starts it again. */
_Atomic int prof_collector_running;
static _Atomic int collector_thread_started;
static _Atomic int collector_stop;
static pthread_t collector_thread_handle;
/* The collector thread sleeps on this futex word between passes; a stop, or a producer
 * whose ring is half full, bumps it and wakes the thread (see ring_half_full_hook). */
static _Atomic uint32_t collector_wake_seq;
static void collector_wake(void);
static int collector_tsc_measured;
/* Under AddressSanitizer or ThreadSanitizer a forked child starts no collector thread:
 * TSan kills a child that starts one after a fork of a multi-threaded process; GCC 12's
 * ASan, which does not hold its thread registry's lock across fork, can hang it in
 * pthread_create. The child's file is written at its exit (its rings keep what fits). */
static int collector_under_sanitizer;
static int collector_forked_child;
static _Atomic int collector_open_failed;

static pid_t collector_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int collector_drain_lock(int timeout_ms)
{
    pid_t self = collector_gettid();
    if (atomic_load(&collector_drain_owner) == self)
        return -1;
    for (long waited_us = 0;; waited_us += 200) {
        pid_t expected = 0;
        if (atomic_compare_exchange_weak(&collector_drain_owner, &expected, self))
            return 0;
        if (timeout_ms >= 0 && waited_us >= timeout_ms * 1000L)
            return -1;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

static void collector_drain_unlock(void)
{
    atomic_store(&collector_drain_owner, 0);
}

static size_t collector_thread_header_bytes(void)
{
    return (sizeof(struct prof_thread) + 4095) & ~(size_t)4095;
}

static void collector_free_thread(struct prof_thread *t)
{
    struct prof_lost_calls *table = atomic_load(&t->lost_calls);
    if (table)
        munmap(table, PROF_API_MAX * sizeof *table);
    munmap(t, collector_thread_header_bytes() + collector_cfg.ring_bytes);
}

static void collector_thread_key_destroy(void *arg)
{
    struct prof_thread *t = arg;
    /* The ring stays mapped until the collector has written what is left in it. */
    atomic_store_explicit(&t->exited, 1, memory_order_release);
    prof_tls_thread = NULL;
}

void collector_init(const struct collector_config *cfg, int argc, char **argv)
{
    collector_cfg = *cfg;
    collector_cfg.output_dir = strdup(cfg->output_dir);
    collector_cfg.run_id = strdup(cfg->run_id);
    collector_argc = argc;
    collector_argv = calloc((size_t)argc + 1, sizeof *collector_argv);
    for (int i = 0; collector_argv && i < argc; i++)
        collector_argv[i] = strdup(argv[i] ? argv[i] : "");
    if (collector_argv && cfg->redact)
        redact_argv(argc, collector_argv);
    collector_pid = getpid();
    collector_under_sanitizer =
        dlsym(RTLD_DEFAULT, "__asan_init") != NULL || dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
    clock_sample(&collector_init_ticks, &collector_init_mono, &collector_init_real);
    pthread_key_create(&collector_thread_key, collector_thread_key_destroy);
    ring_half_full_hook = cfg->flush_period_only ? NULL : collector_wake;
    atomic_store(&collector_live, 1);
    prof_state_set(&prof_recording, 1);
}

void collector_set_recording(int on)
{
    /* Async-signal-safe: atomics only. */
    if (atomic_load(&collector_live))
        prof_state_set(&prof_recording, on ? 1 : 0);
}

int collector_is_live(void)
{
    return atomic_load(&collector_live);
}

static void collector_turn_off(void)
{
    atomic_store(&collector_live, 0);
    prof_state_set(&prof_recording, 0);
}

void collector_add_api_table(struct prof_api_desc *table, size_t count)
{
    for (size_t i = 0; i < count; i++) { /* nargs: the comma-separated names' count */
        const char *a = table[i].args;
        unsigned n = a[0] ? 1 : 0;
        for (; *a; a++)
            n += *a == ',';
        table[i].nargs = (uint8_t)n;
    }
    if (collector_api_table_count < COLLECTOR_MAX_API_TABLES) {
        collector_api_tables[collector_api_table_count].table = table;
        collector_api_tables[collector_api_table_count].count = count;
        collector_api_table_count++;
    }
}

static void *collector_main(void *arg);

static void collector_start_thread(void)
{
    if (collector_forked_child && collector_under_sanitizer)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&collector_thread_started, &expected, 1))
        return;
    /* Block every signal while creating the thread, so it starts with all of them
     * blocked and a process-directed signal never lands on the collector (whose
     * handler would then wait for itself). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    atomic_store(&collector_stop, 0);
    prof_tls_busy++; /* our own thread: the sampler's pthread_create leaves it alone */
    int rc = pthread_create(&collector_thread_handle, &attr, collector_main, NULL);
    prof_tls_busy--;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        collector_note("cannot start the collector thread (%s); data is written at exit only",
                       strerror(rc));
    else
        prof_state_set(&prof_collector_running, 1);
}

void collector_resume(void)
{
    if ((atomic_load(&collector_threads) || atomic_load(&collector_keep)) &&
        atomic_load(&collector_live) && collector_pid == getpid())
        collector_start_thread();
}

void collector_keep_running(void)
{
    atomic_store(&collector_keep, 1);
    collector_resume();
}

/* Stops and joins the collector thread; returns whether one was running. */
static int collector_stop_thread(void)
{
    if (!atomic_load(&prof_collector_running))
        return 0;
    atomic_store(&collector_stop, 1);
    collector_wake();
    pthread_join(collector_thread_handle, NULL);
    prof_state_set(&prof_collector_running, 0);
    atomic_store(&collector_thread_started, 0);
    return 1;
}

struct prof_thread *collector_thread_register(void)
{
    if (!atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return NULL;
    prof_tls_busy++; /* callers are usually inside a wrapper already */
    size_t header = collector_thread_header_bytes();
    void *block = mmap(NULL, header + collector_cfg.ring_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) {
        prof_tls_busy--;
        return NULL;
    }
    struct prof_thread *t = block;
    ring_init(&t->ring, (uint8_t *)block + header, collector_cfg.ring_bytes);
    ring_keep(&t->ring, collector_ring_kept(collector_cfg.ring_bytes));
    t->tid = (uint32_t)collector_gettid();
    prctl(PR_GET_NAME, t->name, 0, 0, 0);
    struct prof_thread *head = atomic_load(&collector_threads);
    do {
        atomic_store_explicit(&t->next, head, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak(&collector_threads, &head, t));
    pthread_setspecific(collector_thread_key, t);
    prof_tls_thread = t;
    collector_start_thread();
    prof_tls_busy--;
    return t;
}

void collector_count_lost_call(struct prof_thread *t, uint16_t api, int failed, uint64_t ticks)
{
    struct prof_lost_calls *table = atomic_load_explicit(&t->lost_calls, memory_order_relaxed);
    if (!table) {
        void *p = mmap(NULL, PROF_API_MAX * sizeof *table, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return;
        table = p;
        /* release: the collector that sees the pointer sees the zeroed table */
        atomic_store_explicit(&t->lost_calls, table, memory_order_release);
    }
    if (api >= PROF_API_MAX)
        return;
    struct prof_lost_calls *e = &table[api];
    atomic_store_explicit(&e->calls, atomic_load_explicit(&e->calls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (failed)
        atomic_store_explicit(&e->errors,
                              atomic_load_explicit(&e->errors, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    atomic_store_explicit(&e->ticks, atomic_load_explicit(&e->ticks, memory_order_relaxed) + ticks,
                          memory_order_relaxed);
}

void collector_add_source(void (*drain)(int fresh, int last))
{
    if (collector_source_count < COLLECTOR_MAX_SOURCES)
        collector_sources[collector_source_count++] = drain;
}

void collector_write_thread(uint32_t tid)
{
    struct prof_rec_thread th = {{PROF_REC_THREAD, sizeof th}, tid};
    writer_append(&th, sizeof th);
}

void collector_write(const void *data, size_t len)
{
    writer_append(data, len);
}

void collector_add_process_record(const void *rec, size_t len)
{
    const struct prof_record_header *h = rec;
    metalog_append(h->type, rec, len, NULL, NULL);
}

uint32_t collector_intern(const char *text)
{
    return metalog_intern(text);
}

void collector_add_symbol(uint16_t kind, uint64_t address, uint32_t string_id, uint64_t target)
{
    struct prof_rec_symbol rec;
    memset(&rec, 0, sizeof rec);
    rec.kind = kind;
    rec.string_id = string_id;
    rec.address = address;
    rec.target = target;
    metalog_append(PROF_REC_SYMBOL, &rec, sizeof rec, NULL, NULL);
}

void collector_add_meta(const char *key, const char *value)
{
    struct prof_record_header h = {PROF_REC_META, 0};
    if (collector_cfg.redact)
        value = redact_meta_value(key, value);
    metalog_append(PROF_REC_META, &h, sizeof h, key, value ? value : "");
}

void collector_note(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!collector_cfg.quiet)
        fprintf(stderr, "profrun: %s\n", msg);
    struct prof_rec_note rec = {{PROF_REC_NOTE, 0}, 0};
    metalog_append(PROF_REC_NOTE, &rec, sizeof rec, msg, NULL);
}

uint64_t collector_events_lost(void)
{
    return collector_lost;
}

/* ---- the consumer side: only the drain-lock holder runs what follows ---- */

static int collector_ensure_file(void)
{
    if (writer_is_open())
        return 0;
    if (atomic_load(&collector_open_failed))
        return -1;
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/' || *c == '_')
            *c = '-';
    char err[512];
    if (writer_open(collector_cfg.output_dir, collector_cfg.run_id, host, collector_cfg.rank,
                    collector_cfg.features, err, sizeof err) != 0) {
        atomic_store(&collector_open_failed, 1);
        collector_turn_off();
        if (!collector_cfg.quiet)
            fprintf(stderr, "profrun: %s; profiling is off for pid %ld\n", err, (long)getpid());
        return -1;
    }
    preamble_write(&(struct preamble_info){
        &collector_cfg, collector_argv, collector_argc, collector_init_ticks, collector_init_mono,
        collector_init_real, collector_api_tables, collector_api_table_count});
    return 0;
}

/* After the writer ran outside a signal handler: says once that the trace could not be
 * written (profiling then stops for good in this process and its later children: no
 * new file is tried, so a full disk gets no string of empty files), and once that the
 * program took the trace's descriptor from us. */
static void collector_check_writer(void)
{
    static int failure_said, reopen_said;
    int removed;
    int err = writer_failure(&removed);
    if (err && !failure_said) {
        failure_said = 1;
        atomic_store(&collector_open_failed, 1);
        collector_turn_off();
        if (!collector_cfg.quiet)
            fprintf(stderr,
                    "profrun: cannot write the trace %s (%s); profiling is off for pid %ld%s\n",
                    writer_path(), strerror(err), (long)getpid(),
                    removed ? "; the empty file was removed"
                            : "; the file holds what was written before");
    }
    if (writer_guard_take_reopens() && !reopen_said) {
        reopen_said = 1;
        collector_note("the program closed or replaced the descriptor of the trace file; it was "
                       "reopened and nothing was written into the program's files");
    }
}

/* The sums of dropped calls that grew since the last pass. */
static void collector_write_lost_calls(struct prof_thread *t)
{
    struct prof_lost_calls *table = atomic_load_explicit(&t->lost_calls, memory_order_acquire);
    if (!table)
        return;
    for (uint16_t api = 0; api < PROF_API_MAX; api++) {
        struct prof_lost_calls *e = &table[api];
        uint64_t calls = atomic_load_explicit(&e->calls, memory_order_relaxed);
        if (calls == e->reported_calls)
            continue;
        uint64_t errors = atomic_load_explicit(&e->errors, memory_order_relaxed);
        uint64_t ticks = atomic_load_explicit(&e->ticks, memory_order_relaxed);
        struct prof_rec_lost_calls rec;
        memset(&rec, 0, sizeof rec);
        rec.h.type = PROF_REC_LOST_CALLS;
        rec.h.size = sizeof rec;
        rec.api = api;
        rec.tid = t->tid;
        rec.calls = calls - e->reported_calls;
        rec.errors = errors - e->reported_errors;
        rec.ticks = ticks - e->reported_ticks;
        writer_append(&rec, sizeof rec);
        e->reported_calls = calls;
        e->reported_errors = errors;
        e->reported_ticks = ticks;
    }
}

static void collector_write_bytes(const void *data, size_t len)
{
    writer_append(data, len);
}

/* Copies every ring and the metadata log into the file. Returns the bytes drained. */
enum collector_drain_mode {
    DRAIN_PASS = 0,   /* the collector thread's periodic pass */
    DRAIN_SIGNAL = 1, /* from a signal handler: no waiting on locks */
    DRAIN_LAST = 2    /* before exit or exec: sources flush what they hold */
};

static int collector_draining_in_signal; /* written by the drain-lock holder only */

int collector_drain_in_signal(void)
{
    return collector_draining_in_signal;
}

static uint64_t collector_drain(enum collector_drain_mode mode)
{
    if (collector_ensure_file() != 0)
        return 0;
    collector_draining_in_signal = mode == DRAIN_SIGNAL;
    uint64_t drained = 0;
    metalog_copy_out(&collector_metalog_offset, collector_write_bytes, mode == DRAIN_SIGNAL);
    struct prof_thread *prev = NULL;
    for (struct prof_thread *t = atomic_load(&collector_threads); t;) {
        struct prof_thread *next = atomic_load_explicit(&t->next, memory_order_relaxed);
        /* Read exited before the ring: a thread that exited after this load may still
         * have committed records, which the next pass writes. */
        int exited = atomic_load_explicit(&t->exited, memory_order_acquire);
        struct ring_span spans[2];
        uint64_t avail = ring_peek(&t->ring, spans);
        uint64_t lost = ring_take_dropped(&t->ring);
        if (avail || lost) {
            struct prof_rec_thread th = {{PROF_REC_THREAD, sizeof th}, t->tid};
            writer_append(&th, sizeof th);
            writer_append(spans[0].data, spans[0].len);
            writer_append(spans[1].data, spans[1].len);
            ring_release(&t->ring, avail);
            drained += avail;
            if (lost) {
                struct prof_rec_lost rec = {{PROF_REC_LOST, sizeof rec}, t->tid, lost};
                writer_append(&rec, sizeof rec);
                collector_lost += lost;
                struct prof_rec_lost_kept k = {
                    {PROF_REC_LOST_KEPT, sizeof k}, t->tid, ring_take_dropped_kept(&t->ring)};
                if (k.count)
                    writer_append(&k, sizeof k);
            }
        }
        /* Every pass, not only when `lost` grew: the producer counts the drop in the
         * ring before it adds the call to the sums. */
        collector_write_lost_calls(t);
        if (exited && mode != DRAIN_SIGNAL) {
            char name[16] = "";
            memcpy(name, t->name, sizeof name - 1);
            struct prof_rec_thread_name rec = {{PROF_REC_THREAD_NAME, 0}, t->tid};
            writer_append_record(PROF_REC_THREAD_NAME, &rec, sizeof rec, name, NULL);
            if (prev) {
                atomic_store_explicit(&prev->next, next, memory_order_relaxed);
                collector_free_thread(t);
                t = next;
                continue;
            }
            atomic_store(&t->exited, 0); /* head stays linked; name written once */
        }
        prev = t;
        t = next;
    }
    for (int i = 0; i < collector_source_count; i++)
        collector_sources[i](collector_sources_fresh, mode == DRAIN_LAST);
    collector_sources_fresh = 0;
    collector_draining_in_signal = 0;
    collector_written += drained;
    return drained;
}

/* A thread may have been named after its first event (threading.Thread.start). Read with
 * open and read, not stdio: this runs at the exit of a forked child too, where another
 * thread of the parent may have held an allocator's lock at the fork (TSan's does: a child
 * hung in fopen's malloc). */
static void collector_refresh_thread_name(struct prof_thread *t)
{
    char path[64], name[32];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", t->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n <= 0)
        return;
    name[n] = '\0';
    name[strcspn(name, "\n")] = '\0';
    name[sizeof t->name - 1] = '\0';
    memcpy(t->name, name, sizeof t->name);
}

static void collector_write_thread_names(void)
{
    for (struct prof_thread *t = atomic_load(&collector_threads); t;
         t = atomic_load_explicit(&t->next, memory_order_relaxed)) {
        char name[16] = "";
        collector_refresh_thread_name(t);
        memcpy(name, t->name, sizeof name - 1);
        struct prof_rec_thread_name rec = {{PROF_REC_THREAD_NAME, 0}, t->tid};
        writer_append_record(PROF_REC_THREAD_NAME, &rec, sizeof rec, name, NULL);
    }
}

/* Ticks per second over a short sleep, so that a trace cut off before its later CLOCK
 * records converts ticks well (the reader prefers the CLOCK records' longer span). */
static void collector_measure_tsc(void)
{
    if (!prof_clock_tsc)
        return;
    uint64_t t0, m0, r0, t1, m1, r1;
    clock_sample(&t0, &m0, &r0);
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    clock_sample(&t1, &m1, &r1);
    if (m1 <= m0)
        return;
    double rate = (double)(t1 - t0) * 1e9 / (double)(m1 - m0);
    atomic_store(&prof_clock_hz, (uint64_t)rate);
    atomic_fetch_add(&prof_state_gen, 1); /* (the Python layer's span threshold in ticks) */
    char hz[32];
    snprintf(hz, sizeof hz, "%.0f", rate);
    collector_add_meta("tsc_hz", hz);
}

/* Async-signal-safe (a producer in a signal handler may call it); keeps errno. */
static void collector_wake(void)
{
    int saved = errno;
    atomic_fetch_add(&collector_wake_seq, 1);
    syscall(SYS_futex, &collector_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}

/* Until the next flush interval, a stop or a wake. */
static void collector_sleep(void)
{
    uint32_t seq = atomic_load(&collector_wake_seq);
    uint64_t now = clock_monotonic_ns();
    uint64_t deadline = now + (uint64_t)collector_cfg.flush_ms * 1000000u;
    while (!atomic_load(&collector_stop) && atomic_load(&collector_wake_seq) == seq &&
           now < deadline) {
        struct timespec left = {(time_t)((deadline - now) / 1000000000u),
                                (long)((deadline - now) % 1000000000u)};
        syscall(SYS_futex, &collector_wake_seq, FUTEX_WAIT_PRIVATE, seq, &left, NULL, 0);
        now = clock_monotonic_ns();
    }
}

static void *collector_main(void *arg)
{
    (void)arg;
    prof_tls_busy = 1; /* nothing this thread does is an event */
    prctl(PR_SET_NAME, "prof-collector", 0, 0, 0);
    if (!collector_tsc_measured) {
        collector_tsc_measured = 1;
        collector_measure_tsc();
    }
    unsigned passes = 0;
    while (!atomic_load(&collector_stop)) {
        collector_sleep();
        if (atomic_load(&collector_stop))
            break;
        if (collector_drain_lock(-1) != 0)
            continue;
        if (atomic_load(&collector_live) && collector_pid == getpid()) {
            collector_drain(DRAIN_PASS);
            if (writer_is_open() && ++passes % 4 == 0)
                preamble_write_clock_now();
            if (writer_is_open())
                writer_flush();
            collector_check_writer();
        }
        collector_drain_unlock();
    }
    if (atomic_load(&collector_stop) == 2)
        pthread_detach(pthread_self());
    return NULL;
}

/* The END record alone: what a signal handler can write (no stdio, no allocation). */
static void collector_write_end_record(int sig)
{
    struct prof_rec_end end;
    memset(&end, 0, sizeof end);
    end.h.type = PROF_REC_END;
    end.h.size = sizeof end;
    end.signal = (uint32_t)sig;
    end.ticks = prof_clock_ticks();
    end.events_written = collector_written;
    end.events_lost = collector_lost;
    writer_append(&end, sizeof end);
}

static void collector_write_end(void)
{
    collector_write_thread_names();
    preamble_write_clock_now();
    collector_write_end_record(0);
}

/* The last drain before the process image goes: everything, then END. close: at exit;
 * else (exec) the file stays open in case the exec fails. */
static void collector_drain_last(int close)
{
    int saved = errno;
    prof_tls_busy++;
    if (collector_drain_lock(5000) == 0) {
        collector_drain(DRAIN_LAST);
        if (writer_is_open()) {
            collector_write_end();
            if (close)
                writer_close();
            else
                writer_flush();
        }
        collector_check_writer();
        if (close) { /* 2: the thread detaches itself, nobody joins it: the process is ending */
            prof_state_set(&prof_collector_running, 0);
            atomic_store(&collector_stop, 2);
        }
        collector_drain_unlock();
    }
    prof_tls_busy--;
    errno = saved;
}

void collector_finish(void)
{
    if (collector_pid != getpid())
        return; /* a vfork child shares our memory: leave it all to the parent */
    /* Every process writes its file, even one that recorded no event (a C MPI rank):
     * who it was (rank, host, role) and how long it ran. */
    int was = atomic_exchange(&collector_live, 0);
    prof_state_set(&prof_recording, 0);
    if (!was)
        return;
    collector_drain_last(1);
}

void collector_flush_for_exec(void)
{
    if (collector_pid != getpid())
        return; /* a vfork child shares our memory: leave it all to the parent */
    if (atomic_load(&collector_threads)) {
        collector_drain_last(0);
        return;
    }
    /* Nothing recorded before the exec (a shell, env, a launcher's wrapper): the file made
     * at load goes, the new image's is the process's trace. If the exec fails, a new one
     * is made as at load. */
    int saved = errno;
    if (writer_is_open() && collector_drain_lock(1000) == 0) {
        writer_discard();
        collector_metalog_offset = 0;
        collector_sources_fresh = 1;
        collector_drain_unlock();
    }
    errno = saved;
}

void collector_open_early(void)
{
    if (collector_pid != getpid() || !atomic_load(&collector_live))
        return;
    int saved = errno;
    if (collector_drain_lock(1000) == 0) {
        if (collector_ensure_file() == 0) {
            metalog_copy_out(&collector_metalog_offset, collector_write_bytes, 0);
            writer_flush();
        }
        collector_drain_unlock();
    }
    errno = saved;
}

int collector_flush_from_signal(int sig)
{
    /* A process that recorded nothing still leaves its file (who it was, how it ended):
     * `seq | head` ends seq by SIGPIPE before any event. */
    if (collector_pid != getpid())
        return -1;
    if (!atomic_load(&collector_live))
        return -1;
    int saved = errno;
    int rc = -1;
    if (collector_drain_lock(1000) == 0) {
        collector_drain(DRAIN_SIGNAL);
        /* The signal's default action ends the process next: its record ends here. */
        if (writer_is_open()) {
            collector_write_end_record(sig);
            rc = writer_flush();
        }
        collector_drain_unlock();
    }
    errno = saved;
    return rc;
}

void collector_atfork_prepare(void)
{
    static int said; /* children inherit it: said once per process tree */
    if (collector_under_sanitizer && !said++)
        collector_note("under a sanitizer (ASan, TSan) a forked child starts no collector "
                       "thread: its trace is written at its exit");
    collector_stop_thread();
    /* No drain may be under way in another thread (an exec or signal flush) either: the
     * child must get no lock held by a thread that does not exist there. */
    collector_drain_lock(2000);
    metalog_atfork_prepare();
}

void collector_atfork_parent(void)
{
    metalog_atfork_parent();
    if (atomic_load(&collector_drain_owner) == collector_gettid())
        collector_drain_unlock();
    if (atomic_load(&collector_keep))
        collector_resume();
}

void collector_atfork_child(void)
{
    metalog_atfork_child();
    atomic_store(&collector_drain_owner, 0);
    struct prof_thread *t = atomic_load(&collector_threads);
    while (t) {
        struct prof_thread *next = atomic_load_explicit(&t->next, memory_order_relaxed);
        collector_free_thread(t);
        t = next;
    }
    atomic_store(&collector_threads, NULL);
    prof_tls_thread = NULL;
    pthread_setspecific(collector_thread_key, NULL);
    writer_abandon();
    collector_metalog_offset = 0; /* the child's file gets every string and symbol again */
    collector_sources_fresh = 1;
    collector_written = collector_lost = 0;
    atomic_store(&collector_thread_started, 0);
    prof_state_set(&prof_collector_running, 0);
    atomic_store(&collector_stop, 0);
    atomic_store(&collector_open_failed, 0);
    collector_pid = getpid();
    collector_forked_child = 1;
    if (atomic_load(&collector_keep))
        collector_resume();
}
