"""A training loop under torch.profiler that calls prof.step() every iteration (the
report's steps are then its ProfilerStep#N scopes): a Linear model, SGD, work() once per
step; the first SLOW steps also sleep 50 ms (warm-up steps for the report); after the loop,
still inside the profiler, it sleeps TAIL ms (work after the last prof.step(): a save).

    torch_profiler_steps.py [STEPS] [SLOW] [TAIL]      default 40 3 0"""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def work():
    return 1


def slow():
    time.sleep(0.05)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    slow_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tail_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    # a schedule, so that prof.step() marks the steps (ProfilerStep#N)
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=0, warmup=1, active=steps)) as prof:
        for i in range(steps):
            if i < slow_steps:
                slow()
            work()
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            prof.step()
        time.sleep(tail_ms / 1000)
    print("done")


if __name__ == "__main__":
    main()
