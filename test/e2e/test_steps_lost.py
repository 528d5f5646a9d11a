"""Training steps when the ring drops events (PROF_RING_KB=64, a slow drain): the
boundaries come from the step scopes' log, which the collector writes and nothing drops
(TORCH_SCOPE), so the report's steps are the loop's optimizer steps, one each, none two
merged into a slow one."""
import os
import re

import pytest

from conftest import ROOT, have_torch, profile, report, report_json

PYTHON = "/usr/bin/python3"


pytestmark = pytest.mark.skipif(not have_torch(), reason="no torch for /usr/bin/python3")


def test_steps_are_exact_when_the_ring_drops_events(tmp_path):
    proc = profile([PYTHON, os.path.join(ROOT, "test", "workloads", "torch_tiny_params.py")],
                   tmp_path, timeout=300, env={"PROF_RING_KB": "64", "PROF_FLUSH_MS": "200"})
    steps = int(re.search(r"optimizer steps (\d+)", proc.stdout).group(1))
    rep = report_json(tmp_path)
    lost = sum(p["lost"] for p in rep["processes"])  # (a fast drain may have kept all)
    with_steps = [p for p in rep["processes"] if p["steps"]]
    assert len(with_steps) == 1, rep["processes"]
    st = with_steps[0]["steps"]
    assert st["source"].startswith("optimizer steps"), st["source"]
    assert st["count"] == steps, (st["count"], steps, lost)
    assert [s["number"] for s in st["steps"]] == list(range(1, steps + 1))
    # each step follows the one before: no boundary is missing between them
    for a, b in zip(st["steps"], st["steps"][1:]):
        assert a["start_ns"] + a["ns"] == b["start_ns"]
    text = report(tmp_path).stdout
    assert re.search(r"Training steps: \d+ steady of %d," % steps, text), text
