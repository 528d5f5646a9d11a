"""Training steps of one process, the actions' shares: of the training steps alone, with an
evaluation after the loop, a scope around the steps, a loss module and a loop trained on a
thread (test_steps.py has the steps of test/workloads/torch_train.py)."""
import os
import re

import pytest

from conftest import ROOT, profile, report, report_json, summaries_only
# pytestmark: skipped, as test_steps.py, where /usr/bin/python3 has no torch
from test_steps import PYTHON, folded_total_us, main_steps, pytestmark  # noqa: F401


# A loop of a few optimizer steps, then an evaluation after the last step that takes
# longer than the whole training: its forwards count in forward's Total.
EVAL_AFTER_STEPS = """
import time
import torch
import torch.nn as nn


class Slow(nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return x


torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
slow = Slow()
with torch.no_grad():
    for _ in range(20):
        slow(torch.randn(4, 8))
"""


def test_action_shares_are_of_the_training_steps(tmp_path):
    """Without Lightning the Actions' Totals are the whole process's, so their percentages
    are of the training: from the first step's start to the end of the last loop action
    after the last step (here an evaluation after the loop, longer than the training); a
    review found forward at 125 % of the steps' own span, the evaluation counted in its
    Total but not in the base. No share may exceed 100 %, nor may the disjoint built-in
    actions together; text, JSON, HTML and the summaries say the same."""
    script = tmp_path / "eval_after_steps.py"
    script.write_text(EVAL_AFTER_STEPS)
    out = tmp_path / "run"
    profile([PYTHON, str(script)], out, timeout=300)
    st = main_steps(out)
    assert st["count"] >= 2, st
    span = st["steps"][-1]["start_ns"] + st["steps"][-1]["ns"] - st["steps"][0]["start_ns"]
    d = report_json(out)
    base = d["actions_percent_of"]
    assert base["base"] == "training" and base["training_steps_ns"] == span, (base, span)
    # the 20 evaluation forwards (20 ms each) after the loop: inside the base, which stops
    # before the process's end (the teardown)
    assert span + 20 * 20e6 <= base["ns"] < base["wall_ns"] - st["startup_ns"], (base, st)
    rows = {a["name"]: a for a in d["actions"]}
    forward = rows["forward"]
    assert forward["calls"] >= 25 and forward["total_s"] * 1e9 > span, (forward, span)
    assert all(a["percent"] <= 100 for a in d["actions"]), d["actions"]
    loop = ["forward", "backward", "optimizer_step", "dataloader_next"]
    assert sum(rows[n]["percent"] for n in loop if n in rows) <= 100, rows
    assert abs(forward["percent"] - 100 * forward["total_s"] * 1e9 / base["ns"]) < 1e-3
    phrase = "%% of the training: the %.6f s from the first training step's start to the last " \
        "one's end, with the actions' calls across them (a range around each step; a forward " \
        "or backward after the last optimizer step, such as an evaluation; the steps take " \
        "%.6f s)" % (base["ns"] / 1e9, span / 1e9)
    text = report(out, "--actions").stdout
    assert phrase in text, text
    html = tmp_path / "r.html"
    report(out, "--html", str(html))
    assert "<h3>Actions (" + phrase in html.read_text()
    # a multi-trace report reads summaries: the same base, the same shares
    d2 = report_json(summaries_only(out, tmp_path))
    assert d2["actions_percent_of"] == base, d2["actions_percent_of"]
    assert [(a["name"], a["percent"]) for a in d2["actions"]] == \
        [(a["name"], a["percent"]) for a in d["actions"]]


