"""A training loop whose first step is mostly set-up, as on a GPU (lazy CUDA module
loading, cuDNN autotuning, compilation): the model's first forward calls set_up(), which
takes about 0.6 s; the other STEPS - 1 steps take a few milliseconds each (a Linear
model, SGD, time_step's sleep of 2 ms standing in for the work).

    torch_warmup.py [STEPS]      default 12"""
import sys
import time

import torch


def set_up():
    time.sleep(0.6)


def time_step():
    time.sleep(0.002)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)
        self.ready = False

    def forward(self, x):
        if not self.ready:
            set_up()
            self.ready = True
        return self.fc(x)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    for i in range(steps):
        time_step()
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("done")


if __name__ == "__main__":
    main()
