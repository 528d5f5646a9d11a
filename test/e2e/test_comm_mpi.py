"""MPI under profrun: a 4-rank Open MPI job (test/fixtures/comm/mpi_loop.c) with one slow
rank, launched through profrun and with the environment only; the merged views (--comm,
--ranks, --stragglers, --rank N) in JSON and CSV."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import LIBPROF, build_path, profile, report, report_json, trace_files

MPIRUN = shutil.which("mpirun")
FIXTURE = build_path("test", "fixtures", "comm", "mpi_loop")
ITERATIONS, SLOW_RANK, SLOW_MS, RANKS = 12, 2, 50, 4
# On a loaded machine another rank can lose the CPU for as long as the slow rank sleeps:
# the slow rank must be last at all operations but this many.
SCHEDULING_SLACK = 2
MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe", "-np", str(RANKS)]

pytestmark = pytest.mark.skipif(not MPIRUN or not os.path.exists(FIXTURE),
                                reason="no mpirun or MPI fixture (openmpi-bin, libopenmpi-dev)")

ARGS = [FIXTURE, str(ITERATIONS), str(SLOW_RANK), str(SLOW_MS)]


@pytest.fixture(scope="module")
def profrun_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi_profrun")
    profile([MPIRUN] + MPI_FLAGS + ARGS, out, timeout=120)
    return out


@pytest.fixture(scope="module")
def env_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi_env")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.run([MPIRUN] + MPI_FLAGS + ["-x", "LD_PRELOAD=" + LIBPROF,
                                                   "-x", "PROF_OUTPUT_DIR=" + str(out)] + ARGS,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def rows_by_name(rep):
    return {row["name"]: row for row in rep["comm"]}


def check_comm_table(out, *extra):
    rows = rows_by_name(report_json(out, "--comm", *extra))
    n = ITERATIONS
    expect = {  # name: (calls, bytes) summed over the ranks
        "MPI_Init": (RANKS, 0),
        "MPI_Finalize": (RANKS, 0),
        "MPI_Allreduce": (RANKS * n, RANKS * n * 1000 * 8),
        "MPI_Bcast": (RANKS * n, RANKS * n * 256 * 4),
        "MPI_Send": (RANKS // 2 * n, RANKS // 2 * n * 100 * 4),
        "MPI_Recv": (RANKS // 2 * n, RANKS // 2 * n * 100 * 4),
    }
    assert set(rows) == set(expect)
    for name, (calls, nbytes) in expect.items():
        assert (rows[name]["calls"], rows[name]["bytes"]) == (calls, nbytes), name
    allreduce = rows["MPI_Allreduce"]
    assert allreduce["ranks"] == RANKS and allreduce["comm_size"] == RANKS
    assert allreduce["kind"] == "allreduce" and allreduce["matched"] == n
    assert allreduce["calls_per_rank"] == {"min": n, "median": n, "max": n, "rank_at_max": 0}
    # nccl-tests: busBw = algBw * 2(n-1)/n for allreduce, 1 for broadcast
    assert allreduce["busbw_gbs"] == pytest.approx(allreduce["algbw_gbs"] * 2 * (RANKS - 1) / RANKS)
    assert allreduce["algbw_gbs"] == pytest.approx(allreduce["bytes"] / allreduce["time_ns"])
    bcast = rows["MPI_Bcast"]
    assert bcast["busbw_gbs"] == pytest.approx(bcast["algbw_gbs"])
    # The slow rank is last at (almost) every Allreduce and by about its sleep.
    assert allreduce["last_rank"] == SLOW_RANK
    assert allreduce["last_count"] >= n - SCHEDULING_SLACK
    assert allreduce["late_ns"] >= (n - SCHEDULING_SLACK) * SLOW_MS * 1e6 * 0.5
    assert allreduce["wait_ns"] + allreduce["transfer_ns"] == allreduce["time_ns"]
    return rows


def rank_files(out):
    """The ranks' traces (mpirun itself, a launcher, writes one too under profrun)."""
    return [f for f in trace_files(out) if "_rank" in os.path.basename(f)]


def test_profrun_mpirun_comm_table(profrun_out):
    assert len(rank_files(profrun_out)) == RANKS
    check_comm_table(profrun_out)


def test_html_overview_has_each_ranks_communication_share(profrun_out, tmp_path):
    html = tmp_path / "r.html"
    report(profrun_out, "--html", str(html))
    text = html.read_text()
    shares = re.findall(r"communication: [^<]* in (\d+) calls \(([\d.]+)% of wall\)", text)
    assert len(shares) == RANKS, shares
    assert all(int(n) > 0 and 0 < float(p) <= 100 for n, p in shares)


