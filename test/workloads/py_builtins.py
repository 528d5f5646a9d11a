"""Builtins of every kind, each called a known number of times: functions of builtins and
of other modules, methods of builtin types called bound and through their type, class and
static methods of builtin types, methods of extension types, methods a Python subclass
inherits from a C class or overrides, and builtins called from C (map, sorted's key).
cProfile names each with a key of its own ("{built-in method math.sqrt}", "{method 'append'
of 'list' objects}", ...): the keys and counts must equal profrun's, function by function.

    PYTHONPATH=test/workloads/site_preload python3 test/workloads/py_builtins.py [scale]
"""
import collections
import functools
import gc
import io
import itertools
import math
import operator
import random
import sys


class MyList(list):
    def extend(self, items):
        # Overrides a C method: cProfile names list.extend called on a MyList by the
        # override ("<function MyList.extend at 0x...>"), on a list by list's method.
        super().extend(items)
        self.append(len(items))


class MyDict(dict):
    pass


class Text(io.StringIO):
    def getvalue(self):
        # The first call of StringIO.getvalue, through its type, is on a Text: cProfile
        # keys a builtin by its C function and names it at its first call by
        # repr(type(self).getvalue), this override (3.12+ pass the descriptor and self).
        return io.StringIO.getvalue(self)


class Seeded(random.Random):
    pass


def module_functions(n):
    total = 0.0
    for i in range(n):
        total += math.sqrt(i) + math.floor(i / 3) + abs(-i) + len(str(i))
        total += max(i, 3) + min(i, 5) + divmod(i, 7)[0] + pow(i, 2)
        total += hash((i, "x")) % 3 + isinstance(i, int) + callable(total)
        total += ord(chr(65 + i % 26)) + int(round(i / 2))
    return total


def bound_methods(n):
    items, table, text = [], {}, []
    seen = set()
    for i in range(n):
        items.append(i)
        table[i % 5] = table.get(i % 5, 0) + 1
        table.setdefault(i % 7, i)
        seen.add(i % 9)
        text.append("w%d" % i)
    joined = "-".join(text)
    parts = joined.split("-")
    upper = [p.upper() for p in parts[:n // 2]]
    items.sort(reverse=True)
    items.reverse()
    d = collections.deque(items)
    d.rotate(3)
    d.appendleft(d.pop())
    return len(upper) + len(parts) + sum(table.values()) + len(seen) + d[0]


def through_types(n):
    total = 0
    for i in range(n):
        total += len(str.upper("ab"))          # method descriptor called with its self
        total += list.__len__([1, 2])
        total += int.from_bytes(b"\x01\x02", "big")  # class method of a builtin type
        total += len(dict.fromkeys("abc"))
        total += len(str.maketrans("ab", "cd"))      # static method
        total += float.fromhex("0x1p3").__int__()
        total += bytes.fromhex("0a0b")[0]
    return total


def extension_objects(n):
    buf = io.StringIO()
    rng = Seeded(7)
    plain = random.Random(7)
    for i in range(n):
        buf.write("x%d" % i)
        rng.random()
        plain.random()
        rng.getrandbits(8)
    buf.seek(0)
    data = buf.read()
    buf.close()
    text = Text()
    for i in range(n):
        text.write("y")
        text.getvalue()
        buf = io.StringIO("z")
        buf.getvalue()  # the same C function: counted under the first name
    return len(data) + len(text.getvalue())


def subclasses(n):
    ml = MyList()
    plain = []
    md = MyDict()
    for i in range(n):
        ml.extend((i, i + 1))  # the Python override, which calls list.extend
        plain.extend((i,))     # list.extend on a list
        ml.append(i)          # inherited from list
        md[i] = i
        md.get(i)             # inherited from dict
        md.update({i: i})
    return len(ml) + len(md) + len(plain)


def called_from_c(n):
    words = [str(i) for i in range(n)]
    lengths = list(map(len, words))
    keyed = sorted(words, key=str.lower)
    summed = functools.reduce(operator.add, range(n))
    chained = list(itertools.chain(words, map(str.strip, words)))
    counted = collections.Counter(w[-1] for w in words)
    mx = max(words, key=len)
    return sum(lengths) + len(keyed) + summed + len(chained) + len(counted) + len(mx)


def main(scale):
    gc.disable()  # collections would run at allocation counts, which the profiler changes
    n = 50 * scale
    print("module functions", module_functions(n))
    print("bound methods", bound_methods(n))
    print("through types", through_types(n))
    print("extension objects", extension_objects(n))
    print("subclasses", subclasses(n))
    print("called from C", called_from_c(n))
    sys.stdout.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
