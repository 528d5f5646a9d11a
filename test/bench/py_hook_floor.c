/* The interpreter's own cost of the hook our Python layer uses, with callbacks that do
 * nothing (bench_python.py's "hook floor"). No profiler can go below it with the same
 * events: before 3.12 a setprofile function (every call and C call, frame objects made);
 * 3.12+ sys.monitoring callbacks for the events preload/python/python_attach.c registers.
 * The _clock variants add only the clock read an exact per-call time needs (rdtsc, as
 * collector/clock.h): at every event, except at CALL/C_RETURN/C_RAISE on 3.12+, where ours
 * reads it only for builtins, which this workload hardly calls.
 *
 * Built by bench_python.py with `cc -shared -fPIC`; no Python headers: the few types are
 * declared here and the symbols resolve against the interpreter that loads it (ctypes). */
#include <stdint.h>
#include <x86intrin.h>

typedef struct floor_object floor_object;

extern floor_object _Py_NoneStruct;

int floor_profile(floor_object *obj, void *frame, int what, floor_object *arg);
int floor_profile_clock(floor_object *obj, void *frame, int what, floor_object *arg);
floor_object *floor_monitor(floor_object *self, floor_object *const *args, intptr_t nargs);
floor_object *floor_monitor_clock(floor_object *self, floor_object *const *args, intptr_t nargs);

/* Where the clock reads go, so that the compiler keeps them. */
static volatile uint64_t floor_last_tick;

/* PyEval_SetProfile's Py_tracefunc */
int floor_profile(floor_object *obj, void *frame, int what, floor_object *arg)
{
    (void)obj;
    (void)frame;
    (void)what;
    (void)arg;
    return 0;
}

int floor_profile_clock(floor_object *obj, void *frame, int what, floor_object *arg)
{
    (void)obj;
    (void)frame;
    (void)what;
    (void)arg;
    floor_last_tick = __rdtsc();
    return 0;
}

/* METH_FASTCALL callback for every sys.monitoring event; None is immortal on 3.12+. */
floor_object *floor_monitor(floor_object *self, floor_object *const *args, intptr_t nargs)
{
    (void)self;
    (void)args;
    (void)nargs;
    return &_Py_NoneStruct;
}

/* PY_START, PY_RESUME (2 arguments), PY_RETURN, PY_YIELD, PY_UNWIND, PY_THROW (3) */
floor_object *floor_monitor_clock(floor_object *self, floor_object *const *args, intptr_t nargs)
{
    (void)self;
    (void)args;
    if (nargs < 4)
        floor_last_tick = __rdtsc();
    return &_Py_NoneStruct;
}

/* PyMethodDefs for PyCFunction_NewEx: name, function, flags (METH_FASTCALL), doc. */
struct floor_method_def {
    const char *name;
    void *meth;
    int flags;
    const char *doc;
};
struct floor_method_def floor_monitor_def = {"floor_monitor", (void *)floor_monitor, 0x0080, 0};
struct floor_method_def floor_monitor_clock_def = {"floor_monitor_clock",
                                                   (void *)floor_monitor_clock, 0x0080, 0};
