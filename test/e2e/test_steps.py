"""Training steps of one process (test/workloads/torch_train.py, Debian's torch on CPU: 8
optimizer steps over two epochs, a DataLoader with two forked workers): the steps, their
parts, the report's first screen, the HTML's steps section, the flame graph of the steps'
phases (--phase all: the whole process) and the same figures from summaries."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PROFREPORT, ROOT, profile, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
STEPS = 8


def have_torch():
    return os.path.exists(PYTHON) and subprocess.run(
        [PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


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
    assert st["warmup"] + st["steady"] == STEPS and st["warmup"] <= STEPS // 4
    for s in st["steps"]:
        assert sum(s["parts_ns"].values()) == s["ns"], s  # the parts add up to the step
        assert s["parts_ns"]["data loading"] > 0 and s["parts_ns"]["backward"] > 0, s
    # the steps follow one another; startup (imports included) comes before the first
    for a, b in zip(st["steps"], st["steps"][1:]):
        assert a["start_ns"] + a["ns"] == b["start_ns"]
    assert st["startup_ns"] > st["startup_import_ns"] > 0
    assert st["median_ns"] <= st["p90_ns"] <= st["max_ns"]


def test_first_screen(run):
    text = report(run).stdout
    head = text[:text.index("Job\n")]
    assert "Training steps: " in head and "Where a step's time goes" in head
    for part in ("data loading", "forward", "backward", "optimizer", "other CPU"):
        assert "\n  %s " % part in head, part
    assert "startup:" in head  # a short run: the startup finding says so


def test_html_steps_section(run, tmp_path):
    page = tmp_path / "r.html"
    report(run, "--html", str(page))
    html = page.read_text()
    assert html.index('<section id="steps">') < html.index('<section id="timeline">')
    assert 'data-steps="%d"' % STEPS in html
    assert len(re.findall(r'<g class="step"', html)) == STEPS
    assert "Flame graph (Python, wall time inside the training steps' phases" in html


def test_flame_graph_of_the_steps(run, tmp_path):
    steps, whole = tmp_path / "s.svg", tmp_path / "a.svg"
    report(run, "--flamegraph", str(steps))
    report(run, "--flamegraph", str(whole), "--phase", "all")
    s, a = steps.read_text(), whole.read_text()
    assert "training steps' phases" in s and "wall time" in s
    assert "Tensor.backward" in s and "_BaseDataLoaderIter.__next__" in s
    assert "_find_and_load" not in s  # imports are startup
    assert "_find_and_load" in a
    bad = subprocess.run([PROFREPORT, "--phase", "warmup", str(run)], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--phase wants all or steps" in bad.stderr


def test_steps_from_summaries(run, tmp_path):
    copy = tmp_path / "sum"
    copy.mkdir()
    for f in trace_files(run):
        shutil.copy(f, copy)
    report(copy, "--summarize")
    for f in copy.glob("*.trace"):
        f.unlink()
    summaries = sorted(copy.glob("*.summary"))  # without their traces: read when named
    assert main_steps(summaries) == main_steps(run)
    assert report(summaries).stdout.split("Job\n")[0] == report(run).stdout.split("Job\n")[0]


def test_exports_carry_the_steps(run, tmp_path):
    """The Kineto JSON has ProfilerStep#N spans where the steps are (HTA and the TensorBoard
    plugin find a trace's steps by that name); Perfetto a Training steps track."""
    st = main_steps(run)
    out = tmp_path / "k.json"
    report(run, "--chrome-trace", str(out))
    events = [e for e in json.load(open(out))["traceEvents"]
              if e.get("name", "").startswith("ProfilerStep#")]
    assert [e["name"] for e in events] == ["ProfilerStep#%d" % s["number"] for s in st["steps"]]
    assert all(e["ph"] == "X" and e["cat"] == "user_annotation" and e["tid"] == st["thread"]
               for e in events)
    assert [round(e["dur"] * 1000) for e in events] == [s["ns"] for s in st["steps"]]
    from timeline_decode import Timeline
    pf = tmp_path / "t.pftrace"
    report(run, "--perfetto", str(pf))
    tl = Timeline(str(pf))
    tracks = list(tl.named("Training steps"))
    assert len(tracks) == 1 and tl.kind(tl.parent(tracks[0])) == "thread"
    assert [s[0] for s in tl.slices(tracks[0])] == [e["name"] for e in events]
