"""profrun's command line: exit status, report printing, options, bad input."""
import json
import os
import subprocess

import pytest

from conftest import PROFREPORT, PROFRUN, build_path, needs_cuda, trace_files


def run(args, **kw):
    return subprocess.run([PROFRUN] + args, capture_output=True, text=True, timeout=60, **kw)


def test_help_lists_every_setting():
    proc = run(["--help"])
    assert proc.returncode == 0
    for name in ["PROF_OUTPUT_DIR", "PROF_RING_KB", "PROF_CUDART", "PROF_FLUSH_MS", "PROF_RUN_ID"]:
        assert name in proc.stdout


def test_wrong_option_is_a_clear_error():
    proc = run(["--no-such-option", "true"])
    assert proc.returncode == 2
    assert "profrun --help" in proc.stderr


def test_missing_command():
    proc = run([])
    assert proc.returncode == 2
    assert "no command" in proc.stderr


def test_command_not_found_exits_127():
    proc = run(["--no-report", "/no/such/program"])
    assert proc.returncode == 127
    assert "cannot run /no/such/program" in proc.stderr


def test_command_not_found_gives_its_reason_and_no_report(tmp_path):
    """Issue 20: a missing program ended with the report's "no *.trace files" line."""
    proc = run(["-o", str(tmp_path), "no-such-program-anywhere"])
    assert proc.returncode == 127
    assert proc.stderr == "profrun: cannot run no-such-program-anywhere: not found in PATH\n"


def test_unwritable_output_folder_runs_the_program_unprofiled(tmp_path):
    """Issue 20: profrun refused to run the program (rc 2); profiling stays off, the
    program runs, with one line on stderr and its own exit status."""
    marker = tmp_path / "ran"
    proc = run(["-o", "/proc/forbidden/out", "--", "sh", "-c", "touch %s; exit 3" % marker])
    assert proc.returncode == 3
    assert marker.exists()
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot write to the output folder /proc/forbidden/out" in lines[0]
    assert "the program runs without profiling" in lines[0]
    assert proc.stdout == ""


def _static_program(tmp_path):
    src = tmp_path / "st.c"
    src.write_text("int main(void) { return 5; }\n")
    exe = tmp_path / "st"
    cc = subprocess.run(["cc", "-static", "-o", str(exe), str(src)], capture_output=True)
    if cc.returncode != 0:
        pytest.skip("no static C library to link a static program with")
    return str(exe)


def test_static_program_gets_a_reason(tmp_path):
    exe = _static_program(tmp_path)
    proc = run(["--no-report", "-o", str(tmp_path / "out"), exe])
    assert proc.returncode == 5
    assert ("profrun: %s is statically linked: libprof.so cannot be loaded into it" % exe
            in proc.stderr)


def test_32_bit_program_gets_a_reason(tmp_path):
    exe = tmp_path / "prog32"
    with open("/bin/true", "rb") as f:
        head = bytearray(f.read(64))
    head[4] = 1  # EI_CLASS: ELFCLASS32
    exe.write_bytes(bytes(head))
    exe.chmod(0o755)
    # not a real program: exec falls back to sh, which may write files where it runs
    proc = run(["--no-report", "-o", str(tmp_path / "out"), str(exe)], cwd=str(tmp_path))
    assert "profrun: %s is a 32-bit program" % exe in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a setuid program of another user needs root")
def test_setuid_program_gets_a_reason(tmp_path):
    import shutil
    exe = tmp_path / "suid_true"
    shutil.copy("/bin/true", exe)
    os.chown(exe, 65534, -1)
    os.chmod(exe, 0o4755)
    tmp_path.chmod(0o755)
    proc = run(["--no-report", "-o", str(tmp_path / "out"), str(exe)])
    assert "profrun: %s is setuid or setgid" % exe in proc.stderr
    assert proc.returncode == 0


def test_dynamic_program_gets_no_such_line(tmp_path):
    proc = run(["--no-report", "-o", str(tmp_path), "/bin/true"])
    assert proc.returncode == 0 and proc.stderr == ""


def test_exit_status_and_signal_pass_through(tmp_path):
    assert run(["--no-report", "-o", str(tmp_path), "sh", "-c", "exit 42"]).returncode == 42
    assert run(["--no-report", "-o", str(tmp_path), "sh", "-c", "kill -TERM $$"]).returncode == 143


def test_commands_options_stay_the_commands(tmp_path):
    proc = run(["--no-report", "-o", str(tmp_path), "echo", "-o", "--help"])
    assert proc.returncode == 0
    assert proc.stdout == "-o --help\n"


