"""Training steps of one process (test/workloads/torch_train.py, Debian's torch on CPU: 8
optimizer steps over two epochs, a DataLoader with two forked workers): the steps, their
parts, the report's first screen, the HTML's steps section, the flame graph of the steps'
phases (--phase all: the whole process) and the same figures from summaries."""
import json
import os
import re
import shutil
from html import escape as html_escape
import subprocess

import pytest

from conftest import PROFREPORT, ROOT, have_torch, profile, report, report_json, summaries_only

PYTHON = "/usr/bin/python3"
STEPS = 8


pytestmark = pytest.mark.skipif(not have_torch(), reason="no torch for /usr/bin/python3")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("steps")
    profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_train.py")], out,
            timeout=300)
    return out


def main_steps(out, *args):
    procs = report_json(out, *args)["processes"]
    with_steps = [p for p in procs if p["steps"]]
    assert len(with_steps) == 1, procs  # the workers are left out, and have no steps
    return with_steps[0]["steps"]


def test_steps_and_parts(run):
    st = main_steps(run)
    assert st["source"].startswith("optimizer steps")
    assert st["count"] == STEPS
    assert [s["number"] for s in st["steps"]] == list(range(1, STEPS + 1))
    # (a warm-up of 1 or 2 steps when quiet; a CI run on a loaded 2-CPU VM counted 3, its
    # third step slow too: half the steps is the bound that still says most are steady)
    assert st["warmup"] + st["steady"] == STEPS and st["warmup"] <= STEPS // 2
    for s in st["steps"]:
        assert sum(s["parts_ns"].values()) == s["ns"], s  # the parts add up to the step
        assert s["parts_ns"]["data loading"] > 0 and s["parts_ns"]["backward"] > 0, s
    # the steps follow one another; startup (imports included) comes before the first
    for a, b in zip(st["steps"], st["steps"][1:]):
        assert a["start_ns"] + a["ns"] == b["start_ns"]
    assert st["startup_ns"] > st["startup_import_ns"] > 0
    assert st["median_ns"] <= st["p90_ns"] <= st["max_ns"]
    # the startup's largest costs outside imports, by self time: the DataLoader's workers
    # forked there; none of the import machinery
    top = st["startup_top"]
    assert 1 <= len(top) <= 3 and [t["self_ns"] for t in top] == sorted(
        (t["self_ns"] for t in top), reverse=True), top
    assert sum(t["self_ns"] for t in top) <= st["startup_ns"] - st["startup_import_ns"]
    assert not [t for t in top if "_bootstrap" in t["name"] or "_bootstrap" in t["caller"]]
    assert any(t["name"] == "<built-in method posix.fork>" for t in top), top


def test_first_screen(run):
    text = report(run).stdout
    head = text[:text.index("Job\n")]
    assert "Training steps: " in head and "Where a step's time goes" in head
    for part in ("data loading", "forward", "backward", "optimizer", "other CPU"):
        assert "\n  %s " % part in head, part
    assert "startup:" in head  # a short run: the startup finding says so
    assert "; outside imports, by self time: " in head  # with its largest costs beside the imports


def test_html_steps_section(run, tmp_path):
    page = tmp_path / "r.html"
    report(run, "--html", str(page), "--phase", "steps")  # (the default is data-dependent)
    html = page.read_text()
    assert html.index('<section id="steps">') < html.index('<section id="timeline">')
    assert 'data-steps="%d"' % STEPS in html
    assert len(re.findall(r'<g class="step"', html)) == STEPS
    assert "Flame graph (Python, wall time inside the training steps' phases" in html
    # warm-up steps above the axis are labelled with their time, never one label over
    # another (a review's three first steps drew "17.65 ms", "75.54 ms", "15.49 ms" at once)
    cut = [(float(x), t) for x, t in re.findall(r'<text x="([\d.]+)" y="9" font-size="9">([^<]*)<',
                                                html)]
    for (x0, t0), (x1, _) in zip(cut, cut[1:]):
        assert x1 >= x0 + 5.5 * len(t0), cut
    # which steps were left out and why, as the text says it (a review's HTML said "the first
    # 1 left out: warm-up" of a step the text left out for starting before any boundary)
    line = next(l for l in report(run).stdout.splitlines() if l.startswith("Training steps: "))
    left = line[line.index("; ") + 2:]
    assert "; " + html_escape(left).replace("&#x27;", "'") + "); step time median" in html, left


