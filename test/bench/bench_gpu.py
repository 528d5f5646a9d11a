"""GPU overhead, measured in one run of this script (for gpu-check): a small-op training
step (MLP of 12 Linear+ReLU, batch 64, width 256, SGD) and a GPU-bound conv step, each
timed bare, under profrun (libprof.so preloaded, everything on) and under torch.profiler
(CPU+CUDA activities), as subprocesses taken in turn; prints the ratios to bare.
Goals: profrun <= 1.10x on the small-op step (torch.profiler measured 2.30x on an H100),
<= 1.01x on the conv step; with input shapes and memory on both sides (PROF_SHAPES=1;
record_shapes and profile_memory) <= 1.15x on the small-op step (torch.profiler 2.77x).

    python3 test/bench/bench_gpu.py BUILD_DIR"""
import os
import statistics
import subprocess
import sys

STEP = r'''
import sys, time, torch, torch.nn as nn
kind, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
dev = torch.device("cuda")
torch.manual_seed(0)
if kind == "mlp":
    layers = []
    for _ in range(12):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers).to(dev)
    x = torch.randn(64, 256, device=dev)
else:
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Conv2d(128, 128, 3, padding=1), nn.ReLU())]).to(dev)
    x = torch.randn(64, 128, 56, 56, device=dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def step():
    opt.zero_grad(set_to_none=True)
    model(x).sum().backward()
    opt.step()
for _ in range(20):
    step()
torch.cuda.synchronize()
ctx = None
if mode.startswith("torchprof"):
    from torch.profiler import profile, ProfilerActivity
    full = mode == "torchprof_full"
    ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                  record_shapes=full, profile_memory=full)
    ctx.__enter__()
t0 = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
t1 = time.perf_counter()
if ctx is not None:
    ctx.__exit__(None, None, None)
print((t1 - t0) / steps)
'''


def run(build, kind, mode, steps):
    cmd = [sys.executable, "-c", STEP, kind, mode, str(steps)]
    env = dict(os.environ)
    if mode.startswith("profrun"):
        cmd = [os.path.join(build, "bin", "profrun"), "--no-report", "-o", "/tmp/bench-gpu-prof", "--"] + cmd
        if mode == "profrun_shapes":
            env["PROF_SHAPES"] = "1"
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout.split()
    return float(out[-1])


def main():
    build = sys.argv[1]
    for kind, steps, goal in [("mlp", 300, 1.10), ("conv", 30, 1.01)]:
        times = {"bare": [], "profrun": [], "torchprof": []}
        if kind == "mlp":  # issue 5: ops + shapes + memory on both sides, goal <= 1.15
            times.update({"profrun_shapes": [], "torchprof_full": []})
        for _ in range(3):
            for mode in times:
                times[mode].append(run(build, kind, mode, steps))
        bare = statistics.median(times["bare"])
        ratio = {m: statistics.median(t) / bare for m, t in times.items()}
        print("bench_gpu: %s step: bare %.3f ms, profrun %.3fx (goal <= %.2f), torch.profiler %.2fx"
              % (kind, bare * 1e3, ratio["profrun"], goal, ratio["torchprof"]))
        if "profrun_shapes" in ratio:
            print("bench_gpu: %s step with shapes + memory: profrun %.3fx (goal <= 1.15), "
                  "torch.profiler (record_shapes, profile_memory) %.2fx"
                  % (kind, ratio["profrun_shapes"], ratio["torchprof_full"]))


if __name__ == "__main__":
    main()
