"""The Parquet dataset: idempotent re-ingest, grown-file append, parallel == serial, read-back.

Every scenario runs twice: with the local process pool, and with Dask's threads scheduler (the
path of ``--scheduler``; tests/test_fleet.py runs them on a LocalCluster of two processes)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import logscope
from logscope.fleet import dataset
from logscope.fleet.dataset import MANIFEST, ingest_to_dataset, scan, tables_in
from tests.conftest import CORPUS

LOGS = sorted(CORPUS.glob("*.log"))
SPEC = CORPUS / "generated-spec-pilot-c32k-np2.log"
# ts of llama-server lines without a clock is inferred back from the file's mtime: it depends on
# when the part was read, so the grown-file comparison leaves it out (t_rel is compared)
TS = ["ts", "ts_source", "ts_inferred"]


@pytest.fixture(autouse=True, params=["pool", "dask"])
def scheduler(request, monkeypatch):
    """``ingest_to_dataset`` of these tests, on the local pool or on Dask (``workers`` then
    ignored: Dask's threads scheduler runs the chains)."""
    if request.param == "dask":
        pytest.importorskip("dask")

        def on_dask(paths, out_dir, engine="auto", workers=None):  # noqa: ANN001, ANN202
            return dataset.ingest_to_dataset(paths, out_dir, engine, scheduler="threads")

        monkeypatch.setattr(sys.modules[__name__], "ingest_to_dataset", on_dask)
    return request.param


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
    with pytest.raises(logscope.input.sources.InputError):
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


# rotation: a log renamed (logrotate's server.log -> server.log.1) is continued, not re-ingested

EVENT_TABLES = ("lines_classified", "prompt_eval", "eval", "draft_acceptance", "release",
                "decode_progress", "task_launch")


def _manifest(ds) -> dict:
    return json.loads((ds / MANIFEST).read_text())


def _entry(ds, path) -> dict:
    return _manifest(ds)["files"][str(Path(path).resolve())]


def _parts(ds) -> list[str]:
    return sorted(str(p.relative_to(ds)) for p in ds.rglob("*.parquet"))


def _log_rows(ds, table: str, part_hash: str) -> pl.DataFrame:
    """The rows of one log: the parts named part-<part_hash>-<offset>."""
    return (pl.scan_parquet(str(ds / table / "**" / "*.parquet"), hive_partitioning=True,
                            include_file_paths="_part")
            .filter(pl.col("_part").str.contains(f"/part-{part_hash}-", literal=True))
            .drop("_part").collect())


def _assert_log_is_read(ds, log, label, part_hash):
    """The dataset holds every line of ``log`` once, numbered as ``logscope.read`` numbers the
    whole file, under the ``file`` label ``label`` (the path the log was first ingested under)."""
    full = logscope.read(str(log))
    assert full["lines_classified"].height > 0
    for table in EVENT_TABLES:
        want = full[table].with_columns(pl.lit(str(label)).alias("file"))
        if want.height == 0 and not (ds / table).exists():
            continue
        cols = [c for c in want.columns if c not in TS]
        got = _log_rows(ds, table, part_hash)
        assert got.height == want.height, table
        assert_frame_equal(_sorted(got, cols), _sorted(want, cols), check_dtypes=False)
    lines = _log_rows(ds, "lines_classified", part_hash)["line"]
    assert lines.n_unique() == lines.len()  # each line once


def _big_lines() -> list[bytes]:
    """A llama-server log of more than 64 KiB (the spec-pilot log four times: four runs)."""
    data = SPEC.read_bytes().splitlines(keepends=True) * 4
    assert len(b"".join(data)) > 64 * 1024
    return data


def test_renamed_file_adds_nothing(tmp_path):
    log = tmp_path / "box" / "server.log"
    log.parent.mkdir()
    log.write_bytes(b"".join(_big_lines()))
    ds = tmp_path / "ds"
    assert ingest_to_dataset([str(log)], ds, workers=1)["ingested"] == 1
    before, parts, h = _entry(ds, log), _parts(ds), _entry(ds, log)["part_hash"]
    rotated = log.with_name("server.log.1")
    log.rename(rotated)
    r = ingest_to_dataset([str(rotated)], ds, workers=1)
    assert (r["ingested"], r["appended"], r["skipped"], r["renamed"], r["lines"], r["parts"]) \
        == (0, 0, 1, 1, 0, 0)
    assert r["files"] == [{"file": str(rotated), "action": "skipped", "lines": 0,
                           "renamed_from": str(log)}]
    assert _parts(ds) == parts
    m = _manifest(ds)
    assert set(m["files"]) == {str(rotated.resolve())} and m["displaced"] == {}
    after = _entry(ds, rotated)
    assert after["previous_paths"] == [str(log.resolve())]
    assert (after["file"], after["part_hash"]) == (str(log), h)
    for k in ("bytes", "lines", "size", "head_sha256", "head_bytes", "last_run", "parts"):
        assert after[k] == before[k], k
    _assert_log_is_read(ds, rotated, log, h)
    again = ingest_to_dataset([str(rotated)], ds, workers=1)
    assert (again["skipped"], again["renamed"], again["parts"]) == (1, 0, 0)


def test_renamed_and_grown_appends_only_new_lines(tmp_path):
    log = tmp_path / "box" / "server.log"
    log.parent.mkdir()
    data = _big_lines()
    cut = len(data) * 4 // 5
    log.write_bytes(b"".join(data[:cut]) + data[cut][:9])  # > 64 KiB, a line being written
    assert log.stat().st_size > 64 * 1024
    ds = tmp_path / "ds"
    assert ingest_to_dataset([str(log)], ds, workers=1)["lines"] == cut
    h = _entry(ds, log)["part_hash"]
    rotated = log.with_name("server.log.1")
    log.rename(rotated)
    rotated.write_bytes(b"".join(data))  # written up to the rotation, then renamed
    r = ingest_to_dataset([str(rotated)], ds, workers=1)
    assert (r["ingested"], r["appended"], r["renamed"], r["lines"]) == (0, 1, 1, len(data) - cut)
    assert r["files"][0]["renamed_from"] == str(log)
    entry = _entry(ds, rotated)
    assert (entry["lines"], entry["bytes"]) == (len(data), len(b"".join(data)))
    assert entry["part_hash"] == h and str(log.resolve()) not in _manifest(ds)["files"]
    # the new parts continue the log's byte offsets under its part hash
    offsets = sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in entry["parts"])
    assert offsets[0] == 0 and offsets[-1] == len(b"".join(data[:cut]))
    assert all(f"/part-{h}-" in p for p in entry["parts"])
    assert len(_parts(ds)) == len(entry["parts"])
    _assert_log_is_read(ds, rotated, log, h)
    assert ingest_to_dataset([str(rotated)], ds, workers=1)["skipped"] == 1


