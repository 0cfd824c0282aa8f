"""A fleet's logs on a real Dask cluster: each file (with its rotation chain) one task that writes
its own Parquet parts; the dataset equals the serial ingest's, table by table, row for row,
through re-ingest, growth and rotation. And reading it back: ``logscope.scan``,
``report --dataset --where`` (the same numbers as from the logs)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import logscope
from logscope.cli import cli
from logscope.fleet.dataset import MANIFEST, chain_key, ingest_to_dataset, tables_in
from tests.conftest import CORPUS, FIXTURES

distributed = pytest.importorskip("distributed")

SPEC = CORPUS / "generated-spec-pilot-c32k-np2.log"
FLEET = {  # host -> logs (llama-server, SGLang, vLLM)
    "gpu1": sorted(CORPUS.glob("generated-*.log"))[:3],
    "gpu2": sorted(FIXTURES.glob("sglang/v0.4.*.log"))[:3],
    "gpu3": sorted(FIXTURES.glob("vllm/v0.1*.log"))[:3],
}


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of two worker processes for the module (a start costs seconds)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    c = distributed.Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()


def _fleet(root: Path) -> list[str]:
    out = []
    for host, logs in FLEET.items():
        d = root / "logs" / host
        d.mkdir(parents=True)
        for p in logs:
            assert p.exists(), p
            shutil.copy2(p, d / p.name)
            out.append(str(d / p.name))
    return out


def _canonical(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order whatever order the parts were read in: sorted by every column that
    sorts (nested ones are compared, not sorted by)."""
    flat = [c for c, t in df.schema.items() if not t.is_nested()]
    return df.select(sorted(df.columns)).sort(flat, nulls_last=True)


def _tables(ds: Path) -> dict[str, pl.DataFrame]:
    return {t: _canonical(pl.concat([pl.read_parquet(p) for p in sorted(
        (ds / t).rglob("*.parquet"))], how="diagonal_relaxed")) for t in tables_in(ds)}


def _parts(ds: Path) -> list[str]:
    return sorted(str(p.relative_to(ds)) for p in ds.rglob("*.parquet"))


def _manifest(ds: Path) -> dict:
    m = json.loads((ds / MANIFEST).read_text())
    for group in ("files", "displaced"):
        for e in m.get(group, {}).values():
            e.pop("ingested_at", None)
    return m


def _same_dataset(a: Path, b: Path) -> None:
    assert _parts(a) == _parts(b)
    ta, tb = _tables(a), _tables(b)
    assert list(ta) == list(tb)
    for name in ta:
        assert_frame_equal(ta[name], tb[name], check_exact=True), name
    assert _manifest(a) == _manifest(b)


def _counts(r: dict) -> dict:
    return {**r, "files": sorted(r["files"], key=lambda f: f["file"])}


