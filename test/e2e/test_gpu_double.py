"""The device-side test doubles for CUPTI work (test/doubles/fake_cupti*.c): the self-test
(test/doubles/test_fake_cupti.c) runs a CUPTI client against the fake libcupti.so.13 and the
fake libcudart.so.13 in both load orders, the test knobs do what they say, the fake's answers
without a driver agree with the real libcupti.so.13's, and the fake exports nothing the real
library lacks."""
import ctypes
import os
import subprocess

import pytest

from conftest import CUDA_HOME, build_path, needs_cuda

pytestmark = needs_cuda

DOUBLES = build_path("test", "doubles")
SELF_TEST = os.path.join(DOUBLES, "test_fake_cupti")
FAKE_CUPTI = os.path.join(DOUBLES, "libcupti.so.13")
REAL_CUPTI = os.path.join(CUDA_HOME, "lib64", "libcupti.so.13")


def run_self_test(lib, mode, **env):
    full = dict(os.environ, LD_LIBRARY_PATH=DOUBLES, **env)
    for knob in ("FAKE_CUPTI_BUSY", "FAKE_CUPTI_NO_DRIVER"):
        if knob not in env:
            full.pop(knob, None)
    return subprocess.run([SELF_TEST, lib, mode], env=full, capture_output=True, text=True,
                          timeout=60)


def assert_ok(proc, mode):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "test_fake_cupti %s: ok" % mode


def driver_present():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["cudart-first", "cupti-first"])
def test_client_sees_every_call_and_record(mode):
    # Whichever library loads first, the fake CUPTI hears of all 16 calls and writes the
    # kernels, copies, memsets, API and external-correlation records that match them.
    assert_ok(run_self_test(FAKE_CUPTI, mode), mode)


def test_late_timestamp_callback_is_ignored_and_said():
    proc = run_self_test(FAKE_CUPTI, "cudart-first")
    assert_ok(proc, "cudart-first")
    assert "timestamp callback registered after an activity kind was enabled" in proc.stderr


def test_busy_knob_refuses_the_subscriber():
    assert_ok(run_self_test(FAKE_CUPTI, "busy", FAKE_CUPTI_BUSY="1"), "busy")


def test_busy_expectation_fails_without_the_knob():
    # Guards the self-test: without FAKE_CUPTI_BUSY the subscription succeeds.
    proc = run_self_test(FAKE_CUPTI, "busy")
    assert proc.returncode == 1 and "FAIL" in proc.stdout


def test_no_driver_knob():
    assert_ok(run_self_test(FAKE_CUPTI, "nodriver", FAKE_CUPTI_NO_DRIVER="1"), "nodriver")


def test_real_libcupti_without_driver_answers_the_same():
    if not os.path.exists(REAL_CUPTI):
        pytest.skip("no libcupti.so.13 in %s/lib64" % CUDA_HOME)
    if driver_present():
        pytest.skip("a GPU driver is present: the real libcupti does not answer 999 here")
    assert_ok(run_self_test(REAL_CUPTI, "nodriver"), "nodriver")


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if " T " in line}


def test_fake_exports_only_real_cupti_functions():
    if not os.path.exists(REAL_CUPTI):
        pytest.skip("no libcupti.so.13 in %s/lib64" % CUDA_HOME)
    fake = exported(FAKE_CUPTI)
    assert "cuptiSubscribe" in fake and "cuptiActivityGetNextRecord" in fake
    real = ctypes.CDLL(REAL_CUPTI)
    extra = sorted(n for n in fake if n.startswith("cupti") and not hasattr(real, n))
    assert extra == []
    assert fake - {n for n in fake if n.startswith("cupti")} == {"fake_cupti_attach_cudart"}


def test_fake_cupti_names_itself_like_the_real_one():
    out = subprocess.run(["readelf", "-d", FAKE_CUPTI], capture_output=True, text=True,
                         check=True).stdout
    assert "Library soname: [libcupti.so.13]" in out