@pytest.mark.parametrize("together", [True, False], ids=["one-call", "new-file-first"])
def test_rotation_continues_old_log_and_ingests_new_file(tmp_path, together):
    log = tmp_path / "box" / "server.log"
    log.parent.mkdir()
    data = _big_lines()
    cut = len(data) // 2 + 7  # not at a restart (there, run would not increase: a limitation)
    log.write_bytes(b"".join(data[:cut]))
    ds = tmp_path / "ds"
    ingest_to_dataset([str(log)], ds, workers=1)
    old_hash = _entry(ds, log)["part_hash"]
    # logrotate (create): the log grew a little, was renamed, and the server opened a new one
    rotated = log.with_name("server.log.1")
    log.rename(rotated)
    rotated.write_bytes(b"".join(data))
    shutil.copy(LOGS[0], log)
    if together:  # the glob gives server.log first: the rename is still resolved first
        r = ingest_to_dataset(str(log.parent / "server.log*"), ds, workers=2)
        assert (r["ingested"], r["appended"], r["renamed"]) == (1, 1, 1)
    else:  # a job that ingests only server.log, and server.log.1 some other time
        r = ingest_to_dataset([str(log)], ds, workers=1)
        assert (r["ingested"], r["appended"], r["renamed"]) == (1, 0, 0)
        assert list(_manifest(ds)["displaced"]) == [old_hash]
        r = ingest_to_dataset([str(rotated), str(log)], ds, workers=1)
        assert (r["ingested"], r["appended"], r["skipped"], r["renamed"]) == (0, 1, 1, 1)
    assert r["lines"] == (len(data) - cut) + (len(LOGS[0].read_bytes().splitlines())
                                              if together else 0)
    m = _manifest(ds)
    assert m["displaced"] == {} and len(m["files"]) == 2
    new, old = _entry(ds, log), _entry(ds, rotated)
    assert old["part_hash"] == old_hash != new["part_hash"]
    assert (old["lines"], new["lines"]) == (len(data), len(LOGS[0].read_bytes().splitlines()))
    assert new["previous_paths"] == [] and old["previous_paths"] == [str(log.resolve())]
    # both logs carry file=server.log (the path each was first ingested under); parts tell them
    # apart, each numbered from line 1 as logscope.read numbers it
    _assert_log_is_read(ds, rotated, log, old_hash)
    _assert_log_is_read(ds, log, log, new["part_hash"])
    assert len(_parts(ds)) == len(old["parts"]) + len(new["parts"])
    again = ingest_to_dataset(str(log.parent / "server.log*"), ds, workers=1)
    assert (again["skipped"], again["renamed"], again["parts"]) == (2, 0, 0)


