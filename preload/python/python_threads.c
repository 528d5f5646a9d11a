/* Every thread that runs Python gets our profile function, before 3.12 (from 3.12
 * sys.monitoring is interpreter-wide): threading.Thread and threads made in C that take
 * the GIL (PyGILState_Ensure), with libpython shared or linked into the executable.
 *
 * CPython 3.8-3.11 binds each new thread state to its thread with
 * pthread_setspecific(autoTSSkey, tstate), in that thread, before the thread takes the GIL:
 * in threading's bootstrap and in PyGILState_Ensure alike. libpython calls libc through
 * its PLT even when it is linked into the executable, so our pthread_setspecific sees
 * every new thread state, where a PyGILState_Ensure of ours would lose to the
 * executable's own definition. There we set the state's profile function the way
 * PyEval_SetProfile does (c_profilefunc, then the use_tracing flag the evaluation loop
 * reads), writing only fields of a state that no thread runs yet. We cannot call
 * _PyEval_SetProfile there: it raises its audit event in the GIL holder's thread state,
 * which builds a tuple without the GIL.
 *
 * The offsets are those of the release builds of each version (x86-64), and are checked
 * on the main thread at attach: PyEval_SetProfile must change exactly the fields we would
 * write, and autoTSSkey is the lowest key that holds the main thread's state. If the
 * check fails, only the main thread is profiled and stderr says so. When CPython deletes
 * the key (finalization) we stop watching; in a forked child we follow it to its new
 * number. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "collector.h"
#include "python.h"
#include "resolve.h"

#define PROF_EXPORT __attribute__((visibility("default")))

/* PyThreadState.interp: after prev and next, on every version. */
#define PY_TSTATE_INTERP 16

static const struct py_tstate_layout {
    int minor;
    unsigned profilefunc; /* PyThreadState.c_profilefunc */
    unsigned tracing;     /* 3.8-3.9: PyThreadState.use_tracing (int); 3.10+: .cframe */
    unsigned root_cframe; /* 3.10+: PyThreadState.root_cframe, a new state's cframe */
    int on;               /* use_tracing with a profile function: int 1; 3.11: uint8 255 */
} py_layouts[] = {
    {8, 56, 48, 0, 1}, {9, 56, 48, 0, 1}, {10, 56, 48, 264, 1}, {11, 64, 56, 336, 255}};

static const struct py_tstate_layout *py_layout;
static py_thread_profile_fn py_thread_fn;
/* Whether a new thread state gets py_thread_fn: 0 while the capture window has our
 * function off (python_threads_switch). */
static _Atomic int py_thread_fn_on = 1;
static void *py_main_interp;
static pthread_key_t py_tss_key;
/* Set once py_tss_key and the rest are valid; cleared when CPython deletes the key at
 * finalization (the number may then be handed to anyone). */
static _Atomic int py_tss_watch;
/* In a forked child, CPython deletes autoTSSkey, makes it again and binds the forking
 * thread's state to the new key: the first key that gets that state is autoTSSkey. */
static const void *py_fork_state;
static int py_tss_relearn;

typedef int (*py_setspecific_fn)(pthread_key_t, const void *);
typedef int (*py_key_delete_fn)(pthread_key_t);
static _Atomic(py_setspecific_fn) py_real_setspecific;
static _Atomic(py_key_delete_fn) py_real_key_delete;

/* Where a thread state keeps the use_tracing flag (3.10+: in the C frame it points to). */
static void *py_tracing_flag(char *ts)
{
    return py_layout->root_cframe ? *(char **)(ts + py_layout->tracing) : ts + py_layout->tracing;
}

static void py_tracing_clear(void *flag)
{
    if (py_layout->minor >= 11)
        *(uint8_t *)flag = 0;
    else
        *(int *)flag = 0;
}

static int py_tracing_get(const void *flag)
{
    return py_layout->minor >= 11 ? *(const uint8_t *)flag : *(const int *)flag;
}

static void py_tracing_set(void *flag)
{
    if (py_layout->minor >= 11)
        *(uint8_t *)flag = (uint8_t)py_layout->on;
    else
        *(int *)flag = py_layout->on;
}

