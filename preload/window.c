/* Capture windows. Three ways to open and close recording, which can be combined:
 *
 *   PROF_STEPS=A-B       steps counted from 0; step k ends when the k-th outermost call of
 *                        a step function returns (torch.optim's Optimizer.step by default,
 *                        or the Python function PROF_STEP_FUNC names). The window opens
 *                        when step A-1 ends (at the start for A = 0) and closes when step
 *                        B ends: steps A..B are recorded, B-A+1 of them.
 *   PROF_DELAY, PROF_DURATION   seconds: open after the delay, close after the duration.
 *                        Checked on the collector's passes (every PROF_FLUSH_MS).
 *   PROF_WINDOW_SIGNAL   each delivery turns recording on or off; recording starts off.
 *                        While the program sets its own handler for that signal, the
 *                        program's runs instead and the window stays as it is.
 *
 * A forked child (a DataLoader worker) starts in its parent's state and then follows the
 * parent's openings and closings, seen through a shared page on its collector's passes
 * (every PROF_FLUSH_MS): it sees no step of its own.
 *
 * Every opening and closing is written into the trace as META window_open/window_close
 * ("<realtime ns> <why>"), with META window (the settings) and window_steps (steps
 * recorded), so that the report says which part of the run it shows. */
#define _GNU_SOURCE
#include "window.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "lifecycle.h"
#include "settings.h"
#include "trace_format.h"

int window_steps_on;
int window_active;
_Atomic int window_steps_by_torch;
_Atomic uint64_t window_torch_steps;
_Atomic int window_torch_steps_counted;
_Atomic unsigned window_closings;
static _Atomic uint64_t window_close_ticks[64];
_Atomic(window_observer_fn) window_observer;
_Atomic(window_observer_fn) window_step_observer;
static long window_first_step, window_last_step;
static long window_steps_done;             /* steps ended so far (window_step_lock) */
static uint64_t window_steps_not_before;   /* realtime ns: no step opens before (the lock) */
static _Atomic long window_steps_recorded; /* of which while recording */
static int window_steps_publish_fd = -1;   /* each step's end written there (the lock) */
static uint64_t window_steps_prev_end;     /* realtime ns of the step end before (the lock) */
_Atomic(window_step_fn) window_step_pre;
static int window_signal;
static double window_delay_s = -1, window_duration_s = -1;
static uint64_t window_start_ns;      /* CLOCK_MONOTONIC at init */
static _Atomic int window_time_state; /* 0 before the delay, 1 open, 2 past the duration */
static char window_desc[160];

enum window_why {
    WINDOW_WHY_START,
    WINDOW_WHY_STEP,
    WINDOW_WHY_TIME,
    WINDOW_WHY_SIGNAL,
    WINDOW_WHY_PARENT,
    WINDOW_WHY_ATTACH
};

/* The window's state where forked children see it: a DataLoader worker sees no step of
 * its own, so it follows its parent's window (within one collector pass). One shared
 * page per process: ours (1 while recording), and in a forked child the parent's. */
static _Atomic int *window_page, *window_parent_page;
static int window_parent_seen;

static _Atomic int *window_new_page(int open)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    atomic_store((_Atomic int *)p, open);
    return p;
}

/* Openings and closings, appended by the thread that switches (a signal handler too:
 * slots are claimed with an atomic counter and published with `ready`). */
#define WINDOW_MAX_SWITCHES 256
static struct window_switch {
    uint64_t realtime_ns;
    long value; /* the step, or the signal */
    uint64_t torch_steps; /* optimizer steps ended before an opening; UINT64_MAX: unknown */
    uint8_t open, why;
    _Atomic int ready;
} window_switches[WINDOW_MAX_SWITCHES];
static _Atomic unsigned window_nswitches;
static unsigned window_written; /* switches written to the current file (drain-lock holder) */

