"""A small CPU regression script written by hand, for the PyTorch layer's exactness tests:
an MLP, a loss computed with ** 2, sum and an in-place division by the batch size, a mean
absolute error for the log, plain SGD with weight decay, the loss read with .item() every
step, and an evaluation under torch.no_grad().

Deterministic: the same operators run, in the same numbers, on every run."""
import torch
import torch.nn as nn

STEPS = 15
BATCH = 32


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)
    w = torch.randn(10, 1)
    log = []
    for _ in range(STEPS):
        x = torch.randn(BATCH, 10)
        y = x @ w + 0.1 * torch.randn(BATCH, 1)
        err = model(x) - y
        loss = (err ** 2).sum()
        loss.div_(BATCH)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        log.append((loss.item(), err.detach().abs().mean().item()))
    with torch.no_grad():
        x = torch.randn(64, 10)
        mse = ((model(x) - x @ w) ** 2).mean().item()
    print("final loss %.4f mae %.4f eval %.4f" % (log[-1][0], log[-1][1], mse))


if __name__ == "__main__":
    main()
