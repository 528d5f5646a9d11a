"""PyTorch operators: per-op call counts equal torch.profiler's, on the same job.

test/workloads/torch_train.py (Conv2d, ReLU, Linear, cross-entropy, backward, SGD, a
record_function("my_scope") block, a DataLoader with two forked workers, and one plain
Python thread that runs a few ops) runs under profrun, and again under
test/workloads/torch_reference.py --raw, which wraps it in torch.profiler.profile(CPU) and
dumps name -> count of every operator event it recorded, before its table folds an op into
a parent of the same name by microsecond-truncated times (aten::zero_ 69 in its table, 70
events, on one run here; the table itself is compared in test_torch_exact.py). The
TORCH_OP and TORCH_OP_SHORT records are read straight from the trace files (structs below),
not through profreport.

The one systematic difference: torch.profiler registers thread-local callbacks, which
reach only the threads torch itself starts or hands its state to (autograd, at::launch).
Ops of a plain Python thread are invisible to it; profrun's callback is global and
records them. Every op outside that thread must match exactly; the thread's ops must be
there, on their own thread.
"""
import collections
import json
import os
import struct
import subprocess

import pytest

from conftest import BUILD, ROOT, profile, trace_files

PYTHON = "/usr/bin/python3"
WORKLOADS = os.path.join(ROOT, "test", "workloads")
TRAIN = os.path.join(WORKLOADS, "torch_train.py")
REFERENCE = os.path.join(WORKLOADS, "torch_reference.py")
# One cache for every test of the session: the bridge is built once (a few seconds).
CACHE = os.path.join(BUILD, "test", "torch-cache")

HAVE_TORCH = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")

REC_META, REC_STRING, REC_THREAD, REC_TORCH_OP, REC_TORCH_OP_SHORT = 1, 2, 4, 25, 52
SCOPE_FUNCTION, SCOPE_BACKWARD, SCOPE_USER = 0, 1, 7
TORCH_OP = struct.Struct("<IQQqQBBHI")  # after the 4-byte record header
TORCH_OP_SHORT = struct.Struct("<IQIiBBHI")  # the same op in 32 bytes: duration, no fwd_thread


def read_trace(path):
    """(meta, ops) of one trace file; ops are dicts with names resolved."""
    with open(path, "rb") as f:
        data = f.read()
    off = struct.unpack_from("<H", data, 10)[0]  # file header: header_size
    strings, meta, raw, tid = {}, {}, [], 0
    while off + 4 <= len(data):
        typ, size = struct.unpack_from("<HH", data, off)
        if size < 4 or off + size > len(data):
            break
        if typ == REC_STRING:
            sid = struct.unpack_from("<I", data, off + 4)[0]
            strings[sid] = data[off + 8:off + size].split(b"\0")[0].decode()
        elif typ == REC_META:
            key, value = data[off + 4:off + size].split(b"\0")[:2]
            meta.setdefault(key.decode(), value.decode())
        elif typ == REC_THREAD:
            tid = struct.unpack_from("<I", data, off + 4)[0]
        elif typ == REC_TORCH_OP:
            raw.append((tid,) + TORCH_OP.unpack_from(data, off + 4))
        elif typ == REC_TORCH_OP_SHORT:
            name, start, dur, seq, scope, depth, res, shapes = \
                TORCH_OP_SHORT.unpack_from(data, off + 4)
            raw.append((tid, name, start, start + dur, seq, 0, scope, depth, res, shapes))
        off += size
    ops = []
    for tid, name, start, end, seq, fwd, scope, depth, _, shapes in raw:
        ops.append(dict(tid=tid, name=strings.get(name, "?"), start=start, end=end, seq=seq,
                        fwd_thread=fwd, scope=scope, depth=depth,
                        shapes=strings.get(shapes, "") if shapes else ""))
    return meta, ops


def read_run(outdir):
    """{pid: (meta, ops)} for every process of a run."""
    run = {}
    for path in trace_files(outdir):
        meta, ops = read_trace(path)
        run[int(meta["pid"])] = (meta, ops)
    return run


