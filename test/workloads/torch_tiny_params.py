"""Many tiny parameters (LayerNorms, per-channel scales) and Adam without foreach: about
20 000 PyTorch ops per optimizer step on the CPU, enough to fill a small ring
(PROF_RING_KB=64) many times a step. Prints the optimizer steps it took."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 16


class Tiny(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.scale = nn.Parameter(torch.ones(d))
        self.shift = nn.Parameter(torch.zeros(d))
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return x + self.lin(self.ln(x) * self.scale + self.shift)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(*[Tiny(16) for _ in range(30)], nn.Linear(16, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    for _ in range(STEPS):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("optimizer steps %d" % STEPS)


if __name__ == "__main__":
    main()
