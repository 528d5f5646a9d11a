"""CUDA runtime calls under a capture window, for test/e2e/test_capture_window.py: with the
runtime double first in LD_LIBRARY_PATH, N cudaMemset calls on one device buffer, the
process sending itself PROF_WINDOW_SIGNAL before iterations K... (-1: before cudaMalloc,
the first call); the calls go through the
global symbol scope, so a preloaded profiler sees them as a program's own calls would.

    window_cuda.py N K...
"""
import ctypes
import os
import signal
import sys


def main():
    n, marks = int(sys.argv[1]), {int(k) for k in sys.argv[2:]}
    ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    rt = ctypes.CDLL(None)  # our wrappers first, as for a program linked with libcudart
    sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
    if -1 in marks:
        os.kill(os.getpid(), sig)
    ptr = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(4096)) == 0
    for i in range(n):
        if i in marks:
            os.kill(os.getpid(), sig)
        rt.cudaMemset(ptr, ctypes.c_int(0), ctypes.c_size_t(1024))
    rt.cudaDeviceSynchronize()
    rt.cudaFree(ptr)
    print("done")


if __name__ == "__main__":
    main()
