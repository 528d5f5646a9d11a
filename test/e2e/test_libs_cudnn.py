"""cuDNN wrappers. test/fixtures/libs/cudnn_calls.c makes a fixed set of calls with no handle
(they fail with or without a GPU) against the real libcudnn.so.9; libs_local_main.c loads a
plugin that links cuBLAS and cuDNN in a local scope (dlopen RTLD_LOCAL, as CPython loads
an extension). Every expected number is derived from the fixtures' sources."""
import os
import re
import subprocess

from conftest import build_path, needs_cuda, profile, report_json
from test_libs_cublas import dump_calls, env_without_double, require

pytestmark = needs_cuda

FIXTURES = build_path("test", "fixtures")
CALLS = os.path.join(FIXTURES, "cudnn_calls")
LOCAL_MAIN = os.path.join(FIXTURES, "libs_local_main")
LOCAL_PLUGIN = os.path.join(FIXTURES, "liblibs_local_plugin.so")

# cudnn_ops.h / cudnn_cnn.h enum values the fixture passes
CONV_FWD_IMPLICIT_PRECOMP_GEMM, CONV_FWD_GEMM = 1, 2
CONV_BWD_DATA_ALGO_1, CONV_BWD_FILTER_ALGO_3 = 1, 3
SOFTMAX_LOG, SOFTMAX_MODE_CHANNEL = 2, 1
BATCHNORM_SPATIAL = 1


def run_plain_and_profiled(cmd, outdir, env=None):
    env = dict(env_without_double(), **(env or {}))
    plain = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True,
                           timeout=120)
    profiled = profile(cmd, outdir, env=env)
    assert (profiled.returncode, profiled.stdout) == (plain.returncode, plain.stdout)
    return plain.stdout


def test_cudnn_calls_counted(tmp_path):
    require(CALLS)
    out = run_plain_and_profiled([CALLS], tmp_path)
    m = re.match(r"cudnn_calls: create=(ok|failed) failed=(\d+)\n$", out)
    assert m, out
    # 18 handle-less calls; cudnnDestroy(NULL) is the one that succeeds.
    assert int(m.group(2)) == 17
    want = {
        "cudnnCreate": (1, 0 if m.group(1) == "ok" else 1),
        "cudnnSetStream": (1, 1),
        "cudnnConvolutionForward": (3, 3), "cudnnConvolutionBackwardData": (2, 2),
        "cudnnConvolutionBackwardFilter": (1, 1),
        "cudnnBatchNormalizationForwardTraining": (1, 1),
        "cudnnBatchNormalizationForwardInference": (1, 1),
        "cudnnBatchNormalizationBackward": (1, 1),
        "cudnnActivationForward": (1, 1), "cudnnSoftmaxForward": (1, 1),
        "cudnnPoolingForward": (1, 1), "cudnnAddTensor": (1, 1), "cudnnOpTensor": (1, 1),
        "cudnnBackendExecute": (2, 2), "cudnnDestroy": (1, 0),
    }
    rep = report_json(tmp_path)
    got = {row["name"]: (row["calls"], row["errors"]) for row in rep["api"]}
    assert got == want

    calls = dump_calls(tmp_path)
    assert all(c["args"]["nested"] == 0 for c in calls)
    args = {}
    for c in calls:
        args.setdefault(c["name"], []).append(c["args"])
    assert [(a["algo"], a["workspace_bytes"]) for a in args["cudnnConvolutionForward"]] == [
        (CONV_FWD_IMPLICIT_PRECOMP_GEMM, 1024)] * 3
    assert [(a["algo"], a["workspace_bytes"]) for a in args["cudnnConvolutionBackwardData"]] == [
        (CONV_BWD_DATA_ALGO_1, 2048)] * 2
    assert [a["algo"] for a in args["cudnnConvolutionBackwardFilter"]] == [
        CONV_BWD_FILTER_ALGO_3]
    assert [(a["algo"], a["softmax_mode"]) for a in args["cudnnSoftmaxForward"]] == [
        (SOFTMAX_LOG, SOFTMAX_MODE_CHANNEL)]
    assert [a["norm_mode"] for a in args["cudnnBatchNormalizationForwardTraining"]] == [
        BATCHNORM_SPATIAL]
    assert [(a["plan"], a["variant_pack"]) for a in args["cudnnBackendExecute"]] == [(0, 0)] * 2


def test_local_scope_libraries(tmp_path):
    """cuBLAS and cuDNN in a local scope (dlsym(RTLD_NEXT) cannot see them) are still found."""
    require(LOCAL_MAIN, LOCAL_PLUGIN)
    out = run_plain_and_profiled([LOCAL_MAIN, LOCAL_PLUGIN], tmp_path)
    assert out == "libs_local: failed_calls=7\n"
    rep = report_json(tmp_path)
    got = {row["name"]: (row["calls"], row["errors"]) for row in rep["api"]}
    assert got == {"cublasSgemm_v2": (3, 3), "cublasGemmEx": (2, 2),
                   "cudnnConvolutionForward": (2, 2)}
    algos = [c["args"]["algo"] for c in dump_calls(tmp_path)
             if c["name"] == "cudnnConvolutionForward"]
    assert algos == [CONV_FWD_GEMM] * 2
