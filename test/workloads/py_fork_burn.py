"""A forked child that burns CPU in Python (sampling restarts its timer in the child)."""
import os
import time


def child_burn(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


pid = os.fork()
if pid == 0:
    child_burn(0.3)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("py_fork_burn done", status)
