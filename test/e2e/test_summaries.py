"""Per-trace summaries (issue 12, part 6): `profreport --summarize` reduces each X.trace to
X.summary, and a report read from the summaries prints what the traces print — every table
view, text, JSON and CSV — on the synthetic fixtures of every model part and on real runs
(a 4-rank MPI job with a slow rank, a multi-process PyTorch run). Then: stale, cut-off,
corrupt, foreign and other-version summaries, views that need the traces, an unwritable
directory, and the split of the traces between the tasks of a launcher."""
import json
import os
import re
import shutil
import subprocess
import zlib

import pytest

from conftest import BUILD, PROFREPORT, ROOT, build_path, profile, report

TRACES = os.path.join(BUILD, "test", "traces")
MPIRUN = shutil.which("mpirun")
MPI_FIXTURE = build_path("test", "fixtures", "comm", "mpi_loop")

VIEWS = [
    [],
    ["--format", "json"],
    ["--format", "csv"],
    ["--ops"],
    ["--memory"],
    ["--ops", "--group-by-shape"],
    ["--ops", "--sort", "cpu_memory_usage"],
    ["--python"],
    ["--python", "--sort", "tottime", "--limit", "15"],
    ["--kernels"],
    ["--gpu"],
    ["--actions"],
    ["--ranks", "--comm", "--stragglers"],
    ["--ranks", "--comm", "--stragglers", "--format", "json"],
    ["--ranks", "--comm", "--stragglers", "--format", "csv"],
    ["--all-roles"],
    ["--all-runs", "--format", "json"],
    ["--sort", "calls", "--limit", "3"],
]

NOTE = re.compile(r"^profreport: note: \d+ of the processes were read from summaries.*\n",
                  re.M)


def run(args):
    return subprocess.run([PROFREPORT] + args, capture_output=True, text=True, timeout=120)


