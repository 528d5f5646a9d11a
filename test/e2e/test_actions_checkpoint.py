"""The built-in actions of a model trained with activation checkpointing
(test/workloads/torch_checkpoint.py, Debian's torch on CPU; make gpu-check runs it on a
GPU): the checkpointed blocks' forwards run again inside backward, as long as the forward,
and those recomputed calls are backward's. A review found forward at 200 calls for 40 steps
and forward + backward at 119 % of the training; the steps' own breakdown was right."""
import html
import os
import re

import pytest

from conftest import ROOT, have_torch, profile, report, report_json, summaries_only

PYTHON = "/usr/bin/python3"
WORKLOAD = os.path.join(ROOT, "test", "workloads", "torch_checkpoint.py")
STEPS = 6


pytestmark = pytest.mark.skipif(not have_torch(), reason="no torch for /usr/bin/python3")


@pytest.mark.parametrize("variant", ["reentrant", "non-reentrant"])
def test_recomputed_forwards_count_in_backward(tmp_path, variant):
    out = tmp_path / "run"
    got = profile([PYTHON, WORKLOAD, variant, str(STEPS)], out, timeout=300)
    # every block's forward ran again in backward
    assert "steps %d recomputed %d" % (STEPS, 3 * STEPS) in got.stdout, got.stdout
    d = report_json(out)
    rows = {a["name"]: a for a in d["actions"] if a["source"] == "builtin"}
    assert rows["forward"]["calls"] == STEPS, rows
    assert rows["backward"]["calls"] == STEPS, rows
    assert rows["optimizer_step"]["calls"] == STEPS, rows
    loop = ("forward", "backward", "optimizer_step")
    assert sum(rows[n]["percent"] for n in loop) <= 100, rows
    # the steps' breakdown and the actions agree: the forward parts of the steps (all but
    # the first, which the breakdown leaves out) hold about the Actions' forward time,
    # where the recompute counted as forwards too would double it (every block
    # checkpointed)
    steps = [p for p in d["processes"] if p["steps"]][0]["steps"]
    assert steps["count"] == STEPS, steps
    parts = sum(s["parts_ns"]["forward"] for s in steps["steps"][1:])
    per_call = rows["forward"]["total_s"] * 1e9 / STEPS
    assert 0.5 < per_call * (STEPS - 1) / parts < 1.5, (per_call, parts, steps["steps"])
    # and says how much of backward recomputes them: about the forward (every block
    # checkpointed), in every step, in the text and the HTML, and from summaries
    recompute = sum(s["recompute_ns"] for s in steps["steps"][1:])
    assert all(s["recompute_ns"] > 0 for s in steps["steps"][1:]), steps["steps"]
    assert 0.5 < recompute / parts < 1.5, (recompute, parts)
    backward = sum(s["parts_ns"]["backward"] for s in steps["steps"][1:])
    assert recompute < backward, (recompute, backward)
    note = r"backward recomputes the model's forward: [\d.]+ m?s per step of its [\d.]+ m?s " \
        r"\(activation checkpointing"
    assert re.search(note, report(out).stdout), report(out).stdout
    report(out, "--html", str(tmp_path / "r.html"))
    assert re.search(note, html.unescape((tmp_path / "r.html").read_text()))
    # the text table says the same (Mean duration, then Num calls), and a report read
    # from summaries too
    text = report(out, "--actions").stdout
    assert re.search(r"\n  forward +[0-9.]+ +%d " % STEPS, text), text
    d2 = report_json(summaries_only(out, tmp_path))
    assert [(a["name"], a["calls"], a["percent"]) for a in d2["actions"]] == \
        [(a["name"], a["calls"], a["percent"]) for a in d["actions"]]
    steps2 = [p for p in d2["processes"] if p["steps"]][0]["steps"]
    assert [s["recompute_ns"] for s in steps2["steps"]] == [s["recompute_ns"] for s in steps["steps"]]
