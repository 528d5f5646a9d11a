"""The CUDA API and GPU kernel tables of one part of a run (report/model/model_gpu_window.c):
cuda_steps (test/fixtures/cuda/cuda_steps.cu) on the device doubles (fake libcudart and
CUPTI) launches fill 5 times with a grid of 4 in its startup, twice with a grid of 16 in each
of its N train_step NVTX ranges (with one cudaMemset and one cudaDeviceSynchronize), and once
with a grid of 4 after them. Every expectation comes from the fixture's source."""
import os
import re
import shutil

import pytest

from conftest import api_row, build_path, needs_cuda, profile, report, report_json

pytestmark = needs_cuda

APP = build_path("test", "fixtures", "cuda_steps")
DOUBLES = build_path("test", "doubles")
N, STARTUP, STEP = 6, 5, 2
LAUNCH = "__cudaLaunchKernel"  # nvcc 13's launch stub calls it


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    if not os.path.exists(APP) or not os.path.exists(os.path.join(DOUBLES, "libcudart.so.13")):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures` (%s)" % APP)
    out = tmp_path_factory.mktemp("cuda_steps")
    proc = profile([APP, str(N)], out, env={"LD_LIBRARY_PATH": DOUBLES})
    assert proc.stdout == "cuda_steps: %d steps, 0 failed calls\n" % N
    return out


def calls(rep, name):
    row = api_row(rep, name)
    return row["calls"] if row else 0


def kernels(rep):
    """{grid: calls} of the fill kernel."""
    rows = [k for k in rep["gpu_kernels"] if k["name"].startswith("fill(")]
    assert len(rows) <= 1
    return {rows[0]["grid"]: rows[0]["calls"]} if rows else {}


@pytest.mark.parametrize("phase, launches, syncs, memsets, grid", [
    ("steps", N * STEP, N, N, "16,1,1"),
    ("startup", STARTUP, 1, 0, "4,1,1"),
])
def test_tables_of_a_part(run_dir, phase, launches, syncs, memsets, grid):
    rep = report_json(run_dir, "--step", "train_step", "--phase", phase)
    assert (calls(rep, LAUNCH), calls(rep, "cudaDeviceSynchronize"),
            calls(rep, "cudaMemset")) == (launches, syncs, memsets)
    assert kernels(rep) == {grid: launches}
    assert calls(rep, "cudaMalloc") == (1 if phase == "startup" else 0)
    assert calls(rep, "cudaFree") == 0
    assert rep["gpu_cover"]["part"] == {
        "steps": "the training steps, warm-up included",
        "startup": "the startup, before the first training step"}[phase]
    if phase == "steps":
        assert rep["gpu_cover"]["note"].startswith("%d steps, " % N)
    # the wrapped launches by kernel stay the whole process's
    assert sum(k["launches"] for k in rep["kernels"]) == STARTUP + N * STEP + 1


def test_whole_process(run_dir):
    rep = report_json(run_dir, "--step", "train_step", "--phase", "all")
    assert calls(rep, LAUNCH) == STARTUP + N * STEP + 1
    assert calls(rep, "cudaDeviceSynchronize") == N + 2
    assert (calls(rep, "cudaMalloc"), calls(rep, "cudaFree")) == (1, 1)
    fill = [k for k in rep["gpu_kernels"] if k["name"].startswith("fill(")][0]
    assert fill["calls"] == STARTUP + N * STEP + 1
    assert fill["grid"] == "16,1,1"  # the most launched
    assert rep["gpu_cover"] == {"part": "the whole process", "note": "", "ns": 0}


def test_default_is_the_steady_steps(run_dir, tmp_path):
    rep = report_json(run_dir, "--step", "train_step")
    steady = calls(rep, "cudaMemset")  # one per steady step; a warm-up step is left out
    assert N - N // 4 <= steady <= N
    assert calls(rep, LAUNCH) == STEP * steady
    assert kernels(rep) == {"16,1,1": STEP * steady}
    assert rep["gpu_cover"]["part"] == "the steady training steps"
    out = report(run_dir, "--step", "train_step").stdout
    assert "GPU kernels in the steady training steps (CUPTI: %d kernels" % (STEP * steady) in out
    assert "CUDA runtime API summary in the steady training steps" in out
    assert "Kernel launches (the whole process)" in out
    assert ("the CUDA API and kernel tables below cover the steady training steps, the other "
            "tables the whole process") in out
    # a report from the summaries says the same
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    report(copy, "--summarize")
    assert list(copy.glob("*.summary"))
    from_summaries = report_json(copy, "--step", "train_step")
    for key in ("api", "gpu_kernels", "gpu_cover"):
        assert from_summaries[key] == rep[key], key


def test_whole_process_findings_give_way_to_the_steps(run_dir):
    # The device idles through the startup (82 % of the process here): said of the whole
    # process with --phase all; the default describes the steps (busy 96 % of them).
    kinds = [f["kind"] for f in report_json(run_dir, "--step", "train_step")["findings"]]
    assert "gpu_idle" not in kinds and "sync" not in kinds
    assert "step_sync" in kinds  # one cudaDeviceSynchronize per step: most of its time
    every = report_json(run_dir, "--step", "train_step", "--phase", "all")["findings"]
    assert "gpu_idle" in [f["kind"] for f in every]


def test_an_idle_gpu_says_what_the_step_does_instead(tmp_path):
    """Steps whose host sleeps 20 ms after their kernels: the GPU idles, and the finding says
    where the step's time goes instead and what shortens it (an H200 run's said only how
    busy the GPU was)."""
    out = tmp_path / "out"
    proc = profile([APP, "6", "20000"], out, env={"LD_LIBRARY_PATH": DOUBLES})
    assert proc.stdout == "cuda_steps: 6 steps, 0 failed calls\n"
    found = {f["kind"]: f for f in report_json(out, "--step", "train_step")["findings"]}
    idle = found["step_gpu_idle"]
    assert idle["value"] > 0.9, idle
    assert re.search(r"; the step's largest part is other CPU, 2\d\.\d\d ms per step: the host's "
                     r"work outside the model's phases \(Python, I/O, sleeps\) keeps the GPU "
                     r"waiting$", idle["evidence"]), idle
