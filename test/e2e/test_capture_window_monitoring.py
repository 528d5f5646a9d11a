"""Capture windows on Python 3.12+ (issue 12, part 5): outside the window the Python
layer's sys.monitoring events are switched off (only the step functions' code objects stay
watched, with PY_UNWIND/PY_THROW, which cannot be local), and back on when the window
opens, from a step's end, the signal or the time window. The loops are
test/workloads/window_loop.py; WINDOW_EVENTS makes it log the events profrun's tool has on
after each iteration (sys.monitoring.get_events, from inside the program)."""
import glob
import os

import pytest

from conftest import ROOT, profile, report, report_json, trace_files
from test_capture_window import meta_records, py_calls

LOOP = os.path.join(ROOT, "test", "workloads", "window_loop.py")
VERSIONS = ["3.12", "3.13"]
CLOSED_WITH_STEPS = {"PY_UNWIND", "PY_THROW"}  # global: they cannot be local events


@pytest.fixture(params=VERSIONS)
def python(request):
    hits = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python3" % request.param))
    if not hits:
        pytest.skip("no Python %s interpreter under /root/.pyenv/versions" % request.param)
    return hits[-1]


def events_after(path):
    """{iteration: set of event names profrun's tool had on after it}"""
    out = {}
    with open(path) as f:
        for line in f:
            i, _, names = line.rstrip("\n").partition(" ")
            out[int(i)] = set(names.split(",")) if names else set()
    return out


def python_table(rep):
    return sorted((f["qualname"], int(f["ncalls"])) for f in rep["python"])


def test_steps_100_to_120_of_300_with_events_off_outside(tmp_path, python):
    """train_step_python(i) calls work(i) and my_step(i) (-> work(i) -> sum), then the loop
    reads get_events and appends it: the window opens when my_step(99) returns and closes
    when my_step(120) returns. In the table: exactly the calls made inside, with the
    workload's own counts: steps 100-120 (21 train_step_python, 21 my_step, 42 work and
    sum), and 21 get_events/append (after iterations 99-119)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "python", "300"], out,
                  env={"PROF_STEPS": "100-120", "PROF_STEP_FUNC": "my_step",
                       "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert python_table(rep) == sorted([
        ("train_step_python", 21), ("my_step", 21), ("work", 42),
        ("<built-in method builtins.sum>", 42),
        ("<built-in method sys.monitoring.get_events>", 21),
        ("<method 'append' of 'list' objects>", 21)])
    (path,) = trace_files(out)
    assert meta_records(path, "window_steps") == ["21"]
    assert meta_records(path, "python.window_events") == ["off outside the window"]
    seen = events_after(events)
    assert len(seen) == 300
    for i, on in seen.items():
        if 99 <= i < 120:
            assert {"PY_START", "PY_RETURN", "CALL"} <= on, (i, on)
        else:  # my_step is known from its first call: only it stays watched, locally
            assert on == CLOSED_WITH_STEPS, (i, on)


def test_signal_toggles_twice_with_events_off_outside(tmp_path, python):
    """Closed at start; USR2 before iterations 10, 20, 50 and 60. work() is counted for
    iterations 10-19 and 50-59, and the tool's events are on after exactly those."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "signal", "100", "10", "20", "50", "60"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2", "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert py_calls(rep, "work") == 20
    path = trace_files(out)[0]
    assert len(meta_records(path, "window_open")) == 2
    assert len(meta_records(path, "window_close")) == 2
    seen = events_after(events)
    assert len(seen) == 100
    for i, on in seen.items():
        if 10 <= i < 20 or 50 <= i < 60:
            assert {"PY_START", "PY_RETURN", "CALL"} <= on, (i, on)
        else:
            assert on == set(), (i, on)


def test_time_window_switches_events_from_the_collector(tmp_path, python):
    """300 ticks 10 ms apart; recording from 1 s for 1 s (opened by the collector thread,
    through a pending call): the ticks counted are those that began inside the window."""
    out, starts = tmp_path / "prof", tmp_path / "starts.txt"
    profile([python, LOOP, "timed", "300", "10", str(starts)], out,
            env={"PROF_DELAY": "1", "PROF_DURATION": "1"})
    path = trace_files(out)[0]
    (o,), (c,) = meta_records(path, "window_open"), meta_records(path, "window_close")
    t_open, t_close = int(o.split()[0]), int(c.split()[0])
    ticks = [int(l) for l in starts.read_text().split()]
    inside = sum(1 for t in ticks if t_open <= t < t_close)
    counted = py_calls(report_json(out, "--python"), "tick")
    assert abs(counted - inside) <= 1, (counted, inside)  # a tick running at the switch
    assert 50 <= counted <= 110


