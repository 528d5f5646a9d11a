"""A name longer than the trace keeps whole (collector/text_bound.h) is kept as its first
bytes, whole UTF-8 characters only, and a marker that says how long it was:
"…[truncated, N bytes]". It never becomes "?" or "(unnamed)", and is never cut silently:
a Python function's name, an argument of the command line, NVTX range names (narrow and
wide, through libprof.so's exported nvtxRangePushA/W)."""
import json
import os
import re
import subprocess

import pytest

from conftest import PROFREPORT, PROFRUN, profile

NAME_BYTES = 1048577  # "a" then 524288 two-byte "é": an even cut point splits an "é"
ARG_BYTES = 100000  # one argument, longer than a record (64 KiB)
MARK = re.compile("\u2026\\[truncated, (\\d+) bytes\\]")

SCRIPT = '''
import sys
name = "a" + "\\u00e9" * 524288
assert len(name.encode()) == %d
g = {}
exec("def %%s():\\n    return 1\\n" %% name, g)
for _ in range(3):
    g[name]()
''' % NAME_BYTES


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    if not os.path.exists(PROFRUN) or not os.path.exists(PROFREPORT):
        pytest.skip("build profrun and profreport first: make all")
    tmp = tmp_path_factory.mktemp("long_names")
    script = tmp / "long.py"
    script.write_text(SCRIPT)
    out = tmp / "out"
    profile(["/usr/bin/python3", str(script), "x" * ARG_BYTES], out)
    return out


WIDE_CHARS = 600000  # "w" then this many "é": 1200001 bytes of UTF-8
NVTX_SCRIPT = '''
import ctypes
lib = ctypes.CDLL(None)
lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
lib.nvtxRangePushW.argtypes = [ctypes.c_wchar_p]
for _ in range(2):
    lib.nvtxRangePushA(("n" + "\\u00e9" * 524288).encode())
    lib.nvtxRangePop()
lib.nvtxRangePushW("w" + "\\u00e9" * %d)
lib.nvtxRangePop()
lib.nvtxRangePushW("v" + "\\u00e9" * 5000)
lib.nvtxRangePop()
''' % WIDE_CHARS


@pytest.fixture(scope="module")
def nvtx_traced(tmp_path_factory):
    if not os.path.exists(PROFRUN) or not os.path.exists(PROFREPORT):
        pytest.skip("build profrun and profreport first: make all")
    tmp = tmp_path_factory.mktemp("long_nvtx")
    script = tmp / "nvtx.py"
    script.write_text(NVTX_SCRIPT)
    out = tmp / "out"
    profile(["/usr/bin/python3", str(script)], out)
    return out


def cut_ok(text, whole, total):
    """text is a prefix of whole (at most 64 KiB of it) and the marker naming total bytes."""
    m = MARK.search(text)
    assert m, text[-200:]
    assert text.endswith(m.group(0)) and int(m.group(1)) == total, text[-200:]
    kept = text[:m.start()]
    assert 0 < len(kept.encode()) < 65536 and whole.startswith(kept)


def test_a_long_function_name_is_cut_with_a_marker_in_the_text_report(traced):
    proc = subprocess.run([PROFREPORT, "--python", str(traced)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8")  # strict: a split "é" would raise here
    rows = [line for line in text.splitlines() if "<string>:" in line and "<module>" not in line]
    assert len(rows) == 1, rows
    ncalls, label = rows[0].split(None, 5)[0], rows[0].split(None, 5)[5]
    assert ncalls == "3"
    assert label.startswith("<string>:") and label.endswith(")")
    name = label[label.index("(") + 1:-1]
    cut_ok(name, "a" + "\u00e9" * 524288, NAME_BYTES)
    assert "(?)" not in text


def test_a_long_function_name_is_cut_with_a_marker_in_the_json_export(traced):
    proc = subprocess.run([PROFREPORT, "--format", "json", str(traced)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout.decode("utf-8"))
    funcs = [f for f in rep["python"] if f["file"] == "<string>" and f["name"] != "<module>"]
    assert len(funcs) == 1, [f["name"][:40] for f in funcs]
    f = funcs[0]
    assert f["ncalls"] == 3
    cut_ok(f["name"], "a" + "\u00e9" * 524288, NAME_BYTES)
    assert f["qualname"] == f["name"]
    # the command line: an argument longer than a record is cut, and says so
    command = rep["processes"][0]["command"]
    assert "x" * 1000 in command
    assert MARK.search(command) and int(MARK.search(command).group(1)) == ARG_BYTES, \
        command[-100:]


def test_long_nvtx_range_names_are_cut_with_a_marker(nvtx_traced):
    proc = subprocess.run([PROFREPORT, "--format", "json", str(nvtx_traced)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    actions = {a["name"][0]: a for a in json.loads(proc.stdout.decode("utf-8"))["actions"]}
    assert sorted(actions) == ["n", "v", "w"], sorted(actions)
    assert actions["n"]["calls"] == 2 and actions["n"]["source"] == "nvtx"
    cut_ok(actions["n"]["name"], "n" + "\u00e9" * 524288, NAME_BYTES)
    cut_ok(actions["w"]["name"], "w" + "\u00e9" * WIDE_CHARS, 1 + 2 * WIDE_CHARS)
    # a wide name of 10001 bytes fits: kept whole
    assert actions["v"]["name"] == "v" + "\u00e9" * 5000
    text = subprocess.run([PROFREPORT, str(nvtx_traced)], capture_output=True,
                          timeout=120).stdout.decode("utf-8")
    assert "(unnamed)" not in text
    assert len(MARK.findall(text)) == 2, MARK.findall(text)


def test_a_long_function_name_is_cut_with_a_marker_in_the_folded_export(traced, tmp_path):
    folded = tmp_path / "f.folded"
    proc = subprocess.run([PROFREPORT, "--folded", str(folded), str(traced)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in folded.read_bytes().decode("utf-8").splitlines()
             if "(<string>:1)" in line and "<module>" not in line.rsplit(";", 1)[-1]]
    assert lines, "no line for the long function"
    for line in lines:
        frame = line.rsplit(" ", 1)[0].rsplit(";", 1)[-1]
        assert frame.endswith(" (<string>:1)"), frame[-100:]
        cut_ok(frame[:-len(" (<string>:1)")], "a" + "\u00e9" * 524288, NAME_BYTES)
