"""profreport --perfetto and --chrome-trace on the synthetic traces (test/fixtures/traces) and on
cuda_app run against the device-side test doubles (fake libcudart + fake CUPTI).

Perfetto: the file is decoded with protoc against report/views/perfetto/perfetto_trace.proto
and replayed (timeline_decode.py): tracks present, slice counts equal to the record counts
of `profreport dump` and to the report's tables, flows from launch to GPU activity, times
equal to the records', interned ids resolved, slices nesting per track.
Chrome: torch.profiler's schema (categories, args, flows, deviceProperties, distributedInfo,
baseTimeNanoseconds), one file per rank."""
import csv
import io
import json
import os
import subprocess
from collections import Counter

import pytest

from conftest import BUILD, PROFREPORT, PROFRUN, ROOT, needs_cuda, profile, report, report_json, TRACES, make_traces
from timeline_decode import Timeline, one
from chrome_rules import (flow_id_problems, half_overlaps, hta_rounding_violations,
                          plugin_cpu_range, speedscope_mismatches)

DOUBLES = os.path.join(BUILD, "test", "doubles")
CUDA_APP = os.path.join(BUILD, "test", "fixtures", "cuda_app")
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
KINETO_CATS = {"python_function", "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver",
               "kernel", "gpu_memcpy", "gpu_memset", "ac2g", "cpu_instant_event"}
OUR_CATS = {"cuda_api", "cuda_library", "comm"}  # our wrappers' calls: not Kineto categories
# the calls HTA takes for launches: HolisticTraceAnalysis, hta/common/trace_symbol_table.py,
# TraceSymbolTable.get_runtime_launch_events_mask (its CUDA, ROCm and MTIA names)
HTA_LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaMemcpyAsync", "cudaMemsetAsync", "hipLaunchKernel",
                "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
                "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"}


@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def t(*parts):
    return os.path.join(TRACES, *parts)


