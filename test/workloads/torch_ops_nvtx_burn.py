"""A CPU torch loop for samples by PyTorch op and NVTX range: a large matmul (aten::mm)
inside an NVTX push range and a record_function scope, a light elementwise op outside
both; one thread. The NVTX functions are the process's own (libprof.so's under profrun:
CPU builds of torch have none)."""
import ctypes
import sys

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
process = ctypes.CDLL(None)
push = getattr(process, "nvtxRangePushA", None)
pop = getattr(process, "nvtxRangePop", None)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
a = torch.randn(512, 512)
b = torch.randn(512, 512)
for step in range(steps):
    if push:
        push(b"heavy_range")
    with torch.autograd.profiler.record_function("heavy_scope"):
        c = a @ b
    if pop:
        pop()
    d = (a * 1.0001).sum()
print("torch_ops_nvtx_burn done")
