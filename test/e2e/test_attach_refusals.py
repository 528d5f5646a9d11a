"""profrun attach PID (issue 21), its refusals: one line, exit status 1, the target goes
on untouched (test_attach.py has what attach records)."""
import errno
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import LIBPROF, PROFRUN, ROOT
from test_attach import DEBIAN, LOOP, attach, only_trace, pyenv, windows


# ---- refusals: one line, status 1, the target goes on untouched ----

def refused(got, words):
    assert got.returncode == 1, (got.returncode, got.stdout, got.stderr)
    lines = [l for l in got.stderr.strip().splitlines()
             if " stopped for " not in l and " injected in " not in l]  # -v
    assert len(lines) == 1 and lines[0].startswith("profrun attach: "), got.stderr
    assert words in lines[0], lines[0]


def test_refuses_a_process_that_does_not_exist(tmp_path):
    pid = 4194000
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    refused(attach(pid, tmp_path), "no process")


def test_refuses_a_static_program(tmp_path):
    src = tmp_path / "st.c"
    src.write_text("#include <unistd.h>\nint main(void){for(;;)sleep(1);}\n")
    exe = tmp_path / "st"
    if subprocess.run(["cc", "-static", "-o", str(exe), str(src)]).returncode != 0:
        pytest.skip("no static glibc (libc.a) to build a static program")
    p = subprocess.Popen([str(exe)])
    try:
        time.sleep(0.2)
        refused(attach(p.pid, tmp_path / "o", "--duration", "1"), "no glibc mapped")
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_refuses_when_no_thread_waits_in_a_syscall(tmp_path):
    p = subprocess.Popen([DEBIAN, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        refused(attach(p.pid, tmp_path / "o", "--timeout", "1"), "no thread of process")
        assert p.poll() is None
        assert "TracerPid:\t0" in open("/proc/%d/status" % p.pid).read()
    finally:
        p.kill()
        p.wait()


def test_refuses_a_stopped_process(tmp_path):
    p = subprocess.Popen([DEBIAN, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.1)
        refused(attach(p.pid, tmp_path / "o", "--duration", "0.5"), "is stopped")
        os.kill(p.pid, signal.SIGCONT)
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_refuses_a_32_bit_program(tmp_path):
    """A 32-bit x86 program (assembled here: nanosleep through int 0x80, no libc needed)."""
    asm = tmp_path / "t32.s"
    asm.write_text(".globl _start\n_start:\n1: mov $162, %eax\n lea ts, %ebx\n"
                   " xor %ecx, %ecx\n int $0x80\n jmp 1b\n.data\nts: .long 1, 0\n")
    obj, exe = tmp_path / "t32.o", tmp_path / "t32"
    if subprocess.run(["as", "--32", "-o", str(obj), str(asm)], capture_output=True).returncode \
            or subprocess.run(["ld", "-m", "elf_i386", "-o", str(exe), str(obj)],
                              capture_output=True).returncode:
        pytest.skip("binutils cannot make a 32-bit x86 program here")
    try:
        p = subprocess.Popen([str(exe)])
    except OSError as e:  # (a kernel built without IA32 emulation: ENOEXEC)
        if e.errno != errno.ENOEXEC:
            raise
        pytest.skip("this kernel runs no 32-bit x86 program (%s)" % e)
    try:
        time.sleep(0.2)
        refused(attach(p.pid, tmp_path / "o"), "32-bit program")
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_refuses_a_process_started_under_profrun_without_a_window(tmp_path):
    python = pyenv(11) or DEBIAN
    pre = tmp_path / "pre"
    proc = subprocess.Popen([PROFRUN, "--no-report", "-o", str(pre), python, LOOP, "py", "2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline().split()[1])
        refused(attach(pid, tmp_path / "o", "--duration", "0.5"), "records its whole run already")
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3


class SeccompTarget:
    """attach_seccomp.c: a thread in seccomp strict mode blocked in read() on stdin, where
    any system call but read, write, exit and sigreturn kills the whole process."""

    def __init__(self, tmp_path, mode):
        exe = tmp_path / "seccomp"
        src = os.path.join(ROOT, "test", "workloads", "attach_seccomp.c")
        subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), src], check=True)
        self.proc = subprocess.Popen([str(exe), mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().split()
        assert ready[:1] == ["ready"], ready + [self.proc.stderr.read()]
        self.pid, self.strict_tid = int(ready[1]), int(ready[2])

    def alive_untraced(self):
        status = open("/proc/%d/status" % self.pid).read()
        return self.proc.poll() is None and "TracerPid:\t0\n" in status

    def finish(self):
        out, err = self.proc.communicate("go\n", timeout=60)
        return out, err, self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def test_refuses_a_process_in_seccomp_strict_mode(tmp_path):
    """Its only thread in seccomp strict mode, blocked in read(): the mmap attach would make
    in it kills the process (SIGKILL). Refused in one line; the read then gets its line."""
    t = SeccompTarget(tmp_path, "main")
    try:
        time.sleep(0.2)
        refused(attach(t.pid, tmp_path / "o", "--duration", "0.5", "--timeout", "1"),
                "seccomp strict mode")
        assert t.alive_untraced()
        out, err, rc = t.finish()
    finally:
        t.kill()
    assert (out, rc) == ("read 3 bytes\n", 3), err
    assert not os.path.exists(tmp_path / "o"), "refused before anything was made"


def test_never_stops_a_thread_in_seccomp_strict_mode(tmp_path):
    """Only the second thread is in strict mode (the main thread, waiting in pthread_join,
    is not, so /proc/PID/status says Seccomp: 0); it waits in read(), the better place to
    stop a thread than the main thread's futex. --tid names it: refused, naming seccomp;
    without --tid: the main thread is stopped instead and the library loads. The process
    lives through both and ends as it would have."""
    t = SeccompTarget(tmp_path, "thread")
    try:
        time.sleep(0.2)
        got = attach(t.pid, tmp_path / "o", "--tid", str(t.strict_tid), "--duration", "0.2",
                     "--timeout", "1", "--no-report")
        assert t.alive_untraced(), "the process was killed: %s" % got.stderr
        refused(got, "seccomp strict mode")
        got = attach(t.pid, tmp_path / "o", "--duration", "0.2", "--timeout", "2",
                     "--no-report")
        assert t.alive_untraced(), "the process was killed: %s" % got.stderr
        assert got.returncode == 0, got.stderr
        assert "thread %d (in syscall 202)" % t.pid in got.stderr, got.stderr
        out, err, rc = t.finish()
    finally:
        t.kill()
    assert (out, rc) == ("read 3 bytes\njoined\n", 3), err
    assert len(windows(only_trace(tmp_path / "o"))) == 1


def test_refuses_when_the_only_thread_blocked_is_in_seccomp_strict_mode(tmp_path):
    """The strict thread waits in read(), the main thread spins: no thread to stop safely;
    the refusal says that the blocked one is in seccomp strict mode."""
    t = SeccompTarget(tmp_path, "spin")
    try:
        time.sleep(0.2)
        got = attach(t.pid, tmp_path / "o", "--duration", "0.2", "--timeout", "1",
                     "--no-report")
        assert t.alive_untraced(), "the process was killed: %s" % got.stderr
        refused(got, "1 blocked in a system call run in seccomp strict mode")
        out, err, rc = t.finish()
    finally:
        t.kill()
    assert (out, rc) == ("read 3 bytes\njoined\n", 3), err


def _users():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    try:
        pwd.getpwuid(65534)
    except KeyError:
        return None
    return 65534, 65533


def _readable_build():
    # the other user must be able to run profrun from the build folder
    p = os.path.dirname(PROFRUN)
    while p != "/":
        if not os.stat(p).st_mode & 0o001:
            return False
        p = os.path.dirname(p)
    return True


def shared_tmp():
    d = tempfile.mkdtemp(prefix="attach-test-", dir="/tmp")
    os.chmod(d, 0o777)
    return d


def test_refuses_another_users_process():
    users = _users()
    if not users or not _readable_build():
        pytest.skip("needs root, setpriv and a build folder other users can reach")
    target_uid, attacher_uid = users
    p = subprocess.Popen(["setpriv", "--reuid=%d" % target_uid, "--regid=%d" % target_uid,
                          "--clear-groups", DEBIAN, "-c", "import time; time.sleep(30)"])
    out = os.path.join(shared_tmp(), "o")
    try:
        time.sleep(0.3)
        refused(attach(p.pid, out, "--duration", "0.5", user=attacher_uid), "another user")
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_refuses_when_ptrace_is_not_allowed():
    """Same user, but the target made itself non-dumpable: ptrace is refused (EPERM)."""
    users = _users()
    if not users or not _readable_build():
        pytest.skip("needs root, setpriv and a build folder other users can reach")
    uid = users[0]
    code = ("import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); print('ok', flush=True);"
            " time.sleep(30)")
    p = subprocess.Popen(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                          DEBIAN, "-c", code], stdout=subprocess.PIPE, text=True)
    out = os.path.join(shared_tmp(), "o")
    try:
        assert p.stdout.readline() == "ok\n"
        refused(attach(p.pid, out, "--duration", "0.5", user=uid),
                "ptrace is not allowed")
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def ptrace_scope():
    """kernel.yama.ptrace_scope, or None without Yama (read only: a test never writes it)."""
    try:
        return int(open("/proc/sys/kernel/yama/ptrace_scope").read())
    except OSError:
        return None


def test_refuses_without_cap_sys_ptrace_a_process_of_the_same_uid(tmp_path):
    """Root with CAP_SYS_PTRACE dropped (setpriv: bounding and inheritable sets, as in a
    container) and a root process it did not start, which holds every capability: the kernel
    refuses ptrace and /proc/PID/root (its capabilities are not a subset of the caller's),
    whatever ptrace_scope says. The reason names CAP_SYS_PTRACE, not a mount namespace;
    nothing is made, the target goes on."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (a same-uid target holding CAP_SYS_PTRACE) and setpriv")
    if ptrace_scope() == 3:
        pytest.skip("kernel.yama.ptrace_scope=3: no ptrace at all on this machine")
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]
    p = subprocess.Popen([DEBIAN, "-c", "import time; print('ok', flush=True); time.sleep(30)"],
                         stdout=subprocess.PIPE, text=True)
    out = tmp_path / "o"
    try:
        assert p.stdout.readline() == "ok\n"
        got = attach(p.pid, out, "--duration", "0.5", wrap=drop)
        refused(got, "CAP_SYS_PTRACE")
        assert "mount namespace" not in got.stderr, got.stderr
        assert p.poll() is None
        assert "TracerPid:\t0\n" in open("/proc/%d/status" % p.pid).read()
        assert not out.exists(), "refused before anything was made"
    finally:
        p.kill()
        p.wait()


def test_refuses_by_ptrace_scope_a_process_that_is_not_a_descendant():
    """Yama: ptrace_scope 1 lets a user trace its descendants only, 2 only with
    CAP_SYS_PTRACE. An attacher of the target's uid, without capabilities, on a target it
    did not start: refused, naming the setting. Runs only where Yama restricts (it is read,
    never written)."""
    scope = ptrace_scope()
    if scope is None:
        pytest.skip("no Yama on this kernel (/proc/sys/kernel/yama/ptrace_scope is missing)")
    if scope == 0:
        pytest.skip("kernel.yama.ptrace_scope=0: same-uid attach is allowed here")
    users = _users()
    if not users or not _readable_build():
        pytest.skip("needs root, setpriv and a build folder other users can reach")
    uid = users[0]
    p = subprocess.Popen(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                          DEBIAN, "-c", "import time; print('ok', flush=True); time.sleep(30)"],
                         stdout=subprocess.PIPE, text=True)
    out = os.path.join(shared_tmp(), "o")
    try:
        assert p.stdout.readline() == "ok\n"
        refused(attach(p.pid, out, "--duration", "0.5", user=uid),
                "kernel.yama.ptrace_scope=%d" % scope)
        assert p.poll() is None
        assert "TracerPid:\t0\n" in open("/proc/%d/status" % p.pid).read()
    finally:
        p.kill()
        p.wait()


def test_refuses_when_the_library_is_not_at_the_same_path_in_the_targets_mounts(tmp_path):
    libdir = os.path.dirname(os.path.realpath(LIBPROF))
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here: %s" % probe.stderr.decode().strip())
    script = "mount -t tmpfs none %s && exec %s -c 'import time; print(1, flush=True); " \
             "time.sleep(30)'" % (libdir, DEBIAN)
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                         stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline() != "1\n":
            pytest.skip("cannot mount a tmpfs in a new mount namespace here")
        refused(attach(p.pid, tmp_path / "o", "--duration", "0.5"), "mount namespace")
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_refuses_bad_arguments(tmp_path):
    got = subprocess.run([PROFRUN, "attach", "--duration", "1", "--steps", "2", "1"],
                         capture_output=True, text=True)
    assert got.returncode == 2 and "one or the other" in got.stderr
    got = subprocess.run([PROFRUN, "attach", "abc"], capture_output=True, text=True)
    assert got.returncode == 2 and "not a process id" in got.stderr
