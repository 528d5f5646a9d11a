"""Issue 18: the Python table of the steady steps and the program's other threads. At each
step boundary the step thread cuts every thread's call tree (under the GIL their stacks
hold still), so the other threads' calls in the part are exact too. The table gives the
training loop's thread; the others follow in short (their time, their calls, the function
with the most self time and its calls).

test/workloads/torch_side_thread.py: a helper thread runs prepare() once per step, handed
the batch by an Event, and the loop waits for it before the optimizer step."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, PROFREPORT, ROOT, profile, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(ROOT, "test", "workloads", "torch_side_thread.py")
ENV = {"PROF_TORCH_CACHE": os.path.join(BUILD, "test", "torch-cache")}
STEPS = 12

HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("side_thread") / "prof"
    proc = profile([PYTHON, SCRIPT, str(STEPS)], out, env=ENV, timeout=300)
    assert proc.stdout == "steps %d\n" % STEPS
    return out


def calls(rep, qualname):
    return sum(f["ncalls"] for f in rep["python"] if f["qualname"] == qualname)


def test_the_other_thread_in_the_steps_is_exact(run):
    rep = report_json(run, "--python")
    cover = rep["python_cover"]
    assert cover["part"] == "the steady training steps", cover
    first, last = map(int, re.search(r"steps (\d+)-(\d+)", cover["note"]).groups())
    assert "1 other thread with calls in it, below" in cover["note"]
    (other,) = rep["python_other_threads"]
    assert other["top"]["qualname"] == "prepare" and other["top"]["file"] == SCRIPT
    assert other["top_calls"] == last - first + 1  # once per step of the part
    # (each converted from ticks on its own: a ns apart)
    assert 0 < other["top_self_ns"] <= other["ns"] <= cover["ns"] + 1000
    main_tid = [p for p in rep["processes"]][0]["pid"]
    assert other["tid"] != main_tid
    # the table is the training loop's thread: prepare() runs on the helper only
    assert calls(rep, "prepare") == 0 and calls(rep, "Linear.forward") == last - first + 1
    whole = report_json(run, "--python", "--phase", "all")
    assert whole["python_other_threads"] == []
    assert calls(whole, "prepare") == STEPS


def test_text_and_summaries(run, tmp_path):
    text = report(run).stdout
    section = text[text.index("Python functions in the steady training steps"):]
    section = section[:section.index("\nProcesses\n")]
    assert re.search(r"\n  Other threads in the steady training steps \(.*\n    pid \d+ thread "
                     r"\d+ \(\S+\): [\d.]+ \wm?s in \d+ calls; most self time in prepare "
                     r"\(\S+torch_side_thread.py:\d+\) [\d.]+ \w+ in \d+ calls\n", section), section
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in trace_files(run):
        shutil.copy(f, copy)
    subprocess.run([PROFREPORT, "--summarize", str(copy)], check=True, capture_output=True,
                   timeout=120)
    from_summaries = report(copy).stdout
    start = from_summaries.index("Python functions in the steady training steps")
    assert from_summaries[start:].startswith(section)
    assert report_json(copy)["python_other_threads"] == report_json(run)["python_other_threads"]
