"""Trace strings are untrusted: thread, function, kernel, API, NVTX, operator and host
names, argv and notes reach the terminal (text) and spreadsheets (CSV) with every
control character escaped as \\xHH; JSON keeps them exact, escaped by jansson."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, PROFREPORT

TRACE = os.path.join(BUILD, "test", "traces", "escape", "esc.trace")
BAD = "\x1b]0;owned\x07\x1b[2J\r\t\x7f\u009b31m"  # what make_traces puts after each name
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x09\\x7f\\xc2\\x9b31m"


@pytest.fixture(scope="module", autouse=True)
def traces():
    tool = os.path.join(BUILD, "test", "make_traces")
    if not os.path.exists(tool) or not os.path.exists(PROFREPORT):
        pytest.skip("build profreport and the fixtures first: make report-fixtures")
    subprocess.run([tool, os.path.join(BUILD, "test", "traces")], check=True)


def run(*args):
    proc = subprocess.run([PROFREPORT] + list(args), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def control_bytes(data):
    """Every C0 control except newline, DEL, and C1 controls written as UTF-8."""
    found = [b for b in data if (b < 0x20 and b != 0x0A) or b == 0x7F]
    return found + ([0x9B] if b"\xc2\x9b" in data else [])


@pytest.mark.parametrize("args", [[], ["--python"], ["--python", "--per-thread"],
                                  ["--python", "--per-process"], ["--ops"], ["--actions"],
                                  ["--gpu"], ["--kernels"], ["--format", "csv"]])
def test_no_control_character_reaches_the_output(args):
    out, err = run(*args, TRACE)
    assert control_bytes(out) == [], out
    assert control_bytes(err) == [], err


def test_dump_escapes_every_string():
    out, err = run("dump", TRACE)
    assert control_bytes(out) == [] and control_bytes(err) == []
    assert b"(cudaApi\\x1b]0;owned" in out  # an API name beside each of its calls


def test_text_shows_every_name_escaped():
    out = run(TRACE)[0].decode()
    for name in ["cudaApi", "kernel", "nvtx", "aten::op", "host", "script", "thread", "note",
                 "/w/file.py", "func"]:
        assert name + SHOWN in out, name


def test_csv_fields_are_escaped():
    out = run("--format", "csv", TRACE)[0].decode()
    for name in ["cudaApi", "kernel", "aten::op", "host", "thread", "func", "module"]:
        assert name + SHOWN in out, name


def test_folded_file_is_escaped(tmp_path):
    run("--folded", str(tmp_path / "f.folded"), TRACE)
    data = (tmp_path / "f.folded").read_bytes()
    assert control_bytes(data) == []
    assert b"func\\x1b]0" in data  # folded_append also turns ; and line breaks into spaces


def test_json_keeps_the_names_exact_and_escaped():
    out = run("--format", "json", TRACE)[0]
    # jansson writes C0 controls as \u001b etc.; DEL and UTF-8 C1 stay as they are (a
    # JSON string may hold them, and the names must stay exact).
    assert [b for b in out if b < 0x20 and b != 0x0A] == []
    rep = json.loads(out)
    names = [row["name"] for row in rep["api"]]
    assert "cudaApi" + BAD in names
    assert "script" + BAD in rep["processes"][0]["meta"]["argv"]
    assert rep["processes"][0]["notes"] == ["note" + BAD]


# ---- issue 20, item 11: bidi overrides, spreadsheet formulas, stderr ----

HOSTILE = os.path.join(BUILD, "test", "traces", "hostile")
BIDI_RAW = [b"\xe2\x80\xaa", b"\xe2\x80\xab", b"\xe2\x80\xac", b"\xe2\x80\xad", b"\xe2\x80\xae",
            b"\xe2\x81\xa6", b"\xe2\x81\xa7", b"\xe2\x81\xa8", b"\xe2\x81\xa9"]
BIDI_SHOWN = b"\\xe2\\x80\\xaeevil\\xe2\\x81\\xa6"


def raw_bidi(data):
    return [b for b in BIDI_RAW if b in data]


def run_any(*args):
    proc = subprocess.run([PROFREPORT] + [str(a) for a in args], capture_output=True,
                          timeout=60)
    return proc


@pytest.mark.parametrize("args", [[], ["--python", "--per-thread"], ["--ops"],
                                  ["--format", "csv"]])
def test_bidi_overrides_are_shown_escaped(args):
    proc = run_any(*args, "--all-runs", HOSTILE)
    assert proc.returncode == 0, proc.stderr
    assert raw_bidi(proc.stdout) == [] and raw_bidi(proc.stderr) == []
    assert control_bytes(proc.stderr) == []
    assert BIDI_SHOWN in proc.stdout


def test_bidi_overrides_are_escaped_in_html_and_svg(tmp_path):
    html, svg = tmp_path / "r.html", tmp_path / "r.svg"
    proc = run_any("--all-runs", "--html", html, "--flamegraph", svg, HOSTILE)
    assert proc.returncode == 0, proc.stderr
    for f in (html, svg):
        data = f.read_bytes()
        assert raw_bidi(data) == [], f
    assert BIDI_SHOWN in html.read_bytes()


def test_csv_cells_that_start_like_formulas_are_text():
    out = run_any("--all-runs", "--format", "csv", HOSTILE).stdout.decode()
    assert "\"'=HYPERLINK(\"\"http://x\"\")\"," in out
    assert ",'+cmd|' /C calc'!A0," in out
    assert "'@SUM(1)," in out and ",'-2+3," in out
    for cell in ("=HYPERLINK", "+cmd", "@SUM", "-2+3"):
        for line in out.splitlines():
            assert not line.startswith(cell) and ("," + cell) not in line \
                and ("\"" + cell) not in line, line


def test_run_ids_and_file_names_reach_stderr_escaped(tmp_path):
    # Run ids from the traces, in the note that names the runs.
    proc = run_any(HOSTILE)
    assert proc.returncode == 0
    assert control_bytes(proc.stderr) == [] and raw_bidi(proc.stderr) == []
    assert b"run\\x1b[2J" + BIDI_SHOWN in proc.stderr
    # A run id given on the command line, in the "no input belongs" message.
    proc = run_any("--run", "x\x1b[2J\u202e", HOSTILE)
    assert proc.returncode != 0
    assert control_bytes(proc.stderr) == [] and raw_bidi(proc.stderr) == []
    assert b"x\\x1b[2J\\xe2\\x80\\xae" in proc.stderr
    # File names: a warning about a cut-off trace, a file that is missing, a folder
    # entry that is no trace, a summary that cannot be made.
    evil = "t\x1b]0;owned\x07\u202e"
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(os.path.join(BUILD, "test", "traces", "bad", "truncated.trace"),
                d / (evil + ".trace"))
    (d / (evil + "junk.trace")).write_bytes(b"junk" * 10)
    for args in ([d], [d / (evil + ".trace")], [tmp_path / (evil + "missing.trace")],
                 ["--summarize", d], ["--stacks", evil, d]):
        proc = run_any(*args)
        assert control_bytes(proc.stderr) == [], (args, proc.stderr)
        assert raw_bidi(proc.stderr) == [], (args, proc.stderr)
        assert b"\\x1b]0;owned\\x07" in proc.stderr, (args, proc.stderr)
