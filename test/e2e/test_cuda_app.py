"""cuda_app (test/fixtures/cuda/cuda_app.cu) under profrun, against the real libcudart.so.13
(no GPU here: every call fails with 35) and against the device-side test double
(test/doubles/fake_cudart.c). Every expected number below is derived from the fixture's
source, section by section; none is copied from a report."""
import os
import re
import subprocess
from collections import Counter

import pytest

from conftest import api_row, build_path, needs_cuda, profile, report_json

pytestmark = needs_cuda

APP = build_path("test", "fixtures", "cuda_app")
DOUBLES = build_path("test", "doubles")
KERNEL_NS = 5_000_000  # FAKE_CUDA_KERNEL_NS for the double: 5 ms per launch
MiB = 1 << 20
KiB = 1 << 10
ERR_INSUFFICIENT_DRIVER = 35


def expected_calls():
    """Calls per public runtime function in cuda_app's main(), in source order."""
    c = Counter()
    # Devices, including the deliberate cudaSetDevice(99).
    c.update(cudaGetDeviceCount=1, cudaSetDevice=2, cudaGetDevice=1, cudaGetDeviceProperties=1)
    c.update(cudaStreamCreate=1, cudaStreamCreateWithFlags=1)
    c.update(cudaEventCreate=2, cudaEventCreateWithFlags=1)
    # Allocations: 1, 2 MiB, free the 1 MiB, 4 MiB, 512 KiB async; pinned 1 MiB + 256 KiB;
    # managed 64 KiB.
    c.update(cudaMalloc=3, cudaFree=1, cudaMallocAsync=1)
    c.update(cudaMallocHost=1, cudaHostAlloc=1, cudaMallocManaged=1)
    # Copies and sets, then two stream syncs.
    c.update(cudaMemset=1, cudaMemsetAsync=1)
    c.update(cudaMemcpy=3, cudaMemcpyAsync=2, cudaMemcpy2D=1, cudaMemcpy2DAsync=1)
    c.update(cudaMemcpyPeer=1, cudaMemcpyPeerAsync=1)
    c.update(cudaStreamSynchronize=2)
    c.update(cudaGraphCreate=1, cudaGraphInstantiate=1)  # in OPTIONAL_SUPPORT
    # Kernel phase (the <<<>>> launches are counted in EXPECTED_LAUNCH_SYMBOLS).
    c.update(cudaEventRecord=2, cudaLaunchKernel=2, cudaLaunchKernelExC=1,
             cudaLaunchCooperativeKernel=1, cudaGraphLaunch=2, cudaDeviceSynchronize=1)
    c.update(cudaEventRecord=1, cudaEventSynchronize=1, cudaEventQuery=1,
             cudaStreamWaitEvent=1, cudaStreamQuery=1)
    # Read back and tear down, including the deliberate cudaFree((void *)0x1000).
    c.update(cudaMemcpy=1, cudaFreeAsync=1, cudaFree=4, cudaFreeHost=2)
    c.update(cudaGraphExecDestroy=1, cudaGraphDestroy=1, cudaEventDestroy=3,
             cudaStreamDestroy=2, cudaDeviceSynchronize=1)
    return c


# <<<>>> launches: scale<float> x3, scale<int> x1, too_big x1.
LAUNCHES_CHEVRON = 3 + 1 + 1
# What nvcc's generated code calls. __cudaLaunchKernel must be seen; the rest may or may
# not be interposed, but when a row exists its count must be exact.
EXPECTED_LAUNCH_SYMBOLS = {"__cudaLaunchKernel": LAUNCHES_CHEVRON}
OPTIONAL_INTERNAL = {
    "__cudaPushCallConfiguration": LAUNCHES_CHEVRON,
    "__cudaPopCallConfiguration": LAUNCHES_CHEVRON,
    "__cudaGetKernel": 3,  # once per launched kernel stub: scale<float>, scale<int>, too_big
    "__cudaRegisterFunction": 6,  # scale<float>, scale<int>, fill, tile_sum, too_big, coop
    "__cudaRegisterFatBinary": 1,
    "__cudaRegisterFatBinaryEnd": 1,
}
# Graph management is outside the runtime functions the profiler must interpose (graph
# launches are not): rows may be absent, but a row that exists has the exact count.
OPTIONAL_SUPPORT = ["cudaGraphCreate", "cudaGraphInstantiate", "cudaGraphExecDestroy",
                    "cudaGraphDestroy"]
# Runs from atexit, possibly after the profiler has written its last record.
MAYBE_AT_EXIT = {"__cudaUnregisterFatBinary": (0, 1)}

# Against the double, only these fail: cudaSetDevice(99), cudaFree(bogus), too_big<<<>>>.
DOUBLE_ERRORS = {"cudaSetDevice": 1, "cudaFree": 1, "__cudaLaunchKernel": 1}

