"""Issue 18: the tensor memory of the steady training steps (report/model/
model_torch_memory_part.c) on test/workloads/torch_leak.py. Its "leak" mode keeps each
step's output (64 x 1000 float32 = 256,000 bytes, allocated by aten::addmm in the last
Linear); its "fixed" mode keeps a 64-int64 argmax (512 bytes) instead. So after the first
steady step the live tensor bytes grow by exactly that much per step, every step grows,
the site that grew is named, and the memory_growth finding fires on the leak only. The
whole process's figures stay beside the part's; summaries keep the part; a ring that
dropped memory records leaves the whole process's figures, said."""
import os
import shutil
import subprocess

import pytest

from conftest import PROFREPORT, ROOT, BUILD, profile, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(ROOT, "test", "workloads", "torch_leak.py")
ENV = {"PROF_TORCH_CACHE": os.path.join(BUILD, "test", "torch-cache"), "PROF_RING_KB": "65536"}
STEPS = 12
KEPT = {"leak": 64 * 1000 * 4, "fixed": 64 * 8}
SITE = {"leak": ("aten::addmm", "Linear.forward"), "fixed": ("aten::argmax", "train")}

HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("memory_steps")
    for mode in KEPT:
        profile([PYTHON, SCRIPT, mode, str(STEPS)], tmp / mode, env=ENV, timeout=300)
    return tmp


def memory_of(rep):
    procs = [p for p in rep["processes"] if p["torch_memory"]]
    assert len(procs) == 1
    return procs[0]["torch_memory"]


@pytest.mark.parametrize("mode", sorted(KEPT))
def test_growth_after_the_first_step_is_exact(runs, mode):
    rep = report_json(runs / mode)
    assert rep["processes"][0]["lost"] == 0
    mem = memory_of(rep)
    part = mem["part"]
    assert part["part"] == "the steady training steps"
    n = part["steps"]
    assert STEPS - 2 <= n <= STEPS  # a warm-up step or two may be left out
    assert rep["torch_memory_cover"]["part"] == "the steady training steps"
    assert rep["torch_memory_cover"]["ns"] == part["ns"] > 0
    grew = part["live_end_bytes"] - part["live_after_first_step_bytes"]
    assert grew == (n - 1) * KEPT[mode], (mode, part)
    assert part["later_steps_grown"] == n - 1
    assert part["grew_bytes"] == (n - 1) * KEPT[mode]
    op, func = SITE[mode]
    assert part["grew_site"]["op"] == op
    assert part["grew_site"]["python"]["qualname"] == func
    assert part["grew_site"]["own_python"]["qualname"] == "train"
    assert part["grew_site"]["own_python"]["file"] == SCRIPT
    # the part's figures are of the part: no more than the whole process's
    assert part["allocations"] < mem["allocations"]
    assert part["allocated_bytes"] < mem["allocated_bytes"]
    assert part["peak_bytes"] <= mem["peak_bytes"]
    assert part["live_start_bytes"] + part["allocated_bytes"] - part["freed_bytes"] == \
        part["live_end_bytes"]
    kinds = [f["kind"] for f in rep["findings"]]
    assert ("memory_growth" in kinds) == (mode == "leak"), kinds


def test_the_leak_is_the_first_screen(runs):
    text = report(runs / "leak").stdout
    findings = text[:text.index("\nTraining steps")]
    assert "tensor memory grows 250.00 KiB per step (CPU, pid" in findings
    assert "where: allocated and not freed: " in findings and "by op aten::addmm" in findings
    assert "torch_leak.py:" in findings
    assert "Something keeps a tensor of every step (outputs or losses kept in a list" in findings
    assert "optimizer's step" not in findings
    section = text[text.index("PyTorch memory in the steady training steps"):]
    section = section[:section.index("\n\n")]
    n = memory_of(report_json(runs / "leak"))["part"]["steps"]
    assert "; after the first step: 250.00 Kb per step, live bytes up in %d of the %d steps " \
        "after it); peak " % (n - 1, n - 1) in section
    assert "grew most after the first step (allocated, not freed): +" in section
    assert "in aten::addmm, from " in section
    assert "\n    the whole process: peak " in section
    assert "the operator, Python and tensor memory tables below cover the steady training " \
        "steps" in text
    fixed = report(runs / "fixed").stdout
    assert "tensor memory grows" not in fixed
    assert "; after the first step: 512 b per step, live bytes up in " in fixed