def test_env_only_mpirun_comm_table(env_out):
    # The ranks take Open MPI's job id as their run: one run, no --all-runs needed.
    assert len(rank_files(env_out)) == RANKS
    check_comm_table(env_out)


def test_ranks_view_names_waiting_ranks(profrun_out):
    rep = report_json(profrun_out, "--ranks")["ranks"]
    rows = {row["rank"]: row for row in rep["rows"]}
    assert sorted(rows) == list(range(RANKS))
    slow = rows[SLOW_RANK]
    for rank, row in rows.items():
        assert row["comm_ns"] > 0
        if rank != SLOW_RANK:
            # the others wait for the slow rank at each Allreduce
            assert row["wait_ns"] > slow["wait_ns"] + ITERATIONS * SLOW_MS * 1e6 * 0.5
    assert rep["over_ranks"]["wait_ns"]["rank_at_max"] != SLOW_RANK
    assert rep["over_ranks"]["wait_ns"]["min"] == slow["wait_ns"]


def test_stragglers_view(profrun_out):
    rep = report_json(profrun_out, "--stragglers", "--limit", "0")
    ops = [g for g in rep["stragglers"] if g["name"] == "MPI_Allreduce"]
    assert len(ops) == ITERATIONS
    assert [g["index"] for g in ops] == list(range(ITERATIONS))
    assert all(g["ranks"] == RANKS and g["spread_ns"] >= g["late_ns"] for g in ops)
    slow = [g for g in ops if g["last_rank"] == SLOW_RANK]
    assert len(slow) >= ITERATIONS - SCHEDULING_SLACK
    assert all(g["late_ns"] >= SLOW_MS * 1e6 * 0.5 for g in slow)
    text = report(profrun_out, "--stragglers").stdout
    assert "slowest rank: %d," % SLOW_RANK in text


def test_rank_restricts_tables(profrun_out):
    rows = rows_by_name(report_json(profrun_out, "--comm", "--rank", str(SLOW_RANK)))
    assert rows["MPI_Allreduce"]["calls"] == ITERATIONS and rows["MPI_Allreduce"]["ranks"] == 1
    assert rows["MPI_Send"]["calls"] == ITERATIONS and "MPI_Recv" not in rows
    api = {row["name"]: row for row in report_json(profrun_out, "--rank", "1")["api"]}
    assert api["MPI_Recv"]["calls"] == ITERATIONS and "MPI_Send" not in api
    bad = report(profrun_out, "--rank", "9", check=False)
    assert bad.returncode == 1 and "no trace of rank 9" in bad.stderr


def test_csv_sections(profrun_out):
    text = report(profrun_out, "--ranks", "--comm", "--stragglers", "--format", "csv").stdout
    sections = [line for line in text.splitlines() if line.startswith("# ")]
    assert sections == ["# ranks", "# ranks_spread", "# comm", "# stragglers"]
    lines = text.splitlines()
    head = lines.index("# comm") + 1
    cols = lines[head].split(",")
    allreduce = next(l.split(",") for l in lines[head + 1:] if l.startswith("MPI_Allreduce,"))
    assert int(allreduce[cols.index("calls")]) == RANKS * ITERATIONS
    assert int(allreduce[cols.index("bytes")]) == RANKS * ITERATIONS * 8000


def test_default_report_has_the_communication_table(profrun_out):
    text = report(profrun_out).stdout
    section = text[text.index("Communication ("):]
    line = next(l for l in section.splitlines() if l.strip().startswith("MPI_Allreduce "))
    assert line.split()[3] == str(RANKS * ITERATIONS)  # calls


def test_mpi_calls_are_listed_under_mpi(profrun_out):
    # Issue 19: MPI calls were listed under "CUDA API summary".
    text = report(profrun_out).stdout
    assert "CUDA API summary" not in text and "CUDA runtime API summary" not in text
    section = text[text.index("MPI API summary (4 processes, MPI time "):].split("\n\n")[0]
    assert any(l.strip().startswith("MPI_Allreduce ") for l in section.splitlines())


ALL_FIXTURE = build_path("test", "fixtures", "comm", "mpi_all")


