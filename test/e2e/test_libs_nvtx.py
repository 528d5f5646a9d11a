"""NVTX ranges and marks as NVTX records. test/fixtures/libs/nvtx_threads.c uses the nvtx3
header-only API (reached through NVTX_INJECTION64_PATH=libprof.so and the exported
InitializeInjectionNvtx2), in the main thread and two more; nvtx_interop.c makes the same
annotations through the exported functions of libnvtx3interop.so.1 (interposed like
libnvToolsExt.so.1). The records are read from the trace files (kinds, names, domains,
range ids, per-thread order); every expectation comes from the fixtures' sources."""
import os
import struct
import subprocess

import pytest

from conftest import LIBPROF, build_path, needs_cuda, profile, report, report_json, trace_files

pytestmark = needs_cuda

FIXTURES = build_path("test", "fixtures")
THREADS = os.path.join(FIXTURES, "nvtx_threads")
INTEROP = os.path.join(FIXTURES, "nvtx_interop")

# trace_format.h: record types and NVTX kinds
REC_STRING, REC_THREAD, REC_NVTX = 2, 4, 24
KINDS = {1: "PUSH", 2: "POP", 3: "START", 4: "END", 5: "MARK"}


def nvtx_records(outdir):
    """{tid: [(kind, name, domain, id, ticks), ...]} over every trace in outdir, in the
    order each thread recorded them; names and domains as text (None: none / default)."""
    strings, per_thread = {}, {}
    for path in trace_files(outdir):
        data = open(path, "rb").read()
        assert data[:8] == b"PROFTRC\n"
        (header_size,) = struct.unpack_from("<H", data, 10)
        off, tid = header_size, None
        while off + 4 <= len(data):
            rtype, size = struct.unpack_from("<HH", data, off)
            if size < 8 or off + size > len(data):
                break
            if rtype == REC_STRING:
                (sid,) = struct.unpack_from("<I", data, off + 4)
                strings[sid] = data[off + 8:off + size].split(b"\0", 1)[0].decode()
            elif rtype == REC_THREAD:
                (tid,) = struct.unpack_from("<I", data, off + 4)
            elif rtype == REC_NVTX:
                kind, _, name, domain, rid, ticks = struct.unpack_from("<HHIIQQ", data, off + 4)
                per_thread.setdefault(tid, []).append((kind, name, domain, rid, ticks))
            off += size
    out = {}
    for tid, recs in per_thread.items():
        ticks = [r[4] for r in recs]
        assert ticks == sorted(ticks), "a thread's NVTX records are in time order"
        out[tid] = [(KINDS[k], strings.get(n) if n else None, strings.get(d) if d else None, rid,
                     t) for k, n, d, rid, t in recs]
    return out


def annotated_sequence(x):
    """What one annotate() call of the fixtures records, without ids and ticks."""
    # a POP names the range it closes (and carries its PUSH's ticks as id)
    return [("PUSH", "outer-" + x, None), ("PUSH", "inner-" + x, None),
            ("MARK", "mark-" + x, None), ("POP", "inner-" + x, None),
            ("START", "async-" + x, None), ("PUSH", "registered-" + x, "libs-domain"),
            ("POP", "registered-" + x, "libs-domain"), ("END", None, None),
            ("POP", "outer-" + x, None)]


def check_range_ids(recs):
    """START and END of one range share a non-zero id; PUSH and MARK carry none; a POP
    carries the ticks of the PUSH it closes."""
    (start,) = [r for r in recs if r[0] == "START"]
    (end,) = [r for r in recs if r[0] == "END"]
    assert start[3] == end[3] != 0
    assert all(r[3] == 0 for r in recs if r[0] in ("PUSH", "MARK"))
    pushes = {(r[1], r[2]): r[4] for r in recs if r[0] == "PUSH"}
    assert all(r[3] == pushes[(r[1], r[2])] for r in recs if r[0] == "POP")
    return start[3]


def require(*paths):
    for p in paths:
        if not os.path.exists(p):
            pytest.fail("library fixtures not built: run `make libs-fixtures` (%s)" % p)


# A path NVTX cannot load: no tool, whether or not profrun would name libprof.so. (An
# empty value is not "none": dlopen("") is the main program, whose scope holds the
# preloaded libprof.so.)
NO_TOOL = "/nonexistent/libno-nvtx-tool.so"


def run(cmd, outdir, env):
    """The program alone (no NVTX tool: NVTX would load libprof.so by itself otherwise),
    then under profrun with env."""
    bare = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
    plain = subprocess.run(cmd, env=bare, capture_output=True, text=True, timeout=60)
    profiled = profile(cmd, outdir, env=env)
    return plain, profiled


