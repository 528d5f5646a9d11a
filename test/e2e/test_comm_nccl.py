"""NCCL calls against the NCCL double (test/doubles/fake_nccl.c): every wrapped function
with its count, bytes, type, op, peer or root, stream and communicator (id shared by the
ranks, size, this rank's place); and what happens when no NCCL or MPI library is loaded."""
import os
import subprocess
import sys

import pytest

from conftest import LIBPROF, PROFREPORT, build_path, report_json, trace_files

FIXTURE = build_path("test", "fixtures", "comm", "nccl_calls")
DOUBLES = build_path("test", "doubles")

needs_fixture = pytest.mark.skipif(not os.path.exists(FIXTURE),
                                   reason="NCCL fixture not built (make comm-fixtures)")


def run_rank(out, rank, nranks, extra_env=None):
    env = dict(os.environ)
    env.update({"LD_PRELOAD": LIBPROF, "PROF_OUTPUT_DIR": str(out), "PROF_RUN_ID": "nccl-test",
                "RANK": str(rank), "WORLD_SIZE": str(nranks), "FAKE_NCCL_STRICT": "1",
                "LD_LIBRARY_PATH": DOUBLES})
    env.update(extra_env or {})
    proc = subprocess.run([FIXTURE, str(rank), str(nranks)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "0 failures" in proc.stdout
    REUSED.append("reused 1" in proc.stdout)


def calls_of(path):
    """The API_CALL records of one trace, as dicts of their fields, in file order."""
    dump = subprocess.run([PROFREPORT, "dump", path], capture_output=True, text=True,
                          check=True).stdout
    calls = []
    for line in dump.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] != "API_CALL":
            continue
        rec = {"name": parts[3].strip("()")}
        for tok in parts[4:]:
            if "=" in tok:
                k, v = tok.split("=", 1)
                rec[k] = int(v, 0) if v[:1].isdigit() or v.startswith("-") else v
        calls.append(rec)
    return calls


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("nccl")
    for rank in (0, 1):
        run_rank(out, rank, 2)
    files = trace_files(out)
    assert len(files) == 2
    by_rank = {}
    for f in files:
        by_rank[0 if f.endswith("_rank0.trace") else 1] = calls_of(f)
    return out, by_rank


SIGNED = (1 << 64) - 1  # -1 recorded as u64
REUSED = []  # per run: the double gave the new communicator the destroyed one's address


@needs_fixture
def test_every_wrapped_call_recorded(two_ranks):
    _, by_rank = two_ranks
    for rank, calls in by_rank.items():
        names = [c["name"] for c in calls]
        assert names == [
            "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommSplit",
            "ncclCommSplit", "ncclGroupStart", "ncclAllReduce", "ncclBroadcast", "ncclReduce",
            "ncclAllGather", "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclGroupEnd",
            "ncclAllReduce", "ncclCommDestroy", "ncclCommAbort", "ncclCommDestroy",
            "ncclCommDestroy", "ncclAllReduce", "ncclCommDestroy", "ncclAllReduce",
            "ncclCommDestroy"], rank
        bad = calls[19]  # on what is not a communicator: its error, nothing asked of NCCL
        assert bad["result"] == 4 and (bad["comm"], bad["comm_size"]) == (0, 0)
        assert all(c["result"] == 0 for c in calls[:19] + calls[20:])


@needs_fixture
def test_counts_bytes_and_communicators(two_ranks):
    _, by_rank = two_ranks
    worlds = set()
    for rank, calls in by_rank.items():
        c = {}
        for call in calls:
            c.setdefault(call["name"], []).append(call)
        world = c["ncclCommInitRank"][0]
        assert (world["comm_size"], world["comm_rank"]) == (2, rank) and world["comm"] != 0
        worlds.add(world["comm"])
        second = c["ncclCommInitRankConfig"][0]
        assert second["comm"] not in (0, world["comm"]) and second["comm_size"] == 2
        init_all = c["ncclCommInitAll"][0]
        assert init_all["count"] == 2 and init_all["comm_size"] == 2
        split, nocolor = c["ncclCommSplit"]
        assert split["parent_comm"] == world["comm"] and split["color"] == rank % 2
        assert split["comm"] not in (0, world["comm"]) and split["comm_size"] == 2
        assert nocolor["color"] == SIGNED and nocolor["comm"] == 0
        expect = {  # name: (count, dtype, bytes as nccl-tests counts them, extra fields)
            "ncclAllReduce": (1000, 7, 4000, {"op": 0}),
            "ncclBroadcast": (10, 4, 80, {"root": 0}),
            "ncclReduce": (100, 6, 200, {"op": 2, "root": 1}),
            "ncclAllGather": (50, 8, 50 * 8 * 2, {}),
            "ncclReduceScatter": (25, 9, 25 * 2 * 2, {"op": 3}),
            "ncclSend": (7, 1, 7, {"peer": (rank + 1) % 2}),
            "ncclRecv": (7, 1, 7, {"peer": (rank + 1) % 2}),
        }
        for name, (count, dtype, nbytes, extra) in expect.items():
            call = c[name][0]
            assert (call["count"], call["dtype"], call["bytes"]) == (count, dtype, nbytes), name
            assert call["stream"] == 0x5000 and call["comm"] == world["comm"], name
            assert (call["comm_size"], call["comm_rank"]) == (2, rank), name
            for k, v in extra.items():
                assert call[k] == v, (name, k)
        half = c["ncclAllReduce"][1]
        assert half["comm"] == split["comm"] and half["bytes"] == 256 and half["stream"] == 0
        destroyed = [d["comm"] for d in c["ncclCommDestroy"]]
        assert destroyed == [split["comm"], init_all["comm"], init_all["comm"], world["comm"], 0]
        # made by an init we do not wrap, maybe at the destroyed world's address: no id, its
        # size and rank asked from NCCL
        again = c["ncclAllReduce"][3]
        assert (again["comm"], again["comm_size"], again["comm_rank"]) == (0, 2, rank)
        assert c["ncclCommAbort"][0]["comm"] == second["comm"]
        for g in c["ncclGroupStart"] + c["ncclGroupEnd"]:
            assert g["comm"] == 0
    # the ranks made the world communicator from one ncclUniqueId: one id
    assert len(worlds) == 1
    assert any(REUSED), "no address reused: the check of a fresh description proves nothing"


@needs_fixture
def test_comm_view_merges_nccl_ranks(two_ranks):
    out, _ = two_ranks
    rows = {r["name"]: r for r in report_json(out, "--comm")["comm"]}
    # the failed call counts as a call, without bytes
    assert rows["ncclAllReduce"]["calls"] == 8
    assert rows["ncclAllReduce"]["bytes"] == 2 * (4000 + 256 + 32)
    assert rows["ncclAllReduce"]["ranks"] == 2 and rows["ncclAllReduce"]["kind"] == "allreduce"
    assert rows["ncclAllGather"]["busbw_gbs"] == pytest.approx(rows["ncclAllGather"]["algbw_gbs"] / 2)
    assert rows["ncclCommInitRank"]["kind"] == "setup"
    # one matched operation per collective on the world communicator, one on the
    # communicator of no known id (0, taken as one group; the failed call is not an
    # operation); the split put the two ranks in different communicators (colors 0 and 1),
    # whose calls match nothing
    assert rows["ncclAllReduce"]["matched"] == 2 and rows["ncclBroadcast"]["matched"] == 1


SNIPPET = r"""
import ctypes, sys
lib = ctypes.CDLL(None)
for _ in range(3):
    rc_nccl = lib.ncclAllReduce(None, None, ctypes.c_size_t(1), 0, 0, None, None)
    rc_mpi = lib.MPI_Barrier(None)
print(rc_nccl, rc_mpi)
"""


def test_no_library_loaded(tmp_path):
    """A program that finds our MPI_* / nccl* symbols without the libraries gets an error
    code, not a crash, and the trace says why."""
    env = dict(os.environ, LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(tmp_path), PROF_PYTHON="0",
               PROF_TORCH="0")
    proc = subprocess.run([sys.executable, "-c", SNIPPET], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "16"]  # ncclSystemError, MPI_ERR_OTHER
    # said once each, however often called
    assert proc.stderr.count("cannot find the real ncclAllReduce") == 1, proc.stderr
    assert proc.stderr.count("cannot find PMPI_Barrier") == 1, proc.stderr
