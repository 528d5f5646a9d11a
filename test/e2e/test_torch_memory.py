"""PyTorch CPU memory: profrun's CPU Mem / Self CPU Mem per op against torch's on
test/workloads/torch_memory.py (main thread, fixed shapes).

How torch attributes memory (torch/autograd/profiler.py, _parse_kineto_results, and
profiler_util.py): with profile_memory=True every c10 CPU allocation and free (and every
CPU block another allocator reports, e.g. shared-memory storage) is a memory event; an
op's CPU Mem is the sum of the events whose timestamp lies in the op's [start, end]
window, its Self CPU Mem that minus its children's CPU Mem. torch.profiler (Kineto) keeps
microsecond-truncated times and checks no thread, so an event in the same microsecond as
an op boundary also lands in the neighbouring op, and a child whose truncated window
touches its parent's allocation takes it from the parent's self figure: its numbers move
from run to run (seen: aten::addmm CPU Mem 212992 instead of 81920). torch's legacy
profiler applies the same definition on exact times: an event belongs to the ops open on
its thread when it happens (frees of blocks allocated elsewhere count, as negative bytes).
test/workloads/torch_reference.py --exact runs it, and the comparison below is exact and
deterministic, op by op, for every op (test_torch_exact.py does the same on more
scripts). profrun attributes the same way, in process, from the allocator wrappers.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, ROOT, profile, report_json

PYTHON = "/usr/bin/python3"
WORKLOADS = os.path.join(ROOT, "test", "workloads")
SCRIPT = os.path.join(WORKLOADS, "torch_memory.py")
CACHE = os.path.join(BUILD, "test", "torch-cache")
ENV = {"PROF_TORCH_CACHE": CACHE}
STEPS = 5
FLOAT = 4

HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")

# torch.profiler with profile_memory=True around a script; dumps name -> [count, self, total].
REFERENCE = r'''
import json, runpy, sys
from torch.profiler import ProfilerActivity, profile
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    runpy.run_path(script, run_name="__main__")
rows = {e.key: [e.count, e.self_cpu_memory_usage, e.cpu_memory_usage]
        for e in prof.key_averages()}
if out == "-":
    print(sorted(k for k in rows if not k.startswith("[")))
else:
    json.dump(rows, open(out, "w"))
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("torch_memory")
    ref_py = tmp / "reference.py"
    ref_py.write_text(REFERENCE)
    ref_json = tmp / "ref.json"
    subprocess.run([PYTHON, str(ref_py), str(ref_json), SCRIPT], check=True,
                   capture_output=True, timeout=300)
    with open(ref_json) as f:
        ref = json.load(f)
    out = tmp / "prof"
    profile([PYTHON, SCRIPT], out, env=ENV, timeout=300)
    rep = report_json(out, "--ops")
    ours = {r["name"]: r for r in rep["ops"]}
    return ref, ours, tmp, ref_py


def test_every_op_matches_torch_exactly(runs):
    _, ours, tmp, _ = runs
    exact = tmp / "exact.json"
    subprocess.run([PYTHON, os.path.join(WORKLOADS, "torch_reference.py"), "--exact",
                    "--memory", str(exact), SCRIPT], check=True, capture_output=True,
                   timeout=300)
    with open(exact) as f:
        ref = json.load(f)
    allocating = [k for k, v in ref.items() if v[1] or v[2]]
    assert len(allocating) >= 7, allocating  # addmm, cat, clamp_min, empty, randn, relu, sum
    for name, (count, self_mem, total_mem) in ref.items():
        row = ours[name]
        assert row["calls"] == count, name
        assert abs(row["self_cpu_mem_bytes"] - self_mem) <= abs(self_mem) // 100, (name, row)
        assert abs(row["cpu_mem_bytes"] - total_mem) <= abs(total_mem) // 100, (name, row)


def test_allocating_ops_by_shape(runs):
    _, ours, _, _ = runs
    for name in ("aten::addmm", "aten::cat", "aten::clamp_min", "aten::relu"):
        # exactly what the shapes dictate (one 64x64 float result per call; cat 128x64)
        want = STEPS * (128 if name == "aten::cat" else 64) * 64 * FLOAT
        assert ours[name]["cpu_mem_bytes"] == want, (name, ours[name])
    # Self is what the shapes say: one 64x64 float result per call (cat: 128x64 + 128x64).
    for name in ("aten::addmm", "aten::clamp_min"):
        assert ours[name]["self_cpu_mem_bytes"] == STEPS * 64 * 64 * FLOAT, name
    assert ours["aten::cat"]["self_cpu_mem_bytes"] == STEPS * 128 * 64 * FLOAT
    assert ours["aten::relu"]["self_cpu_mem_bytes"] == 0  # its child clamp_min allocates


def test_boundary_ops_by_shape(runs):
    _, ours, _, _ = runs
    # aten::empty: empty(256, 64) per step, and randn(64, 64) twice via its empty child.
    expect = STEPS * 256 * 64 * FLOAT + 2 * 64 * 64 * FLOAT
    assert ours["aten::empty"]["self_cpu_mem_bytes"] == expect
    assert ours["aten::empty"]["cpu_mem_bytes"] == expect
    assert ours["aten::randn"]["self_cpu_mem_bytes"] == 0
    assert ours["aten::randn"]["cpu_mem_bytes"] == 2 * 64 * 64 * FLOAT


def test_text_table_and_dump(runs, tmp_path):
    out = tmp_path / "p"
    profile([PYTHON, SCRIPT], out, env=ENV, timeout=300)
    from conftest import report
    text = report(out, "--ops").stdout
    assert "no tensor memory was recorded" not in text
    line = next(l for l in text.splitlines() if l.strip().startswith("aten::addmm"))
    assert "80.00 Kb" in line  # CPU Mem and Self CPU Mem, torch's units
    # Issue 19: a CPU-only run (no CUDA event at all) has no CUDA columns, as torch's table;
    # they held zeros and NaN %.
    header = next(l for l in text.splitlines() if l.strip().startswith("Name "))
    assert header.split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                              "CPU", "total", "CPU", "time", "avg", "CPU", "Mem", "Self", "CPU",
                              "Mem", "#", "of", "Calls"]
    assert "NaN" not in text and "Self CUDA time total" not in text
    assert "(no CUDA events: a CPU-only run, the CUDA columns left out)" in text
    # The HTML op table: the same, with the CPU Mem columns of the text one.
    page = tmp_path / "r.html"
    report(out, "--html", str(page))
    ops = page.read_text().split('id="t-ops"')[1].split("</thead>")[0]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", ops)
    assert heads == ["Name", "Calls", "Self CPU", "CPU total", "CPU Mem", "Self CPU Mem"]


def test_dump_prints_torch_mem(tmp_path):
    out = tmp_path / "p"
    profile([PYTHON, SCRIPT], out, env=ENV, timeout=300)
    from conftest import PROFREPORT, trace_files
    proc = subprocess.run([PROFREPORT, "dump", trace_files(out)[0]], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    mem = [l for l in proc.stdout.splitlines() if " TORCH_MEM " in l]
    assert mem and "bytes=16384" in "\n".join(mem)


def dump_words(out, kind):
    """The key=value words of every `kind` record of the one trace in out."""
    from conftest import PROFREPORT, trace_files
    proc = subprocess.run([PROFREPORT, "dump", trace_files(out)[0]], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [dict(w.split("=", 1) for w in l.split() if "=" in w)
            for l in proc.stdout.splitlines() if " %s " % kind in l]


def test_memory_profiling_program_unchanged(runs, tmp_path):
    """torch.profiler(profile_memory=True) under profrun: same output, exit 0. Its CPU
    allocator then reports every block through c10::reportMemoryUsageToProfiler, the
    function the CUDA caching allocator calls: each report we recorded is a block the
    alloc_cpu/free_cpu wrappers saw (same address and size), so the interposed function
    reads its arguments right; the reporter does not count them twice."""
    _, _, _, ref_py = runs
    plain = subprocess.run([PYTHON, str(ref_py), "-", SCRIPT], capture_output=True, text=True,
                           timeout=300)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "p"
    prof = profile([PYTHON, str(ref_py), "-", SCRIPT], out, env=ENV, timeout=300)
    assert prof.returncode == 0
    assert prof.stdout == plain.stdout
    cpu_events = [(w["ptr"], int(w["bytes"])) for w in dump_words(out, "TORCH_MEM")]
    cpu = set(cpu_events)
    reports = dump_words(out, "TORCH_DEV_MEM")
    assert len(reports) >= STEPS * 4  # addmm, cat, clamp_min, empty per step at least
    for w in reports:
        assert w["device"] == "0:-1", w  # CPU
        assert (w["ptr"], int(w["bytes"])) in cpu, w
    proc = report_json(out)["processes"][0]
    assert proc["torch_device_memory"] == []
    assert proc["torch_memory"]["allocated_bytes"] == sum(b for _, b in cpu_events if b > 0)


CUDA_DOUBLE = os.path.join(ROOT, "test", "doubles", "torch_cuda_allocator.cpp")


@pytest.fixture(scope="module")
def cuda_allocator_double(tmp_path_factory):
    """test/doubles/torch_cuda_allocator.cpp built against Debian's libtorch-dev."""
    if not os.path.isdir("/usr/include/c10"):
        pytest.skip("no c10 headers (Debian's libtorch-dev)")
    exe = tmp_path_factory.mktemp("cuda_alloc") / "torch_cuda_allocator"
    subprocess.run(["c++", "-std=c++17", "-O1", "-o", str(exe), CUDA_DOUBLE, "-lc10"],
                   check=True, capture_output=True, timeout=300)
    return str(exe)


