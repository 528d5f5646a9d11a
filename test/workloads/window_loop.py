"""Loops for the capture-window tests (test/e2e/test_capture_window.py).

    window_loop.py torch N          N SGD steps of a tiny model; train_step(i) is one step
    window_loop.py loader E         E epochs of 16 SGD steps, 30 ms apart, each epoch's batches
                                    read by two forked DataLoader workers
    window_loop.py torch_in_thread N  the same loop in a thread that the main thread joins
    window_loop.py torch_threads N T  T threads, each N SGD steps of its own tiny model
    window_loop.py python N         N calls of train_step(i), each ending with my_step(i)
    window_loop.py signal N K...    N calls of work(i); before iterations K... the process
                                    sends itself PROF_WINDOW_SIGNAL
    window_loop.py signal_own N K.. the same, with the program's own handler for the signal
                                    (it prints how often it ran)
    window_loop.py gen N K...       N values of the generator numbers(), which calls work(i)
                                    for each; before computing value K... it sends the process
                                    PROF_WINDOW_SIGNAL (from inside the generator's frame)
    window_loop.py thread           opens the window (PROF_WINDOW_SIGNAL), starts a thread in
                                    which long_task() calls work() 10 times, closes the window,
                                    then lets long_task call work() 10 times more and return
    window_loop.py churn N          N iterations, each starting two threads that call work()
                                    5 times and joining those of the iteration before; the
                                    process sends itself PROF_WINDOW_SIGNAL every 3rd
                                    iteration, and forks a child half-way that runs 20
                                    iterations more (prints "done TOTAL", the child's total
                                    on its own line first)
    window_loop.py map MS           for MS ms, work_abs(i) called from map() (C code), each
                                    calling abs(i) once: no eval-breaker check between a
                                    work_abs's return and the next one's start
    window_loop.py timed N MS FILE  N calls of tick(i), MS ms apart; the wall-clock time
                                    (ns) each call began is written to FILE, one per line

    window_loop.py late_thread      closed at start: starts a thread, opens the window
                                    (PROF_WINDOW_SIGNAL), the thread calls work() 10 times,
                                    the window closes, the thread returns (WINDOW_EVENTS:
                                    logged by the thread at 0, 2, 4, by the main thread at
                                    1, 3)

With WINDOW_EVENTS=FILE (torch, python, signal, thread and late_thread modes), the events
profrun's sys.monitoring tool has on (3.12+) after each iteration go to FILE, one line per
iteration: "i NAME,NAME,..." (empty after i when none). Before 3.12 the names are PROFILE
when the calling thread's state has a C profile function (sys.getprofile() cannot tell:
profrun's function has no Python object) and TRACING when its tracing flag is on; read
with ctypes at CPython's release-build offsets (x86-64), in the thread that logs.
"""
import os
import signal
import sys
import time


def work(i):
    return sum(range(i % 7 + 3))


def my_step(i):
    return work(i)


def train_step_python(i):
    work(i)
    return my_step(i)


def tick(i):
    return work(i)


def work_abs(i):
    return abs(i)


def numbers(marks, sig):
    i = 0
    while True:
        if i in marks:
            os.kill(os.getpid(), sig)
        yield work(i)
        i += 1


# PyThreadState: c_profilefunc; the tracing flag (3.8/3.9: use_tracing, an int in the
# state; 3.10: cframe->use_tracing, int; 3.11: cframe->use_tracing, uint8)
PROFILEFUNC = {(3, 8): 56, (3, 9): 56, (3, 10): 56, (3, 11): 64}
TRACING = {(3, 8): 48, (3, 9): 48, (3, 10): 48, (3, 11): 56}


def thread_profile_state(unused):
    """The names logged before 3.12 (see above) for the calling thread."""
    import ctypes
    ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
    ts = ctypes.pythonapi.PyThreadState_Get()
    version = sys.version_info[:2]
    names = []
    if ctypes.c_void_p.from_address(ts + PROFILEFUNC[version]).value:
        names.append("PROFILE")
    flag = ts + TRACING[version]
    if version >= (3, 10):
        flag = ctypes.c_void_p.from_address(flag).value
    ctype = ctypes.c_uint8 if version >= (3, 11) else ctypes.c_int
    if ctype.from_address(flag).value:
        names.append("TRACING")
    return names


def events_log():
    """(log, tool, list): log(tool) gives what to log for the calling thread now (3.12+:
    sys.monitoring.get_events itself, so that the tables list it), and the list each
    iteration appends it to; (None, None, None) without WINDOW_EVENTS."""
    if not os.environ.get("WINDOW_EVENTS"):
        return None, None, None
    if sys.version_info < (3, 12):
        import ctypes  # noqa: F401 (imported now, not inside the window)
        return thread_profile_state, None, []
    tool = [t for t in range(6) if sys.monitoring.get_tool(t) == "profrun"][0]
    return sys.monitoring.get_events, tool, []


