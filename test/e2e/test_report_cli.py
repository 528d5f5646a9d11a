"""profreport on synthetic traces (test/fixtures/traces/make_traces.c, `make report-fixtures`).

Every expected number below follows from the calls written in make_traces.c: rank 0 of
run-b (pid 1000, ns clock) and rank 1 (pid 2000, TSC at 3 ticks/ns, other API ids).
"""
import csv
import io
import json
import os
import subprocess

import pytest

from conftest import PROFREPORT, report, report_json, api_row, TRACES, make_traces



@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def t(*parts):
    return os.path.join(TRACES, *parts)


def run(*args):
    return subprocess.run([PROFREPORT] + list(args), capture_output=True, text=True, timeout=60)


def expect(name):
    with open(t("bad", name + ".expect")) as f:
        _, byte, _, records = f.read().split()
    return int(byte), int(records)


def test_api_table_merges_processes_by_name():
    rep = report_json(t("run"))
    assert rep["runs"] == ["run-b"]
    malloc = api_row(rep, "cudaMalloc")
    assert malloc["calls"] == 7
    assert malloc["errors"] == 1
    assert malloc["total_ns"] == 700  # rank 1's 300 ticks are 100 ns
    assert malloc["min_ns"] == 100 and malloc["max_ns"] == 100
    assert malloc["category"] == "memory"
    launch = api_row(rep, "cudaLaunchKernel")
    assert (launch["calls"], launch["errors"], launch["total_ns"]) == (7, 1, 80)
    assert launch["min_ns"] == 10 and launch["max_ns"] == 20
    total = sum(r["total_ns"] for r in rep["api"])
    assert total == 8610
    sync = api_row(rep, "cudaDeviceSynchronize")
    assert sync["percent"] == pytest.approx(100.0 * 5000 / 8610)
    assert [r["name"] for r in rep["api"]][:4] == [
        "cudaDeviceSynchronize", "cudaMemcpy", "cudaMemcpyPeer", "cudaMalloc"]


def test_sort_and_limit():
    rep = report_json(t("run"), "--sort", "calls", "--limit", "2")
    assert [r["name"] for r in rep["api"]] == ["cudaLaunchKernel", "cudaMalloc"]
    rep = report_json(t("run"), "--sort", "name")
    names = [r["name"] for r in rep["api"]]
    assert names == sorted(names)
    rep = report_json(t("run"), "--sort", "errors", "--limit", "1")
    assert [r["name"] for r in rep["api"]] == ["cudaLaunchKernel"]  # ties by name
    rep = report_json(t("run"), "--sort", "max", "--limit", "1")
    assert rep["api"][0]["name"] == "cudaDeviceSynchronize"


def test_kernels_demangled_aliased_and_unknown():
    rep = report_json(t("run"))
    by_name = {k["name"]: k for k in rep["kernels"]}
    a = by_name["kernelA(float*, int)"]
    assert (a["launches"], a["errors"], a["total_ns"]) == (5, 0, 50)
    assert a["grid"] == "128,1,1" and a["block"] == "256,1,1"
    b = by_name["kernel_b"]  # launched through a handle aliased to the stub
    assert (b["launches"], b["errors"], b["grid"], b["block"]) == (1, 1, "1,1,1", "32,1,1")
    u = by_name["kernel@0xd0"]
    assert u["grid"] == "2,2,2" and u["block"] == "8,8,1"
    assert rep["kernels"][0]["name"] == "kernelA(float*, int)"


def test_memory_per_process_and_peak():
    rep = report_json(t("run"))
    procs = {p["pid"]: p for p in rep["processes"]}
    dev0 = procs[1000]["memory"]["device"]
    # a 100, b 50, free a, c 70, then d 20 on device 1: peak 150
    assert dev0 == {"alloc_count": 4, "alloc_bytes": 240, "free_count": 1, "free_bytes": 100,
                    "peak_bytes": 150}
    assert procs[1000]["memory"]["host_pinned"]["peak_bytes"] == 1024
    assert procs[1000]["memory"]["host_pinned"]["free_count"] == 1
    devs = {d["device"]: d for d in procs[1000]["memory_by_device"]}
    assert devs[0]["alloc_bytes"] == 220 and devs[0]["peak_bytes"] == 150
    assert devs[1]["alloc_bytes"] == 20
    assert procs[2000]["memory"]["device"]["peak_bytes"] == 400
    top = rep["memory"]["device"]
    assert top["alloc_count"] == 6 and top["alloc_bytes"] == 640
    assert top["peak_bytes"] == 400  # the largest per-process peak, not a sum
    assert rep["memory"]["managed"]["alloc_count"] == 0


