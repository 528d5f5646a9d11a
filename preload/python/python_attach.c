/* Attaching to CPython without changing the program: an audit hook added before the
 * interpreter starts (PySys_AddAuditHook works then, on 3.8-3.13, with libpython shared
 * or linked into the executable) installs our profile function on the first
 * cpython.run_file/run_module/run_command/run_stdin event. Later events of the same hook
 * follow other profilers (sys.setprofile); python_threads.c follows new threads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "clock.h"
#include "collector.h"
#include "layer.h"
#include "python.h"
#include "settings.h"

#define PROF_EXPORT __attribute__((visibility("default")))

struct py_api py;
__thread int python_installing PROF_TLS;

static int py_attached;
static int py_started;    /* python_start found a supported interpreter */
static int py_monitoring; /* sys.monitoring, not setprofile */
static uint32_t py_main_tid;
static int py_reinstall_pending;

static int py_profile_cb(py_object *obj, py_object *frame, int what, py_object *arg)
{
    return python_profile(obj, frame, what, arg);
}

/* 3.8-3.11, main thread: a program that runs its own profiler (cProfile around each of
 * Lightning's actions, a debugger) puts its function in c_profilefunc in place of ours.
 * Once its call is done, ours goes back in front of it: py_chain_cb sees the event, then
 * calls the program's function with the program's object (c_profileobj stays its own,
 * so sys.getprofile() and cProfile see no difference). Both count every call. Main thread:
 * a pending call takes over; other threads: a one-shot trace function (py_takeover_cb). */
static __thread py_thread_profile_fn py_chained PROF_TLS;

static int py_chain_cb(py_object *obj, py_object *frame, int what, py_object *arg)
{
    python_profile(NULL, frame, what, arg);
    return py_chained(obj, frame, what, arg);
}

/* In place of the chain while the profiler's own Python work runs (python_profile_pause):
 * neither profiler counts it. */
static int py_quiet_cb(py_object *obj, py_object *frame, int what, py_object *arg)
{
    (void)obj;
    (void)frame;
    (void)what;
    (void)arg;
    return 0;
}

/* Our profile function for the calling thread; its own sys.setprofile audit event is
 * ours, not another profiler's. */
static void py_install_here(void)
{
    python_installing = 1;
    py.SetProfile(py_profile_cb, NULL);
    python_installing = 0;
}

void python_profile_pause(void)
{
    void **slot = python_threads_profile_slot();
    if (slot && *slot == (void *)py_chain_cb) {
        *slot = (void *)py_quiet_cb;
        return;
    }
    python_installing = 1;
    py.SetProfile(NULL, NULL);
    python_installing = 0;
}

void python_profile_resume(void)
{
    void **slot = python_threads_profile_slot();
    if (slot && *slot == (void *)py_quiet_cb) {
        *slot = (void *)py_chain_cb;
        return;
    }
    py_install_here();
}

/* After the program's own set in the calling thread (slot: its c_profilefunc): with no
 * function left ours goes back; with the program's, ours goes in front of it. */
static void py_take_over(void **slot)
{
    void *fn = *slot;
    if (!fn) {
        py_install_here();
        python_gap_end();
    } else if (fn != (void *)py_profile_cb && fn != (void *)py_chain_cb &&
               fn != (void *)py_quiet_cb) {
        py_chained = (py_thread_profile_fn)fn;
        *slot = (void *)py_chain_cb; /* the tracing flag is on already: fn is set */
        python_gap_end();
    }
}

/* A thread other than the main one, where no pending call runs: the audit hook puts this
 * in the thread's empty c_tracefunc before the program's set, so the thread's next event
 * (line, call or return) calls it once: it takes itself off and takes over. CPython sets
 * the tracing flag from both slots again when a trace function returns. */
