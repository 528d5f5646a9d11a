"""A small CPU sequence model trained the usual way, for the PyTorch layer's exactness
tests: an LSTM and a Linear head, a loss made of mse_loss + mean + sum, backward,
gradient clipping, Adam with weight decay and SGD with momentum and weight decay, and
.item() every step.

Deterministic: the same operators run, in the same numbers, on every run."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 12


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    lstm = nn.LSTM(8, 16, batch_first=True)
    head = nn.Linear(16, 4)
    params = list(lstm.parameters()) + list(head.parameters())
    adam = torch.optim.Adam(params, lr=1e-3, weight_decay=1e-2)
    sgd = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    total = 0.0
    for _ in range(STEPS):
        x = torch.randn(4, 6, 8)
        y = torch.randn(4, 4)
        out, _ = lstm(x)
        pred = head(out[:, -1])
        loss = F.mse_loss(pred, y) + pred.abs().mean() * 0.01 + pred.sum() * 0.0
        adam.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        adam.step()
        sgd.step()
        total += loss.item()
    print("loss %.4f" % total)


if __name__ == "__main__":
    main()
