"""Clocks a user can fix: a relative clock anchored to the file's mtime is said so in the
summary; --start-time (and --tz) anchor it; --tz reads printed local times in a zone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

import logscope
from logscope.engines.clock import (
    anchor_start,
    apply_tz,
    clock_summary,
    parse_start_datetime,
    parse_start_time,
)

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "fixtures" / "llama-server" / "corpus" / "generated-spec-pilot-c32k-np2.log"
TWO = ROOT / "fixtures" / "llama-server" / "two-runs-d-b10178-b10405.log"
SGLANG = ROOT / "fixtures" / "sglang" / "v0.4.4-retract-pressure.log"


def ingest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logscope", "ingest", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def copied(tmp_path) -> Path:
    """The log as a user gets it after copying it: its mtime is the copy's (set to a known
    date here)."""
    p = tmp_path / "server.log"
    shutil.copyfile(SPEC, p)
    t = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC).timestamp()
    os.utime(p, (t, t))
    return p


def test_the_summary_says_the_clock_comes_from_the_mtime(copied):
    r = ingest(str(copied))
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("clock:"))
    assert "modification time (2026-11-30 12:00:00 UTC)" in line and "--start-time" in line
    s = json.loads(ingest("--json", str(copied)).stdout)
    assert s["clock"][0]["sources"] == {"anchored:mtime": 199}
    assert s["clock"][0]["mtime"] == "2026-11-30 12:00:00 UTC"


def test_start_time_anchors_the_relative_clock(copied, tmp_path):
    start = "2026-10-01T09:30:00+02:00"
    r = ingest(str(copied), "--start-time", start, "--out", str(tmp_path / "f"))
    assert r.returncode == 0, r.stderr
    assert "clock: wall clock anchored to --start-time" in r.stdout
    pe = pl.read_parquet(tmp_path / "f" / "prompt_eval.parquet")
    zero = datetime(2026, 10, 1, 7, 30, tzinfo=UTC)
    row = pe.row(0, named=True)
    assert row["ts_source"] == "anchored:start-time" and row["ts_inferred"] is False
    assert row["ts"] == zero + timedelta(microseconds=round(row["t_rel"] * 1e6))
    req = pl.read_parquet(tmp_path / "f" / "requests.parquet").row(0, named=True)
    assert req["ts_start"] == zero + timedelta(microseconds=round(req["t_start"] * 1e6))


def test_tz_gives_the_zone_of_a_start_time_without_offset():
    assert parse_start_datetime("2026-10-01T09:30:00", "Europe/Berlin") == datetime(
        2026, 10, 1, 7, 30, tzinfo=UTC)
    assert parse_start_datetime("2026-10-01T09:30:00", "+08:00") == datetime(
        2026, 10, 1, 1, 30, tzinfo=UTC)
    assert parse_start_datetime("2026-10-01T09:30:00") == datetime(2026, 10, 1, 9, 30, tzinfo=UTC)
    assert parse_start_time("1790839800") == 1790839800.0  # Unix s
    assert parse_start_time("2026-10-01T07:30:00Z") == 1790839800.0
    assert parse_start_time("2026-10-01T09:30:00+02:00") == 1790839800.0
    a = anchor_start(logscope.read(str(SPEC)), "2026-10-01T09:30:00", tz="Europe/Berlin")
    b = anchor_start(logscope.read(str(SPEC)), "2026-10-01T07:30:00Z")
    assert a["eval"]["ts"].to_list() == b["eval"]["ts"].to_list()


def test_start_time_anchors_the_first_run_only():
    logs = anchor_start(logscope.read(str(TWO)), "2026-10-01T00:00:00Z")
    lc = pl.concat([df.select("run", "ts_source") for df in logs.tables.values()
                    if {"run", "ts_source", "t_rel"} <= set(df.columns) and df.height])
    assert set(lc.filter(pl.col("run") == 1)["ts_source"].drop_nulls()) == {
        "anchored:start-time"}
    assert set(lc.filter(pl.col("run") == 2)["ts_source"].drop_nulls()) == {"anchored:mtime"}
    note = clock_summary(logscope.read(str(TWO)))[0]["note"]
    assert "1 earlier server run(s) have no wall clock" in note


def test_tz_reads_printed_local_times_in_that_zone():
    logs = logscope.read(str(SGLANG))
    name = next(k for k, v in logs.tables.items() if "ts_source" in v.columns and v.height
                and (v["ts_source"] == "log").any())
    before = logs[name]["ts"].to_list()
    after = apply_tz(logs, "Asia/Shanghai")[name]["ts"].to_list()
    assert all(b - a == timedelta(hours=8) for a, b in zip(after, before, strict=True)
               if a is not None)
    assert "read as UTC (--tz ZONE" in clock_summary(logs)[0]["note"]
    assert "read as Asia/Shanghai" in clock_summary(logs, "Asia/Shanghai")[0]["note"]


def test_bad_start_time_or_zone_is_exit_2(copied):
    r = ingest(str(copied), "--start-time", "yesterday")
    assert r.returncode == 2 and "ISO 8601" in r.stderr
    r = ingest(str(copied), "--tz", "Mars/Olympus")
    assert r.returncode == 2 and "unknown time zone" in r.stderr