def test_flame_graph_of_the_steps(run, tmp_path):
    steps, whole = tmp_path / "s.svg", tmp_path / "a.svg"
    report(run, "--flamegraph", str(steps), "--phase", "steps")
    report(run, "--flamegraph", str(whole), "--phase", "all")
    s, a = steps.read_text(), whole.read_text()
    assert "training steps' phases" in s and "wall time" in s
    assert "Tensor.backward" in s and "_BaseDataLoaderIter.__next__" in s
    assert "_find_and_load" not in s  # imports are startup
    assert "_find_and_load" in a
    bad = subprocess.run([PROFREPORT, "--phase", "warmup", str(run)], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--phase wants all, steps, steady or startup" in bad.stderr


def flame_total_us(svg):
    """The root frame's microseconds ("all (N us, 100.00%)")."""
    return int(re.search(r"<title>all \((\d+) us, 100\.00%\)</title>", svg).group(1))


def test_flame_graph_of_the_startup(run, tmp_path):
    """--phase startup: the Python calls before the first step (its imports), none of the
    steps'; its width is at most the startup's time and holds its imports."""
    st = main_steps(run)
    out = tmp_path / "startup.svg"
    report(run, "--flamegraph", str(out), "--phase", "startup")
    svg = out.read_text()
    assert "before the first training step" in svg
    assert "_find_and_load" in svg
    assert "Tensor.backward" not in svg and "_BaseDataLoaderIter.__next__" not in svg
    total = flame_total_us(svg)
    assert st["startup_import_ns"] / 1000 * 0.95 <= total <= st["startup_ns"] / 1000 + 1, (
        total, st["startup_ns"], st["startup_import_ns"])


def test_steps_from_summaries(run, tmp_path):
    summaries = summaries_only(run, tmp_path)
    assert main_steps(summaries) == main_steps(run)
    assert report(summaries).stdout.split("Job\n")[0] == report(run).stdout.split("Job\n")[0]


def test_exports_carry_the_steps(run, tmp_path):
    """The Kineto JSON has ProfilerStep#N spans where the steps are (HTA and the TensorBoard
    plugin find a trace's steps by that name); Perfetto a Training steps track."""
    st = main_steps(run)
    out = tmp_path / "k.json"
    report(run, "--chrome-trace", str(out))
    doc = json.load(open(tmp_path / "k.pt.trace.json"))
    events = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert [e["name"] for e in events] == ["ProfilerStep#%d" % s["number"] for s in st["steps"]]
    # on a "Training steps" thread (tid 0) of the process, as Perfetto's track: a step found
    # from Python calls need not nest with that thread's calls (speedscope, HTA stack them)
    assert all(e["ph"] == "X" and e["cat"] == "user_annotation" and e["tid"] == 0
               for e in events)
    assert {(e["pid"], e["tid"], e["args"]["name"]) for e in doc["traceEvents"]
            if e.get("ph") == "M" and e["name"] == "thread_name" and e["tid"] == 0} == \
        {(events[0]["pid"], 0, "Training steps")}
    # whole microseconds (each end rounded to the nearest)
    assert all(abs(e["dur"] * 1000 - s["ns"]) <= 1000 for e, s in zip(events, st["steps"]))
    from timeline_decode import Timeline
    pf = tmp_path / "t.pftrace"
    report(run, "--perfetto", str(pf))
    tl = Timeline(str(pf))
    tracks = list(tl.named("Training steps"))
    assert len(tracks) == 1 and tl.kind(tl.parent(tracks[0])) == "thread"
    assert [s[0] for s in tl.slices(tracks[0])] == [e["name"] for e in events]


@pytest.mark.parametrize("name", ["my_scope", "Net.forward"])
def test_step_names_a_scope_or_a_function(run, name):
    """--step NAME: each record_function scope or Python call (by qualified name) of that
    name is a step, as it is; the traces are read, and a name with no call is said."""
    st = main_steps(run, "--step", name)
    assert st["source"] == "each call of the --step name" and st["step_name"] == name
    assert [s["number"] for s in st["steps"]] == list(range(1, STEPS + 1))
    for s in st["steps"]:
        assert sum(s["parts_ns"].values()) == s["ns"], s
    # a scope holds the forward (and the loss) and no optimizer step
    assert all(s["parts_ns"]["forward"] > 0 and s["parts_ns"]["optimizer"] == 0
               for s in st["steps"])
    default = main_steps(run)
    assert sum(s["ns"] for s in st["steps"]) < sum(s["ns"] for s in default["steps"])


def test_step_name_with_no_call(run):
    st = main_steps(run, "--step", "no_such_function")
    assert st["source"].startswith("optimizer steps") and st["step_name"] == "no_such_function"
    head = report(run, "--step", "no_such_function").stdout
    assert "(--step 'no_such_function' named no call)" in head


def test_flame_graph_of_the_steady_steps(run, tmp_path):
    """The default, --phase steady: the step thread's calls inside the steady steps (warm-up
    left out), every one, from the call tree's counts at the steps' edges (the Python
    table's); main() spans them all, so the width is their time."""
    st = main_steps(run)
    out, default = tmp_path / "steady.svg", tmp_path / "default.svg"
    report(run, "--flamegraph", str(out), "--phase", "steady")
    report(run, "--flamegraph", str(default))
    svg = out.read_text()
    assert "in the steady training steps" in svg
    # the Python table's steps: here the steady ones (counts are kept at the first 8 edges)
    assert "every call: steps %d-%d, the Python table's" % (st["warmup"] + 1, STEPS) in svg, svg
    steady_ns = sum(s["ns"] for s in st["steps"][st["warmup"]:])
    assert abs(flame_total_us(svg) * 1000 - steady_ns) <= steady_ns * 0.01 + 1000
    assert "_find_and_load" not in svg
    assert default.read_text() == svg


def folded_total_us(path):
    return sum(int(l.rsplit(" ", 1)[1]) for l in path.read_text().splitlines())


def test_folded_follows_the_phase(run, tmp_path):
    """--folded holds what --flamegraph draws for each --phase, with its default (the steady
    steps): the same lines, so the same total (each file rounds its lines to whole us)."""
    files = {}
    for phase in ("default", "steady", "steps", "startup", "all"):
        folded, svg = tmp_path / (phase + ".folded"), tmp_path / (phase + ".svg")
        args = [] if phase == "default" else ["--phase", phase]
        report(run, "--folded", str(folded), "--flamegraph", str(svg), *args)
        total, drawn = folded_total_us(folded), flame_total_us(svg.read_text())
        assert abs(total - drawn) <= drawn * 0.001 + 100, (phase, total, drawn)
        files[phase] = folded.read_text()
    assert files["default"] == files["steady"]
    assert len(set(files.values())) == 4  # steady, steps, startup, all: four parts
    assert "_find_and_load" in files["startup"] and "_find_and_load" in files["all"]
    assert "_find_and_load" not in files["steady"] and "_find_and_load" not in files["steps"]
    assert "Tensor.backward" in files["steady"] and "Tensor.backward" not in files["startup"]
    # the span phases fold as the call trees' do: one line per path, none under 0.1 %
    for phase in ("steady", "startup"):
        paths = [l.rsplit(" ", 1)[0] for l in files[phase].splitlines()]
        assert len(paths) == len(set(paths)), phase


def folded_lines(path):
    """[(frames, us)] of a folded file, the process and thread frames dropped."""
    rows = []
    for line in path.read_text().splitlines():
        stack, us = line.rsplit(" ", 1)
        rows.append((tuple(stack.split(";")[2:]), int(us)))
    return rows


def test_folded_steady_folds_only_frames_with_time(run, tmp_path):
    """A fold counts the frames it holds that ran in the steady steps (not every node the
    process ever ran beneath it: the imports, the set-up), and sits under the frame whose
    calls it holds: each printed path's time with all beneath it is the one of the file
    that folds nothing."""
    cut, whole = tmp_path / "cut.folded", tmp_path / "whole.folded"
    report(run, "--folded", str(cut))
    report(run, "--folded", str(whole), "--folded-min-share", "0", "--folded-depth", "0")
    cut_rows, whole_rows = folded_lines(cut), folded_lines(whole)
    assert not any(f[-1].startswith("[") for f, _ in whole_rows), whole_rows
    for frames, us in cut_rows:
        m = re.match(r"^\[(\d+) frames folded\]$", frames[-1])
        if not m:
            continue
        at = frames[:-1]
        beneath = {f[:k] for f, _ in whole_rows if f[:len(at)] == at
                   for k in range(len(at) + 1, len(f) + 1)}
        # (frames each under a microsecond have no line in the file folding nothing: a
        # fold of those alone counts the frames with any time)
        assert 1 <= int(m.group(1)) and (int(m.group(1)) <= len(beneath) or not beneath), \
            (frames, us, len(beneath))
    for at in {f for f, _ in cut_rows if not f[-1].startswith("[")}:
        under = [us for f, us in cut_rows if f[:len(at)] == at]
        want = [us for f, us in whole_rows if f[:len(at)] == at]
        assert abs(sum(under) - sum(want)) <= len(under) + len(want), (at, under, want)


def test_folded_steady_self_time_is_the_python_tables(run, tmp_path):
    """In the steady steps a line's number is its path's own time from the call tree's
    counts at the steps' edges, every call however short: each function's lines add up to
    the steady --python table's tottime (each line rounded to whole us), and each path's
    time with all beneath it to its cumtime; <module>, under way across the steps with
    main() inside it all along, has none. (From the calls of at least PROF_PY_SPAN_US
    alone, a shorter call's time was its caller's: a reinforcement learning loop's
    select_action read 676 ms of own time where the table said 18 ms.)"""
    folded = tmp_path / "steady.folded"
    report(run, "--folded", str(folded), "--folded-min-share", "0", "--folded-depth", "0")
    own, lines, under = {}, {}, {}
    for frames, us in folded_lines(folded):
        own[frames[-1]] = own.get(frames[-1], 0) + us
        lines[frames[-1]] = lines.get(frames[-1], 0) + 1
        for frame in set(frames):  # (a recursion's frames once)
            under[frame] = under.get(frame, 0) + us
    rows = report_json(run)["python"]

    def frame(f):  # a function's frame in the folded file
        return f["qualname"] if f["kind"] == "c" else "%s (%s:%d)" % (f["qualname"], f["file"],
                                                                        f["line"])
    table = {frame(f): f["tottime_ns"] / 1000 for f in rows}
    backward = "<method 'run_backward' of 'torch._C._EngineBase' objects>"
    assert table[backward] > 500, table  # clearly hot: about a third of the steps
    module = [frame(f) for f in rows if f["qualname"] == "<module>"]
    assert module and all(table[m] == 0 and own.get(m, 0) == 0 for m in module), module
    for name, us in table.items():
        assert abs(own.get(name, 0) - us) <= lines.get(name, 0) + 1, (name, own.get(name), us)
    short = [f for f in rows if f["ncalls"] and f["cumtime_ns"] / f["ncalls"] < 100e3
             and f["cumtime_ns"] > 1e6]
    assert short, rows  # calls shorter than PROF_PY_SPAN_US, a millisecond of them in all
    for f in short + [f for f in rows if f["qualname"] in ("main", backward)]:
        want = f["cumtime_ns"] / 1000
        assert abs(under[frame(f)] - want) <= want * 0.001 + 50, (f, under[frame(f)])


def test_warm_up_heavy_run_shows_the_steady_steps(tmp_path):
    """When the warm-up steps are most of the steps' time (test/workloads/torch_warmup.py:
    a first forward of 0.6 s, then steps of a few ms), the default flame graph is of the
    steady steps, where set_up() is not; --phase steps shows every step's phases."""
    profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_warmup.py")], tmp_path,
            timeout=300)
    st = main_steps(tmp_path)
    assert 1 <= st["warmup"] <= 3 and st["count"] == 12  # the first, and what load slows
    default, steps = tmp_path / "d.svg", tmp_path / "s.svg"
    report(tmp_path, "--flamegraph", str(default))
    report(tmp_path, "--flamegraph", str(steps), "--phase", "steps")
    d, s = default.read_text(), steps.read_text()
    assert "in the steady training steps" in d and "set_up" not in d
    assert "warm-up included" in s and "set_up" in s
    assert flame_total_us(d) < flame_total_us(s) / 4


