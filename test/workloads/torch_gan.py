"""A GAN's training loop, as pytorch/examples' dcgan: per DataLoader batch, a discriminator
step (optimizerD.step()) then a generator step (optimizerG.step()), so one iteration is two
optimizer steps. argv: [iterations [epochs] [thread]] (default 20 iterations, over 1 epoch:
each epoch a pass over the DataLoader; thread: the loop runs on a threading.Thread that the
main thread joins, after the imports and set-up). Prints "iterations N optimizer_steps M"."""
import sys
import threading

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 1
BATCH, NOISE, FEATURES = 16, 16, 64

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(ITERATIONS // EPOCHS * BATCH, FEATURES)),
                    batch_size=BATCH)
G = nn.Sequential(nn.Linear(NOISE, 128), nn.ReLU(), nn.Linear(128, FEATURES))
D = nn.Sequential(nn.Linear(FEATURES, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
criterion = nn.BCEWithLogitsLoss()
optimizerD = torch.optim.Adam(D.parameters(), lr=2e-4)
optimizerG = torch.optim.Adam(G.parameters(), lr=2e-4)
counts = {"iterations": 0, "optimizer_steps": 0}


def train():
    for _ in range(EPOCHS):
        epoch()


def epoch():
    for (real,) in loader:
        b = real.size(0)
        optimizerD.zero_grad()
        criterion(D(real), torch.ones(b, 1)).backward()
        fake = G(torch.randn(b, NOISE))
        criterion(D(fake.detach()), torch.zeros(b, 1)).backward()
        optimizerD.step()
        counts["optimizer_steps"] += 1
        optimizerG.zero_grad()
        criterion(D(fake), torch.ones(b, 1)).backward()
        optimizerG.step()
        counts["optimizer_steps"] += 1
        counts["iterations"] += 1


if sys.argv[-1] == "thread":
    trainer = threading.Thread(target=train, name="trainer")
    trainer.start()
    trainer.join()
else:
    train()
print("iterations", counts["iterations"], "optimizer_steps", counts["optimizer_steps"])