def test_copies_and_sets():
    rep = report_json(t("run"))
    copies = {c["direction"]: c for c in rep["copies"]}
    assert set(copies) == {"HtoD", "DtoH", "PtoP", "memset"}
    assert (copies["HtoD"]["calls"], copies["HtoD"]["bytes"], copies["HtoD"]["total_ns"]) == (
        1, 4096, 1000)
    assert copies["HtoD"]["gbps"] == pytest.approx(4.096)
    assert copies["DtoH"]["gbps"] == pytest.approx(2.0)
    assert copies["PtoP"]["bytes"] == 2048
    assert copies["memset"]["bytes"] == 256


def test_processes_and_threads():
    rep = report_json(t("run"))
    p0, p1 = rep["processes"]
    assert (p0["pid"], p0["ppid"], p0["host"], p0["rank"]) == (1000, 1, "node7", 0)
    assert p1["rank"] == 1
    assert p0["command"] == "python3 train.py --name 'my run'"
    assert p0["clean_end"] is True and p0["truncated"] is False
    assert p0["lost"] == 3
    assert p0["notes"] == ["cupti: not available (test fixture)"]
    threads = {th["tid"]: th for th in p0["threads"]}
    assert threads[1000] == {"tid": 1000, "name": "python3", "calls": 11, "api_time_ns": 1960,
                             "lost": 0}
    assert threads[1001]["calls"] == 9 and threads[1001]["api_time_ns"] == 6430
    assert threads[1001]["lost"] == 3
    assert any("3 events lost" in w for w in rep["warnings"])
    assert p0["meta"]["env.CUDA_VISIBLE_DEVICES"] == "0,1"


def thread_rows(out):
    """(pid, tid) of the text report's Threads table rows."""
    section = out[out.index("\nThreads"):]
    section = section[:section.index("\n\n") if "\n\n" in section else len(section)]
    return [tuple(int(x) for x in l.split()[:2]) for l in section.splitlines()
            if l.startswith("  ") and l.split()[0].isdigit()]


def test_threads_without_api_calls_are_counted_not_listed():
    """A run of Python threads alone (no API call, no event lost) says so in one line; with
    threads that made calls, only those are rows, the others counted; --threads lists every
    thread. JSON keeps them all."""
    out = report(t("py")).stdout
    assert "\nThreads: 2 in 1 process, none with intercepted API calls or lost events " \
        "(--threads lists them)\n" in out
    assert "TID" not in out
    mixed = [t("run"), t("py"), "--all-runs"]
    out = report(mixed).stdout
    assert thread_rows(out) == [(1000, 1000), (1000, 1001), (2000, 2000)]
    assert "  (2 threads without API calls or lost events not shown; --threads lists them)" \
        in out
    every = report(mixed + ["--threads"]).stdout
    assert "\nProcesses\n" in every and "API summary" not in every  # that table alone
    assert "not shown" not in every
    assert thread_rows(every) == [(1000, 1000), (1000, 1001), (2000, 2000), (6000, 6000),
                                  (6000, 6001)]
    assert [th["tid"] for th in report_json(t("py"))["processes"][0]["threads"]] == [6000, 6001]


def test_text_report():
    out = report(t("run")).stdout
    assert "CUDA runtime API summary (2 processes" in out
    assert "cudaDeviceSynchronize" in out and "5.00 us" in out
    # the text table shows the kernel without its parameters, and says so (JSON keeps them)
    assert any(l.strip().split("  ")[0] == "kernelA" for l in out.splitlines())
    assert "kernelA(float*, int)" not in out
    assert "kernel names without their return type, parameters" in out
    assert "GB/s over API time" in out
    assert "pid 1000 device 1" in out
    assert "python3 train.py --name 'my run'" in out
    assert "cupti: not available (test fixture)" in out


def test_csv_sections():
    out = report(t("run"), "--format", "csv").stdout
    sections = {}
    for block in out.strip().split("\n\n"):
        lines = block.split("\n")
        assert lines[0].startswith("# ")
        sections[lines[0][2:]] = list(csv.DictReader(io.StringIO("\n".join(lines[1:]))))
    assert set(sections) >= {"api", "kernels", "memory", "copies", "processes", "threads"}
    malloc = [r for r in sections["api"] if r["name"] == "cudaMalloc"][0]
    assert malloc["calls"] == "7" and malloc["total_ns"] == "700"
    kern = [r for r in sections["kernels"] if r["name"] == "kernelA(float*, int)"][0]
    assert kern["grid"] == "128,1,1"


def test_multiple_runs_latest_by_default():
    proc = run("--format", "json", t("multi"))
    assert proc.returncode == 0
    rep = json.loads(proc.stdout)
    assert rep["runs"] == ["run-b"]
    assert sorted(p["pid"] for p in rep["processes"]) == [1000, 2000]
    assert "run-a" in proc.stderr and "--run ID" in proc.stderr and "--all-runs" in proc.stderr
    rep = report_json(t("multi"), "--run", "run-a")
    assert [p["pid"] for p in rep["processes"]] == [3000]
    assert api_row(rep, "cudaMalloc")["total_ns"] == 300
    rep = report_json(t("multi"), "--all-runs")
    assert sorted(rep["runs"]) == ["run-a", "run-b"]
    assert api_row(rep, "cudaMalloc")["calls"] == 8
    proc = run("--run", "nope", t("multi"))
    assert proc.returncode == 1 and "nope" in proc.stderr