def op_calls(out, *args):
    rep = report_json(out, "--ops", *args)
    return rep["ops_cover"], {(o["name"]): o["calls"] for o in rep["ops"]}


def test_operator_table_of_the_steady_steps(run):
    """The operator table covers the steady steps by default: an op of every step once per
    steady step, the dataset's set-up (startup) and the side thread's ops (after the last
    step) left out; --phase steps, startup and all cover what they say, from the same
    spans (the op trees, cumulative over the process, give --phase all)."""
    st = main_steps(run)
    steady = STEPS - st["warmup"]
    cover, calls = op_calls(run)
    assert cover["part"] == "the steady training steps", cover
    assert cover["note"].startswith("%d step" % steady) and "--phase all" in cover["note"]
    steady_ns = sum(s["ns"] for s in st["steps"][st["warmup"]:])
    assert abs(cover["ns"] - steady_ns) <= 1000, (cover, steady_ns)
    assert calls["my_scope"] == steady and calls["aten::conv2d"] == steady, calls
    assert calls["Optimizer.step#SGD.step"] == steady, calls
    assert "aten::cumsum" not in calls and "aten::randn" not in calls, calls
    cover, steps = op_calls(run, "--phase", "steps")
    assert cover["part"].startswith("the training steps") and steps["my_scope"] == STEPS
    cover, startup = op_calls(run, "--phase", "startup")
    assert cover["part"].startswith("the startup") and "my_scope" not in startup
    assert abs(cover["ns"] - st["startup_ns"]) <= 1000, (cover, st["startup_ns"])
    assert startup["aten::randn"] >= 1, startup
    cover, whole = op_calls(run, "--phase", "all")
    assert cover == {"part": "the whole process", "note": "", "ns": 0}
    assert whole["my_scope"] == STEPS and whole["aten::cumsum"] == 5, whole
    assert whole["aten::randn"] == startup["aten::randn"]
    for name in set(steps) | set(startup):  # the parts do not overlap, the process holds them
        assert steps.get(name, 0) + startup.get(name, 0) <= whole[name], name
    csv_text = report(run, "--format", "csv").stdout
    block = csv_text[csv_text.index("# ops_cover\n"):].split("\n\n")[0].splitlines()
    assert block[1] == "part,note,ns" and block[2].startswith("the steady training steps,"), block
    text = report(run).stdout
    assert "PyTorch operators in the steady training steps (" in text
    assert "the operator, Python and tensor memory tables below cover the steady training " \
        "steps" in text


