# Imports the modules that the Python workloads use before any of them starts, so that
# their import statements find the modules loaded and call no import machinery: those
# calls depend on the interpreter's import state, not on the workload. Put this folder on
# PYTHONPATH for the bare, profiled and cProfile reference runs alike.
import gc  # noqa: F401
import math  # noqa: F401
import threading  # noqa: F401
import warnings  # noqa: F401