def test_several_files_merge():
    rep = report_json(t("run", "rank0.trace"), t("run", "rank1.trace"))
    assert len(rep["processes"]) == 2


@pytest.mark.parametrize("name", ["truncated", "corrupt"])
def test_damaged_file_reports_what_was_read(name):
    byte, records = expect(name)
    proc = run("--format", "json", t("bad", name + ".trace"))
    assert proc.returncode == 0
    what = "truncated at byte %d (record cut off)" % byte if name == "truncated" \
        else "corrupt record at byte %d" % byte
    assert what in proc.stderr
    assert "reporting the %d records before it" % records in proc.stderr
    rep = json.loads(proc.stdout)
    p = rep["processes"][0]
    assert p["truncated"] is True and p["clean_end"] is False
    # The cut is at cudaMemcpyPeer: the memory of thread 1000 and the frees before it stay.
    assert api_row(rep, "cudaMalloc")["calls"] == 4
    assert api_row(rep, "cudaMemcpyPeer") is None
    assert p["memory"]["device"]["peak_bytes"] == 150
    out = run(t("bad", name + ".trace")).stdout
    assert "process did not finish writing (killed?)" in out


@pytest.mark.parametrize("name,message", [
    ("foreign", "not a profrun trace (bad magic)"),
    ("newer", "written by a newer profrun (format version 2, this reader knows 1)"),
    ("smallhdr", "bad header size 16"),
])
def test_unreadable_file_exits_1(name, message):
    proc = run(t("bad", name + ".trace"))
    assert proc.returncode == 1
    assert message in proc.stderr
    assert proc.stderr.count("\n") == 1  # one clear line
    assert proc.stdout == ""


def test_missing_path_exits_1():
    proc = run(t("does-not-exist.trace"))
    assert proc.returncode == 1
    assert "No such file or directory" in proc.stderr


def test_bad_file_among_good_ones_still_reports_but_fails():
    proc = run("--format", "json", t("bad", "foreign.trace"), t("run"))
    assert proc.returncode == 1
    assert "bad magic" in proc.stderr
    assert len(json.loads(proc.stdout)["processes"]) == 2


def test_tsc_single_clock_uses_tsc_hz():
    proc = run("--format", "json", t("tsc1.trace"))
    assert proc.returncode == 0
    assert "tsc_hz" in proc.stderr
    assert api_row(json.loads(proc.stdout), "cudaDeviceSynchronize")["total_ns"] == 1000


def test_unknown_records_keys_and_args_are_skipped():
    rep = report_json(t("odd.trace"))
    row = api_row(rep, "cudaFuture")
    assert (row["calls"], row["total_ns"]) == (2, 110)
    p = rep["processes"][0]
    assert p["clean_end"] is False and p["truncated"] is False
    assert p["meta"]["x.custom"] == "kept"


def test_dump():
    proc = run("dump", t("odd.trace"))
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# ") and "version 1" in lines[0]
    assert '32 META pid="5000" size=16' in lines
    assert "x.custom=\"kept\"" in proc.stdout
    assert any(l.startswith("424 UNKNOWN type=200") for l in lines)
    calls = [l for l in lines if " API_CALL " in l]
    assert len(calls) == 2
    assert "(cudaFuture)" in calls[0] and "bytes=8 frobnicate=0x1234" in calls[0]
    out = run("dump", t("run", "rank0.trace")).stdout
    assert "grid=128,1,1 block=256,1,1" in out
    assert 'name="_Z7kernelAPfi"' in out
    assert " END " in out


def test_dump_of_truncated_file():
    byte, records = expect("truncated")
    proc = run("dump", t("bad", "truncated.trace"))
    assert proc.returncode == 0
    assert "truncated at byte %d" % byte in proc.stderr
    assert len([l for l in proc.stdout.splitlines() if not l.startswith("#")]) == records


def test_usage_errors():
    proc = run("--bogus", t("run"))
    assert proc.returncode == 2
    assert "unknown option '--bogus'" in proc.stderr and "--help" in proc.stderr
    for args in (["--format", "xml"], ["--sort", "speed"], ["--limit", "x"], [],
                 ["--run", "a", "--all-runs"]):
        proc = run(*(args + [t("run")] if args else []))
        assert proc.returncode == 2, args
        assert "--help" in proc.stderr
    proc = run("--help")
    assert proc.returncode == 0 and "usage: profreport" in proc.stdout
    assert "--sort" in proc.stdout and "dump FILE" in proc.stdout


