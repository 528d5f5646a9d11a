"""Python code that calls the CUDA runtime (through a small library loaded with ctypes,
as an extension would) from two functions, a known number of times
(test_python_layers.py). argv[1]: the library (test/fixtures/python/cuda_calls.c)."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])


def allocate(n):
    return lib.fixture_allocate(n)


def query(n):
    return lib.fixture_query(n)


def main():
    print("failed", allocate(3), query(5))


main()
