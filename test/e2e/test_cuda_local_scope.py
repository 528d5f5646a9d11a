"""A library that loads libcudart in a local scope (dlopen RTLD_LOCAL, as CPython loads an
extension) still has its calls seen: test/fixtures/cuda/local_scope_main.c dlopen's
local_scope_plugin.c, whose calls are fixed: 5 cudaMalloc/cudaFree pairs of 4, 8, 12, 16 and
20 KiB (each freed before the next), 3 cudaMemcpy of 4 KiB (2 HtoD, 1 DtoH)."""
import os
import subprocess

import pytest

from conftest import api_row, build_path, needs_cuda, profile, report_json

pytestmark = needs_cuda

MAIN = build_path("test", "fixtures", "local_scope_main")
PLUGIN = build_path("test", "fixtures", "liblocal_scope_plugin.so")
DOUBLES = build_path("test", "doubles")
PAIRS = 5
CHUNK = 4096
EXPECTED_CALLS = {"cudaMalloc": PAIRS, "cudaFree": PAIRS, "cudaMemcpy": 3}


def runtime_env(double):
    parts = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
             if p and os.path.abspath(p) != DOUBLES]
    if double:
        parts.insert(0, DOUBLES)
    return {"LD_LIBRARY_PATH": ":".join(parts)}


def run_both(double, outdir):
    if not os.path.exists(MAIN) or not os.path.exists(PLUGIN):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures` (%s)" % MAIN)
    env = runtime_env(double)
    full = dict(os.environ)
    full.update(env)
    plain = subprocess.run([MAIN, PLUGIN], env=full, capture_output=True, text=True, timeout=60)
    profiled = profile([MAIN, PLUGIN], outdir, env=env)
    return plain, profiled, report_json(outdir)


def check_calls(rep, errors):
    got = {row["name"]: (row["calls"], row["errors"]) for row in rep["api"]}
    want = {name: (calls, calls if errors else 0) for name, calls in EXPECTED_CALLS.items()}
    assert got == want


def test_local_scope_real_runtime(tmp_path):
    plain, profiled, rep = run_both(False, tmp_path)
    assert plain.stdout == "local_scope: failed_calls=13 roundtrip=different\n"
    assert (profiled.returncode, profiled.stdout) == (plain.returncode, plain.stdout)
    check_calls(rep, errors=True)


def test_local_scope_double(tmp_path):
    plain, profiled, rep = run_both(True, tmp_path)
    assert plain.stdout == "local_scope: failed_calls=0 roundtrip=same\n"
    assert (profiled.returncode, profiled.stdout) == (plain.returncode, plain.stdout)
    check_calls(rep, errors=False)
    total = sum(CHUNK * (i + 1) for i in range(PAIRS))
    device = rep["memory"]["device"]
    assert {k: device[k] for k in ("alloc_count", "alloc_bytes", "free_count", "free_bytes",
                                   "peak_bytes")} == {
        "alloc_count": PAIRS, "alloc_bytes": total, "free_count": PAIRS, "free_bytes": total,
        "peak_bytes": CHUNK * PAIRS}
    copies = {row["direction"]: (row["calls"], row["bytes"]) for row in rep["copies"]
              if row["calls"]}
    assert copies == {"HtoD": (2, 2 * CHUNK), "DtoH": (1, CHUNK)}
    assert api_row(rep, "cudaMemcpy")["errors"] == 0
