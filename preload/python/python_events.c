/* The Python layer outside a capture window, on 3.12+: sys.monitoring lets a tool switch
 * its events off and on, and watch single code objects. Once the window is closed and no
 * thread has a frame of the window left on its stack (python_tree.c ends those at the
 * closing, at each thread's first event after it), the tool's events go off and the
 * interpreter stops calling us; with
 * PROF_STEPS counted here (a PROF_STEP_FUNC, or torch's step without the PyTorch layer),
 * the step functions' code objects stay watched (PY_START/RESUME/RETURN/YIELD, with
 * PY_UNWIND/PY_THROW kept global: they cannot be local and cost nothing until an
 * exception), so steps are still counted exactly. Until a step function is known, every
 * event stays on (the function is recognized when it is first called).
 *
 * The events come back on when the window opens: at a step's end inside our callback
 * (under the GIL, at once); at a step's end the PyTorch layer counted (window.h,
 * window_steps_by_torch), on the step's thread before it runs Python again, taking the
 * GIL if the op let it go; from the signal handler or the collector thread (time window,
 * a forked child following its parent) through Py_AddPendingCall, which CPython allows
 * from a signal handler and runs in the main thread under the GIL. Frames entered while
 * the events were off return without a frame of ours: a return on an empty stack is
 * ignored (python_tree.c), and one thread's stack is last in, first out, so every return
 * of such a frame comes when the frames we saw since have returned.
 *
 * Before 3.12 (setprofile) the same triggers take our profile function off every thread
 * state and put it back (python_threads_switch, under the GIL; new thread states follow).
 * Not while PROF_STEPS are counted here: there are no local events before 3.12, and the
 * step function's calls must be seen, so the profile function stays on and each event
 * outside the window costs a call that does (almost) nothing. With torch's optimizer
 * steps (the default) the PyTorch layer counts them once torch is imported, and from then
 * on the profile function goes off outside the window like the rest. A thread whose state
 * got our function back while it was off (born during a switch) switches everything off
 * again at its first event. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <unistd.h>

#include "collector.h"
#include "python.h"
#include "python_tree.h"
#include "window.h"

static py_object *ev_monitoring; /* sys.monitoring, a reference kept for the process */
static int ev_tool = -1;         /* < 0: not in use */
static int ev_profile;           /* before 3.12: our profile function follows the window */
static long ev_mask;             /* every event of ours */
static long ev_closed_mask;      /* kept global outside the window */
static long ev_local_mask;       /* on the step functions' code objects */
static int ev_on;                /* ev_mask is set (under the GIL) */
static int ev_watched;           /* step functions given their local events */
static int ev_broken;            /* a switch failed: events stay on from now on */
static _Atomic int ev_queued;    /* a pending call to switch on is queued */

static long ev_event(py_object *events, const char *name)
{
    py_object *v = py.GetAttrString(events, name);
    long n = v ? py.AsLong(v) : 0;
    if (v)
        py.DecRef(v);
    return n > 0 ? n : 0;
}

/* sys.monitoring.<method>(tool, ...): 0, or -1 (said once; no more switching off). The
 * program's pending exception, if any, is kept. */
static int ev_call(const char *method, const char *format, py_object *code, long mask)
{
    py_object *et, *ev, *etb;
    py.ErrFetch(&et, &ev, &etb);
    py_object *r = code ? py.ObjectCallMethod(ev_monitoring, method, format, ev_tool, code, mask)
                        : py.ObjectCallMethod(ev_monitoring, method, format, ev_tool, mask);
    if (r)
        py.DecRef(r);
    else
        py.ErrClear();
    py.ErrRestore(et, ev, etb);
    if (!r && !ev_broken) {
        ev_broken = 1;
        collector_note("sys.monitoring.%s failed: Python events are no longer switched off "
                       "outside the capture window",
                       method);
    }
    return r ? 0 : -1;
}

/* RESUME (dis.opmap), the first instruction of every function from 3.11 on; -1 where
 * not known. */
static int ev_resume_opcode(void)
{
    return py.minor == 11 || py.minor == 12 ? 151 : py.minor == 13 ? 149 : -1;
}

/* Whether frame is at its very start (3.11+: at a RESUME that starts the call or resumes
 * it after a yield; before: no instruction run yet, f_lasti -1). A pending call run there
 * comes after the call's start event: 3.8-3.11 call the profile function before the
 * first instruction, 3.12+'s RESUME looks for new instrumentation before it runs
 * pending calls. Under the GIL. */
