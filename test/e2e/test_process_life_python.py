"""Process life of Python programs under the profiler (no CUDA needed): children made by
subprocess with a cleared environment, descriptors closed by the program, fatal signals,
a full disk. The interpreters are the pyenv builds and Debian's static /usr/bin/python3.
"""
import os
import subprocess

import pytest

from conftest import profile, report_json, trace_files

PYENV = "/root/.pyenv/versions"
INTERPRETERS = [(v, os.path.join(PYENV, full, "bin", "python3"))
                for v, full in (("3.8", "3.8.18"), ("3.11", "3.11.7"), ("3.13", "3.13.0"))]
INTERPRETERS.append(("debian3.11", "/usr/bin/python3"))


@pytest.fixture(params=INTERPRETERS, ids=[name for name, _ in INTERPRETERS])
def python(request):
    _, path = request.param
    if not os.access(path, os.X_OK):
        pytest.skip("interpreter %s is not installed" % path)
    return path


def py_calls(rep, name):
    """ncalls of the Python function `name` defined in a `-c` string, all processes."""
    rows = [r for r in rep["python"] if r["name"] == name and r["file"] == "<string>"]
    return sum(r["ncalls"] for r in rows)


# close_fds=False with an absolute path: subprocess uses posix_spawn (3.8+);
# close_fds=True: fork or vfork, then execve.
SPAWN_SCRIPT = r'''
import subprocess, sys
for name, close in (("spawned", False), ("forked", True)):
    code = "def %s():\n    pass\nfor i in range(7):\n    %s()\nprint('%s ok')" % (name, name, name)
    r = subprocess.run([sys.executable, "-c", code], env={}, close_fds=close,
                       stdout=subprocess.PIPE, universal_newlines=True)
    print(r.stdout.strip(), r.returncode)
'''


def test_subprocess_with_empty_environment_is_profiled(tmp_path, python):
    out = tmp_path / "prof"
    proc = profile([python, "-c", SPAWN_SCRIPT], out)
    assert proc.stdout.splitlines() == ["spawned ok 0", "forked ok 0"]
    assert len(trace_files(out)) == 3
    rep = report_json(out, "--python")
    assert len(rep["processes"]) == 3
    assert py_calls(rep, "spawned") == 7
    assert py_calls(rep, "forked") == 7


CRASH_SCRIPT = """
def before_crash():
    pass
for i in range(9):
    before_crash()
import ctypes
ctypes.string_at(0)
"""


@pytest.mark.parametrize("faulthandler", [False, True], ids=["plain", "faulthandler"])
def test_segfault_keeps_the_calls_made_before_it(tmp_path, python, faulthandler):
    args = [python] + (["-X", "faulthandler"] if faulthandler else []) + ["-c", CRASH_SCRIPT]
    bare = subprocess.run(args, capture_output=True, text=True, timeout=60)
    out = tmp_path / "prof"
    proc = profile(args, out, check=False)
    assert bare.returncode == -11
    assert proc.returncode == 128 + 11
    if faulthandler:  # the program's own handler still runs, and prints its traceback
        assert "Fatal Python error: Segmentation fault" in bare.stderr
        assert "Fatal Python error: Segmentation fault" in proc.stderr
    rep = report_json(out, "--python")
    assert py_calls(rep, "before_crash") == 9


CLOSERANGE_SCRIPT = r"""
import os, sys, time
def work():
    pass
for i in range(1000):
    work()
time.sleep(0.2)  # the trace is open and written
os.closerange(3, 65536)
data = b"the program's own data, 35 bytes.\n"
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, data)
for i in range(1000):
    work()
time.sleep(0.3)  # collector passes while the file is open
os.write(fd, data)
os.close(fd)
print("written")
"""


def test_closerange_leaves_the_program_files_intact(tmp_path, python):
    data = tmp_path / "data.bin"
    out = tmp_path / "prof"
    proc = profile([python, "-c", CLOSERANGE_SCRIPT, str(data)], out)
    assert proc.stdout == "written\n"
    assert data.read_bytes() == b"the program's own data, 35 bytes.\n" * 2
    rep = report_json(out, "--python")
    (p,) = rep["processes"]
    assert p["clean_end"] is True
    assert py_calls(rep, "work") == 2000
    notes = [l for l in proc.stderr.splitlines() if "descriptor of the trace file" in l]
    assert len(notes) == 1, proc.stderr


