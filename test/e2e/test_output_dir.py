"""The output folder on a shared machine: made 0700 (files 0600) unless PROF_OUTPUT_SHARED,
one owned by another user (or a link another user made) is refused with the program
unaffected, and PROF_RUN_ID cannot lead out of the folder."""
import os
import stat
import subprocess
import sys

import pytest

from conftest import LIBPROF, PROFRUN, trace_files

PY = sys.executable
CODE = "def work():\n    return 1\nwork()\nprint('ran')\n"
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another uid")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def preload(outdir, **env):
    full = dict(os.environ, LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(outdir), **env)
    return subprocess.run([PY, "-c", CODE], env=full, capture_output=True, text=True,
                          timeout=60)


def test_profrun_makes_the_folder_and_files_private(tmp_path):
    out = tmp_path / "a" / "prof-out"
    subprocess.run([PROFRUN, "--no-report", "-o", str(out), PY, "-c", CODE], check=True,
                   capture_output=True, timeout=60)
    assert mode(out) == 0o700 and mode(tmp_path / "a") == 0o700
    files = trace_files(out)
    assert files and all(mode(f) == 0o600 for f in files)


def test_preloaded_process_makes_them_private_too(tmp_path):
    out = tmp_path / "prof-out"
    proc = preload(out)
    assert proc.returncode == 0
    assert mode(out) == 0o700
    assert [mode(f) for f in trace_files(out)] == [0o600]


def test_shared_setting_opens_them_to_the_group(tmp_path):
    out = tmp_path / "prof-out"
    old = os.umask(0o077)  # the group asked for: not narrowed by a strict umask
    try:
        proc = preload(out, PROF_OUTPUT_SHARED="yes")
    finally:
        os.umask(old)
    assert proc.returncode == 0
    assert [mode(f) for f in trace_files(out)] == [0o640]


@as_root
def test_folder_of_another_user_is_refused_by_profrun(tmp_path):
    out = tmp_path / "prof-out"
    out.mkdir(mode=0o777)
    os.chmod(out, 0o777)
    os.chown(out, NOBODY, NOBODY)
    marker = tmp_path / "ran"
    proc = subprocess.run([PROFRUN, "-o", str(out), "touch", str(marker)],
                          capture_output=True, text=True, timeout=60)
    # issue 20: the folder is refused, the program runs without profiling
    assert proc.returncode == 0
    assert "is owned by another user (uid 65534)" in proc.stderr
    assert "the program runs without profiling" in proc.stderr
    assert marker.exists() and os.listdir(out) == []


@as_root
def test_folder_of_another_user_is_refused_and_the_program_unaffected(tmp_path):
    out = tmp_path / "prof-out"
    out.mkdir()
    os.chmod(out, 0o777)
    os.chown(out, NOBODY, NOBODY)
    proc = preload(out)
    assert proc.returncode == 0 and proc.stdout == "ran\n"
    assert proc.stderr.count("owned by another user") == 1, proc.stderr
    assert "profiling is off" in proc.stderr
    assert os.listdir(out) == []


@as_root
def test_link_made_by_another_user_is_not_followed(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "prof-out"
    os.symlink(mine, link)
    os.lchown(link, NOBODY, NOBODY)
    proc = preload(link)
    assert proc.returncode == 0 and proc.stdout == "ran\n"
    assert "symbolic link owned by another user" in proc.stderr
    assert os.listdir(mine) == []


def test_link_the_user_made_is_followed(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "prof-out"
    os.symlink(mine, link)
    assert preload(link).returncode == 0
    assert len(trace_files(mine)) == 1


@pytest.mark.parametrize("run_id", ["../escaped", "a/b", ".hidden", "x" * 65])
def test_run_id_cannot_leave_the_folder(tmp_path, run_id):
    out = tmp_path / "box" / "prof-out"
    proc = preload(out, PROF_RUN_ID=run_id)
    assert proc.returncode == 0 and proc.stdout == "ran\n"
    assert proc.stderr.count("PROF_RUN_ID=%s is not accepted" % run_id) == 1, proc.stderr
    files = trace_files(out)
    assert len(files) == 1 and run_id not in os.path.basename(files[0])
    assert sorted(os.listdir(tmp_path / "box")) == ["prof-out"]
    assert sorted(os.listdir(tmp_path)) == ["box"]
