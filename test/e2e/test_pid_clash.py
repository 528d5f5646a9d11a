"""Two runs with one PROF_RUN_ID whose processes got the same pid (pid namespaces:
containers, `unshare --pid`) write two traces that claim one host and pid. They are two
processes: the report keeps them apart (the Chrome export writes one file each, the
Perfetto and Chrome pids differ) and says so in one warning line, never merging them
silently. The clash is made for real in two pid namespaces where unshare works, and by
rewriting one trace's pid META record (the same size) everywhere."""
import glob
import json
import os
import shutil
import struct
import subprocess

import pytest

from conftest import PROFREPORT, PROFRUN, report, trace_files

SCRIPT = """
import sys
def work_a():
    return sum(range(1000))
def work_b():
    return sum(range(10))
f = work_a if sys.argv[1] == "a" else work_b
for _ in range(int(sys.argv[2])):
    f()
"""
RUNS = [["a", "5"], ["b", "7"]]
WARNING = "host and pid with another process of the inputs"


def unshare_works():
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "--map-root-user", "true"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_two(tmp_path, wrap):
    if not os.path.exists(PROFRUN) or not os.path.exists(PROFREPORT):
        pytest.skip("build profrun and profreport first: make all")
    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    env = dict(os.environ, PROF_RUN_ID="clash")
    for args in RUNS:
        cmd = wrap + [PROFRUN, "--no-report", "-o", str(out), "--", "/usr/bin/python3",
                      str(script)] + args
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    files = trace_files(out)
    assert len(files) == 2, files
    return out, files


def meta_records(path):
    """[(offset, size, key, value)] of the META records of a trace."""
    data = open(path, "rb").read()
    (header_size,) = struct.unpack_from("<H", data, 10)
    off, out = header_size, []
    while off + 4 <= len(data):
        rtype, size = struct.unpack_from("<HH", data, off)
        if size < 8 or off + size > len(data):
            break
        if rtype == 1:  # PROF_REC_META: header, then "key\0value\0"
            key, value = data[off + 4:off + size].split(b"\0")[:2]
            out.append((off, size, key.decode(), value.decode()))
        off += size
    return out


def meta(path, key):
    return [v for _, _, k, v in meta_records(path) if k == key]


def set_pid(path, pid):
    """Rewrites the pid META record of a trace in place, keeping its size."""
    data = bytearray(open(path, "rb").read())
    (off, size, _, _), = [r for r in meta_records(path) if r[2] == "pid"]
    body = b"pid\0" + str(pid).encode() + b"\0"
    assert 4 + len(body) <= size, "the new pid fits the record"
    data[off + 4:off + size] = body + b"\0" * (size - 4 - len(body))
    open(path, "wb").write(bytes(data))


def check_kept_apart(out, files, tmp_path):
    pid = int(meta(files[0], "pid")[0])
    assert [meta(f, "pid") for f in files] == [[str(pid)], [str(pid)]]
    assert meta(files[0], "proc_start_ticks") != meta(files[1], "proc_start_ticks") or \
        meta(files[0], "pid_ns") != meta(files[1], "pid_ns")

    # one warning line, in the text report and in the JSON job section
    proc = report(out)
    warnings = [line for line in proc.stderr.splitlines() if WARNING in line]
    assert len(warnings) == 1 and warnings[0].startswith("profreport: warning: "), proc.stderr
    assert "pid %d on" % pid in warnings[0]
    rows = [line.split() for line in proc.stdout.splitlines() if ".trace" in line]
    assert len(rows) == 2 and all(r[1] == str(pid) for r in rows), rows
    rep = json.loads(report(out, "--format", "json").stdout)
    assert len([w for w in rep["job"]["warnings"] if WARNING in w]) == 1
    assert [p["pid"] for p in rep["processes"]] == [pid, pid]

    # the Chrome export: one file per process, each with its own process and pid
    chrome = tmp_path / "chrome"
    chrome.mkdir()
    report(out, "--chrome-trace", str(chrome / "run"))
    made = sorted(glob.glob(str(chrome / "*.pt.trace.json")))
    assert len(made) == 2, made
    seen = {}
    for path in made:
        events = json.load(open(path))["traceEvents"]
        names = [e for e in events if e.get("name") == "process_name" and e.get("ph") == "M"]
        assert len(names) == 1, [e["args"] for e in names]
        seen[names[0]["args"]["name"].split()[-2]] = (names[0]["pid"], os.path.basename(path))
        assert {e["pid"] for e in events if e.get("ph") == "X" and
                e.get("cat") == "python_function"} <= {names[0]["pid"]}
    assert sorted(seen) == ["a", "b"], seen
    assert len({v[0] for v in seen.values()}) == 2, seen
    assert pid in {v[0] for v in seen.values()}
    assert sorted(v[1] for v in seen.values()) == [
        "run.pid%d.pt.trace.json" % pid, "run.pid%d_1.pt.trace.json" % pid]


@pytest.mark.skipif(not unshare_works(), reason="unshare --pid --fork --map-root-user fails here")
def test_two_pid_namespaces_one_run_id_are_two_processes(tmp_path):
    out, files = run_two(tmp_path, ["unshare", "--pid", "--fork", "--map-root-user"])
    check_kept_apart(out, files, tmp_path)
    # what tells them apart even when both started in one clock tick
    ns = [meta(f, "pid_ns") for f in files]
    assert ns[0] != ns[1] and all(len(n) == 1 and n[0].startswith("pid:[") for n in ns), ns


def test_a_trace_claiming_another_process_pid_is_kept_apart(tmp_path):
    out, files = run_two(tmp_path, [])
    proc = report(out)
    assert WARNING not in proc.stderr  # two pids: nothing to say
    pid = int(meta(files[0], "pid")[0])
    set_pid(files[1], pid)
    check_kept_apart(out, files, tmp_path)


def test_traces_of_one_process_are_not_a_clash(tmp_path):
    """The same process's facts (an exec'd program writes a second trace): no warning."""
    out, files = run_two(tmp_path, [])
    twin = files[0].replace(".trace", "_1.trace")
    shutil.copy(files[0], twin)
    os.remove(files[1])
    proc = report(out)
    assert WARNING not in proc.stderr, proc.stderr