def test_cluster_ingest_equals_serial_through_growth_and_rotation(tmp_path, client):
    """The scenarios of the local dataset ingest, on two worker processes: a first ingest, a
    re-ingest that adds nothing, a grown file, a rotated file (renamed and grown, a new file
    at its path, and an older rotation compressed), each step compared with the serial ingest
    dataset for dataset."""
    paths = _fleet(tmp_path)
    grow = tmp_path / "logs" / "gpu1" / "server.log"
    data = SPEC.read_bytes().splitlines(keepends=True) * 4  # > 64 KiB, four runs
    cut = len(data) // 2 + 7
    grow.write_bytes(b"".join(data[:cut]) + data[cut][:5])  # a line being written
    rotate = tmp_path / "logs" / "gpu2" / "server.log"
    rotate.write_bytes(b"".join(data[:cut]))
    pattern = str(tmp_path / "logs" / "**" / "server.log*")
    serial, cluster = tmp_path / "serial", tmp_path / "cluster"

    def both(given: list[str] | str) -> dict:
        a = ingest_to_dataset(given, serial, workers=1)
        b = ingest_to_dataset(given, cluster, scheduler=client)
        assert _counts(a) == _counts(b)
        _same_dataset(serial, cluster)
        return b

    r = both([*paths, pattern])
    assert (r["ingested"], r["appended"], r["skipped"]) == (len(paths) + 2, 0, 0)
    unfinished = sum(len(Path(p).read_bytes().rsplit(b"\n", 1)[1]) for p in paths)
    assert r["pending_bytes"] == 5 + unfinished
    # unchanged: nothing added, not a part rewritten
    parts = _parts(cluster)
    r = both([*paths, pattern])
    assert (r["ingested"], r["appended"], r["skipped"], r["parts"]) == (0, 0, len(paths) + 2, 0)
    assert _parts(cluster) == parts
    # grown (the writer finished its line and went on) and rotated (logrotate, create): the old
    # log grew, was renamed to server.log.1, a new server.log opened, an older rotation is .gz
    grow.write_bytes(b"".join(data))
    rotated = rotate.with_name("server.log.1")
    rotate.rename(rotated)
    rotated.write_bytes(b"".join(data))
    shutil.copy(FLEET["gpu2"][0], rotate)
    rotate.with_name("server.log.2.gz").write_bytes(gzip.compress(SPEC.read_bytes()))
    r = both(pattern)
    assert (r["ingested"], r["appended"], r["renamed"]) == (2, 2, 1)
    detail = {Path(f["file"]).name + "@" + Path(f["file"]).parent.name: f for f in r["files"]}
    assert detail["server.log.1@gpu2"]["renamed_from"] == str(rotate)
    assert detail["server.log@gpu1"]["lines"] == len(data) - cut
    assert detail["server.log.1@gpu2"]["lines"] == len(data) - cut
    # and once more: nothing to add
    r = both([*paths, pattern])
    assert (r["ingested"], r["appended"], r["parts"]) == (0, 0, 0)
    # the grown log reads back as logscope.read reads the whole file (line numbers continue)
    got = logscope.scan(cluster, f"file = '{grow}'")["eval"].collect()
    assert got.height == logscope.read(str(grow))["eval"].height


def test_rotation_chains_are_one_unit():
    assert chain_key("/l/h/server.log.1") == chain_key("/l/h/server.log.2.gz") == \
        chain_key("/l/h/server.log") == "/l/h/server.log"
    assert chain_key("/l/h/a.log") != chain_key("/l/h/b.log")


def test_dask_local_schedulers_and_local_cluster_from_the_cli(tmp_path):
    paths = _fleet(tmp_path)[:4]
    serial = tmp_path / "serial"
    ingest_to_dataset(paths, serial, workers=1)
    threads = tmp_path / "threads"
    ingest_to_dataset(paths, threads, scheduler="threads")
    _same_dataset(serial, threads)
    ds = tmp_path / "local"
    r = CliRunner().invoke(cli, ["ingest", *paths[:2], "--dataset", str(ds), "--scheduler",
                                 "local:1", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ingested"] == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
    (["--scheduler", "somewhere"], "--scheduler somewhere: give local:N, tcp://host:port"),
    (["--scheduler", "local:0"], "N must be at least 1"),
    (["--scheduler", "local:2", "--workers", "2"], "give --workers or --scheduler, not both"),
])
def test_scheduler_errors_are_one_line(tmp_path, monkeypatch, args, message):
    import logscope.fleet.distributed

    monkeypatch.setattr(logscope.fleet.distributed, "CONNECT_TIMEOUT", "1s")
    ds = tmp_path / "ds"
    r = CliRunner().invoke(cli, ["ingest", str(SPEC), "--dataset", str(ds), *args])
    assert r.exit_code != 0
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], r.output
    assert not (ds / MANIFEST).exists()  # nothing done


def test_scheduler_without_dataset_is_an_error():
    r = CliRunner().invoke(cli, ["ingest", str(SPEC), "--scheduler", "threads"])
    assert r.exit_code == 2 and "used with --dataset" in r.output


