"""Cost of sampling mode on a CPU-bound Python program, measured in one run: py_hot.py
(fib + method calls) bare, then under libprof.so with only sampling on
(PROF_SAMPLE_HZ=199, the exact Python and torch layers off), alternating, fastest of
ROUNDS each; prints the added wall-time share (goal <= 2 %). With the Python layer off the
sampler reads each sample's Python frames itself (preload/stacks/stacks_python.c): that
cost is part of the figure.

    BUILD=$PWD/build python3 test/bench/bench_sampling.py [PYTHON]
"""
import os
import subprocess
import sys
import tempfile

BUILD = os.environ["BUILD"]
HERE = os.path.dirname(os.path.abspath(__file__))
HOT = os.path.join(HERE, "..", "workloads", "py_hot.py")
PYTHON = sys.argv[1] if len(sys.argv) > 1 else sys.executable
ROUNDS = int(os.environ.get("ROUNDS", "5"))


def run(env_extra, out):
    env = dict(os.environ)
    env.update(env_extra)
    if env_extra:
        env["LD_PRELOAD"] = os.path.join(BUILD, "lib", "libprof.so")
        env["PROF_OUTPUT_DIR"] = out
    proc = subprocess.run([PYTHON, HOT, "29"], env=env, capture_output=True, text=True,
                          check=True)
    return float(proc.stdout.split()[-1])


def main():
    with tempfile.TemporaryDirectory() as out:
        sampled = {"PROF_SAMPLE_HZ": "199", "PROF_PYTHON": "0", "PROF_TORCH": "0",
                   "PROF_QUIET": "1"}
        bare, prof = [], []
        for _ in range(ROUNDS):
            bare.append(run({}, out))
            prof.append(run(sampled, out))
        samples = subprocess.run([os.path.join(BUILD, "bin", "profreport"), "--samples",
                                  "--all-runs", out], capture_output=True, text=True)
        count = samples.stdout.split("\n", 1)[0]
    b, p = min(bare), min(prof)
    print("sampling at 199 Hz (%s, py_hot.py): bare %.3f s, sampled %.3f s: +%.1f %% "
          "(goal <= 2 %%); %s" % (os.path.basename(PYTHON), b, p, 100 * (p - b) / b, count))


if __name__ == "__main__":
    main()
