"""A small CPU job for the memory columns: a few operators whose allocations are fixed by
their shapes (empty, addmm, relu, cat, sum), on the main thread only, one intra-op
thread. Deterministic: the same allocations on every run. An argument: that many steps
(default 5; many make the memory records outrun a small ring)."""
import sys

import torch

STEPS = 5


def step(a, w):
    buf = torch.empty(256, 64)
    h = torch.addmm(a, a, w)
    r = torch.relu(h)
    c = torch.cat([r, buf[:64]], 0)
    return c.sum()


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    a = torch.randn(64, 64)
    w = torch.randn(64, 64)
    total = 0.0
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else STEPS
    for _ in range(steps):
        total += float(step(a, w))
    print("ok %d" % (total != 0.0 or True))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