def py_calls(out, *args):
    d = report_json(out, *args)
    return d["python_cover"], {f["qualname"]: f["ncalls"] for f in d["python"]}


def test_python_table_of_the_steady_steps(run, tmp_path):
    """The Python table covers the steady steps of the training loop's thread by default,
    from the cuts that thread took of its call tree at its optimizer steps' ends: a
    function of every step once per step, the set-up (startup) and the side thread (after
    the last step, on another thread) left out; the first step (whose start is no optimizer
    step's end) is said left out. --phase all: the whole process, every thread."""
    st = main_steps(run)
    first = max(st["warmup"], 1)  # the steps from first + 1 on
    covered = STEPS - first
    cover, calls = py_calls(run)
    assert cover["part"] == "the steady training steps", cover
    assert "steps %d-%d" % (first + 1, STEPS) in cover["note"], cover
    assert "--phase all" in cover["note"] and "thread only" in cover["note"], cover
    ns = sum(s["ns"] for s in st["steps"][first:])
    assert abs(cover["ns"] - ns) <= 1000, (cover, ns)
    assert calls["Net.forward"] == covered and calls["SGD.step"] == covered, calls
    assert calls["cross_entropy"] == covered, calls
    assert "Net.__init__" not in calls and "side_thread" not in calls, calls
    fn = {f["qualname"]: f for f in report_json(run)["python"]}
    assert fn["main"]["ncalls"] == 0, fn["main"]  # under way across the part: its time only
    assert abs(fn["main"]["cumtime_ns"] - cover["ns"]) <= 1000, (fn["main"], cover)
    cover, steps = py_calls(run, "--phase", "steps")
    assert cover["part"].startswith("the training steps") and steps["Net.forward"] == STEPS - 1
    cover, startup = py_calls(run, "--phase", "startup")
    assert cover["part"] == "the whole process" and "step boundary" in cover["note"], cover
    cover, whole = py_calls(run, "--phase", "all")
    assert cover == {"part": "the whole process", "note": "", "ns": 0}
    assert whole["Net.forward"] == STEPS and whole["side_thread"] == 1, whole
    assert whole["Net.__init__"] == 1 and whole["main"] == 1, whole
    text = report(run).stdout
    assert "Python functions in the steady training steps (" in text, text
    csv_text = report(run, "--format", "csv").stdout
    block = csv_text[csv_text.index("# python_cover\n"):].split("\n\n")[0].splitlines()
    assert block[1] == "part,note,ns" and block[2].startswith("the steady training steps,"), block
    # the same from summaries (they keep the steady steps' rows beside the whole process's)
    summaries = summaries_only(run, tmp_path)
    assert py_calls(summaries) == py_calls(run)
    assert py_calls(summaries, "--phase", "all") == py_calls(run, "--phase", "all")
    cover, _ = py_calls(summaries, "--phase", "steps")
    assert cover["part"] == "the whole process" and "summary" in cover["note"], cover


