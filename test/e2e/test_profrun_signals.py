"""Signals sent to profrun reach the program once, and the report still follows (issue 20).

The program (a small Python script) counts the signals it receives and prints the counts
when the first one has arrived and a quiet moment has passed: exactly one of each is right,
two means profrun passed on a signal the program had already had (a terminal's Ctrl-C)."""
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time

import pytest

from conftest import PROFRUN

COUNTER = r"""
import signal, sys, time
got = {}
def on(sig, frame):
    got[sig] = got.get(sig, 0) + 1
for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, on)
print("ready", flush=True)
end = time.time() + 20
while not got and time.time() < end:
    time.sleep(0.01)
time.sleep(0.5)
print("got", " ".join("%s=%d" % (signal.Signals(s).name, n) for s, n in sorted(got.items())),
      flush=True)
"""


def _defaults():
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _wait_ready(stream):
    line = stream.readline()
    assert line.strip().endswith("ready"), line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP])
def test_signal_to_profrun_reaches_the_program_once(tmp_path, sig):
    proc = subprocess.Popen([PROFRUN, "-o", str(tmp_path), "--", sys.executable, "-c", COUNTER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_defaults)
    try:
        _wait_ready(proc.stdout)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "got %s=1" % signal.Signals(sig).name in out.splitlines(), out
    assert "Python" in out or "process" in out.lower(), "the report follows: " + out


def test_terminal_ctrl_c_is_not_delivered_twice(tmp_path):
    """Ctrl-C on the terminal goes to the whole foreground group, the program included:
    profrun must not send it a second time."""
    master, slave = pty.openpty()

    def session():
        _defaults()
        os.setsid()
        import fcntl
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([PROFRUN, "-o", str(tmp_path), "--", sys.executable, "-c", COUNTER],
                            stdin=slave, stdout=slave, stderr=slave, preexec_fn=session,
                            close_fds=True)
    os.close(slave)
    buf = b""
    try:
        deadline = time.time() + 60
        # The whole line, its end included: the terminal's interrupt flushes the output
        # not yet read, and an "\r\n" still in the line discipline would be lost.
        while b"ready\r\n" not in buf and time.time() < deadline:
            if select.select([master], [], [], 1)[0]:
                buf += os.read(master, 4096)
        assert b"ready\r\n" in buf, buf
        os.write(master, b"\x03")  # the terminal's interrupt character: SIGINT to the group
        while proc.poll() is None and time.time() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    buf += os.read(master, 4096)
                except OSError:
                    break
        proc.wait(timeout=30)
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = buf.decode(errors="replace").replace("\r", "").replace("^C", "")
    assert "got SIGINT=1" in text.splitlines(), text