def test_cuda_allocator_reports(cuda_allocator_double, tmp_path):
    """The CUDA caching allocator's reports (a double: no GPU here) become per-device
    memory: peak, totals, the allocator's reserved bytes; and still reach torch's own
    reporter (torch.profiler keeps its CUDA memory columns)."""
    plain = subprocess.run([cuda_allocator_double], capture_output=True, text=True, timeout=60)
    assert plain.stdout == "reports seen: 5\n"
    out = tmp_path / "p"
    prof = profile([cuda_allocator_double], out, env=ENV)
    assert prof.stdout == plain.stdout
    devices = report_json(out)["processes"][0]["torch_device_memory"]
    kib = 1024
    assert [(d["device"], d["peak_bytes"], d["allocated_bytes"], d["freed_bytes"],
             d["live_at_end_bytes"], d["reserved_peak_bytes"]) for d in devices] == [
        ("CUDA:0", 3072 * kib, 3584 * kib, 1024 * kib, 2560 * kib, 4096 * kib),
        ("CUDA:1", 256 * kib, 256 * kib, 0, 256 * kib, 2048 * kib)]
    from conftest import report
    text = report(out).stdout
    assert "CUDA:0: peak 3.00 Mb" in text
    assert "allocator reserved at most 4.00 Mb" in text


