"""Process life under the profiler: threads, fork, exec, _exit, signals, abort, SIGKILL.

The fixture (test/fixtures/process/lifecycle.c) makes a known number of cudaGetDevice
calls against the device double, then ends or multiplies as its mode says. For each mode
the program's output and exit status must be what they are without the profiler, and
the report must hold exactly the calls made up to the point the process could write.
"""
import json
import os
import resource
import signal
import subprocess

import pytest

from conftest import (LIBPROF, build_path, needs_cuda, profile, report, report_json,
                      trace_files)

pytestmark = needs_cuda

FIXTURE = build_path("test", "fixtures", "lifecycle")
DOUBLE_ENV = {"LD_LIBRARY_PATH": build_path("test", "doubles")}


def bare(args):
    env = dict(os.environ, **DOUBLE_ENV)
    return subprocess.run([FIXTURE] + args, env=env, capture_output=True, text=True, timeout=60)


def profiled(tmp_path, args):
    out = tmp_path / "prof"
    proc = profile([FIXTURE] + args, out, env=DOUBLE_ENV, check=False)
    return proc, out


def calls_by_pid(rep):
    return {p["pid"]: sum(t["calls"] for t in p["threads"]) for p in rep["processes"]}


@pytest.mark.parametrize("args", [["threads", "3", "100"], ["fork", "10"], ["fork_exit", "10"],
                                  ["exec", "10"], ["spawn", "10"], ["sigterm", "10"], ["sigterm_own", "10"],
                                  ["sigint_query"], ["abort", "10"], ["sigkill", "10"],
                                  ["exit_thread", "10"], ["fault", "segv", "10"],
                                  ["fault", "bus", "10"], ["fault", "fpe", "10"],
                                  ["fault", "ill", "10"], ["segv_own", "10"],
                                  ["segv_chain", "10"]])
def test_output_and_exit_status_unchanged(tmp_path, args):
    want = bare(args)
    got, _ = profiled(tmp_path, args)
    assert got.stdout == want.stdout
    assert got.returncode == (want.returncode if want.returncode >= 0 else 128 - want.returncode)


def test_threads_each_have_their_calls(tmp_path):
    proc, out = profiled(tmp_path, ["threads", "3", "100"])
    assert proc.returncode == 0
    rep = report_json(out)
    (p,) = rep["processes"]
    assert sorted(t["calls"] for t in p["threads"]) == [100, 100, 100, 100]
    assert len({t["tid"] for t in p["threads"]}) == 4
    assert p["clean_end"] is True


@pytest.mark.parametrize("mode", ["fork", "fork_exit"])
def test_fork_child_writes_its_own_file(tmp_path, mode):
    proc, out = profiled(tmp_path, [mode, "10"])
    assert proc.returncode == 0
    assert len(trace_files(out)) == 2
    rep = report_json(out)
    assert sorted(calls_by_pid(rep).values()) == [10, 20]
    parent = [p for p in rep["processes"] if sum(t["calls"] for t in p["threads"]) == 10][0]
    child = [p for p in rep["processes"] if p is not parent][0]
    assert child["ppid"] == parent["pid"]
    assert child["clean_end"] is True, "_exit in the child still writes everything"


@pytest.mark.parametrize("mode", ["exec", "spawn"])
def test_child_with_empty_environment_is_still_profiled(tmp_path, mode):
    proc, out = profiled(tmp_path, [mode, "10"])
    assert proc.returncode == 0
    files = trace_files(out)
    assert len(files) == 2, files
    rep = report_json(out)
    assert sorted(sum(t["calls"] for t in p["threads"]) for p in rep["processes"]) == [10, 30]
    assert all(p["clean_end"] for p in rep["processes"])
    if mode == "exec":
        assert len({p["pid"] for p in rep["processes"]}) == 1, "exec keeps the pid"
    else:
        parent, child = sorted(rep["processes"], key=lambda p: sum(t["calls"] for t in p["threads"]))
        assert child["ppid"] == parent["pid"]


@pytest.mark.parametrize("mode,status", [("sigterm", 143), ("abort", 134)])
def test_fatal_signal_flushes_then_acts_as_default(tmp_path, mode, status):
    proc, out = profiled(tmp_path, [mode, "10"])
    assert proc.returncode == status
    rep = report_json(out)
    assert calls_by_pid(rep) and list(calls_by_pid(rep).values()) == [10]


FAULTS = {"segv": signal.SIGSEGV, "bus": signal.SIGBUS, "fpe": signal.SIGFPE,
          "ill": signal.SIGILL}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_hardware_fault_flushes_then_dies_as_before(tmp_path, fault):
    """The fault comes right after the calls, long before the collector's first pass."""
    proc, out = profiled(tmp_path, ["fault", fault, "10"])
    assert proc.returncode == 128 + FAULTS[fault]
    assert list(calls_by_pid(report_json(out)).values()) == [10]


