#!/bin/sh
# Benchmarks of issue-level goals; each prints a ratio or rate measured in one run.
# Called by `make bench` with BUILD (absolute build folder) and CUDA_HOME set.
set -e
B=${BUILD:?}
echo "== collector: drain rate, paced load without drops, bytes per record"
"$B/test/bench/bench_collector"
echo "== reader: many threads, deep Python stacks in folded stacks"
"$B/test/bench/bench_report"
if [ -x "$B/test/bench/bench_call_cost" ] && [ -f "$B/test/doubles/libcudart.so.13" ]; then
    echo "== added cost per intercepted call (device double's cudaGetDevice)"
    out=$(mktemp -d)
    # Default settings but CUPTI off (the wrapper's own cost; CUPTI calls back only for
    # launches, copies and sets anyway); 20 000 calls (480 KB of records) per round, then
    # a 120 ms pause.
    LD_LIBRARY_PATH="$B/test/doubles" PROF_CUPTI=0 \
        "$B/bin/profrun" --no-report -o "$out" -- "$B/test/bench/bench_call_cost" 20000 40 120
    "$B/bin/profreport" --format json "$out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
row = [a for a in r["api"] if a["name"] == "cudaGetDevice"][0]
lost = sum(p["lost"] for p in r["processes"])
print("call cost: report counts %d cudaGetDevice calls, %d events lost from the timeline" % (row["calls"], lost))'
    echo "== CPU-side cost per kernel of the CUPTI path (device doubles, 0 ns kernels)"
    launch() { LD_LIBRARY_PATH="$B/test/doubles" FAKE_CUDA_KERNEL_NS=0 "$@" "$B/test/bench/bench_launch" 100000 | tail -1; }
    bare=$(launch env)
    nocupti=$(launch env PROF_CUPTI=0 "$B/bin/profrun" --no-report -o "$out")
    cupti=$(launch env "$B/bin/profrun" --no-report -o "$out")
    echo "kernel launch: bare $bare ns, profiled without CUPTI $nocupti ns, with CUPTI $cupti ns per launch" \
        "(CUPTI path: +$(echo "$cupti - $nocupti" | bc) ns per kernel, the double's own CUPTI work included)"
    rm -rf "$out"
else
    echo "== call cost: skipped (no CUDA toolkit: the device double is not built)"
fi
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "== PyTorch CPU small-op step: profrun vs torch.profiler overhead"
    BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_torch.py"
else
    echo "== PyTorch: skipped (no torch for /usr/bin/python3)"
fi
