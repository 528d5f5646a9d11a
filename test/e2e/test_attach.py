"""profrun attach PID (issue 21): libprof.so loaded into a process started without it,
recording only the window asked for; the process goes on with the same output and exit
status. Refusals: one line, exit status 1, the target untouched. The targets are
test/workloads/attach_loop.py."""
import glob
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import (CUDA_HOME, LIBPROF, PROFREPORT, PROFRUN, ROOT, build_path, have_torch,
                      needs_cuda, report_json)

LOOP = os.path.join(ROOT, "test", "workloads", "attach_loop.py")
DEBIAN = "/usr/bin/python3"
PYENV = os.path.expanduser("~/.pyenv/versions")


def pyenv(minor):
    found = sorted(glob.glob(os.path.join(PYENV, "3.%d.*" % minor, "bin", "python3")))
    return found[-1] if found else None


needs_torch = pytest.mark.skipif(not have_torch(), reason="Debian's python3-torch is not installed")
INTERPRETERS = [p for p in (pyenv(11), pyenv(12), pyenv(8), DEBIAN) if p]


class Target:
    """attach_loop.py started without profrun; waits until it says ready."""

    def __init__(self, cmd, env=None, log=None):
        full = dict(os.environ)
        for k in list(full):
            if k.startswith("PROF_") or k == "LD_PRELOAD":
                del full[k]
        full.update(env or {})
        if log:
            full["ATTACH_LOG"] = str(log)
        self.proc = subprocess.Popen(cmd, env=full, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        assert first.startswith("ready "), first + self.proc.stderr.read()
        self.pid = int(first.split()[1])
        self.ready_line = first

    def finish(self, timeout=300):
        out, err = self.proc.communicate(timeout=timeout)
        return self.ready_line.replace(str(self.pid), "PID") + out, err, self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def bare_run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    first, rest = proc.stdout.split("\n", 1)
    return "ready PID\n" + rest, proc.returncode


def attach(pid, outdir, *args, timeout=300, env=None, user=None, wrap=()):
    cmd = [PROFRUN, "attach", "-v", "-o", str(outdir)] + list(args) + [str(pid)]
    if user:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    cmd = list(wrap) + cmd
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full)


def meta(path, key):
    out = subprocess.run([PROFREPORT, "dump", path], capture_output=True, text=True, timeout=60)
    vals, prefix = [], 'META %s="' % key
    for line in out.stdout.splitlines():
        i = line.find(prefix)
        if i >= 0:
            vals.append(line[i + len(prefix):line.index('"', i + len(prefix))])
    return vals


def windows(path):
    opens = [int(v.split()[0]) for v in meta(path, "window_open")]
    closes = [int(v.split()[0]) for v in meta(path, "window_close")]
    return list(zip(opens, closes))


def logged_calls(log):
    """(start, end) realtime ns of every logged call."""
    calls, start = [], None
    for line in open(log):
        t, what = line.split()
        if what == "start":
            start = int(t)
        else:
            calls.append((start, int(t)))
    return calls


def bounds(calls, wins):
    """Calls made wholly inside the windows, and those that overlap them."""
    inside = sum(1 for s, e in calls for o, c in wins if s >= o and e <= c)
    overlap = sum(1 for s, e in calls for o, c in wins if e >= o and s <= c)
    return inside, overlap


def py_calls(rep, qualname):
    """ncalls by qualified name; before 3.11 the qualified names are resolved at exit, so
    while the process runs a nested function goes by its own name."""
    short = qualname.rsplit(".", 1)[-1]
    return sum(int(f["ncalls"]) for f in rep["python"] if f["qualname"] in (qualname, short))


def signal_dispositions(pid):
    """Caught, ignored and blocked signals of the process; not glibc's own 32 and 33
    (SIGCANCEL, SIGSETXID), whose handlers glibc installs at a process's first
    pthread_create, the attach's own thread in a program that had none."""
    status = open("/proc/%d/status" % pid).read()
    glibc = (1 << 31) | (1 << 32)
    return [(l.split(":")[0], int(l.split()[1], 16) & ~glibc) for l in status.splitlines()
            if l.startswith(("SigCgt", "SigIgn", "SigBlk"))]


