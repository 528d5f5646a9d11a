"""cuBLAS and cuBLASLt wrappers. test/fixtures/libs/cublas_calls.c makes a fixed set of calls
with no handle (they fail with or without a GPU) against the real libcublas.so.13 and
libcublasLt.so.13; cublas_nesting.c runs gemms through a test double of libcublas.so.13
that calls the real cublasLtMatmul once per gemm, as cuBLAS does on a GPU. Every expected
number is derived from the fixtures' sources."""
import os
import re
import subprocess

import pytest

from conftest import build_path, needs_cuda, profile, report, report_json, trace_files

pytestmark = needs_cuda

FIXTURES = build_path("test", "fixtures")
CALLS = os.path.join(FIXTURES, "cublas_calls")
NESTING = os.path.join(FIXTURES, "cublas_nesting")
DOUBLE_DIR = os.path.join(FIXTURES, "libs_double")
CUBLAS_NOT_INITIALIZED = 1

# cudaDataType / cublasComputeType_t / cublasGemmAlgo_t values from library_types.h, cublas_api.h
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP = -1, 99
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1

CALL_RE = re.compile(r"^\d+ API_CALL api=(\d+) \((\w+)\) result=(-?\d+) start=(\d+) end=(\d+) "
                     r"dur=\d+(.*) size=\d+$")


def dump_calls(outdir):
    """API_CALL records of every trace in outdir, in file order, as dicts: name, result,
    start, end, args (name -> int; dump prints numbers in hex or decimal)."""
    calls = []
    for path in trace_files(outdir):
        for line in report(path, "dump").stdout.splitlines():
            m = CALL_RE.match(line)
            if not m:
                continue
            args = {}
            for pair in m.group(6).split():
                key, _, value = pair.partition("=")
                args[key] = int(value, 0)
            calls.append({"name": m.group(2), "result": int(m.group(3)),
                          "start": int(m.group(4)), "end": int(m.group(5)), "args": args})
    return calls


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def require(*paths):
    for p in paths:
        if not os.path.exists(p):
            pytest.fail("library fixtures not built: run `make libs-fixtures` (%s)" % p)


def env_without_double():
    parts = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
             if p and os.path.abspath(p) != DOUBLE_DIR]
    return {"LD_LIBRARY_PATH": ":".join(parts)}


def run_calls(outdir):
    require(CALLS)
    env = env_without_double()
    full = dict(os.environ, **env)
    plain = subprocess.run([CALLS], env=full, capture_output=True, text=True, timeout=120)
    profiled = profile([CALLS], outdir, env=env)
    assert (profiled.returncode, profiled.stdout) == (plain.returncode, plain.stdout)
    m = re.match(r"cublas_calls: create=(ok|failed) failed=(\d+)\n$", plain.stdout)
    assert m, plain.stdout
    return m.group(1) == "ok", int(m.group(2))


def test_cublas_calls_counted(tmp_path):
    created, failed = run_calls(tmp_path)
    # 19 handle-less cuBLAS calls (cublasDestroy_v2(NULL) included) + 2 cublasLtMatmul fail.
    assert failed == 21
    want = {
        "cublasCreate_v2": (1, 0 if created else 1),
        "cublasSgemm_v2": (3, 3), "cublasDgemm_v2": (2, 2), "cublasHgemm": (1, 1),
        "cublasGemmEx": (4, 4), "cublasSgemmStridedBatched": (1, 1),
        "cublasGemmStridedBatchedEx": (2, 2), "cublasSgemmBatched": (1, 1),
        "cublasGemmBatchedEx": (1, 1), "cublasSgemm_v2_64": (1, 1),
        "cublasSetStream_v2": (1, 1), "cublasSetMathMode": (1, 1), "cublasDestroy_v2": (1, 1),
        "cublasLtMatmul": (2, 2),
    }
    rep = report_json(tmp_path)
    got = {row["name"]: (row["calls"], row["errors"]) for row in rep["api"]}
    assert got == want


