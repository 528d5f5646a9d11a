"""A CPU training loop with a helper thread that does a known share of each step: every
step the loop hands the thread a batch (an Event), the thread runs prepare() once on it,
and the loop waits for it before the optimizer step. So in any run of steps, prepare() is
called once per step, on the helper thread, and its self time is most of that thread's.
Arguments: the step count (default 12)."""
import sys
import threading

import torch

go, done = threading.Event(), threading.Event()
stop = False


def prepare():
    total = 0
    for i in range(20000):
        total += i * i
    return total


def helper():
    while True:
        go.wait()
        go.clear()
        if stop:
            return
        prepare()
        done.set()


def main():
    global stop
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 32)
    worker = threading.Thread(target=helper, name="helper")
    worker.start()
    for _ in range(steps):
        go.set()
        opt.zero_grad()
        model(x).sum().backward()
        done.wait()
        done.clear()
        opt.step()
    stop = True
    go.set()
    worker.join()
    print("steps %d" % steps)


if __name__ == "__main__":
    main()
