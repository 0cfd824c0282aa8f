"""report / compare / card / plot commands: CLI output equals the API, user errors are one line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.compare import compare_metrics
from logscope.analysis.report import bench_table, bucket, build_report, depth_bucket, render
from logscope.analysis.verdict import QUESTIONS
from logscope.cli import cli
from tests.conftest import CORPUS

GPU = str(CORPUS / "generated-gpu-q8kv-c256k-np2.log")
SPEC = str(CORPUS / "generated-spec-pilot-c32k-np2.log")


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_buckets():
    assert bucket(512) == 512 and bucket(363) == 512 and bucket(362) == 256
    assert bucket(724) == 512 and bucket(725) == 1024
    assert depth_bucket(0) == 0 and depth_bucket(255) == 0 and depth_bucket(4103) == 4096


def test_report_csv_equals_api():
    r = run("report", GPU, "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    api = bench_table(logscope.read(GPU), "generated-gpu-q8kv-c256k-np2.log")
    assert [x["test"] for x in rows] == api["test"].to_list()
    # rounded to what the server prints (0.01 t/s)
    assert [float(x["tps_mean"]) for x in rows] == pytest.approx(api["tps_mean"].to_list(),
                                                                 abs=0.005)
    assert all(len(x["tps_mean"].partition(".")[2]) <= 2 for x in rows)
    assert {x["source"] for x in rows} == {"passive"}
    # the 70000-token prompt on ~nothing cached: labelled by its size, not 65536
    row = next(x for x in rows if x["test"] == "pp~70k @ d0")
    assert row["tokens_bucket"] == "65536"
    assert float(row["tps_mean"]) == pytest.approx(6435.47) and row["small"] == "true"
    # it ran alongside task 2750 on the other slot: flagged, not sold as single-stream
    assert row["shared"] == "1"
    assert next(x for x in rows if x["test"] == "pp4096 @ d0")["shared"] == "0"


def test_report_md_and_json():
    r = run("report", SPEC, "--label", "spec")
    assert r.exit_code == 0
    assert "| spec | tg~230 @ d0 |" in r.output and "n* = fewer than 3" in r.output
    # the report leads with the depth profile, then the prefill model with c in ms and r²
    assert r.output.index("Prefill by depth (solo") < r.output.index("prefill model")
    # this log's shallow prompts disagree with the model by more than 10 %: no model headline
    assert " ms, a = " not in r.output and "prefill model: not shown" in r.output
    ok = run("report", str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log")).output
    assert " ms, a = " in ok and "r² = " in ok    # here it agrees with every bucket
    assert "draft model" in r.output and "Prefill by depth" in r.output
    j = json.loads(run("report", SPEC, "--format", "json").output)
    api = build_report([logscope.read(SPEC)])
    assert j["bench"] == json.loads(render(api, "json"))["bench"]
    card = j["cards"]["generated-spec-pilot-c32k-np2.log"]
    assert card["draft model"] == "models/draft.gguf" and card["context per slot"] == 16384


def test_compare_deltas_match_api(tmp_path):
    out = tmp_path / "ab.png"
    r = run("compare", GPU, SPEC, "--label", "gpu", "--label", "spec", "--format", "json",
            "--plot", str(out))
    assert r.exit_code == 0, r.output
    body = r.output.split("\nwrote")[0]
    body = body[body.index("{"):]   # after the workload warnings (stderr, mixed in here)
    j = json.loads(body)
    assert [v["question"] for v in j["verdict"]] == list(QUESTIONS)
    rows = {x["metric"]: x for x in j["rows"]}
    api = compare_metrics([logscope.read(GPU), logscope.read(SPEC)], ["gpu", "spec"])
    dec = api.filter(pl.col("metric") == "decode t/s, median per request (exact)").row(
        0, named=True)
    got = rows["decode t/s, median per request (exact)"]
    assert got["gpu"] == pytest.approx(dec["gpu"], abs=0.005)
    assert got["spec"] == pytest.approx(dec["spec"], abs=0.005)
    assert got["Δ spec"] == pytest.approx(dec["spec"] - dec["gpu"], abs=0.005)
    assert got["% spec"] == pytest.approx(100 * (dec["spec"] - dec["gpu"]) / dec["gpu"],
                                          abs=0.005)
    assert out.stat().st_size > 10_000
    md = run("compare", GPU, SPEC)
    assert md.exit_code == 0 and "| metric |" in md.output and "%" in md.output
    assert md.stdout.startswith("## Verdict")


def test_logs_of_one_file_name_are_told_apart_by_their_folders(tmp_path):
    from logscope.cli._common import distinct_names
    assert distinct_names(["a/x/run.log", "b/x/run.log", "c.log"]) == [
        "a/x/run.log", "b/x/run.log", "c.log"]
    assert distinct_names(["x.log", "x.log"]) == ["x.log", "x.log (2)"]
    for d in ("before", "after"):   # the same file name in two folders, as users keep runs
        (tmp_path / d).mkdir()
        (tmp_path / d / "server.log").write_bytes(
            Path(GPU if d == "before" else SPEC).read_bytes())
    r = run("compare", str(tmp_path / "before" / "server.log"),
            str(tmp_path / "after" / "server.log"))
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("## Verdict: after/server.log (B) against before/server.log (A)")
    assert "| before/server.log | n before/server.log | after/server.log |" in r.stdout


def test_plot_and_card_commands_write_files(tmp_path):
    for sub in ("prefill-curve", "decode"):
        out = tmp_path / f"{sub}.svg"
        r = run("plot", sub, GPU, SPEC, "-o", str(out))
        assert r.exit_code == 0, r.output
        assert out.read_text().startswith("<?xml")
    r = run("plot", "acceptance", SPEC, "-o", str(tmp_path / "a.png"))
    assert r.exit_code == 0
    r = run("card", SPEC, "-o", str(tmp_path / "card.png"))
    assert r.exit_code == 0 and (tmp_path / "card.png").stat().st_size > 20_000


@pytest.mark.parametrize("args,msg", [
    (("plot", "acceptance", GPU), "no speculative decoding data in generated-gpu"),
    (("plot", "pressure", SPEC), "no pressure data"),
])
def test_no_data_is_a_one_line_error(tmp_path, args, msg):
    r = run(*args, "-o", str(tmp_path / "x.png"))
    assert r.exit_code == 1
    assert msg in r.output and "Traceback" not in r.output
    assert not (tmp_path / "x.png").exists()


def test_empty_and_foreign_logs(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    foreign = tmp_path / "foreign.log"
    foreign.write_text("hello\nnot a server\n")
    startup = tmp_path / "startup.log"
    with open(GPU) as f:
        startup.write_text("\n".join(f.read().splitlines()[:9]) + "\n")
    for log in (empty, foreign):
        for args in (("report", str(log)), ("card", str(log), "-o", str(tmp_path / "c.png")),
                     ("plot", "prefill-curve", str(log), "-o", str(tmp_path / "p.png"))):
            r = run(*args)
            assert r.exit_code == 1, (args, r.output)
            assert "Error: no llama-server, SGLang or vLLM lines in" in r.output
            assert "Traceback" not in r.output
    r = run("plot", "prefill-curve", str(startup), "-o", str(tmp_path / "p.png"))
    assert r.exit_code == 1 and "no prefill data in startup.log" in r.output
    r = run("report", str(startup))
    assert r.exit_code == 1 and "no timing, throughput or acceptance lines" in r.output
    r = run("card", str(startup), "-o", str(tmp_path / "c.png"))
    assert r.exit_code == 1 and "no prefill, decode or speculative data" in r.output


def test_bad_arguments(tmp_path):
    r = run("plot", "decode", GPU, "-o", str(tmp_path / "x.jpg"))
    assert r.exit_code == 2 and ".png" in r.output
    r = run("plot", "decode", str(tmp_path / "missing.log"), "-o", str(tmp_path / "x.png"))
    assert r.exit_code == 2 and "missing.log" in r.output
    r = run("compare", GPU)
    assert r.exit_code == 2
    r = run("report", GPU, "--label", "a", "--label", "b")
    assert r.exit_code == 2


ALL_LOGS = sorted(str(p) for p in (CORPUS.parent.parent).rglob("*.log"))


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.split("fixtures/")[-1])
def test_every_fixture_gives_output_or_a_one_line_error(log):
    """No fixture of any engine makes an analysis crash: a result, or NoData with a message."""
    from logscope.analysis._util import NoData
    from logscope.ingest import NoServerLines
    from logscope.outputs.plots import (
        card,
        plot_acceptance,
        plot_decode,
        plot_prefill_curve,
        plot_pressure,
    )

    try:
        logs = logscope.read(log)
    except NoServerLines:
        r = run("report", log)
        assert r.exit_code == 1 and r.output.startswith("Error: no llama-server")
        return
    for fn in (plot_prefill_curve, plot_decode, plot_acceptance, plot_pressure, card):
        try:
            fn(logs)
        except NoData as e:
            assert str(e).startswith("no ")
    rep = build_report([logs])
    for fmt in ("md", "csv", "json"):
        assert isinstance(render(rep, fmt), str)
    r = run("report", log, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    if r.exit_code == 1:
        assert r.output.startswith("Error: ") and r.output.count("\n") == 1, r.output


def test_report_concurrency_table():
    j = json.loads(run("report", GPU, "--format", "json").output)
    rows = {(r["decoding"], r["prefilling"]): r for r in j["concurrency"]}
    assert {k for k, _ in rows} == {1, 2}           # a 2-slot server: never 3 decoding
    for r in j["concurrency"]:
        assert set(r) >= {"decoding", "prefilling", "seconds", "per_stream_tps",
                          "aggregate_tps", "n"}
    # the alone row's median request is the median exact rate of the five requests that
    # decoded alone; its per stream and aggregate are one number (the same tokens and seconds)
    assert rows[(1, 0)]["median_request_tps"] == pytest.approx(290.94, rel=0.01)
    assert rows[(1, 0)]["per_stream_tps"] == pytest.approx(rows[(1, 0)]["aggregate_tps"],
                                                           rel=1e-3)
    # two decoding at once: per stream is the aggregate ÷ 2
    two = rows[(2, 0)]
    assert two["per_stream_tps"] * 2 == pytest.approx(two["aggregate_tps"], rel=1e-3)
    assert two["aggregate_tps"] == pytest.approx(two["tokens"] / two["seconds"], rel=1e-2)
    assert j["streams"] and j["headline"][next(iter(j["headline"]))]["served"]["throughput_tps"]
    assert "Decode by concurrency" in run("report", GPU).output


def test_engine_option():
    r = run("report", GPU, "--engine", "vllm")
    assert r.exit_code == 1 and "no vllm lines in" in r.output
    assert run("report", GPU, "--engine", "llama-server", "--format", "csv").output == \
        run("report", GPU, "--format", "csv").output


def test_report_says_why_few_window_lines_measure_nothing(tmp_path):
    """A pasted excerpt of one SGLang decode line and a prefill: figure lines, no measurement."""
    log = tmp_path / "excerpt.log"
    log.write_text(
        "[2026-01-02 10:00:01] Decode batch, #running-req: 7, #token: 9000, token usage: 0.05, "
        "cuda graph: True, gen throughput (token/s): 512.40, #queue-req: 0\n"
        "[2026-01-02 10:00:01] Prefill batch, #new-seq: 1, #new-token: 300, #cached-token: 0, "
        "token usage: 0.05, #running-req: 7, #queue-req: 0, cuda graph: True, "
        "input throughput (token/s): 900.10\n")
    r = run("report", str(log))
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "decode_batch 1, prefill_batch 1" in r.output and "no measurement" in r.output
