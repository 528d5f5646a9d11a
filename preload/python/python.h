/* The Python layer: attach to a CPython 3.8-3.13 interpreter without linking libpython
 * (every C-API function is found at run time), receive its call/return events, and keep
 * one call tree per thread (python_tree.c) that the collector writes out. */
#ifndef PROF_PYTHON_H
#define PROF_PYTHON_H

#include <stdint.h>

/* PyObject and friends stay opaque: only these layouts, stable from 3.8 to 3.13 in the
 * default (GIL) build, are read directly. */
typedef struct py_object py_object;
struct py_object {
    intptr_t ob_refcnt;
    void *ob_type;
};
/* PyCFunctionObject: the head of every builtin function or bound builtin method. */
struct py_cfunction {
    struct py_object base;
    void *m_ml; /* PyMethodDef *: the identity cProfile keys C functions by */
    py_object *m_self;
    py_object *m_module;
};
/* PyMethodDescrObject.d_method: after PyObject_HEAD, d_type, d_name, d_qualname. */
#define PY_METHOD_DESCR_D_METHOD 40
/* PyMethodDef */
struct py_method_def {
    const char *ml_name;
    void *ml_meth;
    int ml_flags;
    const char *ml_doc;
};

enum py_trace_what { /* PyTrace_* */
                     PY_TRACE_CALL = 0,
                     PY_TRACE_EXCEPTION = 1,
                     PY_TRACE_LINE = 2,
                     PY_TRACE_RETURN = 3,
                     PY_TRACE_C_CALL = 4,
                     PY_TRACE_C_EXCEPTION = 5,
                     PY_TRACE_C_RETURN = 6
};

/* Py_tracefunc */
typedef int (*py_thread_profile_fn)(py_object *obj, py_object *frame, int what, py_object *arg);

/* The C-API functions and objects we use, found with dlsym when the process turns out
 * to be Python. Optional ones (newer versions only) may be NULL. */
struct py_api {
    int minor; /* 3.<minor> */
    int (*AddAuditHook)(int (*)(const char *, py_object *, void *), void *);
    int (*IsInitialized)(void);
    const char *(*GetVersion)(void);
    void (*SetProfile)(py_thread_profile_fn, py_object *);
    void (*SetProfileAllThreads)(py_thread_profile_fn, py_object *); /* 3.12+ */
    void *(*GILStateGetThisThreadState)(void);
    void *(*InterpreterStateThreadHead)(void *);
    void *(*ThreadStateNext)(void *);
    py_object *(*FrameGetCode)(py_object *);    /* 3.9+ */
    py_object *(*FrameGetBack)(py_object *);    /* 3.9+ (a new reference) */
    py_object *(*FrameGetGlobals)(py_object *); /* 3.11+ */
    py_object *(*GetAttrString)(py_object *, const char *);
    const char *(*AsUTF8)(py_object *);
    py_object *(*Repr)(py_object *);
    void (*IncRef)(py_object *);
    void (*DecRef)(py_object *);
    long (*AsLong)(py_object *);
    void (*ErrFetch)(py_object **, py_object **, py_object **);
    void (*ErrRestore)(py_object *, py_object *, py_object *);
    void (*ErrClear)(void);
    py_object *(*ImportGetModuleDict)(void);
    py_object *(*DictGetItemString)(py_object *, const char *);
    int (*DictDelItemString)(py_object *, const char *);
    py_object *(*CFunctionNewEx)(struct py_method_def *, py_object *, py_object *);
    py_object *(*TupleGetItem)(py_object *, intptr_t);
    py_object *(*ObjectCallMethod)(py_object *, const char *, const char *, ...);
    py_object *(*CallObject)(py_object *, py_object *);
    py_object *(*Call)(py_object *, py_object *, py_object *);
    py_object *(*DictNew)(void);
    int (*DictSetItemString)(py_object *, const char *, py_object *);
    py_object *(*TupleNew)(intptr_t);
    py_object *(*TypeLookup)(void *, py_object *); /* _PyType_Lookup */
    py_object *(*UnicodeFromString)(const char *);
    int (*TypeIsSubtype)(void *, void *);
    unsigned long (*TypeGetFlags)(void *);
    int (*AddPendingCall)(int (*)(void *), void *);
    int (*GILStateCheck)(void);
    int (*GILStateEnsure)(void); /* PyGILState_STATE is an enum */
    void (*GILStateRelease)(int);
    int (*IsFinalizing)(void); /* Py_IsFinalizing (3.13), else _Py_IsFinalizing */
    py_object *(*SysGetObject)(const char *);
    py_object *(*EvalGetFrame)(void);
    py_object *(*ImportModule)(const char *);
    intptr_t (*ListSize)(py_object *);
    unsigned long (*ThreadGetIdent)(void); /* PyThread_get_thread_ident */
    char *(*BytesAsString)(py_object *);
    intptr_t (*BytesSize)(py_object *);
    py_object *(*ObjectGetItem)(py_object *, py_object *);
    py_object *(*ListGetItem)(py_object *, intptr_t);
    void *FunctionType, *MethodType;
    void *CFunctionType, *CMethodType, *ModuleType, *NoneStruct, *MethodDescrType;
    py_object *MonitoringMissing; /* sys.monitoring.MISSING (3.12+) */
};
extern struct py_api py;

