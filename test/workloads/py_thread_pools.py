"""Work run on thread pools: multiprocessing.pool.ThreadPool and concurrent.futures.

Every pool thread, its helper threads (ThreadPool's task, result and worker handlers) and
the executor's workers run Python that cProfile counts in its per-thread runs: the counts
must equal profrun's function by function. The pools' own plumbing loops as often as
its threads find work waiting, so each step ends with settle(): with the switch interval
at 1000 s a thread runs until it blocks, and the sleep lets every thread woken by the step
reach the point where it waits for the next. Pools are closed and joined (not terminated),
so that each thread is joined at a known point. One count still depends on the machine:
threading's calls of lock.locked() (_maintain_shutdown_locks, at each start and stop of a
non-daemon thread, asks each thread not yet joined whether it ended).

It imports the pools itself (not through site_preload): they register atexit handlers
at import, which the reference harness must find registered after its own.

    PYTHONPATH=test/workloads/site_preload python3 test/workloads/py_thread_pools.py [scale]
"""
import concurrent.futures
import gc
import multiprocessing.synchronize
import sys
import threading
import time
from multiprocessing.pool import ThreadPool

SETTLE_S = 0.05


def settle():
    time.sleep(SETTLE_S)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def square(x):
    return x * x + fib(8)


def words(i):
    return ",".join(str(j) for j in range(i % 7))


def with_thread_pool(n):
    # ThreadPool makes multiprocessing locks, named by a random sequence that draws until
    # a draw fits (as many calls as the seed makes it): seed it.
    multiprocessing.synchronize.SemLock._rand.rng.seed(0)
    pool = ThreadPool(3)
    settle()
    total = sum(pool.map(square, range(n)))
    settle()
    # imap in one chunk: results that arrive out of order take another path in its
    # iterator, and the order is the threads'.
    total += sum(len(w) for w in pool.imap(words, range(n), chunksize=n))
    settle()
    for i in range(3):
        total += pool.apply_async(fib, (10 + i,)).get()
        settle()
    total += sum(pool.starmap(pow, [(i, 2) for i in range(n)]))
    settle()
    pool.close()
    pool.join()
    return total


def with_executor(n):
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=3)
    # The executor starts a thread at a submit that finds none idle: all three are
    # started here, each held at the barrier until the third arrives, so that later
    # submits find idle threads in the same way in every run.
    barrier = threading.Barrier(3)
    started = [ex.submit(barrier.wait) for _ in range(3)]
    settle()
    total = sum(f.result() for f in started)
    settle()
    for i in range(n):
        total += ex.submit(square, i).result()
        settle()
    futures = [ex.submit(words, i) for i in range(n)]
    settle()
    total += sum(len(f.result()) for f in futures)
    total += sum(ex.map(fib, [5 + i % 4 for i in range(n)]))
    settle()
    ex.shutdown(wait=True)
    return total


def main(scale):
    gc.disable()  # collections would run at allocation counts, which the profiler changes
    sys.setswitchinterval(1000.0)
    print("thread pool", with_thread_pool(10 * scale))
    print("executor", with_executor(6 * scale))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