def test_empty_directory_exits_1(tmp_path):
    proc = run(str(tmp_path))
    assert proc.returncode == 1
    assert "no *.trace or *.summary files" in proc.stderr


@pytest.mark.parametrize("args", [[], ["dump"]])
def test_fifo_is_refused_not_read(tmp_path, args):
    # Reading a FIFO waits for a writer forever (it hung before): anything that is not a
    # regular file or a directory is refused at once, with the kind named.
    fifo = tmp_path / "x.trace"
    os.mkfifo(fifo)
    proc = subprocess.run([PROFREPORT] + args + [str(fifo)], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 1
    assert "%s: not a regular file (a FIFO)" % fifo in proc.stderr


def test_fifo_in_a_directory_is_skipped(tmp_path):
    os.mkfifo(tmp_path / "x.trace")
    os.symlink(t("run", "rank0.trace"), tmp_path / "a.trace")
    proc = subprocess.run([PROFREPORT, str(tmp_path)], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert "cudaMalloc" in proc.stdout
    assert "x.trace: not a regular file; skipped" in proc.stderr


def test_device_is_refused():
    proc = run("/dev/zero")
    assert proc.returncode == 1
    assert "/dev/zero: not a regular file (a character device)" in proc.stderr


def test_step_names_the_action_whose_calls_are_steps():
    """--ranks counts a rank's steps as the optimizer's steps, or as the calls --step names:
    an NVTX range, a record_function scope on the rank's step thread (the nvtx fixture's
    third "step" range is on another thread), else the calls of a built-in action of that
    name (the steps fixture's forward: no Python span to make steps of)."""
    for folder, name, calls, total_s, as_steps in (("nvtx", "step", 2, 0.2, True),
                                                   ("torch", "my_scope", 2, 0.006, True),
                                                   ("steps", "forward", 3, 0.06, False)):
        path = os.path.join(TRACES, folder)
        rep = json.loads(report(path, "--ranks", "--step", name, "--format", "json").stdout)
        ranks = rep["ranks"]
        assert ranks["step"] == name
        assert [r["steps"] for r in ranks["rows"]] == [calls]
        assert ranks["rows"][0]["step_ns"] == round(total_s * 1e9 / calls)
        text = report(path, "--ranks", "--step", name).stdout
        if as_steps:
            assert "on steps 1-%d, the steady steps every rank has" % calls in text, text
        else:
            assert "steps = calls of '%s'" % name in text
    default = json.loads(report(os.path.join(TRACES, "steps"), "--ranks", "--format",
                                "json").stdout)["ranks"]
    # the steady steps of the 3: the first, whose start is inferred, left out
    assert default["step"] == "optimizer_step" and default["rows"][0]["steps"] == 2
    proc = report(os.path.join(TRACES, "nvtx"), "--ranks", "--step", "no_such_range", "--format",
                  "json")
    assert json.loads(proc.stdout)["ranks"]["rows"][0]["steps"] == 0
    bad = subprocess.run([PROFREPORT, "--step", "", os.path.join(TRACES, "nvtx")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--step wants an action name" in bad.stderr


def test_rows_over_the_ranks():
    """Of two ranks or more, each op, GPU kernel and action row says its value per rank:
    min / median (the lower middle) / max and the rank at the max (findings_traces.h: the
    elementwise kernel ran 4 ms on rank 0 and 2 ms on rank 1; dataloader_next only on
    rank 0)."""
    path = os.path.join(TRACES, "findings", "bad")
    rep = report_json(path)
    (kernel,) = rep["gpu_kernels"]
    assert kernel["over_ranks"] == {"min_ns": 2000000, "median_ns": 2000000,
                                    "max_ns": 4000000, "ranks": 2, "rank_at_max": 0}
    (op,) = rep["ops"]
    assert op["over_ranks"]["ranks"] == 2 and op["over_ranks"]["max_ns"] == 500000000
    (action,) = rep["actions"]
    assert action["over_ranks"]["ranks"] == 1 and action["over_ranks"]["rank_at_max"] == 0
    text = report(path, "--kernels").stdout
    assert "Over the ranks (GPU time per rank, of the ranks that ran it):" in text
    line = [l for l in text.splitlines() if l.strip().startswith("elementwise_kernel") and
            "4.00 ms" in l and l.rstrip().endswith("0")]
    assert line, text
    csv_text = report(path, "--format", "csv").stdout
    assert "gpu_kernels,elementwise_kernel,2,2000000,2000000,4000000,0" in csv_text
    # One rank: no such rows or section.
    one = report_json(os.path.join(TRACES, "torch"))
    assert all("over_ranks" not in r for r in one["ops"])
    assert "# over_ranks" not in report(os.path.join(TRACES, "torch"), "--format", "csv").stdout