@pytest.mark.parametrize("steps", [12, 20, 60])
def test_python_table_of_many_steps(tmp_path, steps):
    """Past the cuts the process writes through its ring (1-8, 16, 32), each node keeps the
    latest cut and the collector writes the last one when the process ends: a run of 12,
    20 or 60 steps (test/workloads/torch_warmup.py) gives the steady steps' functions once
    per step up to the last step (12 and 20 ended at cut 8 and 16 before), the warm-up's
    set_up() left out; with a tiny ring that drops events the table is the whole process's
    and says why."""
    workload = [PYTHON, os.path.join(ROOT, "test", "workloads", "torch_warmup.py"),
                str(steps)]
    profile(workload, tmp_path / "a", timeout=300)
    st = main_steps(tmp_path / "a")
    assert st["count"] == steps and 1 <= st["warmup"] <= steps // 4, st["warmup"]
    cover, calls = py_calls(tmp_path / "a")
    assert cover["part"] == "the steady training steps", cover
    assert "steps %d-%d" % (st["warmup"] + 1, steps) in cover["note"], cover
    covered = steps - st["warmup"]
    for name in ("time_step", "Net.forward", "mse_loss", "SGD.step"):
        assert calls[name] == covered, (name, calls)
    assert "set_up" not in calls and "Net.__init__" not in calls, calls
    ns = sum(s["ns"] for s in st["steps"][st["warmup"]:])
    assert abs(cover["ns"] - ns) <= 1000, (cover, ns)
    profile(workload, tmp_path / "b", timeout=300,
            env={"PROF_RING_KB": "64", "PROF_FLUSH_MS": "200"})
    cover, calls = py_calls(tmp_path / "b")
    if cover["part"] == "the steady training steps":  # the ring kept every event after all
        assert calls["time_step"] == steps - main_steps(tmp_path / "b")["warmup"], calls
        return
    assert "dropped" in cover["note"] and "PROF_RING_KB" in cover["note"], cover
    assert calls["set_up"] == 1 and calls["time_step"] == steps, calls