def test_nvtx_injection_threads(tmp_path):
    require(THREADS)
    plain, profiled = run([THREADS], tmp_path, {"NVTX_INJECTION64_PATH": LIBPROF})
    # Push levels come from the tool: ours counts them; with no tool NVTX returns -2.
    assert profiled.stdout == "nvtx_threads: levels=0,1\n"
    assert plain.stdout == "nvtx_threads: levels=-2,-2\n"
    threads = nvtx_records(tmp_path)
    assert len(threads) == 3
    by_first = {recs[0][1]: recs for recs in threads.values()}
    assert set(by_first) == {"wide-main-\u00e9", "outer-a", "outer-b"}
    assert [r[:3] for r in by_first["wide-main-\u00e9"]] == [
        ("PUSH", "wide-main-\u00e9", None), ("POP", "wide-main-\u00e9", None),
        ("PUSH", "ex-main", None), ("POP", "ex-main", None)]
    ids = []
    for x in ("a", "b"):
        recs = by_first["outer-" + x]
        assert [r[:3] for r in recs] == annotated_sequence(x)
        ids.append(check_range_ids(recs))
    assert ids[0] != ids[1]


def test_nvtx_other_injection_path_records_nothing(tmp_path):
    """Header-only NVTX reaches us only through NVTX_INJECTION64_PATH: naming another
    (here unloadable) tool leaves the program without us, unharmed."""
    require(THREADS)
    plain, profiled = run([THREADS], tmp_path, {"NVTX_INJECTION64_PATH": NO_TOOL})
    assert profiled.stdout == plain.stdout == "nvtx_threads: levels=-2,-2\n"
    assert nvtx_records(tmp_path) == {}


def test_nvtx_off(tmp_path):
    """PROF_NVTX=0: the injection attaches but records nothing and tracks no levels."""
    require(THREADS)
    proc = profile([THREADS], tmp_path, env={"NVTX_INJECTION64_PATH": LIBPROF, "PROF_NVTX": "0"})
    assert proc.stdout == "nvtx_threads: levels=-2,-2\n"
    assert nvtx_records(tmp_path) == {}


@pytest.mark.parametrize("inject", [False, True], ids=["interposed", "interposed+injected"])
def test_nvtx_exported_functions(tmp_path, inject):
    """A program linked against a shared NVTX library: its calls reach our exported
    functions; with NVTX_INJECTION64_PATH set too, the library forwards them to our
    injected callbacks as well, and each event is still recorded once."""
    require(INTEROP)
    env = {"NVTX_INJECTION64_PATH": LIBPROF if inject else NO_TOOL}
    plain, profiled = run([INTEROP], tmp_path, env)
    assert profiled.stdout == plain.stdout == "nvtx_interop: done\n"
    threads = nvtx_records(tmp_path)
    assert len(threads) == 1
    (recs,) = threads.values()
    assert [r[:3] for r in recs] == annotated_sequence("x")
    check_range_ids(recs)


def test_nvtx_ranges_exact_when_the_ring_overflows(tmp_path):
    """300 000 pairs of nested ranges into a 64 KiB ring: most records are dropped, the
    actions table still counts every range (a POP names its range; the POPs a full ring
    dropped are summed per name) and says what was dropped."""
    flood = os.path.join(FIXTURES, "nvtx_flood")
    require(flood)
    rounds = 300000
    proc = profile([flood, str(rounds)], tmp_path,
                   env={"NVTX_INJECTION64_PATH": LIBPROF, "PROF_RING_KB": "64"})
    assert proc.stdout == "nvtx_flood %d\n" % rounds
    rep = subprocess.run([build_path("bin", "profreport"), "--format", "json", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    import json
    rows = {a["name"]: a["calls"] for a in json.loads(rep.stdout)["actions"]}
    assert rows["flood-outer"] == rounds and rows["flood-inner"] == rounds, rows
    dump = subprocess.run([build_path("bin", "profreport"), "dump", trace_files(tmp_path)[0]],
                          capture_output=True, text=True, check=True).stdout
    assert " NVTX_LOST " in dump, "the ring did not overflow: the test proves nothing"
    assert "NVTX ranges' records were dropped" in rep.stderr
    assert "NVTX tables count them" in rep.stderr or "NVTX tables include them" in rep.stderr



def test_step_names_an_nvtx_range(tmp_path):
    """--step NAME: each NVTX range of that name is a training step, named alone or after
    its domain ("libs-domain: registered-a" pushed in a domain); thread a and thread b
    each push their own ranges once."""
    require(THREADS)
    profile([THREADS], tmp_path, env={"NVTX_INJECTION64_PATH": LIBPROF})
    for name in ("outer-a", "registered-b", "libs-domain: registered-b"):
        procs = report_json(tmp_path, "--step", name)["processes"]
        (st,) = [p["steps"] for p in procs if p["steps"]]
        assert st["source"] == "each call of the --step name" and st["step_name"] == name
        assert st["count"] == 1 and st["steps"][0]["ns"] > 0, st
        # a C program: no Python whose calls went unrecorded, no PyTorch phases to find
        assert st["startup_import_ns"] == 0 and st["parts_not_found"] == [], st
    text = report(tmp_path, "--step", "outer-a").stdout
    assert "imports 0 ns" in text and "not known" not in text and "told apart" not in text, text
