"""gpu-check's assertions on profreport's JSON for test/workloads/gpu_train.py."""
import json
import os
import sys
import time

report = json.load(open(sys.argv[1]))
cupti_count = int(sys.argv[2])
failures = []
START = float(os.environ.get("GPU_CHECK_START", time.time()))


def check(ok, what):
    """One check: printed, and a row of gpu-check.sh's final table (GPU_CHECK_RESULTS)."""
    print("gpu-check: %s: %s" % ("ok" if ok else "FAILED", what))
    if not ok:
        failures.append(what)
    results = os.environ.get("GPU_CHECK_RESULTS")
    if results:
        with open(results, "a") as f:
            f.write("%s\t%d\t%s\n" % ("ok" if ok else "FAILED", int(time.time() - START),
                                       what.replace("\t", " ").replace("\n", " ")[:160]))


# The default report's tables cover the steady steps; the whole process's (--phase all)
# hold every kernel.
whole = json.load(open(os.environ["GPU_CHECK_ALL"])) if os.environ.get("GPU_CHECK_ALL") else {}
kernels = sum(k["calls"] for k in whole.get("gpu_kernels", []))
check(kernels == cupti_count,
      "kernels in our --phase all table %d == CUPTI's own count %d" % (kernels, cupti_count))
steady = sum(k["calls"] for k in report.get("gpu_kernels", []))
cover = report.get("gpu_cover", {})
check(cover.get("part") == "the steady training steps" and 0 < steady < kernels,
      "the default kernel table covers the steady steps: %d of %d kernels (%s)"
      % (steady, kernels, cover))
libs = [row["name"] for row in report.get("library_calls", [])]
check(any(n.startswith("cublas") for n in libs), "cuBLAS/cuBLASLt spans present: %s" % libs[:6])
check(any(n.startswith("cudnn") for n in libs), "cuDNN spans present: %s" % libs[:6])
unattributed = report.get("gpu_unattributed_kernels", -1)
check(unattributed == 0, "every kernel tied to a launching call and thread (unattributed: %s)" % unattributed)
actions = {a["name"]: a for a in report.get("actions", []) if a.get("source", "nvtx") == "nvtx"}
for name in ["train_step", "forward", "backward", "optimizer_step"]:
    check(actions.get(name, {}).get("calls") == 20, "NVTX range %s seen 20 times" % name)
py = [r for r in report.get("python", []) if r.get("gpu_ns")]
check(bool(py), "GPU time attributed to Python functions (%d rows)" % len(py))
ops = report.get("ops", [])
cuda_ops = [o["name"] for o in ops if o.get("self_cuda_ns")]
check(len(cuda_ops) >= 3, "ops with Self CUDA time: %s" % cuda_ops[:6])
check(any(o.get("cuda_mem_bytes") for o in ops),
      "ops with CUDA Mem (caching allocator reports): %s"
      % [o["name"] for o in ops if o.get("cuda_mem_bytes")][:6])
devmem = [d for p in report.get("processes", []) for d in p.get("torch_device_memory", [])]
check(any(d["device"] == "CUDA:0" and d["peak_bytes"] > 0 for d in devmem),
      "CUDA:0 memory peak recorded: %s" % [(d["device"], d["peak_bytes"], d["peak_op"])
                                           for d in devmem])
steps = [p["steps"] for p in report.get("processes", []) if p.get("steps")]
check(len(steps) == 1 and steps[0]["count"] == 20 and
      all(sum(x["parts_ns"].values()) == x["ns"] and x["gpu_busy_ns"] > 0 for x in steps[0]["steps"]),
      "20 training steps, their parts adding up, GPU busy in each: %s"
      % ([(x["number"], x["ns"], x["gpu_busy_ns"]) for x in steps[0]["steps"][:3]] if steps else None))
# the CPU-ops finding, when made, is the steady steps' ratio: their ops' self CPU against
# their kernels (an H200 run read 228.7 x, its whole process's, for 7.7 x in its steps)
cpu_ops = [f for f in report.get("findings", []) if f["kind"] == "cpu_ops"]
self_cpu = sum(o["self_cpu_ns"] for o in ops)
kernel_ns = sum(k["total_ns"] for k in report.get("gpu_kernels", []))
ratio = self_cpu / kernel_ns if kernel_ns else 0
check(bool(cpu_ops) == (ratio >= 2.0) and  # (CPU_OPS_RATIO)
      all(abs(f["value"] - ratio) <= 0.01 * ratio and "the steady training steps" in f["evidence"]
          for f in cpu_ops),
      "CPU-ops finding of the steady steps: %s (their ratio %.1f)"
      % ([round(f["value"], 1) for f in cpu_ops] or "none", ratio))
# the Actions' shares are of the training, an NVTX range around each step in it
base = report.get("actions_percent_of", {})
check(base.get("base") == "training" and 90 <= actions.get("train_step", {}).get("percent", 0) <= 100,
      "Actions of the training: base %s, train_step %s %%"
      % (base.get("base"), actions.get("train_step", {}).get("percent")))
