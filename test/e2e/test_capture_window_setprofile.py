"""Capture windows on Python 3.8-3.11 (issue 12, part 5): outside the window profrun's
profile function is taken off every thread state (and new ones are born without it), and
put back when the window opens, from the signal or the time window; with PROF_STEPS it
stays on (no local events before 3.12: the step function's calls must be seen). The loops
are test/workloads/window_loop.py; WINDOW_EVENTS makes it log, from inside the program,
whether the logging thread's state has a C profile function (PROFILE) and its tracing flag
on (TRACING)."""
import glob
import subprocess

import pytest

from conftest import profile, report, report_json, trace_files
from test_capture_window import meta_records, py_calls
from test_capture_window_monitoring import LOOP, events_after, python_table

VERSIONS = ["3.8", "3.9", "3.10", "3.11", "debian"]
ON = {"PROFILE", "TRACING"}


@pytest.fixture(params=VERSIONS)
def python(request):
    if request.param == "debian":
        version = subprocess.run(["/usr/bin/python3", "-c",
                                  "import sys; print(sys.version_info[:2] < (3, 12))"],
                                 capture_output=True, text=True)
        if version.stdout.strip() != "True":
            pytest.skip("Debian's /usr/bin/python3 is missing or 3.12+ (sys.monitoring)")
        return "/usr/bin/python3"
    hits = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python3" % request.param))
    if not hits:
        pytest.skip("no Python %s interpreter under /root/.pyenv/versions" % request.param)
    return hits[-1]


def test_signal_toggles_twice_with_the_hook_off_outside(tmp_path, python):
    """Closed at start; USR2 before iterations 10, 20, 50 and 60. work() is counted for
    iterations 10-19 and 50-59, and the main thread has the profile function after exactly
    those."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "signal", "100", "10", "20", "50", "60"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2", "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert py_calls(rep, "work") == 20
    (path,) = trace_files(out)
    assert len(meta_records(path, "window_open")) == 2
    assert len(meta_records(path, "window_close")) == 2
    assert meta_records(path, "python.window_events") == ["off outside the window"]
    seen = events_after(events)
    assert len(seen) == 100
    for i, on in seen.items():
        assert on == (ON if 10 <= i < 20 or 50 <= i < 60 else set()), (i, on)


def test_time_window_switches_the_hook_from_the_collector(tmp_path, python):
    """300 ticks 10 ms apart; recording from 1 s for 1 s (opened by the collector thread,
    through a pending call): the ticks counted are those that began inside the window."""
    out, starts = tmp_path / "prof", tmp_path / "starts.txt"
    profile([python, LOOP, "timed", "300", "10", str(starts)], out,
            env={"PROF_DELAY": "1", "PROF_DURATION": "1"})
    (path,) = trace_files(out)
    (o,), (c,) = meta_records(path, "window_open"), meta_records(path, "window_close")
    t_open, t_close = int(o.split()[0]), int(c.split()[0])
    ticks = [int(l) for l in starts.read_text().split()]
    inside = sum(1 for t in ticks if t_open <= t < t_close)
    counted = py_calls(report_json(out, "--python"), "tick")
    assert abs(counted - inside) <= 1, (counted, inside)  # a tick running at the switch
    assert 50 <= counted <= 110


def test_generator_resumed_across_switches(tmp_path, python):
    """The window opens and closes inside the generator's frame, which was resumed while
    the hook was off: its yield there pairs with nothing and is ignored; the next
    resumptions are counted, under next() in the call paths."""
    out, folded = tmp_path / "prof", tmp_path / "folded"
    got = profile([python, LOOP, "gen", "100", "10", "20", "50", "60"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2"})
    assert got.stdout == "done 1675\n"
    assert python_table(report_json(out, "--python")) == sorted([
        ("numbers", 20), ("work", 20), ("<built-in method builtins.next>", 20),
        ("<built-in method builtins.sum>", 20), ("<built-in method posix.kill>", 2),
        ("<built-in method posix.getpid>", 2)])
    report(out, "--folded", str(folded), "--folded-min-share", "0")  # none folded by width
    paths = {";".join(line.rsplit(" ", 1)[0].split(";")[2:])
             for line in folded.read_text().splitlines()}
    assert any(p.startswith("<built-in method builtins.next>;numbers (") and
               p.endswith(";<built-in method builtins.sum>") for p in paths), paths


def test_a_thread_inside_the_window_ends_its_frames_at_the_close(tmp_path, python):
    """A thread started inside the window is still in long_task() when the window closes:
    at its first event after the close its frames end at the closing (counted, timed up to
    there) and the hook goes off on every thread. long_task counts once, work() 10 times."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "thread", "0"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2", "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    long_task = py_calls(rep, "long_task") + py_calls(rep, "main.<locals>.long_task")
    assert (long_task, py_calls(rep, "work")) == (1, 10)
    seen = events_after(events)
    assert seen == {0: set(), 1: set()}, "closed: off from the thread's first event"


def test_a_thread_born_while_closed_is_profiled_once_the_window_opens(tmp_path, python):
    """A thread starts while the hook is off and is born without it; the window opens
    (its state gets the function), it calls work() 10 times, the window closes (the
    main thread's first call takes the function off both threads)."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "late_thread", "0"], out,
                  env={"PROF_WINDOW_SIGNAL": "USR2", "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    assert py_calls(report_json(out, "--python"), "work") == 10
    seen = events_after(events)
    assert seen == {0: set(), 1: ON, 2: ON, 3: set(), 4: set()}, seen


def test_steps_keep_the_hook_on(tmp_path, python):
    """PROF_STEPS=100-120: the step function's calls must be seen outside the window, so
    the profile function stays on all the way; the steps are counted exactly."""
    out, events = tmp_path / "prof", tmp_path / "events.txt"
    got = profile([python, LOOP, "python", "300"], out,
                  env={"PROF_STEPS": "100-120", "PROF_STEP_FUNC": "my_step",
                       "WINDOW_EVENTS": str(events)})
    assert got.stdout == "done\n"
    rep = report_json(out, "--python")
    assert [py_calls(rep, f) for f in ("train_step_python", "my_step", "work")] == [21, 21, 42]
    (path,) = trace_files(out)
    assert meta_records(path, "window_steps") == ["21"]
    assert meta_records(path, "python.window_events") == []
    seen = events_after(events)
    assert len(seen) == 300
    assert all(on == ON for on in seen.values()), seen


def churn_total(iterations):
    def work(i):
        return sum(range(i % 7 + 3))
    return 2 * sum(work(i + k) for i in range(iterations) for k in range(5))


def test_threads_starting_and_ending_around_switches_and_a_fork(tmp_path, python):
    """60 iterations each starting two short threads while the window toggles every 3rd
    (20 switches, thread states born and deleted around each); a child forked half-way
    runs 20 more on its own. Both finish with the program's own results; the calls
    counted are whole worker calls made inside the windows."""
    out = tmp_path / "prof"
    got = profile([python, LOOP, "churn", "60"], out, env={"PROF_WINDOW_SIGNAL": "USR2"},
                  timeout=120)
    assert got.stdout == "child %d\ndone %d\n" % (churn_total(20), churn_total(60))
    assert len(trace_files(out)) == 2
    rep = report_json(out, "--python")
    workers = py_calls(rep, "worker") + py_calls(rep, "main.<locals>.worker")
    assert 0 < workers < 2 * 80
    assert py_calls(rep, "work") <= 5 * workers
