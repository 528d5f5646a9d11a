"""Sampling without the Python hook (PROF_PYTHON=0 PROF_SAMPLE_HZ): the sampler reads the
sampled thread's Python frames itself (preload/stacks/stacks_python.c), so --samples,
--stacks-folded and the flame graph name Python functions as qualname  file:line, between
the C frames and the interpreter's start, on CPython 3.8-3.13 (pyenv's, and Debian's
static /usr/bin/python3).

- py_hot.py: fib and Counter.bump's loop, on every interpreter;
- py_sample_frames.py pool: fib on a ThreadPoolExecutor's threads;
- py_sample_frames.py deep / flat: a 300-deep recursion (the sampler reads the innermost
  128 frames and says the rest were not read) and a 20-deep one (every frame read);
- the offsets table is what the installed headers give;
- an interpreter the table does not know (3.7): one line on stderr, samples without Python.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PROFREPORT, ROOT, build_path, profile, report, trace_files

sys.path.insert(0, os.path.join(ROOT, "test", "fixtures", "stacks"))
import py_offsets  # noqa: E402

HOT = os.path.join(ROOT, "test", "workloads", "py_hot.py")
FRAMES = os.path.join(ROOT, "test", "workloads", "py_sample_frames.py")
TABLE = os.path.join(ROOT, "preload", "stacks", "stacks_python_offsets.def")
NO_HOOK = {"PROF_PYTHON": "0", "PROF_SAMPLE_HZ": "499"}

PYENV = os.path.expanduser("~/.pyenv/versions")


def pyenv_python(minor):
    found = sorted(d for d in os.listdir(PYENV) if d.startswith("3.%d." % minor)) \
        if os.path.isdir(PYENV) else []
    return os.path.join(PYENV, found[-1], "bin", "python3") if found else None


INTERPRETERS = [("3.%d" % m, pyenv_python(m)) for m in range(8, 14)]
INTERPRETERS.append(("debian3.11", "/usr/bin/python3"))


@pytest.fixture(params=INTERPRETERS, ids=[name for name, _ in INTERPRETERS])
def python(request):
    _, path = request.param
    if not path or not os.access(path, os.X_OK):
        pytest.skip("interpreter %s is not installed" % request.param[0])
    return path


def folded(out, tmp_path, name="samples.folded"):
    """[(frames root first, weight)] of --samples --stacks-folded."""
    path = tmp_path / name
    report(out, "--samples", "--stacks-folded", str(path))
    rows = []
    for line in path.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        rows.append((stack.split(";"), int(weight)))
    return rows


def dump(out):
    return subprocess.run([PROFREPORT, "dump"] + trace_files(out), capture_output=True,
                          text=True, check=True).stdout


def is_python(frame):
    return frame.endswith("  [python]")


def name_of(frame):
    return frame.split("  ")[0]


def test_offsets_table_matches_the_headers():
    """Each row of the committed table is what the probe gives against that version's
    headers (every installed copy of them: pyenv's and the system's)."""
    rows = {}
    with open(TABLE) as f:
        for line in f:
            m = re.match(r"STACKS_PY_OFFSETS\((\d+),", line)
            if m:
                rows[int(m.group(1))] = line.strip()
    assert sorted(rows) == list(range(8, 14)), rows
    compared = 0
    for minor in range(8, 14):
        for dirs in py_offsets.include_dirs(minor):
            row = py_offsets.derive(dirs)
            if row is None:
                continue
            assert row == rows[minor], (dirs, row, rows[minor])
            compared += 1
    if not compared:
        pytest.skip("no CPython headers with internal headers installed")


def test_hot_functions_named_without_the_hook(python, tmp_path):
    out = tmp_path / "out"
    proc = profile([python, HOT, "29", "300000"], out, env=NO_HOOK)
    assert re.match(r"^\d+\.\d+\n$", proc.stdout), proc.stdout
    assert "Python frames are not read" not in proc.stderr, proc.stderr
    rows = folded(out, tmp_path)
    total = sum(w for _, w in rows)
    fib = [(s, w) for s, w in rows if any(name_of(f) == "fib" and is_python(f) for f in s)]
    assert sum(w for _, w in fib) >= 0.3 * total, (total, rows[:3])
    # the function, its file and first line, as the call tree names them
    frame = next(f for f in fib[0][0] if name_of(f) == "fib")
    assert re.match(r"fib  \S*py_hot\.py:9  \[python\]$", frame), frame
    assert any(any(name_of(f) == "methods" and is_python(f) for f in s) for s, _ in rows)
    # a method by its qualified name where the code object has one (3.11+)
    bump = {name_of(f) for s, _ in rows for f in s if name_of(f).endswith("bump")}
    old = any("/3.%d." % m in python for m in (8, 9, 10))
    assert bump <= ({"bump"} if old else {"Counter.bump"}), bump
    # root first: the interpreter's start (C), then <module>, main, fib..., in one block
    # (a sample whose native unwind stopped early has its Python frames outermost)
    for stack, _ in fib:
        py = [i for i, f in enumerate(stack) if is_python(f)]
        assert py == list(range(py[0], py[-1] + 1)), stack
        names = [name_of(stack[i]) for i in py]
        assert names[:2] == ["<module>", "main"] and set(names[2:]) == {"fib"}, names
    started = [w for s, w in fib if not is_python(s[0]) and
               any(not is_python(f) and name_of(f) in ("main", "Py_BytesMain") for f in s)]
    # (pyenv's 3.8: libunwind stops inside the interpreter's C frames in most samples,
    # with the hook as without it)
    if "/3.8." not in python:
        assert sum(started) >= 0.5 * sum(w for _, w in fib), fib[:3]
    # the text report names them too, and dump shows the records
    assert re.search(r"\n    fib  \S*py_hot\.py:9  \[python\]\n", report(out, "--samples").stdout)
    text = dump(out)
    assert re.search(r' PY_CODE id=\d+ line=9 flags=\d name="fib" file="\S*py_hot\.py"', text)
    assert re.search(r" SAMPLE_PY ticks=\d+ frames=\d+ flags=0 codes=\d", text)


def test_flame_graph_names_python_functions(tmp_path):
    out = tmp_path / "out"
    profile(["/usr/bin/python3", HOT, "27", "100000"], out, env=NO_HOOK)
    svg = tmp_path / "f.svg"
    report(out, "--samples", "--flamegraph", str(svg))
    assert "fib  " in svg.read_text() and "py_hot.py:9" in svg.read_text()


def test_thread_pool_threads(tmp_path):
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", FRAMES, "pool"], out, env=NO_HOOK)
    assert proc.stdout == "py_sample_frames pool done\n"
    rows = folded(out, tmp_path)
    total = sum(w for _, w in rows)
    pool = [(s, w) for s, w in rows if any(name_of(f) == "pool_burn" for f in s)]
    assert sum(w for _, w in pool) >= 0.5 * total, rows[:3]
    names = [name_of(f) for f in max(pool, key=lambda r: r[1])[0] if is_python(f)]
    # a worker thread's frames: threading's bootstrap, the executor's worker, the task
    order = [names.index(n) for n in ("Thread._bootstrap", "_worker", "pool_burn", "fib")]
    assert order == sorted(order), names
    # each thread defines its own code ids: pool_burn was seen on several threads
    assert len(re.findall(r' PY_CODE id=\d+ line=\d+ flags=\d name="pool_burn"', dump(out))) >= 2


def test_deep_recursion_reads_the_innermost_128_frames(tmp_path):
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", FRAMES, "deep"], out, env=NO_HOOK)
    assert proc.stdout == "py_sample_frames deep done\n"
    rows = folded(out, tmp_path)
    # a sample may catch the recursion on its way down or up (fewer than 128 frames, every
    # one read): the deep ones hold at least 96 (128 read, at most 26 of them fib(25)s)
    deep = [(s, w) for s, w in rows if sum(name_of(f) == "descend" for f in s) >= 96]
    assert sum(w for _, w in deep) >= 0.5 * sum(w for _, w in rows), rows[:3]
    for stack, _ in deep:
        py = [f for f in stack if is_python(f)]
        assert py[0] == "<outer Python frames not read>  [python]", py[:3]
        assert len(py) == 129 and "<module>" not in [name_of(f) for f in py]
    out2 = tmp_path / "out2"
    profile(["/usr/bin/python3", FRAMES, "flat"], out2, env=NO_HOOK)
    rows = folded(out2, tmp_path, "flat.folded")
    flat = [s for s, _ in rows if any(name_of(f) == "shallow" for f in s)]
    assert flat
    for stack in flat:
        names = [name_of(f) for f in stack if is_python(f)]
        assert names[:3] == ["<module>", "main", "shallow"], names
        assert names.count("shallow") == 21 and "<outer Python frames not read>" not in names


def test_hook_on_keeps_the_call_tree(tmp_path):
    """With the Python hook on, samples take their Python part from its call tree as
    before: the sampler reads frames only for samples the tree has no node for (the
    interpreter's start, before the hook is installed)."""
    out = tmp_path / "out"
    profile(["/usr/bin/python3", HOT, "28", "100000"], out, env={"PROF_SAMPLE_HZ": "499"})
    text = dump(out)
    samples = len(re.findall(r" SAMPLE stack=", text))
    with_node = len(re.findall(r" SAMPLE stack=\d+ ticks=\d+ py_node=[1-9]", text))
    read = len(re.findall(r" SAMPLE_PY ticks=", text))
    assert with_node >= 0.8 * samples and read <= samples - with_node, (samples, with_node, read)
    rows = folded(out, tmp_path)
    fib = sum(w for s, w in rows if any(name_of(f) == "fib" for f in s))
    assert fib >= 0.5 * sum(w for _, w in rows)


def test_unknown_interpreter_says_so_once(tmp_path):
    py37 = pyenv_python(7)
    if not py37:
        pytest.skip("no CPython 3.7 installed")
    out = tmp_path / "out"
    proc = profile([py37, HOT, "25", "10000"], out, env=NO_HOOK)
    assert re.match(r"^\d+\.\d+\n$", proc.stdout)
    lines = [l for l in proc.stderr.splitlines() if "Python frames are not read" in l]
    assert lines == ["profrun: sampling: Python frames are not read in this process: CPython "
                     "3.7 is not one this build knows (3.8-3.13)"], proc.stderr
    text = dump(out)
    assert " SAMPLE stack=" in text and " SAMPLE_PY " not in text and " PY_CODE " not in text


STRESS = os.path.join(ROOT, "test", "workloads", "py_sample_stress.py")


def test_frames_pushed_and_popped_under_the_signal(python, tmp_path):
    """Short-lived threads, generators, coroutines, exceptions through recursion and code
    objects freed and made again, sampled at 1000 Hz: the program runs as without the
    profiler, and the samples name its functions. With PROF_SAN_ASAN_PRELOAD (`make
    san-stress` sets it: the ASan runtime, then an ASan+UBSan libprof.so) the same runs
    under the sanitizers, which must report nothing."""
    out = tmp_path / "out"
    env = {"PROF_PYTHON": "0", "PROF_SAMPLE_HZ": "1000"}
    asan = os.environ.get("PROF_SAN_ASAN_PRELOAD")
    if asan:
        env = dict(os.environ, PROF_OUTPUT_DIR=str(out), LD_PRELOAD=asan,
                   ASAN_OPTIONS="detect_leaks=0", **env)
        proc = subprocess.run([python, STRESS, "1"], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert not re.search(r"ERROR: AddressSanitizer|runtime error:", proc.stderr), \
            proc.stderr[-2000:]
    else:
        proc = profile([python, STRESS, "1"], out, env=env, timeout=300)
    assert proc.stdout == "py_sample_stress done 1\n", proc.stdout + proc.stderr[-2000:]
    rows = folded(out, tmp_path)
    named = {name_of(f) for s, _ in rows for f in s if is_python(f)}
    assert {"churn", "dive"} <= named, named


def test_a_sample_makes_few_system_calls(tmp_path):
    """A sample's cost is its system calls where one costs a microsecond (2026-12-01's VM):
    libunwind's own signal-mask calls are skipped inside the handler (about 60 per sample
    before), and the Python walk reads each page once per sample (about 22 reads before on
    py_hot.py's fib, about 30 frames deep). Counted by strace over the whole process, so
    the start-up's own calls are in the ratios too."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is not installed")
    out, log = tmp_path / "out", tmp_path / "strace.txt"
    env = dict(os.environ, LD_PRELOAD=build_path("lib", "libprof.so"), PROF_OUTPUT_DIR=str(out),
               PROF_TORCH="0", PROF_QUIET="1", **NO_HOOK)
    subprocess.run([strace, "-f", "-c", "-o", str(log), "/usr/bin/python3", HOT, "28"], env=env,
                   check=True, capture_output=True, timeout=300)
    calls = {}
    for line in log.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[3].isdigit():
            calls[fields[-1]] = int(fields[3])
    signals = calls.get("rt_sigreturn", 0)
    assert signals >= 20, calls  # the handler's returns: one per signal taken
    assert calls.get("rt_sigprocmask", 0) < 5 * signals, calls
    assert calls.get("process_vm_readv", 0) < 15 * signals, calls
    rep = report(out, "--samples")
    assert "fib  " in rep.stdout, rep.stdout[:2000]
