"""profreport's Python tables on synthetic traces (test/fixtures/traces/py_traces.h).

Times in the fixtures are in milliseconds (PY_U); the numbers below follow from the tree
that py_traces.h draws: main -> fib -> fib -> fib, len and Model.forward -> len in thread
6000, a root fib and len in thread 6001.
"""
import glob
import json
import os
import re
import subprocess

import pytest

from conftest import PROFREPORT, profile, report, report_json, TRACES, make_traces

MS = 1000000


@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def t(*parts):
    return os.path.join(TRACES, *parts)


def run(*args):
    return subprocess.run([PROFREPORT] + list(args), capture_output=True, text=True, timeout=60)


def table_rows(out):
    """{function label: [column cells]} of the Python table(s) in a text report."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^\s+(\d+(?:/\d+)?)\s+((?:\d+\.\d{3}\s+){4})(?:(\S+ \S+)\s+(\d+)\s+)?(\S.*)$",
                     line)
        if m:
            rows[m.group(5)] = [m.group(1)] + m.group(2).split() + \
                ([m.group(3), m.group(4)] if m.group(3) else [])
    return rows


def test_python_table_columns():
    proc = run("--python", t("py"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Python functions (ordered by: cumulative time)" in out
    assert "17 function calls (11 primitive calls) in 1.510 seconds" in out
    header = [l for l in out.splitlines() if "filename:lineno(function)" in l][0]
    assert header.split() == ["ncalls", "tottime", "percall", "cumtime", "percall", "API",
                              "time", "API", "calls", "filename:lineno(function)"]
    rows = table_rows(out)
    fib = rows["/w/train.py:10(fib)"]
    assert fib == ["8/2", "1.300", "0.163", "1.300", "0.650", "0 ns", "0"]
    assert rows["/w/train.py:1(main)"] == ["1", "0.100", "0.100", "1.000", "1.000", "25.00 ms",
                                           "3"]
    assert rows["/w/train.py:20(Model.forward)"][:5] == ["2", "0.040", "0.020", "0.070", "0.035"]
    assert rows["{built-in method builtins.len}"][:5] == ["6", "0.070", "0.012", "0.070", "0.012"]
    labels = list(rows)
    assert labels[0] == "/w/train.py:10(fib)"  # cumtime 1.300 first
    # The CUDA tables of a job without CUDA calls are not printed with --python.
    assert "API summary" not in out


def test_python_sort_and_limit():
    out = run("--python", "--sort", "tottime", "--limit", "2", t("py")).stdout
    rows = list(table_rows(out))
    assert rows == ["/w/train.py:10(fib)", "/w/train.py:1(main)"]
    assert "(2 more not shown; --limit)" in out
    assert "internal time" in out
    for key, first in [("ncalls", "/w/train.py:10(fib)"),  # 8 calls, len 6
                       ("calls", "/w/train.py:10(fib)"),
                       ("cumulative", "/w/train.py:10(fib)"),
                       ("line", "{built-in method builtins.len}"),
                       ("name", "{built-in method builtins.len}"),  # '<' before 'f'
                       ("percall", "/w/train.py:10(fib)"),  # 1.300 / 8
                       ("time", "/w/train.py:10(fib)")]:
        out = run("--python", "--sort", key, t("py")).stdout
        assert list(table_rows(out))[0] == first, key


def test_python_per_thread_and_process():
    out = run("--python", "--per-thread", t("pymulti")).stdout
    assert "pid 6000 thread 6000 (MainThread)" in out
    assert "pid 6000 thread 6001 (worker)" in out
    assert "pid 6100 thread 6100" in out
    assert "15 function calls (9 primitive calls) in 1.000 seconds" in out
    assert "2 function calls in 0.510 seconds" in out
    out = run("--python", "--per-process", t("pymulti")).stdout
    assert "pid 6000 (python3 train.py)" in out and "pid 6100 (python3 train.py)" in out
    assert "17 function calls (11 primitive calls) in 1.510 seconds" in out
    merged = run("--python", t("pymulti")).stdout
    assert "22 function calls (16 primitive calls) in 1.610 seconds" in merged
    assert table_rows(merged)["/w/train.py:10(fib)"][:5] == ["9/3", "1.360", "0.151", "1.400",
                                                            "0.467"]


def test_default_report_has_short_python_section():
    out = report(t("py")).stdout
    assert "Python functions (top 15 by cumtime" in out
    assert "/w/train.py:20(Model.forward)" in out
    # CUDA sections that would only say "(no ...)" are left out for a Python job.
    assert "(no CUDA API calls)" not in out and "(no kernel launches)" not in out
    assert "(no CUDA runtime allocations)" not in out
    assert out.index("Python functions") < out.index("Processes")
    # A CUDA-only trace keeps every section and has no Python one.
    out = report(t("run")).stdout
    assert "Python functions" not in out and "CUDA runtime API summary" in out


def test_gaps_in_text_and_json():
    out = run("--python", t("pygap")).stdout
    assert ("Python profiling was replaced by another profiler in thread 6200 (MainThread) "
            "from +0.500 s for 1.000 s (calls begun and ended inside it are not counted)") in out
    assert ("Python profiling was replaced by another profiler in thread 6201 (worker) "
            "from +2.000 s to the end (its calls are not counted)") in out
    assert "Python profiling was replaced" in report(t("pygap")).stdout
    rep = report_json(t("pygap"))
    gaps = rep["processes"][0]["python_gaps"]
    assert gaps == [
        {"tid": 6200, "reason": "other_profiler", "start_ns": 1000 + 500 * MS,
         "end_ns": 1000 + 1500 * MS},
        {"tid": 6201, "reason": "other_profiler", "start_ns": 1000 + 2000 * MS, "end_ns": None},
    ]


def test_json_fields():
    rep = report_json(t("py"))
    rows = {r["name"]: r for r in rep["python"]}
    assert rows["fib"] == {"file": "/w/train.py", "line": 10, "name": "fib", "qualname": "fib",
                           "module": "__main__", "kind": "python", "ncalls": 8,
                           "primitive_calls": 2, "tottime_ns": 1300 * MS, "cumtime_ns": 1300 * MS,
                           "api_calls": 0, "api_ns": 0}
    assert rows["forward"]["qualname"] == "Model.forward"
    assert (rows["forward"]["api_calls"], rows["forward"]["api_ns"]) == (3, 25 * MS)
    assert (rows["main"]["api_calls"], rows["main"]["api_ns"]) == (3, 25 * MS)
    length = rows["<built-in method builtins.len>"]
    assert (length["file"], length["line"], length["kind"]) == ("~", 0, "c")
    p = rep["processes"][0]
    assert p["python_threads"] == [{"tid": 6000, "functions": 4, "calls": 15},
                                   {"tid": 6001, "functions": 2, "calls": 2}]
    assert p["python_gaps"] == [] and p["python_spans"] == 2
    assert [r["name"] for r in report_json(t("py"), "--sort", "tottime", "--limit", "1")[
        "python"]] == ["fib"]
    cuda = report_json(t("run"))
    assert cuda["python"] == [] and cuda["processes"][0]["python_threads"] == []


def test_csv_section():
    out = run("--format", "csv", t("py")).stdout
    block = [b for b in out.split("\n\n") if b.startswith("# python")][0].splitlines()
    assert block[1] == ("file,line,name,qualname,module,kind,ncalls,primitive_calls,tottime_ns,"
                        "cumtime_ns,api_calls,api_ns")
    assert "/w/train.py,10,fib,fib,__main__,python,8,2,1300000000,1300000000,0,0" in block


def pythons():
    found = [("/usr/bin/python3", "/usr/bin/python3")]
    for v in ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]:
        hits = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python3" % v))
        found.append((v, hits[-1] if hits else None))
    return found


LOAD = r"""
import json, pstats, sys
s = pstats.Stats(sys.argv[1])
out = {"total": [s.total_calls, s.prim_calls, s.total_tt], "stats": []}
for k, (cc, nc, tt, ct, callers) in s.stats.items():
    out["stats"].append([list(k), cc, nc, tt, ct,
                         sorted([list(c), list(v)] for c, v in callers.items())])