static int py_takeover_cb(py_object *obj, py_object *frame, int what, py_object *arg)
{
    (void)obj;
    (void)frame;
    (void)what;
    (void)arg;
    void **slot = python_threads_profile_slot();
    if (slot) {
        void **trace = slot + PY_TSTATE_TRACEFUNC_AFTER_PROFILEFUNC / sizeof(void *);
        if (*trace == (void *)py_takeover_cb)
            *trace = NULL;
        py_take_over(slot);
    }
    return 0;
}

/* Runs in the main thread once the program's sys.setprofile call has returned. */
static int py_reinstall(void *arg)
{
    (void)arg;
    py_reinstall_pending = 0;
    void **slot = python_threads_profile_slot();
    if (slot) {
        py_take_over(slot);
        return 0;
    }
    py_object *getprofile = py.SysGetObject("getprofile"); /* borrowed */
    py_object *current = getprofile ? py.CallObject(getprofile, NULL) : NULL;
    if (!current) {
        py.ErrClear();
        return 0;
    }
    if (current == py.NoneStruct) {
        py_install_here();
        python_gap_end();
    }
    py.DecRef(current);
    return 0;
}

/* sys.monitoring (3.12+): a tool id of our own (cProfile keeps 2, debuggers 0, coverage
 * 1), callbacks for the events cProfile uses. Returns 0 when in place. */
#define PY_FASTCALL 0x80
static struct py_method_def py_monitor_defs[] = {
    {"profrun_enter", (void *)python_monitor_enter, PY_FASTCALL, NULL},
    {"profrun_leave", (void *)python_monitor_leave, PY_FASTCALL, NULL},
    {"profrun_call", (void *)python_monitor_call, PY_FASTCALL, NULL},
    {"profrun_c_leave", (void *)python_monitor_c_leave, PY_FASTCALL, NULL},
};
static const struct {
    const char *event;
    int def;
} py_monitor_events[] = {{"PY_START", 0},  {"PY_RESUME", 0}, {"PY_THROW", 0},
                         {"PY_RETURN", 1}, {"PY_YIELD", 1},  {"PY_UNWIND", 1},
                         {"CALL", 2},      {"C_RETURN", 3},  {"C_RAISE", 3}};

static long py_long_attr(py_object *o, const char *name)
{
    py_object *v = py.GetAttrString(o, name);
    long n = v ? py.AsLong(v) : -1;
    if (v)
        py.DecRef(v);
    else
        py.ErrClear();
    return n;
}

static int py_attach_monitoring(void)
{
    py_object *mon = py.SysGetObject("monitoring"); /* borrowed */
    if (!mon)
        return -1;
    py_object *events = py.GetAttrString(mon, "events");
    py.MonitoringMissing = py.GetAttrString(mon, "MISSING"); /* kept for the process */
    if (!events || !py.MonitoringMissing) {
        py.ErrClear();
        return -1;
    }
    int tool = -1;
    static const int candidates[] = {4, 3, 5};
    for (int i = 0; i < 3 && tool < 0; i++) {
        py_object *r = py.ObjectCallMethod(mon, "get_tool", "i", candidates[i]);
        if (r && r == py.NoneStruct)
            tool = candidates[i];
        if (r)
            py.DecRef(r);
        else
            py.ErrClear();
    }
    long mask = 0;
    int ok = tool >= 0;
    py_object *r = ok ? py.ObjectCallMethod(mon, "use_tool_id", "is", tool, "profrun") : NULL;
    ok = ok && r;
    if (r)
        py.DecRef(r);
    for (size_t i = 0; ok && i < sizeof py_monitor_events / sizeof py_monitor_events[0]; i++) {
        long ev = py_long_attr(events, py_monitor_events[i].event);
        py_object *fn = py.CFunctionNewEx(&py_monitor_defs[py_monitor_events[i].def], NULL, NULL);
        r = ev > 0 && fn ? py.ObjectCallMethod(mon, "register_callback", "ilO", tool, ev, fn)
                         : NULL;
        if (fn)
            py.DecRef(fn);
        ok = r != NULL;
        if (r)
            py.DecRef(r);
        mask |= ev;
    }
    r = ok ? py.ObjectCallMethod(mon, "set_events", "il", tool, mask) : NULL;
    ok = r != NULL;
    if (r)
        py.DecRef(r);
    py.DecRef(events);
    if (!ok) {
        py.ErrClear();
        return -1;
    }
    python_events_init(mon, tool, mask);
    return 0;
}