def test_every_wrapped_mpi_function(tmp_path):
    """test/fixtures/comm/mpi_all.c on 3 ranks: each wrapped function's bytes (nccl-tests'
    sizes; where an argument counts at the root only, the others count their own part),
    peer, root and communicator, and Open MPI computing the right results through them."""
    from test_comm_nccl import calls_of

    profile([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3", ALL_FIXTURE],
            tmp_path, timeout=120)
    files = rank_files(tmp_path)
    assert len(files) == 3
    world = (3 << 32) | 0  # size 3, rank 0 of the world at its rank 0
    for path in files:
        rank = int(path.rsplit("_rank", 1)[1].split(".")[0])
        nxt, prev = (rank + 1) % 3, (rank + 2) % 3
        expect = [  # name, bytes, extra fields
            ("MPI_Init_thread", 0, {"required": 1}),
            ("MPI_Allreduce", 40, {"count": 10}),
            ("MPI_Reduce", 80, {"root": 1}),
            ("MPI_Bcast", 20, {"root": 0}),
            ("MPI_Allgather", 24, {}),
            ("MPI_Allgatherv", 24, {}),
            ("MPI_Gather", 36, {"root": 0}),
            ("MPI_Gatherv", 24 if rank == 0 else 4 * (rank + 1), {}),
            ("MPI_Scatter", 24, {}),
            ("MPI_Scatterv", 24 if rank == 0 else 4 * (rank + 1), {}),
            ("MPI_Alltoall", 12, {}),
            ("MPI_Alltoallv", 12, {}),
            ("MPI_Reduce_scatter", 12, {}),
            ("MPI_Reduce_scatter_block", 24, {}),
            ("MPI_Barrier", 0, {}),
            ("MPI_Sendrecv", 16, {"recv_bytes": 16, "peer": nxt, "recv_peer": prev}),
        ]
        if rank == 0:
            expect.append(("MPI_Send", 16, {"peer": 1, "tag": 2}))
        if rank == 1:
            expect.append(("MPI_Recv", 16, {"peer": 0, "tag": 2}))
        expect += [
            ("MPI_Irecv", 12, {"peer": prev}), ("MPI_Isend", 12, {"peer": nxt}),
            ("MPI_Waitall", None, {"requests": 2}),
            ("MPI_Irecv", 4, {"peer": prev}), ("MPI_Isend", 4, {"peer": nxt}),
            ("MPI_Waitany", None, {"requests": 2}), ("MPI_Wait", None, {"requests": 1}),
            ("MPI_Test", None, {"requests": 1}),
            ("MPI_Finalize", 0, {}),
        ]
        calls = calls_of(path)
        assert [c["name"] for c in calls] == [e[0] for e in expect], rank
        for call, (name, nbytes, extra) in zip(calls, expect):
            assert call["result"] == 0, name
            if nbytes is None:  # waits: no communicator of their own
                assert call["comm"] == 0, name
            else:
                assert call["bytes"] == nbytes, (rank, name, call)
                assert (call["comm"], call["comm_size"], call["comm_rank"]) == (world, 3, rank)
            for k, v in extra.items():
                assert call[k] == v, (rank, name, k)


REUSE_FIXTURE = build_path("test", "fixtures", "comm", "mpi_comm_reuse")


def test_freed_communicator_is_forgotten(tmp_path):
    """A communicator made at the address of a freed one is described afresh: the Allreduce
    on the world's dup has 3 ranks, not the freed split's 2 (or 1)."""
    from test_comm_nccl import calls_of

    proc = profile([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3",
                    REUSE_FIXTURE], tmp_path, timeout=120)
    assert "sum 3" in proc.stdout
    reused = proc.stdout.count("reused 1")
    for path in rank_files(tmp_path):
        rank = int(path.rsplit("_rank", 1)[1].split(".")[0])
        first, second = [c for c in calls_of(path) if c["name"] == "MPI_Allreduce"]
        assert first["comm_size"] == (2 if rank % 2 == 0 else 1)
        assert first["comm"] == (first["comm_size"] << 32 | rank % 2)
        assert (second["comm"], second["comm_size"], second["comm_rank"]) == (3 << 32, 3, rank)
    assert reused > 0, "Open MPI did not reuse the address: the test proves nothing here"


ERRORS_FIXTURE = build_path("test", "fixtures", "comm", "mpi_errors")


def test_failed_call_does_not_abort_the_job(tmp_path):
    """An MPI_Allreduce with a null datatype on a communicator whose errors return: the job
    gets the error and goes on (the profiler must not ask MPI about the bad arguments,
    which would raise them on MPI_COMM_WORLD, whose handler aborts); the call is recorded
    with its error and no bytes."""
    from test_comm_nccl import calls_of

    proc = profile([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1",
                    ERRORS_FIXTURE], tmp_path, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mpi_errors: rc error" in proc.stdout
    calls = [c for c in calls_of(rank_files(tmp_path)[0]) if c["name"] == "MPI_Allreduce"]
    assert len(calls) == 1 and calls[0]["result"] != 0
    assert calls[0]["bytes"] == 0 and calls[0]["comm"] == 0
