"""A program to attach to (test/e2e/test_attach.py): started without profrun, it runs
for a while and logs what it did, so that a test can compare the calls recorded in an
attach window with the calls made inside it.

    attach_loop.py py N        a Python loop of N iterations: work() then a 1 ms sleep
    attach_loop.py torch N     a torch training loop (N SGD steps), a 1 ms sleep per step
    attach_loop.py threads N   8 busy threads, one blocked in a long read() on a pipe, one
                               in malloc-heavy code, the main thread looping N times

ATTACH_LOG=FILE: one line per call of work() / train_step(): "<realtime ns> <start|end>".
Prints "ready <pid>" (flushed) once running, then its result; exits with status 3."""
import os
import sys
import threading
import time

LOG = os.environ.get("ATTACH_LOG")


def main():
    mode, iterations = sys.argv[1], int(sys.argv[2])
    log = open(LOG, "w") if LOG else None
    total = 0

    def work(i):
        return sum(range(i % 50 + 50))

    if mode == "torch":
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(32, 16), torch.randn(32, 4)

        def train_step(i):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return int(loss.item() * 1000)

        work = train_step  # noqa: F811

    extra = []
    if mode == "threads":
        r, w = os.pipe()
        got = []
        stop = threading.Event()

        def reader():
            got.append(os.read(r, 100))

        def busy():
            n = 0
            while not stop.is_set():
                n += 1

        def mallocs():
            while not stop.is_set():
                blocks = [bytearray(4096 + i) for i in range(200)]
                del blocks

        extra = [threading.Thread(target=reader)] + \
            [threading.Thread(target=busy) for _ in range(8)] + [threading.Thread(target=mallocs)]
        for t in extra:
            t.start()

    print("ready %d" % os.getpid(), flush=True)
    for i in range(iterations):
        if log:
            log.write("%d start\n" % time.time_ns())
        total += work(i)
        if log:
            log.write("%d end\n" % time.time_ns())
        time.sleep(0.001)
    if mode == "threads":
        stop.set()
        os.write(w, b"the pipe's data")
        for t in extra:
            t.join()
        print("reader got %r" % got[0])
    if log:
        log.close()
    print("result %d" % total)
    sys.exit(3)


if __name__ == "__main__":
    main()
