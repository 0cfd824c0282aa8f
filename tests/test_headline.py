"""Headline numbers a forum user can paste: one test per defect they used to have.

Fixtures: ``fixtures/llama-server/h200/generated-gpu-spec-c256k-np2.log`` (a real H200 run with
a draft model: a fresh 100k prompt prefilled solo, whose progress lines give per-chunk speeds
from 47k to 98k) and ``fixtures/llama-server/excerpts/tg3s-acceptance-no-start.log`` (a
pasted excerpt: six ``tg_3s`` windows, a ``draft acceptance`` line, a release, no start).
"""

from __future__ import annotations

import csv
import io
import json
import re

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.compare import compare_metrics, workload_differences
from logscope.analysis.depth import prefill_by_depth
from logscope.analysis.metrics import fmt_figure, headline_figures, sig
from logscope.analysis.prefill import fit_prefill, prefill_curve, slot_context
from logscope.analysis.report import bench_table, build_report, render
from logscope.analysis.served import time_budget
from logscope.analysis.timeline import request_times
from logscope.cli import cli
from tests.conftest import CORPUS, FIXTURES

H200 = FIXTURES / "llama-server" / "h200" / "generated-gpu-spec-c256k-np2.log"
EXCERPT = FIXTURES / "llama-server" / "excerpts" / "tg3s-acceptance-no-start.log"
GPU = CORPUS / "generated-gpu-q8kv-c256k-np2.log"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def h200():
    return logscope.read(str(H200))


def solo_chunks(pts: pl.DataFrame) -> pl.DataFrame:
    return pts.filter(pl.col("source") == "llama:tick", ~pl.col("overhead"),
                      ~pl.col("shared").fill_null(True))


# -- the prefill fit misses the log's own numbers ---------------------------------------------

def test_fit_is_within_5pct_of_every_solo_chunk(h200):
    pts = prefill_curve(h200)
    fit = fit_prefill(pts, n_ctx=slot_context(h200))
    chunks = solo_chunks(pts)
    assert chunks.height >= 25 and chunks["depth"].min() < 49000 < 97000 < chunks["depth"].max()
    assert fit["valid"] and fit["basis"] == "solo" and fit["n_shared"] > 0
    for d, tps in chunks.select("depth", "tps").iter_rows():
        assert abs(1 / (fit["a"] + fit["b"] * d) / tps - 1) < 0.05, d
    assert 20 < fit["c_ms"] < 300 and fit["r2"] > 0.95
    # ... but shallow whole prompts ran 4× slower than the model says: one number per
    # question, so the report prints no model headline and says where it disagrees
    md = run("report", H200).output
    assert f"c = {fit['c_ms']:,.0f} ms" not in md
    assert "prefill model: not shown — it disagrees" in md and "2.0k–2.9k fresh prompts" in md
    j = json.loads(run("report", H200, "--format", "json").output)
    assert all(r["fit_tps"] is None for r in j["depth_profile"])
    assert all(v is None for v in j["headline"][H200.name]["prefill_fit"]["predict"].values())


def test_fit_leaves_out_requests_that_shared_the_gpu(h200):
    pts = prefill_curve(h200)
    shared = pts.filter(pl.col("source") == "llama:request", pl.col("task") == 4703).row(
        0, named=True)
    assert shared["shared"] and shared["tps"] == pytest.approx(4096.56, abs=0.01)
    fit = fit_prefill(pts)
    # 4.1k t/s while another slot prefilled 30k: the model (solo) says far faster there
    assert 1 / (fit["a"] + fit["b"] * shared["depth"]) > 2 * shared["tps"]


def test_shallow_fresh_prompt_matches_the_log_with_the_overhead(h200):
    fit = fit_prefill(prefill_curve(h200), at=(4096, 49152), n_ctx=slot_context(h200))
    # the log's shallow solo prompts ran at 23.1–23.8k t/s raw: the model's TTFT for a fresh
    # 4096-token prompt (c + a·n + b·n²/2) gives the same, its marginal rate is higher
    assert 4096 / fit["ttft"][4096] == pytest.approx(23500, rel=0.05)
    assert fit["predict"][4096] > 4096 / fit["ttft"][4096]
    # at 48k the solo chunk speed was 9.4k
    assert fit["predict"][49152] == pytest.approx(9440, rel=0.05)


