"""profreport's PyTorch tables on a synthetic trace (test/fixtures/traces/torch_traces.h).

torch/main.trace: aten ops nested under a record_function scope "my_scope", a backward op
on an autograd thread, kernels launched inside some ops, and the Python call tree of a
plain training loop (DataLoader, module calls, backward, optimizer and scheduler steps).
U = 10 us; wall 4000 U = 40 ms.
"""
import csv
import io
import json
import os
import re
import subprocess

import pytest

from conftest import PROFREPORT, TRACES, make_traces

OPS_HEADER = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
              "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "CPU Mem",
              "Self CPU Mem", "CUDA Mem", "Self CUDA Mem", "# of Calls"]


@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def t(*parts):
    return os.path.join(TRACES, "torch", *parts)


def run(*args):
    return subprocess.run([PROFREPORT] + list(args), capture_output=True, text=True, timeout=60)


def ok(*args):
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def rep_json(*args):
    return json.loads(ok("--format", "json", *args))


def split(line):
    return re.split(r"\s{2,}", line.strip())


def cells(out, first):
    """The cells (split on 2+ spaces) of the text rows whose first cell is first."""
    return [split(l) for l in out.splitlines() if split(l)[0] == first]


def names(out):
    """The first cells of the rows of the ops table, in order."""
    lines = out.splitlines()
    start = [i for i, l in enumerate(lines) if split(l)[0] == "Name"][0]
    rows = []
    for l in lines[start + 1:]:
        if l.strip().startswith(("Self CPU time total", "(")):
            break
        rows.append(split(l)[0])
    return rows


def test_ops_table_columns_and_units():
    out = ok("--ops", t())
    assert "PyTorch operators (13 ops; ordered by self_cpu)" in out
    header = [l for l in out.splitlines() if split(l)[0] == "Name"][0]
    assert split(header) == OPS_HEADER
    assert cells(out, "aten::addmm") == [[
        "aten::addmm", "40.00%", "2.800ms", "40.00%", "2.800ms", "1.400ms", "180.000us",
        "60.00%", "180.000us", "90.000us", "0 b", "0 b", "0 b", "0 b", "2"]]
    assert cells(out, "my_scope")[0][1:11] == [
        "18.57%", "1.300ms", "85.71%", "6.000ms", "3.000ms", "0.000us", "0.00%", "200.000us",
        "100.000us", "0 b"]
    assert cells(out, "aten::t")[0][1:6] == ["2.14%", "150.000us", "2.14%", "150.000us",
                                            "75.000us"]
    assert cells(out, "AddmmBackward0")[0][4:9] == ["1.000ms", "1.000ms", "0.000us", "0.00%",
                                                   "100.000us"]
    assert "Self CPU time total: 7.000ms" in out
    assert "Self CUDA time total: 300.000us" in out
    assert "(no tensor memory was recorded: the memory columns are 0)" in out
    assert names(out) == ["aten::addmm", "my_scope", "aten::mm", "aten::clamp_min",
                          "aten::relu", "aten::linear", "AddmmBackward0", "aten::t"]


def test_ops_group_by_shape():
    out = ok("--ops", "--group-by-shape", t())
    header = [l for l in out.splitlines() if split(l)[0] == "Name"][0]
    assert split(header) == OPS_HEADER + ["Input Shapes"]
    addmm = cells(out, "aten::addmm")
    assert [(r[2], r[-1]) for r in addmm] == [("1.600ms", "[[4], [8, 16], [16, 4]]"),
                                              ("1.200ms", "[[4], [2, 16], [16, 4]]")]
    assert [r[-2:] for r in cells(out, "aten::relu")] == [["2", "[[8, 4]]"]]
    assert cells(out, "aten::mm")[0][-1] == "[]"
    # Alone, --group-by-shape prints the table it changes.
    assert ok("--group-by-shape", t()) == out


