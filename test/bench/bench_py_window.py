"""Cost of the Python layer outside a capture window (issue 12, part 5).

    BUILD=build python3 test/bench/bench_py_window.py [python3 ...]

For each interpreter, test/workloads/py_hot.py (fib(30) + 1 000 000 small method calls, about
3.5 M Python calls; it prints the seconds its work took, interpreter start excluded) runs
three ways, taken in turn ROUNDS times (default 5): bare, under profrun with the window
closed the whole run (PROF_WINDOW_SIGNAL=USR2, never sent), and under profrun recording
(default settings, for scale). On a shared VM other work only adds time: the fastest round
of each is taken (as timeit does), medians printed beside. It prints

    closed ratio = closed / bare    goal: within a few percent of 1 (3.12+: the
                                    sys.monitoring events are off; 3.8-3.11: the profile
                                    function is off every thread state)

and checks that the closed runs counted no Python call.

Then, for each interpreter with torch (Debian's), the PROF_STEPS case: py_hot_steps.py (200
steps, each fib(22) in Python and one SGD step) bare and with PROF_STEPS=100000-100001, a
window its steps never reach, so closed the whole run while every optimizer step is
counted. It prints

    steps closed ratio = closed / bare   goal: within a few percent of 1 (the PyTorch
                                    layer counts the steps; the Python layer is off as above;
                                    before, the profile function stayed on for the steps)"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "..", "workloads", "py_hot.py")
STEPS_WORK = os.path.join(HERE, "..", "workloads", "py_hot_steps.py")
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(HERE, "..", "..", "build")))
PROFRUN = os.path.join(BUILD, "bin", "profrun")
PROFREPORT = os.path.join(BUILD, "bin", "profreport")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
PYENV = "/root/.pyenv/versions"
DEFAULT_PYTHONS = [os.path.join(PYENV, v, "bin", "python3")
                   for v in ("3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")]
DEFAULT_PYTHONS.append("/usr/bin/python3")


def timed(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd, proc.returncode, proc.stderr[-2000:]))
    return float(proc.stdout.split()[-1])


def python_calls(outdir):
    proc = subprocess.run([PROFREPORT, "--python", "--format", "json", outdir],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("profreport failed: %s" % proc.stderr[-2000:])
    return sum(row["ncalls"] for row in json.loads(proc.stdout).get("python") or [])


def bench(python):
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="bench_py_window.")
    closed_env = dict(os.environ, PROF_WINDOW_SIGNAL="USR2")
    times = {"bare": [], "closed": [], "recording": []}
    try:
        for r in range(ROUNDS):
            times["bare"].append(timed([python, WORK]))
            out = os.path.join(tmp, "closed%d" % r)
            times["closed"].append(timed([PROFRUN, "--no-report", "-o", out, "--", python, WORK],
                                         env=closed_env))
            calls = python_calls(out)
            if calls:
                raise RuntimeError("window closed, yet %d Python calls counted" % calls)
            out = os.path.join(tmp, "open%d" % r)
            times["recording"].append(timed([PROFRUN, "--no-report", "-o", out, "--", python,
                                             WORK]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    goal = "goal <= 1.05"
    print("Python %s (%s): bare %.3f s, window closed %.3f s, recording %.3f s "
          "(medians %.3f / %.3f / %.3f); closed ratio %.3f (%s); 0 calls counted while closed"
          % (version, python, best["bare"], best["closed"], best["recording"], med["bare"],
             med["closed"], med["recording"], best["closed"] / best["bare"], goal))


def bench_steps(python):
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        return
    tmp = tempfile.mkdtemp(prefix="bench_py_window.")
    env = dict(os.environ, PROF_STEPS="100000-100001")
    times = {"bare": [], "closed": []}
    try:
        for r in range(ROUNDS):
            times["bare"].append(timed([python, STEPS_WORK]))
            out = os.path.join(tmp, "steps%d" % r)
            times["closed"].append(timed([PROFRUN, "--no-report", "-o", out, "--", python,
                                          STEPS_WORK], env=env))
            calls = python_calls(out)
            if calls:
                raise RuntimeError("window closed, yet %d Python calls counted" % calls)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = {k: min(v) for k, v in times.items()}
    print("PROF_STEPS, Python with torch (%s): bare %.3f s, steps window never reached %.3f s "
          "(medians %.3f / %.3f); steps closed ratio %.3f (goal <= 1.05); 0 calls counted"
          % (python, best["bare"], best["closed"], statistics.median(times["bare"]),
             statistics.median(times["closed"]), best["closed"] / best["bare"]))


def main():
    pythons = sys.argv[1:] or [p for p in DEFAULT_PYTHONS if os.access(p, os.X_OK)]
    for python in pythons:
        bench(python)
    for python in pythons:
        bench_steps(python)


if __name__ == "__main__":
    main()