static int ev_frame_at_start(py_object *frame)
{
    py_object *o = py.GetAttrString(frame, "f_lasti");
    long lasti = o ? py.AsLong(o) : -2;
    py_xdecref(o);
    py.ErrClear();
    if (py.minor <= 10)
        return lasti == -1;
    int resume = ev_resume_opcode();
    if (lasti < 0 || resume < 0 || !py.BytesAsString || !py.BytesSize)
        return 0;
    py_object *code = py.GetAttrString(py_frame_code(frame), "co_code"); /* unspecialized */
    const unsigned char *b = code ? (const unsigned char *)py.BytesAsString(code) : NULL;
    int at = b && lasti + 1 < py.BytesSize(code) && b[lasti] == resume && (b[lasti + 1] & 3) < 2;
    py_xdecref(code);
    py.ErrClear();
    return at;
}

/* Main thread, under the GIL (Py_AddPendingCall). ev_queued stays set until the events
 * go off (python_events_idle): CPython takes its pending-call lock again once this
 * returns, and a signal handler of ours must not ask for the lock its own thread holds.
 * Where this runs in the eval-breaker check at the start of a call (a call begun after
 * the window opened, before this ran), that call is entered here, or it would be missed
 * whole. Other threads' calls begun in the same microseconds are not looked for. */
static int ev_pending_open(void *arg)
{
    (void)arg;
    if (!atomic_load(&prof_recording))
        return 0;
    int was_on = ev_on;
    python_events_opened();
    py_object *frame = !was_on && ev_on ? py.EvalGetFrame() : NULL;
    /* (a step function's code keeps its local events: its start event comes after) */
    if (frame && ev_frame_at_start(frame) &&
        (ev_profile || !python_code_step(py_frame_code(frame))))
        python_tree_enter_started(frame, ev_profile);
    return 0;
}

static void *ev_nudge(void *arg)
{
    (void)arg;
    if (py.IsInitialized() && !(py.IsFinalizing && py.IsFinalizing())) {
        int state = py.GILStateEnsure();
        py.GILStateRelease(state);
    }
    return NULL;
}

/* 3.10-3.12: a pending call added on a thread other than the main one does not set the
 * main thread's eval breaker (CPython works it out for the adding thread, which cannot
 * run main-thread calls), so a main thread that never lets the GIL go (a pure Python
 * loop) would never run it. A short-lived thread of ours asks for the GIL: the main
 * thread lets it go at its next switch interval (5 ms) and, taking it back, works the
 * breaker out again and runs the call. Not the collector thread itself: a thread that
 * asks for the GIL while the interpreter finalizes is ended there. Not from a signal
 * handler (no thread can be started there): a signal that lands on another thread than
 * the main one opens the Python layer only at the main thread's next GIL switch. */
void python_nudge_main_thread(void)
{
    if (py.minor < 10 || py.minor > 12 || gettid() == getpid())
        return; /* the breaker is set from any thread, or this is the main thread */
    if (python_start_helper(ev_nudge, NULL) != 0)
        collector_note("the Python layer's window opening waits for the main thread's "
                       "next GIL switch: no thread could be started to ask for it");
}

/* The window opened from a signal handler or the collector thread (whose signals are
 * blocked). Queued even while the events look on: a thread may be switching them off
 * (under the GIL) right now. Not while a call of ours is queued or just made: see
 * ev_pending_open. (CPython allows Py_AddPendingCall in a signal handler; what is left is
 * a signal landing on a thread that holds CPython's pending-call lock for another
 * caller's pending call, or two signals within the same few instructions.) */
static void ev_window_switched(int open, int in_handler)
{
    if (!open || !py.IsInitialized() || atomic_exchange(&ev_queued, 1))
        return; /* (not once the interpreter is finalizing) */
    if (py.AddPendingCall(ev_pending_open, NULL) != 0)
        atomic_store(&ev_queued, 0); /* the queue is full: the next opening tries again */
    else if (!in_handler)
        python_nudge_main_thread();
}

/* A step's end counted by the PyTorch layer opened the window, on the step's thread (any
 * thread; the op may have let the GIL go): the events go on before this thread runs
 * Python again. Not while the interpreter is finalizing (a thread that asked for the GIL
 * then would be ended). */
