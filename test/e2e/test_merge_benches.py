"""The merge benchmarks' own checks, at a small scale (test/bench/bench_merge.c and
bench_merge_real.c; `make bench` and the README run them at 16 to 1,024 ranks). Each
checks the merged report against what its ranks hold and exits non-zero on a wrong count:
bench_merge on generated GPU ranks (steps, the slow rank named at every allreduce, the
others' waits, op, kernel and launch counts), bench_merge_real on clones of a real torchrun
gloo DDP rank, each made a rank of its own (every rank with rank 0's steps, every
collective with the ranks times rank 0's calls). Run here so that a change to the report
that breaks their expectations fails CI, not only the next `make bench`."""
import os
import shutil
import subprocess

import pytest

from conftest import PROFREPORT, ROOT, build_path, have_torch, profile, trace_files

PYTHON = "/usr/bin/python3"
TORCHRUN = shutil.which("torchrun")


def run_bench(args):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def test_bench_merge_checks_every_count_on_generated_ranks(tmp_path):
    out = run_bench([build_path("test", "bench", "bench_merge"), PROFREPORT,
                     str(tmp_path / "merge"), "8", "1", "4"])
    assert "CHECK FAILED" not in out
    assert "merge: every count checked: 8 ranks" in out, out


@pytest.mark.skipif(not (TORCHRUN and have_torch("torch.distributed")),
                    reason="no torch / torchrun for /usr/bin/python3")
def test_bench_merge_real_checks_clones_of_a_real_rank(tmp_path):
    run = tmp_path / "ddp"
    script = os.path.join(ROOT, "test", "workloads", "ddp_slow_rank.py")
    # Debian's torchrun (Python 3.11) needs --redirects/--tee to start its workers.
    profile([TORCHRUN, "--nproc_per_node", "2", "--redirects", "2", "--tee", "1", script,
             "20", "1", "2", "sleep"], run, timeout=300)
    rank0 = [t for t in trace_files(run) if t.endswith("_rank0.trace")]
    assert len(rank0) == 1, trace_files(run)
    out = run_bench([build_path("test", "bench", "bench_merge_real"), PROFREPORT, rank0[0],
                     str(tmp_path / "clones"), "12", "4"])
    assert "CHECK FAILED" not in out
    assert "merge_real: every count checked: 12 ranks" in out, out
    assert "final merge:" in out and "3 nodes" in out, out
