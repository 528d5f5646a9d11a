"""A small CUDA training run for `make gpu-check`: conv + linear layers, forward, backward,
SGD step, with torch.cuda.nvtx ranges around each phase. Deterministic kernel choice
(cudnn.benchmark off) so two runs launch the same kernels.

    gpu_train.py STEPS [STOP_FILE]

With STOP_FILE (gpu-check's attach): prints "ready" after 10 steps and runs until the file
exists (at most STEPS steps)."""
import os
import sys

import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = False
torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
stop = sys.argv[2] if len(sys.argv) > 2 else None
dev = torch.device("cuda")
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                      nn.ReLU(), nn.Flatten(), nn.Linear(16 * 32 * 32, 128), nn.ReLU(),
                      nn.Linear(128, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 3, 32, 32, device=dev)
y = torch.randint(0, 10, (32,), device=dev)
loss_fn = nn.CrossEntropyLoss()
for step in range(steps):
    torch.cuda.nvtx.range_push("train_step")
    torch.cuda.nvtx.range_push("forward")
    loss = loss_fn(model(x), y)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("backward")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("optimizer_step")
    opt.step()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
    if stop and step == 10:
        print("ready", os.getpid(), flush=True)
    if stop and step > 10 and os.path.exists(stop):
        break
torch.cuda.synchronize()
print("loss %.4f" % loss.item())
