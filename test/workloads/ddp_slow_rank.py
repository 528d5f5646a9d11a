"""DDP training on CPU (gloo) in which one rank is slower: for the cluster views.

Run under torchrun: torchrun --nproc-per-node 4 ddp_slow_rank.py [STEPS [SLOW_RANK [SLOW_MS]]]
(defaults 20, 1, 30). Every rank trains the same small MLP on its own random batch; the
slow rank sleeps SLOW_MS before each backward, so the others wait for it in allreduce.
Prints one line per rank with its step count.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    slow_rank = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    slow_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    done = 0
    for _ in range(steps):
        x = torch.randn(32, 64)
        y = torch.randn(32, 8)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        if rank == slow_rank:
            time.sleep(slow_ms / 1000.0)
        loss.backward()
        opt.step()
        done += 1
    dist.barrier()
    print("rank %d of %d: %d steps" % (rank, dist.get_world_size(), done), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