@pytest.mark.parametrize("key,first", [
    ("self_cpu", ["aten::addmm", "my_scope"]),
    ("self_cpu_time_total", ["aten::addmm", "my_scope"]),
    ("cpu_total", ["my_scope", "aten::linear", "aten::addmm"]),
    ("cpu_time_total", ["my_scope", "aten::linear", "aten::addmm"]),
    ("self_cuda", ["aten::addmm", "aten::mm", "aten::clamp_min"]),
    ("cuda_total", ["my_scope", "aten::addmm", "aten::linear"]),
    ("cuda_time_total", ["my_scope", "aten::addmm", "aten::linear"]),
    ("calls", ["aten::addmm", "aten::linear", "aten::relu"]),
    ("count", ["aten::addmm", "aten::linear", "aten::relu"]),
    ("name", ["AddmmBackward0", "aten::addmm", "aten::clamp_min"]),
])
def test_ops_sort_keys(key, first):
    out = ok("--ops", "--sort", key, t())
    assert names(out)[:len(first)] == first
    assert "ordered by" in out


def test_ops_limit_and_bad_key():
    out = ok("--ops", "--limit", "3", t())
    assert names(out) == ["aten::addmm", "my_scope", "aten::mm"]
    assert "(5 more not shown; --limit)" in out
    # The totals stay those of every op.
    assert "Self CPU time total: 7.000ms" in out
    proc = run("--ops", "--sort", "cumtime", t())
    assert proc.returncode == 2
    assert "unknown sort key 'cumtime' for --ops" in proc.stderr


def test_ops_json():
    rep = rep_json(t())
    ops = {o["name"]: o for o in rep["ops"]}
    assert [o["name"] for o in rep["ops"]][:2] == ["aten::addmm", "my_scope"]
    assert set(rep["ops"][0]) == {
        "name", "shapes", "calls", "self_cpu_ns", "cpu_total_ns", "cpu_avg_ns", "self_cuda_ns",
        "cuda_total_ns", "cuda_avg_ns", "self_cpu_percent", "cpu_total_percent",
        "self_cuda_percent", "cpu_mem_bytes", "self_cpu_mem_bytes", "cuda_mem_bytes",
        "self_cuda_mem_bytes"}
    addmm = ops["aten::addmm"]
    assert addmm["shapes"] is None
    assert (addmm["calls"], addmm["self_cpu_ns"], addmm["cpu_total_ns"]) == (2, 2800000, 2800000)
    assert (addmm["self_cuda_ns"], addmm["cuda_total_ns"]) == (180000, 180000)
    assert addmm["cpu_avg_ns"] == 1400000.0 and addmm["cuda_avg_ns"] == 90000.0
    assert addmm["self_cpu_percent"] == 40.0 and addmm["self_cuda_percent"] == 60.0
    scope = ops["my_scope"]
    assert (scope["self_cpu_ns"], scope["cpu_total_ns"], scope["cuda_total_ns"]) == \
        (1300000, 6000000, 200000)
    assert abs(scope["cpu_total_percent"] - 600 / 7) < 1e-9
    grouped = rep_json("--group-by-shape", "--sort", "name", t())["ops"]
    assert [(o["name"], o["shapes"]) for o in grouped[:3]] == [
        ("AddmmBackward0", ""), ("aten::addmm", "[[4], [2, 16], [16, 4]]"),
        ("aten::addmm", "[[4], [8, 16], [16, 4]]")]
    assert len(rep_json("--limit", "2", t())["ops"]) == 2


def test_ops_csv():
    out = ok("--format", "csv", "--sort", "cpu_total", t())
    sections = {}
    for block in out.strip().split("\n\n"):
        lines = block.split("\n")
        sections[lines[0][2:]] = list(csv.DictReader(io.StringIO("\n".join(lines[1:]))))
    ops = sections["ops"]
    assert [r["name"] for r in ops[:2]] == ["my_scope", "aten::linear"]
    linear = ops[1]
    assert (linear["calls"], linear["self_cpu_ns"], linear["cpu_total_ns"],
            linear["cuda_total_ns"], linear["shapes"]) == ("2", "550000", "3500000", "180000", "")
    actions = {r["name"]: r for r in sections["actions"]}
    assert actions["my_scope"]["source"] == "record_function"
    assert actions["forward"]["source"] == "builtin"
    assert actions["forward"]["percent"] == "40.639"  # of the built-in loop actions' time