/* A thread state was just bound to the calling thread, which does not hold the GIL yet.
 * (A profiler that sets every thread's function from the GIL holder, as yappi does, could
 * meet this state between our test and our write: its state keeps our function then.) */
static void py_thread_state_born(char *ts)
{
    if (*(void **)(ts + PY_TSTATE_INTERP) != py_main_interp)
        return; /* a subinterpreter's */
    void **profilefunc = (void **)(ts + py_layout->profilefunc);
    if (*profilefunc)
        return; /* a state already profiled, by us or by the program */
    /* The state is in the interpreter's list already (CPython links it before binding it
     * to its thread): a switch that comes after this test finds it there. A switch off
     * that comes between this test and our write leaves our function on this state: its
     * first event switches everything off again (python_events_idle). */
    if (!atomic_load(&py_thread_fn_on))
        return;
    if (py_layout->root_cframe &&
        *(char **)(ts + py_layout->tracing) != ts + py_layout->root_cframe)
        return; /* not a state that is new */
    *profilefunc = (void *)py_thread_fn;
    py_tracing_set(py_tracing_flag(ts));
}

static PROF_UNINSTRUMENTED void py_tss_seen(pthread_key_t key, const void *value)
{
    if (py_tss_relearn && value == py_fork_state) {
        py_tss_key = key;
        py_tss_relearn = 0;
        return;
    }
    if (key == py_tss_key)
        py_thread_state_born((char *)value);
}

/* The real functions, looked up from the library's constructor (python_threads_init) or,
 * for a call that comes before it, at that call. */
static PROF_UNINSTRUMENTED void *py_next(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_relaxed);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, fn, memory_order_relaxed);
    }
    return fn;
}

void python_threads_init(void)
{
    py_next((_Atomic(void *) *)&py_real_setspecific, "pthread_setspecific");
    py_next((_Atomic(void *) *)&py_real_key_delete, "pthread_key_delete");
}

PROF_EXPORT PROF_UNINSTRUMENTED int pthread_setspecific(pthread_key_t key, const void *value)
{
    py_setspecific_fn fn =
        (py_setspecific_fn)py_next((_Atomic(void *) *)&py_real_setspecific, "pthread_setspecific");
    if (!fn)
        return EINVAL;
    int r = fn(key, value);
    if (__builtin_expect(atomic_load_explicit(&py_tss_watch, memory_order_acquire), 0) && r == 0 &&
        value)
        py_tss_seen(key, value);
    return r;
}

PROF_EXPORT PROF_UNINSTRUMENTED int pthread_key_delete(pthread_key_t key)
{
    py_key_delete_fn fn =
        (py_key_delete_fn)py_next((_Atomic(void *) *)&py_real_key_delete, "pthread_key_delete");
    if (!fn)
        return EINVAL;
    if (atomic_load_explicit(&py_tss_watch, memory_order_acquire) && key == py_tss_key) {
        if (py_tss_relearn)
            py_tss_key = (pthread_key_t)-1; /* a forked child: the next key is made now */
        else
            atomic_store(&py_tss_watch, 0); /* finalization */
    }
    return fn(key);
}

void python_threads_after_fork_child(void)
{
    if (!atomic_load(&py_tss_watch))
        return;
    py_fork_state = pthread_getspecific(py_tss_key);
    py_tss_relearn = py_fork_state != NULL;
}

/* The lowest key whose value in this thread is ts, or -1. CPython makes autoTSSkey
 * first thing when it starts (_PyRuntimeState_Init), and glibc hands out the lowest free
 * key: a key made later with the same value (pybind11 keeps one) has a higher number. */
static long py_find_key(const void *ts)
{
    for (long k = 0; k < PTHREAD_KEYS_MAX; k++)
        if (pthread_getspecific((pthread_key_t)k) == ts)
            return k;
    return -1;
}

/* Checks the layout on the main thread's state: PyEval_SetProfile must set and clear
 * exactly what py_thread_state_born writes. A trace function (coverage, a debugger) may
 * already be set: the flag is on then, before and after. */
