"""Ground truth for the PyTorch layer: runs a script under torch's profiler and writes its
figures per operator name as JSON.

    python3 torch_reference.py [--exact] [--memory] [--raw] OUT.json SCRIPT.py [ARGS...]

Default: torch.profiler (CPU activity), key_averages() name -> count.
--memory  profile_memory=True; name -> [count, self_cpu_memory_usage, cpu_memory_usage].
--exact   the same RecordFunction events, tree and key_averages() (torch's EventList), from
          torch's legacy profiler (torch.autograd.profiler_legacy), whose timestamps are
          nanoseconds where torch.profiler's (Kineto's) are truncated to microseconds, and
          which gives a memory event to the ops open on its thread when it happens where
          torch.profiler gives it to every op whose microsecond window holds it. torch's
          rules (the op tree by time, an only child of the same name folded into its parent
          by EventList._remove_dup_nodes, self = total - children) then give the same figures
          on every run: this is the reference profrun must equal exactly.
--raw     name -> count of every operator event torch.profiler recorded (its Kineto events,
          less the utility ops torch never shows), before it builds its tree: no folding,
          so no timing dependence."""
import json
import runpy
import sys

import torch
from torch.autograd import profiler_legacy
from torch.autograd.profiler_util import _filter_name
from torch.profiler import ProfilerActivity, profile


def main():
    args = sys.argv[1:]
    flags = set()
    while args and args[0].startswith("--"):
        flags.add(args.pop(0))
    out, script = args[0], args[1]
    sys.argv = args[1:]
    memory = "--memory" in flags
    if "--exact" in flags:
        with profiler_legacy.profile(profile_memory=memory) as prof:
            runpy.run_path(script, run_name="__main__")
        averages = prof.function_events.key_averages()
    else:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=memory) as prof:
            runpy.run_path(script, run_name="__main__")
        averages = prof.key_averages()
    if "--raw" in flags:
        rows = {}
        for e in prof.profiler.kineto_results.events():
            if not _filter_name(e.name()) and e.device_type() == torch.autograd.DeviceType.CPU:
                rows[e.name()] = rows.get(e.name(), 0) + 1
    elif memory:
        rows = {e.key: [e.count, e.self_cpu_memory_usage, e.cpu_memory_usage] for e in averages
                if not e.key.startswith("[")}  # "[memory]": events outside every op
    else:
        rows = {e.key: e.count for e in averages}
    with open(out, "w") as f:
        json.dump(rows, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
