"""Worker processes for the Python profiler's tests: multiprocessing (fork or spawn) and a
bare os.fork child that leaves through os._exit, like a DataLoader worker.

    python3 py_processes.py mp fork|spawn   # 2 workers, seven() 7 times in each
    python3 py_processes.py os_exit          # forked child: seven() 7 times, os._exit(3)
"""
import os
import sys


def seven():
    return 7


def worker(tag):
    total = 0
    for _ in range(7):
        total += seven()
    print("worker", tag, total)
    sys.stdout.flush()


def run_mp(method):
    import multiprocessing as mp
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=worker, args=(i,)) for i in range(2)]
    for p in procs:
        p.start()
        p.join()  # one at a time: the output's order is fixed
    print("exit codes", [p.exitcode for p in procs])


def run_os_exit():
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        worker("child")
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    print("child status", status >> 8)


if __name__ == "__main__":
    if sys.argv[1] == "mp":
        run_mp(sys.argv[2])
    else:
        run_os_exit()