static uint64_t window_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The switch itself and its record (time and slot taken first, so that a switch's record
 * never follows a later one's while an observer waits for the GIL); the observers after.
 * The time written is inside the recording: a closing's before it stops, an opening's
 * after it starts. */
static void window_switch_record(int open, enum window_why why, long value)
{
    uint64_t realtime_ns = open ? 0 : window_realtime_ns();
    if (!open) { /* the edge first, then the count that makes it visible */
        unsigned n = atomic_load(&window_closings) + 1;
        atomic_store(&window_close_ticks[n % 64], prof_clock_ticks());
        atomic_store(&window_closings, n);
    }
    collector_set_recording(open);
    if (window_page)
        atomic_store(window_page, open);
    unsigned i = atomic_fetch_add(&window_nswitches, 1);
    if (i >= WINDOW_MAX_SWITCHES)
        return;
    struct window_switch *s = &window_switches[i];
    s->realtime_ns = open ? window_realtime_ns() : realtime_ns;
    s->value = value;
    /* (an attached library saw none of the steps before it) */
    s->torch_steps = atomic_load(&window_torch_steps_counted) && why != WINDOW_WHY_ATTACH
                         ? atomic_load(&window_torch_steps)
                         : UINT64_MAX;
    s->open = (uint8_t)open;
    s->why = (uint8_t)why;
    atomic_store_explicit(&s->ready, 1, memory_order_release);
}

static void window_notify(int open, enum window_why why)
{
    /* not at a fork (the child's interpreter is not yet fit for it) nor at a step */
    window_observer_fn observer = atomic_load(&window_observer);
    if (observer && (why == WINDOW_WHY_SIGNAL || why == WINDOW_WHY_TIME ||
                     why == WINDOW_WHY_PARENT || why == WINDOW_WHY_ATTACH))
        observer(open, why == WINDOW_WHY_SIGNAL);
    observer = atomic_load(&window_step_observer);
    if (observer && why == WINDOW_WHY_STEP && atomic_load(&window_steps_by_torch))
        observer(open, 0);
}

static void window_switch(int open, enum window_why why, long value)
{
    window_switch_record(open, why, value);
    window_notify(open, why);
}

/* Steps may end on several threads at once (the PyTorch layer counts them without the
 * GIL): a step's number, the state it sees and the switch it makes are taken together. */
static pthread_mutex_t window_step_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t window_close_edge(unsigned n)
{
    return n ? atomic_load(&window_close_ticks[n % 64]) : 0;
}

/* "<previous step end> <this step end>\n", realtime ns, fixed width, at the file's start:
 * profrun attach reads the ranks' step ends from it to put their common start between two
 * steps. */
static void window_step_publish(void)
{
    uint64_t now = window_realtime_ns();
    char line[48];
    int n = snprintf(line, sizeof line, "%020llu %020llu\n",
                     (unsigned long long)window_steps_prev_end, (unsigned long long)now);
    window_steps_prev_end = now;
    if (n > 0 && pwrite(window_steps_publish_fd, line, (size_t)n, 0) != n) {
        close(window_steps_publish_fd); /* a full disk: profrun falls back to a time */
        window_steps_publish_fd = -1;
    }
}

void window_step_done(void)
{
    window_step_fn pre = atomic_load(&window_step_pre);
    if (pre) /* may arm the window for the step ending now (window_attach_steps) */
        pre();
    pthread_mutex_lock(&window_step_lock);
    if (window_steps_publish_fd >= 0)
        window_step_publish();
    long k = window_steps_done++;
    int open = atomic_load_explicit(&prof_recording, memory_order_relaxed);
    if (open)
        atomic_fetch_add(&window_steps_recorded, 1);
    int switched = -1;
    if (window_steps_on && !open && k + 1 == window_first_step && window_steps_not_before &&
        window_realtime_ns() < window_steps_not_before) {
        window_first_step++; /* too early: the window moves on by one step */
        window_last_step++;
    } else if (window_steps_on && !open && k + 1 == window_first_step)
        window_switch_record(switched = 1, WINDOW_WHY_STEP, k + 1);
    else if (window_steps_on && open && k == window_last_step)
        window_switch_record(switched = 0, WINDOW_WHY_STEP, k);
    pthread_mutex_unlock(&window_step_lock);
    if (switched >= 0) /* outside the lock: the observer may wait for the GIL */
        window_notify(switched, WINDOW_WHY_STEP);
}

static void window_on_signal(int sig)
{
    int open = atomic_load(&prof_recording);
    window_switch(!open, WINDOW_WHY_SIGNAL, sig);
}

static uint64_t window_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* On the collector's passes: the time window. */
static void window_check_time(void)
{
    int state = atomic_load(&window_time_state);
    if (state == 2 || (window_delay_s < 0 && window_duration_s < 0))
        return;
    double t = (double)(window_now_ns() - window_start_ns) / 1e9;
    double delay = window_delay_s > 0 ? window_delay_s : 0;
    if (state == 0 && t >= delay) {
        atomic_store(&window_time_state, 1);
        window_switch(1, WINDOW_WHY_TIME, (long)(t * 1000));
        state = 1;
    }
    if (state == 1 && window_duration_s >= 0 && t >= delay + window_duration_s) {
        atomic_store(&window_time_state, 2);
        window_switch(0, WINDOW_WHY_TIME, (long)(t * 1000));
    }
}

static void window_write_meta(const char *key, const char *value)
{
    char rec[256];
    size_t kl = strlen(key) + 1, vl = strlen(value) + 1, hl = sizeof(struct prof_record_header);
    if (hl + kl + vl > sizeof rec)
        return;
    memset(rec, 0, sizeof rec);
    memcpy(rec + hl, key, kl);
    memcpy(rec + hl + kl, value, vl);
    uint32_t size = prof_record_align((uint32_t)(hl + kl + vl));
    struct prof_record_header *h = (struct prof_record_header *)rec;
    h->type = PROF_REC_META;
    h->size = (uint16_t)size;
    collector_write(rec, size);
}

static const char *const window_why_names[] = {"start",  "step",   "time",
                                               "signal", "parent", "attach"};

/* In a forked child: the parent opened or closed its window since we last looked. */
static void window_follow_parent(void)
{
    if (!window_parent_page)
        return;
    int open = atomic_load(window_parent_page);
    if (open == window_parent_seen)
        return;
    window_parent_seen = open;
    if (open != atomic_load(&prof_recording))
        window_switch(open, WINDOW_WHY_PARENT, (long)getppid());
}

static void window_drain(int fresh, int last)
{
    window_check_time();
    window_follow_parent();
    if (fresh) {
        window_written = 0;
        window_write_meta("window", window_desc);
    }
    unsigned n = atomic_load(&window_nswitches);
    if (n > WINDOW_MAX_SWITCHES)
        n = WINDOW_MAX_SWITCHES;
    for (; window_written < n; window_written++) {
        struct window_switch *s = &window_switches[window_written];
        if (!atomic_load_explicit(&s->ready, memory_order_acquire))
            break; /* a signal handler is filling it in: next pass */
        char v[128];
        int len = snprintf(v, sizeof v, "%llu %s %ld", (unsigned long long)s->realtime_ns,
                           window_why_names[s->why], s->value);
        if (s->open && s->torch_steps != UINT64_MAX && len > 0 && (size_t)len < sizeof v)
            snprintf(v + len, sizeof v - (size_t)len, " %llu",
                     (unsigned long long)s->torch_steps);
        window_write_meta(s->open ? "window_open" : "window_close", v);
    }
    if (last && window_steps_on) {
        char v[32];
        snprintf(v, sizeof v, "%ld", atomic_load(&window_steps_recorded));
        window_write_meta("window_steps", v);
    }
}

/* "USR2", "SIGUSR2", "RTMIN+3", "12": the signal number, or -1. */
static int window_parse_signal(const char *s)
{
    if (!strncmp(s, "SIG", 3))
        s += 3;
    char *end;
    if (!strcmp(s, "USR1"))
        return SIGUSR1;
    if (!strcmp(s, "USR2"))
        return SIGUSR2;
    if (!strncmp(s, "RTMIN", 5)) {
        long k = s[5] == '+' ? strtol(s + 6, &end, 10) : (s[5] ? -1 : 0);
        if (k < 0 || (s[5] == '+' && *end) || SIGRTMIN + k > SIGRTMAX)
            return -1;
        return SIGRTMIN + (int)k;
    }
    for (int sig = 1; sig < SIGRTMIN; sig++) { /* the other names: TERM, CHLD, ... */
        const char *name = sigabbrev_np(sig);
        if (name && !strcmp(s, name))
            return sig;
    }
    long n = strtol(s, &end, 10);
    return *s && !*end && n > 0 && n < NSIG ? (int)n : -1;
}

/* Why sig cannot toggle the window, or NULL: only a signal that nothing but the user
 * sends, and that the program does not use, can (USR1, USR2, RTMIN+N, ...). */
static const char *window_signal_refused(int sig)
{
    switch (sig) {
    case SIGKILL:
    case SIGSTOP:
        return "cannot be caught";
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGABRT:
    case SIGTRAP:
    case SIGSYS:
        return "reports a fault or an abort of the program";
    case SIGINT:
    case SIGTERM:
    case SIGHUP:
    case SIGQUIT:
        return "asks the program to stop (the profiler writes its trace on it)";
    case SIGCHLD:
    case SIGCONT:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGWINCH:
    case SIGURG:
        return "is sent by the system on its own (a child's end, job control, the terminal, "
               "a socket)";
    case SIGPIPE:
    case SIGALRM:
    case SIGVTALRM:
    case SIGPROF:
    case SIGXCPU:
    case SIGXFSZ:
        return "comes from the program's own activity (a closed pipe, a timer, a limit)";
    default:
        break;
    }
    if (sig == SIGRTMIN + 5)
        return "is the profiler's own sampling signal";
    return NULL;
}

/* A-B, 0 <= A <= B. */
static int window_parse_steps(const char *s, long *a, long *b)
{
    char *end;
    *a = strtol(s, &end, 10);
    if (end == s || *end != '-' || *a < 0)
        return -1;
    const char *t = end + 1;
    *b = strtol(t, &end, 10);
    return end == t || *end || *b < *a ? -1 : 0;
}

/* Seconds >= 0, or -1 when unset or bad (said). */
static double window_parse_seconds(enum prof_setting_id id)
{
    if (!settings_is_set(id))
        return -1;
    double v;
    if (settings_parse_seconds(settings_string(id), &v) != 0) {
        collector_note("%s=%s is not a number of seconds (accepted: digits with an optional "
                       "fraction, as 2 or 0.5); ignored",
                       settings_table[id].name, settings_string(id));
        return -1;
    }
    return v;
}

static void window_after_fork_child(void)
{
    /* another thread of the parent may have held it at the fork */
    pthread_mutex_init(&window_step_lock, NULL);
    window_steps_publish_fd = -1; /* the parent's: not this process's steps */
    atomic_store(&window_step_pre, NULL);
    /* The child's file tells its own switches; it starts in the parent's state, then
     * follows the parent's window on the collector's passes. */
    int open = atomic_load(&prof_recording);
    window_parent_page = window_page;
    window_parent_seen = open;
    window_page = window_new_page(open);
    atomic_store(&window_nswitches, 0);
    if (open)
        window_switch(1, WINDOW_WHY_START, 0);
    if (window_parent_page)
        collector_keep_running();
}

void window_init(void)
{
    size_t used = 0;
    int closed = 0;
    window_desc[0] = '\0';
    if (settings_is_set(SETTING_PROF_STEPS)) {
        if (window_parse_steps(settings_string(SETTING_PROF_STEPS), &window_first_step,
                               &window_last_step) != 0) {
            collector_note("PROF_STEPS=%s is not A-B (0 <= A <= B); recording every step",
                           settings_string(SETTING_PROF_STEPS));
        } else {
            window_steps_on = 1;
            closed |= window_first_step > 0;
            used += (size_t)snprintf(window_desc + used, sizeof window_desc - used,
                                     "steps %ld-%ld (%s)", window_first_step, window_last_step,
                                     settings_is_set(SETTING_PROF_STEP_FUNC)
                                         ? settings_string(SETTING_PROF_STEP_FUNC)
                                         : "optimizer step");
        }
    }
    window_delay_s = window_parse_seconds(SETTING_PROF_DELAY);
    window_duration_s = window_parse_seconds(SETTING_PROF_DURATION);
    if (window_delay_s >= 0 || window_duration_s >= 0) {
        window_start_ns = window_now_ns();
        closed |= window_delay_s > 0;
        char duration[48] = "to the end";
        if (window_duration_s >= 0)
            snprintf(duration, sizeof duration, "duration %.3g s", window_duration_s);
        used += (size_t)snprintf(window_desc + used, sizeof window_desc - used,
                                 "%stime: delay %.3g s, %s", used ? "; " : "",
                                 window_delay_s > 0 ? window_delay_s : 0.0, duration);
        collector_keep_running();
    }
    if (settings_is_set(SETTING_PROF_WINDOW_SIGNAL)) {
        int sig = window_parse_signal(settings_string(SETTING_PROF_WINDOW_SIGNAL));
        const char *refused = sig < 0 ? NULL : window_signal_refused(sig);
        if (sig < 0) {
            collector_note("PROF_WINDOW_SIGNAL=%s is no signal; ignored",
                           settings_string(SETTING_PROF_WINDOW_SIGNAL));
        } else if (refused) {
            collector_note("PROF_WINDOW_SIGNAL=%s: signal %d %s, so it cannot open and close the "
                           "capture window (use USR1, USR2 or RTMIN+N); ignored",
                           settings_string(SETTING_PROF_WINDOW_SIGNAL), sig, refused);
        } else if (lifecycle_manage_signal(sig, window_on_signal) != 0) {
            collector_note("signal %d is handled or ignored by the program: it cannot open the "
                           "capture window",
                           sig);
        } else {
            window_signal = sig;
            closed = 1;
            used += (size_t)snprintf(window_desc + used, sizeof window_desc - used,
                                     "%ssignal %d toggles", used ? "; " : "", sig);
        }
    }
    if (!window_desc[0])
        return; /* no window: the whole run, and nothing written */
    window_active = 1;
    window_page = window_new_page(!closed);
    if (closed)
        collector_set_recording(0);
    else
        window_switch(1, WINDOW_WHY_START, 0);
    collector_add_source(window_drain);
    pthread_atfork(NULL, NULL, window_after_fork_child);
}

/* ---- profrun attach (attach.c): windows opened and closed from outside ---- */

void window_init_attached(const char *desc)
{
    window_active = 1;
    snprintf(window_desc, sizeof window_desc, "%s", desc);
    window_page = window_new_page(0);
    collector_set_recording(0);
    collector_add_source(window_drain);
    pthread_atfork(NULL, NULL, window_after_fork_child);
}

void window_attach_switch(int open, long value)
{
    window_switch(open, WINDOW_WHY_ATTACH, value);
}

int window_attach_steps(long steps, uint64_t not_before_realtime_ns)
{
    pthread_mutex_lock(&window_step_lock);
    int first = !window_steps_on;
    window_first_step = window_steps_done + 1; /* from the end of the step under way */
    window_last_step = window_steps_done + steps;
    window_steps_not_before = not_before_realtime_ns;
    window_steps_on = 1;
    atomic_store(&window_steps_recorded, 0);
    pthread_mutex_unlock(&window_step_lock);
    return first;
}

void window_attach_steps_after(uint64_t not_before_realtime_ns)
{
    pthread_mutex_lock(&window_step_lock);
    window_steps_not_before = not_before_realtime_ns;
    pthread_mutex_unlock(&window_step_lock);
}

int window_attach_publish(int fd)
{
    pthread_mutex_lock(&window_step_lock);
    int old = window_steps_publish_fd;
    window_steps_publish_fd = fd;
    window_steps_prev_end = 0;
    pthread_mutex_unlock(&window_step_lock);
    return old;
}

void window_attach_steps_off(void)
{
    pthread_mutex_lock(&window_step_lock);
    window_first_step = window_last_step = -1;
    window_steps_not_before = 0;
    window_steps_on = 1;
    pthread_mutex_unlock(&window_step_lock);
}

long window_attach_steps_recorded(void)
{
    return atomic_load(&window_steps_recorded);
}
