"""Issue 18: findings that name the Python line behind a step problem, on
test/workloads/torch_slow_steps.py. Its Dataset spends about 2 ms per sample in
slow_transform (num_workers=0: in the training process), and it runs evaluate() (about
120 ms of Python) after every 10th optimizer step, so the steps that hold it are the
slowest. The data-loading finding names slow_transform and says the loader is the
single-process one; the whole-process DataLoader finding does not repeat it; the slow-steps
finding and the Training steps section name evaluate, not the forward it also runs; a
summary says the same as the trace."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import PROFREPORT, ROOT, BUILD, profile, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(ROOT, "test", "workloads", "torch_slow_steps.py")
ENV = {"PROF_TORCH_CACHE": os.path.join(BUILD, "test", "torch-cache")}
STEPS = 30

HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("step_causes") / "run"
    proc = profile([PYTHON, SCRIPT, str(STEPS)], out, env=ENV, timeout=300)
    assert "steps %d evals %d" % (STEPS, STEPS // 10) in proc.stdout, proc.stdout
    return out


def findings_of(path):
    return {f["kind"]: f for f in report_json(path)["findings"]}


def test_data_stall_names_the_dataset_code(run):
    f = findings_of(run)
    data = f["step_data"]
    assert "slow_transform (" in data["where"] and "torch_slow_steps.py:" in data["where"], data
    assert "num_workers=0" in data["evidence"], data
    # the whole-process DataLoader finding would say the same again, with less
    assert "dataloader" not in f, sorted(f)


def test_slow_steps_name_the_evaluation(run):
    f = findings_of(run)
    slow = f["slow_steps"]
    step = int(re.search(r"step (\d+)", slow["title"]).group(1))
    assert step in (11, 21), slow  # the steps that hold evaluate()
    assert slow["where"].startswith("evaluate (") and "in step %d" % step in slow["where"], slow
    text = report(run).stdout
    line = next(l for l in text.splitlines() if l.startswith("  Slowest steps:"))
    named = re.findall(r"step (\d+) [^;]*; evaluate \(torch_slow_steps\.py:\d+\) \+", line)
    assert sorted(int(n) for n in named) == [11, 21], line


def test_summary_names_the_same(run, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for t in trace_files(run):
        shutil.copy(t, copy)
    subprocess.run([PROFREPORT, "--summarize", str(copy)], check=True, capture_output=True)
    assert list(copy.glob("*.summary"))  # read in place of the traces
    a, b = findings_of(run), findings_of(copy)
    for kind in ("step_data", "slow_steps"):
        assert a[kind]["where"] == b[kind]["where"], (a[kind], b[kind])
    assert [l for l in report(run).stdout.splitlines() if "Slowest steps" in l] == \
        [l for l in report(copy).stdout.splitlines() if "Slowest steps" in l]