static void ev_step_opened(int open, int in_handler)
{
    (void)in_handler;
    if (!open || !py.IsInitialized() || (py.IsFinalizing && py.IsFinalizing()))
        return;
    int held = py.GILStateCheck();
    int state = held ? 0 : py.GILStateEnsure();
    python_events_opened();
    if (!held)
        py.GILStateRelease(state);
}

void python_events_init(py_object *monitoring, int tool, long mask)
{
    if (!window_active)
        return; /* the whole run is recorded */
    py_object *events = py.GetAttrString(monitoring, "events");
    if (!events) {
        py.ErrClear();
        return;
    }
    ev_local_mask = ev_event(events, "PY_START") | ev_event(events, "PY_RESUME") |
                    ev_event(events, "PY_RETURN") | ev_event(events, "PY_YIELD");
    ev_closed_mask =
        window_steps_on ? ev_event(events, "PY_UNWIND") | ev_event(events, "PY_THROW") : 0;
    py.DecRef(events);
    py.ErrClear();
    py.IncRef(monitoring);
    ev_monitoring = monitoring;
    ev_tool = tool;
    ev_mask = mask;
    ev_on = 1;
    atomic_store(&window_observer, ev_window_switched);
    atomic_store(&window_step_observer, ev_step_opened);
    collector_add_meta("python.window_events", "off outside the window");
}

/* Written once the profile function can go off outside the window: at once, or with
 * PROF_STEPS once the PyTorch layer counts them. */
static void ev_profile_said_off(void)
{
    static int said;
    if (!said) {
        said = 1;
        collector_add_meta("python.window_events", "off outside the window");
    }
}

void python_events_init_profile(int threads)
{
    if (!window_active)
        return;
    if (!threads || python_threads_switch(1) != 0) {
        collector_note("the Python profile function stays on outside the capture window: "
                       "thread states cannot be reached on this interpreter");
        return;
    }
    ev_profile = 1;
    ev_on = 1;
    atomic_store(&window_observer, ev_window_switched);
    atomic_store(&window_step_observer, ev_step_opened);
    if (!window_steps_by_python())
        ev_profile_said_off();
}

/* Before 3.12: called from our profile function, so some thread still has it (after a
 * switch off, one born during the switch): the loop runs whenever we are called. */
static void ev_profile_idle(void)
{
    if (atomic_load(&prof_recording) || python_tree_frames_open())
        return;
    if (window_steps_by_python())
        return; /* no local events before 3.12: every call is looked at for the steps */
    ev_profile_said_off();
    python_tree_end_stale_stacks();
    atomic_store(&ev_queued, 0); /* an opening from now on queues a pending call */
    python_threads_switch(0);
    ev_on = 0;
    if (atomic_load(&prof_recording))
        python_events_opened();
}

void python_events_idle(void)
{
    if (ev_profile) {
        ev_profile_idle();
        return;
    }
    if (ev_tool < 0 || !ev_on || ev_broken || atomic_load(&prof_recording))
        return;
    if (window_steps_by_python() && !python_step_count())
        return; /* no step function seen yet: every call is looked at until one is */
    if (python_tree_frames_open())
        return;
    atomic_store(&ev_queued, 0); /* an opening from now on queues a pending call */
    for (; ev_watched < python_step_count(); ev_watched++)
        if (ev_call("set_local_events", "iOl", (py_object *)python_step_code(ev_watched),
                    ev_local_mask) != 0)
            return;
    if (ev_call("set_events", "il", NULL, window_steps_by_python() ? ev_closed_mask : 0) != 0)
        return;
    python_tree_end_stale_stacks();
    ev_on = 0;
    /* A signal may have opened the window meanwhile; its pending call would come later. */
    if (atomic_load(&prof_recording))
        python_events_opened();
}

void python_events_opened(void)
{
    if (ev_profile && !ev_on) {
        python_threads_switch(1);
        ev_on = 1;
        return;
    }
    if (ev_tool < 0 || ev_on)
        return;
    if (ev_call("set_events", "il", NULL, ev_mask) != 0)
        return; /* said; tried again at the next opening */
    ev_on = 1;
}

void python_events_after_fork_child(void)
{
    /* A pending call of the parent's is not ours to wait for. */
    atomic_store(&ev_queued, 0);
}
