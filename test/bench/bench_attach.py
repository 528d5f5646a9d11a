"""profrun attach (issue 21): how long the target's chosen thread is stopped, and how long
from running `profrun attach` to the first event that can be recorded (the window's
opening: the Python hook is in place then).

    BUILD=build python3 test/bench/bench_attach.py [ROUNDS]

For each target (test/workloads/attach_loop.py: a Python loop on the newest pyenv 3.11,
a torch loop on Debian's python3 when torch is there), ROUNDS fresh processes (default 5)
are attached once for 0.3 s and then once more (the library is loaded already). It prints,
per target and attach (median, max over the rounds):

    stopped ms     the chosen thread's stop, PTRACE_INTERRUPT to PTRACE_DETACH (profrun -v)
    gap ms         the longest pause between two iterations of the target's loop around
                   the attach, less its usual one (1 ms sleep + work): what the program saw
    inject ms      profrun attach started -> the target let go with the library's thread
                   running (profrun -v)
    first event ms profrun attach started -> the window's opening (META window_open)

goal: stopped in the order of a pthread_create (well under 10 ms); first event within a
few tens of ms when the library is cached."""
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFRUN = os.path.join(BUILD, "bin", "profrun")
PROFREPORT = os.path.join(BUILD, "bin", "profreport")
LOOP = os.path.join(ROOT, "test", "workloads", "attach_loop.py")


def window_opens(outdir):
    opens = []
    for path in glob.glob(os.path.join(outdir, "*.trace")):
        dump = subprocess.run([PROFREPORT, "dump", path], capture_output=True, text=True).stdout
        opens += [int(m) for m in re.findall(r'META window_open="(\d+) ', dump)]
    return sorted(opens)


def loop_gaps(log, t0, t1):
    """Longest gap between two iteration starts in [t0, t1], and the median gap."""
    starts = [int(l.split()[0]) for l in open(log) if l.endswith("start\n")]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    near = [b - a for a, b in zip(starts, starts[1:]) if t0 <= b and a <= t1]
    return (max(near) if near else 0), statistics.median(gaps)


def one_attach(pid, outdir, log):
    t0 = time.time_ns()
    got = subprocess.run([PROFRUN, "attach", "-v", "--no-report", "--duration", "0.3", "-o",
                          outdir, str(pid)], capture_output=True, text=True, timeout=300)
    t1 = time.time_ns()
    if got.returncode != 0:
        raise SystemExit("attach failed: " + got.stderr)
    stopped = float(re.search(r"stopped for ([\d.]+) ms", got.stderr).group(1))
    inject = float(re.search(r"injected in ([\d.]+) ms", got.stderr).group(1))
    opens = [o for o in window_opens(outdir) if o >= t0]
    first = (opens[0] - t0) / 1e6 if opens else float("nan")
    time.sleep(0.2)
    gap, usual = loop_gaps(log, t0, t1)
    return stopped, max(0.0, (gap - usual) / 1e6), inject, first


def run_target(python, mode, rounds):
    rows = {"first attach": [], "again": []}
    for _ in range(rounds):
        tmp = tempfile.mkdtemp(prefix="bench-attach-")
        log = os.path.join(tmp, "log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
        env["ATTACH_LOG"] = log
        p = subprocess.Popen([python, LOOP, mode, "100000"], env=env, stdout=subprocess.PIPE,
                             text=True)
        pid = int(p.stdout.readline().split()[1])
        time.sleep(1.0)
        try:
            rows["first attach"].append(one_attach(pid, os.path.join(tmp, "out"), log))
            rows["again"].append(one_attach(pid, os.path.join(tmp, "out"), log))
        finally:
            p.kill()
            p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    for name, vals in rows.items():
        cols = list(zip(*vals))
        print("  %-13s" % name + "".join(
            "  %s %.2f (max %.2f)" % (label, statistics.median(c), max(c))
            for label, c in zip(("stopped ms", "gap ms", "inject ms", "first event ms"), cols)))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    py311 = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.11.*/bin/python3")))
    targets = [(py311[-1] if py311 else "/usr/bin/python3", "py")]
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode == 0:
        targets.append(("/usr/bin/python3", "torch"))
    for python, mode in targets:
        print("== profrun attach, %s loop on %s, %d rounds" % (mode, python, rounds))
        run_target(python, mode, rounds)


if __name__ == "__main__":
    main()
