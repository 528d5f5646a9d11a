"""Lightning's own action names from an unmodified run: the calls the Trainer makes to
its profiler's start(name)/stop(name) become actions (source "lightning").

- With the stand-in for Lightning's profiler package (test/doubles/lightning_standin:
  Lightning cannot be installed on CI machines), test/workloads/lightning_loop.py makes a
  Trainer.fit's calls with Lightning's names, on every interpreter: the action counts
  equal the calls made, nesting holds, a raising block still stops, a name that is not a
  str is ignored, a second thread's action counts; under the stand-in SimpleProfiler our
  total per action agrees with the one it measures itself. Percentages are of the
  training (the span of Lightning's actions); the default report lists every action with
  its source; the stand-in PyTorchProfiler's "[pl][profile]X" record_function scopes fold
  into the action X.
- With real Lightning, where importable (the GPU machine; make gpu-check): a small fit
  under profrun with the default profiler gives the actions Lightning's SimpleProfiler
  records for the same fit, name by name, with the same counts.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, profile, report, report_json
from test_python_counts import python, python_minor  # noqa: F401 (the interpreters fixture)

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


def test_standin_advanced_profiler_keeps_every_action(python, tmp_path):
    """Issue 20 item 8: under Lightning's AdvancedProfiler, which runs cProfile around each
    action (3.8-3.11: in place of our profile function, in the main thread and in a
    worker thread), every action and its count stays whole, nothing is left unpaired, and
    the gaps (until ours is in front of the program's profiler again) are said once: one
    line for the main thread's many, one for each of the worker's two."""
    if python_minor(python) >= 12:
        pytest.skip("3.12+: cProfile cannot nest (Lightning's AdvancedProfiler raises on "
                    "nested actions there by itself)")
    out = tmp_path / "p"
    proc = profile([python, LOOP, "3", "4", "advanced"], out, env=STANDIN)
    made = json.loads(proc.stdout)
    got, rep = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == made
    assert not [w for w in rep.get("warnings", []) if "never ended" in w or "no start" in w]
    text = report(out, "--python").stdout
    gaps = [l for l in text.splitlines() if "replaced by another profiler" in l]
    assert len(gaps) == 3 and len([l for l in gaps if " times (" in l]) == 1, gaps


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


def action_rows(text):
    """The Actions table's rows of a text report: name -> cells (split on 2+ spaces)."""
    lines = text.splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith("Actions (")][0]
    rows = {}
    for l in lines[start + 2:]:
        if not l.startswith("  ") or l.startswith("  ("):
            break
        cells = re.split(r"\s{2,}", l.strip())
        rows[cells[0]] = cells
    return lines[start], rows


def test_standin_default_report_and_table(tmp_path):
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", LOOP], out, env=STANDIN)
    made = json.loads(proc.stdout)
    text = report(out).stdout
    title, rows = action_rows(text)
    # The title counts the rows per source (it does not list their names) and says what
    # the percentages are of.
    assert title.startswith("Actions (10 Lightning actions; times in seconds, % of the "
                            "training: the ")
    assert title.endswith(" s from the first Lightning action's start to the last one's end)")
    assert rows["run_training_epoch"][2] == "3"  # Mean duration, Num calls, ...
    # Every action is listed in the default report, each with its source.
    assert set(rows) == set(made) | {"Total"}
    assert all(r[-1] == "Lightning" for n, r in rows.items() if n != "Total")
    assert rows["Total"][2] == str(sum(made.values()))
    table = report(out, "--actions").stdout
    assert action_rows(table)[1] == rows
    # --limit hides rows, and says how many and how to see them.
    limited = report(out, "--limit", "3").stdout
    assert len(action_rows(limited)[1]) == 4
    assert ("(7 more not shown; profreport --actions lists every action; --limit N shows N "
            "here)") in limited
    csv_text = report(out, "--format", "csv").stdout
    block = csv_text[csv_text.index("# actions\n"):].split("\n\n")[0].splitlines()
    assert block[1].endswith(",source")
    assert {l.rsplit(",", 1)[1] for l in block[2:]} == {"lightning"}


def test_standin_shares_are_of_the_training(tmp_path):
    """As Lightning's profilers, an action's share is of the training (the span from the
    first Lightning action to the last), not of the process's wall time, which also holds
    the interpreter's start and the imports."""
    out = tmp_path / "p"
    profile(["/usr/bin/python3", LOOP, "3", "4"], out, env=STANDIN)
    got, rep = lightning_actions(out)
    base = rep["actions_percent_of"]
    assert base["base"] == "lightning_span"
    span = base["ns"] / 1e9
    wall = base["wall_ns"] / 1e9
    epochs = got["run_training_epoch"]["total_s"]
    assert epochs + got["[Callback]ModelCheckpoint.on_fit_start"]["total_s"] <= span + 1e-6
    assert span < wall
    for a in got.values():
        assert abs(a["percent"] - 100 * a["total_s"] / span) < 1e-6 * max(1, a["percent"])
    # The epochs are most of the training (the rest: the worker thread's action, the hooks)
    assert got["run_training_epoch"]["percent"] > 50


def main_steps(out, *args):
    (st,) = [p["steps"] for p in report_json(out, *args)["processes"] if p["steps"]]
    return st


