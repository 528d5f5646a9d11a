#!/bin/sh
# The main job on the bundled example workload: a small CUDA program
# (test/fixtures/cuda/cuda_app.cu: allocations, copies, kernels, streams, events) run
# under profrun, which prints the report. On a machine with an NVIDIA driver it runs on
# the GPU; without one it runs against the device double (test/doubles), which plays the
# GPU with host memory and timed kernels.
set -e
B=${1:?build folder}
if [ ! -x "$B/test/fixtures/cuda_app" ]; then
    echo "demo: no CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda}, so no CUDA workload to profile" >&2
    exit 1
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "demo: NVIDIA GPU found: profiling cuda_app on it"
else
    echo "demo: no GPU here: profiling cuda_app against the device double (test/doubles)"
    LD_LIBRARY_PATH="$B/test/doubles${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
fi
out=$(mktemp -d /tmp/profrun-demo.XXXXXX)
"$B/bin/profrun" -o "$out/cuda" -- "$B/test/fixtures/cuda_app"
echo
echo "demo: a Python workload (test/workloads/py_hot.py: recursion and method calls), top 15 by cumtime"
"$B/bin/profrun" --no-report -o "$out/python" -- python3 test/workloads/py_hot.py 22 100000
"$B/bin/profreport" --python --limit 15 "$out/python"
echo
echo "demo: traces in $out; read them again with: $B/bin/profreport $out/cuda (or $out/python)"
