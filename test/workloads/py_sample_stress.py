"""Frames pushed and popped as fast as the interpreter can, for the sampler that reads
them from its signal handler (PROF_PYTHON=0): short-lived threads, generators and
coroutines, exceptions through deep recursion, code objects made and dropped (their
addresses reused), for about SECONDS of CPU time. Prints "py_sample_stress done N"."""
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def gen(n):
    for i in range(n):
        yield i


async def coro(n):
    return sum(gen(n))


def run_coro(n):
    c = coro(n)
    try:
        c.send(None)
    except StopIteration as stop:
        return stop.value


def dive(n):
    if n == 0:
        raise ValueError("bottom")
    return dive(n - 1)


def fresh_code(i):
    """A new code object per call, freed right after: addresses get reused."""
    ns = {}
    exec("def made_%d(x):\n    return x + %d\n" % (i % 7, i), ns)
    return ns["made_%d" % (i % 7)](i)


def churn(rounds):
    total = 0
    for i in range(rounds):
        total += sum(gen(20)) + run_coro(10)
        try:
            dive(50)
        except ValueError:
            total += 1
        if i % 10 == 0:
            total += fresh_code(i)
    return total


def main():
    end = time.process_time() + SECONDS
    total = 0
    while time.process_time() < end:
        threads = [threading.Thread(target=churn, args=(30,)) for _ in range(4)]
        for t in threads:
            t.start()
        total += churn(30)
        for t in threads:
            t.join()
    print("py_sample_stress done %d" % (total > 0))


if __name__ == "__main__":
    main()
