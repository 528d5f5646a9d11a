"""Capture windows (issue 12, part 5): PROF_STEPS, PROF_DELAY/PROF_DURATION and
PROF_WINDOW_SIGNAL record only their window; the trace says which (META window*) and the
report prints it. The loops are test/workloads/window_loop.py."""
import glob
import os
import re
import subprocess

import pytest

from conftest import (PROFREPORT, ROOT, build_path, have_torch, needs_cuda, profile, report,
                      report_json, trace_files)

PYTHON = "/usr/bin/python3"  # Debian's, with Debian's torch
LOOP = os.path.join(ROOT, "test", "workloads", "window_loop.py")
CUDA_LOOP = os.path.join(ROOT, "test", "workloads", "window_cuda.py")


needs_torch = pytest.mark.skipif(not have_torch(), reason="Debian's python3-torch is not installed")


def py_calls(rep, qualname):
    """ncalls of a Python function (merged over processes) by qualified name; 0 if absent."""
    return sum(int(f["ncalls"]) for f in rep["python"] if f["qualname"] == qualname)


def meta_records(path, key):
    out = subprocess.run([PROFREPORT, "dump", path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    vals = []
    prefix = "META %s=\"" % key
    for line in out.stdout.splitlines():
        i = line.find(prefix)
        if i >= 0:
            vals.append(line[i + len(prefix):line.index('"', i + len(prefix))])
    return vals


@needs_torch
def test_steps_100_to_120_of_300_record_exactly_21_steps(tmp_path):
    out = tmp_path / "prof"
    bare = subprocess.run([PYTHON, LOOP, "torch", "300"], capture_output=True, text=True,
                          timeout=300)
    got = profile([PYTHON, LOOP, "torch", "300"], out, env={"PROF_STEPS": "100-120"},
                  timeout=300)
    assert got.stdout == bare.stdout, "the training result is unchanged"
    rep = report_json(out, "--python")
    assert py_calls(rep, "main.<locals>.train_step") == 21
    assert py_calls(rep, "SGD.step") == 21
    ops = report_json(out, "--ops", "--phase", "all")["ops"]  # all that was recorded
    addmm = [o for o in ops if o["name"] == "aten::addmm"]
    assert addmm and addmm[0]["calls"] == 21, "one Linear forward per recorded step"
    (path,) = trace_files(out)
    assert meta_records(path, "window") == ["steps 100-120 (optimizer step)"]
    opens, closes = meta_records(path, "window_open"), meta_records(path, "window_close")
    # the opening step, and the optimizer steps begun before it (the report's numbering)
    assert [o.split()[1:] for o in opens] == [["step", "100", "100"]]
    assert [c.split()[1:] for c in closes] == [["step", "120"]]
    assert meta_records(path, "window_steps") == ["21"]
    text = report(out).stdout
    assert "Capture window: steps 100-120 (optimizer step)" in text
    assert "the first began before the window opened" not in text  # (it opens at a step's end)
    steps = [p["steps"] for p in rep["processes"] if p.get("steps")][0]
    assert [x["number"] for x in steps["steps"]] == list(range(101, 122))  # from 1, not 0
    # the process's imports and startup ran before the recording opened: not known, not 0
    assert steps["startup_import_ns"] is None and steps["startup_top"] == [], steps
    html = tmp_path / "r.html"
    report(out, "--html", str(html))
    assert "imports not known (before the recording opened)" in html.read_text()
    # nor is the startup's flame graph drawn from the calls between the opening and step 101
    folded = tmp_path / "startup.folded"
    got = report(out, "--folded", str(folded), "--phase", "startup")
    assert folded.read_text() == "" and "its startup is not in the trace" in got.stderr, got
    assert "recorded: 21 steps, 1 interval" in text
    job = rep["job"]["windows"][0]
    assert (job["steps_min"], job["steps_max"], job["intervals_min"]) == (21, 21, 1)


@needs_torch
def test_torch_steps_are_counted_by_the_torch_layer_with_python_events_off_outside(tmp_path):
    """The default step (torch.optim's) is counted from the record_function scope
    Optimizer.step#SGD.step by the PyTorch layer, so the Python layer needs no call outside
    the window: its events (3.12+) or profile function (before) are off after every
    iteration outside steps 100-120 and on inside; the counts are those of the test above."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([PYTHON, LOOP, "torch", "300"], out,
                  env={"PROF_STEPS": "100-120", "WINDOW_EVENTS": str(events)}, timeout=300)
    rep = report_json(out, "--python")
    assert py_calls(rep, "main.<locals>.train_step") == 21
    assert py_calls(rep, "SGD.step") == 21
    (path,) = trace_files(out)
    assert meta_records(path, "window_steps") == ["21"]
    assert meta_records(path, "window_steps_from") == ["torch: record_function Optimizer.step#*"]
    assert meta_records(path, "python.window_events") == ["off outside the window"]
    seen = [line.split(" ", 1)[1].strip() if " " in line else ""
            for line in events.read_text().splitlines()]
    assert len(seen) == 300, got.stderr[-2000:]
    assert all(on for on in seen[99:120]), seen[99:120]
    off = [i for i, on in enumerate(seen) if not on]
    assert off == list(range(99)) + list(range(120, 300)), off


@needs_torch
@pytest.mark.parametrize("steps", ["30-30", "30-31", "0-0"])
def test_steps_ending_on_several_threads_at_once_switch_once_each(tmp_path, steps):
    """4 threads x 40 optimizer steps, their step scopes ending concurrently (the PyTorch
    layer counts them without the GIL): the window opens and closes exactly once, around
    the steps asked for."""
    out = tmp_path / "prof"
    got = profile([PYTHON, LOOP, "torch_threads", "40", "4"], out, env={"PROF_STEPS": steps},
                  timeout=300)
    assert got.stdout == "done\n"
    (path,) = trace_files(out)
    first, last = (int(v) for v in steps.split("-"))
    opens, closes = meta_records(path, "window_open"), meta_records(path, "window_close")
    # The steps begun before (the 4th field) are written only while one thread alone has run
    # steps (the threads may start one after another): then they are the opening step's.
    assert [o.split()[1:3] for o in opens] == ([["step", str(first)]] if first
                                               else [["start", "0"]])
    assert all(o.split()[3:] in ([], [str(first)]) for o in opens), opens
    assert [c.split()[1:] for c in closes] == [["step", str(last)]]
    assert meta_records(path, "window_steps") == [str(last - first + 1)]


@needs_torch
def test_a_thread_blocked_with_frames_of_the_window_keeps_no_hook_on(tmp_path):
    """PROF_STEPS=0-9, the loop in a thread that the main thread joins: the main thread's
    main() and join() were entered inside the window and get no event until the end; the
    training thread's hook still goes off after step 9, and main() counts once."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([PYTHON, LOOP, "torch_in_thread", "40"], out,
                  env={"PROF_STEPS": "0-9", "WINDOW_EVENTS": str(events)}, timeout=300)
    assert got.stdout.startswith("loss ")
    rep = report_json(out, "--python")
    assert [py_calls(rep, f) for f in ("main", "main.<locals>.train_step")] == [1, 10]
    seen = [line.split(" ", 1)[1].strip() if " " in line else ""
            for line in events.read_text().splitlines()]
    assert len(seen) == 40
    assert all(seen[:9]) and not any(seen[9:]), seen


@needs_torch
def test_window_open_from_the_start_goes_quiet_after_its_last_step(tmp_path):
    """PROF_STEPS=0-9 of 40 torch steps: main() and the module were entered inside the
    window and return only at the end; they end at the closing (counted once, timed up to
    there) and the Python layer is off after step 9 (3.12+: its events; before: its profile
    function)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    profile([PYTHON, LOOP, "torch", "40"], out,
            env={"PROF_STEPS": "0-9", "WINDOW_EVENTS": str(events)}, timeout=300)
    rep = report_json(out, "--python")
    assert [py_calls(rep, f) for f in ("main", "main.<locals>.train_step", "SGD.step")] == \
        [1, 10, 10]
    main_row = [f for f in rep["python"] if f["qualname"] == "main"][0]
    (path,) = trace_files(out)
    assert meta_records(path, "window_steps") == ["10"]
    closes = meta_records(path, "window_close")
    assert [c.split()[1:] for c in closes] == [["step", "9"]]
    seen = [line.split(" ", 1)[1].strip() if " " in line else ""
            for line in events.read_text().splitlines()]
    assert len(seen) == 40
    assert all(seen[:9]) and not any(seen[9:]), seen
    module_row = [f for f in rep["python"] if f["qualname"] == "<module>"
                  and f["file"] == LOOP][0]
    assert 0 < main_row["cumtime_ns"] <= module_row["cumtime_ns"]
    # open from the start: no step was cut by its opening
    text = report(out).stdout
    assert "the first began before the window opened" not in text
    # and the imports were recorded: the window's opening was the process's start (the
    # text prints no startup line under a window; the HTML does)
    steps = [p["steps"] for p in rep["processes"] if p.get("steps")][0]
    assert steps["startup_import_ns"] > 0, steps
    html = tmp_path / "r.html"
    report(out, "--html", str(html))
    assert re.search(r"\(imports \d[\d.]* m?s", html.read_text()), html.read_text()[:3000]


@needs_torch
def test_dataloader_workers_follow_their_parents_window(tmp_path):
    """PROF_STEPS=10-20 over 3 epochs of 16 steps: epoch 0's workers are forked closed and
    opened by the parent at step 10; epoch 1's are forked open and closed at step 20;
    epoch 2's are forked after the window and record nothing."""
    out = tmp_path / "prof"
    profile([PYTHON, LOOP, "loader", "3"], out, env={"PROF_STEPS": "10-20"}, timeout=300)
    rep = report_json(out, "--all-roles")
    main = [p for p in rep["processes"] if p["command"].split()[-2:] == ["loader", "3"]
            and not any(q["pid"] == p["ppid"] for q in rep["processes"])][0]
    workers = sorted((p for p in rep["processes"] if p["ppid"] == main["pid"]),
                     key=lambda p: int(p["meta"]["start_realtime_ns"]))
    assert len(workers) == 6
    switches = []
    for w in workers:
        opens = [v.split()[1] for v in meta_records(w["file"], "window_open")]
        closes = [v.split()[1] for v in meta_records(w["file"], "window_close")]
        switches.append((opens, closes))
    assert switches == [(["parent"], [])] * 2 + [(["start"], ["parent"])] * 2 + [([], [])] * 2


def test_steps_of_a_named_python_function_from_step_0(tmp_path):
    out = tmp_path / "prof"
    profile([PYTHON, LOOP, "python", "50"], out,
            env={"PROF_STEPS": "0-9", "PROF_STEP_FUNC": "my_step"})
    rep = report_json(out, "--python")
    assert py_calls(rep, "train_step_python") == 10
    assert py_calls(rep, "my_step") == 10
    assert py_calls(rep, "work") == 20  # once in train_step_python, once in my_step
    assert meta_records(trace_files(out)[0], "window_steps") == ["10"]


def test_signal_toggles_twice_in_one_run(tmp_path):
    """Closed at start; USR2 before iterations 10, 20, 50 and 60: open, close, open,
    close. work() runs inside the window for iterations 10-19 and 50-59."""
    out = tmp_path / "prof"
    got = profile([PYTHON, LOOP, "signal", "100", "10", "20", "50", "60"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2"})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert py_calls(rep, "work") == 20
    path = trace_files(out)[0]
    assert len(meta_records(path, "window_open")) == 2
    assert len(meta_records(path, "window_close")) == 2
    assert "signal %d toggles" % 12 in meta_records(path, "window")[0]
    assert "2 intervals" in report(out).stdout


def test_signal_the_program_handles_itself_is_left_to_it(tmp_path):
    """The program sets its own USR2 handler: it runs every time, and the window (closed
    from the start) stays closed; the profiler says why once."""
    out = tmp_path / "prof"
    got = profile([PYTHON, LOOP, "signal_own", "40", "10", "20"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2"})
    assert got.stdout == "handled 2\n"
    assert got.stderr.count("own handler for signal 12") == 1
    rep = report_json(out, "--python")
    assert py_calls(rep, "work") == 0
    assert meta_records(trace_files(out)[0], "window_open") == []


@needs_cuda
@pytest.mark.parametrize("marks", [["10", "20", "50", "60"], ["-1", "10", "50", "60"]])
def test_gpu_work_of_calls_outside_the_window_is_dropped(tmp_path, marks):
    """100 cudaMemset calls (runtime and CUPTI doubles), 20 of them inside the window: the
    API table and CUPTI's GPU sets both count 20, whether the window was closed at the
    first CUDA call (CUPTI must start anyway) or open (-1: the sets of the calls made
    outside are dropped by correlation id)."""
    out = tmp_path / "prof"
    got = profile([PYTHON, CUDA_LOOP, "100"] + marks, out,
                  env={"PROF_WINDOW_SIGNAL": "USR2",
                       "LD_LIBRARY_PATH": build_path("test", "doubles")})
    assert got.stdout == "done\n"
    rep = report_json(out)
    assert [a["calls"] for a in rep["api"] if a["name"] == "cudaMemset"] == [20]
    assert [(g["calls"], g["bytes"]) for g in rep["gpu_sets"]] == [(20, 20 * 1024)]


def test_delay_and_duration_on_a_timed_loop(tmp_path):
    """300 ticks 10 ms apart; recording from 1 s for 1 s. The ticks counted are exactly
    those that began between the window's opening and closing as the trace states them."""
    out, starts = tmp_path / "prof", tmp_path / "starts.txt"
    profile([PYTHON, LOOP, "timed", "300", "10", str(starts)], out,
            env={"PROF_DELAY": "1", "PROF_DURATION": "1"})
    path = trace_files(out)[0]
    (o,), (c,) = meta_records(path, "window_open"), meta_records(path, "window_close")
    t_open, t_close = int(o.split()[0]), int(c.split()[0])
    assert o.split()[1] == "time" and c.split()[1] == "time"
    assert 0.9 < (t_close - t_open) / 1e9 < 1.3, "opens and closes within a collector pass"
    ticks = [int(l) for l in starts.read_text().split()]
    inside = sum(1 for t in ticks if t_open <= t < t_close)
    counted = py_calls(report_json(out, "--python"), "tick")
    assert abs(counted - inside) <= 1, (counted, inside)  # a tick running at the switch
    assert 50 <= counted <= 110
    assert meta_records(path, "window") == ["time: delay 1 s, duration 1 s"]


def interpreters(minors):
    found = [sorted(glob.glob("/root/.pyenv/versions/3.%d.*/bin/python3" % m))[-1:]
             for m in minors]
    return [PYTHON] + [p for hits in found for p in hits]


@pytest.mark.parametrize("python", interpreters([10, 11, 12, 13]))
def test_a_call_begun_as_the_window_opens_is_counted(tmp_path, python):
    """The time window opens (on the collector thread) while work_abs(i) runs one after
    another from map(): the Python layer goes on in the main thread's next eval-breaker
    check, which is often the one at the start of a work_abs call, after that call's start
    event went by. That call is counted with its abs() call, so the two counts agree (3.10+:
    no check lies between a call's start check and its abs() call). Before, the call was
    missed and its abs() counted: abs one ahead, about one run in two."""
    out = tmp_path / "prof"
    got = profile([python, LOOP, "map", "600"], out, env={"PROF_DELAY": "0.25"})
    assert got.returncode == 0 and got.stdout == "done 1\n", got.stderr
    rep = report_json(out, "--python")
    calls = py_calls(rep, "work_abs")
    abs_calls = sum(int(f["ncalls"]) for f in rep["python"] if "abs" in f["qualname"] and
                    f["qualname"] != "work_abs")
    assert calls > 1000 and abs_calls == calls, (calls, abs_calls)


def test_bad_window_settings_are_said_and_everything_is_recorded(tmp_path):
    out = tmp_path / "prof"
    got = profile([PYTHON, LOOP, "python", "30"], out,
                  env={"PROF_STEPS": "20-10", "PROF_WINDOW_SIGNAL": "NOPE"})
    assert "PROF_STEPS=20-10 is not A-B" in got.stderr
    assert "PROF_WINDOW_SIGNAL=NOPE is no signal" in got.stderr
    assert py_calls(report_json(out, "--python"), "train_step_python") == 30