static struct py_method_def py_qualnames_def = {
    "profrun_qualnames", (void *)python_qualnames_at_exit, 4 /* METH_NOARGS */, NULL};

/* Before 3.11, qualified names come from the function objects alive at exit. The program
 * must not find atexit imported by us: its own import would run less import machinery than
 * in a bare run (and cProfile's counts). From 3.10 the callbacks belong to the interpreter,
 * so the module is taken back out of sys.modules; on 3.8/3.9 a second import would make a
 * new module whose callbacks replace ours, so it stays. */
static void py_register_qualnames(void)
{
    py_object *modules = py.ImportGetModuleDict(); /* borrowed */
    int loaded = modules && py.DictGetItemString(modules, "atexit") != NULL;
    py_object *atexit_mod = py.ImportModule("atexit"); /* built in: nothing runs */
    py_object *fn = py.CFunctionNewEx(&py_qualnames_def, NULL, NULL);
    py_object *r = atexit_mod && fn ? py.ObjectCallMethod(atexit_mod, "register", "O", fn) : NULL;
    int registered = r != NULL;
    if (r)
        py.DecRef(r);
    if (fn)
        py.DecRef(fn);
    if (atexit_mod)
        py.DecRef(atexit_mod);
    if (registered && !loaded && modules && py.minor >= 10 && py.DictDelItemString)
        py.DictDelItemString(modules, "atexit");
    py.ErrClear();
}

static void py_attach(void)
{
    py_attached = 1;
    py_main_tid = (uint32_t)gettid();
    python_dataloader_attach();
    python_gc_attach();
    char version[64];
    snprintf(version, sizeof version, "%.40s", py.GetVersion());
    version[strcspn(version, " ")] = '\0';
    collector_add_meta("python.version", version);
    collector_add_meta("python.scheme", "calltree");
    if (py.minor >= 12 && py_attach_monitoring() == 0) {
        py_monitoring = 1;
        collector_add_meta("python.hook", "sys.monitoring");
    } else {
        collector_add_meta("python.hook", "setprofile");
    }
    char threshold[32];
    snprintf(threshold, sizeof threshold, "%ld", settings_int(SETTING_PROF_PY_SPAN_US) * 1000L);
    collector_add_meta("python.span_threshold_ns", threshold);
    if (py_monitoring)
        return; /* interpreter-wide: every thread, with nothing more to do */
    /* Before our function is in place: these calls are ours, not the program's. */
    int threads = python_threads_attach(py_profile_cb) == 0;
    collector_add_meta("python.threads", threads ? "all" : "main");
    if (py.minor < 11)
        py_register_qualnames();
    if (py.SetProfileAllThreads) {
        python_installing = 1;
        py.SetProfileAllThreads(py_profile_cb, NULL);
        python_installing = 0;
    } else {
        py_install_here();
        python_events_init_profile(threads);
    }
}

static int py_audit_hook(const char *event, py_object *args, void *data)
{
    (void)data;
    if (event[0] == 'p') {
        python_dataloader_audit(event, args);
        return 0;
    }
    if (event[0] != 'c' && event[0] != '_' && event[0] != 's')
        return 0;
    if (!py_attached) {
        if (strncmp(event, "cpython.run_", 12) == 0 &&
            strcmp(event, "cpython.run_interactivehook") && strcmp(event, "cpython.run_startup"))
            py_attach();
        return 0;
    }
    if (strcmp(event, "sys.setprofile") == 0 && !python_installing && !py_monitoring) {
        /* The program (cProfile, a debugger) puts its own function, or none, in place of
         * ours for this thread: a gap until ours is back, alone or in front of it, once
         * the call is done. */
        python_gap_begin();
        void **slot = python_threads_profile_slot();
        void **trace = slot ? slot + PY_TSTATE_TRACEFUNC_AFTER_PROFILEFUNC / sizeof(void *) : NULL;
        if ((uint32_t)gettid() == py_main_tid) {
            if (!py_reinstall_pending) {
                py_reinstall_pending = 1;
                py.AddPendingCall(py_reinstall, NULL);
            }
        } else if (trace && !*trace) {
            *trace = (void *)py_takeover_cb; /* no trace function: its slot is free */
        }
    }
    return 0;
}