def test_no_prediction_beyond_the_slot_or_far_from_the_data(h200):
    fit = fit_prefill(prefill_curve(h200), at=(4096, 262144), n_ctx=131072)
    assert fit["predict"][262144] is None and "slot's context" in fit["refused"][262144]
    # a log measured only at 47k–75k does not predict 4k
    joker = fit_prefill(prefill_curve(logscope.read(str(CORPUS / "seed000-joker-long-agent-"
                                                        "task.log"))))
    assert joker["predict"][4096] is None and joker["refused"][4096]


def test_report_at_and_json_prefill_fit(h200):
    r = run("report", H200, "--at", "4096,48k", "--format", "json")
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    f = j["headline"]["generated-gpu-spec-c256k-np2.log"]["prefill_fit"]
    assert set(f) >= {"c", "a", "b", "r2", "predict"}
    assert set(f["predict"]) == {"4096", "49152"}
    assert f["predict"]["49152"] is None and f["agrees"] is False   # the model disagrees
    # one number per depth: the measured bucket there, said to be measured
    at = j["headline"]["generated-gpu-spec-c256k-np2.log"]["prefill_at"]
    assert at["49152"]["basis"] == "measured" and at["49152"]["tps"] > 0
    bad = run("report", H200, "--at", "deep")
    assert bad.exit_code == 1 and "--at" in bad.output


# -- tables a forum reader cannot use ---------------------------------------------------------

def test_prefill_by_depth_reproduces_the_chunks_within_1pct(h200):
    pts = prefill_curve(h200)
    tab = prefill_by_depth(h200).filter(pl.col("kind") == "chunks")
    for d, tps in solo_chunks(pts).select("depth", "tps").iter_rows():
        row = tab.filter(pl.col("depth_lo") <= d, pl.col("depth_hi") > d).row(0, named=True)
        assert abs(row["tps"] / tps - 1) < 0.01, d
    req = prefill_by_depth(h200).filter(pl.col("kind") != "chunks")
    fresh = prefill_by_depth(h200).filter(pl.col("kind") == "fresh prompts")
    assert fresh.filter(pl.col("depth_lo") <= 100001, pl.col("depth_hi") > 100001)[
        "ttft_s"].to_list() == [pytest.approx(11.20531)]
    assert req.height and (req["n_shared"] == 0).all()
    # overhead removed: faster than raw, by the fit's c
    assert (req["tps_no_overhead"] > req["tps"]).all()
    assert req["ttft_s"].min() > 0


def test_bench_table_has_no_degenerate_rows_and_honest_labels(h200):
    b = bench_table(h200)
    tests = b["test"].to_list()
    assert not any(re.match(r"pp(1|8|16) @", t) for t in tests)      # cache hits, tiny prompts
    assert "pp~110k @ d0" in tests and "pp131072 @ d0" not in tests   # 100k and 110.9k prompts
    row = b.filter(pl.col("test") == "pp~110k @ d0").row(0, named=True)
    assert row["n"] == 2 and row["shared"] == 1
    md = run("report", H200).output
    assert "(1 shared)" in md and "Decode by depth and concurrency" in md


def test_a_100k_prompt_is_labelled_pp_100k(tmp_path):
    lines = [ln for ln in H200.read_text().splitlines() if "task 16717 " in ln]
    p = tmp_path / "one.log"
    p.write_text("\n".join(lines) + "\n")
    tests = bench_table(logscope.read(str(p)))["test"].to_list()
    assert tests[0] == "pp~100k @ d0"


# -- the same metric disagrees between commands -----------------------------------------------

def test_acceptance_has_three_significant_digits_and_one_mean_length(h200):
    h = headline_figures(h200)
    assert fmt_figure("acceptance_rate", h["acceptance_rate"]["value"]) == "0.0121"
    assert fmt_figure("acceptance_rate", 0.4125) == "0.412"
    assert sig(0.011805, 3) == 0.0118
    ingest = run("ingest", H200).output
    report = run("report", H200).output
    assert "draft acceptance: 0.0121" in ingest and "acceptance 0.0121" in report
    ml = fmt_figure("mean_accepted_length", h["mean_accepted_length"]["value"])
    assert f"mean accepted length {ml}" in ingest and f"mean accepted length {ml}" in report


def test_csv_and_json_are_rounded_like_the_server():
    out = run("report", H200, "--format", "csv").output
    for r in csv.DictReader(io.StringIO(out)):
        for k in ("tps_mean", "tps_std"):
            if r[k]:
                assert len(r[k].partition(".")[2]) <= 2, (k, r[k])
    j = run("report", H200, "--format", "json").output
    assert "7851.139999" not in j and "7851.14" in j