def test_memory_peak_real_run(tmp_path):
    """The CPU memory peak under profrun: at least the largest single allocation the
    script makes, reached in a function of the script."""
    out = tmp_path / "p"
    profile([PYTHON, SCRIPT], out, env=ENV, timeout=300)
    from conftest import PROFREPORT, trace_files
    dump = subprocess.run([PROFREPORT, "dump", trace_files(out)[0]], capture_output=True,
                          text=True, timeout=120)
    assert dump.returncode == 0
    sizes = [int(w[6:]) for l in dump.stdout.splitlines() if " TORCH_MEM " in l
             for w in l.split() if w.startswith("bytes=")]
    biggest = max(sizes)
    assert biggest >= 256 * 64 * FLOAT  # torch.empty(256, 64)
    mem = report_json(out)["processes"][0]["torch_memory"]
    assert mem["peak_bytes"] >= biggest
    assert mem["allocated_bytes"] >= mem["peak_bytes"]
    assert mem["peak_python"] is not None
    assert mem["peak_python"]["file"] == SCRIPT
    assert mem["peak_python"]["qualname"] in ("step", "main")


# Enough steps that a 64 KiB ring drained once a second drops most memory records.
LOSSY_STEPS = 2000
# Per step: empty(256, 64), addmm and clamp_min 64x64 each, cat 128x64, sum 1 float.
STEP_BYTES = (256 * 64 + 2 * 64 * 64 + 128 * 64 + 1) * FLOAT
FIGURES = ("peak_bytes", "allocated_bytes", "freed_bytes", "live_at_end_bytes", "allocations",
           "frees")


def memory_from_records(out):
    """The CPU figures the TORCH_MEM records of out's trace give, paired as the report
    pairs them: a free of an unknown block (bytes=0) counts nowhere; live bytes in time
    order; the peak after an allocation."""
    events = sorted((int(w["ticks"]), i, int(w["bytes"]))
                    for i, w in enumerate(dump_words(out, "TORCH_MEM")) if int(w["bytes"]))
    live, peak = 0, None
    for _, _, b in events:
        live += b
        if b > 0 and (peak is None or live > peak):
            peak = live
    allocs = [b for _, _, b in events if b > 0]
    frees = [-b for _, _, b in events if b < 0]
    return {"peak_bytes": peak or 0, "allocated_bytes": sum(allocs), "freed_bytes": sum(frees),
            "live_at_end_bytes": live, "allocations": len(allocs), "frees": len(frees)}