def raw_wait_status(args, env, cwd):
    """The wait status the parent sees (core-dump bit included), cores allowed."""
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(str(cwd))
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.execve(args[0], args, env)
        finally:
            os._exit(127)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("fault", ["segv", "fpe"])
def test_hardware_fault_wait_status_and_core_unchanged(tmp_path, fault):
    env = dict(os.environ, **DOUBLE_ENV)
    (tmp_path / "bare").mkdir()
    (tmp_path / "prof").mkdir()
    want = raw_wait_status([FIXTURE, "fault", fault, "10"], env, tmp_path / "bare")
    env.update(LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(tmp_path / "out"), PROF_QUIET="1")
    got = raw_wait_status([FIXTURE, "fault", fault, "10"], env, tmp_path / "prof")
    assert os.WIFSIGNALED(got) and os.WTERMSIG(got) == FAULTS[fault]
    assert got == want, "same signal and the same core-dump bit"
    assert list(calls_by_pid(report_json(tmp_path / "out")).values()) == [10]


def test_program_fault_handler_still_recovers(tmp_path):
    proc, out = profiled(tmp_path, ["segv_own", "10"])
    assert proc.returncode == 0
    assert proc.stdout == "recovered from 3 faults\n"
    (p,) = report_json(out)["processes"]
    assert sum(t["calls"] for t in p["threads"]) == 10 and p["clean_end"] is True


def test_program_fault_handler_that_chains_to_default_still_flushes(tmp_path):
    proc, out = profiled(tmp_path, ["segv_chain", "10"])
    assert proc.returncode == 128 + signal.SIGSEGV
    assert proc.stdout.splitlines() == ["previous SIGSEGV action default", "own SIGSEGV handler"]
    assert list(calls_by_pid(report_json(out)).values()) == [10]


def test_program_own_signal_handler_runs(tmp_path):
    proc, out = profiled(tmp_path, ["sigterm_own", "10"])
    assert proc.returncode == 7
    assert "own handler" in proc.stdout
    assert list(calls_by_pid(report_json(out)).values()) == [10]


def test_program_sees_default_dispositions(tmp_path):
    """Started with the default dispositions (whatever the test run's own: a background
    job ignores SIGINT), the program sees them, not the profiler's handlers."""
    def defaults():
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)

    proc = subprocess.run([build_path("bin", "profrun"), "--no-report", "-o", str(tmp_path / "p"),
                           "--", FIXTURE, "sigint_query"], env=dict(os.environ, **DOUBLE_ENV),
                          capture_output=True, text=True, timeout=60, preexec_fn=defaults)
    assert proc.stdout.splitlines() == ["SIGINT default", "SIGTERM default",
                                        "SIGHUP was default", "SIGHUP then ignored"]


def test_sigkill_leaves_a_readable_prefix(tmp_path):
    proc, out = profiled(tmp_path, ["sigkill", "10"])
    assert proc.returncode == 137
    rep = report_json(out)
    (p,) = rep["processes"]
    assert sum(t["calls"] for t in p["threads"]) == 10
    assert p["clean_end"] is False
    text = report(out).stdout
    assert "cudaGetDevice" in text


def test_exit_from_a_thread(tmp_path):
    proc, out = profiled(tmp_path, ["exit_thread", "10"])
    assert proc.returncode == 5
    assert list(calls_by_pid(report_json(out)).values()) == [10]


