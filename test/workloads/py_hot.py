"""Python-heavy work: fib(N) and a loop of small method calls (bench_python.py, the
tottime test).

Prints the seconds the work took (perf_counter around it, interpreter start excluded)."""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self, k):
        self.n += k
        return self.n


def methods(rounds):
    c = Counter()
    for i in range(rounds):
        c.bump(i & 3)
    return c.n


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    t0 = time.perf_counter()
    fib(n)
    methods(rounds)
    print("%.6f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