def test_actions_table():
    proc = run("--actions", t())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    title = out.splitlines()[0]
    # Counts per source, and what the percentages are of: the training, here the time of
    # the built-in loop actions (8.9 + 6 + 4 + 3 ms, none inside another).
    assert title == ("Actions (1 record_function scope, 4 built-in loop actions; times in "
                     "seconds, % of the training: the 0.021900 s in the built-in loop "
                     "actions, nested ones once)")
    header = [l for l in out.splitlines() if l.strip().startswith("Action ")][0]
    assert split(header) == ["Action", "Mean duration (s)", "Num calls", "Total time (s)",
                             "Percentage %", "GPU time (s)", "Source"]
    assert cells(out, "Total") == [["Total", "-", "12", "0.021900", "100 %", "0.000360"]]
    assert cells(out, "forward") == [["forward", "0.002967", "3", "0.008900", "40.639",
                                      "0.000200", "built-in"]]
    assert cells(out, "backward") == [["backward", "0.003000", "2", "0.006000", "27.397",
                                       "0.000010", "built-in"]]
    assert cells(out, "my_scope") == [["my_scope", "0.003000", "2", "0.006000", "27.397",
                                       "0.000200", "scope"]]
    assert cells(out, "optimizer_step") == [["optimizer_step", "0.002000", "2", "0.004000",
                                             "18.265", "0.000050", "built-in"]]
    assert cells(out, "dataloader_next") == [["dataloader_next", "0.001000", "3", "0.003000",
                                              "13.699", "0.000000", "built-in"]]
    rows = [split(l)[0] for l in out.splitlines()[2:]]
    assert rows == ["Total", "forward", "backward", "my_scope", "optimizer_step",
                    "dataloader_next"]


def test_actions_json_sources():
    rep = rep_json(t())
    sources = {a["name"]: a["source"] for a in rep["actions"]}
    assert sources == {"forward": "builtin", "backward": "builtin", "my_scope": "record_function",
                       "optimizer_step": "builtin", "dataloader_next": "builtin"}
    assert rep["actions_percent_of"] == {"base": "builtin_actions", "ns": 21900000,
                                         "wall_ns": 40000000, "folded_scopes": 0,
                                         "unfolded_scopes": 0}
    forward = [a for a in rep["actions"] if a["name"] == "forward"][0]
    assert abs(forward["percent"] - 100 * 8.9 / 21.9) < 1e-9
    # NVTX ranges keep their table and say where they come from; alone, their shares are of
    # the wall time.
    nvtx = rep_json(os.path.join(TRACES, "nvtx"))
    assert {a["source"] for a in nvtx["actions"]} == {"nvtx"}
    assert nvtx["actions_percent_of"]["base"] == "wall"
    out = ok("--actions", os.path.join(TRACES, "nvtx"))
    assert out.splitlines()[0] == ("Actions (5 NVTX ranges; times in seconds, % of the wall "
                                   "time)")
    assert cells(out, "epoch")[0][-1] == "NVTX"


def test_default_report_lists_every_action():
    out = ok(t())
    assert len(cells(out, "Total")) == 1
    assert all(cells(out, n) for n in ("forward", "backward", "my_scope", "optimizer_step",
                                       "dataloader_next"))
    out = ok("--limit", "2", t())
    assert ("(3 more not shown; profreport --actions lists every action; --limit N shows N "
            "here)") in out


def test_default_report_has_an_ops_section():
    out = ok(t())
    assert "PyTorch operators (13 ops; ordered by self_cpu)" in out
    assert "(5 more not shown" not in out  # 8 rows fit the section's 15
    assert "profreport --ops" not in out
    out = ok("--limit", "2", t())
    assert "(6 more not shown; profreport --ops)" in out