static void *py_sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static int py_resolve_api(void)
{
#define PY_REQUIRE(field, name)                                                                    \
    if (!(*(void **)&py.field = py_sym(name)))                                                     \
        return -1;
#define PY_OPTIONAL(field, name) *(void **)&py.field = py_sym(name);
    PY_REQUIRE(AddAuditHook, "PySys_AddAuditHook")
    PY_REQUIRE(IsInitialized, "Py_IsInitialized")
    PY_REQUIRE(GetVersion, "Py_GetVersion")
    PY_REQUIRE(SetProfile, "PyEval_SetProfile")
    PY_OPTIONAL(SetProfileAllThreads, "PyEval_SetProfileAllThreads")
    PY_OPTIONAL(GILStateGetThisThreadState, "PyGILState_GetThisThreadState")
    PY_OPTIONAL(InterpreterStateThreadHead, "PyInterpreterState_ThreadHead")
    PY_OPTIONAL(ThreadStateNext, "PyThreadState_Next")
    PY_OPTIONAL(FrameGetCode, "PyFrame_GetCode")
    PY_OPTIONAL(FrameGetBack, "PyFrame_GetBack")
    PY_OPTIONAL(FrameGetGlobals, "PyFrame_GetGlobals")
    PY_REQUIRE(GetAttrString, "PyObject_GetAttrString")
    PY_REQUIRE(AsUTF8, "PyUnicode_AsUTF8")
    PY_REQUIRE(Repr, "PyObject_Repr")
    PY_REQUIRE(IncRef, "Py_IncRef")
    PY_REQUIRE(DecRef, "Py_DecRef")
    PY_REQUIRE(AsLong, "PyLong_AsLong")
    PY_REQUIRE(ErrFetch, "PyErr_Fetch")
    PY_REQUIRE(ErrRestore, "PyErr_Restore")
    PY_REQUIRE(ErrClear, "PyErr_Clear")
    PY_REQUIRE(ImportGetModuleDict, "PyImport_GetModuleDict")
    PY_REQUIRE(DictGetItemString, "PyDict_GetItemString")
    PY_OPTIONAL(DictDelItemString, "PyDict_DelItemString")
    PY_REQUIRE(CFunctionNewEx, "PyCFunction_NewEx")
    PY_REQUIRE(TupleGetItem, "PyTuple_GetItem")
    PY_REQUIRE(ObjectCallMethod, "PyObject_CallMethod")
    PY_REQUIRE(CallObject, "PyObject_CallObject")
    PY_REQUIRE(Call, "PyObject_Call")
    PY_REQUIRE(DictNew, "PyDict_New")
    PY_REQUIRE(DictSetItemString, "PyDict_SetItemString")
    PY_REQUIRE(TupleNew, "PyTuple_New")
    PY_OPTIONAL(TypeLookup, "_PyType_Lookup")
    PY_REQUIRE(UnicodeFromString, "PyUnicode_FromString")
    PY_REQUIRE(TypeIsSubtype, "PyType_IsSubtype")
    PY_REQUIRE(TypeGetFlags, "PyType_GetFlags")
    PY_REQUIRE(AddPendingCall, "Py_AddPendingCall")
    PY_REQUIRE(GILStateCheck, "PyGILState_Check")
    PY_REQUIRE(GILStateEnsure, "PyGILState_Ensure")
    PY_REQUIRE(GILStateRelease, "PyGILState_Release")
    PY_OPTIONAL(IsFinalizing, "Py_IsFinalizing")
    if (!py.IsFinalizing)
        *(void **)&py.IsFinalizing = py_sym("_Py_IsFinalizing");
    PY_REQUIRE(SysGetObject, "PySys_GetObject")
    PY_REQUIRE(CFunctionType, "PyCFunction_Type")
    PY_OPTIONAL(CMethodType, "PyCMethod_Type")
    PY_REQUIRE(ModuleType, "PyModule_Type")
    PY_REQUIRE(NoneStruct, "_Py_NoneStruct")
    PY_REQUIRE(MethodDescrType, "PyMethodDescr_Type")
    PY_REQUIRE(EvalGetFrame, "PyEval_GetFrame")
    PY_REQUIRE(ImportModule, "PyImport_ImportModule")
    PY_REQUIRE(ListSize, "PyList_Size")
    PY_OPTIONAL(ThreadGetIdent, "PyThread_get_thread_ident")
    PY_OPTIONAL(BytesAsString, "PyBytes_AsString")
    PY_OPTIONAL(BytesSize, "PyBytes_Size")
    PY_REQUIRE(ListGetItem, "PyList_GetItem")
    PY_REQUIRE(ObjectGetItem, "PyObject_GetItem")
    PY_REQUIRE(FunctionType, "PyFunction_Type")
    PY_REQUIRE(MethodType, "PyMethod_Type")
#undef PY_REQUIRE
#undef PY_OPTIONAL
    return 0;
}