# -- compare refuses to mislead ----------------------------------------------------------------

def test_compare_shows_n_shared_markers_and_warns():
    a, b = logscope.read(str(H200)), logscope.read(str(GPU))
    df = compare_metrics([a, b], ["spec", "q8"], all_rows=True)
    tg = df.filter(pl.col("metric") == "tg~600 @ d~5k t/s").row(0, named=True)
    assert (tg["n spec"], tg["shared spec"]) == (1, 1)   # not a solo row: not sold as one
    # without --all, rows a log measured fewer than 3 times are left out
    few = compare_metrics([a, b], ["spec", "q8"])
    assert "tg~600 @ d~5k t/s" not in few["metric"].to_list()
    assert ((few["n spec"] >= 3) | few["n spec"].is_null()).all()
    assert workload_differences([a, b], ["spec", "q8"])
    strict = compare_metrics([a, b], ["spec", "q8"], strict=True, all_rows=True)
    assert strict.height and all(m.endswith("t/s, solo") for m in strict["metric"])
    r = CliRunner().invoke(cli, ["compare", str(H200), str(GPU), "--strict", "--all"])
    assert r.exit_code == 0 and "warning: workloads differ" in r.stderr
    assert "(n=" not in r.stdout and "| n " in r.stdout   # n once, in its own column


# -- impossible values -------------------------------------------------------------------------

def test_no_negative_cached_tokens(h200):
    req = h200["requests"]
    assert (req["cached_tokens"].drop_nulls() >= 0).all()
    cancelled = req.filter(pl.col("task") == 10492).row(0, named=True)
    assert cancelled["cached_tokens"] is None or cancelled["cached_tokens"] >= 0


# -- pasted excerpts ----------------------------------------------------------------------------

def test_excerpt_request_is_partial_and_its_figures_count():
    logs = logscope.read(str(EXCERPT))
    r = logs["requests"].row(0, named=True)
    assert r["status"] == "partial" and not r["cancelled"]
    h = headline_figures(logs)
    assert h["mean_accepted_length"]["value"] == pytest.approx(2.65)
    assert h["acceptance_rate"]["value"] == pytest.approx(396 / 960)
    assert h["decode_tps"]["n"] == 6
    rep = run("report", EXCERPT)
    assert rep.exit_code == 0, rep.output
    assert "mean accepted length 2.65" in rep.output and "nothing to report" not in rep.output


def test_excerpt_card_draws_no_empty_or_irrelevant_panel():
    from logscope.outputs.plots import card
    fig = card(logscope.read(str(EXCERPT)))
    panels = [ax for ax in fig.axes if (ax.get_gid() or "").startswith("panel|")
              and ax.get_gid() != "panel|note"]
    assert panels, "the tg_3s windows are drawn"
    for ax in panels:
        assert ax.lines or ax.collections, ax.get_gid()
        assert "KV" not in ax.get_title()
        lo, hi = ax.get_xlim()
        assert hi - lo > 1
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "mean len 2.65" in texts and "Not drawn" in texts


# -- time that nobody sees ----------------------------------------------------------------------

def test_waits_and_stalls_are_reported(h200):
    rt = request_times(h200)
    by = {r["task"]: r for r in rt.iter_rows(named=True)}
    # prompt-cache saves between `selected slot` and `processing task` (corpus README)
    assert by[8925]["select_to_launch_s"] == pytest.approx(90.672763 - 87.751228, abs=1e-3)
    assert by[8926]["select_to_launch_s"] == pytest.approx(3.82, abs=0.01)
    # after `processing task`, before the prompt's compute
    assert by[10523]["launch_to_prompt_s"] == pytest.approx(4.20, abs=0.01)
    tb = time_budget(h200)
    states = dict(tb.group_by("state").agg(pl.col("seconds").sum()).iter_rows())
    assert set(states) >= {"prefill", "decode", "stall"} and states["stall"] > 6
    assert sum(tb["share"]) == pytest.approx(1.0)
    rep = build_report([h200])
    assert "Where the time went" in render(rep, "md")


def test_ingest_json_summary_carries_the_headline(h200):
    from logscope.outputs.summary import json_summary
    s = json_summary(h200)
    assert s["headline"]["acceptance_rate"]["value"] == 0.0121
    assert s["headline"]["decode_tps"]["value"] == pytest.approx(93.97)
