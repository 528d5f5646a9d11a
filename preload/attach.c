/* profrun attach, the library's side. scripts/attach.c loads libprof.so into a running
 * process with dlopen, from a thread of its own named "profrun-attach", then calls
 * prof_attach_start with a settings block. The constructor sees that name and does only
 * what the interposed functions need (the layers' load hooks); prof_attach_start then
 * starts everything the constructor would, with the settings read from the block, never
 * from the program's environment (which stays untouched), and a capture window that starts
 * closed. The window opens when the Python layer's hook is in place (a pending call in the
 * main thread; at once without Python) and closes after attach.duration seconds, after
 * attach.steps optimizer steps (from the end of the step under way: the PROF_STEPS logic),
 * when the attacher creates attach.stop, or when the attacher is gone. With
 * attach.start_after (several processes attached one after the other: --children-of,
 * --slurm-job) it opens only from that time, on a collector pass: every rank's window
 * begins within one pass of the others; with attach.steps, at the end of the first step
 * that ends from that time, seen by the thread that ends it: ranks whose steps end together
 * (DDP) record the same steps. Two collector passes
 * after the closing (the window's META records and the Python trees are then on disk) the
 * library creates attach.done: profrun prints the report.
 *
 * What records after attach: Python (every thread, as at a capture window's opening),
 * PyTorch ops (the bridge's global callback), CUPTI (activity and callback APIs enabled at
 * attach), and the calls of CUDA runtime, cuBLAS, cuDNN, NCCL and MPI from the objects
 * loaded at attach: their GOT entries, bound to the real functions already, are pointed
 * at our wrappers (attach_got.c).
 *
 * A second attach reuses the loaded library (dlopen returns it) and opens a new window
 * into the same trace file; a process started under the preload with its window closed
 * (PROF_WINDOW_SIGNAL, PROF_DELAY) is attached the same way. */
#define _GNU_SOURCE
#include "attach.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#ifdef PROF_HAVE_CUDA
#include "cupti_sub.h"
#endif
#include "settings.h"
#include "window.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define ATTACH_THREAD_NAME "profrun-attach"
#define ATTACH_MAX_KEYS 64
#define ATTACH_OPEN_GRACE_S 3.0

static int attach_loaded;   /* the constructor ran for profrun attach */
static int attach_in_start; /* init_begin under way from prof_attach_start */
static int attach_source_added;
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first attach's block: settings_load reads from it (its pointers stay valid). */
static char attach_text[16384];
static const char *attach_keys[ATTACH_MAX_KEYS], *attach_values[ATTACH_MAX_KEYS];
static int attach_nkeys;

/* The window asked for by the latest attach. state: 0 idle, 1 waiting to open, 2 open,
 * 3 closed (the records go out on this pass), 4 done written next pass. */
static _Atomic int attach_state;
static double attach_duration = -1;
static long attach_steps;
static pid_t attach_attacher;
static char attach_done_path[4096], attach_stop_path[4096], attach_start_path[4096];
static _Atomic int attach_start_pending; /* attach.start not read yet */
static uint64_t attach_asked_ns;
static _Atomic uint64_t attach_open_ns;
/* attach.start_after (realtime ns): the window is asked for in every rank of a job at
 * once; it opens (or its steps start counting) only from then, so that ranks attached one
 * after the other begin at the same step. attach_ready: the Python hook is in. */
static uint64_t attach_start_after;
static _Atomic int attach_ready;
static _Atomic unsigned attach_closings_at_open;

int attach_loading(void)
{
    char name[17] = {0};
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0 || strcmp(name, ATTACH_THREAD_NAME) != 0)
        return 0;
    attach_loaded = 1;
    return 1;
}

int attach_starting(void)
{
    return attach_in_start;
}

static const char *attach_lookup(const char *name)
{
    for (int i = 0; i < attach_nkeys; i++)
        if (!strcmp(attach_keys[i], name))
            return attach_values[i];
    return NULL;
}

/* "NAME=VALUE\n..." into the table (in place in attach_text). */
static void attach_parse(const char *settings)
{
    snprintf(attach_text, sizeof attach_text, "%s", settings);
    attach_nkeys = 0;
    for (char *line = attach_text; line && *line && attach_nkeys < ATTACH_MAX_KEYS;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            attach_keys[attach_nkeys] = line;
            attach_values[attach_nkeys++] = eq + 1;
        }
        line = next;
    }
}