def test_small_file_grows_then_is_renamed(tmp_path):
    log = tmp_path / "box" / "server.log"
    log.parent.mkdir()
    data = SPEC.read_bytes().splitlines(keepends=True)  # 22 KiB: all of it is the fingerprint
    a, b = len(data) // 3, len(data) // 2
    log.write_bytes(b"".join(data[:a]))
    ds = tmp_path / "ds"
    ingest_to_dataset([str(log)], ds, workers=1)
    assert _entry(ds, log)["head_bytes"] == len(b"".join(data[:a]))
    log.write_bytes(b"".join(data[:b]))  # grows at its path: the first-a-lines hash still matches
    r = ingest_to_dataset([str(log)], ds, workers=1)
    assert (r["appended"], r["lines"]) == (1, b - a)
    entry = _entry(ds, log)
    assert entry["head_bytes"] == len(b"".join(data[:b])) < 64 * 1024
    h = entry["part_hash"]
    rotated = log.with_name("server.log.1")
    log.rename(rotated)
    rotated.write_bytes(b"".join(data))  # renamed and grown: its first 64 KiB hash differs
    r = ingest_to_dataset([str(rotated)], ds, workers=1)
    assert (r["ingested"], r["appended"], r["renamed"], r["lines"]) == (0, 1, 1, len(data) - b)
    entry = _entry(ds, rotated)
    assert (entry["lines"], entry["head_bytes"], entry["part_hash"]) == \
        (len(data), len(b"".join(data)), h)
    _assert_log_is_read(ds, rotated, log, h)


def test_copies_are_separate_files(tmp_path):
    d = tmp_path / "box"
    d.mkdir()
    a, b = d / "a.log", d / "b.log"
    shutil.copy(SPEC, a)
    shutil.copy(SPEC, b)
    lines = len(SPEC.read_bytes().splitlines())
    n = logscope.read(str(SPEC))["lines_classified"].height  # rows per copy
    ds = tmp_path / "ds"
    # two files with one fingerprint in one call: two files, each ingested under its own name
    r = ingest_to_dataset([str(a), str(b)], ds, workers=1)
    assert (r["ingested"], r["renamed"], r["lines"]) == (2, 0, 2 * lines)
    lines = scan(ds, "lines_classified").collect()
    assert lines.group_by("file").len().sort("file").rows() == [(str(a), n), (str(b), n)]
    # a copy of a log still at its recorded path is not a rename of it (a not given: the
    # manifest entry's path is checked on disk)
    c = d / "c.log"
    shutil.copy(a, c)
    r = ingest_to_dataset([str(c)], ds, workers=1)
    assert (r["ingested"], r["skipped"], r["renamed"]) == (1, 0, 0)
    assert "renamed_from" not in json.dumps(r["files"])
    # a.log renamed and also copied: one file continues the log (the renamed one, which keeps
    # the inode, though the copy, in the same directory, is given first), the copy is a new file
    a1, elsewhere = d / "a.log.1", d / "a.copy.log"
    a.rename(a1)
    shutil.copy(a1, elsewhere)
    r = ingest_to_dataset([str(elsewhere), str(a1)], ds, workers=1)
    assert (r["ingested"], r["skipped"], r["renamed"]) == (1, 1, 1)
    assert {f["file"]: f.get("renamed_from") for f in r["files"]} == \
        {str(a1): str(a), str(elsewhere): None}
    # a new file at the old path with the renamed log's fingerprint gets its own part names
    # (the same realpath + fingerprint hash would overwrite the renamed log's parts)
    shutil.copy(a1, a)
    r = ingest_to_dataset([str(a)], ds, workers=1)
    assert r["ingested"] == 1
    hashes = [e["part_hash"] for e in _manifest(ds)["files"].values()]
    assert len(set(hashes)) == len(hashes) == 5
    per_file = scan(ds, "lines_classified").collect().group_by("file").len().sort("file")
    assert per_file.rows() == [(str(elsewhere), n), (str(a), 2 * n), (str(b), n), (str(c), n)]
    assert _entry(ds, a1)["file"] == str(a) and _entry(ds, elsewhere)["file"] == str(elsewhere)


def test_log_with_nothing_ingested_is_not_continued_elsewhere(tmp_path):
    d = tmp_path / "box"
    d.mkdir()
    empty, other = d / "server.log", d / "other.log"
    empty.write_bytes(b"")  # recorded with 0 bytes: its fingerprint (of nothing) matches any file
    ds = tmp_path / "ds"
    ingest_to_dataset([str(empty)], ds, workers=1)
    empty.unlink()
    shutil.copy(SPEC, other)
    r = ingest_to_dataset([str(other)], ds, workers=1)
    assert (r["ingested"], r["appended"], r["renamed"]) == (1, 0, 0)
    assert _entry(ds, other)["file"] == str(other)
    assert set(scan(ds, "lines_classified").collect()["file"]) == {str(other)}