s.sort_stats("cumulative").print_stats()
s.print_callers()
print("JSON" + json.dumps(out))
"""


@pytest.mark.parametrize("name,python", pythons(), ids=[n for n, _ in pythons()])
def test_pstats_loads_in_every_python(tmp_path, name, python):
    if python is None or not os.path.exists(python):
        pytest.skip("no Python %s interpreter under /root/.pyenv/versions" % name)
    prof = tmp_path / "out.prof"
    proc = run("--pstats", str(prof), t("pymulti"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # writing a file alone prints no report
    got = subprocess.run([python, "-c", LOAD, str(prof)], capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0, got.stderr
    assert "22 function calls (16 primitive calls) in 1.610 seconds" in got.stdout
    assert "{built-in method builtins.len}" in got.stdout
    data = json.loads(got.stdout.split("JSON", 1)[1])
    assert data["total"][:2] == [22, 16]
    stats = {tuple(k): (cc, nc, tt, ct, callers) for k, cc, nc, tt, ct, callers in data["stats"]}
    # cProfile's keys: (file, line, co_name), and ('~', 0, name) for builtins.
    assert set(stats) == {("/w/train.py", 1, "main"), ("/w/train.py", 10, "fib"),
                          ("/w/train.py", 20, "forward"),
                          ("~", 0, "<built-in method builtins.len>")}
    cc, nc, tt, ct, callers = stats[("/w/train.py", 10, "fib")]
    assert (cc, nc) == (3, 9)
    assert tt == pytest.approx(1.36) and ct == pytest.approx(1.4)
    callers = {tuple(k): v for k, v in callers}
    # cProfile's callers values are (nc, cc, tt, ct)
    assert callers[("/w/train.py", 10, "fib")] == pytest.approx([6, 2, 0.6, 0.6])
    assert callers[("/w/train.py", 1, "main")] == pytest.approx([1, 1, 0.2, 0.8])
    assert stats[("/w/train.py", 1, "main")][4] == []


def test_pstats_big_counts_use_marshal_long(tmp_path):
    prof = tmp_path / "gap.prof"
    assert run("--pstats", str(prof), t("pygap")).returncode == 0
    got = subprocess.run(["/usr/bin/python3", "-c",
                          "import pstats,sys; s=pstats.Stats(sys.argv[1]); print(s.total_calls)",
                          str(prof)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "3000000000"


def test_pstats_errors(tmp_path):
    proc = run("--pstats", str(tmp_path / "no" / "such" / "dir.prof"), t("py"))
    assert proc.returncode == 1
    assert "cannot create" in proc.stderr and "dir.prof" in proc.stderr
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(str(ro), os.W_OK):
            pass  # root writes anyway: the missing directory above covers the error path
        else:
            proc = run("--pstats", str(ro / "x.prof"), t("py"))
            assert proc.returncode == 1 and "cannot write" in proc.stderr
    finally:
        ro.chmod(0o700)
    assert os.listdir(str(tmp_path / "ro")) == []
    # A CUDA-only trace has no Python stats: nothing is written.
    target = tmp_path / "none.prof"
    proc = run("--pstats", str(target), t("run"))
    assert proc.returncode == 1 and "no Python calls" in proc.stderr
    assert not target.exists()
    # A file that exists is replaced whole, and no temporary is left beside it.
    target = tmp_path / "keep.prof"
    target.write_text("old")
    assert run("--pstats", str(target), t("py")).returncode == 0
    assert target.read_bytes()[:1] == b"{"
    assert sorted(os.listdir(str(tmp_path))) == ["keep.prof", "ro"]


def test_folded(tmp_path):
    folded = tmp_path / "out.folded"
    proc = run("--folded", str(folded), t("py"))
    assert proc.returncode == 0, proc.stderr
    lines = folded.read_text().splitlines()
    pre = "python3 pid 6000;MainThread 6000;"
    main = "main (/w/train.py:1)"
    fib = "fib (/w/train.py:10)"
    assert lines == [
        pre + main + " 100000",
        pre + main + ";" + fib + " 200000",
        pre + main + ";" + fib + ";" + fib + " 300000",
        pre + main + ";" + fib + ";" + fib + ";" + fib + " 300000",
        pre + main + ";<built-in method builtins.len> 30000",
        pre + main + ";Model.forward (/w/train.py:20) 40000",
        pre + main + ";Model.forward (/w/train.py:20);<built-in method builtins.len> 30000",
        "python3 pid 6000;worker 6001;" + fib + " 500000",
        "python3 pid 6000;worker 6001;<built-in method builtins.len> 10000",
    ]
    # Every line is "stack count", as flamegraph.pl splits it.
    for line in lines:
        assert re.match(r"^.+ \d+$", line)
    # Self times add up to the total time.
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == 1510 * 1000


def test_folded_without_steps_is_the_whole_process(tmp_path):
    """--phase with --folded on a run without training steps: the whole process, said."""
    whole, steps = tmp_path / "a.folded", tmp_path / "s.folded"
    assert run("--folded", str(whole), t("py")).returncode == 0
    proc = run("--folded", str(steps), "--phase", "steps", t("py"))
    assert proc.returncode == 0, proc.stderr
    assert "the run has no training steps; the flame graphs and folded stacks cover the " \
        "whole process" in proc.stderr
    assert steps.read_text() == whole.read_text()


def test_folded_and_flame_graph_name_the_rank(tmp_path):
    """A process of a rank is "rank R (pid P)", as the text report names it."""
    folded, svg = tmp_path / "r.folded", tmp_path / "r.svg"
    proc = run("--folded", str(folded), "--flamegraph", str(svg), t("findings", "clean"))
    assert proc.returncode == 0, proc.stderr
    lines = folded.read_text().splitlines()
    assert {l.split(";", 1)[0] for l in lines} == {"rank 0 (pid 8100)", "rank 1 (pid 8101)"}
    frames = set(re.findall(r'data-n="([^"]*)"', svg.read_text()))
    assert {"rank 0 (pid 8100)", "rank 1 (pid 8101)"} <= frames


def deep_lines(tmp_path, *args):
    folded = tmp_path / "deep.folded"
    proc = run("--folded", str(folded), *args, t("pydeep"))
    assert proc.returncode == 0, proc.stderr
    return folded.read_text().splitlines()


DEEP_PRE = "python3 pid 6300;MainThread 6300;"


def deep_frames(first, last):
    return ";".join("f (/w/deep.py:%d)" % i for i in range(first, last + 1))


def test_folded_deep_stacks_are_capped(tmp_path):
    # A 1000-deep chain of distinct calls, 1 us each: folded stacks repeat the whole path on
    # each line (1000 * 1001 / 2 frames). By default the frames deeper than 128 are folded
    # into the 128th as one "[872 frames folded]" frame with their time.
    lines = deep_lines(tmp_path)
    assert len(lines) == 129
    assert lines[0] == DEEP_PRE + deep_frames(1, 1) + " 1"
    assert lines[127] == DEEP_PRE + deep_frames(1, 128) + " 1"
    assert lines[128] == DEEP_PRE + deep_frames(1, 128) + ";[872 frames folded] 872"
    assert max(l.count(";") + 1 for l in lines) == 131
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == 1000  # no self time lost


def test_folded_depth_option(tmp_path):
    lines = deep_lines(tmp_path, "--folded-depth", "10")
    assert lines == [DEEP_PRE + deep_frames(1, i) + " 1" for i in range(1, 11)] + [
        DEEP_PRE + deep_frames(1, 10) + ";[990 frames folded] 990"]
    # 0: every frame, the format's quadratic size (nothing narrower than 0 % either).
    lines = deep_lines(tmp_path, "--folded-depth", "0", "--folded-min-share", "0")
    assert lines[999] == DEEP_PRE + deep_frames(1, 1000) + " 1"
    assert sum(l.count(";") - 1 for l in lines) == 1000 * 1001 // 2
    proc = run("--folded", str(tmp_path / "x"), "--folded-depth", "-1", t("pydeep"))
    assert proc.returncode == 2 and "--folded-depth wants a number, not '-1'" in proc.stderr


def test_folded_min_share(tmp_path):
    # 1 us of 1000 is 0.1 %: at 0.5 % the frames fold five by five, each printed frame
    # holding its own 1 us and the 4 us folded beneath it.
    lines = deep_lines(tmp_path, "--folded-depth", "0", "--folded-min-share", "0.5")
    assert len(lines) == 400
    assert lines[:2] == [DEEP_PRE + deep_frames(1, 1) + " 1",
                         DEEP_PRE + deep_frames(1, 1) + ";[4 frames folded] 4"]
    assert lines[-1] == DEEP_PRE + deep_frames(1, 996) + ";[4 frames folded] 4"
    assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == 1000


def test_python_and_file_together(tmp_path):
    proc = run("--python", "--pstats", str(tmp_path / "a.prof"), "--folded",
               str(tmp_path / "a.folded"), t("py"))
    assert proc.returncode == 0
    assert "17 function calls" in proc.stdout
    assert (tmp_path / "a.prof").exists() and (tmp_path / "a.folded").exists()


def test_usage_errors():
    for args in (["--python", "--sort", "total"], ["--sort", "speed"],
                 ["--per-thread"], ["--python", "--per-thread", "--per-process"],
                 ["--pstats"], ["--python", "--per-thread", "--format", "json"]):
        proc = run(*(args + [t("py")]))
        assert proc.returncode == 2, args
        assert proc.stderr.count("\n") == 2 and "--help" in proc.stderr, args
    proc = run("--pstats", t("py"))  # the trace dir taken as the file: no input left
    assert proc.returncode == 2
    assert "--pstats FILE" in run("--help").stdout
    # A sort key of the Python table alone is fine for the default report.
    assert run("--sort", "tottime", t("py")).returncode == 0
    assert "top 15 by tottime" in run("--sort", "tottime", t("py")).stdout


def test_dump_python_records():
    out = run("dump", t("py", "main.trace")).stdout
    assert re.search(r' PY_FUNC func=1 kind=python name=\d+:"main" qualname=\d+:"main" '
                     r'file=\d+:"/w/train.py" module=\d+:"__main__" line=1 size=32', out)
    assert " PY_NODE node=3 parent=2 func=2 size=16" in out
    assert re.search(r" PY_STATS node=7 calls=2 total=70000000 self=40000000 api_calls=2 "
                     r"api_ticks=20000000 size=48", out)
    assert " PY_SPAN node=1 " in out
    gap = run("dump", t("pygap", "gap.trace")).stdout
    assert " PY_GAP reason=1 (other_profiler) " in gap


def test_incomplete_counts_are_said_beside_the_table():
    """A trace whose Python layer could not count every call (its depth limit) says so in
    the Python table itself, not only among the profiler's notes."""
    out = report(t("pydeep"), "--python", "--limit", "3").stdout
    head = out[out.index("Python functions"):]
    assert head.splitlines()[1].startswith(
        "  incomplete (pid 6300): Python calls deeper than 1000 frames"), head[:400]


