"""Ranks, roles and jobs (issue 12, parts 0 and 1): every launcher's environment names the
rank; launchers and workers of ranks are told apart from ranks; the run id comes from the
launch (a user's PROF_RUN_ID stays); every process writes a trace even when it recorded
nothing; profreport merges by job, warns when a job looks split or a rank is missing, and
leaves launchers, workers and earlier restarts out unless --all-roles. Launchers are
simulated by their environment, and run for real where Debian has them (mpirun, torchrun)."""
import json
import os
import shutil
import socket
import subprocess

import pytest

from conftest import LIBPROF, PROFREPORT, PROFRUN, ROOT, report, report_json, trace_files

PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
MPIRUN = shutil.which("mpirun")
DIST = os.path.join(ROOT, "test", "workloads", "dist_ranks.py")

# Variables of the launchers around the test run itself must not leak into the cases.
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "TORCHELASTIC_RUN_ID",
               "TORCHELASTIC_RESTART_COUNT", "PROF_RUN_ID", "PROF_RUN_ID_FROM", "PROF_RANK",
               "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
               "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
               "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "LD_PRELOAD")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env.update(extra)
    return env


def preload(cmd, out, **env):
    """cmd with libprof.so preloaded by the environment alone, as a launcher would."""
    proc = subprocess.run(cmd, env=clean_env(LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(out), **env),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def metas(out, *args):
    rep = report_json(out, *args)
    return rep, [p["meta"] for p in rep["processes"]]


@pytest.mark.parametrize("launcher,env,want", [
    ("Open MPI", dict(OMPI_COMM_WORLD_RANK="2", OMPI_COMM_WORLD_SIZE="4",
                      OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_MCA_ess_base_jobid="5551",
                      PMIX_RANK="2", PMIX_NAMESPACE="5551"),
     dict(rank="2", world_size="4", local_rank="0", rank_from="OMPI_COMM_WORLD_RANK",
          job_id="ompi-5551")),
    ("Slurm", dict(SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_LOCALID="1", SLURM_JOB_ID="9",
                   SLURM_STEP_ID="3", SLURM_NODEID="0"),
     dict(rank="1", world_size="2", local_rank="1", rank_from="SLURM_PROCID",
          job_id="slurm-9.3", node_rank="0")),
    ("Hydra", dict(PMI_RANK="3", PMI_SIZE="4", MPI_LOCALRANKID="3"),
     dict(rank="3", world_size="4", local_rank="3", rank_from="PMI_RANK")),
    ("torchrun", dict(RANK="5", WORLD_SIZE="8", LOCAL_RANK="1", GROUP_RANK="2",
                      TORCHELASTIC_RUN_ID="abc", TORCHELASTIC_RESTART_COUNT="1",
                      SLURM_PROCID="0", SLURM_NTASKS="4"),
     dict(rank="5", world_size="8", local_rank="1", rank_from="RANK", node_rank="2",
          restart="1", job_id="torchelastic-abc")),
    ("PROF_RANK", dict(PROF_RANK="7", RANK="1", WORLD_SIZE="8"),
     dict(rank="7", world_size="8", rank_from="PROF_RANK")),
])
def test_rank_from_each_launchers_environment(tmp_path, launcher, env, want):
    """A C program that makes no call we record (a C MPI rank) still leaves its trace."""
    out = tmp_path / "prof"
    preload(["/bin/true"], out, **env)
    (path,) = trace_files(out)
    assert path.endswith("_rank%s.trace" % want["rank"]), "file names keep the rank"
    _, (m,) = metas(out)
    assert m["role"] == "rank" and m["node"] == m["host"]
    for k, v in want.items():
        assert m[k] == v, (launcher, k, m)
    if "job_id" in want:
        assert m["run_id"] == want["job_id"] and m["run_id_from"] == "job"
    else:
        assert "job_id" not in m and m["run_id_from"] == "generated"


@pytest.mark.parametrize("code", ["from multiprocessing.spawn import spawn_main",
                                  "from multiprocessing.resource_tracker import main"])
def test_multiprocessing_children_of_a_rank_are_its_workers(tmp_path, code):
    """A child that multiprocessing spawned (or its resource tracker) inherits RANK; it is a
    worker of that rank, not the rank again."""
    out = tmp_path / "prof"
    preload([PYTHON, "-c", "pass", "--multiprocessing-fork"] if "spawn" in code
            else [PYTHON, "-c", "import sys  # " + code], out, RANK="1", WORLD_SIZE="2")
    _, (m,) = metas(out, "--all-roles")
    assert (m["role"], m["worker_of_rank"]) == ("worker", "1")
    rep = report_json(out)
    assert rep["processes"] == [] and "1 worker of ranks" in rep["job"]["left_out"]


def test_samples_only_in_a_left_out_process_say_so(tmp_path):
    """A worker's trace given alone, sampled: --samples says the samples are in the process
    the roles left out, not that the run had no sampling (a DataLoader worker's trace read
    alone said "run with PROF_SAMPLE_HZ=199")."""
    out = tmp_path / "prof"
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    preload([PYTHON, "-c", burn, "--multiprocessing-fork"], out, RANK="1", WORLD_SIZE="2",
            PROF_SAMPLE_HZ="199")
    rep = report(out, "--samples", check=False)
    assert rep.returncode == 1
    assert ("the processes reported hold no call stacks; left out: 1 worker of ranks (forked "
            "or spawned children) (--all-roles includes them)") in rep.stderr, rep.stderr
    assert "PROF_SAMPLE_HZ" not in rep.stderr
    rep = report(out, "--samples", "--all-roles")
    assert int(rep.stdout.split("CPU samples: ", 1)[1].split()[0]) > 0, rep.stdout[:400]


def test_srun_is_a_launcher_not_rank_0(tmp_path):
    """srun (and torchrun's agent under srun) inherit SLURM_PROCID but are no rank."""
    srun = tmp_path / "srun"
    os.symlink("/bin/true", srun)
    out = tmp_path / "prof"
    preload([str(srun)], out, SLURM_PROCID="0", SLURM_NTASKS="4", SLURM_JOB_ID="9",
            SLURM_STEP_ID="0")
    (path,) = trace_files(out)
    assert "_rank" not in os.path.basename(path)
    rep, (m,) = metas(out, "--all-roles")
    assert (m["role"], m["launcher"]) == ("launcher", "srun") and "rank" not in m
    assert rep["processes"][0]["rank"] is None
    text = report(out)
    assert "Left out: 1 launcher process (srun)" in text.stdout


def test_profrun_keeps_the_users_run_id(tmp_path):
    out = tmp_path / "prof"
    proc = subprocess.run([PROFRUN, "--no-report", "-o", str(out), "sh", "-c", "true"],
                          env=clean_env(PROF_RUN_ID="my-run-7"), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    names = [os.path.basename(p) for p in trace_files(out)]
    assert names and all(n.startswith("my-run-7_") for n in names), names
    _, ms = metas(out)
    assert {m["run_id_from"] for m in ms} == {"user"}


def test_srun_of_profrun_makes_one_run(tmp_path):
    """`srun -n 2 profrun -- prog`: each copy of profrun takes the Slurm step's id."""
    out = tmp_path / "prof"
    for rank in ("0", "1"):
        proc = subprocess.run([PROFRUN, "--no-report", "-o", str(out), "/bin/true"],
                              env=clean_env(SLURM_JOB_ID="77", SLURM_STEP_ID="1",
                                            SLURM_PROCID=rank, SLURM_NTASKS="2"),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0
    proc = report(out)
    assert "inputs hold" not in proc.stderr, proc.stderr
    assert "Job id: slurm-77.1" in proc.stdout and "Ranks: 2 of world size 2" in proc.stdout


def test_split_job_and_missing_rank_are_warned(tmp_path):
    """Two agents that each chose a run id, one job: merged by job id, with a warning; and
    rank 2 of world size 3 left no trace."""
    out = tmp_path / "prof"
    for rank, run in (("0", "agent-a"), ("1", "agent-b")):
        preload(["/bin/true"], out, RANK=rank, WORLD_SIZE="3", TORCHELASTIC_RUN_ID="job9",
                PROF_RUN_ID=run, PROF_RUN_ID_FROM="generated")
    proc = report(out)
    assert "inputs hold" not in proc.stderr
    assert "job torchelastic-job9 looks split: its processes carry 2 run ids" in proc.stderr
    assert "no trace of rank 2 of world size 3" in proc.stderr
    rep = report_json(out)
    assert sorted(p["rank"] for p in rep["processes"]) == [0, 1]
    assert rep["job"]["key"] == "torchelastic-job9" and rep["job"]["run_ids"] == 2


def test_earlier_restart_attempts_are_left_out(tmp_path):
    out = tmp_path / "prof"
    for attempt in ("0", "1"):
        for rank in ("0", "1"):
            preload(["/bin/true"], out, RANK=rank, WORLD_SIZE="2", TORCHELASTIC_RUN_ID="r1",
                    TORCHELASTIC_RESTART_COUNT=attempt)
    rep, ms = metas(out)
    assert sorted((m["rank"], m["restart"]) for m in ms) == [("0", "1"), ("1", "1")]
    assert "2 processes of restart attempts before 1" in rep["job"]["left_out"]
    _, ms = metas(out, "--all-roles")
    assert len(ms) == 4


@pytest.mark.skipif(not MPIRUN, reason="Open MPI (openmpi-bin) is not installed")
@pytest.mark.parametrize("launcher_profiled", [True, False])
def test_mpirun_ranks_of_a_c_program_without_calls(tmp_path, launcher_profiled):
    """mpirun -np 3 of a program that makes no recorded call: one trace per rank, named by
    Open MPI's rank, one job; mpirun itself (when preloaded) is a launcher, left out."""
    out = tmp_path / "prof"
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3",
           "-x", "LD_PRELOAD=" + LIBPROF, "-x", "PROF_OUTPUT_DIR=" + str(out), "/bin/true"]
    env = clean_env(PROF_OUTPUT_DIR=str(out))
    if launcher_profiled:
        env["LD_PRELOAD"] = LIBPROF
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep, ms = metas(out)
    assert sorted(p["rank"] for p in rep["processes"]) == [0, 1, 2]
    assert {m["role"] for m in ms} == {"rank"}
    assert len({m["job_id"] for m in ms}) == 1 and ms[0]["job_id"].startswith("ompi-")
    assert rep["job"]["ranks"] == 3 and rep["job"]["world_size"] == 3
    files = trace_files(out)
    assert len(files) == (4 if launcher_profiled else 3)
    if launcher_profiled:
        assert rep["job"]["left_out"] == "1 launcher process (mpirun)"
        _, ms = metas(out, "--all-roles")
        assert sorted(m["role"] for m in ms) == ["launcher", "rank", "rank", "rank"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="Debian's torchrun is not installed")
def test_torchrun_under_slurm_agent_ranks_and_dataloader_workers(tmp_path):
    """torchrun's agent under srun has SLURM_PROCID=0 but is the launcher; its two ranks
    each fork a DataLoader worker: workers of rank 0 and 1. The default report holds the
    two ranks only (the agent's time.sleep calls stay out of the Python table)."""
    out = tmp_path / "prof"
    proc = preload([TORCHRUN, "--nnodes", "1", "--nproc_per_node", "2", "--redirects", "2",
                    "--tee", "1", "--master_addr", "127.0.0.1", "--master_port",
                    str(free_port()), DIST], out,
                   SLURM_JOB_ID="42", SLURM_STEP_ID="0", SLURM_PROCID="0", SLURM_NTASKS="1",
                   SLURM_NODEID="0", SLURM_LOCALID="0")
    assert "rank 0 sum 3 batches 2" in proc.stdout and "rank 1 sum 3 batches 2" in proc.stdout
    rep, ms = metas(out, "--all-roles")
    roles = sorted((m["role"], m.get("rank", "-")) for m in ms)
    assert roles == [("launcher", "-"), ("rank", "0"), ("rank", "1"), ("worker", "0"),
                     ("worker", "1")], roles
    assert {m["job_id"] for m in ms} == {"slurm-42.0"}
    by_pid = {p["pid"]: p for p in rep["processes"]}
    for p in rep["processes"]:
        if p["meta"]["role"] == "worker":
            parent = by_pid[p["ppid"]]
            assert parent["meta"]["role"] == "rank"
            assert p["meta"]["worker_of_rank"] == parent["meta"]["rank"]
            assert p["meta"]["worker_kind"] == "dataloader"
    agent = [p for p in rep["processes"] if p["meta"]["role"] == "launcher"][0]
    assert agent["meta"]["launcher"] == "torchrun" and agent["rank"] is None

    default = report_json(out, "--python")
    assert sorted(p["rank"] for p in default["processes"]) == [0, 1]
    assert default["job"]["left_out"] == ("1 launcher process (torchrun), "
                                          "2 DataLoader worker processes")
    sleeps = lambda r: sum(int(f["ncalls"]) for f in r["python"] if "sleep" in f["qualname"])
    assert sleeps(report_json(out, "--python", "--all-roles")) > sleeps(default)


@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="Debian's torchrun is not installed")
def test_two_torchrun_agents_make_one_job(tmp_path):
    """Two torchrun agents (two "nodes" on this machine, LD_PRELOAD only) each choose their
    run id; their ranks carry torchrun's run id (--rdzv_id): one job, reported whole with a
    warning that it looks split, the agents joined to it by their run ids and left out."""
    out = tmp_path / "prof"
    port = str(free_port())
    env = clean_env(LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(out))
    agents = [subprocess.Popen([TORCHRUN, "--nnodes", "2", "--node_rank", str(node),
                                "--nproc_per_node", "1", "--rdzv_id", "job77", "--redirects",
                                "2", "--tee", "1", "--master_addr", "127.0.0.1",
                                "--master_port", port, DIST], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
              for node in (0, 1)]
    outputs = [a.communicate(timeout=300)[0] for a in agents]
    assert [a.returncode for a in agents] == [0, 0], outputs
    proc = report(out)
    assert "inputs hold" not in proc.stderr, proc.stderr
    assert "job torchelastic-job77 looks split: its processes carry 2 run ids" in proc.stderr
    assert "Ranks: 2 of world size 2" in proc.stdout
    assert ("Left out: 2 launcher processes (torchrun), 2 DataLoader worker processes"
            in proc.stdout)
    rep = report_json(out, "--all-roles")
    assert len(rep["processes"]) == 6
    assert len({p["run_id"] for p in rep["processes"]}) == 2
