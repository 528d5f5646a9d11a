"""Ground truth for the PyTorch layer: runs a script under torch.profiler (CPU activity)
and writes torch.profiler's call count per operator name as JSON.

    python3 torch_reference.py OUT.json SCRIPT.py [ARGS...]"""
import json
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    out, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        runpy.run_path(script, run_name="__main__")
    counts = {e.key: e.count for e in prof.key_averages()}
    with open(out, "w") as f:
        json.dump(counts, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
