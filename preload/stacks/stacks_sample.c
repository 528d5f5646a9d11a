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
 * the signal may have interrupted.
 *
 * A thread started later gets its sampler and timer from the thread that started it,
 * right after the real pthread_create returned; the new thread runs no code of ours
 * before its start routine. (A trampoline start routine did, and under a sanitizer, whose
 * pthread_create comes before ours and registers the new thread only in its own start
 * routine, that code ran in a thread the sanitizer did not know yet: ASan reported
 * stack-buffer-overflows "in thread T-1" on the stale shadow of a reused stack, and
 * failed its own CHECKs.) Ended threads are found by the collector (tgkill 0: ESRCH),
 * which deletes their timer and unmaps their ring once written. */
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
#include "resolve.h"
#include "stacks.h"
#include "stacks_python.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define STACKS_SAMPLE_SIGNAL (SIGRTMIN + 5)
#define STACKS_SAMPLE_RING (64u * 1024u)

struct stacks_sampler {
    struct prof_ring ring;
    struct stacks_sampler *_Atomic next;
    uint32_t tid;
    _Atomic int exited; /* the thread is gone and its timer deleted: unmapped once drained */
    int has_timer;
    timer_t timer;
    struct stacks_py_cache py; /* the handler's own: code objects this thread defined */
};

#define STACKS_SAMPLER_BYTES (sizeof(struct stacks_sampler) + 64 + STACKS_SAMPLE_RING)
/* The collector looks for samplers whose thread has ended every this many passes. */
#define STACKS_REAP_PASSES 16u

static long stacks_sample_hz;
static int stacks_sampling;
static struct stacks_sampler *_Atomic stacks_samplers;
static __thread struct stacks_sampler *stacks_tls_sampler PROF_TLS;
static _Atomic uint64_t stacks_samples_dropped;
uint32_t (*stacks_current_torch_op)(void);
uint32_t (*stacks_current_nvtx_range)(void);

/* A thread's sampler reaches it through its first signal (si_value): a thread started
 * later runs none of our code before its own start routine, whatever runs that routine
 * (a sanitizer's pthread_create calls ours and registers the thread only inside the new
 * thread). A signal whose timer is not this thread's (a tid read from a thread that had
 * already ended) takes no sample. */
static struct stacks_sampler *stacks_handler_sampler(const siginfo_t *si)
{
    struct stacks_sampler *s = stacks_tls_sampler;
    struct stacks_sampler *from = si && si->si_code == SI_TIMER ? si->si_value.sival_ptr : NULL;
    if (s)
        return !from || from == s ? s : NULL;
    if (!from || from->tid != (uint32_t)syscall(SYS_gettid))
        return NULL;
    stacks_tls_sampler = from;
    return from;
}

static void stacks_on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
    struct stacks_sampler *s = stacks_handler_sampler(si);
    if (s && atomic_load_explicit(&prof_recording, memory_order_relaxed)) {
        uint64_t now = prof_clock_ticks();
        uint32_t id = stacks_capture_in_signal(
            &s->ring, 0, uc, __builtin_return_address(0)); /* the record has the node */
        uint32_t py_node = prof_current_py_node ? prof_current_py_node() : 0;
        /* No call-tree node (PROF_PYTHON=0): the thread's frames, read here (SAMPLE_PY) */
        if (!py_node && stacks_python_on)
            stacks_python_sample(&s->ring, &s->py, now);
        struct prof_rec_sample *rec = ring_reserve(&s->ring, sizeof *rec);
        if (rec) {
            rec->h.type = PROF_REC_SAMPLE;
            rec->h.size = sizeof *rec;
            rec->stack_id = id;
            rec->ticks = now;
            rec->py_node = py_node;
            rec->periods = 1u + (uint32_t)(si && si->si_overrun > 0 ? si->si_overrun : 0);
            rec->op_sid = stacks_current_torch_op ? stacks_current_torch_op() : 0;
            rec->nvtx_sid = stacks_current_nvtx_range ? stacks_current_nvtx_range() : 0;
            ring_commit(&s->ring);
        } else {
            atomic_fetch_add_explicit(&stacks_samples_dropped, 1, memory_order_relaxed);
        }
    }
    errno = saved;
}