def summarize(*paths, env=None, check=True):
    proc = subprocess.run([PROFREPORT, "--summarize"] + [str(p) for p in paths],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def assert_same_reports(trace_dir, summary_dir, views=VIEWS):
    """Every view of summary_dir (summaries only) equals the view of trace_dir (traces)."""
    assert not [f for f in os.listdir(summary_dir) if f.endswith(".trace")]

    def norm(text):  # the paths printed differ by their folder only
        return text.replace(str(trace_dir), "DIR").replace(str(summary_dir), "DIR")

    # Summaries without their traces are read only when named (issue 20, item 2).
    named = sorted(str(summary_dir / f) for f in os.listdir(summary_dir))
    for view in views:
        a = run(view + [str(trace_dir)])
        b = run(view + named)
        assert a.returncode == b.returncode, (view, a.stderr, b.stderr)
        assert norm(a.stdout) == norm(b.stdout), view
        assert norm(a.stderr) == norm(NOTE.sub("", b.stderr)), view


PAGE_NOTE = re.compile(r"^profreport: note: --phase: the run has no training steps.*\n", re.M)
FOLD_VIEWS = VIEWS + [["--phase", "all"], ["--phase", "steps", "--format", "json"],
                      ["--phase", "startup", "--ops"], ["--threads"], ["--rank", "1"]]


def assert_folded_as_whole(trace_dir, tmp, views=FOLD_VIEWS):
    """Issue 22, item 4: a report of several traces folds each to its summary in memory
    once read (one whole model at a time); the report equals the one made from the whole
    models, which --html still reads (it needs the traces) and prints beside the page."""
    assert len([f for f in os.listdir(trace_dir) if f.endswith(".trace")]) > 1
    page = str(tmp / "whole.html")
    for view in views:
        shown = view if "--format" in view else view + ["--format", "text"]  # beside a page
        folded = run(view + [str(trace_dir)])
        whole = run(shown + ["--html", page, str(trace_dir)])
        assert folded.returncode == whole.returncode, (view, folded.stderr, whole.stderr)
        assert folded.stdout == whole.stdout, view
        assert folded.stderr == PAGE_NOTE.sub("", whole.stderr), view


def summaries_of(src, tmp):
    """tmp/t: a copy of the traces of src; tmp/s: their summaries and nothing else (two
    folders of one name length, so that the tables' columns line up alike). They are
    made in tmp/t, where warnings made then name the traces."""
    shutil.copytree(src, tmp / "t")
    summarize(tmp / "t")
    os.makedirs(tmp / "s")
    for f in os.listdir(tmp / "t"):
        if f.endswith(".summary"):
            shutil.move(tmp / "t" / f, tmp / "s" / f)
    return tmp / "t", tmp / "s"


FIXTURE_DIRS = ["py", "multi", "findings/bad", "findings/clean", "pydeep", "gpu", "torchmem",
                "pymulti", "steps", "run", "escape", "pygap", "nvtx", "torch"]


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_fixture_reports_equal_from_summaries(name, tmp_path):
    src = os.path.join(TRACES, name)
    if not os.path.isdir(src):
        pytest.skip("make report-fixtures first")
    t, s = summaries_of(src, tmp_path)
    assert_same_reports(t, s)
    if len(list(t.glob("*.trace"))) > 1:
        assert_folded_as_whole(t, tmp_path)


def test_truncated_trace_summary_keeps_its_warning(tmp_path):
    src = os.path.join(TRACES, "bad", "truncated.trace")
    if not os.path.exists(src):
        pytest.skip("make report-fixtures first")
    os.makedirs(tmp_path / "src")
    shutil.copy(src, tmp_path / "src")
    t, s = summaries_of(tmp_path / "src", tmp_path)
    a, b = run([str(t)]), run([str(s / "truncated.summary")])
    assert a.returncode == b.returncode
    assert "cut off" in a.stderr or "truncated" in a.stderr.lower()
    assert NOTE.sub("", b.stderr).replace("/s/", "/t/") == a.stderr


@pytest.fixture(scope="module")
def mpi_run(tmp_path_factory):
    if not MPIRUN or not os.path.exists(MPI_FIXTURE):
        pytest.skip("no mpirun or MPI fixture (openmpi-bin, libopenmpi-dev)")
    out = tmp_path_factory.mktemp("mpi")
    profile([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "4", MPI_FIXTURE, "8",
             "2", "30"], out, timeout=120)
    return out


def test_mpi_job_reports_equal_from_summaries(mpi_run, tmp_path):
    t, s = summaries_of(mpi_run, tmp_path)
    assert_same_reports(t, s)
    assert_folded_as_whole(mpi_run, tmp_path)
    named = sorted(str(f) for f in s.glob("*.summary"))  # lone summaries: read when named
    strag = json.loads(run(["--stragglers", "--format", "json"] + named).stdout)
    assert strag  # the slow rank is found from summaries alone (the equality says how)


def test_torch_processes_report_equal_from_summaries(tmp_path):
    out = tmp_path / "torch"
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads", "torch_train.py")],
            out, timeout=300)
    t, s = summaries_of(out, tmp_path / "cmp")
    assert_same_reports(t, s)
    if len(list(out.glob("*.trace"))) > 1:
        assert_folded_as_whole(out, tmp_path)


def test_lossy_torch_memory_reports_equal_from_summaries(tmp_path):
    """Memory records a small ring dropped: the exact figures (TORCH_MEM_TOTALS), the
    count of records lost and the peak left unattributed survive the summary."""
    out = tmp_path / "lossy"
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads", "torch_memory.py"),
             "2000"], out, env={"PROF_RING_KB": "64", "PROF_FLUSH_MS": "1000", "PROF_RING_WAKE": "0"}, timeout=300)
    t, s = summaries_of(out, tmp_path / "cmp")
    assert_same_reports(t, s, views=[[], ["--format", "json"], ["--format", "csv"], ["--ops"]])
    named = sorted(str(f) for f in s.glob("*.summary"))
    mem = json.loads(run(["--format", "json"] + named).stdout)["processes"][0]["torch_memory"]
    assert mem["exact"] and mem["records_lost"] > 0 and mem["allocations"] == 5 * 2000 + 2


