"""Shared helpers for the end-to-end tests: run a command under profrun, read the report.

Tests run from the repository root (`make e2e`), with PROF_BUILD naming the build folder.
"""
import functools
import json
import os
import shutil
import subprocess
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("PROF_BUILD", os.path.join(ROOT, "build")))
PROFRUN = os.path.join(BUILD, "bin", "profrun")
PROFREPORT = os.path.join(BUILD, "bin", "profreport")
LIBPROF = os.path.join(BUILD, "lib", "libprof.so")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
HAVE_CUDA = os.path.exists(os.path.join(CUDA_HOME, "include", "cuda_runtime_api.h"))

needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA toolkit at CUDA_HOME")


@functools.lru_cache(maxsize=None)
def have_torch(module="torch"):
    """Whether Debian's /usr/bin/python3 imports MODULE (torch, torch.distributed): the
    skip condition of the tests that run Debian's torch."""
    return os.path.exists("/usr/bin/python3") and subprocess.run(
        ["/usr/bin/python3", "-c", "import " + module], capture_output=True).returncode == 0


def build_path(*parts):
    return os.path.join(BUILD, *parts)


def profile(cmd, outdir, env=None, check=True, timeout=120):
    """Run cmd under `profrun --no-report -o outdir`; return the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([PROFRUN, "--no-report", "-o", str(outdir), "--"] + list(cmd),
                          env=full_env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("profiled command failed (%d):\n%s\n%s"
                             % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def report(paths, *args, check=True):
    """Run profreport on paths with extra args; return the CompletedProcess."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    proc = subprocess.run([PROFREPORT] + list(args) + [str(p) for p in paths],
                          capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError("profreport failed (%d):\n%s\n%s"
                             % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def report_json(paths, *args):
    return json.loads(report(paths, "--format", "json", *args).stdout)


def api_row(rep, name):
    """The row of the CUDA API table for name, or None."""
    for row in rep["api"]:
        if row["name"] == name:
            return row
    return None


def trace_files(outdir):
    return sorted(os.path.join(outdir, f) for f in os.listdir(outdir) if f.endswith(".trace"))


TRACES = os.path.join(BUILD, "test", "traces")


def summaries_only(run, tmp_path):
    """The run's summaries, alone in a folder (without their traces: read when named)."""
    copy = tmp_path / "sum"
    copy.mkdir()
    for f in trace_files(run):
        shutil.copy(f, copy)
    report(copy, "--summarize")
    for f in copy.glob("*.trace"):
        f.unlink()
    return sorted(copy.glob("*.summary"))


def make_traces():
    """Writes the generated fixture traces (report-fixtures' make_traces) into TRACES; skips
    the calling test module when they or profreport are not built."""
    tool = os.path.join(BUILD, "test", "make_traces")
    if not os.path.exists(tool) or not os.path.exists(PROFREPORT):
        pytest.skip("build profreport and the fixtures first: make all report-fixtures")
    subprocess.run([tool, TRACES], check=True)
    return TRACES