def only_trace(outdir):
    (path,) = glob.glob(os.path.join(str(outdir), "*.trace"))
    return path


@pytest.mark.parametrize("python", INTERPRETERS)
def test_attach_to_a_python_loop_records_the_calls_inside_its_window(tmp_path, python):
    cmd = [python, LOOP, "py", "4000"]
    bare_out, bare_rc = bare_run(cmd)
    log, out = tmp_path / "calls.log", tmp_path / "prof"
    t = Target(cmd, log=log)
    try:
        time.sleep(0.5)
        before = signal_dispositions(t.pid)
        got = attach(t.pid, out, "--duration", "1")
        assert got.returncode == 0, got.stderr
        assert "Capture window: attach" in got.stdout, got.stdout
        assert "stopped for" in got.stderr
        assert signal_dispositions(t.pid) == before, "the program's signal handling is its own"
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert (stdout, rc) == (bare_out, bare_rc) == (bare_out, 3), stderr
    path = only_trace(out)
    wins = windows(path)
    assert len(wins) == 1 and 0.9e9 < wins[0][1] - wins[0][0] < 2e9, wins
    inside, overlap = bounds(logged_calls(log), wins)
    rep = report_json(out, "--python")
    n = py_calls(rep, "main.<locals>.work")
    assert inside > 100 and inside <= n <= overlap and overlap - inside <= 2, (inside, n, overlap)
    assert py_calls(rep, "main") == 0, "main() began before the window: not a call of it"


@needs_torch
def test_attach_for_steps_to_a_torch_loop_records_exactly_those_steps(tmp_path):
    cmd = [DEBIAN, LOOP, "torch", "3000"]
    bare_out, bare_rc = bare_run(cmd)
    out = tmp_path / "prof"
    t = Target(cmd)
    try:
        time.sleep(1)
        got = attach(t.pid, out, "--steps", "50")
        assert got.returncode == 0, got.stderr
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert (stdout, rc) == (bare_out, bare_rc), stderr
    rep = report_json(out, "--python")
    assert py_calls(rep, "main.<locals>.train_step") == 50
    assert py_calls(rep, "SGD.step") == 50
    ops = {o["name"]: o["calls"] for o in report_json(out, "--ops")["ops"]}
    assert ops["aten::addmm"] == 50, "one Linear forward per recorded step"
    assert ops["Optimizer.step#SGD.step"] == 50
    path = only_trace(out)
    opens, closes = meta(path, "window_open"), meta(path, "window_close")
    assert len(opens) == len(closes) == 1
    first, last = int(opens[0].split()[2]), int(closes[0].split()[2])
    assert opens[0].split()[1] == closes[0].split()[1] == "step" and last - first == 49
    # the library saw no steps before it was loaded: the report numbers them from the window
    from conftest import report
    line = [l for l in report(out).stdout.splitlines() if "Capture window (attach)" in l]
    assert line and "steps numbered from its first, recorded inside it only;" in line[0], line


@needs_torch
def test_attach_for_a_duration_then_for_steps(tmp_path):
    """The first attach (a duration) starts the step count: a later one can ask for steps."""
    cmd = [DEBIAN, LOOP, "torch", "3000"]
    out = tmp_path / "prof"
    t = Target(cmd)
    try:
        time.sleep(1)
        got = attach(t.pid, out, "--duration", "0.3", "--no-report")
        assert got.returncode == 0, got.stderr
        got = attach(t.pid, out, "--steps", "30", "--no-report")
        assert got.returncode == 0, got.stderr
        _, stderr, rc = t.finish()
    finally:
        t.kill()
    assert rc == 3, stderr
    path = only_trace(out)
    opens, closes = meta(path, "window_open"), meta(path, "window_close")
    assert [o.split()[1] for o in opens] == ["attach", "step"]
    assert [c.split()[1] for c in closes] == ["attach", "step"]
    assert int(closes[1].split()[2]) - int(opens[1].split()[2]) == 29


