"""Short lives (issue 20): every profiled process leaves a readable trace however short its
life and however it ends: killed by SIGPIPE before any event, a forked child killed by
SIGTERM at once. A trace cut by a signal's default action names the signal in END."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import PROFREPORT, profile, trace_files

FORK_KILL = r"""
import os, signal, time
kids = []
for i in range(7):
    pid = os.fork()
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
    time.sleep(0.005)
    os.kill(pid, signal.SIGTERM)
for k in kids:
    os.waitpid(k, 0)
"""


def end_signal(trace):
    dump = subprocess.run([PROFREPORT, "dump", trace], capture_output=True, text=True,
                          timeout=60).stdout
    ends = re.findall(r" END .*signal=(\d+)", dump)
    return [int(s) for s in ends]


def commands(outdir):
    out = {}
    for t in trace_files(outdir):
        dump = subprocess.run([PROFREPORT, "dump", t], capture_output=True, text=True,
                              timeout=60).stdout
        argv = re.findall(r'META argv="([^"]*)"', dump)
        out[argv[0] if argv else "?"] = t
    return out


def test_process_killed_by_sigpipe_leaves_its_trace(tmp_path):
    out = tmp_path / "out"
    proc = profile(["sh", "-c", "seq 1 1000000 | head -1"], out)
    assert proc.stdout == "1\n"
    found = commands(out)
    assert sorted(found) == ["head", "seq", "sh"], found
    assert end_signal(found["seq"]) == [13]
    assert end_signal(found["head"]) == [0]
    # the report says how each ended
    rows = {p["command"].split()[0]: p for p in json.loads(subprocess.run(
        [PROFREPORT, "--format", "json", str(out)], capture_output=True, text=True,
        timeout=60).stdout)["processes"]}
    assert rows["seq"]["end_signal"] == 13 and rows["seq"]["end"] == "ended by signal 13 (SIGPIPE)"
    assert rows["head"]["end"] == "clean"


DAEMON = """
import os, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the caller's pipes are not held open
            os.dup2(null, fd)
        time.sleep(float(sys.argv[1]))
        os._exit(0)
    os._exit(0)
"""


def test_daemon_still_running_is_labelled_so(tmp_path):
    """A double-forked daemon that outlives profrun: its trace has no END yet, and the
    report (on the same machine, while it lives) says it is still running, not killed."""
    out = tmp_path / "out"
    profile([sys.executable, "-c", DAEMON, "20"], out)
    rep = subprocess.run([PROFREPORT, "--format", "json", "--all-roles", str(out)],
                         capture_output=True, text=True, timeout=60)
    ends = sorted(p["end"] for p in json.loads(rep.stdout)["processes"])
    assert "still running when read (the trace so far)" in ends, ends
    assert "process did not finish writing (killed?)" not in ends, ends


def test_forked_children_killed_at_once_leave_their_traces(tmp_path):
    for attempt in range(3):
        out = tmp_path / ("out%d" % attempt)
        profile([sys.executable, "-c", FORK_KILL], out)
        traces = trace_files(out)
        assert len(traces) == 8, "run %d: %d traces for 8 processes" % (attempt, len(traces))
        ends = sorted(s for t in traces for s in end_signal(t))
        assert ends == [0] + [15] * 7, ends


def test_process_without_events_killed_by_sigkill_leaves_its_trace(tmp_path):
    """A process that records nothing (a C program) had no file until its end: SIGKILL
    left none. Its file is made at load now; a process that execs with nothing recorded
    leaves no file of its own (the new image's is the process's trace)."""
    out = tmp_path / "out"
    profile(["sh", "-c", "sleep 5 & p=$!; sleep 0.2; kill -9 $p; wait; exec env true"], out)
    lives = []
    for t in trace_files(out):
        dump = subprocess.run([PROFREPORT, "dump", t], capture_output=True, text=True,
                              timeout=60).stdout
        argv = re.findall(r'META argv="([^"]*)"', dump)
        lives.append((" ".join(argv[:2]), len(end_signal(t))))
    # sh execs env, env execs true: one file for that process, true's
    assert sorted(lives) == [("sleep 0.2", 1), ("sleep 5", 0), ("true", 1)], lives


POOL = r"""
import multiprocessing as mp, sys
ctx = mp.get_context(sys.argv[1])
p = ctx.Pool(4)
p.terminate()
p.join()
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_terminated_at_once_leaves_readable_traces(tmp_path, method):
    """Pool workers killed by terminate() as they start: each leaves a non-empty trace
    (a SIGTERM that came while the file was being made left it empty). A spawned worker is a
    new program: one killed before its loader reached libprof.so ran none of its code and
    leaves no file (seen on a loaded machine: 2 of 4), so spawn counts only the program's."""
    for attempt in range(4):
        out = tmp_path / ("out%d" % attempt)
        profile(["/usr/bin/python3", "-c", POOL, method], out)
        traces = trace_files(out)
        # the program and its 4 forked workers; spawn: the program (+ its resource tracker)
        assert len(traces) >= (5 if method == "fork" else 1), traces
        assert all(os.path.getsize(t) > 0 for t in traces), \
            [(t, os.path.getsize(t)) for t in traces]
