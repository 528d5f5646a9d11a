"""Many tiny PyTorch ops on several threads, as fast as torch makes them: each call of
torch._foreach_zero_ on a list of one-element tensors runs one aten::_foreach_zero_ and,
inside it, one aten::zero_ per tensor, all in C++ with the GIL released.

    python3 torch_many_ops.py OPS_PER_THREAD THREADS

Prints "ops N threads T seconds S cpu C" (N: every op made, as counted above; S: wall
time of the threads; C: the CPU time they used, summed, which a busy machine does not
inflate). THREADS 0: one loop on the main thread (torch's profilers see only the threads
they were started on: test/workloads/torch_reference.py runs it so)."""
import sys
import threading
import time

import torch

WIDTH = 1000  # tensors per call: 1 + WIDTH ops per call


CPU = []


def work(calls):
    tensors = [torch.zeros(1) for _ in range(WIDTH)]
    start = time.thread_time()
    for _ in range(calls):
        torch._foreach_zero_(tensors)
    CPU.append(time.thread_time() - start)


def main():
    ops, threads = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(1)
    calls = max(1, ops // (WIDTH + 1))
    if threads == 0:
        t0 = time.perf_counter()
        work(calls)
        seconds = time.perf_counter() - t0
        print("ops %d threads 1 seconds %.3f cpu %.3f" % (calls * (WIDTH + 1), seconds, CPU[0]))
        return
    pool = [threading.Thread(target=work, args=(calls,), name="ops%d" % i) for i in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - t0
    print("ops %d threads %d seconds %.3f cpu %.3f" % (calls * (WIDTH + 1) * threads, threads,
                                                      seconds, sum(CPU)))


if __name__ == "__main__":
    main()
