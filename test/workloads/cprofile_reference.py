"""cProfile's counts for a Python workload: every thread, every forked child, merged.

    python3 cprofile_reference.py WORKLOAD OUT.json [ARGS...]

Runs WORKLOAD as __main__ (sys.argv = [WORKLOAD] + ARGS) under cProfile's profiler
(`_lsprof`, the engine of cProfile) and writes OUT.json: {key: [ncalls, primitive_calls,
tottime_s, cumtime_s]} where key is json.dumps([file, firstlineno, name]), exactly
cProfile's key (builtins: ["~", 0, "<built-in method builtins.len>"]). Entries with the
same key (two code objects on one line) are summed. Run it with the same PYTHONPATH as the
run it is compared with (test/workloads/site_preload): the harness imports nothing that the
workload could import, so the workload meets the same import state as in a bare run.

What the harness adds, and takes back out, so that the result is what the unmodified
program calls:
- its own frames (this file) and the profiler's own methods (enable, disable, getstats);
- it makes the __main__ loader (SourceFileLoader.__init__, a Python call) after profiling
  starts, as the interpreter does after the cpython.run_file audit event;
- atexit handlers registered before the harness's own (by site's .pth files) are run
  from inside it, while still profiled; the program's handlers, which ran before it, are
  first unregistered (atexit.register is wrapped to learn them);
- the workload's code object runs as a function of its globals (a Python call of
  <module>, as in the bare run), not through builtins.exec, which would make every exec
  the program calls (each import) a recursive call;
- modules the harness imports (atexit from 3.10, _lsprof) are taken back out of
  sys.modules, so that the workload's own imports of them do what they do in a bare run
  (3.8/3.9 keep atexit loaded, as profrun does there);
- os._exit is wrapped to dump a forked child's counts (the wrapper is this file's);
- a forked child inherits the parent's profiler: its counts are the child's final counts
  minus a snapshot taken just before fork. As cProfile counts a call when it returns,
  os.fork counts once in each process and os._exit (which never returns) nowhere;
- threads: each thread is profiled from Thread._bootstrap, its first frame, to its thread
  state's end (profrun gives every new thread state its profile function before the
  thread runs; cProfile's sys.monitoring on 3.12+ sees every thread from there too);
- On 3.12+ one cProfile profiler sees every thread on one shared stack, so a function
  running in one thread while another thread calls it counts as recursive there. A second
  sys.monitoring tool here keeps a stack per thread and gives the primitive counts; its
  call counts are checked against cProfile's (differences are reported on stderr). Its
  cost lands in cProfile's times: CPROFILE_REFERENCE_TIMES=1 leaves it out.
"""
import sys

_MODULES_BEFORE = set(sys.modules)
_FINDERS_BEFORE = set(sys.path_importer_cache)
import _lsprof  # noqa: E402
import _thread  # noqa: E402
import atexit  # noqa: E402
import builtins  # noqa: E402
import marshal  # noqa: E402
import os  # noqa: E402

# A module the harness imported that the bare run has not (atexit, _lsprof) would
# be found already loaded by the workload's own import, which would then call less than in
# the bare run: forget them (the harness keeps its references). Not atexit before 3.10:
# importing it again there makes a new module whose callbacks replace the harness's.
for _name in set(sys.modules) - _MODULES_BEFORE:
    if _name != "atexit" or sys.version_info >= (3, 10):
        del sys.modules[_name]
# Where _lsprof is an extension module (pyenv builds), importing it made the path finder
# of sys.path[0] (the harness's folder, often the workload's): the workload makes its own.
for _path in set(sys.path_importer_cache) - _FINDERS_BEFORE:
    del sys.path_importer_cache[_path]

MONITORING = sys.version_info >= (3, 12)
OWN_KEYS = {("~", 0, "<method '%s' of '_lsprof.Profiler' objects>" % m)
            for m in ("enable", "disable", "getstats")}
OWN_KEYS.add(("~", 0, "<built-in method atexit._run_exitfuncs>"))
UNREGISTER_KEY = ("~", 0, "<built-in method atexit.unregister>")
_real_atexit_register = atexit.register
_program_atexit = {}  # handlers the program registered (after the harness's own)


def _atexit_register(func, *args, **kwargs):
    """atexit.register for the program: the same call, and the harness learns func."""
    _program_atexit[func] = None  # a store: no call for cProfile to count
    return _real_atexit_register(func, *args, **kwargs)

