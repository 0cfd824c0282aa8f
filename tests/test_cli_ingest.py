"""``logscope ingest``: the JSON contract, Parquet output and user errors."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import polars as pl
from click.testing import CliRunner

import logscope
from logscope.cli import cli
from tests.conftest import CORPUS

LOG = CORPUS / "generated-ngram-c4k-np1.log"


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input)


def test_json_contract_counts_every_line():
    r = run("ingest", "--json", str(LOG))
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert set(s) >= {"lines", "events", "requests", "unrecognized", "engines"}
    assert s["lines"] == len(LOG.read_text().splitlines())
    assert sum(s["events"].values()) + s["ignored"] + s["other"] + s["unrecognized"] == s["lines"]
    assert s["engines"] == ["llama-server"]
    assert s["requests"] == 6


def test_grep_counts_equal_event_counts(corpus_logs):
    anchors = {"prompt_eval": "prompt eval time =", "eval": re.compile(r"(\| +|^ *)eval time ="),
               "total": "total time =", "release": "stop processing:",
               "task_launch": "processing task", "draft_acceptance": "draft acceptance",
               "decode_progress": "tg =", "prompt_progress": "prompt processing, n_tokens"}
    for log in corpus_logs + sorted(CORPUS.glob("seed000-*.log")):
        text = log.read_text()
        ev = logscope.read(str(log)).summary()["events"]
        for kind, anchor in anchors.items():
            n = sum(1 for line in text.splitlines()
                    if (anchor.search(line) if isinstance(anchor, re.Pattern) else anchor in line))
            assert ev.get(kind, 0) == n, (log.name, kind)


def test_out_writes_parquet(tmp_path):
    r = run("ingest", str(LOG), "--out", str(tmp_path / "frames"))
    assert r.exit_code == 0, r.output
    req = pl.read_parquet(tmp_path / "frames" / "requests.parquet")
    assert req.height == 6
    assert (tmp_path / "frames" / "prompt_eval.parquet").exists()


def test_stdin_and_gzip(tmp_path):
    gz = tmp_path / "x.log.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    a = json.loads(run("ingest", "--json", str(gz)).stdout)
    b = json.loads(run("ingest", "--json", "-", input=LOG.read_bytes()).stdout)
    assert a["events"] == b["events"] and a["requests"] == b["requests"] == 6


def test_missing_file_exit_2():
    r = run("ingest", "/nonexistent/server.log")
    assert r.exit_code == 2
    assert "no such file" in r.stderr


def test_directory_exit_2(tmp_path):
    r = run("ingest", str(tmp_path))
    assert r.exit_code == 2 and "is a directory" in r.stderr


def test_no_server_lines_exit_1(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello\nworld\n")
    r = run("ingest", "--json", str(p))
    assert r.exit_code == 1
    assert json.loads(r.stdout)["lines"] == 2
    assert "no llama-server" in r.stderr


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    p = tmp_path / "bad.log"
    p.write_bytes(LOG.read_bytes() + b"\xff\xfe junk \xc3\x28\n")
    s = json.loads(run("ingest", "--json", str(p)).stdout)
    assert s["files"][0]["bad_utf8"] == 1
    assert s["lines"] == len(LOG.read_text().splitlines()) + 1


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "logscope", "ingest", "--json", str(LOG)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["requests"] == 6
