"""Loop bodies that call several functions and builtins in turn (test_python_counts.py):
the Python layer's fast path guesses each call from the one made before it by the same
caller, and must count every call exactly whether the guess holds or not."""
import math
import sys


def a(x):
    return x + 1


def b(x):
    return math.sqrt(x)


def c(x):
    return len(str(x))


def dispatch(f, x):
    # one call path reached with a different callee each time
    return f(x)


def body(i):
    a(i)
    b(i)
    c(i)
    a(i)  # the same function after another, then again after itself below
    a(i)
    dispatch(a, i)
    dispatch(b, i)
    dispatch(c, i)
    abs(i)
    min(i, 3)
    max(i, 2)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    for i in range(n):
        body(i)
        if i % 3 == 0:  # breaks the sequence one time in three
            c(i)
            dispatch(c, i)


if __name__ == "__main__":
    main()
