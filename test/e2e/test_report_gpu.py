"""profreport's GPU tables on synthetic traces (test/fixtures/traces/gpu_traces.h).

gpu/main.trace: two kernels launched by cudaLaunchKernel, three by a cublasSgemm_v2 span
(driver cuLaunchKernel inside it), two streams overlapping, an HtoD pageable copy, a DtoH
pinned copy, a memset and a kernel no call launched; times in ns. nvtx/main.trace: nested
NVTX push/pop on two threads and a START/END range; U = 1 ms, wall 1 s.
"""
import csv
import io
import json
import os
import re
import subprocess

import pytest

from conftest import PROFREPORT, TRACES, make_traces



@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def t(*parts):
    return os.path.join(TRACES, *parts)


def run(*args):
    return subprocess.run([PROFREPORT] + list(args), capture_output=True, text=True, timeout=60)


def rep_json(*args):
    proc = run("--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def cells(out, first):
    """The cells (split on 2+ spaces) of the text row whose first cell is first."""
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if parts and parts[0] == first:
            return parts
    return None


def test_kernels_table():
    proc = run("--kernels", t("gpu"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "GPU kernels (CUPTI: 6 kernels, GPU time 11.60 us)" in out
    header = [l for l in out.splitlines() if "Launched from" in l][0]
    assert re.split(r"\s{2,}", header.strip()) == [
        "Kernel", "Calls", "GPU total", "Avg", "Min", "Max", "% GPU time", "Grid", "Block",
        "Regs", "Launched from"]
    # the name without its return type and parameters; the table says so (JSON keeps them)
    assert cells(out, "scale<float>") == [
        "scale<float>", "2", "3.00 us", "1.50 us", "1.00 us", "2.00 us",
        "25.9%", "128,1,1", "256,1,1", "32", "Trainer.train_step"]
    assert cells(out, "sgemm_128x64_nn")[1:3] == ["2", "8.00 us"]
    assert cells(out, "sgemm_128x64_nn")[-1] == "Model.matmul"
    assert cells(out, "orphan_kernel")[-1] == "-"
    names = [l.split()[0] for l in out.splitlines()[2:6]]
    assert names == ["sgemm_128x64_nn", "scale<float>", "splitKreduce_kernel", "orphan_kernel"]
    assert "(kernel names without their return type, parameters and the namespaces inside <>, " \
        "cut in the middle past 100 columns; --format json or csv gives them whole)" in out
    assert "1 kernel(s) matched no CUDA call" in out
    assert "unattributed" in proc.stderr
    # Only the kernel table: no API or Python tables.
    assert "API summary" not in out and "Python functions" not in out


def test_kernels_sort_and_limit():
    out = run("--kernels", "--sort", "name", "--limit", "2", t("gpu")).stdout
    rows = [l.split()[0] for l in out.splitlines()[2:4]]
    assert rows == ["orphan_kernel", "sgemm_128x64_nn"]
    assert "(2 more not shown; --limit)" in out
    out = run("--kernels", "--sort", "max", t("gpu")).stdout
    assert out.splitlines()[2].split()[0] == "sgemm_128x64_nn"
    assert run("--kernels", "--sort", "bogus", t("gpu")).returncode == 2


def test_default_report_has_kernel_section_only_with_gpu_records():
    out = run(t("gpu")).stdout
    assert "GPU kernels (CUPTI: 6 kernels" in out and "profreport --gpu" in out
    assert "GPU kernels" not in run(t("run")).stdout


def test_gpu_tables_text():
    proc = run("--gpu", t("gpu"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert cells(out, "7000")[:3] == ["7000", "0", "NVIDIA Test GPU"]
    assert ["HtoD", "pageable", "device", "1", "4.00 KiB", "1.00 us", "4.10"] in \
        [re.split(r"\s{2,}", l.strip()) for l in out.splitlines()]
    assert cells(out, "DtoH") == ["DtoH", "device", "pinned", "1", "2.00 KiB", "500 ns", "4.10"]
    assert cells(out, "memset") == ["memset", "-", "device 0", "1", "1.00 KiB", "200 ns", "5.12"]
    assert cells(out, "cublasSgemm_v2") == ["cublasSgemm_v2", "1", "10.00 us", "8.50 us", "3"]
    assert cells(out, "cuLaunchKernel (CUPTI)") == ["cuLaunchKernel (CUPTI)", "3", "300 ns",
                                                    "100 ns", "100 ns"]
    util = [re.split(r"\s{2,}", l.strip()) for l in out.splitlines()
            if l.strip().startswith("7000  ") and "%" in l]
    assert [u[2] for u in util] == ["all", "7", "13", "14"]
    assert util[0][3:] == ["11.30 us", "100.00 us", "11.3%"]


def test_gpu_json():
    rep = rep_json(t("gpu"))
    kernels = {k["name"]: k for k in rep["gpu_kernels"]}
    assert sum(k["calls"] for k in rep["gpu_kernels"]) == 6
    scale = kernels["void scale<float>(float*, int)"]
    assert {k: scale[k] for k in ("calls", "total_ns", "min_ns", "max_ns", "grid", "block",
                                  "registers")} == {
        "calls": 2, "total_ns": 3000, "min_ns": 1000, "max_ns": 2000, "grid": "128,1,1",
        "block": "256,1,1", "registers": 32}
    assert scale["avg_ns"] == 1500
    assert scale["launched_from"] == [{"python": "Trainer.train_step", "file": "/w/train.py",
                                       "line": 30, "calls": 2, "gpu_ns": 3000}]
    assert kernels["sgemm_128x64_nn"]["launched_from"] == [
        {"python": "Model.matmul", "file": "/w/train.py", "line": 50, "calls": 2, "gpu_ns": 8000}]
    assert kernels["orphan_kernel"]["launched_from"] == []
    assert abs(kernels["sgemm_128x64_nn"]["percent"] - 100 * 8000 / 11600) < 1e-9
    assert rep["gpu_copies"] == [
        {"direction": "HtoD", "src": "pageable", "dst": "device", "calls": 1, "bytes": 4096,
         "total_ns": 1000, "gbps": 4.096},
        {"direction": "DtoH", "src": "device", "dst": "pinned", "calls": 1, "bytes": 2048,
         "total_ns": 500, "gbps": 4.096}]
    assert rep["gpu_sets"] == [{"device": 0, "calls": 1, "bytes": 1024, "total_ns": 200,
                                "gbps": 5.12}]
    util = {u["stream"]: u for u in rep["gpu_utilization"]}
    assert util[None] == {"pid": 7000, "device": 0, "stream": None, "busy_ns": 11300,
                          "wall_ns": 100000, "fraction": 0.113}
    assert {s: util[s]["busy_ns"] for s in (7, 13, 14)} == {7: 4800, 13: 4500, 14: 4000}
    assert rep["gpu_devices"] == [{"pid": 7000, "device": 0, "name": "NVIDIA Test GPU",
                                   "sm_count": 132, "global_memory_bytes": 85899345920,
                                   "core_clock_khz": 1980000, "memory_clock_khz": 2619000,
                                   "compute_capability": "9.0"}]
    assert rep["library_calls"] == [{"name": "cublasSgemm_v2", "calls": 1, "cpu_ns": 10000,
                                     "gpu_ns": 8500, "kernels": 3}]
    assert rep["cupti_api"] == [{"name": "cuLaunchKernel", "domain": "driver", "calls": 3,
                                 "total_ns": 300, "avg_ns": 100.0, "max_ns": 100}]
    assert rep["gpu_unattributed_kernels"] == 1
    assert any("unattributed" in w for w in rep["warnings"])
    py = {r["qualname"]: r for r in rep["python"]}
    assert py["Trainer.train_step"]["gpu_ns"] == 3000
    assert py["Model.matmul"]["gpu_ns"] == 8500
    # The library API is categorized as such in the API table.
    assert [a["category"] for a in rep["api"] if a["name"] == "cublasSgemm_v2"] == ["library"]


def test_json_without_gpu_records_has_empty_gpu_sections():
    rep = rep_json(t("run"))
    for key in ("gpu_kernels", "gpu_copies", "gpu_sets", "gpu_utilization", "gpu_devices",
                "library_calls", "cupti_api", "actions"):
        assert rep[key] == [], key


def test_python_table_gets_gpu_column():
    out = run("--python", t("gpu")).stdout
    header = [l for l in out.splitlines() if "filename:lineno(function)" in l][0]
    assert "GPU time" in header
    row = [l for l in out.splitlines() if "(Model.matmul)" in l][0]
    assert "8.50 us" in row


def test_csv_sections():
    out = run("--format", "csv", t("gpu")).stdout
    sections = {}
    for block in out.strip().split("\n\n"):
        lines = block.split("\n")
        assert lines[0].startswith("# ")
        sections[lines[0][2:]] = list(csv.DictReader(io.StringIO("\n".join(lines[1:]))))
    assert {"gpu_kernels", "gpu_copies", "gpu_sets", "gpu_utilization", "gpu_devices",
            "library_calls", "cupti_api", "actions", "python"} <= set(sections)
    scale = [r for r in sections["gpu_kernels"] if r["name"].startswith("void scale")][0]
    assert (scale["calls"], scale["total_ns"], scale["launched_from"]) == \
        ("2", "3000", "Trainer.train_step")
    assert sections["library_calls"][0]["gpu_ns"] == "8500"
    assert [r["busy_ns"] for r in sections["gpu_utilization"]] == ["11300", "4800", "4500",
                                                                   "4000"]
    assert [r["gpu_ns"] for r in sections["python"]] == ["3000", "8500"]


def test_actions_table():
    proc = run("--actions", t("nvtx"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    header = [l for l in out.splitlines() if l.strip().startswith("Action ")][0]
    assert re.split(r"\s{2,}", header.strip()) == [
        "Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %",
        "GPU time (s)", "Source"]
    assert cells(out, "Total") == ["Total", "-", "7", "1.000000", "100 %", "0.035000"]
    assert cells(out, "epoch") == ["epoch", "0.800000", "1", "0.800000", "80.000", "0.030000",
                                   "NVTX"]
    assert cells(out, "step") == ["step", "0.083333", "3", "0.250000", "25.000", "0.035000",
                                  "NVTX"]
    assert cells(out, "data") == ["data", "0.550000", "1", "0.550000", "55.000", "0.035000",
                                  "NVTX"]
    assert cells(out, "decode") == ["decode", "0.010000", "1", "0.010000", "1.000", "0.000000",
                                    "NVTX"]
    assert cells(out, "never") is None
    assert "mark checkpoint: 1" in out
    assert "never ended" in proc.stderr


def test_actions_json():
    rep = rep_json(t("nvtx"))
    actions = {a["name"]: a for a in rep["actions"]}
    assert [a["name"] for a in rep["actions"]] == ["epoch", "data", "step", "load", "decode"]
    assert actions["step"]["calls"] == 3
    assert abs(actions["step"]["mean_s"] - 0.25 / 3) < 1e-12
    assert actions["step"]["total_s"] == 0.25 and actions["step"]["percent"] == 25.0
    assert actions["data"]["gpu_s"] == 0.035 and actions["epoch"]["gpu_s"] == 0.03
    assert actions["load"]["gpu_s"] == 0.0
    assert rep["nvtx_marks"] == [{"name": "checkpoint", "calls": 1}]


def test_dump_prints_gpu_and_nvtx_records():
    out = run("dump", t("gpu", "main.trace")).stdout
    kernel = [l for l in out.splitlines() if " GPU_KERNEL " in l and "correlation=2 " in l][0]
    assert "start_ns=12000 end_ns=14000 dur=2000" in kernel
    assert 'name=1:"_Z5scaleIfEvPT_i"' in kernel and "grid=128,1,1" in kernel
    assert "registers=32" in kernel and "stream=7" in kernel
    copy = [l for l in out.splitlines() if " GPU_MEMCPY " in l and "correlation=8 " in l][0]
    assert "copy_kind=2 (DtoH)" in copy and "dst_kind=2 (pinned)" in copy
    assert "bytes=2048" in copy
    assert any(" GPU_MEMSET " in l and "bytes=1024" in l for l in out.splitlines())
    api = [l for l in out.splitlines() if " GPU_API " in l and "correlation=4 " in l][0]
    assert "domain=2 (driver) cbid=307" in api and "py_node=2" in api
    assert any(' GPU_API_NAME ' in l and 'name="cuLaunchKernel"' in l for l in out.splitlines())
    assert any(' GPU_DEVICE ' in l and 'sm_count=132' in l for l in out.splitlines())
    out = run("dump", t("nvtx", "main.trace")).stdout
    assert any(" NVTX " in l and "kind=3 (start)" in l and 'name=3:"data"' in l and "id=42" in l
               for l in out.splitlines())