@needs_torch
def test_attach_for_a_duration_to_a_torch_loop_counts_its_steps_exactly(tmp_path):
    cmd = [DEBIAN, LOOP, "torch", "3000"]
    log, out = tmp_path / "calls.log", tmp_path / "prof"
    t = Target(cmd, log=log)
    try:
        time.sleep(1)
        got = attach(t.pid, out, "--duration", "1")
        assert got.returncode == 0, got.stderr
        t.finish()
    finally:
        t.kill()
    inside, overlap = bounds(logged_calls(log), windows(only_trace(out)))
    rep = report_json(out, "--python")
    n = py_calls(rep, "main.<locals>.train_step")
    assert inside > 50 and inside <= n <= overlap and overlap - inside <= 2, (inside, n, overlap)
    ops = {o["name"]: o["calls"] for o in report_json(out, "--ops")["ops"]}
    assert inside <= ops["Optimizer.step#SGD.step"] <= overlap


def test_attach_twice_reuses_the_loaded_library(tmp_path):
    python = pyenv(11) or DEBIAN
    cmd = [python, LOOP, "py", "6000"]
    log, out = tmp_path / "calls.log", tmp_path / "prof"
    t = Target(cmd, log=log)
    try:
        time.sleep(0.3)
        first = attach(t.pid, out, "--duration", "0.5", "--no-report")
        assert first.returncode == 0, first.stderr
        maps = open("/proc/%d/maps" % t.pid).read()
        assert maps.count(os.path.realpath(LIBPROF)) > 0
        time.sleep(0.3)
        second = attach(t.pid, out, "--duration", "0.5")
        assert second.returncode == 0, second.stderr
        assert "recorded: 2 intervals" in second.stdout, second.stdout
        loaded = open("/proc/%d/maps" % t.pid).read()
        assert len([l for l in loaded.splitlines() if os.path.realpath(LIBPROF) in l]) == \
            len([l for l in maps.splitlines() if os.path.realpath(LIBPROF) in l]), \
            "the library was loaded once"
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert rc == 3, stderr
    wins = windows(only_trace(out))
    assert len(wins) == 2
    inside, overlap = bounds(logged_calls(log), wins)
    n = py_calls(report_json(out, "--python"), "main.<locals>.work")
    assert inside <= n <= overlap and overlap - inside <= 4, (inside, n, overlap)


def test_attach_ten_times_to_one_process(tmp_path):
    """Ten windows in one process (3.12: sys.monitoring's events off and on again each
    time): each of its calls inside a window counted, the output as without."""
    python = pyenv(12) or DEBIAN
    cmd = [python, LOOP, "py", "6000"]
    bare_out, bare_rc = bare_run(cmd)
    log, out = tmp_path / "calls.log", tmp_path / "prof"
    t = Target(cmd, log=log)
    try:
        for i in range(10):
            got = attach(t.pid, out, "--duration", "0.1", "--no-report")
            assert got.returncode == 0, (i, got.stderr)
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert (stdout, rc) == (bare_out, bare_rc), stderr
    wins = windows(only_trace(out))
    assert len(wins) == 10
    inside, overlap = bounds(logged_calls(log), wins)
    n = py_calls(report_json(out, "--python"), "main.<locals>.work")
    assert inside > 100 and inside <= n <= overlap and overlap - inside <= 20, (inside, n, overlap)