if os.environ.get("GPU_CHECK_CHROME"):  # the Kineto JSON of the profiled run
    path = os.environ["GPU_CHECK_CHROME"]
    doc = json.load(open(path)) if os.path.exists(path) else {}
    dev = doc.get("deviceProperties", [])
    check(len(dev) >= 1 and all(d.get("name") and d.get("numSms", 0) > 0 and
                                d.get("computeMajor", 0) >= 7 and d.get("totalGlobalMem", 0) > 0
                                for d in dev),
          "Chrome export's deviceProperties from the device: %s"
          % [(d.get("name"), d.get("numSms"), d.get("computeMajor")) for d in dev])
    ks = [e for e in doc.get("traceEvents", []) if e.get("cat") == "kernel"]
    shaped = [e for e in ks if all(k in e.get("args", {}) for k in
                                   ("grid", "block", "registers per thread", "shared memory",
                                    "est. achieved occupancy %"))]
    check(ks and len(shaped) == len(ks),
          "Chrome export's kernels with grid, block, registers, shared memory, occupancy: "
          "%d of %d (%s)" % (len(shaped), len(ks), (shaped or ks or [{}])[0].get("args")))
if os.environ.get("GPU_CHECK_ATTACH"):  # profrun attach --steps 50 to gpu_train.py
    path, rc, target = os.environ["GPU_CHECK_ATTACH"].split(" ")
    att = json.load(open(path)) if os.path.getsize(path) else {}
    printed = open(target).read()
    check(rc == "0" and "loss " in printed,
          "the attached CUDA loop ran on to its end: exit %s, %r" % (rc, printed[-60:]))
    ast = [p["steps"] for p in att.get("processes", []) if p.get("steps")]
    check(len(ast) == 1 and ast[0]["count"] == 50,
          "attach --steps 50: %s steps recorded" % (ast[0]["count"] if ast else None))
    nsteady = steps[0]["steady"] if steps else 0
    per_step = steady / nsteady if nsteady else 0
    got = sum(k["calls"] for k in att.get("gpu_kernels", []))
    check(per_step and got == 50 * per_step,
          "kernels in the attach's 50 steps %d == 50 x %.2f, the profiled run's per steady step"
          % (got, per_step))
    # the wrapped calls through GOT entries bound before the attach, each name as often per
    # step as in the profiled run's steady steps (torch 2.11 on CUDA 13 launches through
    # __cudaLaunchKernel, the <<<>>> stub's entry, not cudaLaunchKernel)
    want = {a["name"]: a["calls"] * 50 / nsteady for a in report.get("api", [])} if nsteady else {}
    have = {a["name"]: a["calls"] for a in att.get("api", [])}
    launch = sum(a["calls"] for a in att.get("api", []) if a["category"] == "launch")
    differ = sorted(n for n in set(want) | set(have) if have.get(n, 0) != want.get(n, 0))
    check(launch > 0 and want and not differ,
          "wrapped CUDA calls after attach (GOT rebound) == 50 x the profiled run's per steady "
          "step: %d names, %d launches; differing: %s"
          % (len(have), launch, [(n, have.get(n, 0), want.get(n, 0)) for n in differ][:6]))
    check(att.get("gpu_unattributed_kernels", -1) == 0,
          "every kernel after attach tied to its launching call (unattributed: %s)"
          % att.get("gpu_unattributed_kernels"))
if len(sys.argv) > 5:  # a real Lightning fit: ours against its SimpleProfiler's
    lightning = json.load(open(sys.argv[3]))
    want = json.load(open(sys.argv[4]))
    theirs = want.pop("simple_epoch_percent", None)
    simple = json.load(open(sys.argv[5]))  # ours on the run SimpleProfiler timed
    for what, rep in (("default profiler", lightning), ("SimpleProfiler's run", simple)):
        got = {a["name"]: a["calls"] for a in rep.get("actions", []) if a.get("source") == "lightning"}
        diff = sorted(set(want.items()) ^ set(got.items()))
        check(bool(want) and got == want, "Lightning actions == SimpleProfiler's, %s (%d names; "
              "differing: %s)" % (what, len(want), diff[:6]))
    # shares of the training: ours of the span of Lightning's actions, SimpleProfiler's of
    # the time since it was made (more): on the same run ours is at least its share
    base = simple.get("actions_percent_of", {})
    epoch = [a["percent"] for a in simple.get("actions", []) if a["name"] == "run_training_epoch"]
    check(base.get("base") == "lightning_span" and epoch and theirs and epoch[0] >= theirs * 0.98,
          "Lightning shares of the training: base %s, run_training_epoch %s %% (SimpleProfiler's "
          "%s %% on the same run)" % (base.get("base"), epoch, theirs and round(theirs, 3)))
    lsteps = [p["steps"] for p in lightning.get("processes", []) if p.get("steps")]
    check(len(lsteps) == 1 and lsteps[0]["count"] >= 2 and
          all(sum(x["parts_ns"].values()) == x["ns"] for x in lsteps[0]["steps"]),
          "a Lightning fit has training steps (%s), parts adding up"
          % (lsteps[0]["source"] if lsteps else None))
else:
    check(False, "a real Lightning fit (Lightning not importable)")
sys.exit(1 if failures else 0)