@pytest.fixture(scope="module")
def lossy_runs(tmp_path_factory):
    """The same deterministic workload with a ring large enough to keep every record,
    and with the smallest ring drained once a second."""
    tmp = tmp_path_factory.mktemp("torch_memory_lossy")
    cmd = [PYTHON, SCRIPT, str(LOSSY_STEPS)]
    profile(cmd, tmp / "whole", env=dict(ENV, PROF_RING_KB="65536"), timeout=300)
    profile(cmd, tmp / "lossy", env=dict(ENV, PROF_RING_KB="64", PROF_FLUSH_MS="1000", PROF_RING_WAKE="0"),
            timeout=300)
    return tmp / "whole", tmp / "lossy"


def test_memory_figures_exact_when_records_are_lost(lossy_runs):
    """Issue 18 item 6: peak, allocated, freed, live at end and the counts come from the
    process's own counters (TORCH_MEM_TOTALS), equal to a run that lost nothing, and the
    report says how many records are missing."""
    whole_dir, lossy_dir = lossy_runs
    whole = report_json(whole_dir)["processes"][0]
    lossy = report_json(lossy_dir)["processes"][0]
    assert whole["lost"] == 0 and whole["torch_memory"]["records_lost"] == 0
    assert lossy["lost"] > 0 and lossy["torch_memory"]["records_lost"] > 0
    assert whole["torch_memory"]["exact"] and lossy["torch_memory"]["exact"]

    def figures(m):
        return {k: m[k] for k in FIGURES}

    want = {"peak_bytes": STEP_BYTES + 2 * 64 * 64 * FLOAT,  # one step's tensors, a and w
            "allocated_bytes": LOSSY_STEPS * STEP_BYTES + 2 * 64 * 64 * FLOAT,
            "freed_bytes": LOSSY_STEPS * STEP_BYTES + 2 * 64 * 64 * FLOAT,
            "live_at_end_bytes": 0, "allocations": 5 * LOSSY_STEPS + 2,
            "frees": 5 * LOSSY_STEPS + 2}
    assert figures(whole["torch_memory"]) == want
    assert figures(whole["torch_memory"]) == memory_from_records(whole_dir)  # counters = records
    assert figures(lossy["torch_memory"]) == want
    kept = memory_from_records(lossy_dir)  # what the records alone would have said
    assert kept["allocations"] + kept["frees"] + lossy["torch_memory"]["records_lost"] == \
        want["allocations"] + want["frees"]
    assert kept != want
    assert whole["torch_device_memory"] == lossy["torch_device_memory"] == []
    from conftest import report
    proc = report(lossy_dir)
    n = lossy["torch_memory"]["records_lost"]
    assert "(%d of %d memory records lost: peak, allocated, freed and live at end are the " \
        "process's own exact counts" % (n, 2 * want["allocations"]) in proc.stdout
    assert "%d of %d CPU tensor memory records lost" % (n, 2 * want["allocations"]) in proc.stderr
    whole_text = report(whole_dir).stdout
    assert "memory records lost" not in whole_text
    assert "peak 160.00 Kb" in whole_text and "peak 160.00 Kb" in proc.stdout


def test_memory_totals_record_in_dump(lossy_runs):
    """The last TORCH_MEM_TOTALS record of the trace holds the figures the report shows."""
    whole_dir, _ = lossy_runs
    totals = dump_words(whole_dir, "TORCH_MEM_TOTALS")
    assert totals and all(t["device"] == "0:-1" for t in totals)
    last = totals[-1]
    mem = report_json(whole_dir)["processes"][0]["torch_memory"]
    assert int(last["allocs"]) == mem["allocations"]
    assert int(last["alloc_bytes"]) == mem["allocated_bytes"]
    assert int(last["free_bytes"]) == mem["freed_bytes"]
    assert int(last["peak"]) == mem["peak_bytes"]
    assert int(last["live"]) == mem["live_at_end_bytes"]


