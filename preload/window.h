/* Capture windows: record only steps A-B (PROF_STEPS), only from PROF_DELAY for
 * PROF_DURATION seconds, or between deliveries of PROF_WINDOW_SIGNAL. The switch is the
 * collector's prof_recording flag, which every emitter tests already: outside the window
 * a wrapper costs that one branch. */
#ifndef PROF_WINDOW_H
#define PROF_WINDOW_H

#include <stdatomic.h>
#include <stdint.h>

/* 1 when PROF_STEPS is set: the Python layer watches for the end of each step. */
extern int window_steps_on;
/* Who counts the steps of PROF_STEPS. The PyTorch layer, once its callback is installed,
 * for the default step (no PROF_STEP_FUNC): every torch optimizer's step runs inside the
 * record_function scope "Optimizer.step#<class>.step", whose end it sees for one compare
 * per op, so that the Python layer looks at no call for the steps and its events can go
 * off outside the window on every version. Else the Python layer, from the returns of the
 * step functions. Set once, in the thread importing torch (under the GIL): a step under
 * way then was begun in Python, where no torch step can be. */
extern _Atomic int window_steps_by_torch;
static inline int window_steps_by_python(void)
{
    return window_steps_on && !atomic_load_explicit(&window_steps_by_torch, memory_order_relaxed);
}

/* The optimizer steps begun so far in the process (outermost Optimizer.step#... scopes):
 * the PyTorch layer counts them whether recording or not once it watches those scopes
 * (the Python layer's cuts, or PROF_STEPS), and sets window_torch_steps_counted when it
 * does from the first step on, on one thread (not after an attach, nor once a second
 * thread runs steps); each opening of the window writes the count, so that the report
 * numbers the steps it records as the process's (META window_open). */
extern _Atomic uint64_t window_torch_steps;
extern _Atomic int window_torch_steps_counted;

/* 1 when any capture window is set: recording may be off for a while (CUPTI then keeps
 * only the GPU work of calls made inside). */
extern int window_active;

/* Closings of the window so far, and the clock tick (prof_clock_ticks) of the n-th
 * (1-based; the latest 64 are kept, 0 for n = 0). */
extern _Atomic unsigned window_closings;
uint64_t window_close_edge(unsigned n);

/* After collector_init and lifecycle_init: reads the settings, closes the window when it
 * starts closed, installs the signal, and writes the window into the trace (META). */
void window_init(void);
/* A step ended: the outermost call of a step function returned (Python layer, under the
 * GIL) or the outermost optimizer step scope ended (PyTorch layer, any thread). */
void window_step_done(void);

/* Told after each opening or closing made outside the Python layer's own callbacks: from
 * the signal handler, or from the collector thread (the time window, a forked child
 * following its parent). Async-signal-safe. The Python layer (3.12+) sets it to switch
 * its interpreter events back on; a step's end it handles itself, under the GIL.
 * in_handler: told from a signal handler (on any thread). */
typedef void (*window_observer_fn)(int open, int in_handler);
extern _Atomic(window_observer_fn) window_observer;
/* Told, on the thread of the step, when a step's end counted by the PyTorch layer opens
 * the window: the Python layer switches its events on before that thread runs Python
 * again (it takes the GIL when the thread does not hold it). */
extern _Atomic(window_observer_fn) window_step_observer;

/* profrun attach (preload/attach.c). window_init_attached replaces window_init in a
 * library loaded by profrun attach: a window that starts closed ("attach") and that
 * window_attach_switch opens and closes (META window_open/close "<ns> attach <value>").
 * window_attach_steps(N, T): the window opens at the end of the step under way and closes
 * after N more (the PROF_STEPS logic, counted from now); with T (realtime ns, else 0) at
 * the end of the first step that ends at T or later, so that ranks whose steps end
 * together open on the same step; returns 1 the first time (the step counters start
 * then). window_attach_steps_off: no step opens or closes it. */
void window_init_attached(const char *desc);
void window_attach_switch(int open, long value);
int window_attach_steps(long steps, uint64_t not_before_realtime_ns);
/* A later T for the window armed by window_attach_steps (UINT64_MAX: not yet known). */
void window_attach_steps_after(uint64_t not_before_realtime_ns);
/* Each step's end from now on written at the start of fd ("<previous end> <end>\n",
 * realtime ns, 20 digits each; the previous 0 at first); -1: none. Returns the fd before,
 * for the caller to close. */
int window_attach_publish(int fd);
/* Called on the thread of each step's end before that end is counted, so that it may arm
 * the window for the step ending then (attach.c: the common start read at a step end). */
typedef void (*window_step_fn)(void);
extern _Atomic(window_step_fn) window_step_pre;
void window_attach_steps_off(void);
long window_attach_steps_recorded(void);

#endif