@pytest.mark.parametrize("slow", [3, 12])
def test_python_table_of_profiler_steps(tmp_path, slow):
    """With torch.profiler's prof.step() the steps are its ProfilerStep#N scopes, and the
    thread cuts its call tree at their starts: the table runs from the first steady step's
    start that holds a cut (the process keeps the cuts at the first 8 boundaries, the 16th,
    the 32nd and the last: after a warm-up of 12 steps the table starts some steps later,
    and says which) to the last step's end, the start of the scope the last prof.step()
    opened (the profiler's teardown, no step); work() runs once in each of those steps
    (test/workloads/torch_profiler_steps.py)."""
    steps = 40 if slow == 3 else 60
    profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_profiler_steps.py"),
             str(steps), str(slow)], tmp_path, timeout=300)
    st = main_steps(tmp_path)
    assert st["source"].startswith("ProfilerStep") and st["warmup"] >= slow, st["warmup"]
    cover, calls = py_calls(tmp_path)
    assert cover["part"] == "the steady training steps", cover
    first, last = map(int, re.search(r"steps (\d+)-(\d+)", cover["note"]).groups())
    numbers = [s["number"] for s in st["steps"]]
    assert first >= numbers[st["warmup"]] and last == numbers[-1], (first, last, numbers)
    kept = set(range(1, 9)) | {16, 32}  # the boundaries cut; step i starts at the (i+1)-th
    line = next(l for l in report(tmp_path).stdout.splitlines() if l.startswith("  Startup:"))
    if st["warmup"] + 1 not in kept:  # 12 slow steps: the table starts at the 16th
        assert first > numbers[st["warmup"]], (first, numbers[st["warmup"]])
        # the Training steps section says so (a review found it claiming the steady steps)
        assert "the Python table covers steps %d-%d of them" % (first, last) in line, line
    else:
        assert first == numbers[st["warmup"]], (first, numbers[st["warmup"]])
        assert "operator, Python and tensor memory tables below cover the steady" in line, line
    assert calls["work"] == calls["profile.step"] == last - first + 1, calls
    assert "slow" not in calls, calls