def gen_run(tmp_path, python, name):
    """The gen loop (USR2 before values 10, 20, 50, 60, sent from inside the generator):
    its Python table and its call paths (process frames and counts left out)."""
    out, folded = tmp_path / name, tmp_path / (name + ".folded")
    got = profile([python, LOOP, "gen", "100", "10", "20", "50", "60"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2"})
    assert got.stdout == "done 1675\n"
    # every node, however narrow (the default folds those under 0.1 % into their caller,
    # which depends on the run's timing)
    report(out, "--folded", str(folded), "--folded-min-share", "0")
    paths = {";".join(line.rsplit(" ", 1)[0].split(";")[2:])
             for line in folded.read_text().splitlines()}
    return python_table(report_json(out, "--python")), paths


def test_generator_resumed_across_switches_counts_as_with_the_hook_on(tmp_path, python):
    """The window opens and closes inside the generator's frame, which was resumed while
    the events were off: its yield there pairs with nothing and is ignored; the next
    resumptions are counted. Table and call paths equal those of Debian's 3.11 (setprofile,
    switched off and on the same way: test_capture_window_setprofile.py)."""
    table, paths = gen_run(tmp_path, python, "monitoring")
    assert table == sorted([
        ("numbers", 20), ("work", 20), ("<built-in method builtins.next>", 20),
        ("<built-in method builtins.sum>", 20), ("<built-in method posix.kill>", 2),
        ("<built-in method posix.getpid>", 2)])
    assert (table, paths) == gen_run(tmp_path, "/usr/bin/python3", "setprofile")
    assert any(p.startswith("<built-in method builtins.next>;numbers (") and
               p.endswith(";<built-in method builtins.sum>") for p in paths)


def test_a_thread_inside_the_window_ends_its_frames_at_the_close(tmp_path, python):
    """A thread started inside the window is still in long_task() when the window closes:
    at its first event after the close its frames end at the closing (counted, timed up to
    there) and the events go off at once. long_task counts once, work() 10 times (the calls
    made after the close are not counted), as with Debian's 3.11 (setprofile)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "thread", "0"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2", "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert (py_calls(rep, "main.<locals>.long_task"), py_calls(rep, "work")) == (1, 10)
    seen = events_after(events)
    assert seen == {0: set(), 1: set()}, "closed: off from the thread's first event"
    out = tmp_path / "setprofile"
    profile(["/usr/bin/python3", LOOP, "thread", "0"], out, env={"PROF_WINDOW_SIGNAL": "USR2"})
    rep = report_json(out, "--python")
    assert (py_calls(rep, "main.<locals>.long_task"), py_calls(rep, "work")) == (1, 10)


def test_window_open_from_the_start_goes_quiet_after_its_last_step(tmp_path, python):
    """PROF_STEPS=0-9: main() and the module were entered inside the window and return only
    at the end; they end at the closing (each counted once) and the events go off after
    step 9 but for the step function's (watched for the step count)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "python", "40"], out,
                  env={"PROF_STEPS": "0-9", "PROF_STEP_FUNC": "my_step",
                       "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert [py_calls(rep, f) for f in ("main", "train_step_python", "my_step", "work")] == \
        [1, 10, 10, 20]
    (path,) = trace_files(out)
    assert meta_records(path, "window_steps") == ["10"]
    seen = events_after(events)
    assert all({"PY_START", "PY_RETURN", "CALL"} <= seen[i] for i in range(9)), seen
    assert all(seen[i] == CLOSED_WITH_STEPS for i in range(9, 40)), seen


def test_events_stay_on_until_a_step_function_is_seen(tmp_path, python):
    """PROF_STEPS with a step function the program never calls: it could be any call, so
    every event stays on (and nothing is recorded)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    profile([python, LOOP, "python", "20"], out,
            env={"PROF_STEPS": "5-6", "PROF_STEP_FUNC": "no_such_function",
                 "WINDOW_EVENTS": str(events)})
    assert python_table(report_json(out, "--python")) == []
    seen = events_after(events)
    assert len(seen) == 20
    assert all({"PY_START", "PY_RETURN", "CALL"} <= on for on in seen.values()), seen