def test_html_shades_the_steps_on_the_memory_curve(runs, tmp_path):
    page = tmp_path / "leak.html"
    report(runs / "leak", "--html", str(page))
    html = page.read_text()
    assert "the steady training steps shaded, live bytes +250.00 KiB per step after the " \
        "first</h3>" in html
    assert html.count('fill="#e8f0e0"/>') == 1  # the part, on the one curve
    assert "tensor memory grows 250.00 KiB per step" in html


def test_summaries_and_phases(runs, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in trace_files(runs / "leak"):
        shutil.copy(f, copy)
    subprocess.run([PROFREPORT, "--summarize", str(copy)], check=True, capture_output=True,
                   timeout=120)
    assert list(copy.glob("*.summary"))

    def section(d, *args):
        text = report(d, *args).stdout
        start = text.index("PyTorch memory")
        return text[start:text.index("\n\n", start)]

    assert section(copy) == section(runs / "leak")
    whole = report_json(runs / "leak", "--phase", "all")
    assert memory_of(whole)["part"] is None
    assert whole["torch_memory_cover"]["part"] == "the whole process"
    assert section(copy, "--phase", "all") == section(runs / "leak", "--phase", "all")
    steps = memory_of(report_json(runs / "leak", "--phase", "steps"))["part"]
    assert steps["part"] == "the training steps, warm-up included" and steps["steps"] == STEPS
    # a summary holds the steady steps only: another part is the whole process's, said
    text = section(copy, "--phase", "startup")
    assert "not the startup, before the first training step: read from its summary" in text
    startup = memory_of(report_json(runs / "leak", "--phase", "startup"))["part"]
    assert startup["steps"] == 0 and startup["live_start_bytes"] == 0
    assert startup["allocations"] > 0  # the model's parameters


def test_a_ring_that_dropped_memory_records_leaves_the_whole_process(tmp_path):
    out = tmp_path / "lossy"
    profile([PYTHON, SCRIPT, "leak", "60"], out, timeout=300,
            env=dict(ENV, PROF_RING_KB="64", PROF_FLUSH_MS="1000", PROF_RING_WAKE="0"))
    rep = report_json(out)
    mem = memory_of(rep)
    assert mem["records_lost"] > 0 and mem["exact"]
    assert mem["part"] is None
    assert rep["torch_memory_cover"]["part"] == "the whole process"
    assert "the ring dropped events" in rep["torch_memory_cover"]["note"]
    assert mem["live_at_end_bytes"] == 0 and mem["allocated_bytes"] == mem["freed_bytes"]


def test_an_optimizer_history_is_named_as_the_optimizer_state(tmp_path):
    """LBFGS keeps its history of update vectors: one pair more per step (y by aten::sub, s
    by aten::mul, each a flat vector of the model's 136,714 float32 parameters, and 1/ys, a
    0-dim tensor) until history_size. It is memory that grows; the finding says that the
    optimizer's state is what grew the most, and keeps the advice on a leak for growth outside
    the optimizer's code."""
    proc = profile([PYTHON, SCRIPT, "lbfgs", str(STEPS)], tmp_path, env=ENV, timeout=300)
    assert "kept %d" % (STEPS - 1) in proc.stdout, proc.stdout  # one pair a step after the first
    rep = report_json(tmp_path)
    part = memory_of(rep)["part"]
    n = part["steps"]
    vector = 136714 * 4
    # and a 0-dim tensor or two per pair (ro's 1/ys: 80 bytes over 10 steps measured)
    grew = part["live_end_bytes"] - part["live_after_first_step_bytes"]
    assert (n - 1) * 2 * vector <= grew <= (n - 1) * (2 * vector + 16), (grew, n)
    assert part["grew_bytes"] == (n - 1) * vector
    assert part["grew_site"]["python"]["qualname"] == "LBFGS.step"
    assert part["grew_site"]["op"] in ("aten::sub", "aten::mul")
    growth = [f for f in rep["findings"] if f["kind"] == "memory_growth"]
    assert len(growth) == 1, rep["findings"]
    evidence = growth[0]["evidence"]
    assert "What grew the most, %s of it, was allocated in LBFGS.step (torch.optim) and kept: " \
        "the optimizer's state grows (LBFGS keeps up to history_size pairs" % \
        ("%.2f MiB" % (part["grew_bytes"] / 1048576)) in evidence, evidence
    # the advice for a leak stays, for growth outside the optimizer's code
    assert "Growth outside the optimizer's code, if any, would be something kept of every " \
        "step (outputs or losses kept in a list" in evidence, evidence
    assert "Something keeps a tensor" not in evidence, evidence
    assert "LBFGS.step (" in growth[0]["where"] and "torch/optim/lbfgs.py:" in growth[0]["where"]
