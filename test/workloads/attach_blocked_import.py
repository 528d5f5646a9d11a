"""A program to attach to while its main thread waits inside importlib's module lock
(test/e2e/test_attach.py): a thread imports a module whose code sleeps 2 s, and the main
thread imports the same module meanwhile, so it waits in _ModuleLock.acquire, between
`_blocking_on[tid] = self` and its `del` (3.8-3.11). Then it calls work() 200 times.

    attach_blocked_import.py DIR    DIR: where the slow module is written

Prints "ready <pid>" (flushed) once the main thread is about to wait, then its result."""
import os
import sys
import threading
import time


def work(i):
    return sum(range(i % 50 + 50))


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "slowmod.py"), "w") as f:
        f.write("import time\ntime.sleep(2)\nVALUE = 7\n")
    sys.path.insert(0, folder)
    t = threading.Thread(target=lambda: __import__("slowmod"))
    t.start()
    time.sleep(0.3)
    print("ready %d" % os.getpid(), flush=True)
    import slowmod  # waits in importlib's module lock for the thread's import
    t.join()
    total = 0
    for i in range(200):
        total += work(i)
        time.sleep(0.001)
    print("imported %d, result %d" % (slowmod.VALUE, total), flush=True)


if __name__ == "__main__":
    main()
