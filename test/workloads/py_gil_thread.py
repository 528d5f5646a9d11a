"""Python called from a thread made in C (test/fixtures/python/gil_thread.c): the thread
takes the GIL with PyGILState_Ensure, so neither threading nor its profile hook knows it.

    python3 py_gil_thread.py LIBGIL_THREAD.so [fork|key-at-exit]

from_c runs 4 times in that thread (each time under a new thread state) and calls
in_c_thread 3 times each; the main thread calls in_main_thread once. With "fork", a forked
child does the same first (CPython makes its thread-state key anew in a child) and leaves
through os._exit. With "key-at-exit", the library makes a pthread key after the
interpreter has finalized and sets it to (void *)1."""
import ctypes
import os
import sys


def in_c_thread(n):
    return sum(range(n))


def from_c():
    for _ in range(3):
        in_c_thread(100)


def in_main_thread():
    return len(sys.argv)


def run(lib):
    failed = lib.gil_thread_call(from_c, 4)
    if failed:
        sys.exit("gil_thread_call: %d calls failed" % failed)
    in_main_thread()


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.gil_thread_call.argtypes = [ctypes.py_object, ctypes.c_int]
    if sys.argv[2:] == ["key-at-exit"]:
        lib.gil_thread_key_at_exit()
    if sys.argv[2:] == ["fork"]:
        pid = os.fork()
        if pid == 0:
            run(lib)
            sys.stdout.flush()
            os._exit(0)
        os.waitpid(pid, 0)
    run(lib)
    print("done")


if __name__ == "__main__":
    main()
