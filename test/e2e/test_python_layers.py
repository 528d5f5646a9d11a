"""Python across layers: qualified names on every version (built from function objects
before 3.11), and CUDA runtime time beneath the Python function that made the calls."""
import os

import pytest

from conftest import ROOT, build_path, needs_cuda, profile, report_json

PYTHONS = {v: "/root/.pyenv/versions/%s/bin/python3" % v for v in ["3.8.18", "3.10.13", "3.12.1"]}
PYTHONS["debian"] = "/usr/bin/python3"
WORKLOADS = os.path.join(ROOT, "test", "workloads")


def python_or_skip(version):
    path = PYTHONS[version]
    if not os.path.exists(path):
        pytest.skip("no interpreter at %s" % path)
    return path


def rows_by_name(rep, filename):
    return {r["name"]: r for r in rep["python"] if r["file"].endswith(filename)}


@pytest.mark.parametrize("version", sorted(PYTHONS))
def test_qualified_names(tmp_path, version):
    python = python_or_skip(version)
    profile([python, os.path.join(WORKLOADS, "py_names.py")], tmp_path)
    rows = rows_by_name(report_json(tmp_path, "--python"), "py_names.py")
    assert rows["method"]["qualname"] == "Outer.method"
    assert rows["deep"]["qualname"] == "Outer.Inner.deep"
    assert rows["plain"]["qualname"] == "plain"
    assert rows["method"]["module"] == "__main__"


@needs_cuda
@pytest.mark.parametrize("version", ["3.10.13", "3.12.1", "debian"])
def test_cuda_calls_under_the_calling_function(tmp_path, version):
    python = python_or_skip(version)
    lib = build_path("test", "fixtures", "libcuda_calls.so")
    profile([python, os.path.join(WORKLOADS, "py_cuda_calls.py"), lib], tmp_path,
            env={"LD_LIBRARY_PATH": build_path("test", "doubles")})
    rep = report_json(tmp_path, "--python")
    rows = rows_by_name(rep, "py_cuda_calls.py")
    # a ctypes foreign function is no builtin: the Python function is the innermost frame
    assert rows["allocate"]["api_calls"] == 6
    assert rows["query"]["api_calls"] == 5
    assert rows["main"]["api_calls"] == 11, "beneath main: counted cumulatively, like cumtime"
    assert rows["allocate"]["api_ns"] > 0
    api = {a["name"]: a["calls"] for a in rep["api"]}
    assert api["cudaMalloc"] == 3 and api["cudaFree"] == 3 and api["cudaGetDevice"] == 5
