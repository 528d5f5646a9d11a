"""PyTorch CPU tensors from known Python functions, for --stacks memory: at the peak,
keep_big holds 4 blocks of 16 MiB and keep_small 8 blocks of 1 MiB; a 32 MiB scratch
block made and freed before the peak is not live then."""
import torch


def scratch():
    t = torch.empty(8 * 1024 * 1024)  # 32 MiB, freed on return
    return float(t.numel())


def keep_big(held):
    for _ in range(4):
        held.append(torch.empty(4 * 1024 * 1024))  # 16 MiB


def keep_small(held):
    for _ in range(8):
        held.append(torch.empty(256 * 1024))  # 1 MiB


scratch()
held = []
keep_big(held)
keep_small(held)
print("torch_mem_paths done", len(held))
