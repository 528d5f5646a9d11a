"""Python-heavy training steps: each of N steps runs fib(K) in Python, then one SGD step of
a tiny torch model (bench_py_window.py, the PROF_STEPS case).

    py_hot_steps.py [N] [K]      defaults 200 and 22

Prints the seconds the steps took (perf_counter around them, interpreter start and the
import of torch excluded)."""
import sys
import time

import torch


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 22
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    t0 = time.perf_counter()
    for _ in range(steps):
        fib(k)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    print("%.6f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
