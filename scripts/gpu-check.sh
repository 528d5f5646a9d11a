#!/bin/sh
# make gpu-check: on a machine with an NVIDIA GPU, profile a small torch CUDA training
# run (test/workloads/gpu_train.py) and check the GPU side end to end: our kernel count
# equals CUPTI's own count for the same run (test/gpu/cupti_count.c, injected in a
# separate run), cuBLAS/cuBLASLt and cuDNN spans are present, every kernel is tied to a
# launching call, the torch.cuda.nvtx ranges appear as actions, ops get CUDA time and
# CUDA memory; the run's summaries report what its traces do; PROF_STEPS with torch's step;
# activation checkpointing's recomputed forwards count in backward; a real Lightning fit gives the
# actions its SimpleProfiler records; then the overhead benchmark (test/bench/bench_gpu.py). Without a GPU it says so and exits 0.
# Every check runs whatever an earlier one did; at the end one table lists every check
# (ok / FAILED, with its figures and the seconds since the start), then the failed ones.
failed=""
start=$(date +%s)
results=""
note() { # note ok|FAILED WHAT: one row of the final table
    printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - start ))" "$2" >> "$results"
}
fail() { failed="$failed $1"; echo "gpu-check: FAILED: $1"; note FAILED "$1"; }
step() { # step WHAT COMMAND...: runs it; a row either way
    what=$1
    shift
    if "$@"; then note ok "$what"; else fail "$what"; fi
}
B=${1:?build folder}
PY=${PYTHON:-python3}
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: SKIPPED: no NVIDIA GPU or driver on this machine"
    exit 0
fi
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu-check: FAILED: $PY has no CUDA-enabled torch"
    exit 1
fi
out=$(mktemp -d /tmp/gpu-check.XXXXXX)
results="$out/results.tsv"
export GPU_CHECK_RESULTS="$results" GPU_CHECK_START="$start"
echo "gpu-check: workdir $out"
step "CUPTI's own count (bare run)" env CUDA_INJECTION64_PATH="$B/test/gpu/libcupti_count.so" \
    CUPTI_COUNT_FILE="$out/cupti_count" "$PY" test/workloads/gpu_train.py 20 > "$out/bare.txt"
step "profrun gpu_train.py" "$B/bin/profrun" -o "$out/prof" -- "$PY" test/workloads/gpu_train.py 20 \
    > "$out/report.txt" 2>&1
"$B/bin/profreport" --format json "$out/prof" > "$out/report.json" || fail "profreport --format json"
"$B/bin/profreport" --format json --phase all "$out/prof" > "$out/report_all.json" ||
    fail "profreport --format json --phase all"
export GPU_CHECK_ALL="$out/report_all.json"
# the Kineto JSON that HTA and the TensorBoard plugin read: deviceProperties from the run's
# device, kernels with their launch shape and estimated occupancy (checked in gpu_check.py)
"$B/bin/profreport" --chrome-trace "$out/chrome.json" "$out/prof" > /dev/null ||
    fail "profreport --chrome-trace"
