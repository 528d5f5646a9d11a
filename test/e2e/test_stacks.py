"""Call stacks (PROF_STACKS=1) and sampling (PROF_SAMPLE_HZ): captured with libunwind in
the process, symbolized offline with libdw by profreport.

- stack_chains (C, against the CUDA runtime double) makes synchronizing calls and
  allocations along known call chains, one through an inlined function and one through a
  stripped library: --stacks NAME names each function with its source line.
- burn_threads burns 0.7 s and 0.3 s of CPU in two threads: the samples split 70/30.
- unload_stale samples a frame pointer into a library dlclose has just unmapped.
- py_mixed_burn.py calls C through ctypes: a sample's path holds the C frames, then the
  Python functions, in call order, on every interpreter.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import (HAVE_CUDA, PROFREPORT, build_path, needs_cuda, profile, report,
                      trace_files, ROOT)

FIXTURES = build_path("test", "fixtures", "stacks")
SOURCE = os.path.join(ROOT, "test", "fixtures", "stacks", "stack_chains.c")
DOUBLES = build_path("test", "doubles")
MIXED = os.path.join(ROOT, "test", "workloads", "py_mixed_burn.py")

PYENV = "/root/.pyenv/versions"
INTERPRETERS = [(v, os.path.join(PYENV, full, "bin", "python3"))
                for v, full in (("3.8", "3.8.18"), ("3.9", "3.9.18"), ("3.10", "3.10.13"),
                                ("3.11", "3.11.7"), ("3.12", "3.12.1"), ("3.13", "3.13.0"))]
INTERPRETERS.append(("debian3.11", "/usr/bin/python3"))


def marked_line(tag):
    """The line of stack_chains.c that carries the comment LINE tag."""
    with open(SOURCE) as f:
        for number, line in enumerate(f, 1):
            if "/* LINE %s */" % tag in line:
                return number
    raise AssertionError("no LINE %s in %s" % (tag, SOURCE))


def double_env(extra=None):
    env = {"LD_LIBRARY_PATH": DOUBLES + ":" + os.environ.get("LD_LIBRARY_PATH", "")}
    env.update(extra or {})
    return env


def paths(text):
    """The call paths of a --stacks/--samples report: [(count, [frame, ...])]."""
    result = []
    for block in re.split(r"\n(?=#\d+ )", text):
        m = re.match(r"#\d+\s+(\d+) (?:calls|samples)", block)
        if m:
            frames = [l.strip() for l in block.splitlines()[1:] if l.startswith("    ")]
            result.append((int(m.group(1)), frames))
    return result


def function_of(frame):
    return frame.split("  ")[0].replace(" (inlined)", "")


@pytest.fixture(scope="module")
def chains_run(tmp_path_factory):
    if not HAVE_CUDA:
        pytest.skip("no CUDA toolkit at CUDA_HOME")
    out = tmp_path_factory.mktemp("stacks")
    proc = profile([os.path.join(FIXTURES, "stack_chains")], out,
                   env=double_env({"PROF_STACKS": "1"}))
    return out, proc


@needs_cuda
def test_program_output_unchanged(chains_run):
    _, proc = chains_run
    assert proc.stdout == "stack_chains done\n"


@needs_cuda
def test_sync_calls_named_with_source_lines(chains_run):
    out, _ = chains_run
    rep = report(out, "--stacks", "cudaDeviceSynchronize").stdout
    assert "cudaDeviceSynchronize: 8 calls" in rep
    found = {tuple(function_of(f) for f in frames[:3]): (count, frames)
             for count, frames in paths(rep)}
    count, frames = found[("inner_sync", "outer_sync", "main")]
    assert count == 3
    assert frames[0].endswith("stack_chains.c:%d" % marked_line("inner_sync"))
    assert frames[1].endswith("stack_chains.c:%d" % marked_line("outer_sync"))


@needs_cuda
def test_stripped_library_frames_by_path_and_offset(chains_run):
    out, _ = chains_run
    rep = report(out, "--stacks", "cudaDeviceSynchronize").stdout
    stripped = [(c, f) for c, f in paths(rep) if "libstack_nodebug.so+0x" in f[0]]
    assert len(stripped) == 1, rep
    count, frames = stripped[0]
    assert count == 5
    # its static function has no name left; the exported one keeps its dynamic symbol
    assert re.match(r".*/libstack_nodebug\.so\+0x[0-9a-f]+$", frames[0])
    assert frames[1] == "nodebug_sync  [libstack_nodebug.so]"
    assert function_of(frames[2]) == "main"


@needs_cuda
def test_inlined_function_and_its_caller(chains_run):
    out, _ = chains_run
    rep = report(out, "--stacks", "cudaStreamSynchronize").stdout
    (count, frames), = paths(rep)
    assert count == 2
    assert frames[0] == "inlined_step (inlined)  test/fixtures/stacks/stack_chains.c:%d" % \
        marked_line("inlined_step")
    assert function_of(frames[1]) == "outer_sync"
    assert function_of(frames[2]) == "main"


@needs_cuda
def test_allocations_and_folded_export(chains_run, tmp_path):
    out, _ = chains_run
    folded = tmp_path / "malloc.folded"
    rep = report(out, "--stacks", "cudaMalloc", "--stacks-folded", str(folded)).stdout
    assert rep == "", "a folded file alone prints no report"
    lines = folded.read_text().splitlines()
    assert len(lines) == 1
    stack, weight = lines[0].rsplit(" ", 1)
    frames = stack.split(";")
    assert frames[-1] == "alloc_site  test/fixtures/stacks/stack_chains.c:%d" % \
        marked_line("alloc_site")
    assert function_of(frames[-2]) == "main"
    assert int(weight) >= 0
    (count, _), = paths(report(out, "--stacks", "cudaMalloc").stdout)
    assert count == 4


@needs_cuda
def test_stacks_are_off_by_default(tmp_path):
    profile([os.path.join(FIXTURES, "stack_chains")], tmp_path, env=double_env())
    dump = subprocess.run([build_path("bin", "profreport"), "dump", trace_files(tmp_path)[0]],
                          capture_output=True, text=True, check=True).stdout
    assert " STACK " not in dump and " STACK_REF " not in dump and " MAP " not in dump
    proc = report(tmp_path, "--stacks", "cudaDeviceSynchronize", check=False)
    assert proc.returncode == 1
    assert "no call stacks (run with PROF_STACKS=1)" in proc.stderr


@needs_cuda
def test_rebuilt_or_deleted_objects_are_not_trusted(tmp_path):
    """Frames of an object that changed since the run are never given wrong names."""
    work = tmp_path / "bin"
    work.mkdir()
    for name in ("stack_chains", "libstack_nodebug.so"):
        shutil.copy2(os.path.join(FIXTURES, name), work / name)
    out = tmp_path / "out"
    profile([str(work / "stack_chains")], out, env=double_env({"PROF_STACKS": "1"}))
    # "rebuilt": another ELF file where the program was
    shutil.copy2(os.path.join(FIXTURES, "burn_threads"), work / "stack_chains")
    proc = report(out, "--stacks", "cudaDeviceSynchronize")
    assert "stack_chains: rebuilt since the run (build id differs)" in proc.stderr
    assert "inner_sync" not in proc.stdout and "burn" not in proc.stdout
    assert re.search(r"/stack_chains\+0x[0-9a-f]+", proc.stdout)
    os.unlink(work / "stack_chains")
    proc = report(out, "--stacks", "cudaDeviceSynchronize")
    assert "stack_chains: not found on this machine" in proc.stderr
    assert "inner_sync" not in proc.stdout


def folded_weights(path):
    rows = []
    with open(path) as f:
        for line in f:
            stack, weight = line.rstrip("\n").rsplit(" ", 1)
            rows.append((stack.split(";"), int(weight)))
    return rows


def test_samples_split_as_the_cpu_time(tmp_path):
    out = tmp_path / "out"
    proc = profile([os.path.join(FIXTURES, "burn_threads"), "1"], out,
                   env={"PROF_SAMPLE_HZ": "199"})
    assert proc.stdout == "burn_threads done\n"
    folded = tmp_path / "samples.folded"
    report(out, "--samples", "--stacks-folded", str(folded))
    rows = folded_weights(folded)
    total = sum(w for _, w in rows)
    heavy = sum(w for s, w in rows if any(f.startswith("burn_heavy") for f in s))
    light = sum(w for s, w in rows if any(f.startswith("burn_light") for f in s))
    # 1 s of CPU at 199 Hz, counted in periods (a sample stands for its timer's overruns)
    assert 170 <= total <= 230, rows
    assert heavy + light >= total * 0.95
    assert abs(heavy / total - 0.70) <= 0.05, (heavy, light, total)


@pytest.fixture(params=INTERPRETERS, ids=[name for name, _ in INTERPRETERS])
def python(request):
    _, path = request.param
    if not os.access(path, os.X_OK):
        pytest.skip("interpreter %s is not installed" % path)
    return path


def test_mixed_python_and_native_frames(python, tmp_path):
    out = tmp_path / "out"
    lib = os.path.join(FIXTURES, "libburn_c.so")
    proc = profile([python, MIXED, lib, "0.5", "0.2"], out, env={"PROF_SAMPLE_HZ": "199"})
    assert proc.stdout == "py_mixed_burn done\n"
    folded = tmp_path / "samples.folded"
    report(out, "--samples", "--stacks-folded", str(folded))
    rows = folded_weights(folded)
    total = sum(w for _, w in rows)
    in_c = [(s, w) for s, w in rows if any(f.startswith("burn_c_inner") for f in s)]
    assert sum(w for _, w in in_c) >= 0.5 * total, rows[:5]
    names = [f.split("  ")[0] for f in max(in_c, key=lambda r: r[1])[0]]  # root first
    order = [names.index(n) for n in ("py_outer", "py_inner", "burn_c", "burn_c_inner")]
    assert order == sorted(order), names
    # the spin loop's samples hold its Python function too
    assert any(any(f.startswith("py_spin") for f in s) for s, _ in rows)


def test_forked_child_is_sampled(tmp_path):
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                                      "py_fork_burn.py")],
                   out, env={"PROF_SAMPLE_HZ": "199"})
    assert proc.stdout == "py_fork_burn done 0\n"
    files = trace_files(out)
    assert len(files) == 2
    counts = []
    for f in files:
        folded = tmp_path / (os.path.basename(f) + ".folded")
        rep = report(f, "--samples", "--stacks-folded", str(folded), check=False)
        rows = folded_weights(folded) if rep.returncode == 0 else []
        counts.append(sum(w for s, w in rows if any(x.startswith("child_burn") for x in s)))
    # the child's 0.3 s in child_burn at 199 Hz; none of it in the parent's file
    assert sorted(counts)[0] == 0 and 40 <= sorted(counts)[1] <= 80, counts


def test_sampling_under_malloc_dlopen_fork_threads_and_exit(tmp_path):
    out = tmp_path / "out"
    lib = os.path.join(FIXTURES, "libburn_c.so")
    proc = profile([os.path.join(FIXTURES, "sample_stress"), lib, "2"], out,
                   env={"PROF_SAMPLE_HZ": "1000"}, timeout=60)
    assert "bad children 0" in proc.stdout, proc.stdout + proc.stderr
    assert "all malloc" in proc.stdout or "not all" in proc.stdout
    rep = report(out, "--samples", "--all-runs")
    total = int(re.match(r"CPU samples: (\d+)", rep.stdout).group(1))
    assert total > 100, rep.stdout[:200]


def test_unwinder_after_a_slow_dlclose(tmp_path):
    """unload_stale.c: the unwinder's table remade while a dlclose ran the object's
    destructor, then a frame pointer into the object's code once it was unmapped. Before
    the fix the program died of SIGSEGV in the sample handler on every run (under
    ThreadSanitizer, whose handlers run after the interceptor returns, sample_stress did
    in one round of ten)."""
    out = tmp_path / "out"
    lib = os.path.join(FIXTURES, "libslow_fini.so")
    proc = profile([os.path.join(FIXTURES, "unload_stale"), lib], out,
                   env={"PROF_SAMPLE_HZ": "1000", "PROF_FLUSH_MS": "1000",
                        "PROF_RING_WAKE": "0"}, check=False, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.startswith("unload_stale: unloaded, "), proc.stdout
    folded = tmp_path / "samples.folded"
    report(out, "--samples", "--stacks-folded", str(folded))
    # 0.4 s of CPU at 1000 Hz: the unwinds that followed the frame pointer were taken
    spun = sum(w for s, w in folded_weights(folded) if s[-1].startswith("spin_with_frame"))
    assert spun >= 100, folded.read_text()[:2000]


def test_samples_by_training_action_and_json(tmp_path):
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                                      "torch_actions_burn.py")],
                   out, env={"PROF_SAMPLE_HZ": "199", "PROF_TORCH": "0"}, timeout=300)
    assert proc.stdout == "torch_actions_burn done\n"
    import json
    rep = json.loads(report(out, "--samples", "--format", "json", "--limit", "3").stdout)
    assert rep["kind"] == "samples" and len(rep["paths"]) == 3
    actions = {a["action"]: a["samples"] for a in rep["actions"]}
    assert sum(actions.values()) == rep["total_count"]
    # the loop's CPU time is in the model's forward and in backward
    assert actions.get("forward", 0) > 0.2 * rep["total_count"], actions
    assert actions.get("backward", 0) > 0.2 * rep["total_count"], actions
    text = report(out, "--samples").stdout
    assert "By training action" in text and re.search(r"forward\s+\d+ samples", text)


def test_memory_peak_by_call_path(tmp_path):
    """--stacks memory: the large tensor blocks live at the CPU memory peak, grouped by the
    call path (native and Python frames) that allocated them: keep_big's 4 x 16 MiB and
    keep_small's 8 x 1 MiB; the 32 MiB scratch block freed before the peak is not there."""
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                                      "torch_mem_paths.py")],
                   out, env={"PROF_STACKS": "1"}, timeout=300)
    assert proc.stdout == "torch_mem_paths done 12\n"
    text = report(out, "--stacks", "memory").stdout
    assert "12 blocks, 72.00 MiB, 2 distinct call paths" in text, text[:400]
    by_func = {}
    blocks = []
    for block in re.split(r"\n(?=#\d+ )", text):
        m = re.match(r"#\d+\s+[\d.]+ \w+ \([\d.]+%\), (\d+) blocks", block)
        if m:
            blocks.append((int(m.group(1)), [l.strip() for l in block.splitlines()[1:]
                                             if l.startswith("    ")]))
    assert len(blocks) == 2, text[:600]
    for count, frames in blocks:
        py = [f.split("  ")[0] for f in frames if f.endswith("[python]")]
        assert frames[-1] == "[CPU memory peak]"
        by_func[py[1]] = count  # py[0] is torch.empty itself
    assert by_func == {"keep_big": 4, "keep_small": 8}, by_func
    assert "64.00 MiB (88.9%), 4 blocks" in text
    # the spelling, the name last or first: the same report
    assert report(out, "--memory", "--stacks").stdout == text
    assert report(out, "--stacks", "--memory").stdout == text
    bare = subprocess.run([PROFREPORT, str(out), "--stacks"], capture_output=True, text=True)
    assert bare.returncode == 2 and "goes with --memory" in bare.stderr, bare.stderr
    tables = report(out, "--memory").stdout  # the memory tables alone
    assert tables.startswith("PyTorch memory (tensor bytes live"), tables[:300]
    assert re.search(r"CPU: peak 72\.00 Mb at \+[\d.]+ s in aten::empty, from \S+"
                     r"torch_mem_paths\.py:\d+\(keep_small\)", tables), tables[:300]
    assert "CUDA runtime memory (cudaMalloc" in tables and "Python functions" not in tables
    folded = tmp_path / "mem.folded"
    report(out, "--stacks", "memory", "--stacks-folded", str(folded))
    weights = {next(f for f in s if f.startswith("keep_")).split("  ")[0]: w
               for s, w in folded_weights(folded)}
    assert weights == {"keep_big": 64 << 20, "keep_small": 8 << 20}, weights


