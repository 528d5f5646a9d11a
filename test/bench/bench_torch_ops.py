"""PyTorch op rate with exact counts, in one run of this script: 5 M tiny ops on 2 threads
(test/workloads/torch_many_ops.py: torch._foreach_zero_ over one-element tensors, the
GIL released), bare and under profrun with default settings. Prints the op rate per
thread in both (ops / the CPU time the threads used: a machine shared with other
jobs does not change it), the ops the report's table counts against the ops made (lost must be 0:
the per-thread op trees keep every op whatever the rate) and how many op spans the
timeline kept. Goal (issue 11): exact counts at >= 2 M ops/s per thread.

    BUILD=build python3 test/bench/bench_torch_ops.py [OPS_TOTAL] [THREADS]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOAD = os.path.join(ROOT, "test", "workloads", "torch_many_ops.py")
WIDTH = 1000  # the workload's tensors per call


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    line = [l for l in out.splitlines() if l.startswith("ops ")][-1].split()
    return int(line[1]), float(line[7]), float(line[5])  # ops made, CPU and wall seconds


def main():
    build = os.path.abspath(os.environ.get("BUILD", "build"))
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    per_thread = total // threads
    env = dict(os.environ, PROF_TORCH_CACHE=os.path.join(build, "test", "torch-cache"))
    for k in [k for k in env if k.startswith("PROF_") and k != "PROF_TORCH_CACHE"]:
        del env[k]  # default settings
    py = "/usr/bin/python3"
    workload = [py, WORKLOAD, str(per_thread), str(threads)]
    out = tempfile.mkdtemp(prefix="bench-torch-ops-")
    try:
        profrun = [os.path.join(build, "bin", "profrun"), "--no-report", "-o", out, "--"]
        run(profrun + [py, WORKLOAD, "2002", "1"], env)  # builds the bridge once, untimed
        shutil.rmtree(out)
        bare_runs = [run(workload, env) for _ in range(3)]
        bare, bare_wall = min(r[1] for r in bare_runs), min(r[2] for r in bare_runs)
        made, ours, ours_wall = run(profrun + workload, env)
        rep = subprocess.run([os.path.join(build, "bin", "profreport"), out, "--ops", "--format",
                              "json"], capture_output=True, text=True, check=True)
        rows = {r["name"]: r["calls"] for r in json.loads(rep.stdout)["ops"]}
        # torch.zeros in the workload makes one aten::zero_ per tensor too
        expected = {"aten::_foreach_zero_": made // (WIDTH + 1),
                    "aten::zero_": made // (WIDTH + 1) * WIDTH + threads * WIDTH}
        counted = sum(rows.get(k, 0) for k in expected)
        lost = sum(expected.values()) - counted
        kept = [l for l in rep.stderr.splitlines() if "timeline kept" in l]
        print("bench_torch_ops: %d ops on %d threads; bare %.2f M ops/s per thread, profrun "
              "%.2f M ops/s per thread (goal >= 2); table counts %d of %d: lost = %d (goal 0)"
              % (made, threads, made / bare / 1e6, made / ours / 1e6,
                 counted, sum(expected.values()), lost))
        print("bench_torch_ops: by wall time (the machine's load included): bare %.2f, profrun "
              "%.2f M ops/s per thread" % (made / threads / bare_wall / 1e6,
                                           made / threads / ours_wall / 1e6))
        print("bench_torch_ops: timeline: " + (kept[0].split("): ", 1)[-1] if kept
                                                 else "every op span kept"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