@pytest.mark.parametrize("tail_ms", [0, 30])
def test_profiler_steps_are_the_iterations(tmp_path, tail_ms):
    """With prof.step() each iteration is one step, numbered as torch numbers them, once
    each and in order (torch 1.13 names two scopes #0: the one start() opens and the one
    the first prof.step() opens), from one ProfilerStep#N scope's start to the next's (the
    profiler's own work inside prof.step() is the iteration's); the scope the last
    prof.step() opens, closed by the profiler's exit, is its teardown, no step. The
    operator, Python and memory tables cover exactly the steady steps; the operator and
    actions tables hold the scopes as one ProfilerStep* row, as torch's key_averages()
    does; the Kineto export keeps each scope's own name (HTA and TensorBoard read them).
    With 30 ms of work after the loop (longer than a step) that scope is still the
    teardown's, and the ProfilerStep* row that counts it leaves the Actions' percentages of
    the training (a review found a 13th step, a periodic-work finding of it, and the wall
    time for base)."""
    iterations = 12
    profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_profiler_steps.py"),
             str(iterations), "0", str(tail_ms)], tmp_path, timeout=300)
    d = report_json(tmp_path)
    st = main_steps(tmp_path)
    assert st["source"].startswith("ProfilerStep"), st["source"]
    assert [s["number"] for s in st["steps"]] == list(range(iterations)), st["steps"]
    for a, b in zip(st["steps"], st["steps"][1:]):
        assert a["start_ns"] + a["ns"] == b["start_ns"], (a, b)
    steady = st["steps"][st["warmup"]:]
    assert d["python_cover"]["ns"] == d["ops_cover"]["ns"] == d["torch_memory_cover"]["ns"] == \
        sum(s["ns"] for s in steady), (d["python_cover"], d["ops_cover"])
    assert "steps %d-%d" % (steady[0]["number"], iterations - 1) in d["python_cover"]["note"]
    assert d["ops_cover"]["note"].startswith("%d steps" % len(steady)), d["ops_cover"]
    ops = [(o["name"], o["calls"]) for o in d["ops"] if o["name"].startswith("ProfilerStep")]
    assert ops == [("ProfilerStep*", len(steady))], ops
    actions = [(a["name"], a["calls"]) for a in d["actions"]
               if a["name"].startswith("ProfilerStep")]
    assert actions == [("ProfilerStep*", iterations + 1)], actions  # every scope, teardown's too
    assert d["actions_percent_of"]["base"] == "training", d["actions_percent_of"]
    # (a step slowed by the machine's load may make a finding; the teardown's never)
    assert not [f for f in d["findings"] if re.search(r"\bstep %d\b" % iterations,
                                                      f["title"] + f["evidence"])], d["findings"]
    report(tmp_path, "--chrome-trace", str(tmp_path / "k.json"))
    doc = json.load(open(tmp_path / "k.pt.trace.json"))
    names = [e["name"] for e in doc["traceEvents"]
             if e.get("name", "").startswith("ProfilerStep")]
    assert len(names) == iterations + 1 and all(re.fullmatch(r"ProfilerStep#\d+", n)
                                                for n in names), names


def test_operator_table_of_a_lossy_ring_is_the_whole_process(tmp_path):
    """When the ring dropped op spans the steps' table cannot be exact: the table is the
    whole process's, from the op trees, and says why."""
    profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_optim.py")], tmp_path,
            timeout=300, env={"PROF_RING_KB": "64", "PROF_FLUSH_MS": "200"})
    cover, calls = op_calls(tmp_path)
    _, whole = op_calls(tmp_path, "--phase", "all")
    if cover["part"] != "the whole process":  # the ring kept every span after all
        pytest.skip("no op span dropped with a 64 KiB ring: %s" % cover)
    if not [p for p in report_json(tmp_path)["processes"] if p["steps"]]:
        # the step scopes were among the dropped (CI saw it once): said where steps are
        text = report(tmp_path).stdout
        assert "events were lost (the ring was full: PROF_RING_KB raises it)" in text, text
        return
    assert "dropped" in cover["note"] and "PROF_RING_KB" in cover["note"], cover
    assert calls == whole
    text = report(tmp_path).stdout
    assert "PyTorch operators in the whole process (" in text
    assert "(not the steady training steps: the ring dropped events" in text