/* A sampler for thread tid, in the list; NULL without memory. */
static struct stacks_sampler *stacks_sampler_new(uint32_t tid)
{
    void *m = mmap(NULL, STACKS_SAMPLER_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct stacks_sampler *s = m;
    uint8_t *buffer = (uint8_t *)(((uintptr_t)(s + 1) + 63) & ~(uintptr_t)63);
    ring_init(&s->ring, buffer, STACKS_SAMPLE_RING);
    s->tid = tid;
    struct stacks_sampler *head = atomic_load(&stacks_samplers);
    do
        atomic_store_explicit(&s->next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&stacks_samplers, &head, s));
    return s;
}

/* The timer on `clock` (the CPU time of s's thread) that signals that thread. From any
 * thread of the process: the kernel takes a thread of the same group as the target. */
static int stacks_arm_timer(struct stacks_sampler *s, clockid_t clock)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = STACKS_SAMPLE_SIGNAL;
    sev.sigev_value.sival_ptr = s;
    sev._sigev_un._tid = (pid_t)s->tid;
    if (timer_create(clock, &sev, &s->timer) != 0)
        return -1;
    s->has_timer = 1;
    long ns = 1000000000L / stacks_sample_hz;
    struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L},
                             {ns / 1000000000L, ns % 1000000000L}};
    return timer_settime(s->timer, 0, &its, NULL);
}

static void stacks_note_no_timer(uint32_t tid)
{
    static _Atomic int said;
    if (!atomic_exchange(&said, 1))
        collector_note("sampling: cannot start a CPU-time timer for thread %u (%s); "
                       "that thread is not sampled",
                       tid, strerror(errno));
}

/* The calling thread (main, or a forked child's only thread): its sampler and timer. */
static void stacks_sampler_register_self(void)
{
    struct stacks_sampler *s = stacks_sampler_new((uint32_t)syscall(SYS_gettid));
    if (!s)
        return;
    stacks_tls_sampler = s;
    /* A sampled thread is a thread of the trace even if it never makes a call we
     * intercept: registering it starts the collector, which writes the file. */
    emit_thread();
    if (stacks_arm_timer(s, CLOCK_THREAD_CPUTIME_ID) != 0)
        stacks_note_no_timer(s->tid);
}

/* Linux names a thread's CPU clock by its tid (CPUCLOCK_PID: ~(clock >> 3)): the
 * thread that pthread_create just started, without running code in it. */
static void stacks_sampler_register_thread(pthread_t thread)
{
    clockid_t clock;
    if (pthread_getcpuclockid(thread, &clock) != 0 || (clock & 7) != 6)
        return; /* 6: a per-thread (4) scheduler-time (2) clock */
    pid_t tid = (pid_t) ~(clock >> 3);
    if (tid <= 0)
        return;
    struct stacks_sampler *s = stacks_sampler_new((uint32_t)tid);
    if (s && stacks_arm_timer(s, clock) != 0) {
        /* ESRCH/EINVAL: the thread has already ended; the next pass unmaps it */
        if (errno != EINVAL && errno != ESRCH)
            stacks_note_no_timer(s->tid);
        if (s->has_timer)
            timer_delete(s->timer);
        s->has_timer = 0;
        atomic_store_explicit(&s->exited, 1, memory_order_release);
    }
}

/* A thread that has ended (it is no more a task of this process) loses its timer. Never
 * its ring: the pass unmaps it after writing what it holds. */
static void stacks_sampler_reap(struct stacks_sampler *s, pid_t pid)
{
    if (atomic_load_explicit(&s->exited, memory_order_acquire) || s->tid == (uint32_t)pid)
        return;
    if (syscall(SYS_tgkill, pid, (pid_t)s->tid, 0) == 0 || errno != ESRCH)
        return;
    if (s->has_timer)
        timer_delete(s->timer);
    s->has_timer = 0;
    atomic_store_explicit(&s->exited, 1, memory_order_release);
}

