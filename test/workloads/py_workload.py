"""Deterministic Python workload for the exact-count tests of the Python profiler.

Every function here is called a number of times that depends only on the code: no timing,
hash seeds or lazy imports. It covers recursion, generators (yield, yield from, send,
throw, close), exceptions raised and caught across frames, closures, classes with methods,
properties, static and class methods, builtins and C methods, three threads doing known
work, and a forked worker that leaves through os._exit(0).

Run it with test/workloads/site_preload on PYTHONPATH: its sitecustomize imports the modules
used here before the script starts, so that the script itself triggers no import machinery
(whose calls depend on the interpreter's import state, not on this code).

    PYTHONPATH=test/workloads/site_preload python3 test/workloads/py_workload.py [scale]
"""
import gc
import math
import os
import sys
import threading
import warnings

THREADS = 3


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def chained(n):
    yield from countdown(n)
    yield from countdown(n)


def accumulator():
    total = 0
    while True:
        value = yield total
        if value is None:
            return
        total += value


def guarded():
    try:
        while True:
            yield 1
    except KeyError:
        yield -1


def generators(rounds):
    acc = 0
    for _ in range(rounds):
        acc += sum(countdown(5))
        acc += len(list(chained(3)))
        a = accumulator()
        next(a)
        for v in (1, 2, 3):
            acc += a.send(v)
        a.close()
        g = guarded()
        next(g)
        acc += g.throw(KeyError("k"))
        g.close()
    return acc


class WorkError(Exception):
    pass


def fail(depth):
    if depth == 0:
        raise WorkError(depth)
    return fail(depth - 1)


def catcher(rounds):
    caught = 0
    for i in range(rounds):
        try:
            fail(i % 4)
        except WorkError:
            caught += 1
        try:
            [].pop()
        except IndexError:
            caught += 1
        try:
            next(iter(()))
        except StopIteration:
            caught += 1
    return caught


def make_adder(k):
    def add(x):
        return x + k
    return add


def make_counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count
    return bump


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    @property
    def length(self):
        return math.sqrt(self.x * self.x + self.y * self.y)

    def scaled(self, k):
        return Point(self.x * k, self.y * k)

    @staticmethod
    def origin():
        return Point(0, 0)

    @classmethod
    def from_pair(cls, pair):
        return cls(pair[0], pair[1])

    def __lt__(self, other):
        return self.length < other.length


def objects(rounds):
    total = 0.0
    add3 = make_adder(3)
    bump = make_counter()
    for i in range(rounds):
        p = Point.from_pair((i, add3(i)))
        q = p.scaled(2)
        total += q.length + Point.origin().length
        bump()
    pts = [Point(i % 7, i % 5) for i in range(rounds)]
    ordered = sorted(pts)
    return total + ordered[-1].length + bump()


def builtins_and_c(rounds):
    out = []
    table = {}
    for i in range(rounds):
        out.append(i * i)
        table[i % 10] = table.get(i % 10, 0) + 1
        if isinstance(i, int) and len(out) > 3:
            out.pop(0)
    words = [str(i) for i in range(rounds)]
    joined = ",".join(words)
    keyed = sorted(words, key=lambda w: (len(w), w))
    values = [math.floor(math.sqrt(i)) for i in range(rounds)]
    return len(joined) + len(keyed) + sum(values) + max(values) + min(table.values())


def thread_work(index, results):
    results[index] = fib(10 + index) + generators(3 + index) + catcher(5 * (index + 1))


def run_threads():
    results = [0] * THREADS
    threads = [threading.Thread(target=thread_work, args=(i, results)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def child_work():
    return fib(9) + catcher(7) + len(list(chained(4)))


def fork_worker():
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        print("child", child_work())
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return status >> 8


def main(scale):
    gc.disable()  # collections would run at allocation counts, which the profiler changes
    # 3.12+ warns at fork when /proc shows other threads: a thread just joined may still
    # be there for a moment, and the warning runs Python code. A test checks the warning.
    warnings.simplefilter("ignore", DeprecationWarning)
    # Threads run one at a time, each to completion, whatever the machine's speed: the
    # handshake inside threading then takes the same path in every run.
    sys.setswitchinterval(1000.0)
    print("fib", fib(15 + scale))
    print("generators", generators(20 * scale))
    print("catcher", catcher(40 * scale))
    print("objects", objects(50 * scale))
    print("builtins", builtins_and_c(200 * scale))
    print("threads", run_threads())
    if hasattr(os, "fork"):
        print("fork status", fork_worker())
    print("done")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