SCOPE_AROUND_STEPS = """
import contextlib
import ctypes
import sys
import time
import torch


@contextlib.contextmanager
def nvtx_range(name):  # libprof.so's nvtxRangePushA, as a program linked with NVTX calls it
    lib = ctypes.CDLL(None)
    lib.nvtxRangePushA(name.encode())
    yield
    lib.nvtxRangePop()


scope = torch.profiler.record_function if sys.argv[1] == "scope" else nvtx_range
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
with scope("epoch"):
    time.sleep(0.05)  # set-up inside the scope, before the first step
    for _ in range(30):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


@pytest.mark.parametrize("kind", ["scope", "nvtx"])
def test_action_shares_with_a_scope_around_the_steps(tmp_path, kind):
    """A scope or NVTX range whose calls begin before the first step or end after the last
    widens the training the shares are of: on an H200 an NVTX range around each step took
    4 us more than the steps in all, and every share fell back to the wall time (train_step
    4.9 %, the startup drowning the loop)."""
    script = tmp_path / "scope_around.py"
    script.write_text(SCOPE_AROUND_STEPS)
    out = tmp_path / "run"
    profile([PYTHON, str(script), kind], out, timeout=300)
    st = main_steps(out)
    span = st["steps"][-1]["start_ns"] + st["steps"][-1]["ns"] - st["steps"][0]["start_ns"]
    d = report_json(out)
    base = d["actions_percent_of"]
    rows = {a["name"]: a for a in d["actions"]}
    epoch = rows["epoch"]
    assert base["base"] == "training" and base["training_steps_ns"] == span, base
    # the base is the epoch's call (below): the steps and the sleep before them, not the
    # process's start-up
    assert span + 50e6 <= base["ns"] < base["wall_ns"], (base, st)
    assert abs(epoch["total_s"] * 1e9 - base["ns"]) <= 1e6 and 99 <= epoch["percent"] <= 100, epoch
    assert all(a["percent"] <= 100 for a in d["actions"]), d["actions"]
    assert "with the actions' calls across them" in report(out, "--actions").stdout
    # the summaries keep the widened start
    d2 = report_json(summaries_only(out, tmp_path))
    assert d2["actions_percent_of"] == base, d2["actions_percent_of"]


LOSS_MODULE = """
import torch
model = torch.nn.Linear(8, 2)
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8), torch.tensor([0, 1, 1, 0])
for _ in range(25):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
"""


def test_a_loss_module_is_said_among_the_forward_calls(tmp_path):
    """A loss module's call is a forward call of its own: 50 for 25 model calls, said under
    the Actions table (a review read half the forward's mean time as the model's)."""
    script = tmp_path / "loss_module.py"
    script.write_text(LOSS_MODULE)
    out = tmp_path / "run"
    profile([PYTHON, str(script)], out, timeout=300)
    rows = {a["name"]: a for a in report_json(out)["actions"] if a["source"] == "builtin"}
    assert rows["forward"]["calls"] == 50 and rows["backward"]["calls"] == 25, rows
    text = report(out, "--actions").stdout
    assert "(forward counts every module call the loop makes outside another: 50 calls for 25 " \
        "backward passes; a loss that is a module, such as nn.CrossEntropyLoss(), is a call of " \
        "its own too)" in text
    # a CPU-only run: no GPU time column (a column of zeros), in the text and the HTML
    header = [l for l in text.splitlines() if l.strip().startswith("Action ")][0]
    assert header.split()[-3:] == ["Percentage", "%", "Source"], header
    report(out, "--html", str(out / "r.html"))
    actions = (out / "r.html").read_text().split('id="t-actions"')[1].split("</thead>")[0]
    assert "GPU time" not in actions and ">Source<" in actions, actions


def test_startup_of_a_loop_trained_on_a_thread(tmp_path):
    """A loop run on a threading.Thread has its startup (imports, set-up) on the main
    thread: the Startup line's imports and the startup flame graph are that thread's (a
    review found "imports 0 ns" and a startup flame graph of 0.5 ms of 972 ms)."""
    r = profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_gan.py"), "8",
                 "thread"], tmp_path / "t", timeout=300)
    assert "iterations 8 optimizer_steps 16" in r.stdout
    st = main_steps(tmp_path / "t")
    assert st["count"] == 8, st
    # importing torch is most of the startup
    assert st["startup_import_ns"] > st["startup_ns"] / 2, st
    folded = tmp_path / "s.folded"
    report(tmp_path / "t", "--folded", str(folded), "--phase", "startup")
    assert folded_total_us(folded) * 1000 > 0.8 * st["startup_ns"], folded_total_us(folded)


HOSTILE_SCOPE_AFTER_STEPS = """
import time
import torch
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
with torch.autograd.profiler.record_function("<img src=x onerror=alert(1)>\\x1b[31mred"):
    time.sleep(0.3)