def test_default_section_leaves_out_what_ran_only_in_imports(tmp_path):
    """A module whose import runs setup() (a 50 ms sleep) and shared(), then a loop that
    calls shared() 3 times: the default report's short Python section leaves out what ran
    only inside the import (the module's code, setup, importlib) and says how many rows
    that is; shared stays with all 4 of its calls; --python lists every row."""
    (tmp_path / "mod_slow.py").write_text(
        "import time\n\n\ndef setup():\n    time.sleep(0.05)\n\n\n"
        "def shared():\n    return sum(range(1000))\n\n\nsetup()\nshared()\n")
    (tmp_path / "main.py").write_text(
        "import mod_slow\n\n\ndef main():\n    for i in range(3):\n        mod_slow.shared()\n\n\n"
        "main()\n")
    out = tmp_path / "prof"
    got = profile(["/usr/bin/python3", str(tmp_path / "main.py")], out)
    assert got.returncode == 0, got.stderr
    text = report(out).stdout
    section = text[text.index("Python functions (top"):]
    section = section[:section.index("\n\n", section.index("seconds\n\n") + 9)]
    rows = table_rows(section)
    shared = [v for k, v in rows.items() if k.endswith("mod_slow.py:8(shared)")]
    assert shared and shared[0][0] == "4", section
    assert not any("setup" in k or "mod_slow.py:1(<module>)" in k or "importlib" in k
                   for k in rows), section
    m = re.search(r"\((\d+) functions that ran only inside imports left out", section)
    assert m and int(m.group(1)) >= 3, section
    full = table_rows(report(out, "--python").stdout)
    assert any(k.endswith("mod_slow.py:4(setup)") for k in full)
    assert any(k.endswith("mod_slow.py:1(<module>)") for k in full)
