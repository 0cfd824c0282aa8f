"""llama-bench / llama-sweep-bench results beside the passive table of a log."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from logscope.analysis.activebench import BenchFormatError, read_bench, side_by_side, sniff
from logscope.cli import cli

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "llama-bench"
CORPUS = ROOT / "fixtures" / "llama-server" / "corpus"
GPU = CORPUS / "generated-gpu-q8kv-c256k-np2.log"
SPEC = CORPUS / "generated-spec-pilot-c32k-np2.log"
CASES = [("bench.json", GPU), ("bench.jsonl", GPU), ("bench.csv", GPU), ("bench.md", GPU),
         ("sweep-bench.md", SPEC)]


@pytest.mark.parametrize(("bench", "log"), CASES)
def test_compare_prints_the_expected_side_by_side_table(bench, log):
    r = CliRunner().invoke(cli, ["compare", str(log), str(FIX / bench)])
    assert r.exit_code == 0, r.output
    expected = (FIX / f"{bench}.expected.md").read_text(encoding="utf-8")
    assert r.output == expected, "python fixtures/llama-bench/render.py --expected"


def test_fixtures_are_rendered_by_the_script(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("render", FIX / "render.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.tests()
    assert (FIX / "bench.json").read_text(encoding="utf-8") == mod.render_json(rows)
    assert (FIX / "bench.md").read_text(encoding="utf-8") == mod.render_md(rows)
    assert (FIX / "sweep-bench.md").read_text(encoding="utf-8") == mod.render_sweep()


def test_every_format_reads_the_same_tests():
    frames = {f: read_bench(FIX / f) for f in ("bench.json", "bench.jsonl", "bench.csv",
                                               "bench.md")}
    ref = frames["bench.json"]
    assert ref.height == 15
    assert "pp16384 @ d4096" in ref["test"].to_list()
    assert "tg1024 @ d32768" in ref["test"].to_list()
    for f, df in frames.items():
        assert df["test"].to_list() == ref["test"].to_list(), f
        assert df["n_depth"].to_list() == ref["n_depth"].to_list(), f
        for a, b in zip(df["tps_mean"], ref["tps_mean"], strict=True):
            assert a == pytest.approx(b, abs=0.01), f
    assert ref["reps"].to_list() == [3] * 15  # samples_ts
    assert frames["bench.md"]["reps"].null_count() == 15  # md does not say


def test_matching_uses_the_passive_buckets():
    import logscope

    df = side_by_side(logscope.read(str(GPU)), read_bench(FIX / "bench.json"))
    row = df.filter(pl.col("test") == "tg512 @ d4096").row(0, named=True)
    assert row["passive_tps"] == pytest.approx(290.94, abs=0.01)
    assert row["delta_pct"] == pytest.approx((row["passive_tps"] - row["active_tps"])
                                             / row["active_tps"] * 100)
    assert row["passive_n"] == 1
    assert df.filter(pl.col("test") == "pp16384 @ d0")["passive_tps"].item() is None


def test_markdown_variants(tmp_path):
    md = tmp_path / "pasted.md"
    md.write_text(
        "some text from a forum post\n\n"
        "| model | size | params | backend | ngl | test | t/s |\n"
        "| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 10 | pp 512 | 373.36 ± 2.25 |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 10 | tg 128 | 13.45 ± 0.93 |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 20 | pp512 @ d4096 | 1,472.65 |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 20 | pp512+tg128 | 90.1 ± 1.0 |\n"
        "\nbuild: 8cf427ff (5163)\n", encoding="utf-8")
    assert sniff(md)
    df = read_bench(md)
    assert df["test"].to_list() == ["pp512 @ d0", "tg128 @ d0", "pp512 @ d4096",
                                    "pp512+tg128 @ d0"]
    assert df["kind"].to_list() == ["pp", "tg", "pp", "pg"]
    assert df["tps_mean"].to_list() == [373.36, 13.45, 1472.65, 90.1]
    assert df["tps_std"].to_list()[:3] == [2.25, 0.93, None]
    assert df["config"].to_list() == ["ngl=10", "ngl=10", "ngl=20", "ngl=20"]


def test_json_without_depth_is_depth_zero(tmp_path):
    f = tmp_path / "old.json"
    f.write_text(json.dumps([{"n_prompt": 512, "n_gen": 0, "avg_ts": 100.0, "stddev_ts": 1.0,
                              "model_type": "m"}]), encoding="utf-8")
    df = read_bench(f)
    assert df["test"].to_list() == ["pp512 @ d0"] and df["config"].to_list() == [None]


def test_a_server_log_is_not_a_bench_file(tmp_path):
    assert not sniff(GPU)
    bad = tmp_path / "x.json"
    bad.write_text('[{"a": 1}]', encoding="utf-8")
    with pytest.raises(BenchFormatError):
        read_bench(bad)


def test_compare_needs_exactly_one_log_beside_a_bench():
    r = CliRunner().invoke(cli, ["compare", str(GPU), str(SPEC), str(FIX / "bench.json")])
    assert r.exit_code == 2 and "one server LOG" in r.output


def test_json_output_of_the_side_by_side_table():
    r = CliRunner().invoke(cli, ["compare", str(FIX / "bench.json"), str(GPU), "--format",
                                 "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert {"test", "active_tps", "passive_tps", "delta_pct", "passive_n"} <= set(rows[0])