"""


def test_a_scope_outside_the_training_is_named_escaped(tmp_path):
    """A record_function scope after the loop, longer than the training: the Actions'
    percentages are of the wall time, and the title names the scope, as data: escaped in
    the text and in the HTML (a review found its markup and escape sequence written raw)."""
    script = tmp_path / "scope_after.py"
    script.write_text(HOSTILE_SCOPE_AFTER_STEPS)
    profile([PYTHON, str(script)], tmp_path / "run", timeout=300)
    d = report_json(tmp_path / "run")
    assert d["actions_percent_of"]["base"] == "wall", d["actions_percent_of"]
    text = report(tmp_path / "run", "--actions").stdout
    assert "\x1b" not in text and "<img src=x onerror=alert(1)>\\x1b[31mred takes more than " \
        "the training" in text, text[:2000]
    html = tmp_path / "r.html"
    report(tmp_path / "run", "--html", str(html))
    page = html.read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


MANUAL_UPDATE = """
import time
import torch
import torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 64))
x, y = torch.randn(32, 64), torch.randn(32, 64)
times = []
for i in range(30):
    t0 = time.perf_counter()
    model.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():  # word_language_model's update: no optimizer object
        p.data.add_(p.grad, alpha=-0.01)
    if i == 20:
        time.sleep(0.05)
    times.append(time.perf_counter() - t0)
print("iterations", len(times), "median_ms %.3f" % (sorted(times)[15] * 1e3))
"""


def test_a_loop_without_an_optimizer_steps_by_its_backward_passes(tmp_path):
    """pytorch/examples' word_language_model updates its parameters by hand: no optimizer
    step, and the report said "Training steps: none found". Its steps end where its
    backward passes end (said), one per iteration; the update counts in the next step."""
    script = tmp_path / "manual.py"
    script.write_text(MANUAL_UPDATE)
    out = tmp_path / "out"
    got = profile([PYTHON, str(script)], out, timeout=300)
    median_ms = float(re.search(r"median_ms ([\d.]+)", got.stdout).group(1))
    steps = [p["steps"] for p in report_json(out)["processes"] if p["steps"]][0]
    assert steps["source"].startswith("backward passes"), steps["source"]
    assert steps["count"] == 30, steps["count"]
    assert 0.5 < steps["median_ns"] / 1e6 / median_ms < 2, (steps["median_ns"], median_ms)
    text = report(out).stdout
    assert "from backward passes (ends of Tensor.backward calls: no optimizer step seen)" in text
    # the sleep after step 21's backward is step 22's (the next), said as such
    assert "a step ends where its backward pass ends" in text, text
    # the Python table covers the whole process, and says why in the terms of these steps
    assert "(not the steady training steps: its steps end at backward passes (no optimizer)" \
        in text, text
    # so the steady steps' flame graph is drawn from the calls of at least PROF_PY_SPAN_US,
    # and says so, not from the table's counts
    svg = tmp_path / "f.svg"
    report(out, "--flamegraph", str(svg))
    assert ("in the steady training steps (us of wall time; calls of at least PROF_PY_SPAN_US)"
            in svg.read_text())


MIXED = """
import subprocess, sys, torch, torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Linear(32, 4)
x, y = torch.randn(16, 32), torch.randn(16, 4)
if sys.argv[1:] == ["child"]:  # backward passes alone: no optimizer step
    for i in range(30):
        ((model(x) - y) ** 2).mean().backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
                p.grad = None
    print("child", i + 1)
else:
    child = subprocess.Popen([sys.executable, __file__, "child"])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(30):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    child.wait()
    print("parent", i + 1)
"""


def test_flame_graph_of_processes_with_and_without_the_tables_steps(tmp_path):
    """A trainer whose child trains by backward passes alone: the parent's steady flame graph
    is drawn from its Python table's counts (every call), the child's from its calls of at
    least PROF_PY_SPAN_US (its table covers the whole process); the title says both."""
    script = tmp_path / "mixed.py"
    script.write_text(MIXED)
    out = tmp_path / "out"
    got = profile([PYTHON, str(script)], out, timeout=300)
    assert "child 30" in got.stdout and "parent 30" in got.stdout, got.stdout
    sources = sorted(p["steps"]["source"].split(" (")[0]
                     for p in report_json(out)["processes"] if p["steps"])
    assert sources == ["backward passes", "optimizer steps"], sources
    svg, folded = tmp_path / "f.svg", tmp_path / "f.txt"
    report(out, "--flamegraph", str(svg))
    assert ("in the steady training steps (us of wall time; every call, or in some processes "
            "calls of at least PROF_PY_SPAN_US)" in svg.read_text())
    report(out, "--folded", str(folded))
    pids = {line.split(";")[0] for line in folded.read_text().splitlines()}
    assert len(pids) == 2, pids  # both processes' stacks, each its own root
