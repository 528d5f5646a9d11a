"""Many cheap calls (test/fixtures/cuda/cheap_calls.c: cudaGetDevice N times, the call the
overhead benchmark uses) are all counted and the program's output is unchanged. The large N
issues more calls than one default ring holds before the collector's first flush: the
tables must stay exact even then (DESIGN.md: thresholds may shorten the timeline, never the
tables)."""
import os
import subprocess

import pytest

from conftest import api_row, build_path, needs_cuda, profile, report_json

pytestmark = needs_cuda

CHEAP = build_path("test", "fixtures", "cheap_calls")
DOUBLES = build_path("test", "doubles")


def runtime_env(double):
    parts = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
             if p and os.path.abspath(p) != DOUBLES]
    if double:
        parts.insert(0, DOUBLES)
    return {"LD_LIBRARY_PATH": ":".join(parts)}


@pytest.mark.parametrize("n", [1000, 200000])
@pytest.mark.parametrize("double", [False, True], ids=["real", "double"])
def test_cheap_calls_all_counted(double, n, tmp_path):
    if not os.path.exists(CHEAP):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures` (%s)" % CHEAP)
    env = runtime_env(double)
    full = dict(os.environ)
    full.update(env)
    plain = subprocess.run([CHEAP, str(n)], env=full, capture_output=True, text=True,
                           timeout=120)
    failed = 0 if double else n
    assert plain.stdout.startswith("cheap_calls: calls=%d failed=%d " % (n, failed))
    profiled = profile([CHEAP, str(n)], tmp_path, env=env)
    assert (profiled.returncode, profiled.stdout) == (plain.returncode, plain.stdout)
    rep = report_json(tmp_path)
    row = api_row(rep, "cudaGetDevice")
    assert row is not None
    assert (row["calls"], row["errors"]) == (n, failed)
    assert [r["name"] for r in rep["api"]] == ["cudaGetDevice"]