/* Py_XDECREF: drops a reference that may be NULL. */
static inline void py_xdecref(py_object *o)
{
    if (o)
        py.DecRef(o);
}

/* python_attach.c */
/* Whether this thread is installing our profile function (its audit event is ours). */
extern __thread int python_installing;
/* A short-lived detached thread of ours running fn(arg), every signal blocked in it (the
 * program's signals are not for it). 0, or -1. Not from a signal handler. */
int python_start_helper(void *(*fn)(void *), void *arg);
/* python_events.c: after a pending call added on a thread other than the main one, so
 * that a main thread that never lets the GIL go runs it within a switch interval (3.10-
 * 3.12; nothing elsewhere). Not from a signal handler. */
void python_nudge_main_thread(void);

/* python_threads.c: at attach, in the main thread, before fn is in place there: every
 * thread state made from now on gets fn as its profile function. 0, or -1 (said on
 * stderr) where only the main thread can be profiled. */
int python_threads_attach(py_thread_profile_fn fn);
/* 3.8-3.11, once attached: the calling thread's PyThreadState.c_profilefunc, which the
 * program's own profiler may hold in place of ours; NULL elsewhere. Under the GIL. */
void **python_threads_profile_slot(void);
/* PyThreadState.c_tracefunc follows c_profilefunc on every version. */
#define PY_TSTATE_TRACEFUNC_AFTER_PROFILEFUNC 8
/* From the library's constructor: the libc functions interposed there are looked up. */
void python_threads_init(void);
/* In a forked child: follow CPython's thread-state key to its new number. */
void python_threads_after_fork_child(void);
/* Under the GIL (3.8-3.11, the capture window): our profile function off (0) or back on
 * (1) on every thread state of the main interpreter, and on those born from now on.
 * 0, or -1 where the thread states cannot be reached (python_threads_attach failed). */
int python_threads_switch(int on);

static inline uint64_t python_hash_ptr(const void *p, const void *q)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)q;
    return h ^ (h >> 29);
}

/* python_names.c: the id of a function (key: code object or PyMethodDef), naming it with
 * a PY_FUNC record the first time (obj: its frame, or the builtin object). 0 on failure. */
uint32_t python_func_id(const void *key, int kind, py_object *obj);
/* The self a method descriptor is called with (3.12+), set before each such call is
 * entered: python_func_id names the descriptor by it. Under the GIL. */
extern py_object *python_descr_self;
/* Whether key was ever given an id (a function some thread entered). */
int python_func_known(const void *key);

/* python_actions.c: Lightning's profiler calls as actions. Classifies a Python function
 * when it is named (its code object and file): 0, or enum prof_action_kind when its calls
 * start or stop the action its first argument names, or PY_ACTION_DIST_INIT for
 * torch.distributed's init_process_group (its rank argument names the process's rank when
 * no launcher's variable did: job_rank_from_program). */
