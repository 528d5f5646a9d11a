"""A small model trained with activation checkpointing (torch.utils.checkpoint) on every
block, so that backward runs each block's forward again, as long as the forward itself:
the built-in actions' tests (test/e2e/test_actions_checkpoint.py, make gpu-check).

    torch_checkpoint.py reentrant|non-reentrant [STEPS [cpu|cuda]]

On a CPU the recompute runs under Tensor.backward on this thread; on a GPU the autograd
engine runs it on its device thread. Prints the steps and the recomputed block calls."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

REENTRANT = sys.argv[1] == "reentrant"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
DEVICE = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")


class Block(nn.Module):
    calls = 0

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 512)
        self.fc2 = nn.Linear(512, 256)

    def forward(self, x):
        Block.calls += 1
        return x + self.fc2(torch.relu(self.fc1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.out = nn.Linear(256, 10)

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=REENTRANT)
        return self.out(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net().to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # an input that needs its grad: the reentrant checkpoint needs one to run backward
    x = torch.randn(256, 256, device=DEVICE, requires_grad=True)
    y = torch.randint(0, 10, (256,), device=DEVICE)
    recomputed = 0
    for _ in range(STEPS):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        before = Block.calls
        loss.backward()
        recomputed += Block.calls - before
        opt.step()
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    print("steps %d recomputed %d" % (STEPS, recomputed))


if __name__ == "__main__":
    main()