def test_bare_preload_with_unwritable_output_dir_runs_unharmed(tmp_path):
    env = dict(os.environ, LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR="/proc/no/such/dir", **DOUBLE_ENV)
    proc = subprocess.run([FIXTURE, "threads", "2", "50"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == "threads done\n"
    lines = [l for l in proc.stderr.splitlines() if l.startswith("profrun:")]
    dir_lines = [l for l in lines if "/proc/no/such/dir" in l]
    assert len(dir_lines) == 1 and "profiling is off" in dir_lines[0]
    assert len(lines) == len(set(lines)), "each failure is said once"
    assert len(lines) <= 2, lines  # the folder, and at most CUPTI's own (no GPU driver)


@pytest.mark.parametrize("how", ["close_range", "closefrom", "dup2"])
def test_program_that_takes_our_descriptor_keeps_its_files_intact(tmp_path, how):
    data = tmp_path / "data.bin"
    proc, out = profiled(tmp_path, ["closefd", how, str(data), "10"])
    assert proc.stdout == "data ok\n"
    assert proc.returncode == 0
    assert data.read_bytes() == b"the program's own data, 35 bytes.\n" * 2
    (p,) = report_json(out)["processes"]
    assert sum(t["calls"] for t in p["threads"]) == 20, "the calls after it are written too"
    assert p["clean_end"] is True
    notes = [l for l in proc.stderr.splitlines() if "descriptor of the trace file" in l]
    assert len(notes) == 1, proc.stderr


def run_with_file_limit(tmp_path, limit, args, ignore_sigxfsz, flush_ms="50"):
    """Profiles args with RLIMIT_FSIZE at limit bytes: writes past it fail (EFBIG), and
    raise SIGXFSZ, whose default action kills the writer."""
    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if ignore_sigxfsz else signal.SIG_DFL)
    env = dict(os.environ, LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(tmp_path / "out"),
               PROF_FLUSH_MS=flush_ms, **DOUBLE_ENV)
    return subprocess.run([FIXTURE] + args, env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=limit_files)


@pytest.mark.parametrize("ignore_sigxfsz", [True, False], ids=["sigxfsz_ignored", "sigxfsz_default"])
def test_trace_that_cannot_be_written_leaves_no_empty_file(tmp_path, ignore_sigxfsz):
    proc = run_with_file_limit(tmp_path, 0, ["threads", "2", "1000"], ignore_sigxfsz)
    assert proc.returncode == 0, "the program is unaffected (never killed by SIGXFSZ)"
    assert proc.stdout == "threads done\n"
    said = [l for l in proc.stderr.splitlines() if "cannot write the trace" in l]
    assert len(said) == 1, proc.stderr
    assert "File too large" in said[0] and "profiling is off" in said[0]
    assert "the empty file was removed" in said[0]
    assert os.listdir(tmp_path / "out") == []


def test_trace_cut_by_the_file_limit_keeps_what_was_written(tmp_path):
    limit = 4 << 20
    # passes every millisecond: the first ones, made while the calls run, fit; the
    # 4 M calls (~100 MB of records) do not
    proc = run_with_file_limit(tmp_path, limit, ["threads", "2", "2000000"], False, "1")
    assert proc.returncode == 0 and proc.stdout == "threads done\n"
    said = [l for l in proc.stderr.splitlines() if "cannot write the trace" in l]
    assert len(said) == 1 and "the file holds what was written before" in said[0], proc.stderr
    (path,) = trace_files(tmp_path / "out")
    assert 0 < os.path.getsize(path) <= limit
    rep = report(path, "--format", "json")
    assert "cut off" not in rep.stderr, "the file ends on a record boundary"
    (p,) = json.loads(rep.stdout)["processes"]
    assert 0 < sum(t["calls"] for t in p["threads"]) < 6000000
    assert p["clean_end"] is False


def test_report_skips_empty_and_foreign_files_in_a_folder(tmp_path):
    proc, out = profiled(tmp_path, ["threads", "1", "10"])
    assert proc.returncode == 0
    (trace,) = trace_files(out)
    (out / "a_empty.trace").write_bytes(b"")
    (out / "b_foreign.trace").write_text("not a trace at all, but a text file\n")
    (out / "c_short.trace").write_bytes(open(trace, "rb").read()[:10])
    rep = report(out, "--format", "json")
    assert rep.returncode == 0
    warnings = sorted(l for l in rep.stderr.splitlines() if "skipped" in l)
    assert len(warnings) == 3, rep.stderr
    assert "a_empty.trace: empty file" in warnings[0]
    assert "b_foreign.trace: not a profrun trace" in warnings[1]
    assert "c_short.trace: cut off inside its file header" in warnings[2]
    assert list(calls_by_pid(json.loads(rep.stdout)).values()) == [20]


def test_prof_disable_records_nothing(tmp_path):
    out = tmp_path / "prof"
    proc = profile([FIXTURE, "threads", "1", "10"], out, env=dict(DOUBLE_ENV, PROF_DISABLE="1"))
    assert proc.returncode == 0
    assert trace_files(out) == []


def test_trace_records_process_metadata(tmp_path):
    proc, out = profiled(tmp_path, ["threads", "1", "10"])
    assert proc.returncode == 0
    (p,) = report_json(out)["processes"]
    meta = p["meta"]
    assert meta["cuda_runtime_version"] == "13000"  # the device double reports 13.0
    assert meta["argv"] == [FIXTURE, "threads", "1", "10"]
    for key in ["pid", "ppid", "host", "exe", "run_id", "start_realtime_ns", "clock"]:
        assert key in meta, key
    assert p["pid"] == int(meta["pid"])


def test_signals_ignored_before_profrun_stay_ignored(tmp_path):
    """A job started with SIGINT, SIGQUIT, SIGTERM and SIGHUP ignored (a background job of a
    shell, nohup) keeps them ignored under profrun: the wrapper's own handling of them must
    not hand the program SIG_DFL (profrun did: Ctrl-C would then kill a job that ignored
    it)."""
    def ignore():
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)

    env = dict(os.environ, **DOUBLE_ENV)
    want = subprocess.run([FIXTURE, "sigint_query"], env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=ignore)
    assert "SIGINT handled" in want.stdout  # sigaction reports SIG_IGN as not SIG_DFL
    got = subprocess.run([build_path("bin", "profrun"), "--no-report", "-o", str(tmp_path / "p"),
                          "--", FIXTURE, "sigint_query"], env=env, capture_output=True,
                         text=True, timeout=60, preexec_fn=ignore)
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout
