"""Cost of the Python profiler against cProfile's, on the same Python-heavy work.

    BUILD=build python3 test/bench/bench_python.py [python3 ...]

For each interpreter, one run of this script times test/workloads/py_hot.py
(fib(30) + 1 000 000 small method calls) three ways, as subprocesses taken in turn ROUNDS
times (default 5): bare, under cProfile (`-m cProfile -o FILE`), and profiled
(`profrun --no-report`). Each run reports the seconds its work took (interpreter start and
trace writing excluded); the medians give

    ratio = (profiled - bare) / (cProfile - bare)      goal: 3.11 <= 0.6, 3.12+ <= 0.5

and the added ns per call, with the call count taken from the profiled run's report.
Then fib(30) under profrun with default settings: trace size, and the report must not
show lost events.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "..", "workloads", "py_hot.py")
BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(HERE, "..", "..", "build")))
PROFRUN = os.path.join(BUILD, "bin", "profrun")
PROFREPORT = os.path.join(BUILD, "bin", "profreport")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
PYENV = "/root/.pyenv/versions"
DEFAULT_PYTHONS = [os.path.join(PYENV, v, "bin", "python3")
                   for v in ("3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")]
DEFAULT_PYTHONS.append("/usr/bin/python3")


def version(python):
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return tuple(int(x) for x in out)


def timed(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd, proc.returncode, proc.stderr[-2000:]))
    return float(proc.stdout.split()[-1])


def report_json(outdir):
    proc = subprocess.run([PROFREPORT, "--python", "--format", "json", outdir],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("profreport failed: %s" % proc.stderr[-2000:])
    return json.loads(proc.stdout)


def python_calls(rep):
    return sum(row["ncalls"] for row in rep.get("python") or [])


def lost_events(rep):
    lost = sum(p.get("lost", 0) for p in rep.get("processes", []))
    warnings = [w for w in rep.get("warnings", []) if "lost" in str(w).lower()
                or "drop" in str(w).lower()]
    return lost, warnings


def bench(python, scratch):
    name = "%d.%d" % version(python)
    if python == "/usr/bin/python3":
        name += " (Debian, static)"
    prof_dir = os.path.join(scratch, "prof")
    cprof_file = os.path.join(scratch, "cprofile.out")
    times = {"bare": [], "cprofile": [], "profiled": []}
    calls = None
    for _ in range(ROUNDS):
        times["bare"].append(timed([python, WORK]))
        times["cprofile"].append(timed([python, "-m", "cProfile", "-o", cprof_file, WORK]))
        shutil.rmtree(prof_dir, ignore_errors=True)
        times["profiled"].append(timed([PROFRUN, "--no-report", "-o", prof_dir, "--",
                                        python, WORK]))
        if calls is None:
            calls = python_calls(report_json(prof_dir))
    bare, cprof, prof = (statistics.median(times[k]) for k in ("bare", "cprofile",
                                                               "profiled"))
    goal = 0.5 if version(python) >= (3, 12) else 0.6 if version(python) >= (3, 11) else None
    ratio = (prof - bare) / (cprof - bare) if cprof > bare else float("nan")
    print("python %-18s bare %.3f s, cProfile %.3f s, profiled %.3f s (medians of %d): "
          "ratio %.2f%s" % (name, bare, cprof, prof, ROUNDS, ratio,
                            " (goal <= %.1f)" % goal if goal else ""))
    if calls:
        print("python %-18s %d calls counted: profiled +%.1f ns/call, cProfile +%.1f ns/call"
              % (name, calls, (prof - bare) * 1e9 / calls, (cprof - bare) * 1e9 / calls))
    else:
        print("python %-18s the report counts no Python calls" % name)
    # fib(30), default settings: every call must be counted, none lost from the timeline.
    shutil.rmtree(prof_dir, ignore_errors=True)
    timed([PROFRUN, "--no-report", "-o", prof_dir, "--", python, WORK, "30", "0"])
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(prof_dir, "*.trace")))
    rep = report_json(prof_dir)
    lost, warnings = lost_events(rep)
    fib = sum(r["ncalls"] for r in rep.get("python") or [] if r["name"] == "fib")
    print("python %-18s fib(30): trace %.1f MB, fib counted %d times (exact: 2692537), "
          "%d events lost%s" % (name, size / 1e6, fib, lost,
                                ", warnings: %s" % warnings if warnings else ""))
    return ratio, goal


def main():
    pythons = sys.argv[1:] or [p for p in DEFAULT_PYTHONS if os.access(p, os.X_OK)]
    scratch = tempfile.mkdtemp(prefix="bench_python.")
    try:
        for python in pythons:
            bench(python, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
