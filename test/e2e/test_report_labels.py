"""Honest labels (issue 19, item 6): API tables named by library (MPI calls were listed under
"CUDA API summary"), no rank -1 in the Processes table, the two memories named (PyTorch's
own allocators against the CUDA runtime's cudaMalloc), the flame graph's widths called wall
time."""
import os

import pytest

from conftest import report, TRACES, make_traces



@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def test_api_tables_are_named_by_library():
    out = report(os.path.join(TRACES, "gpu", "main.trace")).stdout
    assert "CUDA API summary" not in out
    assert "CUDA runtime API summary (1 process, CUDA runtime time" in out
    runtime = out.split("CUDA runtime API summary")[1].split("\n\n")[0]
    assert "cudaMemcpy" in runtime and "cublasSgemm_v2" not in runtime
    cublas = out.split("cuBLAS API summary")[1].split("\n\n")[0]
    assert "cublasSgemm_v2" in cublas and "cudaMemcpy" not in cublas


def test_html_api_table_names_the_library(tmp_path):
    page = tmp_path / "r.html"
    report(os.path.join(TRACES, "gpu", "main.trace"), "--html", str(page))
    text = page.read_text()
    assert "API calls (CUDA runtime, cuBLAS, cuDNN, NCCL, MPI ...)" in text
    assert '<td class="name">cuBLAS</td>' in text
    assert '<td class="name">CUDA runtime</td>' in text


def test_processes_table_has_no_rank_minus_one(tmp_path):
    trace = os.path.join(TRACES, "py", "main.trace")  # a process without a rank
    page = tmp_path / "r.html"
    report(trace, "--html", str(page))
    text = page.read_text()
    procs = text.split('id="t-processes"')[1].split("</table>")[0]
    assert '<td class="n" data-v="-1">-</td>' in procs
    assert ">-1<" not in procs
    out = report(trace).stdout.split("\nProcesses\n")[1]
    header, row = out.splitlines()[:2]
    rank = row[header.index("Rank"):header.index("Rank") + 4].strip()
    assert rank == "-", out


def test_the_two_memories_are_named():
    out = report(os.path.join(TRACES, "torchmem", "mem.trace"), "--memory").stdout
    assert out.startswith("PyTorch memory (tensor bytes live, per process and device, as "
                          "torch's own allocators report them:\nc10's CPU allocator, the CUDA "
                          "caching allocator; not the CUDA runtime's cudaMalloc)")
    assert "allocated 11.47 Kb" in out
    assert ("CUDA runtime memory (cudaMalloc, cudaMallocHost, cudaMallocManaged calls; peak = "
            "most\nbytes live at once in one process): not PyTorch's tensor memory") in out
    assert "(no CUDA runtime allocations)" in out and "(no allocations)" not in out


def test_flame_graph_says_wall_time(tmp_path):
    svg = tmp_path / "f.svg"
    report(os.path.join(TRACES, "py", "main.trace"), "--flamegraph", str(svg))
    assert "us of wall time" in svg.read_text()
    assert "Python widths are wall time" in report([], "--help").stdout