def write_events(seen):
    if sys.version_info >= (3, 12):
        names = [n for n in dir(sys.monitoring.events) if n.isupper() and n != "NO_EVENTS"]
        seen = [[n for n in names if mask & getattr(sys.monitoring.events, n)]
                for mask in seen]
    with open(os.environ["WINDOW_EVENTS"], "w") as f:
        for i, on in enumerate(seen):
            f.write("%d %s\n" % (i, ",".join(on)))


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    log, tool, seen = events_log()
    if mode in ("torch", "torch_in_thread"):
        import threading
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(8, 4), torch.randn(8, 1)

        def train_step(i):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        def train():
            for i in range(n):
                train_step(i)
                if seen is not None:
                    seen.append(log(tool))

        if mode == "torch":
            train()
        else:  # the main thread waits in join() the whole time, with no event of its own
            t = threading.Thread(target=train)
            t.start()
            t.join()
        print("loss %.6f" % float(((model(x) - y) ** 2).mean()))
    elif mode == "torch_threads":
        # T threads, each N SGD steps of its own model (torch ops let the GIL go, so the
        # optimizer step scopes of the threads end at the same time)
        import threading
        import torch
        torch.set_num_threads(1)

        def trainer(seed):
            torch.manual_seed(seed)
            model = torch.nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            x, y = torch.randn(8, 4), torch.randn(8, 1)
            for _ in range(n):
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                opt.step()

        threads = [threading.Thread(target=trainer, args=(k,))
                   for k in range(int(sys.argv[3]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("done")
    elif mode == "loader":
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(data, batch_size=4, num_workers=2)
        for epoch in range(n):
            for x, y in loader:
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                opt.step()
                time.sleep(0.03)
        print("done")
    elif mode == "python":
        for i in range(n):
            train_step_python(i)
            if seen is not None:
                seen.append(log(tool))
        print("done")
    elif mode in ("signal", "signal_own"):
        marks = {int(k) for k in sys.argv[3:]}
        sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
        handled = []
        if mode == "signal_own":
            signal.signal(sig, lambda s, f: handled.append(s))
        for i in range(n):
            if i in marks:
                os.kill(os.getpid(), sig)
            work(i)
            if seen is not None:
                seen.append(log(tool))
        print("done" if mode == "signal" else "handled %d" % len(handled))
    elif mode == "gen":
        sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
        g = numbers({int(k) for k in sys.argv[3:]}, sig)
        total = 0
        for i in range(n):
            total += next(g)
        print("done %d" % total)
    elif mode == "thread":
        import threading
        sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
        waiting, go_on = threading.Event(), threading.Event()

        def long_task():
            for i in range(10):
                work(i)
            waiting.set()
            go_on.wait()
            if seen is not None:  # the window is closed; this thread's frames are not
                seen.append(log(tool))
            for i in range(10):
                work(i)

        os.kill(os.getpid(), sig)
        t = threading.Thread(target=long_task)
        t.start()
        waiting.wait()
        os.kill(os.getpid(), sig)
        go_on.set()
        t.join()
        if seen is not None:
            seen.append(log(tool))
        print("done")
    elif mode == "late_thread":
        import threading
        sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
        # The threads wait for each other's phase in loops without calls: a call entered
        # inside the window and blocked in would keep the hook on (its return is awaited).
        phase = [0]

        def late_task():
            if seen is not None:  # 0: born while closed
                seen.append(log(tool))
            phase[0] = 1
            while phase[0] != 2:
                pass
            for i in range(10):
                work(i)
            if seen is not None:  # 2: inside the window
                seen.append(log(tool))
            phase[0] = 3
            while phase[0] != 4:
                pass
            if seen is not None:  # 4: closed again
                seen.append(log(tool))

        t = threading.Thread(target=late_task)
        t.start()
        while phase[0] != 1:
            pass
        os.kill(os.getpid(), sig)
        if seen is not None:  # 1: the main thread, inside the window
            seen.append(log(tool))
        phase[0] = 2
        while phase[0] != 3:
            pass
        os.kill(os.getpid(), sig)
        if seen is not None:  # 3: the main thread, closed (its first call switched off)
            seen.append(log(tool))
        phase[0] = 4
        t.join()
        print("done")
    elif mode == "churn":
        import threading
        sig = getattr(signal, "SIG" + os.environ.get("PROF_WINDOW_SIGNAL", "USR2"))
        totals = []

        def worker(i):
            totals.append(sum(work(i + k) for k in range(5)))

        def iterations(count, child):
            before = []
            for i in range(count):
                now = [threading.Thread(target=worker, args=(i,)) for _ in range(2)]
                for t in now:
                    t.start()
                if i % 3 == 0:
                    os.kill(os.getpid(), sig)
                for t in before:
                    t.join()
                before = now
                if i == count // 2 and not child:
                    pid = os.fork()
                    if pid == 0:
                        for t in before:
                            t.join()
                        del totals[:]
                        iterations(20, True)
                        print("child %d" % sum(totals))
                        sys.stdout.flush()
                        os._exit(0)
                    os.waitpid(pid, 0)
            for t in before:
                t.join()

        iterations(n, False)
        print("done %d" % sum(totals))
    elif mode == "map":
        end, total = time.monotonic() + n / 1000.0, 0
        while time.monotonic() < end:
            total += sum(map(work_abs, range(20000)))
        print("done %d" % (total > 0))
    elif mode == "timed":
        ms, path = float(sys.argv[3]), sys.argv[4]
        starts = []
        for i in range(n):
            starts.append(time.time_ns())
            tick(i)
            time.sleep(ms / 1000.0)
        with open(path, "w") as f:
            f.write("".join("%d\n" % t for t in starts))
        print("done")
    if seen is not None:
        write_events(seen)


if __name__ == "__main__":
    main()
