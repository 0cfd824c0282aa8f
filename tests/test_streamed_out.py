"""A streamed ingest (``read(..., out=DIR)``, ``logscope ingest --out DIR``) gives the tables an
in-memory ingest gives, written to Parquet, and leaves nothing else behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import logscope
from logscope.cli import cli
from logscope.cli import ingest as cli_ingest
from logscope.cli.ingest import write_tables
from logscope.engines import clock, llama_server, store
from logscope.ingest import read
from logscope.telemetry.columns import null_energy, null_energy_table

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "fixtures").rglob("*.log"))
# every engine fixture and every fifth wrapped log; LOGSCOPE_TEST_ALL_LOGS=1: all of them
SAMPLE = LOGS if os.environ.get("LOGSCOPE_TEST_ALL_LOGS") else [
    p for i, p in enumerate(LOGS) if "/wild/" not in p or i % 5 == 0]


def _same(a: logscope.Logs, b: logscope.Logs) -> None:
    assert sorted(a.tables) == sorted(b.tables)
    for name in a.tables:
        try:
            assert_frame_equal(a[name], b[name])
        except AssertionError as e:
            raise AssertionError(f"table {name}: {e}") from None
    assert a.summary() == b.summary()
    key = lambda d: d["file"]  # noqa: E731
    assert sorted(clock.clock_summary(a), key=key) == sorted(clock.clock_summary(b), key=key)


@pytest.mark.parametrize("log", SAMPLE)
def test_streamed_tables_are_the_in_memory_ones(log: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # requests built a few runs at a time, as on a long log
    monkeypatch.setattr(llama_server, "CHUNK_REQUESTS", 3)
    monkeypatch.chdir(ROOT)
    try:
        mem = read(log)
    except logscope.ingest.NoServerLines:
        with pytest.raises(logscope.ingest.NoServerLines):
            read(log, out=tmp_path)
        return
    # small blocks: a table streamed in many parts
    _same(mem, read(log, out=tmp_path, chunk_bytes=1 << 13))
    assert not [p for p in os.listdir(tmp_path) if p.startswith(store.SPILL_DIR)]


def test_several_files_out_of_name_order_and_small_blocks(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Files given out of name order (tables re-sorted), several engines, many blocks."""
    monkeypatch.setattr(llama_server, "CHUNK_REQUESTS", 2)
    monkeypatch.chdir(ROOT)
    logs = [p for p in LOGS if "/corpus/" in p][:2][::-1] + [
        next(p for p in LOGS if p.startswith("fixtures/sglang/")),
        next(p for p in LOGS if p.startswith("fixtures/vllm/"))]
    _same(read(logs, chunk_bytes=4096), read(logs, chunk_bytes=4096, out=tmp_path / "o"))


def test_cli_out_writes_what_the_in_memory_path_writes(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(store, "STREAM_FROM_BYTES", 0)  # stream even a small log
    streamed: list[object] = []
    real_read = logscope.ingest.read
    monkeypatch.setattr(logscope.ingest, "read",
                        lambda *a, **k: streamed.append(k.get("out")) or real_read(*a, **k))
    log = next(p for p in LOGS if "/corpus/" in p)
    r = CliRunner().invoke(cli, ["ingest", log, "--out", str(tmp_path / "s"), "--json"])
    assert r.exit_code == 0, r.output
    want = write_tables(null_energy(read(log)).tables, tmp_path / "m")
    got = sorted(os.listdir(tmp_path / "s"))
    assert got == sorted(p.name for p in want)
    for p in want:
        assert_frame_equal(pl.read_parquet(tmp_path / "s" / p.name), pl.read_parquet(p))
    assert streamed == [str(tmp_path / "s")]
    summary = json.loads(r.stdout)
    assert summary["requests"] == pl.read_parquet(tmp_path / "s" / "requests.parquet").height
    assert "energy_j" in pl.read_parquet(tmp_path / "s" / "requests.parquet").columns


def test_cli_out_streams_large_logs_only(tmp_path: Path) -> None:
    small = tmp_path / "a.log"
    small.write_text("x\n")
    assert not cli_ingest._large([str(small)])
    assert cli_ingest._large(["-"])
    with open(tmp_path / "big.log", "wb") as f:
        f.truncate(store.STREAM_FROM_BYTES)
    assert cli_ingest._large([str(small), str(tmp_path / "big.log")])


def test_on_table_rewrites_each_finished_table(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    log = next(p for p in LOGS if "/corpus/" in p)
    seen: list[str] = []

    def hook(name: str, df: pl.DataFrame) -> pl.DataFrame:
        seen.append(name)
        return null_energy_table(name, df)

    logs = read(log, out=tmp_path, on_table=hook)
    assert "requests" in seen and "prompt_eval" in seen
    assert logs["requests"].get_column("energy_j").null_count() == logs["requests"].height


def test_unwritable_out_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(store, "STREAM_FROM_BYTES", 0)
    log = next(p for p in LOGS if "/corpus/" in p)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = CliRunner().invoke(cli, ["ingest", log, "--out", str(blocker / "sub")])
    assert r.exit_code == 1
    assert "cannot write the tables to" in r.output and "Traceback" not in r.output
    with pytest.raises(store.OutputError):
        read(log, out=blocker / "sub")


def test_package_read_passes_out_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    log = next(p for p in LOGS if "/corpus/" in p)
    logs = logscope.read(log, out=tmp_path)
    assert (tmp_path / "requests.parquet").exists()
    assert logs["requests"].height == read(log)["requests"].height


def test_dataset_part_streamed_is_the_in_memory_one(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.fleet.dataset import read_part

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(llama_server, "CHUNK_REQUESTS", 2)
    log = next(p for p in LOGS if "/corpus/" in p)
    a, b = read_part(log), read_part(log, spill=tmp_path / "spill")
    assert list(a["tables"]) == list(b["tables"]) and a["last_run"] == b["last_run"]
    for name, lf in a["tables"].items():
        assert_frame_equal(lf.collect(), b["tables"][name].collect())