DOUBLE_MEMORY = {
    "device": {  # 1 + 2 + 4 MiB + 512 KiB; live peaks at 2 + 4 MiB + 512 KiB
        "alloc_count": 4, "alloc_bytes": 7 * MiB + 512 * KiB,
        "free_count": 4, "free_bytes": 7 * MiB + 512 * KiB,
        "peak_bytes": 6 * MiB + 512 * KiB,
    },
    "host_pinned": {
        "alloc_count": 2, "alloc_bytes": 1 * MiB + 256 * KiB,
        "free_count": 2, "free_bytes": 1 * MiB + 256 * KiB,
        "peak_bytes": 1 * MiB + 256 * KiB,
    },
    "managed": {
        "alloc_count": 1, "alloc_bytes": 64 * KiB,
        "free_count": 1, "free_bytes": 64 * KiB, "peak_bytes": 64 * KiB,
    },
}

COPY_2D = 512 * 256  # width x height of both 2D copies
DOUBLE_COPIES = {  # direction: (calls, bytes)
    "HtoD": (3, 1 * MiB + 1 * MiB + COPY_2D),
    "DtoH": (2, COPY_2D + 1 * MiB),
    "DtoD": (1, 2 * MiB),
    "HtoH": (1, 4 * KiB),
    "Default": (1, 64 * KiB),
    "PtoP": (2, 256 * KiB + 256 * KiB),
    "memset": (2, 2 * MiB + 4 * MiB),
}

DOUBLE_KERNELS = {  # name as in the source: (launches, errors, grid, block)
    "fixture::scale<float>": (3, 0, "4,2,1", "128,1,1"),
    "fixture::scale<int>": (1, 0, "2,1,1", "64,1,1"),
    "fixture::too_big": (1, 1, "1,1,1", "2048,1,1"),
    "fixture::fill": (2, 0, "8,1,1", "256,1,1"),
    "fixture::tile_sum": (1, 0, "3,3,1", "16,16,1"),
    "cooperative_step": (1, 0, "2,1,1", "32,1,1"),
}
# Launches that succeed before the first cudaDeviceSynchronize, all serialized on the device:
# 3 + 1 scale, 2 fill, 1 tile_sum, 1 cooperative, 2 graph launches.
SERIAL_LAUNCHES_BEFORE_SYNC = 3 + 1 + 2 + 1 + 1 + 2

LAUNCH_APIS = ["__cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernelExC",
               "cudaLaunchCooperativeKernel", "cudaGraphLaunch"]


def runtime_env(double):
    """Environment selecting the double (first in LD_LIBRARY_PATH) or the real runtime."""
    parts = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
             if p and os.path.abspath(p) != DOUBLES]
    if double:
        parts.insert(0, DOUBLES)
    env = {"LD_LIBRARY_PATH": ":".join(parts)}
    if double:
        env["FAKE_CUDA_KERNEL_NS"] = str(KERNEL_NS)
    return env


def run_plain(cmd, env):
    full = dict(os.environ)
    full.update(env)
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)


def kernel_base_name(name):
    """'void fixture::scale<float>(float*, float, int)' -> 'fixture::scale<float>'."""
    if name.startswith("void "):
        name = name[len("void "):]
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name


