#!/bin/sh
# Benchmarks of issue-level goals; each prints a ratio or rate measured in one run.
# Called by `make bench` with BUILD (absolute build folder) and CUDA_HOME set.
set -e
B=${BUILD:?}
echo "== collector: drain rate, paced load without drops, bytes per record"
"$B/test/bench/bench_collector"
echo "== timeline exports: Perfetto bytes per event, export rate, profreport peak RSS at 1 M and 10 M events"
tl=$(mktemp -d)
"$B/test/bench/bench_timeline" "$B/bin/profreport" "$tl"
rm -rf "$tl"
echo "== 1,024-rank merge (issue 12): generated rank traces summarized node by node, final merge from the summaries; here 16 ranks x 2 MB, 8 per node (the README has the full run: bench_merge PROFREPORT DIR)"
mg=$(mktemp -d)
"$B/test/bench/bench_merge" "$B/bin/profreport" "$mg" 16 2 8
rm -rf "$mg"
echo "== --summarize and the report's peak memory on real traces (issue 22): rank 0 of a 2-rank torchrun gloo DDP run on CPU under profrun (Python calls, PyTorch ops, collectives), cloned 8 times"
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null && command -v torchrun >/dev/null; then
    rt=$(mktemp -d)
    # Debian's torchrun (Python 3.11) needs --redirects/--tee to start its workers.
    if ! "$B/bin/profrun" --no-report -o "$rt/traces" -- torchrun --nproc_per_node 2 --redirects 2 \
        --tee 1 test/workloads/ddp_slow_rank.py 300 1 2 sleep >"$rt/run.log" 2>&1; then
        tail -20 "$rt/run.log"
        echo "bench: CHECK FAILED: the DDP run under profrun failed"
        exit 1
    fi
    "$B/test/bench/bench_summarize" "$B/bin/profreport" "$(ls "$rt"/traces/*_rank0.trace)" "$rt/clones" 8 5
    echo "== final merge of ranks cloned from that real rank (issue 22): here 64 ranks, 32 per node (the README has 1,024: bench_merge_real PROFREPORT TRACE DIR)"
    "$B/test/bench/bench_merge_real" "$B/bin/profreport" "$(ls "$rt"/traces/*_rank0.trace)" "$rt/merge" 64 32
    rm -rf "$rt"
else
    echo "summarize: skipped: no torch or torchrun for /usr/bin/python3 (Debian: python3-torch), so no real DDP trace to clone"
fi
echo "== reader: many threads, deep Python stacks in folded stacks"
"$B/test/bench/bench_report"
echo "== HTML report: page size, generation time and Chromium opening time at 1 M and 10 M events"
ht=$(mktemp -d)
"$B/test/bench/bench_html" "$B/bin/profreport" "$ht"
rm -rf "$ht"
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
    echo "== added cost per intercepted call outside a capture window (PROF_WINDOW_SIGNAL=USR2, never sent: recording stays off)"
    rm -rf "$out"
    LD_LIBRARY_PATH="$B/test/doubles" PROF_CUPTI=0 PROF_WINDOW_SIGNAL=USR2 \
        "$B/bin/profrun" --no-report -o "$out" -- "$B/test/bench/bench_call_cost" 20000 40 0 |
        sed -e 's/, profiled /, outside the window /' -e 's/(goal <= 25)/(goal <= 1)/' |
        grep 'ns/call'
    "$B/bin/profreport" --format json "$out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
print("call cost: outside the window the report counts %d cudaGetDevice calls (0 expected)" % sum(a["calls"] for a in r["api"] if a["name"] == "cudaGetDevice"))'
    echo "== CPU-side cost per kernel of the CUPTI path (device doubles, 0 ns kernels)"
    launch() { LD_LIBRARY_PATH="$B/test/doubles" FAKE_CUDA_KERNEL_NS=0 "$@" "$B/test/bench/bench_launch" 100000 | tail -1; }
    bare=$(launch env)
    nocupti=$(launch env PROF_CUPTI=0 "$B/bin/profrun" --no-report -o "$out")
    cupti=$(launch env "$B/bin/profrun" --no-report -o "$out")
    echo "kernel launch: bare $bare ns, profiled without CUPTI $nocupti ns, with CUPTI $cupti ns per launch" \
        "(CUPTI path: +$(echo "$cupti - $nocupti" | bc) ns per kernel, the double's own CUPTI work included)"
    echo "== call stacks: cost of a stack of about 30 frames, bytes per event on disk"
    rm -rf "$out"
    LD_LIBRARY_PATH="$B/test/doubles" PROF_CUPTI=0 PROF_STACKS=1 \
        "$B/bin/profrun" --no-report -o "$out" -- "$B/test/bench/bench_stacks" 20000 15 26
    for f in "$out"/*.trace; do "$B/bin/profreport" dump "$f"; done | awk '
        $2 == "STACK_REF" { refs++; ref_bytes += substr($NF, 6) }
        $2 == "STACK" { stacks++; stack_bytes += substr($NF, 6) }
        END { printf "stack records: %d uses in %.1f bytes each, %d distinct stacks in %d bytes: %.2f bytes per event on disk (goal <= 20)\n",
              refs, ref_bytes / refs, stacks, stack_bytes, (ref_bytes + stack_bytes) / refs }'
    rm -rf "$out"
else
    echo "== call cost: skipped (no CUDA toolkit: the device double is not built)"
fi
if [ -x "$B/test/bench/bench_mpi_call" ] && command -v mpirun >/dev/null; then
    echo "== added cost per wrapped MPI call (MPI_Allreduce of one int on MPI_COMM_SELF, one rank)"
    out=$(mktemp -d)
    # 10 000 calls (640 KB of records) per round, then a 120 ms pause: none dropped.
    mpirun --allow-run-as-root --oversubscribe -np 1 -x LD_PRELOAD="$B/lib/libprof.so" \
        -x PROF_OUTPUT_DIR="$out" "$B/test/bench/bench_mpi_call" 10000 40 120
    "$B/bin/profreport" --all-runs --format json --comm "$out" | /usr/bin/python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)["comm"]}
print("MPI call cost: report counts %d MPI_Allreduce calls" % rows["MPI_Allreduce"]["calls"])'
    rm -rf "$out"
else
    echo "== MPI call cost: skipped (no mpirun or mpicc)"
fi
echo "== offline symbolization (libdw)"
"$B/test/bench/bench_symbols"
echo "== Python layer outside a capture window: py_hot.py bare vs window closed (3.12+: events off)"
BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_py_window.py"
echo "== profrun attach: the target thread's stop, and attach to first recorded event"
BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_attach.py"
echo "== sampling mode on a CPU-bound Python program"
BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_sampling.py"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "== PyTorch CPU small-op step: profrun vs torch.profiler overhead"
    BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_torch.py"
    echo "== PyTorch: 5 M tiny ops on 2 threads, default settings: op rate, every op counted"
    BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_torch_ops.py"
    echo "== PyTorch small-op loop: the op layer against torch's own floor, everything on against bare"
    BUILD="$B" /usr/bin/python3 "$(dirname "$0")/bench_op_floor.py"
else
    echo "== PyTorch: skipped (no torch for /usr/bin/python3)"
fi
