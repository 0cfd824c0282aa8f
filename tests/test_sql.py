"""``logscope sql``: DuckDB over the frames of logs or of a dataset gives the Polars counts."""

from __future__ import annotations

import csv
import io
import json
import sys

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.cli import cli
from tests.conftest import CORPUS

pytest.importorskip("duckdb")

from logscope.outputs.sql import query  # noqa: E402

LOGS = [str(p) for p in sorted(CORPUS.glob("*.log"))]
SPEC = str(CORPUS / "generated-spec-pilot-c32k-np2.log")


@pytest.fixture(scope="module")
def logs():
    return logscope.read(LOGS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from logscope.fleet.dataset import ingest_to_dataset

    ds = tmp_path_factory.mktemp("ds")
    ingest_to_dataset(LOGS, ds, workers=1)
    return ds


def test_counts_over_logs_equal_polars(logs):
    for table in ("requests", "prompt_eval", "eval", "draft_acceptance", "lines_classified"):
        _, rows = query(f"SELECT count(*) FROM {table}", logs=LOGS)
        assert rows == [(logs[table].height,)], table
    cols, rows = query("SELECT file, count(*) AS n, sum(gen_tokens) AS g FROM requests "
                       "GROUP BY file ORDER BY file", logs=LOGS)
    want = (logs["requests"].group_by("file").agg(pl.len().alias("n"),
                                                  pl.col("gen_tokens").sum().alias("g"))
            .sort("file"))
    assert cols == ["file", "n", "g"]
    assert [(f, n, int(g)) for f, n, g in rows] == list(want.iter_rows())


def test_counts_over_dataset_equal_polars(logs, dataset):
    for table in ("requests", "prompt_eval", "draft_acceptance", "release"):
        _, rows = query(f"SELECT count(*) FROM {table}", dataset=dataset)
        assert rows == [(logs[table].height,)], table
    _, rows = query("SELECT DISTINCT engine, host FROM requests", dataset=dataset)
    assert rows == [("llama-server", "corpus")]


def test_cli_formats():
    q = "SELECT count(*) AS n, sum(draft_accepted) AS acc FROM draft_acceptance"
    want = logscope.read(SPEC)["draft_acceptance"]
    n, acc = want.height, want["draft_accepted"].sum()
    r = CliRunner().invoke(cli, ["sql", q, SPEC, "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == [{"n": n, "acc": acc}]
    r = CliRunner().invoke(cli, ["sql", q, SPEC, "--format", "csv"])
    assert list(csv.reader(io.StringIO(r.stdout))) == [["n", "acc"], [str(n), str(acc)]]
    r = CliRunner().invoke(cli, ["sql", q, SPEC])
    assert r.exit_code == 0 and r.stdout.splitlines()[0].split() == ["n", "acc"]
    assert "(1 row)" in r.stdout


def test_cli_dataset_and_errors(dataset):
    r = CliRunner().invoke(cli, ["sql", "--dataset", str(dataset), "--format", "csv",
                                 "SELECT count(*) AS n FROM requests"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1] == str(logscope.read(LOGS)["requests"].height)
    r = CliRunner().invoke(cli, ["sql", "SELECT * FROM nope", SPEC])
    assert r.exit_code == 1 and "SQL:" in r.output and "nope" in r.output
    r = CliRunner().invoke(cli, ["sql", "SELECT 1"])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["sql", "SELECT 1", "--dataset", str(dataset / "requests")])
    assert r.exit_code == 2 and "no tables here" in r.output
    r = CliRunner().invoke(cli, ["sql", "SELECT 1", SPEC, "--dataset", str(dataset)])
    assert r.exit_code == 2


def test_missing_duckdb_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb -> ImportError
    r = CliRunner().invoke(cli, ["sql", "SELECT 1", SPEC])
    assert r.exit_code == 1
    assert "pip install duckdb" in r.output


def test_logs_with_telemetry_have_the_energy_columns_of_report():
    """``sql ... LOG CSV``: requests carry energy_j, prefill_energy_j, decode_energy_j as in
    report's frames; energy_runs and gpu_samples are tables; without telemetry: nulls."""
    from logscope.cli._common import read_each
    from tests.conftest import FIXTURES

    d = FIXTURES / "telemetry" / "h200" / "generated-gpu-pressure-np4-ctxshift"
    cols, rows = query("SELECT task, energy_j, prefill_energy_j, decode_energy_j FROM requests "
                       "ORDER BY task", logs=[f"{d}.log", f"{d}.smi.csv"])
    with cli.make_context("report", [f"{d}.log"]):
        (frame,) = read_each((f"{d}.log",))  # report's read, without telemetry: nulls
    assert {"energy_j", "prefill_energy_j", "decode_energy_j"} <= set(frame["requests"].columns)
    want = logscope.read([f"{d}.log", f"{d}.smi.csv"])["requests"].sort("task")
    assert [r[0] for r in rows] == want["task"].to_list()
    for i, c in enumerate(("energy_j", "prefill_energy_j", "decode_energy_j"), start=1):
        assert [r[i] for r in rows] == pytest.approx(want[c].to_list(), nan_ok=True)
    assert sum(r[1] for r in rows) > 0
    _, n = query("SELECT count(*) FROM energy_runs", logs=[f"{d}.log", f"{d}.smi.csv"])
    assert n == [(1,)]
    _, nulls = query("SELECT count(energy_j), count(*) FROM requests", logs=[f"{d}.log"])
    assert nulls[0][0] == 0 and nulls[0][1] == want.height