def test_memory_figures_exact_with_many_live_blocks(tmp_path):
    """10,000 blocks alive at once, half made on a second thread, each half freed on the
    other thread: every free finds its block's size (the block table grows from 1,024
    slots as the blocks pile up), so the figures are exact and nothing stays live."""
    script = os.path.join(WORKLOADS, "torch_many_blocks.py")
    out = tmp_path / "p"
    proc = profile([PYTHON, script], out, env=ENV, timeout=300)
    want = int(re.search(r"^bytes (\d+)$", proc.stdout, re.M).group(1))
    mem = report_json(out)["processes"][0]["torch_memory"]
    assert mem["exact"] and mem["records_lost"] == 0
    assert {k: mem[k] for k in FIGURES} == {
        "peak_bytes": want, "allocated_bytes": want, "freed_bytes": want,
        "live_at_end_bytes": 0, "allocations": 10000, "frees": 10000}
    assert {k: mem[k] for k in FIGURES} == memory_from_records(out)
    frees = [w for w in dump_words(out, "TORCH_MEM") if int(w["bytes"]) < 0]
    assert len(frees) == 10000  # none unknown (bytes=0: a free the table did not know)


@pytest.fixture(scope="module")
def alloc_threads(tmp_path_factory):
    """test/workloads/torch_alloc_threads.cpp built against Debian's libc10."""
    if not os.path.isdir("/usr/include/c10"):
        pytest.skip("no libc10 to link against (Debian's libtorch-dev)")
    exe = tmp_path_factory.mktemp("alloc_threads") / "torch_alloc_threads"
    subprocess.run(["c++", "-std=c++17", "-O1", "-pthread", "-o", str(exe),
                    os.path.join(WORKLOADS, "torch_alloc_threads.cpp"), "-lc10"],
                   check=True, capture_output=True, timeout=300)
    return str(exe)


def alloc_threads_sums(stdout):
    """The blocks, bytes and kept bytes torch_alloc_threads printed."""
    return tuple(map(int, re.search(r"^blocks (\d+) bytes (\d+) kept (\d+)$", stdout,
                                    re.M).groups()))


def test_memory_figures_exact_with_threads_at_once(alloc_threads, tmp_path):
    """Four threads make and free CPU blocks at once through c10's allocator (1.6 M blocks,
    then each frees blocks its neighbour kept): the totals, counted under the block table's
    lock, lose no allocation or free to a race, and the peak is the kept blocks' bytes plus
    at most the blocks the threads held at that moment (counted outside the lock, a run
    lost about 10,000 allocations and ended with -18 MB live)."""
    plain = subprocess.run([alloc_threads, "4", "100000"], capture_output=True, text=True,
                           timeout=120)
    blocks, nbytes, kept = alloc_threads_sums(plain.stdout)
    assert blocks == 1600000
    out = tmp_path / "p"
    prof = profile([alloc_threads, "4", "100000"], out, env=ENV, timeout=300)
    assert prof.stdout == plain.stdout
    mem = report_json(out)["processes"][0]["torch_memory"]
    assert mem["exact"]
    assert {k: mem[k] for k in FIGURES if k != "peak_bytes"} == {
        "allocated_bytes": nbytes, "freed_bytes": nbytes, "live_at_end_bytes": 0,
        "allocations": blocks, "frees": blocks}
    # all kept blocks live at once, besides at most four blocks of at most 4 KiB per thread
    assert kept <= mem["peak_bytes"] <= kept + 4 * 4 * 4096


def test_memory_fork_while_threads_allocate(alloc_threads, tmp_path):
    """One thread forks 20 times while three others make and free blocks: the forking
    thread takes the block table's lock first (a child gets the table whole), so neither
    the parent nor a child waits on a lock its fork left held, and each keeps exact
    figures: the parent's 1.2 M blocks, each child's 10 blocks of 1000 bytes."""
    out = tmp_path / "p"
    prof = profile([alloc_threads, "3", "100000", "20"], out, env=ENV, timeout=120)
    blocks, nbytes, _ = alloc_threads_sums(prof.stdout)
    children = {int(pid) for pid in re.findall(r"^child (\d+)$", prof.stdout, re.M)}
    assert blocks == 1200000 and len(children) == 20
    procs = {p["pid"]: p["torch_memory"] for p in report_json(out)["processes"]}
    assert set(procs) - children and children <= set(procs)
    for pid, mem in procs.items():
        want = (10000, 10) if pid in children else (nbytes, blocks)
        assert {k: mem[k] for k in FIGURES} == {
            "peak_bytes": mem["peak_bytes"], "allocated_bytes": want[0], "freed_bytes": want[0],
            "live_at_end_bytes": 0, "allocations": want[1], "frees": want[1]}, pid
        assert mem["exact"] and (pid not in children or mem["peak_bytes"] == 1000)
