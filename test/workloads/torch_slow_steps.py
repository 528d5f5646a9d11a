"""A CPU training loop with two problems a report must name by their Python lines: its
Dataset does slow per-sample Python work in slow_transform (each batch takes about
BATCH * SAMPLE_MS ms to load, in the training process: num_workers=0), and every
EVAL_EVERY steps it runs evaluate(), about EVAL_MS ms of Python, between two optimizer
steps, so those steps are the slowest. argv: [steps [loader|workers|generator]] (default
30 loader). workers: the DataLoader has 2 worker processes (slow_transform runs there).
generator: the batches come from a Python generator whose collate (slow_collate, about
BATCH * SAMPLE_MS ms a batch) is no DataLoader's: its time is the step's other CPU.

Prints "steps N evals E" (the optimizer steps and evaluate() calls made)."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

BATCH, SAMPLE_MS, EVAL_EVERY, EVAL_MS = 4, 2.0, 10, 120.0


def spin(ms):
    # the clock read once every 64 turns: a read every turn split the time about evenly
    # between spin and time.perf_counter (as any profiler that counts every call says), so
    # which of the two held more, and whether it held a quarter, changed from run to run
    end = time.perf_counter() + ms / 1000
    n = 0
    while True:
        n += 1
        if n % 64 == 0 and time.perf_counter() >= end:
            return n


def slow_transform(x):
    spin(SAMPLE_MS)
    return x * 2 - 1


class Samples(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(n, 16, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return slow_transform(self.x[i]), self.y[i]


def slow_collate(samples):
    spin(SAMPLE_MS * len(samples))
    return torch.stack([x for x, _ in samples]), torch.stack([y for _, y in samples])


def batches(data):
    for i in range(0, len(data), BATCH):
        yield slow_collate([(data.x[k], data.y[k]) for k in range(i, i + BATCH)])


def evaluate(model):
    spin(EVAL_MS)
    with torch.no_grad():
        return model(torch.zeros(1, 16)).sum().item()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = Samples(steps * BATCH)
    mode = sys.argv[2] if len(sys.argv) > 2 else "loader"
    if mode == "generator":
        loader = batches(data)
    else:
        loader = DataLoader(data, batch_size=BATCH, num_workers=2 if mode == "workers" else 0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    done = evals = 0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        done += 1
        if done % EVAL_EVERY == 0:
            evaluate(model)
            evals += 1
    print("steps %d evals %d" % (done, evals))


if __name__ == "__main__":
    main()
