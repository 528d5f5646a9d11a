"""Runs test/workloads/py_hot.py with a do-nothing hook installed (bench_python.py).

    python3 py_hook_floor.py LIB.so none|clock WORKLOAD [ARGS...]

LIB.so is test/bench/py_hook_floor.c built; the hook is the one our Python layer uses on
this interpreter, installed before the workload's main() runs; its callbacks do nothing
(none) or only read the clock (clock)."""
import ctypes
import runpy
import sys

# The events preload/python/python_attach.c subscribes to on 3.12+.
EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD", "PY_UNWIND",
          "CALL", "C_RETURN", "C_RAISE")


def install(lib, mode):
    suffix = "_clock" if mode == "clock" else ""
    if sys.version_info >= (3, 12):
        mon = sys.monitoring
        tool = 4
        mon.use_tool_id(tool, "hook floor")
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
        fn = new(ctypes.addressof(ctypes.c_char.in_dll(lib, "floor_monitor%s_def" % suffix)), None, None)
        mask = 0
        for name in EVENTS:
            event = getattr(mon.events, name)
            mon.register_callback(tool, event, fn)
            mask |= event
        mon.set_events(tool, mask)
    else:
        func = getattr(lib, "floor_profile" + suffix)
        ctypes.pythonapi.PyEval_SetProfile(ctypes.cast(func, ctypes.c_void_p), None)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    mode = sys.argv[2]
    sys.argv = sys.argv[3:]
    install(lib, mode)
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