def test_missing_distributed_is_one_line(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_distributed(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if level == 0 and (name == "distributed" or name.startswith("distributed.")):
            raise ImportError(f"No module named {name!r}")
        return real(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    r = CliRunner().invoke(cli, ["ingest", str(SPEC), "--dataset", str(tmp_path / "ds"),
                                 "--scheduler", "local:2"])
    assert r.exit_code == 1
    assert r.output.strip() == ("Error: --scheduler local:2 needs dask.distributed: pip install "
                                "'logscope[dask]' (or 'dask[distributed]')")


# reading the dataset back

@pytest.fixture(scope="module")
def fleet_ds(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    paths = _fleet(root)
    ds = root / "ds"
    ingest_to_dataset(paths, ds, workers=1)
    return paths, ds


def test_scan_gives_lazy_tables_with_partitions(fleet_ds):
    paths, ds = fleet_ds
    tables = logscope.scan(ds)
    assert set(tables) == set(tables_in(ds))
    assert all(isinstance(lf, pl.LazyFrame) for lf in tables.values())
    lines = tables["lines_classified"].collect()
    assert lines.schema["host"] == lines.schema["date"] == pl.String
    assert set(lines["host"]) == set(FLEET)
    assert lines.height == sum(logscope.read(p)["lines_classified"].height for p in paths)
    # a condition on partitions selects parts by directory; the plan scans only gpu2's files
    gpu2 = logscope.scan(ds, "host = 'gpu2' AND date >= '2000-01-01'")
    plan = gpu2["lines_classified"].explain()
    assert "host=gpu1" not in plan and "host=gpu3" not in plan
    got = gpu2["lines_classified"].collect()
    assert set(got["host"]) == {"gpu2"}
    assert got.height == sum(logscope.read(str(p))["lines_classified"].height
                             for p in paths if "/gpu2/" in p)
    # other conditions filter rows; a Polars expression works as well
    slot0 = logscope.scan(ds, pl.col("slot") == 0)["release"].collect()
    assert slot0.height and set(slot0["slot"]) == {0}


def _report_json(args: list[str]) -> dict:
    r = CliRunner().invoke(cli, ["report", "--format", "json", "--label", "x", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_report_from_the_dataset_equals_report_from_the_logs(fleet_ds):
    paths, ds = fleet_ds
    for p in (paths[0], paths[3], paths[6]):  # llama-server, SGLang, vLLM
        host = Path(p).parent.name
        want = _report_json([p])
        got = _report_json(["--dataset", str(ds), "--where", f"host = '{host}' AND file = '{p}'"])
        assert got == want, p
    # a whole host: the same as its logs read together (a glob is one series)
    want = _report_json([str(Path(paths[0]).parent / "*.log")])
    assert want["bench"]
    assert _report_json(["--dataset", str(ds), "--where", "host = 'gpu1'"]) == want


def test_compare_and_plot_from_the_dataset(fleet_ds, tmp_path):
    paths, ds = fleet_ds
    r = CliRunner().invoke(cli, ["compare", "--dataset", str(ds), "--where", "host = 'gpu1'",
                                 "--where", f"file = '{paths[0]}'", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert rows and any(k.startswith("% ") for k in rows[0])
    out = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["plot", "prefill-curve", "--dataset", str(ds), "--where",
                                 "host = 'gpu1'", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0


@pytest.mark.parametrize(("args", "message"), [
    (["--where", "host = 'gpu9'"], "no rows where host = 'gpu9'"),
    (["--where", "nosuch = 1"], "not every table has a column 'nosuch'"),
    (["--where", "host = = 1"], "--where"),
])
def test_report_dataset_errors_are_one_line(fleet_ds, args, message):
    _, ds = fleet_ds
    r = CliRunner().invoke(cli, ["report", "--dataset", str(ds), *args])
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.output


def test_report_dataset_missing_dir_and_where_alone(tmp_path):
    r = CliRunner().invoke(cli, ["report", "--dataset", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such directory" in r.output
    r = CliRunner().invoke(cli, ["report", str(SPEC), "--where", "host = 'a'"])
    assert r.exit_code == 2 and "--where is used with --dataset" in r.output


def test_read_dask_on_the_cluster_equals_read(client, tmp_path):
    """One big file's byte ranges parsed on the cluster, modelled in order on the driver with
    at most ``window`` parsed ranges waiting: the frames of ``logscope.read``."""
    from logscope.fleet.distributed import read_dask

    big = tmp_path / "big.log"
    big.write_bytes(SPEC.read_bytes() * 3)
    paths = [str(big), str(FLEET["gpu2"][0])]
    want = logscope.read(paths)
    for window in (1, 3):
        got = read_dask(paths, scheduler=client, block_bytes=4_000, window=window)
        assert got.summary() == want.summary()
        for name in want.tables:
            assert_frame_equal(got[name], want[name], check_exact=True), name


def test_duckdb_reads_the_dataset_as_docs_fleet_md_shows(fleet_ds):
    import duckdb

    _, ds = fleet_ds
    text = (Path(__file__).resolve().parent.parent / "docs" / "fleet.md").read_text()
    query = text.split("```sql\n", 1)[1].split("```", 1)[0]
    assert "read_parquet('ds/requests/**/*.parquet'" in query
    query = query.replace("'ds/", f"'{ds}/").replace("host = 'gpu3'", "host = 'gpu1'")
    query = query.replace("date >= '2026-11-01'", "date >= '2000-01-01'")
    cols = ["host", "date", "requests", "decode_tps"]
    got = pl.DataFrame(duckdb.sql(query).fetchall(), schema=cols, orient="row")
    want = (logscope.scan(ds, "host = 'gpu1' AND date >= '2000-01-01'")["requests"]
            .group_by("host", "date").agg(pl.len().alias("requests"),
                                          pl.col("decode_tps").median()).sort("date").collect())
    assert got["requests"].to_list() == want["requests"].to_list()
    assert got["date"].to_list() == want["date"].to_list()
    assert got["decode_tps"].to_list() == pytest.approx(want["decode_tps"].to_list(), nan_ok=True)


def test_fsspec_urls_are_ingested_like_paths(tmp_path, client):
    """Logs given as fsspec URLs (``file://`` here; ``s3://`` with s3fs) are read by the
    workers through fsspec: the rows of the same logs given as paths."""
    paths = _fleet(tmp_path)[:4]
    by_path = ingest_to_dataset(paths, tmp_path / "a", workers=1)
    pattern = "file://" + str(tmp_path / "logs" / "gpu1" / "*.log")
    urls = [*(f"file://{p}" for p in paths if "/gpu1/" not in p), pattern]
    by_url = ingest_to_dataset(urls, tmp_path / "b", scheduler=client)
    assert (by_url["ingested"], by_url["lines"]) == (by_path["ingested"], by_path["lines"])
    def plain(ds: Path) -> dict[str, pl.DataFrame]:  # file as a string, without file://
        return {t: _canonical(df.with_columns(pl.col("file").cast(pl.String)
                                              .str.replace("^file://", "")))
                for t, df in _tables(ds).items()}

    a, b = plain(tmp_path / "a"), plain(tmp_path / "b")
    assert list(a) == list(b)
    for name in a:
        assert_frame_equal(a[name], b[name], check_exact=True), name
    assert ingest_to_dataset(urls, tmp_path / "b", scheduler=client)["skipped"] == len(paths)
    r = CliRunner().invoke(cli, ["ingest", "file:///nonexistent/x.log", "--dataset",
                                 str(tmp_path / "c"), "--scheduler", "threads"])
    assert r.exit_code == 2 and "no such file" in r.output
