"""CPU-bound Python for sampling without the Python hook (PROF_PYTHON=0):

    py_sample_frames.py pool  fib on the threads of a ThreadPoolExecutor (pool_burn)
    py_sample_frames.py deep  fib at the bottom of a 300-deep recursion (descend), more
                              Python frames than the sampler reads (128)
    py_sample_frames.py flat  fib under a 20-deep recursion (shallow): every frame read

Prints "py_sample_frames MODE done"."""
import sys
from concurrent.futures import ThreadPoolExecutor


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def pool_burn(n):
    return fib(n)


def descend(depth, n):
    return fib(n) if depth == 0 else descend(depth - 1, n)


def shallow(depth, n):
    return fib(n) if depth == 0 else shallow(depth - 1, n)


def main():
    mode = sys.argv[1]
    if mode == "pool":
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(pool_burn, [25] * 12))
    elif mode == "deep":
        for _ in range(8):
            descend(300, 25)
    else:
        for _ in range(8):
            shallow(20, 25)
    print("py_sample_frames %s done" % mode)


if __name__ == "__main__":
    main()