export GPU_CHECK_CHROME="$out/chrome.pt.trace.json"
step "profreport --kernels" "$B/bin/profreport" --kernels --limit 15 "$out/prof"
step "profreport --gpu" "$B/bin/profreport" --gpu "$out/prof"
step "profreport --actions" "$B/bin/profreport" --actions "$out/prof"
# The run's per-trace summaries (profreport --summarize) report what its traces report,
# the findings drawn from the GPU timeline included.
mkdir "$out/sum" || fail "summaries"
cp "$out/prof"/*.trace "$out/sum/" || fail "summaries"
"$B/bin/profreport" --summarize "$out/sum" || fail "profreport --summarize"
rm -f "$out/sum"/*.trace
"$B/bin/profreport" --format json "$out"/sum/*.summary > "$out/report_sum.json" || fail "report from summaries"
"$PY" - "$out" <<'PYEOF'
import sys
out = sys.argv[1]
# the summaries lie in sum/, their processes' META still names the traces in prof/
a = open(out + "/report.json").read().replace(out + "/prof", "DIR")
b = open(out + "/report_sum.json").read().replace(out + "/sum", "DIR").replace(out + "/prof", "DIR")
if a != b:
    import difflib
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "traces", "summaries", n=1, lineterm="")
    print("\n".join(list(diff)[:60]))
    sys.exit("gpu-check: FAILED: the summaries' report differs from the traces'")
print("gpu-check: summaries report the same as the traces")
PYEOF
if [ $? = 0 ]; then note ok "summaries report what the traces do"; else fail "summaries against traces"; fi
# PROF_STEPS on this machine's Python and torch (3.12+, torch 2.x, untested elsewhere):
# the PyTorch layer counts the optimizer steps, the Python layer's events are off outside
# steps 100-120 and on inside, 21 steps recorded.
PROF_STEPS=100-120 WINDOW_EVENTS="$out/window_events.txt" "$B/bin/profrun" --no-report \
    -o "$out/wprof" -- "$PY" test/workloads/window_loop.py torch 300 > /dev/null || fail "PROF_STEPS run"
"$B/bin/profreport" --python --format json "$out/wprof" > "$out/window.json" || fail "PROF_STEPS report"
"$B/bin/profreport" dump "$out"/wprof/*.trace | grep -c 'window_steps_from' > "$out/window_from.txt" || true
"$PY" - "$out" <<'PYEOF'
import json, sys
out = sys.argv[1]
rows = json.load(open(out + "/window.json"))["python"]
steps = sum(r["ncalls"] for r in rows if r["qualname"] == "main.<locals>.train_step")
seen = [l.split(" ", 1)[1].strip() if " " in l else "" for l in open(out + "/window_events.txt")]
off = [i for i, on in enumerate(seen) if not on]
ok = steps == 21 and off == list(range(99)) + list(range(120, 300)) and \
    open(out + "/window_from.txt").read().strip() != "0"
print("gpu-check: PROF_STEPS=100-120: %d train_step calls, events off outside the window: %s"
      % (steps, off == list(range(99)) + list(range(120, 300))))
if not ok:
    sys.exit("gpu-check: FAILED: PROF_STEPS with torch's step on this Python")
PYEOF
if [ $? = 0 ]; then note ok "PROF_STEPS=100-120 window"; else fail "PROF_STEPS window"; fi
# Activation checkpointing on the GPU: the autograd engine recomputes the blocks' forwards on
# its device thread, called back from C++ (BackwardCFunction.apply, the saved-tensor unpack
# hook); they are backward's, so forward, backward and optimizer_step count one call a step.
for v in reentrant non-reentrant; do
    "$B/bin/profrun" --no-report -o "$out/ckpt-$v" -- "$PY" test/workloads/torch_checkpoint.py \
        "$v" 20 cuda > "$out/ckpt-$v.txt" 2>&1 || fail "checkpoint ($v) run"
    "$B/bin/profreport" --format json "$out/ckpt-$v" > "$out/ckpt-$v.json" ||
        fail "checkpoint ($v) report"
    "$PY" - "$out/ckpt-$v.json" 20 <<'PYEOF'
import json, sys
rows = {a["name"]: a for a in json.load(open(sys.argv[1]))["actions"] if a["source"] == "builtin"}
loop = ("forward", "backward", "optimizer_step")
calls = [rows[n]["calls"] if n in rows else 0 for n in loop]
share = sum(rows[n]["percent"] for n in loop if n in rows)
print("gpu-check: checkpointed: forward, backward, optimizer_step calls %s, %.1f %% together"
      % (calls, share))
sys.exit(0 if calls == [int(sys.argv[2])] * 3 and share <= 100 else 1)
PYEOF
    if [ $? = 0 ]; then note ok "checkpoint ($v): recomputed forwards count in backward"
    else fail "checkpoint ($v): actions"; fi
done
# A real Lightning fit (the GPU machine has Lightning 2.x): its SimpleProfiler's actions
# are the reference for ours under the default profiler.
lightning=""
if "$PY" -c "import lightning.pytorch" 2>/dev/null || "$PY" -c "import pytorch_lightning" 2>/dev/null; then
    # its SimpleProfiler's counts and share of run_training_epoch, from a profiled run (the
    # shares compared on the same run), and ours under the default profiler
    "$B/bin/profrun" --no-report -o "$out/lsimple" -- "$PY" test/workloads/lightning_fit.py simple \
        2>/dev/null | tail -n 1 > "$out/lightning_want.json"
    "$B/bin/profreport" --format json "$out/lsimple" > "$out/lightning_simple.json"
    "$B/bin/profrun" --no-report -o "$out/lprof" -- "$PY" test/workloads/lightning_fit.py none \
        > /dev/null 2>&1
    "$B/bin/profreport" --format json "$out/lprof" > "$out/lightning.json"
    "$B/bin/profreport" --actions --limit 25 "$out/lprof"
    lightning="$out/lightning.json $out/lightning_want.json $out/lightning_simple.json"
else
    fail "no Lightning for $PY: Lightning's action names not checked"
fi
# Attach (issue 21) to a CUDA training loop started without profrun: the CUDA calls made
# through GOT entries bound before the attach, CUPTI's callbacks and activity enabled at
# attach; --steps 50 records 50 steps, as many kernels each as the profiled run's steady
# steps, and the loop runs on to its end.
"$PY" test/workloads/gpu_train.py 1000000 "$out/attach.stop" > "$out/attach_target.txt" 2>&1 &
tpid=$!
n=0
while ! grep -q '^ready' "$out/attach_target.txt" && [ $n -lt 240 ] && kill -0 $tpid 2>/dev/null; do
    sleep 0.5
    n=$((n + 1))
done
step "profrun attach --steps 50 to a CUDA loop" timeout 300 "$B/bin/profrun" attach --no-report \
    -o "$out/attach" --steps 50 "$tpid"
touch "$out/attach.stop"
# (the loop ends within a step of the stop file; one that does not is a failure, not a hang
# of gpu-check: a watchdog kills it after 60 s, its status then 137)
(sleep 60 && kill -9 "$tpid" 2>/dev/null) &
watchdog=$!
wait "$tpid"
trc=$?
kill "$watchdog" 2>/dev/null
"$B/bin/profreport" --format json --phase all "$out/attach" > "$out/attach.json" ||
    fail "attach report"
export GPU_CHECK_ATTACH="$out/attach.json $trc $out/attach_target.txt"
# shellcheck disable=SC2086
"$PY" scripts/gpu_check.py "$out/report.json" "$(cat "$out/cupti_count" 2>/dev/null || echo -1)" \
    $lightning || failed="$failed report-checks"
"$PY" test/bench/bench_gpu.py "$B" > "$out/bench.txt" 2>&1
rc=$?
cat "$out/bench.txt"
if [ $rc = 0 ]; then note ok "bench_gpu: $(grep -c 'profrun [0-9.]*x' "$out/bench.txt") ratios printed"
else fail "bench_gpu"; fi
echo
echo "gpu-check: every check ($(( $(date +%s) - start )) s):"
printf '%-7s %6s  %s\n' RESULT SECONDS CHECK
while IFS="$(printf '\t')" read -r res secs what; do
    printf '%-7s %6s  %s\n' "$res" "$secs" "$what"
done < "$results"
if [ -n "$failed" ]; then
    echo "gpu-check: FAILED:$failed"
    exit 1
fi
echo "gpu-check: all checks passed"
