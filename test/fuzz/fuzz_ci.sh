#!/bin/sh
# make fuzz-ci: the reader fuzzer for a bounded slice of CI.
#   1. replays every saved input (test/fuzz/corpus, test/fuzz/crashes) through every view
#      and every writer (FUZZ_WRITERS=all): a regression fails here, by file name;
#   2. fuzzes from a fresh copy of the corpus with JOBS processes (one per core) until
#      RUNS executions in all (RUNS / JOBS each) or SECONDS, whichever comes first;
#   3. prints the executions, the time and the rate; fails on any finding (crash, leak,
#      sanitizer report, timeout, out of memory), whose input is kept under OUT/artifacts/
#      (copy it into test/fuzz/crashes/ with the fix).
# Usage: fuzz_ci.sh FUZZER OUT RUNS SECONDS JOBS
set -eu
fuzzer=$1 runs=$3 seconds=$4 jobs=$5
out=$(mkdir -p "$2" && cd "$2" && pwd)
opts="-max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1"
# Speed, not detection: no allocation stacks (a finding is re-run with them) and no fill
# of new blocks.
ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0:max_malloc_fill_size=0}
export ASAN_OPTIONS
root=$(pwd)
fuzzer=$(cd "$(dirname "$fuzzer")" && pwd)/$(basename "$fuzzer")
rm -rf "$out/ci" && mkdir -p "$out/ci/corpus" "$out/artifacts"

echo "fuzz-ci: replaying the saved inputs"
FUZZ_WRITERS=all "$fuzzer" $opts "$root"/test/fuzz/corpus/* "$root"/test/fuzz/crashes/* \
    >"$out/ci/replay.log" 2>&1 ||
    { cat "$out/ci/replay.log"; echo "fuzz-ci: a saved input fails (above)"; exit 1; }

each=$(( (runs + jobs - 1) / jobs ))
echo "fuzz-ci: $jobs job(s) of $each runs, at most $seconds s"
start=$(date +%s)
rc=0
(cd "$out/ci" && "$fuzzer" $opts -jobs="$jobs" -workers="$jobs" -runs="$each" \
    -max_total_time="$seconds" -artifact_prefix="$out/artifacts/" \
    corpus "$root/test/fuzz/corpus" "$root/test/fuzz/crashes" >jobs.log 2>&1) || rc=$?
end=$(date +%s)
total=0
for log in "$out"/ci/fuzz-*.log; do
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    total=$((total + ${n:-0}))
done
secs=$((end - start))
[ "$secs" -gt 0 ] || secs=1
if [ "$rc" -ne 0 ] || grep -lq "ERROR: \|runtime error:\|SUMMARY: " "$out"/ci/fuzz-*.log; then
    grep -h -A30 "ERROR: \|runtime error:" "$out"/ci/fuzz-*.log | head -60
    echo "fuzz-ci: FINDING after $total executions; the input is in $out/artifacts/"
    exit 1
fi
echo "fuzz-ci: $total executions in $secs s ($((total / secs)) execs/s on $jobs job(s)), no finding"
if [ "$total" -lt "$runs" ]; then
    echo "fuzz-ci: note: the $seconds s limit came before the $runs executions asked for"
fi
