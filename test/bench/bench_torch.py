"""PyTorch CPU overhead, in one run of this script: a small-op training step (MLP of 12
Linear+ReLU, batch 16, width 32: the ops are tiny, so per-op costs show; SGD) on Debian's CPU torch, timed bare, under profrun
(libprof.so preloaded: Python, operators and everything else on) and under torch.profiler
(CPU activity), as subprocesses taken in turn; prints each overhead over bare.
Goal (issue 5): ours <= half of torch.profiler's.

    BUILD=build python3 test/bench/bench_torch.py"""
import os
import statistics
import subprocess
import sys

STEP = r'''
import sys, time, torch, torch.nn as nn
mode, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
torch.set_num_threads(1)
layers = []
for _ in range(12):
    layers += [nn.Linear(32, 32), nn.ReLU()]
model = nn.Sequential(*layers)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
def step():
    opt.zero_grad(set_to_none=True)
    model(x).sum().backward()
    opt.step()
for _ in range(5):
    step()
ctx = None
if mode == "torchprof":
    from torch.profiler import profile, ProfilerActivity
    ctx = profile(activities=[ProfilerActivity.CPU])
    ctx.__enter__()
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(steps):
    step()
t1, c1 = time.perf_counter(), time.process_time()
if ctx is not None:
    ctx.__exit__(None, None, None)
print((t1 - t0) / steps, (c1 - c0) / steps)
'''


def run(build, mode, steps, cache):
    cmd = [sys.executable, "-c", STEP, mode, str(steps)]
    env = dict(os.environ, PROF_TORCH_CACHE=cache)
    if mode == "profrun":
        cmd = [os.path.join(build, "bin", "profrun"), "--no-report", "-o", "/tmp/bench-torch-prof", "--"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout.split()
    return float(out[-2]), float(out[-1])  # wall, CPU of the whole process (every thread)


def main():
    build = os.path.abspath(os.environ.get("BUILD", "build"))
    cache = os.path.join(build, "test", "torch-cache")
    times = {"bare": [], "profrun": [], "torchprof": []}
    run(build, "profrun", 2, cache)  # builds the bridge once, outside the timing
    for _ in range(5):
        for mode in times:
            times[mode].append(run(build, mode, 100, cache))
    # Wall time, and the CPU time of the process (every thread, the collector's included),
    # which other jobs on a shared machine do not inflate.
    for i, what in ((0, "wall"), (1, "CPU")):
        bare = statistics.median(t[i] for t in times["bare"])
        ours = statistics.median(t[i] for t in times["profrun"]) / bare - 1
        theirs = statistics.median(t[i] for t in times["torchprof"]) / bare - 1
        print("bench_torch: small-op CPU step (%s time) bare %.3f ms; overhead profrun +%.0f%%, "
              "torch.profiler +%.0f%%: ours/theirs = %.2f (goal <= 0.5)"
              % (what, bare * 1e3, ours * 100, theirs * 100, ours / theirs))


if __name__ == "__main__":
    main()
