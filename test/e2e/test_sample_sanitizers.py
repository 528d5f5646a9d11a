"""Sampling under AddressSanitizer and ThreadSanitizer builds of libprof.so (`make
san-stress`, part of `make check-san`): the stress program (threads that malloc, dlopen,
fork and start short-lived threads, then exit() with workers running, at 1000 Hz) runs
ROUNDS times against each build, preloaded after the sanitizer's runtime as a sanitized
program would load it. Each round: exit 0, every forked child ended well, samples written,
and no report from the sanitizer.

Found by it (each failed these rounds before its fix): a thread started through the
sanitizer's pthread_create ran our trampoline before the sanitizer had registered it
(ASan: stack-buffer-overflow "in thread T-1", CHECK failures); a forked child started the
collector thread (ASan: a hang in its thread registry; TSan: "starting new threads after
multi-threaded fork is not supported"); TSan's own start called our sigaction and
pthread_setspecific before its state existed (a crash in __tsan_func_entry); the sample
handler's first unw_backtrace in a thread allocated libunwind's thread-local storage
(TSan: "signal-unsafe call inside of a signal"); the unwinder's table of loaded objects,
remade while a dlclose ran the library's destructors, still listed the library once it was
unmapped, and a sample TSan had held until that dlclose returned read its code (SIGSEGV
without a report, in about one TSan round in ten; test_stacks.py's unload_stale shows it
without a sanitizer).

The loader's name of an object is read in our dl_iterate_phdr callbacks; TSan's interceptor
clears the name's characters of their history but not its terminating NUL, so reading the
NUL of an object another thread was still loading was reported as a race when the name's
length was a multiple of 8 (seen only in a checkout whose path had that length): the
libraries these tests load are copied to paths of every length modulo 8, and
test_fork_during_dlopen_under_sanitizer forks while another thread is inside a dlopen.

The sanitized libraries come from the environment (PROF_SAN_ASAN_PRELOAD,
PROF_SAN_TSAN_PRELOAD: the runtime, then libprof.so); without them the test is skipped.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import build_path, report

FIXTURES = build_path("test", "fixtures", "stacks")
ROUNDS = int(os.environ.get("PROF_SAN_ROUNDS", "5"))
REPORTS = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
                     r"CHECK failed|runtime error:")

SANITIZERS = {
    "asan": ("PROF_SAN_ASAN_PRELOAD", {}),
    # The stress program leaves through exit() with its worker threads still running, on
    # purpose (exit under sampling is what it tests): TSan calls those threads leaked.
    "tsan": ("PROF_SAN_TSAN_PRELOAD", {"TSAN_OPTIONS": "report_thread_leaks=0"}),
}


def sanitized_env(sanitizer, out, run_id):
    variable, options = SANITIZERS[sanitizer]
    preload = os.environ.get(variable)
    if not preload:
        pytest.skip("%s is not set: `make san-stress` builds the sanitized libprof.so and "
                    "runs this" % variable)
    env = dict(os.environ)
    env.update(options)
    env.update({"LD_PRELOAD": preload, "PROF_OUTPUT_DIR": str(out), "PROF_SAMPLE_HZ": "1000",
                "PROF_RUN_ID": run_id})
    return env


def library_copy(tmp_path, name, residue):
    """A copy of the fixture library NAME at a path whose length is RESIDUE modulo 8."""
    folder = tmp_path / "libs"
    folder.mkdir(exist_ok=True)
    stem = str(folder / name[:-3])
    path = stem + "x" * ((residue - len(stem + ".so")) % 8) + ".so"
    assert len(path) % 8 == residue
    shutil.copy(os.path.join(FIXTURES, name), path)
    return path


@pytest.mark.parametrize("residue", range(8))
@pytest.mark.parametrize("sanitizer", sorted(SANITIZERS))
def test_fork_during_dlopen_under_sanitizer(tmp_path, sanitizer, residue):
    env = sanitized_env(sanitizer, tmp_path / "out", "dl-%s-%d" % (sanitizer, residue))
    library = library_copy(tmp_path, "libslow_init.so", residue)
    proc = subprocess.run([os.path.join(FIXTURES, "loader_race"), library], env=env,
                          capture_output=True, text=True, timeout=60)
    found = REPORTS.search(proc.stderr)
    assert not found, proc.stderr[max(0, found.start() - 2000):found.start() + 4000]
    assert proc.returncode == 0 and "loader_race: loaded, child 0" in proc.stdout, \
        proc.stdout + proc.stderr[-4000:]


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("sanitizer", sorted(SANITIZERS))
def test_sampling_stress_under_sanitizer(tmp_path, sanitizer, round_):
    out = tmp_path / "out"
    env = sanitized_env(sanitizer, out, "san-%s-%d" % (sanitizer, round_))
    proc = subprocess.run([os.path.join(FIXTURES, "sample_stress"),
                           library_copy(tmp_path, "libburn_c.so", round_ % 8), "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    found = REPORTS.search(proc.stderr)
    assert not found, proc.stderr[max(0, found.start() - 2000):found.start() + 4000]
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert "all malloc, dlopen, fork, thread loops ran; bad children 0" in proc.stdout, \
        proc.stdout + proc.stderr[-4000:]
    rep = report(out, "--samples", "--all-runs")
    total = int(re.match(r"CPU samples: (\d+)", rep.stdout).group(1))
    # 2 s of four busy threads at 1000 Hz of CPU time, slowed by the sanitizer
    assert total > 300, rep.stdout[:400]
    # most samples have a stack (some are taken while a fork is under way: none then)
    named = sum(int(m.group(1)) for m in
                re.finditer(r"#\d+\s+(\d+) samples[^\n]*\n    \S", rep.stdout))
    assert named > total // 4, rep.stdout[:2000]
