"""A small CPU training job for the PyTorch layer's tests: Conv2d, ReLU, Linear, a loss,
backward, an SGD step, a record_function("my_scope") block, a DataLoader with two forked
workers and a second Python thread that runs operators of its own.

Deterministic: the same operators run, in the same numbers, on every run."""
import sys
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 2
THREAD_OPS = 5


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(torch.flatten(x, 1))


def side_thread():
    t = torch.arange(16.0)
    for _ in range(THREAD_OPS):
        t = torch.cumsum(t, 0) / 16


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(32, 1, 8, 8), torch.randint(0, 10, (32,)))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="fork")
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = None
    for _ in range(EPOCHS):
        for x, y in loader:
            with torch.autograd.profiler.record_function("my_scope"):
                out = model(x)
                loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    worker = threading.Thread(target=side_thread, name="side")
    worker.start()
    worker.join()
    print("loss %.4f" % loss.item())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