static int py_layout_agrees(char *ts, py_thread_profile_fn fn)
{
    void **profilefunc = (void **)(ts + py_layout->profilefunc);
    void *tracefunc = profilefunc[PY_TSTATE_TRACEFUNC_AFTER_PROFILEFUNC / sizeof(void *)];
    int before = tracefunc ? py_layout->on : 0;
    if (*profilefunc || (py_layout->root_cframe && !*(char **)(ts + py_layout->tracing)) ||
        py_tracing_get(py_tracing_flag(ts)) != before)
        return 0;
    python_installing = 1;
    py.SetProfile(fn, NULL);
    int set = *profilefunc == (void *)fn && py_tracing_get(py_tracing_flag(ts)) == py_layout->on;
    py.SetProfile(NULL, NULL);
    python_installing = 0;
    return set && !*profilefunc && py_tracing_get(py_tracing_flag(ts)) == before;
}

/* As CPython's _PyEval_SetProfile does for one state (and 3.12's
 * PyEval_SetProfileAllThreads for all, under the GIL, walking the list without its lock
 * as we do): c_profilefunc, then the tracing flag, left on only where a trace function is
 * set. c_profileobj is NULL with our function, and left as it is. Only our function is
 * taken off, and ours is put only where none is set: another profiler's (cProfile in a
 * thread) stays. On 3.10+ the flag is in the C frame the thread is evaluating now: when a
 * nested evaluation returns, CPython 3.10/3.11 copy its flag back into the outer C frame
 * (tstate->cframe->use_tracing = cframe.use_tracing), and a new one starts from the outer
 * one's. A thread in a callback of ours (or any profile or trace function) has the flag
 * off meanwhile and sets it again from these two fields once the callback returns.
 * Every other thread is off the GIL (waiting for it, or not yet running Python): none
 * reads these fields while we write them. Thread states are removed from the list by
 * their own thread holding the GIL, so none goes away during the walk. */
int python_threads_switch(int on)
{
    if (!py_thread_fn || !py.InterpreterStateThreadHead || !py.ThreadStateNext)
        return -1;
    atomic_store(&py_thread_fn_on, on);
    for (char *ts = py.InterpreterStateThreadHead(py_main_interp); ts;
         ts = py.ThreadStateNext(ts)) {
        void **profilefunc = (void **)(ts + py_layout->profilefunc);
        if (py_layout->root_cframe && !*(char **)(ts + py_layout->tracing))
            continue; /* no C frame to hold the flag (not seen on 3.10/3.11) */
        if (on && !*profilefunc) {
            *profilefunc = (void *)py_thread_fn;
            py_tracing_set(py_tracing_flag(ts));
        } else if (!on && *profilefunc == (void *)py_thread_fn) {
            *profilefunc = NULL;
            if (!profilefunc[PY_TSTATE_TRACEFUNC_AFTER_PROFILEFUNC / sizeof(void *)])
                py_tracing_clear(py_tracing_flag(ts));
        }
    }
    return 0;
}

void **python_threads_profile_slot(void)
{
    char *ts = py_layout && py_thread_fn && py.GILStateGetThisThreadState
                   ? (char *)py.GILStateGetThisThreadState()
                   : NULL;
    return ts ? (void **)(ts + py_layout->profilefunc) : NULL;
}

int python_threads_attach(py_thread_profile_fn fn)
{
    if (py.SetProfileAllThreads)
        return 0; /* 3.12+: new threads take the interpreter's profile function */
    for (size_t i = 0; i < sizeof py_layouts / sizeof py_layouts[0]; i++)
        if (py_layouts[i].minor == py.minor)
            py_layout = &py_layouts[i];
    char *ts =
        py_layout && py.GILStateGetThisThreadState ? (char *)py.GILStateGetThisThreadState() : NULL;
    long key = ts && py_layout_agrees(ts, fn) ? py_find_key(ts) : -1;
    if (key < 0) {
        collector_note("Python threads other than the main thread are not profiled: new "
                       "thread states cannot be reached on this interpreter (not laid out "
                       "as CPython 3.%d's, or a profile function was set before ours)",
                       py.minor);
        return -1;
    }
    py_thread_fn = fn;
    py_main_interp = *(void **)(ts + PY_TSTATE_INTERP);
    py_tss_key = (pthread_key_t)key;
    atomic_store_explicit(&py_tss_watch, 1, memory_order_release);
    return 0;
}