_state = {"parent": os.getpid(), "base": None, "pending": None, "emu_base": None,
          "emu_pending": None, "done": False}
_main_prof = None
_thread_profiles = []  # before 3.12: one profiler per thread
_real_exit = os._exit


def code_key(code):
    return (code.co_filename, code.co_firstlineno, code.co_name)


HARNESS = code_key.__code__.co_filename  # as this file's code objects name it


def entry_key(code):
    """cProfile.label: a code object, or the string _lsprof made for a builtin."""
    if isinstance(code, str):
        return ("~", 0, code)
    return code_key(code)


def c_label(fn):
    """_lsprof's normalizeUserObj: the name cProfile gives a builtin function object."""
    name = fn.__name__
    owner = fn.__self__
    if owner is None:
        mod = fn.__module__
        modname = mod if isinstance(mod, str) else getattr(mod, "__name__", None)
        if modname and modname != "builtins":
            return "<%s.%s>" % (modname, name)
        return "<%s>" % name
    for klass in type(owner).__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return repr(found)
    mod = fn.__module__
    if isinstance(mod, str):
        return "<built-in method %s.%s>" % (mod, name)
    return "<built-in method %s>" % name


# ---- 3.12+: per-thread recursion levels, from a second sys.monitoring tool ----
class PerThreadCounter:
    """Counts calls like _lsprof's sys.monitoring callbacks, but with a stack per thread."""

    TOOL = 4

    def __init__(self):
        self.ncalls = {}
        self.recursive = {}
        self.stacks = {}
        self.levels = {}
        self.entered = set()
        self.labels = {}

    def start(self):
        mon = sys.monitoring
        ev = mon.events
        mon.use_tool_id(self.TOOL, "profrun-reference")
        for event, fn in ((ev.PY_START, self.py_enter), (ev.PY_RESUME, self.py_enter),
                          (ev.PY_THROW, self.py_enter_exc), (ev.PY_RETURN, self.py_leave),
                          (ev.PY_YIELD, self.py_leave), (ev.PY_UNWIND, self.py_leave_exc),
                          (ev.CALL, self.c_enter), (ev.C_RETURN, self.c_leave),
                          (ev.C_RAISE, self.c_leave)):
            mon.register_callback(self.TOOL, event, fn)
        mon.set_events(self.TOOL, ev.PY_START | ev.PY_RESUME | ev.PY_THROW | ev.PY_RETURN
                       | ev.PY_YIELD | ev.PY_UNWIND | ev.CALL | ev.C_RETURN | ev.C_RAISE)

    def stop(self):
        sys.monitoring.set_events(self.TOOL, 0)

    def _enter(self, key):
        tid = _thread.get_ident()
        stack = self.stacks.get(tid)
        if stack is None:
            stack = self.stacks[tid] = []
            self.levels[tid] = {}
        stack.append(key)
        levels = self.levels[tid]
        levels[key] = levels.get(key, 0) + 1
        self.entered.add(key)

    def _leave(self, key):
        tid = _thread.get_ident()
        stack = self.stacks.get(tid)
        if not stack:
            return
        stack.pop()
        if key not in self.entered:
            return
        levels = self.levels[tid]
        level = levels.get(key, 0) - 1
        levels[key] = level
        self.ncalls[key] = self.ncalls.get(key, 0) + 1
        if level != 0:
            self.recursive[key] = self.recursive.get(key, 0) + 1

    def _cfunc_label(self, callable_, arg0):
        if isinstance(callable_, type(len)):
            fn = callable_
        elif type(callable_) is type(str.join) and arg0 is not sys.monitoring.MISSING:
            try:
                fn = callable_.__get__(arg0, type(arg0))
            except Exception:
                return None
            if not isinstance(fn, type(len)):
                return None
        else:
            return None
        return c_label(fn)

    def py_enter(self, code, offset):
        self._enter(code)

    def py_enter_exc(self, code, offset, exc):
        self._enter(code)

    def py_leave(self, code, offset, value):
        self._leave(code)

    def py_leave_exc(self, code, offset, exc):
        self._leave(code)

    def c_enter(self, code, offset, callable_, arg0):
        label = self._cfunc_label(callable_, arg0)
        if label is not None:
            self._enter(label)

    def c_leave(self, code, offset, callable_, arg0):
        label = self._cfunc_label(callable_, arg0)
        if label is not None:
            self._leave(label)

    def snapshot(self):
        return (dict(self.ncalls), dict(self.recursive))

    @staticmethod
    def keyed(snap):
        ncalls, recursive = snap
        out = {}
        for k, n in ncalls.items():
            key = entry_key(k)
            nc, rc = out.get(key, (0, 0))
            out[key] = (nc + n, rc + recursive.get(k, 0))
        return out