def test_standin_steps_are_lightning_batches(tmp_path):
    """Without an optimizer scope (no torch here), a training step runs from the end of one
    of Lightning's run_training_batch actions to the next, the first from its batch fetch;
    Lightning's fetch, training_step, backward and optimizer_step are the step's parts.
    --step names another action."""
    out = tmp_path / "p"
    profile(["/usr/bin/python3", LOOP, "3", "4"], out, env=STANDIN)
    st = main_steps(out)
    assert st["source"] == "Lightning's batches (ends of run_training_batch)"
    assert st["count"] == 12 and [s["number"] for s in st["steps"]] == list(range(1, 13))
    got, _ = lightning_actions(out)
    for s in st["steps"]:
        parts = s["parts_ns"]
        assert sum(parts.values()) == s["ns"], s
        assert min(parts[k] for k in ("data loading", "forward", "backward", "optimizer")) > 0, s
    # the loop's work(2000) fetch, work(5000) step, work(8000) backward (over all the steps:
    # one step can be slowed by the machine's load)
    total = {k: sum(s["parts_ns"][k] for s in st["steps"]) for k in st["steps"][0]["parts_ns"]}
    assert total["data loading"] < total["forward"] < total["backward"], total
    # the steps hold the batches: together at least their time
    assert sum(s["ns"] for s in st["steps"]) >= got["run_training_batch"]["total_s"] * 1e9
    epochs = main_steps(out, "--step", "run_training_epoch")
    assert epochs["count"] == 3 and epochs["step_name"] == "run_training_epoch"
    assert epochs["source"] == "each call of the --step name"


def test_standin_pytorch_profiler_scopes_fold_into_actions(tmp_path):
    """Lightning's PyTorchProfiler opens record_function("[pl][profile]X") around each
    action X: one row per action, the Total counts each call once, the title stays short."""
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", LOOP, "3", "4", "pytorch"], out, env=STANDIN)
    made = json.loads(proc.stdout)
    got, rep = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == made
    assert all(v["folded_scope"] for v in got.values())
    assert [a["name"] for a in rep["actions"] if a["source"] != "lightning"] == []
    # the scopes were recorded: the op table of the whole process holds them with the
    # actions' counts
    whole = report_json(out, "--phase", "all")
    scopes = {o["name"][len("[pl][profile]"):]: o["calls"] for o in whole["ops"]
              if o["name"].startswith("[pl][profile]")}
    assert scopes == made
    assert rep["actions_percent_of"]["folded_scopes"] == len(made)
    text = report(out, "--actions").stdout
    title, rows = action_rows(text)
    assert title.startswith("Actions (10 Lightning actions; ") and len(title) < 200
    assert rows["Total"][2] == str(sum(made.values()))
    assert ('(10 record_function scopes "[pl][profile]X" of Lightning\'s PyTorchProfiler '
            'folded into the Lightning action X: the same calls)') in text


def test_standin_pytorch_profiler_scope_with_other_calls_stays_apart(tmp_path):
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", LOOP, "3", "4", "pytorch_stray"], out, env=STANDIN)
    made = json.loads(proc.stdout)
    got, rep = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == made
    stray = [a for a in rep["actions"] if a["source"] == "record_function"]
    assert [(a["name"], a["calls"]) for a in stray] == [("[pl][profile]run_training_epoch", 4)]
    assert "folded_scope" not in got["run_training_epoch"]
    text = report(out, "--actions").stdout
    title, rows = action_rows(text)
    assert title.startswith("Actions (10 Lightning actions, 1 record_function scope; ")
    assert rows["[pl][profile]run_training_epoch"][-1] == "scope"
    assert rows["Total"][2] == str(sum(made.values()) + 4)
    assert ('(1 "[pl][profile]X" scope not folded into the Lightning action X: the calls '
            "differ, as [pl][profile]run_training_epoch's 4 against 3)") in text


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
    # SimpleProfiler's counts and share of run_training_epoch, on a profiled run
    ref = profile(["/usr/bin/python3", FIT, "simple"], tmp_path / "s", timeout=600)
    want = json.loads(ref.stdout.strip().splitlines()[-1])
    theirs = want.pop("simple_epoch_percent")
    got, rep = lightning_actions(tmp_path / "s")
    assert {k: v["calls"] for k, v in got.items()} == want
    # shares of the training: ours of the span of Lightning's actions, SimpleProfiler's of
    # the time since it was made (more), on the same run (run_training_epoch: 94.7 % there
    # on a review's fit, 33.7 % of the process's wall time before)
    assert rep["actions_percent_of"]["base"] == "lightning_span"
    assert got["run_training_epoch"]["percent"] >= theirs * 0.98, (got["run_training_epoch"], theirs)
    # the default profiler (PassThroughProfiler): the same actions
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", FIT, "none"], out, timeout=600)
    assert proc.returncode == 0
    got, rep = lightning_actions(out)
    assert {k: v["calls"] for k, v in got.items()} == want


@pytest.mark.skipif(not HAVE_LIGHTNING, reason="Lightning is not installed (no PyPI on CI "
                    "machines); make gpu-check runs this on the GPU machine")
def test_real_lightning_pytorch_profiler_scopes_fold(tmp_path):
    out = tmp_path / "p"
    proc = profile(["/usr/bin/python3", FIT, "pytorch"], out, timeout=600)
    assert proc.returncode == 0
    got, rep = lightning_actions(out)
    pl = {a["name"][len("[pl][profile]"):]: a["calls"] for a in rep["actions"]
          if a["source"] == "record_function" and a["name"].startswith("[pl][profile]")}
    # a scope left apart is one whose calls differ from its action's, and the report says so
    assert all(got.get(name, {}).get("calls") != calls for name, calls in pl.items())
    assert rep["actions_percent_of"]["unfolded_scopes"] == len([n for n in pl if n in got])
    assert rep["actions_percent_of"]["folded_scopes"] > 0
