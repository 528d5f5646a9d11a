"""The PyTorch bridge is code loaded into the job: it is built and loaded only from a
folder of the user's that no one else can write, never from a shared /tmp fallback, and
its build log is never opened through a link. Each case plants a library that would
leave a marker file if it were loaded, and checks it is not loaded, that one clear
message is printed, and that the program runs as without profrun."""
import ast
import os
import re
import pwd
import shutil
import subprocess

import pytest

from conftest import PROFRUN, profile
from test_torch_ops import CACHE, HAVE_TORCH, PYTHON

NOBODY = 65534
SCRIPT = "import torch\nprint(torch.ones(2, 3).sum().item())\n"
pytestmark = [
    pytest.mark.skipif(not HAVE_TORCH, reason="no torch for /usr/bin/python3 (python3-torch)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another uid"),
]
LOOP = ("import torch\nm = torch.nn.Linear(8, 8)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(6):\n    opt.zero_grad()\n    m(torch.ones(4, 8)).sum().backward()\n"
        "    opt.step()\nprint('steps 6')\n")
MAPS = ("import torch\ntorch.ones(2).sum()\n"
        "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'torch-bridge' in l}))\n")
EVIL = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
    int fd = open("%s", O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
}
"""


@pytest.fixture(scope="module")
def bridge_name(tmp_path_factory):
    """The file name the bridge has for this torch (built once into the session cache),
    as the process that loads it maps it."""
    proc = profile([PYTHON, "-c", MAPS], tmp_path_factory.mktemp("warm"),
                   env={"PROF_TORCH_CACHE": CACHE}, timeout=300)
    loaded = ast.literal_eval(proc.stdout)
    assert len(loaded) == 1, proc.stderr
    return os.path.basename(loaded[0])


@pytest.fixture
def evil(tmp_path):
    """A library whose constructor makes tmp_path/loaded; returns (path, marker)."""
    marker = tmp_path / "loaded"
    src = tmp_path / "evil.c"
    src.write_text(EVIL % marker)
    lib = tmp_path / "evil.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib, marker


def run(tmp_path, env):
    proc = profile([PYTHON, "-c", SCRIPT], tmp_path / "out", env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout == "6.0\n"
    return proc


def plant(cache, name, lib, owner=None, mode=0o755, link=False):
    target = cache / name
    if link:
        os.symlink(lib, target)
    else:
        shutil.copy(lib, target)
        os.chmod(target, mode)
        if owner is not None:
            os.chown(target, owner, owner)


def one_message(proc, *words):
    lines = [l for l in proc.stderr.splitlines() if "no PyTorch operator spans" in l]
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_folder_of_another_user(tmp_path, bridge_name, evil):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o755)
    plant(cache, bridge_name, evil[0], owner=NOBODY)
    os.chown(cache, NOBODY, NOBODY)
    proc = run(tmp_path, {"PROF_TORCH_CACHE": str(cache)})
    assert not evil[1].exists()
    one_message(proc, str(cache), "belongs to uid 65534", "not loading code")


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_folder_writable_by_others(tmp_path, bridge_name, evil, mode):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, mode)
    plant(cache, bridge_name, evil[0])
    proc = run(tmp_path, {"PROF_TORCH_CACHE": str(cache)})
    assert not evil[1].exists()
    one_message(proc, "writable by others")


def test_folder_above_writable_by_others(tmp_path, bridge_name, evil):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may swap the cache folder inside
    cache = shared / "cache"
    cache.mkdir(mode=0o700)
    plant(cache, bridge_name, evil[0])
    proc = run(tmp_path, {"XDG_CACHE_HOME": str(shared), "PROF_TORCH_CACHE": ""})
    assert not evil[1].exists()
    one_message(proc, str(shared), "writable by others")


@pytest.mark.parametrize("how", ["owned_by_other", "group_writable", "link"])
def test_planted_library_in_own_folder(tmp_path, bridge_name, evil, how):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if how == "owned_by_other":
        plant(cache, bridge_name, evil[0], owner=NOBODY)
    elif how == "group_writable":
        plant(cache, bridge_name, evil[0], mode=0o775)
    else:
        plant(cache, bridge_name, evil[0], link=True)
    proc = run(tmp_path, {"PROF_TORCH_CACHE": str(cache)})
    assert not evil[1].exists()
    one_message(proc, bridge_name, "not loading it")


def test_build_log_is_not_opened_through_a_link(tmp_path, bridge_name):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, cache / bridge_name.replace(".so", ".log"))
    proc = run(tmp_path, {"PROF_TORCH_CACHE": str(cache),
                          "CXX": str(tmp_path / "no-such-c++")})
    assert victim.read_text() == "precious\n"
    one_message(proc)


def test_no_shared_fallback_without_home(tmp_path):
    """HOME and XDG_CACHE_HOME unset (as under env -i): the bridge comes from the passwd
    entry's home folder, never from /tmp."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "XDG_CACHE_HOME", "PROF_TORCH_CACHE")}
    proc = subprocess.run([PROFRUN, "--no-report", "-o", str(tmp_path / "out"), "--", PYTHON,
                           "-c", MAPS], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    home = pwd.getpwuid(os.geteuid()).pw_dir
    loaded = ast.literal_eval(proc.stdout)
    assert len(loaded) == 1, proc.stderr
    assert loaded[0].startswith(os.path.join(home, ".cache", "profrun") + "/"), loaded
    assert "/tmp/.cache" not in proc.stderr


def test_first_run_build_is_not_the_programs(tmp_path):
    """A bridge built inside a profiled run (a fresh cache) is the profiler's time: it is
    left out of the Python calls it happened under (import torch), said once, and the
    report's import time matches a run that found the bridge built; `profrun --prepare`
    builds it beforehand."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {"PROF_TORCH_CACHE": str(cache)}
    first = tmp_path / "first"
    profile([PYTHON, "-c", LOOP], first, env=env, timeout=300)
    second = tmp_path / "second"
    profile([PYTHON, "-c", LOOP], second, env=env, timeout=300)
    from conftest import report, report_json

    def module_s(out):
        rows = report_json(out, "--python")["python"]
        return max(r["cumtime_ns"] for r in rows if r["file"] == "<string>") / 1e9

    rep = report(first, "--python")
    assert rep.stderr.count("the profiler built its libtorch bridge during this run") == 1, rep.stderr
    built = float(rep.stderr.split("during this run (")[1].split(" s")[0])
    assert built > 1.0
    # the first run's <module> holds no build: within a second of the second run's
    assert module_s(first) < module_s(second) + 1.0, (module_s(first), module_s(second), built)
    assert "built its libtorch bridge" not in report(second, "--python").stderr
    # nor does its startup (the Training steps, the startup finding, the JSON, the startup
    # flame graph: a review's first run read "startup: 3.276 s ... 80% of the process"
    # against 748.94 ms on the next); the build is said as the profiler's own
    steps = [[p["steps"] for p in report_json(out)["processes"] if p["steps"]][0]
             for out in (first, second)]
    assert steps[0]["startup_ns"] < steps[1]["startup_ns"] + 1e9, (steps[0], steps[1], built)
    assert abs(steps[0]["profiler_ns"] / 1e9 - built) < 0.1, (steps[0]["profiler_ns"], built)
    assert steps[1]["profiler_ns"] == 0, steps[1]
    text = report(first).stdout
    assert re.search(r"Startup: [\d.]+ m?s before the first step .*; the profiler's own [\d.]+ "
                     r"m?s building its torch bridge left out", text), text
    folded = tmp_path / "startup.folded"
    report(first, "--phase", "startup", "--folded", str(folded))
    startup_us = sum(int(l.rsplit(" ", 1)[1]) for l in folded.read_text().splitlines())
    assert startup_us < steps[0]["startup_ns"] / 1e3 + 0.5e6, (startup_us, steps[0], built)
    # --prepare: a fresh cache gets the bridge before any run
    fresh = tmp_path / "fresh"
    fresh.mkdir(mode=0o700)
    prep = subprocess.run([PROFRUN, "--prepare", PYTHON], env=dict(os.environ, PROF_TORCH_CACHE=str(fresh)),
                          capture_output=True, text=True, timeout=300)
    assert prep.returncode == 0 and "is ready" in prep.stdout, prep.stderr
    assert [p.name for p in fresh.iterdir() if p.name.endswith(".so")]
    third = tmp_path / "third"
    profile([PYTHON, "-c", SCRIPT], third, env={"PROF_TORCH_CACHE": str(fresh)}, timeout=300)
    assert "built its libtorch bridge" not in report(third, "--python").stderr