/* -X dev and PYTHONMALLOC=debug free the early hook with the debug allocator at exit and
 * abort: there, wait for the interpreter and attach through a pending call instead. */
static int py_debug_allocator(int argc, char **argv)
{
    const char *m = settings_env("PYTHONMALLOC");
    const char *dev = settings_env("PYTHONDEVMODE");
    if ((m && strstr(m, "debug")) || (dev && *dev))
        return 1;
    for (int i = 1; i < argc && argv[i]; i++) {
        if (strcmp(argv[i], "-Xdev") == 0 ||
            (strcmp(argv[i], "-X") == 0 && i + 1 < argc && argv[i + 1] &&
             strcmp(argv[i + 1], "dev") == 0) ||
            strncmp(argv[i], "-Xpythonmalloc=debug", 20) == 0)
            return 1;
        if (argv[i][0] != '-')
            break; /* the script and its own arguments */
    }
    return 0;
}

/* 3.8-3.11, under the GIL: whether this thread is inside importlib's _ModuleLock.acquire,
 * between its `_blocking_on[tid] = self` and `del _blocking_on[tid]`. A pending call runs
 * between any two bytecodes, there too; an import of ours there (atexit, at attach) would
 * set and take out that same entry, and the program's import fail with KeyError (seen
 * once in a -X dev run). 3.12's is re-entrant. */
static int py_inside_import_lock(void)
{
    if (py.minor >= 12 || !py.ThreadGetIdent)
        return 0;
    py_object *modules = py.ImportGetModuleDict(); /* borrowed */
    py_object *bootstrap = modules ? py.DictGetItemString(modules, "_frozen_importlib") : NULL;
    py_object *blocking = bootstrap ? py.GetAttrString(bootstrap, "_blocking_on") : NULL;
    py_object *in =
        blocking ? py.ObjectCallMethod(blocking, "__contains__", "k", py.ThreadGetIdent()) : NULL;
    long inside = in ? py.AsLong(in) : 0;
    py_xdecref(in);
    py_xdecref(blocking);
    py.ErrClear();
    return inside > 0;
}

static void *py_retry_thread(void *fn)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    if (py.IsInitialized() && !(py.IsFinalizing && py.IsFinalizing()))
        py.AddPendingCall((int (*)(void *))fn, NULL);
    return NULL;
}

