"""The Parquet dataset: idempotent re-ingest, grown-file append, parallel == serial, read-back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import logscope
from logscope.dataset import MANIFEST, ingest_to_dataset, scan, tables_in
from tests.conftest import CORPUS

LOGS = sorted(CORPUS.glob("*.log"))
SPEC = CORPUS / "generated-spec-pilot-c32k-np2.log"
# ts of llama-server lines without a clock is inferred back from the file's mtime: it depends on
# when the part was read, so the grown-file comparison leaves it out (t_rel is compared)
TS = ["ts", "ts_source", "ts_inferred"]


def _key(df: pl.DataFrame) -> list[str]:
    keys = ("file", "line", "kind", "run", "slot", "task", "t_start")
    return [c for c in keys if c in df.columns]


def _sorted(df: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    df = df.select(columns)
    return df.sort(_key(df), nulls_last=True)


def _dataset_table(ds, table: str, like: pl.DataFrame) -> pl.DataFrame:
    return _sorted(scan(ds, table).collect(), like.columns)


def _copy_logs(tmp_path, n=None):
    d = tmp_path / "logs" / "gpu-box"
    d.mkdir(parents=True)
    out = []
    for p in LOGS[:n]:
        shutil.copy(p, d / p.name)
        out.append(d / p.name)
    return out


def test_reingest_unchanged_adds_nothing(tmp_path):
    logs = _copy_logs(tmp_path, 2)
    ds = tmp_path / "ds"
    first = ingest_to_dataset([str(p) for p in logs], ds, workers=1)
    assert first["ingested"] == 2 and first["skipped"] == 0 and first["parts"] > 0
    files_before = sorted(p.relative_to(ds) for p in ds.rglob("*.parquet"))
    manifest = json.loads((ds / MANIFEST).read_text())
    assert all(e["lines"] == len(Path(e["realpath"]).read_bytes().splitlines())
               for e in manifest["files"].values())
    again = ingest_to_dataset(str(tmp_path / "logs" / "**" / "*.log"), ds, workers=1)
    assert (again["ingested"], again["appended"], again["skipped"], again["parts"]) == (0, 0, 2, 0)
    assert sorted(p.relative_to(ds) for p in ds.rglob("*.parquet")) == files_before
    assert json.loads((ds / MANIFEST).read_text()) == manifest


def test_grown_file_appends_only_new_lines(tmp_path):
    log = tmp_path / "box" / "server.log"
    log.parent.mkdir()
    data = SPEC.read_bytes().splitlines(keepends=True)
    half = len(data) // 2
    log.write_bytes(b"".join(data[:half]) + data[half][:12])  # a line being written
    ds = tmp_path / "ds"
    r1 = ingest_to_dataset([str(log)], ds, workers=1)
    assert r1["ingested"] == 1 and r1["lines"] == half  # the partial line waits
    assert r1["pending_bytes"] == 12
    log.write_bytes(b"".join(data))  # the writer finished: the same file, grown
    r2 = ingest_to_dataset([str(log)], ds, workers=1)
    assert (r2["appended"], r2["lines"]) == (1, len(data) - half)
    assert ingest_to_dataset([str(log)], ds, workers=1)["skipped"] == 1
    entry = json.loads((ds / MANIFEST).read_text())["files"][str(log.resolve())]
    assert (entry["lines"], entry["bytes"]) == (len(data), len(b"".join(data)))

    full = logscope.read(str(log))
    for table in ("lines_classified", "prompt_eval", "eval", "draft_acceptance", "release",
                  "decode_progress", "task_launch"):
        want = full[table]
        cols = [c for c in want.columns if c not in TS]
        got = _dataset_table(ds, table, want)
        # every line once, numbered as in the whole file (not restarting at 1 in the new part)
        assert_frame_equal(got.select(cols), _sorted(want, cols), check_dtypes=False)


def test_different_file_at_same_path_is_new(tmp_path):
    log = tmp_path / "h" / "server.log"
    log.parent.mkdir()
    shutil.copy(LOGS[0], log)
    ds = tmp_path / "ds"
    ingest_to_dataset([str(log)], ds, workers=1)
    shutil.copy(LOGS[1], log)
    r = ingest_to_dataset([str(log)], ds, workers=1)
    assert r["ingested"] == 1 and r["appended"] == 0


def test_parallel_equals_serial(tmp_path):
    logs = [str(p) for p in _copy_logs(tmp_path)]
    serial = ingest_to_dataset(logs, tmp_path / "serial", workers=1)
    parallel = ingest_to_dataset(logs, tmp_path / "parallel", workers=2)
    assert {k: serial[k] for k in ("ingested", "lines", "parts")} == \
        {k: parallel[k] for k in ("ingested", "lines", "parts")}
    assert tables_in(tmp_path / "serial") == tables_in(tmp_path / "parallel")
    for table in tables_in(tmp_path / "serial"):
        a = scan(tmp_path / "serial", table).collect()
        b = scan(tmp_path / "parallel", table).collect()
        cols = [c for c in a.columns if c != "prefill_tick_list"]  # list[struct] does not sort
        assert_frame_equal(_sorted(a, cols), _sorted(b, cols), check_dtypes=False)


def test_read_back_equals_read_for_requests(tmp_path):
    logs = _copy_logs(tmp_path)
    ds = tmp_path / "ds"
    ingest_to_dataset([str(p) for p in logs], ds)
    back = pl.scan_parquet(str(ds / "requests" / "**" / "*.parquet"), hive_partitioning=True,
                           hive_schema={"engine": pl.String, "host": pl.String,
                                        "date": pl.String}).collect()
    assert set(back["host"].unique()) == {"gpu-box"}  # the parent directory: no wrapper
    assert set(back["engine"].unique()) == {"llama-server"}
    for p in logs:  # one read per file: run numbers are per file either way
        want = logscope.read(str(p))["requests"]
        got = back.filter(pl.col("file") == str(p))
        assert got.height == want.height
        assert_frame_equal(_sorted(got, want.columns), _sorted(want, want.columns),
                           check_dtypes=False)


def test_journald_host_and_errors(tmp_path):
    log = tmp_path / "x" / "j.log"
    log.parent.mkdir()
    body = SPEC.read_text().splitlines()[:40]
    log.write_text("".join(f"Nov 30 07:00:00 gpu7 llama-server[12]: {line}\n" for line in body))
    ds = tmp_path / "ds"
    ingest_to_dataset([str(log)], ds, workers=1)
    assert {p.name for p in ds.glob("*/engine=*/host=*")} == {"host=gpu7"}
    with pytest.raises(logscope.sources.InputError):
        ingest_to_dataset([str(tmp_path / "missing.log")], ds)


def test_cli_ingest_dataset(tmp_path):
    from click.testing import CliRunner

    from logscope.cli import cli

    _copy_logs(tmp_path, 2)
    pattern = str(tmp_path / "logs" / "**" / "*.log")
    ds = str(tmp_path / "ds")
    r = CliRunner().invoke(cli, ["ingest", pattern, "--dataset", ds, "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("2 file(s) ingested, 0 appended, 0 skipped")
    r = CliRunner().invoke(cli, ["ingest", pattern, "--dataset", ds, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["skipped"] == 2
    r = CliRunner().invoke(cli, ["ingest", pattern, "--dataset", ds, "--out", ds])
    assert r.exit_code == 2 and "not both" in r.output


def test_sglang_and_vllm_rows_land_in_their_engine_partitions(tmp_path):
    from tests.conftest import FIXTURES

    files = [str(p) for p in [*sorted(FIXTURES.glob("sglang/v0.4.4-*.log")),
                              *sorted(FIXTURES.glob("sglang/v0.3.4-*.log")),
                              *sorted(FIXTURES.glob("vllm/*.log"))[:3]]]
    ds = tmp_path / "ds"
    ingest_to_dataset(files, ds, workers=1)
    have = tables_in(ds)
    for f in files:
        for table, want in logscope.read(f).tables.items():
            if table.startswith("_") or want.height == 0:
                continue
            got = scan(ds, table).filter(pl.col("file") == f).collect()
            assert got.height == want.height, (f, table)
            assert table in have
            if "engine" in want.columns:  # the partition holds the row's own engine
                assert sorted(got["engine"].fill_null("unknown")) == \
                    sorted(want["engine"].fill_null("unknown"))
    hosts = {p.name for p in ds.glob("*/engine=sglang/host=*")}
    assert "host=sglang-1" in hosts  # the docker compose service of v0.3.4-date-compose.log
