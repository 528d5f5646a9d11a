#!/bin/sh
# Python profiler benchmark: cost against cProfile's on the same work, per interpreter,
# measured in one run. BUILD (the build folder) must be set; ROUNDS (default 5) optional.
#     BUILD=$PWD/build sh test/bench/run_python.sh [python3 ...]
set -e
: "${BUILD:?set BUILD to the build folder}"
echo "== Python profiler: (profiled - bare) / (cProfile - bare), ns per call, fib(30) trace"
BUILD="$BUILD" /usr/bin/python3 "$(dirname "$0")/bench_python.py" "$@"