def check_api_counts(rep, errors_for):
    """Every expected row is there with its exact count; nothing else is."""
    expected = expected_calls()
    expected.update(EXPECTED_LAUNCH_SYMBOLS)
    problems = []
    for name, calls in sorted(expected.items()):
        row = api_row(rep, name)
        if row is None and name in OPTIONAL_SUPPORT:
            continue
        if row is None:
            problems.append("%s: no row (expected %d calls)" % (name, calls))
            continue
        want_errors = errors_for(name, calls)
        if (row["calls"], row["errors"]) != (calls, want_errors):
            problems.append("%s: calls/errors %d/%d, expected %d/%d"
                            % (name, row["calls"], row["errors"], calls, want_errors))
    for row in rep["api"]:
        name = row["name"]
        if name in expected:
            continue
        if name in OPTIONAL_INTERNAL:
            if row["calls"] != OPTIONAL_INTERNAL[name]:
                problems.append("%s: %d calls, expected %d"
                                % (name, row["calls"], OPTIONAL_INTERNAL[name]))
        elif name in MAYBE_AT_EXIT:
            if row["calls"] not in MAYBE_AT_EXIT[name]:
                problems.append("%s: %d calls" % (name, row["calls"]))
        else:
            problems.append("unexpected row %s (%d calls)" % (name, row["calls"]))
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def fixture_built():
    if not os.path.exists(APP) or not os.path.exists(os.path.join(DOUBLES, "libcudart.so.13")):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures` (%s)" % APP)


@pytest.fixture(scope="module")
def real_run(fixture_built, tmp_path_factory):
    env = runtime_env(double=False)
    out = tmp_path_factory.mktemp("cuda_app_real")
    return run_plain([APP], env), profile([APP], out, env=env), report_json(out)


@pytest.fixture(scope="module")
def double_run(fixture_built, tmp_path_factory):
    env = runtime_env(double=True)
    out = tmp_path_factory.mktemp("cuda_app_double")
    return run_plain([APP], env), profile([APP], out, env=env), report_json(out)


def test_fixture_sees_the_runtime_it_was_given(real_run, double_run):
    # Guards the set-up, not the profiler: the real runtime fails every one of the 63 calls
    # that main() checks; the double fails the two deliberate ones.
    assert sum(expected_calls().values()) == 63
    assert real_run[0].returncode == 0
    assert "failed_calls=63 first_error=35 " in real_run[0].stdout
    assert double_run[0].returncode == 0
    assert "devices=1 failed_calls=2 first_error=101 " in double_run[0].stdout


@pytest.mark.parametrize("which", ["real", "double"])
def test_output_and_exit_code_unchanged(which, real_run, double_run):
    plain, profiled, _ = real_run if which == "real" else double_run
    assert profiled.returncode == plain.returncode == 0
    assert profiled.stdout == plain.stdout


@pytest.mark.parametrize("double", [False, True])
def test_nonzero_exit_code_passes_through(double, fixture_built, tmp_path):
    env = runtime_env(double)
    plain = run_plain([APP, "7"], env)
    profiled = profile([APP, "7"], tmp_path, env=env, check=False)
    assert plain.returncode == 7
    assert profiled.returncode == 7
    assert profiled.stdout == plain.stdout


def test_real_runtime_every_call_counted_and_failed(real_run):
    rep = real_run[2]
    check_api_counts(rep, lambda name, calls: calls)
    for row in rep["api"]:
        if row["name"] in OPTIONAL_INTERNAL or row["name"] in MAYBE_AT_EXIT:
            assert row["errors"] <= row["calls"], row
    assert len(rep["processes"]) == 1


def test_double_call_counts_and_errors(double_run):
    rep = double_run[2]
    check_api_counts(rep, lambda name, calls: DOUBLE_ERRORS.get(name, 0))
    for name in OPTIONAL_INTERNAL:
        row = api_row(rep, name)
        assert row is None or row["errors"] == 0, row
    assert len(rep["processes"]) == 1


def test_double_memory(double_run):
    rep = double_run[2]
    for kind, want in DOUBLE_MEMORY.items():
        got = {k: rep["memory"][kind][k] for k in want}
        assert got == want, kind


def test_double_copies(double_run):
    rep = double_run[2]
    got = {row["direction"]: (row["calls"], row["bytes"]) for row in rep["copies"]
           if row["calls"]}
    assert got == DOUBLE_COPIES
    for row in rep["copies"]:
        assert row.get("errors", 0) == 0, row


def test_double_kernels_demangled(double_run):
    rep = double_run[2]
    for row in rep["kernels"]:
        assert not row["name"].startswith("_Z"), "mangled kernel name: %s" % row["name"]
        assert not row["name"].startswith("kernel@"), "unnamed kernel: %s" % row["name"]
    by_name = {}
    for row in rep["kernels"]:
        base = kernel_base_name(row["name"])
        if base in DOUBLE_KERNELS:
            assert base not in by_name, "two rows for %s" % base
            by_name[base] = row
    assert sorted(by_name) == sorted(DOUBLE_KERNELS)
    for base, (launches, errors, grid, block) in DOUBLE_KERNELS.items():
        row = by_name[base]
        assert (row["launches"], row["errors"], row["grid"], row["block"]) == \
            (launches, errors, grid, block), row
        assert row["total_ns"] >= 0


def test_double_launch_times(double_run):
    rep = double_run[2]
    for name in LAUNCH_APIS:
        row = api_row(rep, name)
        assert row is not None, name
        assert 0 <= row["min_ns"] <= row["max_ns"], row
        assert row["total_ns"] >= 0
        assert row["min_ns"] <= row["avg_ns"] <= row["max_ns"], row


def test_double_sync_waits_for_kernels(double_run):
    # The double queues each launch for KERNEL_NS; the launches are asynchronous, so the
    # first cudaDeviceSynchronize is where the host waits for all of them.
    row = api_row(double_run[2], "cudaDeviceSynchronize")
    assert row is not None
    assert row["total_ns"] >= SERIAL_LAUNCHES_BEFORE_SYNC * KERNEL_NS * 0.9, row


def test_expected_table_matches_fixture_source():
    # Each checked call in main() is written note(cudaXxx(...)); loops repeat some. The
    # table above must name exactly the functions that the source checks.
    src = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cuda", "cuda_app.cu")
    with open(src) as f:
        text = f.read()
    in_source = set(re.findall(r"note\((cuda[A-Za-z0-9]+)\(", text))
    assert in_source == set(expected_calls())