/* A key of this attach's block (not kept: later attaches bring their own). */
static const char *attach_key(const char *settings, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = settings; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(out, len, "%.*s", (int)(n - kl - 1), p + kl + 1);
            return out;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

static uint64_t attach_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void attach_msg(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

static uint64_t attach_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The window opens: once the Python hook is in (or at once without Python), and not
 * before attach.start_after (then on a collector pass; with steps, at a step's end). */
static void attach_open_now(void)
{
    if (atomic_load(&attach_state) != 1)
        return;
    /* Before the state says open: the collector's pass reads them once it sees it. */
    atomic_store(&attach_open_ns, attach_now_ns());
    atomic_store(&attach_closings_at_open, atomic_load(&window_closings));
    int expected = 1;
    if (!atomic_compare_exchange_strong(&attach_state, &expected, 2))
        return;
    int ends = window_attach_publish(-1); /* profrun has the start: no more step ends */
    if (ends >= 0)
        close(ends);
    if (attach_steps > 0)
        window_attach_steps(attach_steps, attach_start_after); /* at a step's end */
    else
        window_attach_switch(1, (long)getpid());
}

/* Not before attach.start_after; with steps the window waits for it at the step ends
 * (window_attach_steps), not here: a collector pass comes up to a pass later in one rank
 * than in another, and so would its first step. */
static int attach_may_open(void)
{
    return !attach_start_after || attach_steps > 0 || attach_realtime_ns() >= attach_start_after;
}

static int attach_start_read(void);

/* attach.start: profrun writes the start there once every process is attached (one
 * attached late would otherwise open after the others' start, a step later). Until then,
 * and until a collector pass reads it, no window opens. */
static int attach_start_known(void)
{
    if (!atomic_load(&attach_start_pending))
        return 1;
    /* read on the collector's passes and at the step ends (attach_step_end) */
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    int known = attach_start_read();
    pthread_mutex_unlock(&once);
    return known;
}

static int attach_start_read(void)
{
    if (!atomic_load(&attach_start_pending))
        return 1;
    char text[32];
    int fd = open(attach_start_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    uint64_t at = strtoull(text, NULL, 10);
    if (at > attach_start_after)
        attach_start_after = at;
    if (attach_realtime_ns() > attach_start_after)
        collector_note("the common start came before this process read it: its window may "
                       "begin later than the other processes'");
    /* release: attach_start_after is set before the main thread may open (attach_open) */
    atomic_store_explicit(&attach_start_pending, 0, memory_order_release);
    return 1;
}

/* At the end of each step, before it is counted (window_step_pre): with --steps over
 * several processes the start is read there too, so that the step ending at it may open
 * the window (profrun puts the start half a step after the ranks' last step ends). */
static void attach_step_end(void)
{
    if (atomic_load(&attach_state) == 1 && atomic_load(&attach_ready) && attach_steps > 0 &&
        atomic_load(&attach_start_pending) && attach_start_known() && attach_may_open())
        attach_open_now();
}

static void attach_open(void)
{
    if (attach_steps > 0 && atomic_load_explicit(&attach_start_pending, memory_order_acquire)) {
        /* counting the steps from now, none opening until the start is known */
        window_attach_steps(attach_steps, UINT64_MAX);
        atomic_store(&window_step_pre, attach_step_end);
    }
    atomic_store(&attach_ready, 1);
    if (!atomic_load_explicit(&attach_start_pending, memory_order_acquire) && attach_may_open())
        attach_open_now();
}

static void attach_close(void)
{
    if (attach_steps > 0)
        window_attach_steps_off();
    if (atomic_load(&prof_recording))
        window_attach_switch(0, (long)getpid());
}

/* On the collector's passes. */
static void attach_drain(int fresh, int last)
{
    (void)fresh;
    int state = atomic_load(&attach_state);
    if (state == 0 || collector_drain_in_signal())
        return;
    uint64_t now = attach_now_ns();
    int gone = attach_attacher > 0 && kill(attach_attacher, 0) != 0 && errno == ESRCH;
    int stop = attach_stop_path[0] && access(attach_stop_path, F_OK) == 0;
    if (state == 1 && !atomic_load(&attach_ready) &&
        (double)(now - attach_asked_ns) / 1e9 >= ATTACH_OPEN_GRACE_S) {
        collector_note("the main thread ran no Python for %.0f s: the window opens without "
                       "waiting for the Python hook",
                       ATTACH_OPEN_GRACE_S);
        atomic_store(&attach_ready, 1);
    }
    if (state == 1 && atomic_load(&attach_ready) && attach_start_known() && attach_may_open()) {
        attach_open_now();
        state = atomic_load(&attach_state);
    }
    if (state == 1 && (gone || stop || last)) {
        /* not over an opening made meanwhile by the main thread: that one is closed below */
        int expected = 1;
        state = atomic_compare_exchange_strong(&attach_state, &expected, 3) ? 3 : expected;
    }
    if (state == 2) {
        int steps_done = attach_steps > 0 &&
                         atomic_load(&window_closings) != atomic_load(&attach_closings_at_open);
        /* (the opening may come after `now`: on this pass, or from the main thread) */
        uint64_t opened = atomic_load(&attach_open_ns);
        int timed_out =
            attach_duration >= 0 && now > opened && (double)(now - opened) / 1e9 >= attach_duration;
        if (steps_done || timed_out || gone || stop || last) {
            attach_close();
            atomic_store(&attach_state, 3);
        }
        return;
    }
    if (state == 3) {
        atomic_store(&attach_state, 4);
        return;
    }
    if (state == 4) {
        atomic_store(&attach_state, 0);
        if (attach_done_path[0]) {
            int fd = open(attach_done_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (fd >= 0)
                close(fd);
        }
    }
}

/* argv of this process, for the trace's command line. */
static int attach_cmdline(char ***argv_out)
{
    static char buf[8192];
    static char *argv[256];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    int argc = 0;
    if (n > 0) {
        buf[n] = '\0';
        for (char *p = buf; p < buf + n && argc < 255; p += strlen(p) + 1)
            argv[argc++] = p;
    }
    argv[argc] = NULL;
    *argv_out = argv;
    return argc;
}

PROF_EXPORT int prof_attach_start(const char *settings, char *msg, size_t msg_len)
{
    msg[0] = '\0';
    pthread_mutex_lock(&attach_lock);
    int rc = 1;
    char v[4096];
    if (atomic_load(&attach_state) != 0) {
        attach_msg(msg, msg_len, "another profrun attach has a window open in this process");
        goto out;
    }
    int first = 0;
    if (!collector_is_live()) {
        if (!attach_loaded || settings_lookup == attach_lookup) {
            attach_msg(msg, msg_len,
                       "libprof.so is loaded but not recording here (PROF_DISABLE, or it was "
                       "turned off by a failure: see the program's stderr)");
            goto out;
        }
        first = 1;
        attach_parse(settings);
        settings_lookup = attach_lookup;
        attach_steps = attach_key(settings, "attach.steps", v, sizeof v) ? atol(v) : 0;
        char **argv;
        int argc = attach_cmdline(&argv);
        attach_in_start = 1;
        /* Before the layers start, so that torch counts the steps from now on (a later
         * attach may ask for steps). Without torch the Python layer would have to look at
         * every call for them: only when steps are asked for now. */
        void *torch = dlopen("libtorch_cpu.so", RTLD_NOW | RTLD_NOLOAD);
        if (attach_steps > 0 || torch)
            window_attach_steps_off();
        if (torch)
            dlclose(torch);
        init_begin(argc, argv);
        attach_in_start = 0;
        if (!collector_is_live()) {
            attach_msg(msg, msg_len, "libprof.so could not start in this process (see its stderr)");
            goto out;
        }
        char rebound[32];
        snprintf(rebound, sizeof rebound, "%lu", attach_got_rebound());
        collector_add_meta("attach.calls_rebound", rebound);
    } else if (!window_active) {
        attach_msg(msg, msg_len,
                   "this process records its whole run already (started under the preload "
                   "with no capture window): its traces go to %s",
                   settings_string(SETTING_PROF_OUTPUT_DIR));
        goto out;
    } else if (atomic_load(&prof_recording)) {
        attach_msg(msg, msg_len, "the capture window of this process is open already");
        goto out;
    }
    attach_steps = attach_key(settings, "attach.steps", v, sizeof v) ? atol(v) : 0;
    attach_duration = attach_key(settings, "attach.duration", v, sizeof v) ? atof(v) : -1;
    attach_attacher = attach_key(settings, "attach.attacher", v, sizeof v) ? atoi(v) : 0;
    if (!attach_key(settings, "attach.done", attach_done_path, sizeof attach_done_path))
        attach_done_path[0] = '\0';
    if (!attach_key(settings, "attach.stop", attach_stop_path, sizeof attach_stop_path))
        attach_stop_path[0] = '\0';
    if (attach_steps > 0 && !first && !window_steps_on) {
        attach_msg(msg, msg_len,
                   "--steps: the steps of this process are not counted (started under the "
                   "preload without PROF_STEPS, or first attached before torch was loaded); "
                   "use --duration");
        goto out;
    }
    attach_start_after =
        attach_key(settings, "attach.start_after", v, sizeof v) ? strtoull(v, NULL, 10) : 0;
    atomic_store(
        &attach_start_pending,
        attach_key(settings, "attach.start", attach_start_path, sizeof attach_start_path) ? 1 : 0);
    char ends_path[4096];
    int ends = -1;
    if (attach_steps > 0 && attach_key(settings, "attach.step_ends", ends_path, sizeof ends_path))
        ends = open(ends_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    ends = window_attach_publish(ends);
    if (ends >= 0)
        close(ends);
    attach_asked_ns = attach_now_ns();
    atomic_store(&attach_ready, 0);
    atomic_store(&attach_state, 1);
    if (!attach_source_added) {
        attach_source_added = 1;
        collector_add_source(attach_drain);
    }
    collector_keep_running();
#ifdef PROF_HAVE_CUDA
    /* CUDA at work already: CUPTI's callbacks and activity start now (the driver's
     * injection call, which starts them in a preloaded process, came and went). Not when
     * no driver is loaded: CUPTI would bring CUDA into a process that does not use it. */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda) {
        cupti_start();
        cupti_describe_devices();
        dlclose(cuda);
    }
#endif
    int py = python_attach_late(attach_open);
    if (py != 0)
        attach_open(); /* no interpreter */
    attach_msg(msg, msg_len, "%s\t%s", settings_string(SETTING_PROF_OUTPUT_DIR),
               settings_string(SETTING_PROF_RUN_ID));
    rc = 0;
out:
    pthread_mutex_unlock(&attach_lock);
    return rc;
}