def record_counts(path):
    """Records per type, as `profreport dump` lists them (one file or every *.trace in a dir)."""
    files = [path] if path.endswith(".trace") else [
        os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".trace")]
    c = Counter()
    for f in files:
        out = subprocess.run([PROFREPORT, "dump", f], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines()[1:]:
            parts = line.split()
            if len(parts) > 1:
                c[parts[1]] += 1
    return c


def perfetto(tmp_path, *inputs):
    out = str(tmp_path / "run.pftrace")
    report(list(inputs), "--perfetto", out)
    return Timeline(out)


def chrome(tmp_path, *inputs, name="run.json"):
    """Writes --chrome-trace tmp_path/name; returns the file written (one group):
    NAME.pt.trace.json, the pattern TensorBoard's plugin lists."""
    out = str(tmp_path / name)
    report(list(inputs), "--chrome-trace", out)
    written = out[:-len(".json")] + ".pt.trace.json"
    assert os.path.exists(written), os.listdir(tmp_path)
    return written


def cpu_slices(tl):
    return [s for u in tl.tracks if tl.kind(u) == "thread" for s in tl.slices(u)]


def stream_tracks(tl):
    return [u for u in tl.named("GPU ") if " stream " in one(tl.tracks[u], "name")]


# ---- Perfetto ----


def test_perfetto_gpu_tracks_counts_and_times(tmp_path):
    tl = perfetto(tmp_path, t("gpu"))
    rep = report_json(t("gpu"))
    recs = record_counts(t("gpu"))
    procs = [u for u in tl.tracks if tl.kind(u) == "process"]
    assert len(procs) == 1
    proc = one(tl.tracks[procs[0]], "process")
    assert one(proc, "pid") == 7000 and one(proc, "process_name") == "python3 train.py"
    threads = [one(tl.tracks[u], "thread") for u in tl.tracks if tl.kind(u) == "thread"]
    assert [(one(d, "pid"), one(d, "thread_name")) for d in threads] == [(7000, "MainThread")]
    # One track per device under the process, one per stream under the device.
    devices = [u for u in tl.named("GPU ") if " stream " not in one(tl.tracks[u], "name")]
    assert [one(tl.tracks[u], "name") for u in devices] == ["GPU 0"]
    assert tl.parent(devices[0]) == procs[0]
    streams = stream_tracks(tl)
    assert sorted(one(tl.tracks[u], "name") for u in streams) == [
        "GPU 0 stream 13", "GPU 0 stream 14", "GPU 0 stream 7"]
    assert all(tl.parent(u) == devices[0] for u in streams)
    gpu = [s for u in streams for s in tl.slices(u)]
    # Every GPU record is a slice; kernels by name and total time as the --kernels table says.
    assert len(gpu) == recs["GPU_KERNEL"] + recs["GPU_MEMCPY"] + recs["GPU_MEMSET"] == 9
    for row in rep["gpu_kernels"]:
        mine = [s for s in gpu if s[0] == row["name"]]
        assert len(mine) == row["calls"], row["name"]
        assert sum(e - b for _, b, e, _ in mine) == row["total_ns"]
    copies = [s for s in gpu if s[0].startswith("Memcpy")]
    assert sorted(s[0] for s in copies) == ["Memcpy DtoH (Device -> Pinned)",
                                           "Memcpy HtoD (Pageable -> Device)"]
    assert sorted(s[3]["args"]["bytes"] for s in copies) == [2048, 4096]
    # The CPU side: every API_CALL and every CUPTI API call is a slice of the thread.
    assert len(cpu_slices(tl)) == recs["API_CALL"] + recs["GPU_API"]


def test_perfetto_flows_link_each_gpu_record_to_its_launch(tmp_path):
    tl = perfetto(tmp_path, t("gpu"))
    rep = report_json(t("gpu"))
    launches = Counter(f for s in cpu_slices(tl) for f in s[3]["flows"])
    assert launches and max(launches.values()) == 1, "one launch per flow id"
    gpu = [s for u in stream_tracks(tl) for s in tl.slices(u)]
    linked = [s for s in gpu if s[3]["ends"] and s[3]["ends"][0] in launches]
    # The fixture's one kernel whose correlation no call has stays unlinked, as the report says.
    assert len(gpu) - len(linked) == rep["gpu_unattributed_kernels"] == 1
    # The launch began before the work it caused.
    begin = {f: s[1] for s in cpu_slices(tl) for f in s[3]["flows"]}
    assert all(begin[s[3]["ends"][0]] <= s[1] for s in linked)


@needs_cuda
def test_perfetto_flows_with_the_cuda_doubles(tmp_path):
    if not os.path.exists(CUDA_APP) or not os.path.exists(os.path.join(DOUBLES, "libcupti.so.13")):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures`")
    out = tmp_path / "prof"
    env = dict(os.environ, LD_LIBRARY_PATH=DOUBLES, FAKE_CUDA_KERNEL_NS="5000000")
    subprocess.run([PROFRUN, "--no-report", "-o", str(out), "--", CUDA_APP], env=env,
                   check=True, capture_output=True, timeout=120)
    rep = report_json(out)
    tl = perfetto(tmp_path, out)
    gpu = [s for u in stream_tracks(tl) for s in tl.slices(u)]
    n_kernels = sum(r["calls"] for r in rep["gpu_kernels"])
    n_copies = sum(r["calls"] for r in rep["gpu_copies"])
    n_sets = sum(r["calls"] for r in rep["gpu_sets"])
    assert n_kernels > 0 and n_copies > 0 and n_sets > 0
    assert len(gpu) == n_kernels + n_copies + n_sets
    launches = {f: s for s in cpu_slices(tl) for f in s[3]["flows"]}
    assert all(s[3]["ends"] and s[3]["ends"][0] in launches for s in gpu), \
        "a GPU record without the launch that caused it"
    # no arrow to nowhere: cuda_app's failed launch and its graph launches that made no
    # GPU record (the doubles write none) begin none
    ended = {f for s in gpu for f in s[3]["ends"]}
    assert set(launches) == ended, sorted(launches[f][0] for f in set(launches) - ended)
    assert rep["gpu_unattributed_kernels"] == 0
    kernel_launchers = Counter(launches[s[3]["ends"][0]][0] for s in gpu
                               if not s[0].startswith(("Memcpy", "Memset")))
    assert set(kernel_launchers) <= {"__cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernelExC",
                                     "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
                                     "cuLaunchKernel", "cuLaunchKernelEx"}, kernel_launchers


def test_perfetto_python_ops_nvtx_and_memory(tmp_path):
    # Python spans: one slice per PY_SPAN, named as torch.profiler names them.
    tl = perfetto(tmp_path, t("py"))
    spans = cpu_slices(tl)
    assert len(spans) == record_counts(t("py"))["PY_SPAN"] > 0
    assert all("(" in s[0] and "): " in s[0] for s in spans if not s[0].startswith("<"))
    # Ops: per name as many slices as the --ops table's calls, shapes as an annotation.
    tl = perfetto(tmp_path, t("torch"))
    ops = Counter(s[0] for s in cpu_slices(tl))
    rep = report_json(t("torch"))
    for row in rep["ops"]:
        assert ops[row["name"]] == row["calls"], row["name"]
    assert sum(ops[n] for n in {r["name"] for r in rep["ops"]}) == \
        record_counts(t("torch"))["TORCH_OP"]
    shaped = [s for s in cpu_slices(tl) if "shapes" in s[3]["args"]]
    rep_shapes = report_json(t("torch"), "--group-by-shape")
    assert len(shaped) == sum(r["calls"] for r in rep_shapes["ops"] if r["shapes"])
    # NVTX ranges: on an "NVTX" track under their thread, counts as the actions table's.
    tl = perfetto(tmp_path, t("nvtx"))
    nvtx = [u for u in tl.named("NVTX")]
    assert nvtx and all(tl.kind(tl.parent(u)) == "thread" for u in nvtx)
    names = Counter(s[0] for u in nvtx for s in tl.slices(u))
    rep = report_json(t("nvtx"))
    for row in rep["actions"]:
        assert names[row["name"]] == row["calls"], row["name"]
    # Memory: a counter track per device whose values are --memory-timeline's.
    tl = perfetto(tmp_path, t("torchmem"))
    csv_path = tmp_path / "mem.csv"
    report([t("torchmem")], "--memory-timeline", str(csv_path))
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    counters = [u for u in tl.tracks if tl.kind(u) == "counter"]
    assert counters
    for u in counters:
        dev = one(tl.tracks[u], "name").rsplit(" ", 1)[1]
        values = [e["value"] for e in tl.events[u]]
        want = [int(r["live_bytes"]) for r in rows if r["device"] == dev]
        assert max(values) == max(want) and values[-1] == want[-1], dev


def test_perfetto_ranks_and_truncated_input(tmp_path):
    tl = perfetto(tmp_path, t("run"))
    names = sorted(one(one(tl.tracks[u], "process"), "process_name")
                   for u in tl.tracks if tl.kind(u) == "process")
    assert len(names) == 2 and names[0].endswith("[rank 0]") and names[1].endswith("[rank 1]")
    # A trace cut off mid-record exports everything up to the cut.
    out = tmp_path / "cut.pftrace"
    proc = report([t("bad", "truncated.trace")], "--perfetto", str(out))
    assert "warning" in proc.stderr
    whole = report_json(t("run", "rank0.trace"))
    tl = Timeline(str(out))
    got = len(cpu_slices(tl))
    assert 0 < got == record_counts(t("bad", "truncated.trace"))["API_CALL"]
    assert got < sum(r["calls"] for r in whole["api"])


def test_perfetto_unwritable_path_fails_cleanly(tmp_path):
    proc = subprocess.run([PROFREPORT, "--perfetto", str(tmp_path / "no" / "x.pftrace"), t("gpu")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "cannot create" in proc.stderr
    proc = subprocess.run([PROFREPORT, "--perfetto", "", t("gpu")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "wants a file name" in proc.stderr


# ---- Chrome / Kineto JSON ----


def load(path):
    with open(path) as f:
        return json.load(f)


def spans(doc):
    """The X events that stand for records: all but the one "[process] ..." span that a file
    without CPU ops gets for the TensorBoard plugin (see test_chrome_plugin_overview...)."""
    return [e for e in doc["traceEvents"]
            if e.get("ph") == "X" and not e["name"].startswith("[process] ")]


def check_schema(doc):
    assert doc["schemaVersion"] == 1
    assert isinstance(doc["deviceProperties"], list)
    assert set(doc["distributedInfo"]) >= {"rank", "world_size"}
    assert isinstance(doc["baseTimeNanoseconds"], int) and doc["displayTimeUnit"] == "ms"
    for e in doc["traceEvents"]:
        assert {"ph", "name", "pid"} <= set(e), e
        if e["ph"] == "M":
            continue
        assert e["cat"] in KINETO_CATS | OUR_CATS, e
        assert isinstance(e["ts"], (int, float)) and "tid" in e
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["args"], dict)
        if e["cat"] in GPU_CATS:
            assert {"device", "stream", "correlation", "External id"} <= set(e["args"]), e
            assert e["pid"] == e["args"]["device"] and e["tid"] == e["args"]["stream"]
        if e["cat"] in ("cuda_runtime", "cuda_driver"):
            assert {"correlation", "External id", "cbid"} <= set(e["args"]), e
        if e["cat"] == "cpu_op":
            assert "External id" in e["args"]
        if e["cat"] == "ac2g":
            assert e["ph"] in ("s", "f") and "id" in e
    # what HTA, speedscope and the TensorBoard plugin need of every file (chrome_rules.py)
    assert hta_rounding_violations(doc["traceEvents"]) == []
    assert half_overlaps(doc["traceEvents"]) == []
    assert flow_id_problems(doc["traceEvents"])[0] == []


def test_chrome_gpu_schema_counts_and_flows(tmp_path):
    doc = load(chrome(tmp_path, t("gpu")))
    check_schema(doc)
    rep = report_json(t("gpu"))
    evs = doc["traceEvents"]
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert len(kernels) == sum(r["calls"] for r in rep["gpu_kernels"])
    for row in rep["gpu_kernels"]:
        mine = [e for e in kernels if e["name"] == row["name"]]
        assert len(mine) == row["calls"]
        # whole microseconds: each end rounded to the nearest, at most 1 us off per kernel
        assert abs(sum(e["dur"] for e in mine) * 1000 - row["total_ns"]) <= 1000 * len(mine)
    assert len([e for e in evs if e.get("cat") == "gpu_memcpy"]) == 2
    assert len([e for e in evs if e.get("cat") == "gpu_memset"]) == 1
    runtime = {e["args"]["correlation"] for e in evs
               if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    gpu = [e for e in evs if e.get("cat") in GPU_CATS]
    assert sum(e["args"]["correlation"] not in runtime for e in gpu) == \
        rep["gpu_unattributed_kernels"]
    starts = {e["id"]: e for e in evs if e.get("ph") == "s"}
    ends = [e for e in evs if e.get("ph") == "f"]
    # one arrow per launch: the activity of no known launch has none (no end from nowhere)
    assert all(e["bp"] == "e" for e in ends)
    assert len(ends) == sum(e["id"] in starts for e in ends) == \
        len(gpu) - rep["gpu_unattributed_kernels"]
    dev = doc["deviceProperties"]
    assert [(d["id"], d["name"], d["numSms"], d["computeMajor"]) for d in dev] == [
        (g["device"], g["name"], g["sm_count"], int(g["compute_capability"][0]))
        for g in rep["gpu_devices"]]
    assert doc["distributedInfo"] == {"rank": 0, "world_size": 1}
    # ts are microseconds since baseTimeNanoseconds (META start_realtime_ns here).
    meta = rep["processes"][0]["meta"]
    assert doc["baseTimeNanoseconds"] == int(meta["start_realtime_ns"])


def test_chrome_one_file_per_rank(tmp_path):
    report([t("run")], "--chrome-trace", str(tmp_path / "run.json"))
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".json"))
    assert files == ["run.rank0.pt.trace.json", "run.rank1.pt.trace.json"]
    for r, f in enumerate(files):
        doc = load(str(tmp_path / f))
        check_schema(doc)
        assert doc["distributedInfo"]["rank"] == r
        pids = {e["pid"] for e in doc["traceEvents"] if e.get("cat") == "cuda_api"}
        assert len(pids) == 1
        assert len(spans(doc)) == record_counts(t("run", "rank%d.trace" % r))["API_CALL"]


def test_chrome_truncated_input_exports_up_to_the_cut(tmp_path):
    out = str(tmp_path / "cut.json")
    proc = report([t("bad", "truncated.trace")], "--chrome-trace", out)
    assert "truncated" in proc.stderr
    doc = load(str(tmp_path / "cut.pt.trace.json"))
    check_schema(doc)
    assert len(spans(doc)) == record_counts(t("bad", "truncated.trace"))["API_CALL"] > 0


def test_chrome_ops_python_annotations_memory(tmp_path):
    doc = load(chrome(tmp_path, t("torch")))
    check_schema(doc)
    rep = report_json(t("torch"))
    ops = Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") in ("cpu_op",
                                                                            "user_annotation"))
    for row in rep["ops"]:
        assert ops[row["name"]] == row["calls"], row["name"]
    shaped = [e for e in doc["traceEvents"] if "Input Dims" in e.get("args", {})]
    for e in shaped:
        assert len(e["args"]["Input Dims"]) == len(e["args"]["Input type"])
        assert all(isinstance(d, list) for d in e["args"]["Input Dims"])
    doc = load(chrome(tmp_path, t("py"), name="py.json"))
    check_schema(doc)
    py = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    assert len(py) == record_counts(t("py"))["PY_SPAN"]
    doc = load(chrome(tmp_path, t("torchmem"), name="mem.json"))
    check_schema(doc)
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    assert mem and all({"Device Type", "Device Id", "Bytes", "Total Allocated",
                        "Total Reserved", "Addr"} <= set(e["args"]) for e in mem)


def test_chrome_field_names_match_torch_profiler(tmp_path):
    # Debian's torch 1.13 (CPU, no Kineto) writes the legacy schema: our spans carry every
    # key its events have, and its events' phases are ours.
    script = ("import torch\nfrom torch.profiler import profile, ProfilerActivity\n"
              "with profile(activities=[ProfilerActivity.CPU]) as p:\n"
              "    torch.nn.Linear(4, 2)(torch.randn(3, 4)).sum().backward()\n"
              "p.export_chrome_trace(%r)\n" % str(tmp_path / "torch.json"))
    proc = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0 and "No module named 'torch'" in proc.stderr:
        pytest.skip("no torch for /usr/bin/python3")
    assert proc.returncode == 0, proc.stderr
    theirs = load(str(tmp_path / "torch.json"))
    events = theirs["traceEvents"] if isinstance(theirs, dict) else theirs
    their_keys = set().union(*(set(e) for e in events if e.get("ph") == "X"))
    ours = load(chrome(tmp_path, t("torch")))["traceEvents"]
    for e in ours:
        if e.get("ph") == "X":
            assert their_keys <= set(e), their_keys - set(e)
    assert {e["ph"] for e in events} <= {e["ph"] for e in ours}


def test_lightning_actions_and_python_of_a_real_run(tmp_path):
    # test/workloads/lightning_loop.py with the stand-in for Lightning's profiler package
    # (see test_lightning.py), profiled: its actions on "Actions" tracks under the threads
    # that ran them, as many per name as the report's actions table; its Python calls above
    # the span threshold on the thread tracks, one per PY_SPAN record.
    out = tmp_path / "p"
    env = {"PYTHONPATH": os.path.join(ROOT, "test", "doubles", "lightning_standin")}
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads", "lightning_loop.py"),
             "3", "4"], out, env=env)
    rep = report_json(out)
    made = {a["name"]: a["calls"] for a in rep["actions"] if a["source"] == "lightning"}
    assert made["run_training_batch"] == 12
    tl = perfetto(tmp_path, out)
    actions = tl.named("Actions")
    assert actions and all(tl.kind(tl.parent(u)) == "thread" for u in actions)
    assert Counter(s[0] for u in actions for s in tl.slices(u)) == Counter(made)
    assert len(cpu_slices(tl)) == record_counts(str(out))["PY_SPAN"] > 0
    doc = load(chrome(tmp_path, out))
    check_schema(doc)
    ann = Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") == "user_annotation")
    # the training steps (Lightning's batches) as ProfilerStep#N, the actions by name
    steps = {k: v for k, v in ann.items() if k.startswith("ProfilerStep#")}
    assert sorted(steps) == sorted("ProfilerStep#%d" % i for i in range(1, 13))
    assert ann - Counter(steps) == Counter(made)


def test_perfetto_flows_from_forward_ops_to_their_backward(tmp_path):
    """A real CPU training loop (Debian's torch): each backward function (AddmmBackward0,
    ...) ends a flow that a forward op with its sequence number began, earlier."""
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    out = tmp_path / "p"
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                              "torch_actions_burn.py")],
            out, env={"PROF_PYTHON": "0"}, timeout=300)
    tl = perfetto(tmp_path, out)
    cpu = cpu_slices(tl)
    starts = {}
    for s in cpu:
        for f in s[3]["flows"]:
            if f >> 63:
                starts.setdefault(f, []).append(s)
    ends = [(s, f) for s in cpu for f in s[3]["ends"] if f >> 63]
    backward = [s for s in cpu if s[0].endswith("Backward0") and ":" not in s[0]]
    assert backward and len(ends) == len(backward)
    assert all(f in starts and min(b[1] for b in starts[f]) <= s[1] for s, f in ends)
    assert {s[0] for s, _ in ends} == {s[0] for s in backward}
    # One id per arrow: one start (many forward ops share a sequence number: the last of
    # them, the one that made autograd's node, begins it) and one end.
    assert all(len(v) == 1 for v in starts.values()), \
        Counter(len(v) for v in starts.values())
    assert len({f for _, f in ends}) == len(ends)
    pairs = Counter((starts[f][0][0], s[0]) for s, f in ends)
    assert set(pairs) == {("aten::addmm", "AddmmBackward0"), ("aten::relu", "ReluBackward0"),
                          ("aten::t", "TBackward0"),
                          ("aten::log_softmax", "LogSoftmaxBackward0"),
                          ("aten::nll_loss_nd", "NllLossBackward0")}, pairs
    # every slice says what it is
    assert {tuple(s[3]["categories"]) for s in cpu} <= {("cpu_op",), ("user_annotation",),
                                                       ("python",), ("step",)}


@needs_cuda
def test_perfetto_gpu_busy_counter_with_the_cuda_doubles(tmp_path):
    """A "GPU d busy %" counter track per device: 10 ms bins of kernel time, at most 100,
    whose sum is the kernels' time (no two kernels overlap in this program)."""
    if not os.path.exists(CUDA_APP) or not os.path.exists(os.path.join(DOUBLES, "libcupti.so.13")):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures`")
    out = tmp_path / "prof"
    env = dict(os.environ, LD_LIBRARY_PATH=DOUBLES, FAKE_CUDA_KERNEL_NS="5000000")
    subprocess.run([PROFRUN, "--no-report", "-o", str(out), "--", CUDA_APP], env=env,
                   check=True, capture_output=True, timeout=120)
    rep = report_json(out)
    tl = perfetto(tmp_path, out)
    busy = [u for u in tl.tracks if tl.kind(u) == "counter"
            and one(tl.tracks[u], "name", "").endswith("busy %")]
    assert len(busy) == 1
    values = [e["value"] or 0 for e in tl.events[busy[0]]]
    assert values and max(values) > 0 and all(0 <= v <= 100 for v in values)
    kernel_ns = sum(r["total_ns"] for r in rep["gpu_kernels"])
    # each value is a whole percent of a 10 ms bin: at most 0.1 ms short per bin
    assert abs(sum(values) * 100000 - kernel_ns) <= 100000 * len(values), (values, kernel_ns)


# ---- what the readers of the Kineto JSON apply (chrome_rules.py), on real runs ----


def torch_run(tmp_path, script="torch_train.py", env=None):
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    out = tmp_path / "p"
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads", script)], out,
            env=env, timeout=300)
    return out