@needs_cuda
def test_api_stacks_hold_the_python_calls(tmp_path):
    """A CUDA call made from Python (through a C library, as an extension makes it): its
    stack holds the C function, then the Python functions around it, in call order."""
    lib = build_path("test", "fixtures", "libcuda_calls.so")
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                                      "py_cuda_calls.py"), lib],
                   out, env=double_env({"PROF_STACKS": "1"}))
    assert proc.stdout == "failed 0 0\n"
    (count, frames), = paths(report(out, "--stacks", "cudaMalloc").stdout)
    assert count == 3
    names = [function_of(f) for f in frames]
    order = [names.index(n) for n in ("fixture_allocate", "allocate", "main", "<module>")]
    assert order == sorted(order), names
    assert frames[names.index("allocate")].endswith("[python]")


@needs_cuda
def test_sysroot_finds_objects_moved_from_their_paths(tmp_path):
    """A report made where the job's files sit under another root (--sysroot): the frames
    are named from the copies; without it they are path+offset."""
    work = tmp_path / "job"
    work.mkdir()
    for name in ("stack_chains", "libstack_nodebug.so"):
        shutil.copy2(os.path.join(FIXTURES, name), work / name)
    out = tmp_path / "out"
    profile([str(work / "stack_chains")], out, env=double_env({"PROF_STACKS": "1"}))
    root = tmp_path / "root"
    moved = root / str(work).lstrip("/")
    moved.parent.mkdir(parents=True)
    shutil.move(str(work), str(moved))
    plain = report(out, "--stacks", "cudaDeviceSynchronize").stdout
    assert "inner_sync" not in plain
    rooted = report(out, "--stacks", "cudaDeviceSynchronize", "--sysroot", str(root)).stdout
    assert "inner_sync  test/fixtures/stacks/stack_chains.c:%d" % marked_line("inner_sync") \
        in rooted


