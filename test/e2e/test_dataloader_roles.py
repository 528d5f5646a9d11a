"""The training step's parts, with a data pipeline around them (issue 18, item 5).

test/workloads/torch_data_transform.py: a Dataset applies an nn.Module transform
(Normalize) to each of 32 samples, 2 epochs of 4 batches: 8 steps, one model call each
(the loss is a function), 64 transform calls in whichever process loads the data.

- `forward` counts the model's calls only: a _call_impl under DataLoader iteration (or
  anything of torch/utils/data) is a transform, and a worker process has no forward.
- DataLoader workers of a run with no ranks are role `worker` (worker_kind dataloader):
  forked (the child's os.register_at_fork hook sees the Process being started run torch's
  _worker_loop) or spawned (the child unpickles _worker_loop). The default report leaves
  them out and says so; --all-roles puts them back.
"""
import collections
import os
import subprocess

import pytest

from conftest import BUILD, ROOT, profile, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
WORKLOAD = os.path.join(ROOT, "test", "workloads", "torch_data_transform.py")
CACHE = os.path.join(BUILD, "test", "torch-cache")
STEPS, SAMPLES = 8, 64  # steps and transform calls of the whole run
HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")


@pytest.fixture(scope="module", params=["0", "2 fork", "2 spawn"])
def run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("dl" + request.param.replace(" ", "_")) / "prof"
    proc = profile([PYTHON, WORKLOAD] + request.param.split(), out,
                   env={"PROF_TORCH_CACHE": CACHE}, timeout=300)
    assert proc.stdout.startswith("steps %d loss " % STEPS), proc.stdout
    return dict(workers=int(request.param.split()[0]), out=out)


def action_calls(rep, name):
    rows = [a for a in rep["actions"] if a["name"] == name]
    return rows[0]["calls"] if rows else 0


def py_calls(rep, qualname):
    return sum(f["ncalls"] for f in rep["python"] if f["qualname"] == qualname)


def op_calls(rep):
    return {o["name"]: o["calls"] for o in rep["ops"]}


def main_trace(out):
    """The trace of the training script: the process whose parent left no trace."""
    metas = report_json(out, "--all-roles")["processes"]
    pids = {p["pid"] for p in metas}
    (main,) = [p for p in metas if p["ppid"] not in pids]
    return main


def test_forward_is_the_models_calls_only(run):
    for flags in ([], ["--all-roles"]):
        rep = report_json(run["out"], "--actions", "--python", *flags)
        assert action_calls(rep, "forward") == STEPS, flags
        assert action_calls(rep, "backward") == STEPS
        assert action_calls(rep, "optimizer_step") == STEPS
        assert action_calls(rep, "dataloader_next") == STEPS + 2  # each epoch's last ends it
    rep = report_json(run["out"], "--python", "--all-roles", "--phase", "all")  # whole run
    assert py_calls(rep, "Normalize.forward") == SAMPLES  # the transform did run


def test_dataloader_workers_are_workers(run):
    procs = report_json(run["out"], "--all-roles")["processes"]
    main = main_trace(run["out"])
    assert main["meta"]["role"] == "process"
    loaders = [p for p in procs if p["meta"].get("worker_kind") == "dataloader"]
    assert len(loaders) == 2 * run["workers"]  # the workers of 2 epochs
    for p in loaders:
        assert p["meta"]["role"] == "worker" and p["ppid"] == main["pid"]
    # whatever else multiprocessing started (spawn's resource tracker) is no worker
    assert all(p["meta"]["role"] == "process" for p in procs if p not in loaders)


def test_default_tables_are_the_main_process(run):
    out, workers = run["out"], run["workers"]
    main = main_trace(out)
    text = report(out).stdout
    whole = ("--phase", "all")  # the counts of the whole run (the default: the steady steps)
    default = report_json(out, "--ops", "--python", *whole)
    alone = report_json(main["file"], "--ops", "--python", *whole)
    everything = report_json(out, "--ops", "--python", "--all-roles", *whole)
    if not workers:
        assert "Left out" not in text and default["job"]["left_out"] is None
        assert op_calls(default) == op_calls(alone) == op_calls(everything)
        assert py_calls(default, "Normalize.forward") == SAMPLES
        return
    n = 2 * workers
    assert "Left out: %d DataLoader worker processes; --all-roles includes them" % n in text
    assert default["job"]["left_out"] == "%d DataLoader worker processes" % n
    assert main["pid"] in {p["pid"] for p in default["processes"]}
    assert not [p for p in default["processes"] if p["meta"].get("worker_kind")]
    assert op_calls(default) == op_calls(alone)
    assert py_calls(default, "Normalize.forward") == 0
    # the workers' ops: the transform (sub, div per sample) and the collation
    ops = op_calls(everything)
    assert ops["aten::sub"] == ops["aten::div"] == SAMPLES
    assert "aten::sub" not in op_calls(default)
    assert ops["aten::stack"] == op_calls(default).get("aten::stack", 0) + 2 * STEPS
    assert py_calls(everything, "Normalize.forward") == SAMPLES


def test_memory_section_shows_the_largest_peaks(run):
    """The default report's memory section shows at most 4 process memories (the largest
    peaks), says how many others there are, and --memory shows each."""
    procs = [p for p in report_json(run["out"], "--all-roles")["processes"]
             if p["torch_memory"]]
    text = report(run["out"], "--all-roles").stdout
    start = text.index("PyTorch memory")
    section = text[start:text.index("\n\n", start)]
    lines = [l for l in section.splitlines() if l.startswith("  pid ")]
    assert len(lines) == min(4, len(procs)), section
    if len(procs) > 4:
        assert "(4 of %d process memories shown: the largest peaks" % len(procs) in section
        peaks = sorted((p["torch_memory"]["part"] or p["torch_memory"])["peak_bytes"]
                       for p in procs)
        shown = [int(l.split()[1]) for l in lines]
        left = [p for p in procs if p["pid"] not in shown]
        assert max((p["torch_memory"]["part"] or p["torch_memory"])["peak_bytes"]
                   for p in left) <= peaks[-4]
    else:
        assert "process memories shown" not in section
    every = report(run["out"], "--all-roles", "--memory").stdout
    assert sum(l.startswith("  pid ") for l in every.splitlines()) == len(procs)