def test_dump_prints_torch_ops():
    out = ok("dump", t("main.trace"))
    ops = [l for l in out.splitlines() if " TORCH_OP " in l]
    assert len(ops) == 13
    back = [l for l in ops if '"AddmmBackward0"' in l][0]
    assert "sequence_nr=5 fwd_thread=1 scope=1 (BACKWARD_FUNCTION) depth=0" in back
    assert "start=20001000 end=21001000 dur=1000000" in back
    addmm = [l for l in ops if '"aten::addmm"' in l][0]
    assert "sequence_nr=-1" in addmm and "scope=0 (FUNCTION) depth=2" in addmm
    assert 'shapes=12:"[[4], [8, 16], [16, 4]]"' in addmm
    assert any("scope=7 (USER_SCOPE)" in l and '"my_scope"' in l for l in ops)


# ---- CPU tensor memory: torchmem/mem.trace (torch_traces.h, torch_trace_mem) ----

def tm(*parts):
    return os.path.join(TRACES, "torchmem", *parts)


MEM_LINE = ("pid 7300 CPU: peak 10.39 Kb at +0.003 s in aten::relu, "
            "from /w/train.py:10(Net.forward)")


def test_memory_section_default_and_ops():
    for args in ([], ["--ops"]):
        out = ok(*args, tm())
        assert "PyTorch memory" in out
        assert MEM_LINE in out
        assert "allocated 11.47 Kb, freed 4.44 Kb, live at end 7.03 Kb" in out
        assert ("pid 7300 CUDA:0: peak 12.00 Kb at +0.003 s in aten::relu, "
                "from /w/train.py:10(Net.forward)") in out
        assert "pid 7300 CUDA:1: peak 512 b at +0.007 s in (no op)" in out


def test_memory_section_absent_without_records():
    assert "PyTorch memory" not in ok(t())


def test_memory_json():
    p = rep_json(tm())["processes"][0]
    assert p["torch_memory"] == {
        "device": "CPU", "peak_bytes": 10644, "peak_ns": 3300000, "peak_op": "aten::relu",
        "peak_python": {"qualname": "Net.forward", "file": "/w/train.py", "line": 10},
        "allocated_bytes": 11744, "freed_bytes": 4548, "live_at_end_bytes": 7196,
        # the fixture predates the in-process totals: figures from its records, none lost
        "allocations": 6, "frees": 3, "exact": False, "records_lost": 0,
        "part": None}  # no training steps: the whole process's figures only
    assert p["torch_device_memory"][0] == {
        "device": "CUDA:0", "peak_bytes": 12288, "peak_ns": 3350000, "peak_op": "aten::relu",
        "peak_python": {"qualname": "Net.forward", "file": "/w/train.py", "line": 10},
        "allocated_bytes": 12288, "freed_bytes": 8192, "live_at_end_bytes": 4096,
        "reserved_peak_bytes": 2 << 20,
        "allocations": 2, "frees": 1, "exact": False, "records_lost": 0, "part": None}
    assert p["torch_device_memory"][1]["device"] == "CUDA:1"
    assert rep_json(t())["processes"][0]["torch_memory"] is None
    assert rep_json(t())["processes"][0]["torch_device_memory"] == []


def test_memory_timeline_csv(tmp_path):
    dest = tmp_path / "mem.csv"
    proc = run("--memory-timeline", str(dest), tm())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # the file alone: no report
    rows = list(csv.reader(io.StringIO(dest.read_text())))
    assert rows[0] == ["pid", "device", "time_ns", "live_bytes"]
    got = [(int(a), d, int(b), int(c)) for a, d, b, c in rows[1:]]
    at = [105, 150, 200, 250, 260, 330, 340, 350, 600]
    live = [1000, 5096, 7144, 6144, 7644, 10644, 9144, 7096, 7196]
    want = [(7300, "CPU", u * 10000, v) for u, v in zip(at, live)]
    want += [(7300, "CUDA:0", u * 10000, v) for u, v in ((160, 8192), (335, 12288), (380, 4096))]
    want += [(7300, "CUDA:1", 7000000, 512)]
    assert got == want
    assert [n for n in os.listdir(tmp_path)] == ["mem.csv"]  # no temporary left


def test_memory_timeline_bad_path(tmp_path):
    proc = run("--memory-timeline", str(tmp_path / "no" / "such" / "mem.csv"), tm())
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "mem.csv" in proc.stderr
