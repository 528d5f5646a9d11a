"""A CPU training loop whose Dataset applies an nn.Module transform (a Normalize, as
torchvision's) to every sample, read through a DataLoader: the transform's calls are no
forward of the model. argv: [num_workers [start method]] (0; fork or spawn with workers).

Deterministic: EPOCHS * SAMPLES / BATCH = 8 steps, one model call each (the loss is a
function, not a module); the transform runs once per sample, 64 times, in the process
that loads the data."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

EPOCHS, SAMPLES, BATCH = 2, 32, 8


class Normalize(nn.Module):
    def forward(self, x):
        return (x - 0.5) / 0.25


class Samples(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(SAMPLES, 16, generator=g)
        self.y = torch.randint(0, 4, (SAMPLES,), generator=g)
        self.transform = Normalize()

    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        return self.transform(self.x[i]), self.y[i]


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    method = sys.argv[2] if len(sys.argv) > 2 else "fork"
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Samples(), batch_size=BATCH, num_workers=workers,
                        multiprocessing_context=method if workers else None)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = 0
    for _ in range(EPOCHS):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
    print("steps %d loss %.4f" % (steps, loss.item()))


if __name__ == "__main__":
    main()
