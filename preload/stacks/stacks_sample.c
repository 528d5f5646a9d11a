/* Sampling mode (PROF_SAMPLE_HZ): every thread of the program gets a CPU-time timer
 * (timer_create on CLOCK_THREAD_CPUTIME_ID, delivered to that thread: SIGEV_THREAD_ID)
 * whose signal takes the thread's stack. The signal is STACKS_SAMPLE_SIGNAL, a real-time
 * signal that glibc and common runtimes leave alone; a program that installs its own
 * handler for it loses our samples, nothing else.
 *
 * The handler only does async-signal-safe work: libunwind's local unwind (warmed at
 * start), the lock-free stack table, and a write into the thread's own sample ring. That
 * ring has one producer, the handler (the signal is blocked while it runs), and the
 * collector drains it as a source: it is not the thread's event ring, whose reservation
 * the signal may have interrupted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "stacks.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define STACKS_SAMPLE_SIGNAL (SIGRTMIN + 5)
#define STACKS_SAMPLE_RING (64u * 1024u)

struct stacks_sampler {
    struct prof_ring ring;
    struct stacks_sampler *_Atomic next;
    uint32_t tid;
    _Atomic int exited;
    int has_timer;
    timer_t timer;
};

static long stacks_sample_hz;
static int stacks_sampling;
static struct stacks_sampler *_Atomic stacks_samplers;
static pthread_key_t stacks_sampler_key;
static __thread struct stacks_sampler *stacks_tls_sampler PROF_TLS;
static _Atomic uint64_t stacks_samples_dropped;

static void stacks_on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int saved = errno;
    struct stacks_sampler *s = stacks_tls_sampler;
    if (s && atomic_load_explicit(&prof_recording, memory_order_relaxed)) {
        uint64_t now = prof_clock_ticks();
        uint32_t id = stacks_capture(&s->ring, 0); /* the record has the node */
        struct prof_rec_sample *rec = ring_reserve(&s->ring, sizeof *rec);
        if (rec) {
            rec->h.type = PROF_REC_SAMPLE;
            rec->h.size = sizeof *rec;
            rec->stack_id = id;
            rec->ticks = now;
            rec->py_node = prof_current_py_node ? prof_current_py_node() : 0;
            rec->periods = 1u + (uint32_t)(si && si->si_overrun > 0 ? si->si_overrun : 0);
            ring_commit(&s->ring);
        } else {
            atomic_fetch_add_explicit(&stacks_samples_dropped, 1, memory_order_relaxed);
        }
    }
    errno = saved;
}

static int stacks_arm_timer(struct stacks_sampler *s)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = STACKS_SAMPLE_SIGNAL;
    sev._sigev_un._tid = (pid_t)s->tid;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &s->timer) != 0)
        return -1;
    s->has_timer = 1;
    long ns = 1000000000L / stacks_sample_hz;
    struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L},
                             {ns / 1000000000L, ns % 1000000000L}};
    return timer_settime(s->timer, 0, &its, NULL);
}

/* The calling thread gets its ring and its timer. Not from a signal handler. */
static void stacks_sampler_register(void)
{
    if (stacks_tls_sampler)
        return;
    size_t bytes = sizeof(struct stacks_sampler) + 64 + STACKS_SAMPLE_RING;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return;
    struct stacks_sampler *s = m;
    uint8_t *buffer = (uint8_t *)(((uintptr_t)(s + 1) + 63) & ~(uintptr_t)63);
    ring_init(&s->ring, buffer, STACKS_SAMPLE_RING);
    s->tid = (uint32_t)syscall(SYS_gettid);
    struct stacks_sampler *head = atomic_load(&stacks_samplers);
    do
        atomic_store_explicit(&s->next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&stacks_samplers, &head, s));
    stacks_tls_sampler = s;
    pthread_setspecific(stacks_sampler_key, s);
    /* A sampled thread is a thread of the trace even if it never makes a call we
     * intercept: registering it starts the collector, which writes the file. */
    emit_thread();
    if (stacks_arm_timer(s) != 0) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1))
            collector_note("sampling: cannot start a CPU-time timer for thread %u (%s); "
                           "that thread is not sampled",
                           s->tid, strerror(errno));
    }
}

/* Thread exit: the timer goes; the ring stays until the collector wrote it. */
static void stacks_sampler_exit(void *arg)
{
    struct stacks_sampler *s = arg;
    if (s->has_timer)
        timer_delete(s->timer);
    s->has_timer = 0;
    stacks_tls_sampler = NULL;
    atomic_store_explicit(&s->exited, 1, memory_order_release);
}

