"""Lightning's own action names from an unmodified run: the calls the Trainer makes to
its profiler's start(name)/stop(name) become actions (source "lightning").

- With the stand-in for Lightning's profiler package (test/doubles/lightning_standin:
  Lightning cannot be installed on CI machines), test/workloads/lightning_loop.py makes a
  Trainer.fit's calls with Lightning's names, on every interpreter: the action counts
  equal the calls made, nesting holds, a raising block still stops, a name that is not a
  str is ignored, a second thread's action counts; under the stand-in SimpleProfiler our
  total per action agrees with the one it measures itself.
- With real Lightning, where importable (the GPU machine; make gpu-check): a small fit
  under profrun with the default profiler gives the actions Lightning's SimpleProfiler
  records for the same fit, name by name, with the same counts.
"""
import json
import os
import subprocess

import pytest

from conftest import ROOT, profile, report, report_json
from test_python_counts import python  # noqa: F401 (the interpreters fixture)

WORKLOADS = os.path.join(ROOT, "test", "workloads")
LOOP = os.path.join(WORKLOADS, "lightning_loop.py")
FIT = os.path.join(WORKLOADS, "lightning_fit.py")
STANDIN = {"PYTHONPATH": os.path.join(ROOT, "test", "doubles", "lightning_standin")}


def lightning_actions(out):
    rep = report_json(out)
    return {a["name"]: a for a in rep["actions"] if a["source"] == "lightning"}, rep


def test_standin_loop_actions(python, tmp_path):
    out = tmp_path / "p"
    proc = profile([python, LOOP, "3", "4"], out, env=STANDIN)
    made = json.loads(proc.stdout)
    assert made["run_training_batch"] == 12 and made["worker_action"] == 1
    got, rep = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == made
    # nesting: the batches lie inside the epochs, the steps inside the batches
    total = {k: v["total_s"] for k, v in got.items()}
    assert total["run_training_batch"] <= total["run_training_epoch"]
    assert (total["[Strategy]SingleDeviceStrategy.training_step"]
            + total["[Strategy]SingleDeviceStrategy.backward"]
            <= total["[LightningModule]Model.optimizer_step"] <= total["run_training_batch"])
    assert all(v["total_s"] > 0 for v in got.values())
    # Lightning's names replace the built-in loop actions; nothing left unpaired
    assert not [a for a in rep["actions"] if a["source"] == "builtin"]
    assert not [w for w in rep.get("warnings", []) if "range(s) never ended" in w]


def test_standin_simple_profiler_times_agree(tmp_path):
    """Under the stand-in SimpleProfiler (start/stop that time themselves), our total per
    action agrees with its own: both time the same start-to-stop interval."""
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", LOOP, "3", "4", "simple"], out, env=STANDIN)
    theirs = json.loads(proc.stdout).pop("simple_total_s")
    got, _ = lightning_actions(out)
    assert set(got) == set(theirs)
    for name, seconds in theirs.items():
        ours = got[name]["total_s"]
        assert abs(ours - seconds) <= 0.2 * seconds + 200e-6, (name, ours, seconds)


def test_standin_default_report_and_table(tmp_path):
    out = tmp_path / "p"
    profile(["/usr/bin/python3", LOOP], out, env=STANDIN)
    text = report(out).stdout
    assert "Actions (Lightning's own action names" in text
    rows = [l.split() for l in text.splitlines() if l.strip().startswith("run_training_epoch")]
    assert rows and rows[0][2] == "3"  # Mean duration, Num calls, ...
    table = report(out, "--actions").stdout
    assert "[_TrainingEpochLoop].train_dataloader_next" in table


def test_dump_shows_action_records(tmp_path):
    from conftest import PROFREPORT, trace_files
    out = tmp_path / "p"
    profile(["/usr/bin/python3", LOOP, "1", "1"], out, env=STANDIN)
    dump = subprocess.run([PROFREPORT, "dump", trace_files(out)[0]], capture_output=True,
                          text=True, timeout=60).stdout
    lines = [l for l in dump.splitlines() if " ACTION " in l]
    starts = [l for l in lines if "(start)" in l]
    assert len(starts) == len(lines) // 2 and "source=1 (Lightning)" in lines[0]
    assert any(':"run_training_batch"' in l for l in starts)


HAVE_LIGHTNING = subprocess.run(
    ["/usr/bin/python3", "-c", "import lightning.pytorch"], capture_output=True).returncode == 0


@pytest.mark.skipif(not HAVE_LIGHTNING, reason="Lightning is not installed (no PyPI on CI "
                    "machines); make gpu-check runs this on the GPU machine")
def test_real_lightning_fit_matches_simple_profiler(tmp_path):
    ref = subprocess.run(["/usr/bin/python3", FIT, "simple"], capture_output=True, text=True,
                         timeout=600, check=True)
    want = json.loads(ref.stdout.strip().splitlines()[-1])
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", FIT, "none"], out, timeout=600)
    assert proc.returncode == 0
    got, _ = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == want