#define PY_ACTION_DIST_INIT 3
void python_action_classify(uint32_t func_id, py_object *code, const char *path);
int python_func_action(uint32_t func_id);
/* The same for the functions of torch's training phases (a module's call, backward, an
 * optimizer's step, a DataLoader's __next__): 1 when the outermost of their calls on a
 * thread always goes on the timeline (a PY_SPAN however short), so that the report can
 * place a short forward inside its step. */
void python_phase_classify(uint32_t func_id, py_object *code, const char *path);
int python_func_phase(uint32_t func_id);
/* A call of such a function began at now (frame: its frame, NULL in a sys.monitoring
 * callback, which runs in it): one ACTION record with the name (init_process_group: the
 * rank, recording or not). */
void python_action_called(int kind, py_object *frame, uint64_t now);

/* python_gc.c: Python's garbage collections as PY_GC records (gc.callbacks). At attach. */
void python_gc_attach(void);

/* python_dataloader.c: whether this process is a DataLoader worker (job.h). At attach,
 * before our function is in place: an os.register_at_fork child hook that looks at what a
 * forked child is about to run. From the audit hook: a spawned child unpickling torch's
 * worker loop. */
void python_dataloader_attach(void);
void python_dataloader_audit(const char *event, py_object *args);

/* python_steps.c: the step functions of PROF_STEPS, classified when named (func id and
 * code object). */
void python_step_classify(uint32_t func_id, py_object *code, const char *path);
int python_func_step(uint32_t func_id);
int python_code_step(const void *code);
/* The step functions known so far, and the code object of the i-th. */
int python_step_count(void);
const void *python_step_code(int i);

/* python_events.c: the tool's events (3.12+, sys.monitoring) or our profile function
 * (3.8-3.11) follow the capture window. From python_attach.c once the tool is in place
 * (tool id, its events), or once our profile function is (threads: whether
 * python_threads_attach succeeded). */
void python_events_init(py_object *monitoring, int tool, long mask);
void python_events_init_profile(int threads);
/* Under the GIL, outside the window, from a callback of a thread with no frame of the
 * window left: the events go off once no thread has one (step functions stay watched). */
void python_events_idle(void);
/* Under the GIL, the window just opened: the events go back on. */
void python_events_opened(void);
void python_events_after_fork_child(void);

/* python_tree.c */
int python_profile(py_object *obj, py_object *frame, int what, py_object *arg);
void python_tree_init(uint64_t span_threshold_ns);
/* In a forked child: the forking thread's tree restarts at zero, the others are dropped. */
void python_tree_after_fork_child(void);
/* Another profile function replaced ours in this thread, or ours is back (or runs before
 * the program's again: chained). Under the GIL in the thread itself. */
void python_gap_begin(void);
void python_gap_end(void);
/* The first event after a gap, in the thread under the GIL and outside any profile or
 * trace function: our stack is made to agree with the thread's real frames (frames of
 * ours gone from them returned unseen and end now; real frames above the last one kept
 * were entered unseen and start now). frame: the event's; call: a call event (its frame
 * is not entered yet). */
void python_gap_resync(py_object *frame, int call, uint64_t now);
/* Whether a live thread still has frames on its stack (outside the window: frames of the
 * window). Under the GIL. */
int python_tree_frames_open(void);
/* Ends, at their window's closing, the frames of earlier windows still on every thread's
 * stack (under the GIL, as the layer goes quiet). */
void python_tree_end_stale_stacks(void);
/* atexit callback (METH_NOARGS) naming functions on Python < 3.11. */
py_object *python_qualnames_at_exit(py_object *self, py_object *unused);
/* Our profile function off, then back, for the calling thread, around the profiler's own
 * Python work (imports at exit): none of it is the program's. setprofile only (< 3.12). */
int python_profile_is_ours(void);
void python_profile_pause(void);
void python_profile_resume(void);
/* sys.monitoring callbacks (METH_FASTCALL). */
py_object *python_monitor_enter(py_object *self, py_object *const *args, intptr_t nargs);
py_object *python_monitor_leave(py_object *self, py_object *const *args, intptr_t nargs);
py_object *python_monitor_call(py_object *self, py_object *const *args, intptr_t nargs);
py_object *python_monitor_c_leave(py_object *self, py_object *const *args, intptr_t nargs);

#endif
