"""The PROF_* table is typed: booleans take the usual words, numbers are checked, and a
value a setting does not accept is named once on stderr, then the default (or the
nearest bound) is used."""
import os
import subprocess
import sys

import pytest

from conftest import LIBPROF, PROFREPORT, PROFRUN, profile, report, trace_files

PY = sys.executable
# A Python program that also starts a child of its own: the message must not repeat there.
SCRIPT = ("import subprocess, sys\n"
          "def work():\n    return sum(range(10))\n"
          "work()\n"
          "subprocess.run([sys.executable, '-c', 'pass'])\n")


@pytest.mark.parametrize("word", ["1", "true", "TRUE", "yes", "On"])
def test_disable_accepts_every_true_word(tmp_path, word):
    profile([PY, "-c", SCRIPT], tmp_path, env={"PROF_DISABLE": word})
    assert trace_files(tmp_path) == []


@pytest.mark.parametrize("word", ["0", "false", "No", "OFF"])
def test_python_layer_off_with_every_false_word(tmp_path, word):
    profile([PY, "-c", SCRIPT], tmp_path, env={"PROF_PYTHON": word})
    # Every profiled process writes its (small) trace; with the Python layer off it holds
    # no Python record.
    files = trace_files(tmp_path)
    assert files
    for f in files:
        dump = subprocess.run([PROFREPORT, "dump", f], capture_output=True, text=True,
                              check=True).stdout
        assert " PY_FUNC " not in dump and " PY_NODE " not in dump and " PY_STATS " not in dump
    assert "work" not in report(tmp_path, "--python", "--all-runs", check=False).stdout


def test_python_layer_on_by_default(tmp_path):
    profile([PY, "-c", SCRIPT], tmp_path)
    assert trace_files(tmp_path) != []
    assert "work" in report(tmp_path, "--python").stdout


def test_bad_boolean_is_named_once_and_the_default_used(tmp_path):
    proc = profile([PY, "-c", SCRIPT], tmp_path, env={"PROF_DISABLE": "maybe"})
    line = ("profrun: PROF_DISABLE=maybe is not a boolean (accepted: 1/0, true/false, "
            "yes/no, on/off (any case)); using the default 0")
    assert proc.stderr.count(line) == 1, proc.stderr
    assert trace_files(tmp_path) != []  # default: profiling stays on


def test_bad_number_is_named_once_and_the_default_used(tmp_path):
    proc = profile([PY, "-c", SCRIPT], tmp_path, env={"PROF_RING_KB": "abc"})
    line = ("profrun: PROF_RING_KB=abc is not a number (accepted: a whole number "
            "64..65536); using the default 1024")
    assert proc.stderr.count(line) == 1, proc.stderr
    dump = subprocess.run([os.path.join(os.path.dirname(PROFRUN), "profreport"), "dump",
                           trace_files(tmp_path)[0]], capture_output=True, text=True).stdout
    assert "ring_bytes" in dump and "1048576" in dump


def test_number_out_of_range_is_clamped_and_said(tmp_path):
    proc = profile([PY, "-c", SCRIPT], tmp_path, env={"PROF_RING_KB": "1"})
    assert proc.stderr.count("PROF_RING_KB=1 is out of range (accepted: a whole number "
                             "64..65536); clamped to 64") == 1, proc.stderr
    dump = subprocess.run([os.path.join(os.path.dirname(PROFRUN), "profreport"), "dump",
                           trace_files(tmp_path)[0]], capture_output=True, text=True).stdout
    assert "65536" in dump


def test_preloaded_without_profrun_says_it_too(tmp_path):
    env = dict(os.environ, LD_PRELOAD=LIBPROF, PROF_OUTPUT_DIR=str(tmp_path),
               PROF_FLUSH_MS="soon")
    proc = subprocess.run([PY, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert proc.stderr.count("PROF_FLUSH_MS=soon is not a number") == 1, proc.stderr


def test_quiet_silences_the_message(tmp_path):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_RING_KB": "abc",
                                                      "PROF_QUIET": "yes"})
    assert "PROF_RING_KB" not in proc.stderr


def test_help_shows_types_and_ranges():
    out = subprocess.run([PROFRUN, "--help"], capture_output=True, text=True).stdout
    assert "1/0, true/false, yes/no, on/off" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("PROF_")}
    assert rows["PROF_RING_KB"].split()[1:3] == ["int", "64..65536"]
    assert rows["PROF_DISABLE"].split()[1] == "bool"
    assert rows["PROF_OUTPUT_DIR"].split()[1] == "string"


# ---- issue 20: one way to write numbers; window signals that cannot work are refused ----

@pytest.mark.parametrize("text", ["0x10", "1e3", " 2", "+2", "inf", "nan", "-1", "2s", "."])
def test_seconds_are_written_as_the_integer_settings_are(tmp_path, text):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_DELAY": text})
    assert "PROF_DELAY=%s is not a number of seconds" % text in proc.stderr, proc.stderr


@pytest.mark.parametrize("text", ["0x10", "1e3", " 64", "+64"])
def test_integers_refuse_the_same_texts(tmp_path, text):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_RING_KB": text})
    assert "PROF_RING_KB=%s is not a number" % text in proc.stderr, proc.stderr


@pytest.mark.parametrize("text", ["2", "0.5", "10."])
def test_seconds_accept_digits_and_a_fraction(tmp_path, text):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_DURATION": text})
    assert "PROF_DURATION" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("sig", ["9", "KILL", "19", "11", "SEGV", "CHLD", "17", "RTMIN+5", "TERM",
                                 "PIPE"])
def test_window_signal_that_cannot_work_is_refused_with_its_reason(tmp_path, sig):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_WINDOW_SIGNAL": sig})
    lines = [l for l in proc.stderr.splitlines() if "PROF_WINDOW_SIGNAL" in l]
    assert len(lines) == 1, proc.stderr
    assert "cannot open and close the capture window" in lines[0], lines[0]
    assert "handled or ignored by the program" not in proc.stderr


@pytest.mark.parametrize("sig", ["USR1", "USR2", "RTMIN+3"])
def test_window_signal_for_the_user_is_taken(tmp_path, sig):
    proc = profile([PY, "-c", "pass"], tmp_path, env={"PROF_WINDOW_SIGNAL": sig})
    assert "PROF_WINDOW_SIGNAL" not in proc.stderr and "signal" not in proc.stderr, proc.stderr