def test_chrome_a_torch_run_reads_whole_in_hta_speedscope_and_the_plugin(tmp_path):
    """torch_train.py (record_function scopes, DataLoader, a second thread), Python calls of
    10 us and more on the timeline. HTA: no event whose ceiled start passes its floored end
    (214 on such a run before). speedscope: no two spans of a thread half-overlap — the
    scope record_function opens begins inside the Python call that opens it (7 before) —
    and a Python function's args are the same on every call (its frame key). The plugin:
    a CPU range, memory totals never negative."""
    out = torch_run(tmp_path, env={"PROF_PY_SPAN_US": "10"})
    report([out], "--chrome-trace", str(tmp_path / "k"))
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".json"))
    assert files and all(f.endswith(".pt.trace.json") for f in files), files
    for f in files:
        doc = load(str(tmp_path / f))
        check_schema(doc)  # the HTA rule, nesting and flow ids of every file
        evs = doc["traceEvents"]
        assert all(isinstance(e["ts"], int) and isinstance(e.get("dur", 0), int)
                   for e in evs if e["ph"] != "M")
        args = {}
        for e in evs:
            if e.get("cat") == "python_function":
                args.setdefault(e["name"], set()).add(json.dumps(e["args"], sort_keys=True))
        assert args and all(len(v) == 1 for v in args.values())
        assert all(e["args"]["Total Allocated"] >= 0 and e["args"]["Total Reserved"] >= 0
                   for e in evs if e.get("name") == "[memory]")
    doc = load(str(tmp_path / files[0]))
    assert [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    scopes = [e for e in doc["traceEvents"] if e.get("cat") == "user_annotation"
              and e["name"].startswith("enumerate(DataLoader)")]
    assert scopes, "no record_function scope in the run"
    assert plugin_cpu_range(doc["traceEvents"]) is not None
    # --chrome-ns, for speedscope: its importer, replayed, ends every frame it opened in
    # order (whole microseconds tie many ends and starts, which it mis-pairs); the same
    # events, nested, Python calls merged.
    ns = tmp_path / "ns"
    ns.mkdir()
    report([out], "--chrome-ns", "--chrome-trace", str(ns / "k.json"))
    doc_ns = load(str(ns / files[0]))
    evs = doc_ns["traceEvents"]
    assert len([e for e in evs if e["ph"] == "X"]) == \
        len([e for e in doc["traceEvents"] if e["ph"] == "X"])
    assert any(not float(e["ts"]).is_integer() for e in evs if e["ph"] == "X")
    assert half_overlaps(evs) == []
    assert speedscope_mismatches(evs) == 0


@needs_cuda
def test_chrome_cuda_doubles_kernels_flows_and_the_plugin_overview(tmp_path):
    """cuda_app on the device doubles (a C program: CUDA calls and kernels, no CPU op).
    Every kernel carries Kineto's grid, block, registers per thread and shared memory; each
    launch has one arrow to its activity; HTA's rounding rule holds; the plugin, which takes
    its one step from the CPU events (cpu_op) and computed a total of -1.8e19 us without
    them, gets a [process] cpu_op over the run: its step holds every kernel."""
    if not os.path.exists(CUDA_APP) or not os.path.exists(os.path.join(DOUBLES, "libcupti.so.13")):
        pytest.fail("CUDA fixtures not built: run `make cuda-fixtures`")
    out = tmp_path / "prof"
    env = dict(os.environ, LD_LIBRARY_PATH=DOUBLES, FAKE_CUDA_KERNEL_NS="700")
    subprocess.run([PROFRUN, "--no-report", "-o", str(out), "--", CUDA_APP], env=env,
                   check=True, capture_output=True, timeout=120)
    rep = report_json(out)
    doc = load(chrome(tmp_path, out))
    check_schema(doc)
    evs = doc["traceEvents"]
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert len(kernels) == sum(r["calls"] for r in rep["gpu_kernels"]) > 0
    for k in kernels:
        a = k["args"]
        assert len(a["grid"]) == 3 and len(a["block"]) == 3 and min(a["grid"] + a["block"]) >= 1
        assert a["registers per thread"] > 0 and a["shared memory"] >= 0
    gpu = [e for e in evs if e.get("cat") in GPU_CATS]
    problems, arrows = flow_id_problems(evs, "ac2g")
    assert problems == [] and arrows == len(gpu) - rep["gpu_unattributed_kernels"] > 0
    # HTA finds launches by name (critical path, queue length, kernel launch stats): every
    # runtime call with an arrow to a kernel has a name of its list, though CUPTI 13 names
    # the runtime's launch __cudaLaunchKernel (kept in our tables); but for the cooperative
    # launch, of which HTA knows no name (Kineto writes it as CUPTI names it, as we do)
    kernel_corr = {k["args"]["correlation"] for k in kernels}
    arrows = {e["id"] & 0xffffffff for e in evs if e.get("ph") == "s"}
    launchers = Counter(e["name"] for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver")
                        and e["args"]["correlation"] in kernel_corr & arrows)
    assert launchers and set(launchers) - {"cudaLaunchCooperativeKernel"} <= HTA_LAUNCHES, \
        launchers
    assert any(r["name"] == "__cudaLaunchKernel" for r in rep["api"]), rep["api"]
    step = plugin_cpu_range(evs)
    assert step is not None
    whole = [e for e in evs if e.get("ph") == "X" and e["name"].startswith("[process] ")]
    assert len(whole) == 1 and whole[0]["cat"] == "cpu_op"
    assert all(step[0] <= e["ts"] and e["ts"] + e["dur"] <= step[1] for e in gpu)
    busy = sum(e["dur"] for e in kernels)
    assert 0 < busy <= step[1] - step[0]
    # the device as the run's own driver describes it (the driver double's H100, read by
    # cupti_sub.c at CUPTI's new-context callback): deviceProperties and every kernel's
    # occupancy (a review found both empty on every doubles run: no libcuda there)
    assert [(d["id"], d["name"], d["numSms"], d["computeMajor"], d["computeMinor"])
            for d in doc["deviceProperties"]] == [
        (0, "NVIDIA H100 80GB HBM3 (test double)", 132, 9, 0)]
    assert rep["gpu_devices"][0]["global_memory_bytes"] == 85520809984
    for k in kernels:
        a = k["args"]
        blocks = a["grid"][0] * a["grid"][1] * a["grid"][2]
        assert abs(a["blocks per SM"] - blocks / 132) < 1e-3, a
        assert 0 <= a["est. achieved occupancy %"] <= 100, a


def test_chrome_kernel_occupancy_from_the_device(tmp_path):
    """Where the trace has the device (GPU_DEVICE: capability, SMs), kernels also carry blocks
    per SM (grid blocks over SMs), warps per SM and an estimated achieved occupancy in 0-100;
    deviceProperties lists the devices."""
    doc = load(chrome(tmp_path, t("gpu")))
    # the plugin reads a device's entry at the index of its id
    assert [d["id"] for d in doc["deviceProperties"]] == list(range(len(doc["deviceProperties"])))
    dev = {d["id"]: d for d in doc["deviceProperties"] if "numSms" in d}
    assert dev
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    known = [k for k in kernels if "est. achieved occupancy %" in k["args"]]
    assert known, kernels[0]
    for k in known:
        a = k["args"]
        blocks = a["grid"][0] * a["grid"][1] * a["grid"][2]
        assert abs(a["blocks per SM"] - blocks / dev[a["device"]]["numSms"]) < 1e-3
        assert 0 <= a["est. achieved occupancy %"] <= 100


def test_chrome_file_names_for_the_plugin(tmp_path):
    """TensorBoard's plugin lists *.pt.trace.json: a name given with that ending is kept, a
    folder gets one file per rank."""
    report([t("gpu")], "--chrome-trace", str(tmp_path / "a.pt.trace.json"))
    report([t("gpu")], "--chrome-trace", str(tmp_path / "b"))
    folder = tmp_path / "ranks"
    folder.mkdir()
    report([t("run")], "--chrome-trace", str(folder))
    assert sorted(os.listdir(tmp_path)) == ["a.pt.trace.json", "b.pt.trace.json", "ranks"]
    assert sorted(os.listdir(folder)) == ["rank0.pt.trace.json", "rank1.pt.trace.json"]


def test_help_sends_speedscope_to_chrome_ns():
    """The default --chrome-trace (whole us) ties many ends and starts, which speedscope's
    importer mis-pairs (thousands of warnings, a RangeError on a DDP rank): --help names
    speedscope only with --chrome-ns."""
    text = subprocess.run([PROFREPORT, "--help"], capture_output=True, text=True,
                          check=True).stdout
    entries, cur = {}, None
    for line in text.splitlines():
        if line.startswith("      --"):
            cur = line.split()[0]
            entries[cur] = ""
        if cur:
            entries[cur] += line + "\n"
    trace = entries["--chrome-trace"]
    assert "speedscope" not in trace or "--chrome-ns" in trace, trace
    assert "speedscope" in entries["--chrome-ns"]
