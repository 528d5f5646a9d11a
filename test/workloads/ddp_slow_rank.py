"""DDP training on CPU (gloo) in which one rank is slower: for the cluster views.

Run under torchrun: torchrun --nproc-per-node 4 ddp_slow_rank.py [STEPS [SLOW_RANK [SLOW_MS [HOW]]]]
(defaults 20, 1, 30, sleep), or started by torch.multiprocessing.spawn with no launcher:
python3 ddp_slow_rank.py --spawn N [STEPS ...] (N ranks, told their rank in
init_process_group alone, MASTER_ADDR/MASTER_PORT 127.0.0.1:29500 unless set). Every rank trains the same small MLP on its own batch from a
DataLoader; the slow rank spends about SLOW_MS more per step, so the others wait for it in
allreduce. HOW: sleep (before each backward), compute (extra matrix products inside the
forward), data (its dataset sleeps in __getitem__), sync (before each backward it launches
SLOW_MS of GPU work and waits for it in cudaStreamSynchronize: the CUDA runtime double,
test/doubles, must come first in LD_LIBRARY_PATH — it stands in for the GPU), evaluate
(after every 10th optimizer step it runs evaluate(): 10 x SLOW_MS of matrix products, so the
others wait for it in those steps only), metric (every rank, after each optimizer step,
all_reduces its loss 20 times in log_metrics() for logging: balanced, no slow rank). With DDP_SIGNAL_STEPS="A,B" every rank
sends itself SIGUSR1 before steps A and B (a PROF_WINDOW_SIGNAL=USR1 window).
With DDP_WORKERS=N each rank's DataLoader has N worker processes.
With DDP_STEP_LOG=PREFIX every rank writes PREFIX.rankR: one line per step as it begins,
"<step index from 0> <realtime ns>".
Prints one line per rank with its step count.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Batches(torch.utils.data.Dataset):
    def __init__(self, steps, delay):
        self.steps, self.delay = steps, delay

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return torch.randn(32, 64), torch.randn(32, 8)


def burn(ms):
    """Matrix products on the calling thread for about ms milliseconds."""
    a = torch.randn(128, 128)
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        a = torch.tanh(a @ a)


def log_metrics(loss):
    """A metric averaged over the ranks for logging, the way many loops do it (20 times over,
    so that it outweighs the model's own gradients)."""
    m = loss.detach().reshape(1)
    for _ in range(20):
        dist.all_reduce(m)
    return m.item()


def evaluate(ms):
    """A periodic evaluation: about ms milliseconds of matrix products."""
    with torch.no_grad():
        burn(ms)


class DeviceWait:
    """A host-device sync of about ms milliseconds through the CUDA runtime (the double's
    graph launch occupies the stream for FAKE_CUDA_KERNEL_NS), called through the global
    scope as a program linked with libcudart would."""

    def __init__(self, ms):
        import ctypes
        os.environ["FAKE_CUDA_KERNEL_NS"] = str(int(ms * 1e6))
        ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
        self.rt = ctypes.CDLL(None)
        graph, self.exe = ctypes.c_void_p(), ctypes.c_void_p()
        assert self.rt.cudaGraphCreate(ctypes.byref(graph), 0) == 0
        assert self.rt.cudaGraphInstantiate(ctypes.byref(self.exe), graph, ctypes.c_ulonglong(0)) == 0

    def __call__(self):
        assert self.rt.cudaGraphLaunch(self.exe, None) == 0
        assert self.rt.cudaStreamSynchronize(None) == 0


def main(spawned_rank=None, world=None, args=None):
    args = sys.argv[1:] if args is None else args
    steps = int(args[0]) if len(args) > 0 else 20
    slow_rank = int(args[1]) if len(args) > 1 else 1
    slow_ms = float(args[2]) if len(args) > 2 else 30.0
    how = args[3] if len(args) > 3 else "sleep"
    if spawned_rank is None:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", rank=spawned_rank, world_size=world)
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    slow = rank == slow_rank
    data = torch.utils.data.DataLoader(Batches(steps, slow_ms / 1000.0 if slow and how == "data" else 0),
                                       batch_size=None,
                                       num_workers=int(os.environ.get("DDP_WORKERS", "0")))
    device_wait = DeviceWait(slow_ms) if slow and how == "sync" else None
    signal_steps = [int(v) for v in os.environ.get("DDP_SIGNAL_STEPS", "").split(",") if v]
    done = 0
    step_log = os.environ.get("DDP_STEP_LOG")
    step_log = open("%s.rank%d" % (step_log, rank), "w", buffering=1) if step_log else None
    for x, y in data:
        if step_log:
            step_log.write("%d %d\n" % (done, time.time_ns()))
        if done in signal_steps:
            os.kill(os.getpid(), signal.SIGUSR1)
        opt.zero_grad()
        out = ddp(x)
        if slow and how == "compute":
            burn(slow_ms)
        loss = torch.nn.functional.mse_loss(out, y)
        if slow and how == "sleep":
            time.sleep(slow_ms / 1000.0)
        if device_wait:
            device_wait()
        loss.backward()
        opt.step()
        done += 1
        if slow and how == "evaluate" and done % 10 == 0:
            evaluate(slow_ms * 10)
        if how == "metric":
            log_metrics(loss)
    dist.barrier()
    print("rank %d of %d: %d steps" % (rank, dist.get_world_size(), done), flush=True)
    # torch 1.13's gloo can hang in destroy_process_group right after many small
    # collectives (the metric mode hung there every time); a pause before it does not
    time.sleep(0.5)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--spawn"]:
        import torch.multiprocessing
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        n = int(sys.argv[2])
        torch.multiprocessing.spawn(main, args=(n, sys.argv[3:]), nprocs=n)
    else:
        main()