def test_cublas_arguments(tmp_path):
    run_calls(tmp_path)
    calls = dump_calls(tmp_path)
    for c in calls:
        assert c["args"]["nested"] == 0, c  # nothing here runs inside another library call
    gemm_ex = [c for c in calls if c["name"] == "cublasGemmEx"]
    assert len(gemm_ex) == 4
    for c in gemm_ex:
        a = c["args"]
        assert c["result"] == CUBLAS_NOT_INITIALIZED
        assert (a["transa"], a["transb"], a["m"], a["n"], a["k"], a["batch"]) == (
            CUBLAS_OP_T, CUBLAS_OP_N, 128, 256, 512, 1)
        assert (a["dtype_a"], a["dtype_b"], a["dtype_c"], a["compute_type"]) == (
            CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F)
        assert signed(a["algo"]) == CUBLAS_GEMM_DEFAULT_TENSOR_OP
        assert a["stream"] == 0  # failed call: the handle's stream is not asked
    sgemm = [c["args"] for c in calls if c["name"] == "cublasSgemm_v2"]
    assert [(a["m"], a["n"], a["k"], a["transb"], a["dtype_a"], signed(a["algo"]))
            for a in sgemm] == [(64, 32, 16, CUBLAS_OP_T, CUDA_R_32F, CUBLAS_GEMM_DEFAULT)] * 3
    strided = [c["args"] for c in calls if c["name"] == "cublasGemmStridedBatchedEx"]
    assert [(a["m"], a["batch"], a["dtype_a"], a["dtype_c"]) for a in strided] == [
        (16, 7, CUDA_R_16F, CUDA_R_16F)] * 2
    (batched,) = [c["args"] for c in calls if c["name"] == "cublasSgemmStridedBatched"]
    assert batched["batch"] == 10
    (big,) = [c["args"] for c in calls if c["name"] == "cublasSgemm_v2_64"]
    assert (big["m"], big["n"], big["k"]) == (5_000_000_000, 2, 3)
    (hgemm,) = [c["args"] for c in calls if c["name"] == "cublasHgemm"]
    assert (hgemm["dtype_a"], hgemm["dtype_c"]) == (CUDA_R_16F, CUDA_R_16F)
    # cublasLtMatmul: the shape is read from the descriptors (A 96x48 transposed, D 48x40).
    lt = [c["args"] for c in calls if c["name"] == "cublasLtMatmul"]
    assert len(lt) == 2
    for a in lt:
        assert (a["transa"], a["transb"], a["m"], a["n"], a["k"], a["batch"]) == (
            CUBLAS_OP_T, CUBLAS_OP_N, 48, 40, 96, 1)
        assert (a["dtype_a"], a["dtype_b"], a["dtype_c"], a["compute_type"]) == (
            CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F)
        assert signed(a["algo"]) == -1  # no algo given: cuBLASLt chooses
        assert a["workspace_bytes"] == 4096


def test_cublas_off(tmp_path):
    """PROF_CUBLAS=0: calls pass through, nothing recorded."""
    require(CALLS)
    proc = profile([CALLS], tmp_path, env=dict(env_without_double(), PROF_CUBLAS="0"))
    assert "failed=21" in proc.stdout
    # A process with no event at all writes no trace.
    assert not trace_files(tmp_path) or report_json(tmp_path)["api"] == []


def test_cublas_calls_cublaslt_nested(tmp_path):
    """Each gemm of the double calls cublasLtMatmul inside it: recorded with nested=1,
    inside its gemm's span, and the gemms stay top-level (nested=0)."""
    require(NESTING, os.path.join(DOUBLE_DIR, "libcublas.so.13"))
    env = env_without_double()
    env["LD_LIBRARY_PATH"] = ":".join(p for p in [DOUBLE_DIR, env["LD_LIBRARY_PATH"]] if p)
    proc = profile([NESTING], tmp_path, env=env)
    assert proc.stdout == "cublas_nesting: ok=5\n"
    rep = report_json(tmp_path)
    got = {row["name"]: (row["calls"], row["errors"]) for row in rep["api"]}
    assert got == {"cublasGemmEx": (3, 0), "cublasSgemm_v2": (2, 0), "cublasLtMatmul": (5, 5)}
    calls = dump_calls(tmp_path)
    outer = [c for c in calls if c["name"] != "cublasLtMatmul"]
    inner = [c for c in calls if c["name"] == "cublasLtMatmul"]
    assert [c["name"] for c in outer] == ["cublasGemmEx"] * 3 + ["cublasSgemm_v2"] * 2
    assert all(c["args"]["nested"] == 0 for c in outer)
    assert all(c["args"]["nested"] == 1 for c in inner)
    # The double's handle reports stream 0x5150 for a successful gemm.
    assert all(c["args"]["stream"] == 0x5150 for c in outer)
    # One inner call inside each outer span, none outside.
    for o in outer:
        within = [i for i in inner if o["start"] <= i["start"] and i["end"] <= o["end"]]
        assert len(within) == 1, (o, inner)
