"""Every file profreport writes is created new (issue 20, item 1): a symlink planted in a
shared output folder — at the old fixed temporary names (X.tmp, X.summary.tmp<pid>), at
the destination itself — never makes profreport write into the file it points to; the
destination ends up a regular file holding the output, and no temporary is left behind.
A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written straight, never replaced.
And a write that fails (a full disk) says so and fails (item 14)."""
import os
import resource
import shutil
import signal
import stat
import subprocess

import pytest

from conftest import BUILD, PROFREPORT

TRACES = os.path.join(BUILD, "test", "traces")
PRECIOUS = b"the victim's own data\n"


def t(*parts):
    path = os.path.join(TRACES, *parts)
    if not os.path.exists(path):
        pytest.skip("make report-fixtures first")
    return path


def run(args, **kw):
    return subprocess.run([PROFREPORT] + [str(a) for a in args], capture_output=True,
                          timeout=120, **kw)


def victim(tmp_path, name="victim"):
    v = tmp_path / name
    v.write_bytes(PRECIOUS)
    v.chmod(0o600)
    return v


def next_pids(n=400):
    """The pids the next processes are likely to get (no namespace tricks: a guess)."""
    with open("/proc/loadavg") as f:
        last = int(f.read().split()[-1])
    return range(last + 1, last + 1 + n)


def plant(shared, dest, target):
    """Links at the names the old writers used for dest, and at dest itself."""
    links = [dest, shared / (dest.name + ".tmp")]
    links += [shared / ("%s.tmp%d" % (dest.name, pid)) for pid in next_pids()]
    for link in links:
        os.symlink(target, link)
    return links


WRITERS = [
    ("--html", "r.html", ("py",)),
    ("--flamegraph", "r.svg", ("py",)),
    ("--pstats", "r.prof", ("py",)),
    ("--folded", "r.folded", ("py",)),
    ("--memory-timeline", "r.csv", ("torchmem",)),
    ("--perfetto", "r.pftrace", ("gpu",)),
    ("--chrome-trace", "r.pt.trace.json", ("gpu",)),  # the name the TensorBoard plugin lists
]


@pytest.mark.parametrize("opt,name,src", WRITERS, ids=[w[0] for w in WRITERS])
def test_writers_never_follow_planted_links(opt, name, src, tmp_path):
    src = t(*src)
    shared = tmp_path / "shared"
    shared.mkdir()
    v = victim(tmp_path)
    dest = shared / name
    links = plant(shared, dest, v)
    proc = run([opt, dest, src])
    assert proc.returncode == 0, proc.stderr
    assert v.read_bytes() == PRECIOUS
    assert os.stat(v).st_mode & 0o777 == 0o600
    assert dest.is_file() and not dest.is_symlink()
    assert dest.stat().st_size > 0
    # Nothing left but the output and the links that were planted (still links).
    left = set(os.listdir(shared)) - {p.name for p in links}
    assert left == set(), left
    for link in links[1:]:
        assert link.is_symlink()


def test_summarize_never_follows_planted_links(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(t("multi", "rank0.trace"), shared / "r.trace")
    v = victim(tmp_path)
    links = plant(shared, shared / "r.summary", v)
    proc = run(["--summarize", shared])
    assert proc.returncode == 0, proc.stderr
    assert v.read_bytes() == PRECIOUS
    summary = shared / "r.summary"
    assert summary.is_file() and not summary.is_symlink()
    assert summary.read_bytes().startswith(b"PRFSUMM\n")
    assert summary.stat().st_mode & 0o777 == 0o600  # like the trace
    left = set(os.listdir(shared)) - {p.name for p in links} - {"r.trace"}
    assert left == set(), left


def test_failed_export_leaves_the_old_file(tmp_path):
    """A failed write removes its temporary, never the file that was there."""
    dest = tmp_path / "r.pftrace"
    dest.write_bytes(PRECIOUS)
    proc = run(["--perfetto", dest, t("gpu")], preexec_fn=lambda: small_files(64))
    assert proc.returncode == 1
    assert dest.read_bytes() == PRECIOUS
    assert os.listdir(tmp_path) == ["r.pftrace"]


def small_files(limit):
    """A full disk, as the process sees it: writes past limit bytes fail (EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_summarize_on_a_full_disk_fails(workers, tmp_path):
    """Item 14: a summary that cannot be written fails the run (rc 1) with the reason, and
    the line of totals does not claim it."""
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(t("multi", "rank0.trace"), d / "a.trace")
    shutil.copy(t("multi", "rank1.trace"), d / "b.trace")
    proc = run(["--summarize", "-j", workers, d], preexec_fn=lambda: small_files(64))
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.stdout, err)
    assert "cannot write" in err and "a.summary" in err, err
    assert "File too large" in err, err
    assert b"summarized 2 traces" not in proc.stdout, proc.stdout
    assert b"summarized 0 of 2 traces" in proc.stdout, proc.stdout
    assert b"2 failed" in proc.stdout, proc.stdout
    assert sorted(os.listdir(d)) == ["a.trace", "b.trace"]


def test_devices_and_pipes_are_written_straight(tmp_path):
    """/dev/null, /dev/stdout, a FIFO: written to, never replaced by a renamed file (as
    root a temporary in /dev renamed over /dev/null would replace the device)."""
    proc = run(["--pstats", "/dev/null", t("py")])
    assert proc.returncode == 0, proc.stderr
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    proc = run(["--pstats", "/dev/stdout", t("py")])
    assert proc.returncode == 0 and proc.stdout.startswith(b"{"), proc.stdout[:20]
    assert not [f for f in os.listdir("/dev") if ".tmp-" in f]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    proc = run(["--html", fifo, t("py")])
    out = reader.communicate(timeout=60)[0]
    assert proc.returncode == 0, proc.stderr
    assert out.startswith(b"<!DOCTYPE html>") and stat_is_fifo(fifo)


def stat_is_fifo(path):
    return stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_fails_with_its_reason():
    for opt in ("--pstats", "--html", "--perfetto"):
        src = t("gpu") if opt == "--perfetto" else t("py")
        proc = run([opt, "/dev/full", src])
        assert proc.returncode == 1, (opt, proc.stderr)
        assert b"/dev/full: cannot write: No space left on device" in proc.stderr, proc.stderr


def test_report_to_a_closed_or_full_stdout_fails(tmp_path):
    """A report that cannot be written (stdout closed, or a full device) is said and exits 1,
    never 0 with nothing written."""
    closed = subprocess.run([PROFREPORT, t("py")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, timeout=60, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 1 and "cannot write the report" in closed.stderr
    with open("/dev/full", "w") as full:
        proc = subprocess.run([PROFREPORT, t("py")], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    assert proc.returncode == 1 and "No space left on device" in proc.stderr
