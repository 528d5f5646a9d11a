"""PROF_REDACT (on by default): credential-like argv values never reach the trace file."""
import sys

import pytest

from conftest import profile, report_json, trace_files

PY = sys.executable
SECRETS = ["hunter2-pw", "tok-abc123", "apik-9876", "s3cr3t-env", "pw-4444", "hf-xyz"]
ARGS = ["--password=hunter2-pw", "--token", "tok-abc123", "--api-key=apik-9876",
        "MY_SECRET=s3cr3t-env", "--db-passwd", "pw-4444", "--HF_TOKEN", "hf-xyz",
        "--name", "keep-this-name"]
CODE = "def work():\n    return 1\nwork()\n"


def trace_bytes(outdir):
    files = trace_files(outdir)
    assert files, "no trace written"
    return b"".join(open(f, "rb").read() for f in files)


def test_secrets_are_not_in_the_trace_bytes(tmp_path):
    profile([PY, "-c", CODE] + ARGS, tmp_path)
    data = trace_bytes(tmp_path)
    for s in SECRETS:
        assert s.encode() not in data, s
    assert b"keep-this-name" in data and b"<redacted>" in data
    argv = report_json(tmp_path)["processes"][0]["meta"]["argv"]
    assert argv[-11:] == ["--password=<redacted>", "--token", "<redacted>",
                          "--api-key=<redacted>", "MY_SECRET=<redacted>", "--db-passwd",
                          "<redacted>", "--HF_TOKEN", "<redacted>", "--name", "keep-this-name"]


@pytest.mark.parametrize("word", ["0", "off"])
def test_redaction_can_be_turned_off(tmp_path, word):
    profile([PY, "-c", CODE] + ARGS, tmp_path, env={"PROF_REDACT": word})
    data = trace_bytes(tmp_path)
    for s in SECRETS:
        assert s.encode() in data, s