def test_attach_until_ctrl_c(tmp_path):
    python = pyenv(12) or DEBIAN
    cmd = [python, LOOP, "py", "4000"]
    log, out = tmp_path / "calls.log", tmp_path / "prof"
    t = Target(cmd, log=log)
    try:
        time.sleep(0.3)
        a = subprocess.Popen([PROFRUN, "attach", "-o", str(out), str(t.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        a.send_signal(signal.SIGINT)
        stdout, stderr = a.communicate(timeout=60)
        assert a.returncode == 0, stderr
        assert "until Ctrl-C" in stderr and "Capture window: attach" in stdout
        _, _, rc = t.finish()
    finally:
        t.kill()
    assert rc == 3
    wins = windows(only_trace(out))
    assert len(wins) == 1
    inside, overlap = bounds(logged_calls(log), wins)
    n = py_calls(report_json(out, "--python"), "main.<locals>.work")
    assert inside > 100 and inside <= n <= overlap and overlap - inside <= 2, (inside, n, overlap)


def test_attach_with_busy_threads_and_one_blocked_in_a_long_read(tmp_path):
    python = pyenv(11) or DEBIAN
    cmd = [python, LOOP, "threads", "300"]
    bare_out, bare_rc = bare_run(cmd)
    out = tmp_path / "prof"
    t = Target(cmd)
    try:
        time.sleep(0.3)
        got = attach(t.pid, out, "--duration", "0.5")
        assert got.returncode == 0, got.stderr
        # the stopped thread is one blocked in a syscall: the reader's read() (0)
        # or the main thread's sleep (230), never a busy one
        assert "(in syscall 0)" in got.stderr or "(in syscall 230)" in got.stderr, got.stderr
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert "reader got b\"the pipe's data\"" in stdout
    assert (stdout, rc) == (bare_out, bare_rc), stderr


def test_threads_stopped_in_read_nanosleep_and_futex_go_on_as_before(tmp_path):
    """attach_blocked.c: one attach stopping each of its threads in turn (--tid): the
    read() gets its data, the relative nanosleep (-ERESTART_RESTARTBLOCK: restarted
    through restart_syscall) still sleeps 4 s in all, the condition wait wakes once."""
    exe = tmp_path / "blocked"
    src = os.path.join(ROOT, "test", "workloads", "attach_blocked.c")
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), src], check=True)
    bare = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    p = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = p.stdout.readline().split()
        pid, tids = int(ready[1]), ready[2:]
        time.sleep(0.2)
        for tid, nr in zip(tids, ("0", "230", "202")):  # read, clock_nanosleep, futex
            got = attach(pid, tmp_path / "o", "--tid", tid, "--duration", "0.05", "--no-report",
                         "--timeout", "2")
            assert got.returncode == 0, got.stderr
            assert "thread %s (in syscall %s)" % (tid, nr) in got.stderr, got.stderr
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert sorted(out.splitlines()) == sorted(bare.stdout.splitlines()[1:]), out + err
    assert "slept 4 s" in out and "reader 4 data" in out
    assert p.returncode == bare.returncode == 3