/* The collector's source: each thread's samples after a THREAD record. */
static void stacks_sample_drain(int fresh, int last)
{
    (void)fresh;
    (void)last;
    struct stacks_sampler *prev = NULL;
    for (struct stacks_sampler *s = atomic_load(&stacks_samplers); s;) {
        struct stacks_sampler *next = atomic_load_explicit(&s->next, memory_order_relaxed);
        int exited = atomic_load_explicit(&s->exited, memory_order_acquire);
        struct ring_span spans[2];
        uint64_t avail = ring_peek(&s->ring, spans);
        if (avail) {
            collector_write_thread(s->tid);
            collector_write(spans[0].data, spans[0].len);
            collector_write(spans[1].data, spans[1].len);
            ring_release(&s->ring, avail);
        }
        /* Only a node that is not the head is unlinked: new threads push at the head. */
        if (exited && prev) {
            atomic_store_explicit(&prev->next, next, memory_order_relaxed);
            munmap(s, sizeof(struct stacks_sampler) + 64 + STACKS_SAMPLE_RING);
            s = next;
            continue;
        }
        prev = s;
        s = next;
    }
}

/* ---- new threads: pthread_create starts them through a trampoline that arms a timer */

typedef int (*stacks_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                        void *);
static stacks_pthread_create_fn stacks_real_pthread_create;

struct stacks_trampoline {
    void *(*fn)(void *);
    void *arg;
};

static void *stacks_thread_start(void *p)
{
    struct stacks_trampoline t = *(struct stacks_trampoline *)p;
    free(p);
    stacks_sampler_register();
    return t.fn(t.arg);
}

static int stacks_is_ours(const void *addr)
{
    Dl_info self, other;
    return dladdr((void *)stacks_is_ours, &self) && dladdr(addr, &other) &&
           self.dli_fbase == other.dli_fbase;
}

PROF_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                               void *(*start_routine)(void *), void *arg)
{
    stacks_pthread_create_fn real = stacks_real_pthread_create;
    if (!real) {
        real = (stacks_pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (!real)
            return EAGAIN;
        stacks_real_pthread_create = real;
    }
    /* The profiler's own threads (the collector) are not sampled. */
    if (!stacks_sampling || stacks_is_ours(__builtin_return_address(0)))
        return real(thread, attr, start_routine, arg);
    struct stacks_trampoline *t = malloc(sizeof *t);
    if (!t)
        return real(thread, attr, start_routine, arg);
    t->fn = start_routine;
    t->arg = arg;
    int rc = real(thread, attr, stacks_thread_start, t);
    if (rc != 0)
        free(t);
    return rc;
}

int stacks_sample_start(long hz)
{
    stacks_sample_hz = hz;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = stacks_on_sample;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (sigaction(STACKS_SAMPLE_SIGNAL, &sa, NULL) != 0 ||
        pthread_key_create(&stacks_sampler_key, stacks_sampler_exit) != 0) {
        collector_note("sampling is off: cannot install its signal handler");
        return -1;
    }
    collector_add_source(stacks_sample_drain);
    char text[32];
    snprintf(text, sizeof text, "%ld", hz);
    collector_add_meta("sample_hz", text);
    snprintf(text, sizeof text, "%d", STACKS_SAMPLE_SIGNAL);
    collector_add_meta("sample_signal", text);
    stacks_sampling = 1;
    stacks_sampler_register(); /* the main thread */
    return 0;
}

void stacks_sample_after_fork_child(void)
{
    if (!stacks_sampling)
        return;
    /* Only this thread goes on, without timers (POSIX timers are not inherited); the
     * samples in the rings are the parent's, in the parent's file. */
    struct stacks_sampler *self = stacks_tls_sampler;
    for (struct stacks_sampler *s = atomic_load(&stacks_samplers); s;) {
        struct stacks_sampler *next = atomic_load_explicit(&s->next, memory_order_relaxed);
        if (s != self)
            munmap(s, sizeof(struct stacks_sampler) + 64 + STACKS_SAMPLE_RING);
        s = next;
    }
    atomic_store(&stacks_samplers, self);
    if (!self)
        return;
    atomic_store(&self->next, NULL);
    ring_init(&self->ring, self->ring.data, STACKS_SAMPLE_RING);
    self->tid = (uint32_t)syscall(SYS_gettid);
    self->has_timer = 0;
    stacks_arm_timer(self);
    emit_thread(); /* the child's collector knows no thread yet: it writes the child's file */
}
