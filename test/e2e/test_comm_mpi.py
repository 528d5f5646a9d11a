"""MPI under profrun: a 4-rank Open MPI job (test/fixtures/comm/mpi_loop.c) with one slow
rank, launched through profrun and with the environment only; the merged views (--comm,
--ranks, --stragglers, --rank N) in JSON and CSV."""
import os
import shutil
import subprocess

import pytest

from conftest import LIBPROF, build_path, profile, report, report_json, trace_files

MPIRUN = shutil.which("mpirun")
FIXTURE = build_path("test", "fixtures", "comm", "mpi_loop")
ITERATIONS, SLOW_RANK, SLOW_MS, RANKS = 12, 2, 30, 4
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
    # The slow rank is last at every Allreduce and by about its sleep.
    assert allreduce["last_rank"] == SLOW_RANK and allreduce["last_count"] == n
    assert allreduce["late_ns"] >= n * SLOW_MS * 1e6 * 0.8
    assert allreduce["wait_ns"] + allreduce["transfer_ns"] == allreduce["time_ns"]
    return rows


def test_profrun_mpirun_comm_table(profrun_out):
    assert len(trace_files(profrun_out)) == RANKS
    check_comm_table(profrun_out)


def test_env_only_mpirun_comm_table(env_out):
    # Each rank started its own run id (no launcher gave one): merge them all.
    assert len(trace_files(env_out)) == RANKS
    check_comm_table(env_out, "--all-runs")


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
    for g in ops:
        assert g["ranks"] == RANKS and g["last_rank"] == SLOW_RANK
        assert g["late_ns"] >= SLOW_MS * 1e6 * 0.5 and g["spread_ns"] >= g["late_ns"]
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