FORKS_SCRIPT = r"""
import os
def work():
    pass
for i in range(1000):
    work()
pids = []
for k in range(3):
    pid = os.fork()
    if pid == 0:
        for i in range(1000):
            work()
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print("done")
"""


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the last byte (needs root: mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a full tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        subprocess.run(["dd", "if=/dev/zero", "of=%s" % (mnt / "fill"), "bs=4k"],
                       capture_output=True)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)])


def test_full_disk_leaves_no_empty_files_and_says_so(full_disk, python):
    out = full_disk / "out"
    proc = profile([python, "-c", FORKS_SCRIPT], out)
    assert proc.stdout == "done\n"
    said = [l for l in proc.stderr.splitlines() if "cannot write the trace" in l]
    assert 1 <= len(said) <= 4, proc.stderr  # at most once per process
    assert len(said) == len(set(said))
    assert all("No space left on device" in l and "the empty file was removed" in l
               for l in said)
    assert os.listdir(out) == []


KILLED_SCRIPT = r"""
import os, signal, time
def warm():
    pass
def step():
    pass
def made_late():
    pass
def loop(seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        for i in range(1000):
            step()
warm()
loop(2.5)  # passes between full ones read the hot nodes only: step's, not warm's
for i in range(500):
    warm()  # a node gone cold, called again
for i in range(300):
    made_late()  # a node made after the full passes began
loop(4.5)  # longer than the longest wait for a full pass (2 s)
print("killing", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_killed_process_keeps_counts_up_to_a_full_pass_before(tmp_path):
    """SIGKILL leaves the counts the collector's passes wrote: those of the loop's nodes
    at every pass, of a cold node called again and of a new node by the next full pass
    (at most 2 s after; the loop after them runs 4.5 s)."""
    out = tmp_path / "prof"
    proc = profile(["/usr/bin/python3", "-c", KILLED_SCRIPT], out, check=False)
    assert proc.returncode == 128 + 9 or proc.returncode == -9, proc.stderr
    assert proc.stdout == "killing\n"
    rep = report_json(out, "--python", "--phase", "all")
    assert py_calls(rep, "warm") == 501
    assert py_calls(rep, "made_late") == 300
    assert py_calls(rep, "step") >= 1000


MANY_NODES_SCRIPT = r"""
import time
ns = {}
exec("\n".join("def f%d():\n    pass" % i for i in range(20000)), ns)
exec("\n".join("def g%d():\n    pass" % i for i in range(5000)), ns)
funcs = [ns["f%d" % i] for i in range(20000)]
t = time.monotonic()
rounds = 0
while time.monotonic() - t < 2.0 and rounds < 5000:
    for f in funcs:
        f()
    ns["g%d" % rounds]()  # a node made in each round
    rounds += 1
print(rounds)
"""


def test_more_moving_nodes_than_a_pass_lists_are_all_counted(tmp_path):
    """20,000 call paths moving between the collector's full passes: more than a thread's
    list of the nodes the passes between read; the thread waits for the full passes, and
    every node, those made on the way too, is defined and counted exactly at the end."""
    out = tmp_path / "prof"
    proc = profile(["/usr/bin/python3", "-c", MANY_NODES_SCRIPT], out)
    rounds = int(proc.stdout)
    rep = report_json(out, "--python", "--phase", "all", "--limit", "0")
    rows = [r for r in rep["python"] if r["file"] == "<string>" and r["name"].startswith("f")
            and r["name"][1:].isdigit()]
    assert len(rows) == 20000
    assert all(r["ncalls"] == rounds for r in rows)
    made = [r for r in rep["python"] if r["file"] == "<string>" and r["name"].startswith("g")
            and r["name"][1:].isdigit()]
    assert len(made) == rounds and all(r["ncalls"] == 1 for r in made)
    assert not [w for w in rep.get("warnings", []) if "no PY_NODE record" in w]