def test_directory_prefers_fresh_summaries_and_reads_stale_ones_traces(tmp_path):
    src = os.path.join(TRACES, "run")
    if not os.path.isdir(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    shutil.copytree(src, d)
    before = run(["--format", "json", str(d)])
    proc = summarize(d)
    assert "summarized 2 traces" in proc.stdout
    again = summarize(d)
    assert "summarized 0 traces" in again.stdout and "2 already up to date" in again.stdout
    assert "read from summaries" in run([str(d)]).stderr
    mixed = run(["--format", "json", str(d)])
    assert json.loads(mixed.stdout) == json.loads(before.stdout)
    # A trace changed since its summary was made is read, and the report says why —
    # whatever the summary's time says.
    trace = sorted(d.glob("*.trace"))[0]
    os.utime(trace, None)
    summary = trace.with_suffix(".summary")
    st = os.stat(trace)
    os.utime(summary, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    stale = run(["--format", "json", str(d)])
    assert stale.returncode == 0
    assert "not made from this trace as it is now): reading its trace" in stale.stderr
    assert stale.stderr.count(summary.name) == 1, stale.stderr
    assert json.loads(stale.stdout) == json.loads(before.stdout)


def test_trace_only_views_read_traces_and_refuse_lone_summaries(tmp_path):
    src = os.path.join(TRACES, "gpu")
    if not os.path.isdir(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    shutil.copytree(src, d)
    summarize(d)
    # Beside their traces, the summaries are not used for a timeline.
    ok = run(["--perfetto", str(tmp_path / "a.pftrace"), str(d)])
    assert ok.returncode == 0, ok.stderr
    assert "read from summaries" not in ok.stderr
    for t in d.glob("*.trace"):
        t.unlink()
    summary = next(d.glob("*.summary"))
    for view in (["--perfetto", str(tmp_path / "b.pftrace")], ["--html", str(tmp_path / "b.html")],
                 ["--samples"], ["--python", "--per-thread"],
                 ["--folded", str(tmp_path / "b.folded")]):
        proc = run(view + [str(summary)])
        assert proc.returncode == 1, view
        assert "a summary holds the tables only" in proc.stderr
        assert "needs the trace" in proc.stderr
    assert not (tmp_path / "b.pftrace").exists() and not (tmp_path / "b.html").exists()


def test_bad_summaries_are_named_and_lose_nothing(tmp_path):
    src = os.path.join(TRACES, "multi", "rank0.trace")
    if not os.path.exists(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    os.makedirs(d)
    shutil.copy(src, d / "r.trace")
    summarize(d)
    good = (d / "r.summary").read_bytes()
    (d / "r.trace").unlink()
    def sealed(body):  # what the writer appends: CRC-32 of the body, the end mark
        return body + zlib.crc32(body).to_bytes(4, "little") + good[-8:]

    body = good[:-12]
    cases = {
        "cut.summary": good[: len(good) // 2],
        "foreign.summary": b"PK\x03\x04 not a summary at all" * 10,
        "empty.summary": b"",
        "version.summary": sealed(body[:8] + b"\x63" + body[9:]),
        # One bit flipped: the checksum catches it.
        "flipped.summary": good[:40] + bytes([good[40] ^ 1]) + good[41:],
        # Garbage behind a good checksum: the decoder's own checks catch it.
        "garbage.summary": sealed(body[:9] + bytes(b ^ 0xA5 for b in body[9:])),
        "short.summary": sealed(body[: len(body) // 3]),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        proc = run([str(tmp_path / name)])
        assert proc.returncode == 1, name
        assert name in proc.stderr, (name, proc.stderr)
        assert "Traceback" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    assert "cut off" in run([str(tmp_path / "cut.summary")]).stderr
    assert "format 99" in run([str(tmp_path / "version.summary")]).stderr
    assert "checksum" in run([str(tmp_path / "flipped.summary")]).stderr
    assert "corrupt summary" in run([str(tmp_path / "garbage.summary")]).stderr
    # A bad summary named beside a good one: the good one is still reported.
    (d / "x.summary").write_bytes(cases["cut.summary"])
    proc = run(["--format", "json", str(d / "r.summary"), str(d / "x.summary")])
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["processes"], proc.stdout


def test_summarize_errors(tmp_path):
    src = os.path.join(TRACES, "multi", "rank0.trace")
    if not os.path.exists(src):
        pytest.skip("make report-fixtures first")
    # Views beside --summarize, -j without it, and a bad -j are usage errors.
    for args in (["--summarize", "--ops", src], ["--summarize", "--format", "json", src],
                 ["-j", "2", src], ["--summarize", "-j", "0", src],
                 ["--summarize", "-j", "x", src], ["--summarize"]):
        proc = run(args)
        assert proc.returncode == 2, args
        assert "profreport:" in proc.stderr
    # A trace that cannot be read, beside one that can: the good one is summarized.
    d = tmp_path / "d"
    os.makedirs(d)
    shutil.copy(src, d / "good.trace")
    (d / "junk.trace").write_bytes(b"junk" * 100)
    proc = summarize(d, check=False)
    assert proc.returncode == 1
    assert "junk.trace" in proc.stderr
    assert (d / "good.summary").exists() and not (d / "junk.summary").exists()
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        os.makedirs(ro)
        shutil.copy(src, ro / "a.trace")
        os.chmod(ro, 0o555)
        proc = summarize(ro, check=False)
        os.chmod(ro, 0o755)
        assert proc.returncode == 1 and "cannot write" in proc.stderr
        assert not [f for f in os.listdir(ro) if "summary" in f]


def test_launcher_tasks_share_the_traces(tmp_path):
    """Under srun (SLURM_PROCID/SLURM_NTASKS) or mpirun each task summarizes its share;
    together they summarize every trace once."""
    if not all(os.path.isdir(os.path.join(TRACES, name)) for name in FIXTURE_DIRS[:6]):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    os.makedirs(d)
    for name in FIXTURE_DIRS[:6]:
        for f in os.listdir(os.path.join(TRACES, name)):
            if f.endswith(".trace"):
                shutil.copy(os.path.join(TRACES, name, f), d / (name.replace("/", "_") + f))
    traces = sorted(p.name for p in d.glob("*.trace"))
    made = []
    for task, env in enumerate([{"SLURM_PROCID": "0", "SLURM_NTASKS": "3"},
                                {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3"},
                                {"PMI_RANK": "2", "PMI_SIZE": "3"}]):
        before = set(p.name for p in d.glob("*.summary"))
        proc = summarize(d, env=env)
        assert "task %d of 3" % task in proc.stdout, proc.stdout
        new = set(p.name for p in d.glob("*.summary")) - before
        want = {t[:-6] + ".summary" for i, t in enumerate(traces) if i % 3 == task}
        assert new == want, (task, new, want)
        made += new
    assert sorted(made) == sorted(t[:-6] + ".summary" for t in traces)


def _sealed(body):
    """A summary body with what the writer appends: its CRC-32 and the end mark."""
    return body + zlib.crc32(body).to_bytes(4, "little") + b"PRFSEND\n"


def test_summaries_are_used_only_when_bound_to_their_trace(tmp_path):
    """Issue 20, item 2: a summary stands for its trace only when made from it as it is
    now, owned by the trace's owner and closed to others; otherwise one warning and the
    trace is read — planted, stale, old-format, linked or damaged alike."""
    src = os.path.join(TRACES, "multi")
    if not os.path.isdir(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    os.makedirs(d)
    shutil.copy(os.path.join(src, "rank0.trace"), d / "r.trace")
    other = tmp_path / "other"
    os.makedirs(other)
    shutil.copy(os.path.join(src, "rank1.trace"), other / "r.trace")
    want = json.loads(run(["--format", "json", str(d)]).stdout)
    summarize(d)
    summarize(other)
    good = (d / "r.summary").read_bytes()
    assert (d / "r.summary").stat().st_mode & 0o777 == 0o600

    def used():  # the report of d: the summary used, and what was said
        proc = run(["--format", "json", str(d)])
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == want
        text = run([str(d)])  # the text report notes the summaries it read
        return "read from summaries" in text.stderr, proc.stderr

    assert used()[0]

    def fallback(reason):
        via, err = used()
        assert not via, err
        lines = [l for l in err.splitlines() if "r.summary" in l]
        assert len(lines) == 1 and reason in lines[0] and "reading its trace" in lines[0], err

    # Another run's summary put beside this trace (same owner, same mode).
    shutil.copy(other / "r.summary", d / "r.summary")
    fallback("not made from this trace")
    # The trace replaced by another one with an older time: its summary is stale.
    (d / "r.summary").write_bytes(good)
    st = os.stat(d / "r.trace")
    shutil.copy(other / "r.trace", d / "r.trace")
    os.utime(d / "r.trace", ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    want = json.loads(run(["--format", "json", str(d / "r.trace")]).stdout)
    fallback("not made from this trace")
    summarize(d)
    assert used()[0]
    good = (d / "r.summary").read_bytes()
    # Open to others, owned by someone else, a link, a damaged copy, an older format.
    (d / "r.summary").chmod(0o644)
    fallback("mode 0644")
    (d / "r.summary").chmod(0o600)
    if os.geteuid() == 0:
        os.chown(d / "r.summary", 4321, -1)
        fallback("owned by uid 4321")
        os.chown(d / "r.summary", 0, -1)
    assert used()[0]
    (d / "r.summary").rename(tmp_path / "elsewhere.summary")
    os.symlink(tmp_path / "elsewhere.summary", d / "r.summary")
    fallback("symbolic link")
    (d / "r.summary").unlink()
    (d / "r.summary").write_bytes(good[: len(good) // 2])
    (d / "r.summary").chmod(0o600)
    fallback("cut off")
    (d / "r.summary").write_bytes(_sealed(good[:8] + b"\x02" + good[9:-12]))
    fallback("summary format 2")
    proc = summarize(d)  # an old-format summary is made again
    assert "summarized 1 trace" in proc.stdout, proc.stdout
    assert used()[0]


def test_a_summary_without_its_trace_is_read_only_when_named(tmp_path):
    src = os.path.join(TRACES, "multi", "rank1.trace")
    if not os.path.exists(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    os.makedirs(d)
    shutil.copy(src, d / "lone.trace")
    shutil.copy(os.path.join(TRACES, "multi", "rank0.trace"), d / "r.trace")
    summarize(d)
    (d / "lone.trace").unlink()
    proc = run(["--format", "json", str(d)])
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["processes"]) == 1
    assert "lone.summary: a summary without its trace; skipped" in proc.stderr
    proc = run(["--format", "json", str(d), str(d / "lone.summary")])
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["processes"]) == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_root_summarizes_a_users_trace_for_that_user(tmp_path):
    """A summary is used only when owned like its trace: made by root for a user's trace,
    it is the user's."""
    src = os.path.join(TRACES, "multi", "rank0.trace")
    if not os.path.exists(src):
        pytest.skip("make report-fixtures first")
    d = tmp_path / "d"
    os.makedirs(d)
    shutil.copy(src, d / "r.trace")
    os.chmod(d / "r.trace", 0o600)
    os.chown(d / "r.trace", 4321, 4322)
    summarize(d)
    st = os.stat(d / "r.summary")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (4321, 4322, 0o600)
    proc = run([str(d)])
    assert proc.returncode == 0 and "read from summaries" in proc.stderr, proc.stderr
    assert "not used" not in proc.stderr