def test_samples_by_torch_op_and_nvtx_range(tmp_path):
    """Each sample carries its thread's innermost PyTorch op and pushed NVTX range:
    torch_ops_nvtx_burn.py spends most of its CPU time in a 512x512 matmul (aten::mm)
    inside the NVTX range heavy_range; --samples tables (text and JSON) say so."""
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("no torch for /usr/bin/python3")
    out = tmp_path / "out"
    proc = profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads",
                                                      "torch_ops_nvtx_burn.py"), "30"],
                   out, env={"PROF_SAMPLE_HZ": "199"}, timeout=300)
    assert proc.stdout == "torch_ops_nvtx_burn done\n"
    import json
    rep = json.loads(report(out, "--samples", "--format", "json").stdout)
    total = rep["total_count"]
    ops = {o["op"]: o["samples"] for o in rep["ops"]}
    ranges = {r["range"]: r["samples"] for r in rep["nvtx_ranges"]}
    assert sum(ops.values()) == total and sum(ranges.values()) == total
    named_ops = {k: v for k, v in ops.items() if k}
    # 30 matmuls of 512^3 on one thread: most of the run's CPU time, the rest is the start
    assert max(named_ops, key=named_ops.get) == "aten::mm", ops
    assert ops["aten::mm"] > 0.3 * total and ops["aten::mm"] > 5 * ops.get("aten::mul", 0), ops
    text = report(out, "--samples").stdout
    # the text table lists the op with the JSON's count (first among the named ops; the
    # samples outside any op, mostly `import torch` on a loaded machine, may come first)
    section = text.split("By PyTorch op", 1)[1].split("\n\n", 1)[0]
    rows = [l.split() for l in section.splitlines()[1:]]
    named = [r for r in rows if r[0] != "(none)"]
    assert named and named[0][:2] == ["aten::mm", str(ops["aten::mm"])], section
    if not HAVE_CUDA:
        return  # the NVTX layer is built with the CUDA toolkit's headers
    named_ranges = {k: v for k, v in ranges.items() if k}
    assert list(named_ranges) == ["heavy_range"], ranges
    # the matmul is inside the range: the range holds at least the op's samples but the
    # elementwise op after it
    assert ranges["heavy_range"] >= 0.9 * ops["aten::mm"], (ranges, ops)
    section = text.split("By NVTX range", 1)[1].split("\n\n", 1)[0]
    rows = [l.split() for l in section.splitlines()[1:]]
    named = [r for r in rows if r[0] != "(none)"]
    assert named and named[0][:2] == ["heavy_range", str(ranges["heavy_range"])], section