def test_attach_twenty_times_to_a_malloc_heavy_c_program(tmp_path):
    """attach_malloc.c: 8 threads in malloc/free (their heap blocks checked), one in read(),
    the main thread in nanosleep; 20 attaches (the library's thread loads, allocates and
    records while they run): no hang, no corruption, the same output and status."""
    exe = tmp_path / "malloc"
    src = os.path.join(ROOT, "test", "workloads", "attach_malloc.c")
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), src], check=True)
    p = subprocess.Popen([str(exe), "12"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        pid = int(p.stdout.readline().split()[1])
        stopped = set()
        for i in range(20):
            got = attach(pid, tmp_path / "o", "--duration", "0.05", "--no-report")
            assert got.returncode == 0, (i, got.stderr)
            stopped.add(got.stderr.split("(in syscall ")[1].split(")")[0])
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert (out, p.returncode) == ("ok many\n", 3), err
    assert stopped <= {"0", "230"}, "only the reader or the sleeper is ever stopped"
    wins = windows(only_trace(tmp_path / "o"))
    assert len(wins) == 20


def test_attach_opens_the_window_of_a_process_started_under_profrun(tmp_path):
    """Issue 21 item 5: PROF_WINDOW_SIGNAL, window closed; attach opens it (no signal)."""
    python = pyenv(11) or DEBIAN
    pre, out = tmp_path / "pre", tmp_path / "prof"
    full = dict(os.environ, PROF_WINDOW_SIGNAL="USR2")
    proc = subprocess.Popen([PROFRUN, "--no-report", "-o", str(pre), python, LOOP, "py", "3000"],
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline().split()[1])
        time.sleep(0.3)
        got = attach(pid, out, "--duration", "0.5")
        assert got.returncode == 0, got.stderr
        assert "traces in %s" % pre in got.stderr
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3
    path = only_trace(pre)
    assert [v.split()[1] for v in meta(path, "window_open")] == ["attach"]
    assert py_calls(report_json(pre, "--python"), "main.<locals>.work") > 100


needs_torchrun = pytest.mark.skipif(not (have_torch() and shutil.which("torchrun")),
                                    reason="no torch / torchrun for /usr/bin/python3")


def attach_torchrun_job(out, steps, log):
    """4 gloo DDP ranks (ddp_slow_rank.py, rank 1 sleeps 20 ms a step) started by torchrun
    without profrun, each logging its steps as they begin (DDP_STEP_LOG=log); once every
    rank is 10 steps in, `profrun attach --children-of AGENT --steps STEPS`. The attach's
    answer."""
    script = os.path.join(ROOT, "test", "workloads", "ddp_slow_rank.py")
    with socket.socket() as s:  # not torchrun's 29500, which another job may hold
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = subprocess.Popen(["torchrun", "--nproc_per_node", "4", "--master_port", str(port),
                              "--redirects", "2", "--tee", "1", script, "400", "1", "20"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, DDP_STEP_LOG=str(log)))
    try:
        logged = []
        for _ in range(1200):  # the ranks start their steps (each imports torch)
            time.sleep(0.1)
            logged = []
            for r in range(4):
                try:
                    logged.append(len(open("%s.rank%d" % (log, r)).readlines()))
                except OSError:
                    logged.append(0)
            if min(logged) >= 10 or agent.poll() is not None:
                break
        got = subprocess.run([PROFRUN, "attach", "-o", str(out), "--steps", str(steps),
                              "--children-of", str(agent.pid)],
                             capture_output=True, text=True, timeout=300)
        stdout, _ = agent.communicate(timeout=300)
    finally:
        if agent.poll() is None:
            agent.kill()
    assert got.returncode == 0, (got.stderr, "steps begun when attaching", logged, stdout[-2000:])
    assert agent.returncode == 0, stdout[-2000:]
    assert sorted(l.split(":", 1)[1] for l in stdout.splitlines() if " steps" in l) == \
        ["rank %d of 4: 400 steps" % r for r in range(4)]
    return got


@needs_torchrun
def test_children_of_a_torchrun_agent_one_job_with_the_slow_rank_named(tmp_path):
    """`--children-of AGENT --steps 20`: every rank records 20 steps, one job in the report,
    rank 1 named as the one the others wait for."""
    out = tmp_path / "prof"
    got = attach_torchrun_job(out, 20, tmp_path / "steps")
    assert "Ranks: 4 of world size 4" in got.stdout
    assert "Capture window: attach, in 4 processes" in got.stdout
    rep = report_json(out, "--ranks")["ranks"]
    rows = {r["rank"]: r for r in rep["rows"]}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rep["slowest"]["rank"] == 1, rep["slowest"]
    ops = {o["name"]: o["calls"] for o in report_json(out, "--ops")["ops"]}
    assert ops["Optimizer.step#SGD.step"] == 4 * 20


@needs_torchrun
def test_children_of_a_torchrun_agent_every_rank_records_the_same_steps(tmp_path):
    """Issue 21 item 4: ranks attached one after the other record the same steps of the
    program, so that they are compared step for step. Each rank logs when each of its steps
    begins (DDP_STEP_LOG, realtime); the steps that began inside a rank's window (META
    window_open/window_close) are its recorded ones: 20 in a row, the same indexes in every
    rank, and as many steps in the report. profrun puts the common start half a step after
    a step end of every rank (the step ends each library writes): a start at any time fell,
    about one run in five, between the ranks' ends of one step (3-5 ms apart here, 28 ms
    steps, 4 ranks on 2 cores), and the ranks began one step apart."""
    out, log = tmp_path / "prof", tmp_path / "steps"
    got = attach_torchrun_job(out, 20, log)
    assert "did not end together" not in got.stderr, got.stderr
    recorded, near = {}, {}
    for path in glob.glob(os.path.join(str(out), "*.trace")):
        rank = int(meta(path, "rank")[0])
        (win,) = windows(path)
        began = [tuple(map(int, l.split())) for l in open("%s.rank%d" % (log, rank))]
        recorded[rank] = [i for i, t in began if win[0] <= t <= win[1]]
        near[rank] = (win[0], [(i, t) for i, t in began if abs(t - win[0]) < 1e8])
    assert sorted(recorded) == [0, 1, 2, 3]
    assert all(r == list(range(r[0], r[0] + 20)) for r in recorded.values()), recorded
    procs = report_json(out)["processes"]
    assert sorted(len(p["steps"]["steps"]) for p in procs) == [20] * 4
    firsts = sorted(r[0] for r in recorded.values())
    assert firsts[-1] == firsts[0], (recorded, near)
    # the step ends are written while waiting only, and cleaned up
    assert not glob.glob(os.path.join(str(out), ".profrun-attach-*")), os.listdir(str(out))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm cluster on this machine (scripts/slurm-local.sh)."""
    d = tmp_path_factory.mktemp("slurm")
    script = os.path.join(ROOT, "scripts", "slurm-local.sh")
    proc = subprocess.run(["sh", script, "start", str(d)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PROF_")) and k not in ("RANK", "LD_PRELOAD")}
    env["SLURM_CONF"] = str(d / "slurm.conf")
    yield env
    subprocess.run(["sh", script, "stop", str(d)], timeout=60)


def test_slurm_job_every_rank_one_run_windows_together(slurm, tmp_path):
    """`srun -n 4 python attach_loop.py` running as a Slurm job, started without profrun;
    `profrun attach --slurm-job JOBID --duration 1`: one attach per node through
    srun --overlap, the 4 ranks recorded as one job with the windows opened together."""
    python = pyenv(11) or DEBIAN
    out = tmp_path / "prof"
    job = subprocess.Popen(["srun", "--overcommit", "-n", "4", python, LOOP, "py", "12000"],
                           env=slurm, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        jobid = None
        for _ in range(100):
            time.sleep(0.1)
            ids = subprocess.run(["squeue", "-h", "-o", "%i"], env=slurm, capture_output=True,
                                 text=True).stdout.split()
            if ids:
                jobid = ids[0]
                break
        assert jobid, "the job did not start"
        time.sleep(2)
        got = subprocess.run([PROFRUN, "attach", "-o", str(out), "--duration", "1",
                              "--slurm-job", jobid], env=slurm, capture_output=True, text=True,
                             timeout=120)
        stdout, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert got.returncode == 0, got.stdout + got.stderr
    assert "Ranks: 4 of world size 4" in got.stdout, got.stdout
    assert "Capture window: attach, in 4 processes" in got.stdout
    assert stdout.count("result ") == 4
    rep = report_json(out)
    assert sorted(int(p["meta"]["rank"]) for p in rep["processes"]) == [0, 1, 2, 3]
    assert len(rep["runs"]) == 1
    opens = [windows(p)[0][0] for p in glob.glob(os.path.join(str(out), "*.trace"))]
    assert max(opens) - min(opens) < 0.2e9, "the windows open together (a collector pass)"
    assert py_calls(report_json(out, "--python"), "main.<locals>.work") > 4 * 300


@needs_cuda
def test_attach_records_the_cuda_calls_of_a_running_program(tmp_path):
    """Issue 21 item 2: a C program linked to the CUDA runtime (the device double here),
    started without profrun, its cudaGetDevice calls already bound to the real function:
    after attach they go through our wrapper (its GOT entries rebound) and are counted in
    the window; the program goes on as before."""
    exe = tmp_path / "cuda_calls"
    src = os.path.join(ROOT, "test", "workloads", "attach_cuda_calls.c")
    subprocess.run(["cc", "-O2", "-pthread", "-I" + os.path.join(CUDA_HOME, "include"), "-o",
                    str(exe), src, "-L" + os.path.join(CUDA_HOME, "lib64"), "-lcudart"],
                   check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=build_path("test", "doubles"))
    p = subprocess.Popen([str(exe), "3000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        pid = int(p.stdout.readline().split()[1])
        got = attach(pid, tmp_path / "o", "--duration", "0.5", "--no-report")
        assert got.returncode == 0, got.stderr
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 3 and out.startswith("calls "), (out, err)
    made = int(out.split()[1])
    trace = only_trace(tmp_path / "o")
    assert meta(trace, "attach.calls_rebound") == ["1"]
    api = {r["name"]: r for r in report_json(tmp_path / "o")["api"]}
    counted = api.get("cudaGetDevice", {}).get("calls", 0)
    assert 0 < counted < made, (counted, made)


@needs_cuda
def test_attach_records_the_kernels_of_a_running_cuda_program(tmp_path):
    """Issue 21 item 2, the GPU side, on the device doubles (the fake runtime, CUPTI and
    driver): cuda_steps (test/fixtures/cuda) launching kernels, started without profrun.
    At attach CUPTI starts (the driver is loaded), the launches go through the rebound
    wrappers: every kernel in the window is tied to its launch, and the device, whose
    context CUPTI never heard made, is described from the driver (deviceProperties,
    occupancy). The program's output is a bare run's."""
    app = build_path("test", "fixtures", "cuda_steps")
    env = dict(os.environ, LD_LIBRARY_PATH=build_path("test", "doubles"))
    bare = subprocess.run([app, "2500", "1000"], capture_output=True, text=True, env=env,
                          timeout=120)
    p = subprocess.Popen([app, "2500", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        time.sleep(0.5)
        got = attach(p.pid, tmp_path / "o", "--duration", "0.5", "--no-report")
        assert got.returncode == 0, got.stderr
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert (out, p.returncode) == (bare.stdout, bare.returncode), (out, err)
    rep = report_json(tmp_path / "o")
    kernels = sum(k["calls"] for k in rep["gpu_kernels"])
    launches = {r["name"]: r["calls"] for r in rep["api"]}.get("__cudaLaunchKernel", 0)
    assert kernels > 0 and rep["gpu_unattributed_kernels"] == 0, rep["gpu_kernels"]
    # (a launch made just before the window closes may have its kernel after it, and one
    # under way as it opens may count on one side only: CI saw 859 launches for 860
    # kernels, none unattributed, the same with the reporter before this session's)
    assert abs(launches - kernels) <= 2, (launches, kernels)
    assert [(d["name"], d["sm_count"]) for d in rep["gpu_devices"]] == \
        [("NVIDIA H100 80GB HBM3 (test double)", 132)]


@pytest.mark.parametrize("minor", [8, 9, 10, 11, 12])
def test_attach_while_the_main_thread_waits_in_an_import_lock(tmp_path, minor):
    """The main thread waits in importlib's module lock (another thread imports the module,
    test/workloads/attach_blocked_import.py) when the attach comes: our attach runs when
    it wakes, still inside the lock's acquire, where an import of ours took the program's
    entry out of importlib's _blocking_on and its import failed with KeyError (3.8-3.11).
    Now the attach waits until the program is out of the lock: same output, exit 0, and
    work()'s calls after the import counted."""
    python = pyenv(minor)
    if not python:
        pytest.skip("no Python 3.%d under %s" % (minor, PYENV))
    script = os.path.join(ROOT, "test", "workloads", "attach_blocked_import.py")
    (tmp_path / "bare").mkdir()
    (tmp_path / "prof").mkdir()
    bare_out, bare_rc = bare_run([python, script, str(tmp_path / "bare")])
    out = tmp_path / "out"
    t = Target([python, script, str(tmp_path / "prof")])
    try:
        got = attach(t.pid, out, "--duration", "5", "--no-report")
        stdout, stderr, rc = t.finish()
    finally:
        t.kill()
    assert got.returncode == 0, got.stderr
    assert (stdout, rc) == (bare_out, bare_rc) and rc == 0, stderr
    assert "KeyError" not in stderr
    calls = py_calls(report_json(out, "--python"), "work")
    assert 150 <= calls <= 200, calls
