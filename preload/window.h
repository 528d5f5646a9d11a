/* Capture windows: record only steps A-B (PROF_STEPS), only from PROF_DELAY for
 * PROF_DURATION seconds, or between deliveries of PROF_WINDOW_SIGNAL. The switch is the
 * collector's prof_recording flag, which every emitter tests already: outside the window
 * a wrapper costs that one branch. */
#ifndef PROF_WINDOW_H
#define PROF_WINDOW_H

#include <stdatomic.h>

/* 1 when PROF_STEPS is set: the Python layer watches for the end of each step. */
extern int window_steps_on;
/* 1 when any capture window is set: recording may be off for a while (CUPTI then keeps
 * only the GPU work of calls made inside). */
extern int window_active;

/* After collector_init and lifecycle_init: reads the settings, closes the window when it
 * starts closed, installs the signal, and writes the window into the trace (META). */
void window_init(void);
/* The outermost call of a step function returned (Python layer, under the GIL). */
void window_step_done(void);

/* Told after each opening or closing made outside the Python layer's own callbacks: from
 * the signal handler, or from the collector thread (the time window, a forked child
 * following its parent). Async-signal-safe. The Python layer (3.12+) sets it to switch
 * its interpreter events back on; a step's end it handles itself, under the GIL. */
typedef void (*window_observer_fn)(int open);
extern _Atomic(window_observer_fn) window_observer;

#endif
