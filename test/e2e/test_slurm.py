"""Slurm for real (issue 12): a one-node cluster started on this machine
(scripts/slurm-local.sh: munged, slurmctld, slurmd), then the launch patterns of a Slurm
job — `srun -n 4 profrun -- python …` and `srun --export=ALL,LD_PRELOAD=…` — each giving one
job of 4 ranks named from Slurm's variables, and the per-node step of a large merge run
through the launcher itself: `srun profreport --summarize out/`, each task its share.
Skipped, with the reason, where slurm-wlm is not installed or the tests do not run as root."""
import json
import os
import subprocess

import pytest

from conftest import LIBPROF, PROFREPORT, PROFRUN, ROOT, report_json, trace_files

SCRIPT = os.path.join(ROOT, "scripts", "slurm-local.sh")
PYTHON = "/usr/bin/python3"
CALLS = 1234
WORK = "def tick():\n    pass\nfor _ in range(%d):\n    tick()\n" % CALLS

# Variables of launchers around the test run must not leak into the jobs.
LEAK = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "PROF_RUN_ID",
        "PROF_RUN_ID_FROM", "PROF_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK", "PMI_SIZE", "LD_PRELOAD")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    d = tmp_path_factory.mktemp("slurm")
    proc = subprocess.run(["sh", SCRIPT, "start", str(d)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {k: v for k, v in os.environ.items() if k not in LEAK and not k.startswith("SLURM_")}
    env["SLURM_CONF"] = str(d / "slurm.conf")
    yield env
    subprocess.run(["sh", SCRIPT, "stop", str(d)], timeout=60)


def srun(env, *args, timeout=180):
    proc = subprocess.run(["srun", "--overcommit", "--kill-on-bad-exit=1"] + list(args),
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def check_one_job_of_four_ranks(out):
    rep = report_json(out)
    metas = [p["meta"] for p in rep["processes"]]
    assert sorted(int(m["rank"]) for m in metas) == [0, 1, 2, 3]
    assert {m["world_size"] for m in metas} == {"4"}
    assert {m["rank_from"] for m in metas} == {"SLURM_PROCID"}
    jobs = {m["job_id"] for m in metas}
    assert len(jobs) == 1 and jobs.pop().startswith("slurm-")
    assert len(rep["runs"]) == 1, rep["runs"]  # one run: nothing split
    assert not [w for w in rep["warnings"] if "split" in w or "missing" in w]
    ticks = [f for f in rep["python"] if f["name"] == "tick"]
    assert len(ticks) == 1 and ticks[0]["ncalls"] == 4 * CALLS
    return rep


def test_srun_of_profrun(slurm, tmp_path):
    out = tmp_path / "out"
    srun(slurm, "-n", "4", PROFRUN, "--no-report", "-o", str(out), "--", PYTHON, "-c", WORK)
    assert len(trace_files(out)) == 4
    check_one_job_of_four_ranks(out)


def test_srun_with_the_environment_only(slurm, tmp_path):
    out = tmp_path / "out"
    srun(slurm, "-n", "4",
         "--export=ALL,LD_PRELOAD=%s,PROF_OUTPUT_DIR=%s" % (LIBPROF, out), PYTHON, "-c", WORK)
    check_one_job_of_four_ranks(out)


def test_srun_summarize_splits_the_traces_between_its_tasks(slurm, tmp_path):
    out = tmp_path / "out"
    srun(slurm, "-n", "4", PROFRUN, "--no-report", "-o", str(out), "--", PYTHON, "-c", WORK)
    before = report_json(out)
    proc = srun(slurm, "-n", "2", PROFREPORT, "--summarize", "-j", "1", str(out))
    assert "task 0 of 2: 2 of 4 traces" in proc.stdout, proc.stdout
    assert "task 1 of 2: 2 of 4 traces" in proc.stdout, proc.stdout
    summaries = sorted(f for f in os.listdir(out) if f.endswith(".summary"))
    assert len(summaries) == 4
    for f in trace_files(out):
        os.unlink(f)
    # Without their traces, summaries are read only when named.
    after = report_json([out / f for f in summaries])
    assert after["python"] == before["python"]
    assert [p["meta"] for p in after["processes"]] == [p["meta"] for p in before["processes"]]


def test_a_second_cluster_picks_free_ports(slurm, tmp_path):
    """Issue 20: the script used fixed ports (16817, 16818): with a Slurm daemon of the
    machine, or another cluster of a test run, on them, it failed with "Address already in
    use". Here the usual ports are held, and a cluster is already running (the fixture)."""
    import socket
    held = []
    for port in (16817, 16818, 6817, 6818):
        s = socket.socket()
        try:
            s.bind(("", port))
            s.listen()
            held.append(s)
        except OSError:
            s.close()  # already someone's: held all the same
    d = tmp_path / "second"
    try:
        proc = subprocess.run(["sh", SCRIPT, "start", str(d)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        env = dict(slurm, SLURM_CONF=str(d / "slurm.conf"))
        out = srun(env, "-n", "1", "echo", "second").stdout
        assert out == "second\n"
    finally:
        subprocess.run(["sh", SCRIPT, "stop", str(d)], timeout=60)
        for s in held:
            s.close()
