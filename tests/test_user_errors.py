"""User errors: one clear ``Error:`` line on stderr, a documented exit code, no traceback.

Exit codes (README): 1 no server lines found (empty input, unknown format) or a user error a
command reports (the --out directory cannot be written); 2 bad input (missing file, directory,
unreadable, corrupt .gz) or a bad option.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from logscope.cli import cli
from tests.conftest import CORPUS

LOG = CORPUS / "generated-ngram-c4k-np1.log"


def run(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def one_error(r, code: int, *needles: str) -> str:
    """The run failed with ``code`` and stderr is one ``Error:`` line naming every needle."""
    assert r.exit_code == code, (r.exit_code, r.output)
    assert "Traceback" not in r.stderr
    errors = r.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("Error:"), r.stderr
    for n in needles:
        assert n in errors[0], (n, errors[0])
    return errors[0]


def test_missing_file(tmp_path):
    p = tmp_path / "nope.log"
    one_error(run("ingest", p), 2, str(p), "no such file")


def test_missing_glob(tmp_path):
    one_error(run("ingest", tmp_path / "*.log"), 2, "no file matches this pattern")


def test_directory(tmp_path):
    one_error(run("ingest", tmp_path), 2, str(tmp_path), "is a directory")


def test_permission_denied(tmp_path):
    p = tmp_path / "secret.log"
    p.write_bytes(LOG.read_bytes())
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as a user (root) who can read a mode 000 file")
        one_error(run("ingest", p), 2, str(p), "permission denied")
    finally:
        p.chmod(0o644)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    one_error(run("ingest", p), 1, str(p), "empty input (0 lines)")


def test_empty_stdin():
    one_error(run("ingest", "-", input=b""), 1, "empty input")


def test_unknown_format(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("dear diary\ntoday I parsed nothing\n")
    one_error(run("ingest", p), 1, "no llama-server, SGLang or vLLM lines found", "2 line(s)",
              "is this a server log?")


def test_wrong_engine_is_unknown_format():
    one_error(run("ingest", "--engine", "vllm", LOG), 1, "no vllm lines found")


def test_corrupt_gzip_truncated(tmp_path):
    p = tmp_path / "cut.log.gz"
    p.write_bytes(gzip.compress(LOG.read_bytes())[:200])
    one_error(run("ingest", p), 2, str(p), "corrupt gzip file")


def test_corrupt_gzip_bad_crc(tmp_path):
    data = bytearray(gzip.compress(LOG.read_bytes()))
    data[-8] ^= 0xFF  # the CRC32 of the trailer
    p = tmp_path / "crc.log.gz"
    p.write_bytes(bytes(data))
    one_error(run("ingest", p), 2, "corrupt gzip file", "CRC")


def test_out_not_writable_under_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    one_error(run("ingest", LOG, "--out", f / "frames"), 1, "cannot write the tables to",
              "Not a directory")


def test_out_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    one_error(run("ingest", LOG, "--out", f), 2, "'--out'", "is a file")


def test_out_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        if os.access(d, os.W_OK):
            pytest.skip("running as a user (root) who can write a mode 555 directory")
        one_error(run("ingest", LOG, "--out", d), 1, "cannot write the tables to",
                  "Permission denied")
    finally:
        d.chmod(0o755)


def test_bad_engine():
    one_error(run("ingest", "--engine", "ollama", LOG), 2, "'--engine'", "'ollama'",
              "llama-server")


def test_missing_argument():
    one_error(run("ingest"), 2, "Missing argument 'PATHS'")
    one_error(run("explain"), 2, "Missing argument 'LOG:LINE'")


def test_explain_errors(tmp_path):
    one_error(run("explain", tmp_path / "nope.log:3"), 2, "no such file")
    one_error(run("explain", tmp_path / "nope.log"), 2, "expected LOG:LINE")
    one_error(run("explain", f"{LOG}:100000"), 2, "no line 100000")
    one_error(run("explain", "--engine", "tgi", f"{LOG}:1"), 2, "'--engine'")


def test_formats_bad_engine():
    one_error(run("formats", "--engine", "tgi"), 2, "'--engine'")


@pytest.mark.parametrize("case", ["missing", "directory", "gzip", "empty", "engine", "out"])
def test_no_traceback_from_the_real_process(tmp_path, case):
    """The console entry point (not CliRunner): one Error line, exit code, no traceback."""
    f = tmp_path / "afile"
    f.write_text("x")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    bad_gz = tmp_path / "x.gz"
    bad_gz.write_bytes(b"\x1f\x8b\x08\x00garbage")
    args, code = {
        "missing": ([tmp_path / "nope.log"], 2),
        "directory": ([tmp_path], 2),
        "gzip": ([bad_gz], 2),
        "empty": ([empty], 1),
        "engine": (["--engine", "x", LOG], 2),
        "out": ([LOG, "--out", f / "sub"], 1),
    }[case]
    r = subprocess.run([sys.executable, "-m", "logscope", "ingest", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("Error:"), r.stderr
    assert r.stdout == ""


H200 = CORPUS.parent.parent / "telemetry" / "h200"
PRESSURE, COLORS = H200 / "generated-gpu-pressure-np4-ctxshift", H200 / "generated-gpu-colors-tty"


def test_telemetry_of_another_run_is_one_error_line(tmp_path):
    """A weak clock fit (the other run's telemetry) is an error naming the log, not a number."""
    line = one_error(run("report", f"{COLORS}.log", f"{PRESSURE}.smi.csv"), 1,
                     "generated-gpu-colors-tty.log", "--start-time", "cannot place this log")
    assert "ISO 8601" in line
    one_error(run("card", f"{PRESSURE}.log", "--telemetry", f"{COLORS}.smi.csv", "-o",
                  tmp_path / "c.png"), 1, "generated-gpu-pressure-np4-ctxshift.log",
              "--start-time")


@pytest.mark.parametrize("cmd", ["report", "compare", "card", "sql"])
def test_bad_start_time_is_one_line_naming_iso(cmd, tmp_path):
    log, tele = f"{COLORS}.log", f"{COLORS}.smi.csv"
    args = {"report": ["report", log, tele], "compare": ["compare", log, log, tele],
            "card": ["card", log, "--telemetry", tele, "-o", tmp_path / "c.png"],
            "sql": ["sql", "SELECT 1", log, tele]}[cmd]
    line = one_error(run(*args, "--start-time", "20:25 yesterday"), 2, "ISO 8601")
    assert "not a valid float" not in line


def test_start_times_and_telemetry_that_cannot_be_paired():
    one_error(run("compare", f"{PRESSURE}.log", f"{COLORS}.log", f"{PRESSURE}.smi.csv",
                  f"{COLORS}.smi.csv", "--start-time", "1", "--start-time", "2",
                  "--start-time", "3"), 2, "--start-time given 3 times for 2 LOG(s)")
    one_error(run("compare", f"{PRESSURE}.log", f"{COLORS}.log", LOG, f"{PRESSURE}.smi.csv",
                  f"{COLORS}.smi.csv"), 1, "3 logs and 2 telemetry recordings", "LOG=CSV")