def test_two_optimizers_per_batch_make_one_step(tmp_path):
    """A GAN steps two optimizers per batch (test/workloads/torch_gan.py): a step is the
    batch's iteration, not each optimizer step; the text says so, the Kineto export's
    ProfilerStep#N spans and the summaries follow."""
    iterations = 12  # over 2 epochs: the first's spent iterator fetches once more
    r = profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_gan.py"),
                 str(iterations), "2"], tmp_path / "gan", timeout=300)
    assert "iterations %d optimizer_steps %d" % (iterations, 2 * iterations) in r.stdout
    st = main_steps(tmp_path / "gan")
    assert st["count"] == iterations and st["optimizer_steps_per_step"] == 2, st
    # its backwards feed two optimizers: no gradient accumulation
    assert st["backward_passes_per_step"] == 1, st
    assert [s["number"] for s in st["steps"]] == list(range(1, iterations + 1))
    for s in st["steps"][1:]:  # each steps both: two backwards and the optimizer
        assert s["parts_ns"]["data loading"] > 0 and s["parts_ns"]["optimizer"] > 0, s
    # each model call (~70 us, under PROF_PY_SPAN_US) is on the timeline all the same, the
    # outermost of a phase's calls always: the steps' forward is the forward action's time
    # (a review found 52.68 us per step against 490, the rest in "other ops")
    actions = {a["name"]: a for a in report_json(tmp_path / "gan")["actions"]}
    forward = sum(s["parts_ns"]["forward"] for s in st["steps"])
    assert abs(forward - actions["forward"]["total_s"] * 1e9) <= 1000, (forward, actions)
    text = report(tmp_path / "gan").stdout
    assert re.search(r"Training steps: \d+ steady of %d, from optimizer steps \(.*\), "
                     r"grouped 2 to a step: one step per DataLoader batch" % iterations, text)
    report(tmp_path / "gan", "--chrome-trace", str(tmp_path / "k.json"))
    doc = json.load(open(tmp_path / "k.pt.trace.json"))
    assert sum(e.get("name", "").startswith("ProfilerStep#")
               for e in doc["traceEvents"]) == iterations
    assert main_steps(summaries_only(tmp_path / "gan", tmp_path)) == st
    # every table covers the same steps: the first, whose start is inferred, is left out
    # (the Python cuts are at the steps' ends) however fast it was
    d = report_json(tmp_path / "gan")
    assert st["warmup"] >= 1 and d["python_cover"]["ns"] == d["ops_cover"]["ns"] == \
        d["torch_memory_cover"]["ns"] > 0, (st["warmup"], d["python_cover"], d["ops_cover"])
    assert "steps %d-%d" % (st["warmup"] + 1, iterations) in d["python_cover"]["note"]


HOGWILD = """
import sys, torch, torch.multiprocessing as mp

def train(steps):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=train, args=(n,)) for n in (30, 20)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    sys.exit(max(w.exitcode for w in workers))
"""


def test_the_steps_say_whose_they_are_among_processes_that_train(tmp_path):
    """Processes without ranks that train side by side (pytorch/examples' mnist_hogwild:
    torch.multiprocessing workers, each with its optimizer): the text's steps are one
    process's; the section says whose, that another trained too, and how to see its steps
    (its trace file alone), which then reports that process's steps."""
    script = tmp_path / "hogwild.py"
    script.write_text(HOGWILD)
    profile([PYTHON, str(script)], tmp_path / "out", timeout=300)
    procs = [p for p in report_json(tmp_path / "out")["processes"] if p["steps"]]
    by_count = {p["steps"]["count"]: p for p in procs}
    assert sorted(by_count) == [20, 30], procs
    text = report(tmp_path / "out").stdout
    line = [ln for ln in text.splitlines() if "'s steps above; " in ln]
    assert len(line) == 1, text
    m = re.match(r"  \(pid (\d+)'s steps above; 2 processes have training steps: another is "
                 r"pid (\d+) \(20 steps\), its own report: `profreport (\S+)`\)$", line[0])
    assert m, line
    assert int(m.group(1)) == by_count[30]["pid"] and int(m.group(2)) == by_count[20]["pid"]
    assert "Training steps: " in text and " steady of 30," in text, text
    alone = report(m.group(3)).stdout
    assert " steady of 20," in alone and "'s steps above" not in alone, alone
    # from summaries whose traces are gone: the summary is what to give
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "out", copy)
    subprocess.run([PROFREPORT, "--summarize", str(copy)], check=True, capture_output=True,
                   timeout=120)
    for f in copy.glob("*.trace"):
        f.unlink()
    text = report(*sorted(str(f) for f in copy.glob("*.summary"))).stdout
    (summary,) = re.findall(r"another is pid \d+ \(20 steps\), its own report: "
                            r"`profreport (\S+\.summary)`\)", text)
    assert " steady of 20," in report(summary).stdout
