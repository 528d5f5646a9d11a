"""Python calling C through ctypes, for mixed-stack sampling: py_outer -> py_inner ->
burn_c (libburn_c.so) burns CPU time in C; py_spin burns it in Python."""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
lib.burn_c.argtypes = [ctypes.c_double]


def py_inner(seconds):
    lib.burn_c(seconds)


def py_outer(seconds):
    py_inner(seconds)


def py_spin(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


py_outer(float(sys.argv[2]) if len(sys.argv) > 2 else 0.6)
py_spin(float(sys.argv[3]) if len(sys.argv) > 3 else 0.3)
print("py_mixed_burn done")