def test_processes_without_events_still_write_a_small_trace(tmp_path):
    """Issue 12: a process that makes no CUDA or Python call (a C MPI rank) still says who
    it was: pid, host, role, its start, and a clean end. Before, it left no file at all."""
    proc = run(["--no-report", "-o", str(tmp_path), "sh", "-c", "ls / > /dev/null"])
    assert proc.returncode == 0
    assert len(trace_files(tmp_path)) == 2  # sh and ls
    out = subprocess.run([PROFREPORT, "--format", "json", str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert sorted(p["command"].split()[0] for p in rep["processes"]) == ["ls", "sh"]
    for p in rep["processes"]:
        assert p["clean_end"] is True
        assert p["meta"]["role"] == "process" and p["meta"]["node"] == p["host"]
        assert int(p["meta"]["start_realtime_ns"]) > 0
    assert rep["api"] == []


@needs_cuda
def test_prints_the_report_and_keeps_existing_preload(tmp_path):
    fixture = build_path("test", "fixtures", "lifecycle")
    env = dict(os.environ, LD_LIBRARY_PATH=build_path("test", "doubles"),
               LD_PRELOAD="libm.so.6")
    proc = run(["-o", str(tmp_path), fixture, "threads", "1", "25"], env=env)
    assert proc.returncode == 0
    assert "threads done" in proc.stdout
    assert "cudaGetDevice" in proc.stdout and "50" in proc.stdout
    assert "CUDA runtime API summary" in proc.stdout


@needs_cuda
def test_two_runs_in_one_folder_report_the_latest(tmp_path):
    fixture = build_path("test", "fixtures", "lifecycle")
    env = dict(os.environ, LD_LIBRARY_PATH=build_path("test", "doubles"))
    run(["--no-report", "-o", str(tmp_path), fixture, "threads", "1", "10"], env=env)
    proc = run(["-o", str(tmp_path), fixture, "threads", "1", "30"], env=env)
    assert len(trace_files(tmp_path)) == 2
    line = [l for l in proc.stdout.splitlines() if "cudaGetDevice" in l][0]
    assert line.split()[1] == "60", line


COUNT_F = "def f():\n    pass\nfor i in range(1000):\n    f()\n"


def _preload_copy(tmp_path):
    """The library under a second path: a separate copy for the dynamic linker."""
    import shutil
    copy = tmp_path / "copy" / "libprof.so"
    copy.parent.mkdir()
    shutil.copy(build_path("lib", "libprof.so"), copy)
    return str(copy)


def test_two_copies_of_the_library_write_one_trace(tmp_path):
    """Issue 20: an exported LD_PRELOAD of another copy of libprof.so plus profrun's own
    made two traces per process (2,000 calls for 1,000; with Python the two copies fought
    over the profile function and the program never ended). The second copy is passive."""
    out = tmp_path / "out"
    env = dict(os.environ, LD_PRELOAD=_preload_copy(tmp_path))
    proc = run(["--no-report", "-o", str(out), "/usr/bin/python3", "-c", COUNT_F], env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(trace_files(out)) == 1
    rep = json.loads(subprocess.run([PROFREPORT, "--format", "json", "--python", str(out)],
                                    capture_output=True, text=True, timeout=60).stdout)
    rows = [r for r in rep["python"] if r["name"] == "f"]
    assert [r["ncalls"] for r in rows] == [1000]


@needs_cuda
def test_two_copies_of_the_library_count_c_calls_once(tmp_path):
    fixture = build_path("test", "fixtures", "lifecycle")
    out = tmp_path / "out"
    env = dict(os.environ, LD_LIBRARY_PATH=build_path("test", "doubles"),
               LD_PRELOAD=_preload_copy(tmp_path))
    proc = run(["-o", str(out), fixture, "threads", "1", "25"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(trace_files(out)) == 1
    line = [l for l in proc.stdout.splitlines() if "cudaGetDevice" in l][0]
    assert line.split()[1] == "50", line


def test_report_cut_by_a_closed_pipe_is_said(tmp_path):
    """Issue 20: `profrun ... | head -1` lost the report in silence."""
    proc = subprocess.run(["bash", "-c", '"$0" -o "$1" sh -c "echo a; echo b; sleep 0.3" | head -1',
                           PROFRUN, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "a\n"
    assert "the report's reader closed its end" in proc.stderr, proc.stderr
    assert "profreport %s" % tmp_path in proc.stderr