# Its callbacks are Python: their time falls inside cProfile's intervals and would more
# than double the times of short functions. CPROFILE_REFERENCE_TIMES=1 leaves it out, for
# comparing times (a single-threaded workload, where the shared stack is the thread's).
_emu = (PerThreadCounter() if MONITORING and os.environ.get("CPROFILE_REFERENCE_TIMES") != "1"
        else None)


# ---- threads before 3.12 ----
def _profiled_thread(function, args, kwargs):
    prof = _lsprof.Profiler()
    _thread_profiles.append(prof)
    prof.enable()
    # Never disabled: what the thread runs after its bootstrap returned (the Thread object
    # dying with this frame and its weakref callbacks, thread-local dicts cleared with the
    # thread state) is the program's, and profrun's profile function sees it too.
    function(*args, **kwargs)


def _install_thread_profiling():
    import threading  # loaded already by site_preload's sitecustomize
    real_start = threading._start_new_thread

    def start_new_thread(function, args, kwargs=None):
        return real_start(_profiled_thread, (function, args, kwargs or {}))
    threading._start_new_thread = start_new_thread


# ---- fork ----
def _before_fork():
    _state["pending"] = _main_prof.getstats()
    if _emu is not None:
        _state["emu_pending"] = _emu.snapshot()


def _after_fork_child():
    _state["base"] = _state["pending"]
    _state["emu_base"] = _state["emu_pending"]


def _child_file(out, pid):
    return "%s.child%d" % (out, pid)


def _stats_table(entries):
    table = {}
    for e in entries or ():
        key = entry_key(e.code)
        nc, cc, tt, ct = table.get(key, (0, 0, 0.0, 0.0))
        table[key] = (nc + e.callcount, cc + e.callcount - e.reccallcount,
                      tt + e.inlinetime, ct + e.totaltime)
    return table


def _minus(final, base):
    out = {}
    for key, (nc, cc, tt, ct) in final.items():
        b = base.get(key, (0, 0, 0.0, 0.0))
        if nc - b[0]:
            out[key] = (nc - b[0], cc - b[1], tt - b[2], ct - b[3])
    return out


