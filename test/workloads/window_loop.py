"""Loops for the capture-window tests (test/e2e/test_capture_window.py).

    window_loop.py torch N          N SGD steps of a tiny model; train_step(i) is one step
    window_loop.py loader E         E epochs of 16 SGD steps, 30 ms apart, each epoch's batches
                                    read by two forked DataLoader workers
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
    window_loop.py timed N MS FILE  N calls of tick(i), MS ms apart; the wall-clock time
                                    (ns) each call began is written to FILE, one per line

With WINDOW_EVENTS=FILE (python and signal modes, Python 3.12+), the events profrun's
sys.monitoring tool has on after each iteration go to FILE, one line per iteration:
"i NAME,NAME,..." (empty after i when none).
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


def numbers(marks, sig):
    i = 0
    while True:
        if i in marks:
            os.kill(os.getpid(), sig)
        yield work(i)
        i += 1


def events_log():
    """(tool, list): profrun's sys.monitoring tool id and the list each iteration appends
    its events to; (None, None) without WINDOW_EVENTS."""
    if not os.environ.get("WINDOW_EVENTS"):
        return None, None
    tool = [t for t in range(6) if sys.monitoring.get_tool(t) == "profrun"][0]
    return tool, []


def write_events(seen):
    names = [n for n in dir(sys.monitoring.events) if n.isupper() and n != "NO_EVENTS"]
    with open(os.environ["WINDOW_EVENTS"], "w") as f:
        for i, mask in enumerate(seen):
            on = [n for n in names if mask & getattr(sys.monitoring.events, n)]
            f.write("%d %s\n" % (i, ",".join(on)))


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    tool, seen = events_log()
    if mode == "torch":
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

        for i in range(n):
            train_step(i)
        print("loss %.6f" % float(((model(x) - y) ** 2).mean()))
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
                seen.append(sys.monitoring.get_events(tool))
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
                seen.append(sys.monitoring.get_events(tool))
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
                seen.append(sys.monitoring.get_events(tool))
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
            seen.append(sys.monitoring.get_events(tool))
        print("done")
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