def main_process(run):
    """The process whose parent is not in the run: the training script itself."""
    roots = [pid for pid, (meta, _) in run.items() if int(meta["ppid"]) not in run]
    assert len(roots) == 1, roots
    return run[roots[0]]


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("torch_train")
    proc = profile([PYTHON, TRAIN], out / "prof", env={"PROF_TORCH_CACHE": CACHE}, timeout=300)
    ref_json = out / "reference.json"
    ref = subprocess.run([PYTHON, REFERENCE, "--raw", str(ref_json), TRAIN], capture_output=True,
                         text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr
    with open(ref_json) as f:
        reference = json.load(f)
    return proc, read_run(out / "prof"), reference, ref.stdout


def test_output_unchanged(train_run):
    proc, _, _, ref_stdout = train_run
    assert proc.stdout == ref_stdout
    assert proc.stdout.startswith("loss ")


def test_counts_equal_torch_profiler_op_by_op(train_run):
    _, run, reference, _ = train_run
    _, ops = main_process(run)
    side = {op["tid"] for op in ops if op["name"] == "aten::cumsum"}
    assert len(side) == 1, "the side thread's ops are recorded, on one thread"
    ours = collections.Counter(op["name"] for op in ops if op["tid"] not in side)
    assert len(reference) > 50
    diff = {name: (ours.get(name, 0), reference.get(name, 0))
            for name in set(ours) | set(reference) if ours.get(name, 0) != reference.get(name, 0)}
    assert diff == {}, "name: (profrun, torch.profiler)"


def test_plain_thread_ops_recorded_where_torch_profiler_is_blind(train_run):
    _, run, reference, _ = train_run
    _, ops = main_process(run)
    side = {op["tid"] for op in ops if op["name"] == "aten::cumsum"}
    on_side = collections.Counter(op["name"] for op in ops if op["tid"] in side)
    assert on_side["aten::cumsum"] == 5 and on_side["aten::div"] == 5
    assert "aten::cumsum" not in reference


def test_my_scope_is_a_user_scope_around_the_forward_ops(train_run):
    _, run, _, _ = train_run
    _, ops = main_process(run)
    scopes = [op for op in ops if op["name"] == "my_scope"]
    assert len(scopes) == 8  # 2 epochs x 4 batches
    assert all(op["scope"] == SCOPE_USER for op in scopes)
    for scope in scopes:
        inside = [op for op in ops if op["tid"] == scope["tid"] and op is not scope
                  and scope["start"] <= op["start"] and op["end"] <= scope["end"]]
        names = {op["name"] for op in inside}
        assert {"aten::conv2d", "aten::relu", "aten::linear", "aten::cross_entropy_loss"} <= names
        assert all(op["depth"] > scope["depth"] for op in inside)


def test_nesting_depth_is_consistent(train_run):
    _, run, _, _ = train_run
    _, ops = main_process(run)
    by_thread = collections.defaultdict(list)
    for op in ops:
        by_thread[op["tid"]].append(op)
    for thread_ops in by_thread.values():
        for op in thread_ops:
            parents = [p for p in thread_ops if p is not op and p["start"] <= op["start"]
                       and op["end"] <= p["end"]]
            if op["name"] == "aten::addmm":
                assert any(p["name"] == "aten::linear" for p in parents)
            assert op["depth"] == len(parents), op


def test_backward_ops_link_to_their_forward_ops(train_run):
    _, run, _, _ = train_run
    _, ops = main_process(run)
    forward_by_seq = collections.defaultdict(set)
    for op in ops:
        if op["scope"] == SCOPE_FUNCTION and op["seq"] >= 0:
            forward_by_seq[op["seq"]].add(op["name"])
    expected = {"AddmmBackward0": "aten::addmm", "ConvolutionBackward0": "aten::convolution",
                "ReluBackward0": "aten::relu", "LogSoftmaxBackward0": "aten::_log_softmax",
                "NllLossBackward0": "aten::nll_loss_forward", "TBackward0": "aten::t"}
    seen = collections.Counter()
    for op in ops:
        if op["scope"] != SCOPE_BACKWARD or op["name"] not in expected:
            continue
        assert op["seq"] >= 0 and op["fwd_thread"] != 0
        assert expected[op["name"]] in forward_by_seq[op["seq"]], (op, forward_by_seq[op["seq"]])
        seen[op["name"]] += 1
    assert seen["AddmmBackward0"] == 8 and seen["ConvolutionBackward0"] == 8
    assert seen["TBackward0"] == 8


def test_dataloader_workers_record_their_own_ops(train_run):
    _, run, _, _ = train_run
    main_meta, _ = main_process(run)
    workers = [ops for meta, ops in run.values() if meta["ppid"] == main_meta["pid"]]
    assert len(workers) == 4  # 2 workers x 2 epochs
    for ops in workers:
        names = collections.Counter(op["name"] for op in ops)
        assert names["aten::stack"] == 4  # default_collate: x and y of 2 batches each


def test_shapes_recorded_when_asked(tmp_path):
    script = ("import torch\n"
              "x = torch.ones(8, 144); w = torch.ones(10, 144); b = torch.zeros(10)\n"
              "torch.nn.functional.linear(x, w, b)\n")
    profile([PYTHON, "-c", script], tmp_path,
            env={"PROF_TORCH_CACHE": CACHE, "PROF_SHAPES": "1"})
    ops = [op for pid, (meta, ops) in read_run(tmp_path).items() for op in ops]
    linear = [op for op in ops if op["name"] == "aten::linear"]
    assert len(linear) == 1
    assert linear[0]["shapes"] == "float[8, 144], float[10, 144], float[10]"
    addmm = [op for op in ops if op["name"] == "aten::addmm"][0]
    assert addmm["shapes"].startswith("float[10], float[8, 144], float[144, 10], Scalar")
