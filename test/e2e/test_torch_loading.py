"""PyTorch layer, loading: the bridge is built once per torch and cached, found again,
built by one process when several start together, installed in programs linked with
libtorch; when it cannot be built the program runs exactly as without profrun. The
dlopen wrapper that notices libtorch keeps the caller's library search path."""
import os
import subprocess
import threading

import pytest

from conftest import profile
from test_torch_ops import CACHE, HAVE_TORCH, PYTHON, read_run

pytestmark = pytest.mark.skipif(not HAVE_TORCH,
                                reason="no torch for /usr/bin/python3 (Debian's python3-torch)")

SCRIPT = "import torch\nprint(torch.ones(2, 3).sum().item())\n"
BUILDING = "building the libtorch bridge"


def op_count(outdir):
    return sum(len(ops) for _, ops in read_run(outdir).values())


def bare_output():
    return subprocess.run([PYTHON, "-c", SCRIPT], capture_output=True, text=True, timeout=120)


def test_cached_bridge_is_reused(tmp_path):
    profile([PYTHON, "-c", SCRIPT], tmp_path / "a", env={"PROF_TORCH_CACHE": CACHE})
    again = profile([PYTHON, "-c", SCRIPT], tmp_path / "b", env={"PROF_TORCH_CACHE": CACHE})
    assert BUILDING not in again.stderr
    assert op_count(tmp_path / "b") > 0


def test_concurrent_processes_build_once(tmp_path):
    cache = tmp_path / "cache"
    procs = [None, None]

    def run(i):
        procs[i] = profile([PYTHON, "-c", SCRIPT], tmp_path / ("out%d" % i),
                           env={"PROF_TORCH_CACHE": str(cache)}, timeout=300)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(p.stderr.count(BUILDING) for p in procs) == 1
    assert len([f for f in os.listdir(cache) if f.endswith(".so")]) == 1
    for i in range(2):
        assert op_count(tmp_path / ("out%d" % i)) > 0


@pytest.mark.parametrize("case", ["cache_unwritable", "no_compiler", "torch_off"])
def test_program_unharmed_when_there_is_no_bridge(tmp_path, case):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {"PROF_TORCH_CACHE": str(tmp_path / "cache")}
    if case == "cache_unwritable":
        env["PROF_TORCH_CACHE"] = str(blocker / "cache")  # under a file: mkdir fails, even as root
    elif case == "no_compiler":
        env["CXX"] = str(tmp_path / "no-such-c++")
    else:
        env["PROF_TORCH"] = "0"
    proc = profile([PYTHON, "-c", SCRIPT], tmp_path / "out", env=env)
    bare = bare_output()
    assert proc.returncode == 0 and proc.stdout == bare.stdout
    assert op_count(tmp_path / "out") == 0
    if case == "torch_off":
        assert "PyTorch" not in proc.stderr and not (tmp_path / "cache").exists()
    else:
        assert proc.stderr.count("no PyTorch operator spans") == 1


CPP_PROGRAM = r"""
#include <ATen/ATen.h>
#include <cstdio>
int main() {
    at::Tensor t = at::ones({4, 4});
    for (int i = 0; i < 3; i++) t = at::mm(t, t);
    std::printf("%g\n", t.sum().item<double>());
}
"""


def test_program_linked_with_libtorch(tmp_path):
    if not os.path.exists("/usr/include/ATen/ATen.h"):
        pytest.skip("no libtorch headers in /usr/include (libtorch-dev)")
    src = tmp_path / "prog.cpp"
    src.write_text(CPP_PROGRAM)
    exe = tmp_path / "prog"
    subprocess.run(["c++", "-std=c++17", "-O1", str(src), "-o", str(exe), "-ltorch_cpu", "-lc10"],
                   check=True, timeout=300)
    proc = profile([str(exe)], tmp_path / "out", env={"PROF_TORCH_CACHE": CACHE})
    assert proc.stdout == "262144\n"
    names = [op["name"] for _, ops in read_run(tmp_path / "out").values() for op in ops]
    assert names.count("aten::mm") == 3


DLOPEN_CALLER = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen failed: %s\n", dlerror()); return 1; }
    int (*value)(void) = (int (*)(void))dlsym(h, "target_value");
    printf("%d\n", value());
    return 0;
}
"""


@pytest.mark.parametrize("dtags", ["--enable-new-dtags", "--disable-new-dtags"])  # RUNPATH, RPATH
@pytest.mark.parametrize("name", ["libdlo_target.so", "$ORIGIN/sub/libdlo_target.so"])
def test_dlopen_keeps_the_callers_search_path(tmp_path, dtags, name):
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "target.c").write_text("int target_value(void) { return 42; }\n")
    (tmp_path / "caller.c").write_text(DLOPEN_CALLER)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(sub / "libdlo_target.so"),
                    str(tmp_path / "target.c")], check=True)
    exe = tmp_path / "caller"
    subprocess.run(["cc", "-o", str(exe), str(tmp_path / "caller.c"), "-ldl",
                    "-Wl,%s,-rpath,$ORIGIN/sub" % dtags], check=True)
    bare = subprocess.run([str(exe), name], capture_output=True, text=True)
    assert bare.stdout == "42\n"
    proc = profile([str(exe), name], tmp_path / "out")
    assert proc.stdout == "42\n"