/* The collector's source: each thread's samples after a THREAD record. */
static void stacks_sample_drain(int fresh, int last)
{
    (void)fresh;
    static unsigned pass;
    /* A crash's drain frees nothing; at the end of the process nothing needs it. */
    int reap = !last && !collector_drain_in_signal() && pass++ % STACKS_REAP_PASSES == 0;
    pid_t pid = getpid();
    struct stacks_sampler *prev = NULL;
    for (struct stacks_sampler *s = atomic_load(&stacks_samplers); s;) {
        struct stacks_sampler *next = atomic_load_explicit(&s->next, memory_order_relaxed);
        if (reap)
            stacks_sampler_reap(s, pid);
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
        if (exited && prev && !collector_drain_in_signal()) {
            atomic_store_explicit(&prev->next, next, memory_order_relaxed);
            munmap(s, STACKS_SAMPLER_BYTES);
            s = next;
            continue;
        }
        prev = s;
        s = next;
    }
}

/* ---- threads started later: pthread_create arms their timer from the creating thread */

typedef int (*stacks_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                        void *);
static stacks_pthread_create_fn stacks_real_pthread_create;

static int stacks_is_ours(const void *addr)
{
    Dl_info self, other;
    return dladdr((void *)stacks_is_ours, &self) && dladdr(addr, &other) &&
           self.dli_fbase == other.dli_fbase;
}

static void stacks_after_pthread_create(pthread_t thread, const void *caller)
{
    /* The profiler's own threads (the collector) are not sampled. */
    if (prof_tls_busy || stacks_is_ours(caller))
        return;
    int saved = errno;
    stacks_sampler_register_thread(thread);
    errno = saved;
}

/* Uninstrumented (resolve.h): ThreadSanitizer's runtime calls it as its real one, also
 * for its own thread while it starts. */
PROF_EXPORT PROF_UNINSTRUMENTED int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                                   void *(*start_routine)(void *), void *arg)
{
    stacks_pthread_create_fn real = stacks_real_pthread_create;
    if (!real) {
        real = (stacks_pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (!real)
            return EAGAIN;
        stacks_real_pthread_create = real;
    }
    int rc = real(thread, attr, start_routine, arg);
    if (rc == 0 && stacks_sampling)
        stacks_after_pthread_create(*thread, __builtin_return_address(0));
    return rc;
}

int stacks_sample_start(long hz)
{
    stacks_sample_hz = hz;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = stacks_on_sample;
    /* every signal waits for the handler (at most its sample's time): libunwind's locks
     * are taken with them blocked (stacks_unwind_sigprocmask) */
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (sigaction(STACKS_SAMPLE_SIGNAL, &sa, NULL) != 0) {
        collector_note("sampling is off: cannot install its signal handler");
        return -1;
    }
    collector_add_source(stacks_sample_drain);
    char text[32];
    snprintf(text, sizeof text, "%ld", hz);
    collector_add_meta("sample_hz", text);
    snprintf(text, sizeof text, "%d", STACKS_SAMPLE_SIGNAL);
    collector_add_meta("sample_signal", text);
    stacks_python_start();
    stacks_sampling = 1;
    stacks_sampler_register_self(); /* the main thread */
    return 0;
}

void stacks_sample_after_fork_child(void)
{
    if (!stacks_sampling)
        return;
    /* Only this thread goes on, without timers (POSIX timers are not inherited) and so
     * without signals; the samples in the rings are the parent's, in the parent's file. */
    stacks_tls_sampler = NULL;
    for (struct stacks_sampler *s = atomic_load(&stacks_samplers); s;) {
        struct stacks_sampler *next = atomic_load_explicit(&s->next, memory_order_relaxed);
        munmap(s, STACKS_SAMPLER_BYTES);
        s = next;
    }
    atomic_store(&stacks_samplers, NULL);
    /* the child's collector knows no thread yet: this writes the child's file */
    stacks_sampler_register_self();
}