def _write_child(out, final, emu_final, exiting):
    """In a forked child: write what this process called since the fork."""
    table = _minus(_stats_table(final), _stats_table(_state["base"]))
    # cProfile counts a call when it returns: os.fork returns in both processes and counts
    # once in each; os._exit never returns and counts nowhere. The harness keeps that.
    fix = {}
    for key, d in fix.items():
        nc, cc, tt, ct = table.get(key, (0, 0, 0.0, 0.0))
        table[key] = (nc + d, cc + d, tt, ct)
    emu = {}
    if emu_final is not None:
        base = PerThreadCounter.keyed(_state["emu_base"] or ({}, {}))
        for key, (nc, rc) in PerThreadCounter.keyed(emu_final).items():
            b = base.get(key, (0, 0))
            emu[key] = (nc - b[0], rc - b[1])
        for key, d in fix.items():
            nc, rc = emu.get(key, (0, 0))
            emu[key] = (nc + d, rc)
    data = marshal.dumps({"table": table, "emu": emu})
    fd = os.open(_child_file(out, os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    os.close(fd)


def _exit_wrapper(status):
    final = _main_prof.getstats()
    emu_final = _emu.snapshot() if _emu is not None else None
    _main_prof.disable()
    if _emu is not None:
        _emu.stop()
    if os.getpid() != _state["parent"]:
        _write_child(_state["out"], final, emu_final, exiting=True)
    _real_exit(status)


# ---- the end ----
def _finish():
    if _state["done"]:
        return
    _state["done"] = True
    # Handlers registered before this one (at startup, by site's .pth files) run after it:
    # run them now, still profiled, as they run in the program's own exit. Only then: the
    # nested run would run the program's handlers (which ran already) a second time.
    if _state["atexit_before"]:
        # The program's handlers ran already; take them out first (atexit.unregister
        # calls that the result does not count).
        for func in _program_atexit:  # (iterating is no call either)
            atexit.unregister(func)
        atexit._run_exitfuncs()
    _main_prof.disable()
    if _emu is not None:
        _emu.stop()
    out = _state["out"]
    emu_final = _emu.snapshot() if _emu is not None else None
    if os.getpid() != _state["parent"]:
        _write_child(out, _main_prof.getstats(), emu_final, exiting=False)
        return
    table = {}

    def add(key, nc, cc, tt, ct):
        a = table.get(key, (0, 0, 0.0, 0.0))
        table[key] = (a[0] + nc, a[1] + cc, a[2] + tt, a[3] + ct)

    for key, v in _stats_table(_main_prof.getstats()).items():
        add(key, *v)
    for prof in _thread_profiles:
        for key, v in _stats_table(prof.getstats()).items():
            add(key, *v)
    emu = PerThreadCounter.keyed(emu_final) if emu_final is not None else {}
    emu = {k: list(v) for k, v in emu.items()}
    folder = os.path.dirname(os.path.abspath(out)) or "."
    prefix = os.path.basename(out) + ".child"
    for name in sorted(os.listdir(folder)):
        if name.startswith(prefix):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                child = marshal.loads(f.read())
            os.unlink(path)
            for key, v in child["table"].items():
                add(key, *v)
            for key, (nc, rc) in child["emu"].items():
                e = emu.setdefault(key, [0, 0])
                e[0] += nc
                e[1] += rc
    result = {}
    if _state["atexit_before"] and _program_atexit:
        add(UNREGISTER_KEY, -len(_program_atexit), -len(_program_atexit), 0.0, 0.0)
    for key, (nc, cc, tt, ct) in table.items():
        if key[0] == HARNESS or key in OWN_KEYS or nc == 0:
            continue
        if key in emu:
            enc, erc = emu[key]
            if enc == nc:
                if cc != nc - erc:
                    sys.stderr.write("cprofile_reference: %s: primitive calls %d on one "
                                     "shared stack, %d per thread\n" % (key, cc, nc - erc))
                cc = nc - erc
            else:
                sys.stderr.write("cprofile_reference: per-thread counter saw %d calls of %s, "
                                 "cProfile %d; keeping cProfile's primitive count\n"
                                 % (enc, key, nc))
        elif emu_final is not None:
            sys.stderr.write("cprofile_reference: per-thread counter missed %s\n" % (key,))
        result[key] = (nc, cc, tt, ct)
    import json
    with open(out, "w") as f:
        f.write("{\n%s\n}\n" % ",\n".join("%s: %s" % (json.dumps(json.dumps(list(k))),
                                                         json.dumps(list(v)))
                                             for k, v in sorted(result.items())))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        _real_exit(2)
    workload = os.path.abspath(args[0])
    _state["out"] = os.path.abspath(args[1])
    with open(workload, "rb") as f:
        code = compile(f.read(), workload, "exec")
    sys.argv = [workload] + args[2:]
    sys.path[0] = os.path.dirname(workload)
    main_globals = {"__name__": "__main__", "__file__": workload, "__builtins__": builtins,
                    "__doc__": None, "__package__": None, "__spec__": None,
                    "__loader__": None, "__cached__": None}
    if not MONITORING:
        _install_thread_profiling()
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_child)
    os._exit = _exit_wrapper
    _state["atexit_before"] = atexit._ncallbacks()
    atexit.register(_finish)  # first registered, last run: after the program's handlers
    if _state["atexit_before"]:
        # Whoever registered those imported atexit: it stays loaded, and the program's
        # `import atexit` finds the module patched here.
        atexit.register = _atexit_register
    global _main_prof
    _main_prof = _lsprof.Profiler()
    if _emu is not None:
        _emu.start()
    _main_prof.enable()
    # What the interpreter does between the cpython.run_file audit event and the script's
    # first line: it makes the __main__ module's loader (a Python __init__ call).
    loader_type = sys.modules["_frozen_importlib_external"].SourceFileLoader
    main_globals["__loader__"] = loader_type("__main__", workload)
    # The module's code runs as the interpreter runs it, with no builtins.exec around it:
    # an exec there would make every exec the program calls (each import) a recursive call.
    type(main)(code, main_globals)()


if __name__ == "__main__":
    main()
