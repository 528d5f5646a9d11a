"""Two builds of profrun against each other on the same Python-heavy work, interleaved so
that the load of a shared machine falls on both alike (bench_python.py times one build).

    python3 test/bench/bench_python_ab.py PYTHON BUILD_A BUILD_B [ROUNDS]

Runs test/workloads/py_hot.py bare, under BUILD_A's profrun and under BUILD_B's, in turn,
ROUNDS times (default 15), and prints for each build the fastest, first-quartile and
median seconds and the added ns per call of the fastest (3 692 603 calls)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "..", "workloads", "py_hot.py")
CALLS = 3692603


def timed(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd, proc.stderr[-2000:]))
    return float(proc.stdout.split()[-1])


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    python, builds = sys.argv[1], sys.argv[2:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    out = tempfile.mkdtemp(prefix="bench_ab.")
    bare, times = [], {b: [] for b in builds}
    for _ in range(rounds):
        bare.append(timed([python, WORK]))
        for b in builds:
            times[b].append(timed([os.path.join(b, "bin", "profrun"), "--no-report", "-o", out,
                                   "--", python, WORK]))
    floor = min(bare)
    print("%s: bare %.4f s (fastest of %d)" % (python, floor, rounds))
    for b in builds:
        t = sorted(times[b])
        print("  %-40s fastest %.4f s, q1 %.4f, median %.4f: +%.2f ns/call"
              % (b, t[0], t[len(t) // 4], t[len(t) // 2], (t[0] - floor) / CALLS * 1e9))


if __name__ == "__main__":
    main()