/* The pending call fn ran inside an import's lock: it is queued again in 0.2 ms,
 * from a short-lived thread (queued from here, it would run again at once, before the
 * import can go on). */
static void py_retry_later(int (*fn)(void *))
{
    if (python_start_helper(py_retry_thread, (void *)fn) != 0)
        collector_note("cannot start a thread to retry the Python attach; Python profiling "
                       "is off");
}

int python_start_helper(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    pthread_attr_t attr;
    sigset_t all, prev;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &prev); /* the program's signals are not for it */
    int rc = pthread_create(&th, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

static int py_attach_pending(void *arg)
{
    (void)arg;
    if (!py_attached && py_inside_import_lock())
        py_retry_later(py_attach_pending);
    else if (!py_attached)
        py_attach();
    return 0;
}

static void *py_wait_for_interpreter(void *arg)
{
    (void)arg;
    prof_tls_busy = 1;
    for (int i = 0; i < 60000; i++) {
        if (py.IsInitialized()) {
            py.AddPendingCall(py_attach_pending, NULL);
            return NULL;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void python_start(int argc, char **argv)
{
    if (!py_sym("PySys_AddAuditHook"))
        return; /* not a Python process (or libpython comes later, by dlopen) */
    if (py_resolve_api() != 0) {
        collector_note("Python found but part of its C API is missing; Python profiling is off");
        return;
    }
    int minor = 0;
    if (sscanf(py.GetVersion(), "3.%d", &minor) != 1 || minor < 8 || minor > 13) {
        collector_note("Python %.20s is not supported (3.8 to 3.13); Python profiling is off",
                       py.GetVersion());
        return;
    }
    py.minor = minor;
    if (minor >= 11 && !py.FrameGetGlobals)
        return;
    python_tree_init((uint64_t)settings_int(SETTING_PROF_PY_SPAN_US) * 1000u);
    py_started = 1;
    if (attach_starting())
        return; /* the interpreter runs already: python_attach_late */
    if (py_debug_allocator(argc, argv)) {
        if (python_start_helper(py_wait_for_interpreter, NULL) != 0)
            collector_note("cannot start the Python attach thread; Python profiling is off");
        return;
    }
    if (py.AddAuditHook(py_audit_hook, NULL) != 0)
        collector_note("cannot add the Python audit hook; Python profiling is off");
}

/* profrun attach: the interpreter runs already, so no run_* event will come. The audit
 * hook and our profile functions go in through a pending call, which the main thread
 * runs under the GIL between two bytecodes; `ready` runs there next (each attach: the
 * window opens there). */
static void (*py_late_ready)(void);

static int py_attach_late_call(void *arg)
{
    (void)arg;
    if (!py_attached && py_inside_import_lock()) {
        py_retry_later(py_attach_late_call);
        return 0;
    }
    if (!py_attached) {
        if (py.AddAuditHook(py_audit_hook, NULL) != 0)
            py.ErrClear(); /* a hook of the program's refused ours: no gap tracking */
        py_attach();
    }
    if (py_late_ready)
        py_late_ready();
    return 0;
}

int python_attach_late(void (*ready)(void))
{
    if (!py_started || !py.IsInitialized() || (py.IsFinalizing && py.IsFinalizing()))
        return -1;
    /* also when attached already (a second attach, a preloaded process): the window then
     * opens in the main thread between two bytecodes, so that every Python call begun
     * after its opening time is seen */
    py_late_ready = ready;
    if (py.AddPendingCall(py_attach_late_call, NULL) != 0)
        return -1;
    python_nudge_main_thread();
    return 0;
}

static void python_after_fork_child(void)
{
    python_threads_after_fork_child();
    python_tree_after_fork_child();
    python_events_after_fork_child();
}

const struct preload_layer python_layer = {
    .name = "python",
    .enable = SETTING_PROF_PYTHON,
    .load = python_threads_init,
    .start = python_start,
    .after_fork_child = python_after_fork_child,
};
