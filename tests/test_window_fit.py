"""Decode from mixed windows (logscope.analysis.window_fit) on SGLang and vLLM logs rendered from
real GPU runs of agent workloads (scripts/render_engine_logs.py, truth per state beside each):
per-stream decode per state clean and as served, aggregate, served throughput, refusals that
name the term, and compare's decode verdict against the truth's ratio."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

import logscope
from logscope.analysis.metrics import mean_accepted_length
from logscope.analysis.verdict import verdict
from logscope.analysis.window_fit import state_fit, window_throughput
from tests.conftest import FIXTURES

SG = FIXTURES / "sglang" / "rendered"
VL = FIXTURES / "vllm" / "rendered"
VLLM_1S = ["sweep-np1-interval1", "sweep-np2-interval1", "sweep-np4-interval1"]
AGENT = ["sweep-np1", "sweep-np2", "sweep-np4", "spec-c256k-np2", "q8kv-c256k-np2"]
# measured misses (bench/RESULTS.md, "SGLang and vLLM under agent load"): at 2 slots with
# whole-second stamps a prompt starts as a slot frees, so the one-stream state's aggregate (k ×
# as served) carries the prompt term's error (measured -7.1 %; with SGLANG_LOG_MS=1 -3.8 %);
# q8kv's two-stream state decodes 10 s at 87 t/s in 3 intervals (measured +5.6 %)
AGG_TOL = {("sweep-np2", 1): 0.10, ("q8kv-c256k-np2", 2): 0.10}


def _truth(path):
    return json.loads(path.with_name(path.name.replace(".log", ".truth.json")).read_text())


@pytest.mark.parametrize("name", AGENT + ["pressure-np4", "sweep-np2-ms", "sweep-np4-ms",
                                          "spec-c256k-np2-ms"])
def test_sglang_per_stream_decode_per_state_clean_and_served(name):
    log = SG / f"{name}.log"
    truth = _truth(log)["states"]
    fit = {r["decoding"]: r for r in state_fit(logscope.read(str(log))).iter_rows(named=True)}
    checked = 0
    for k, t in truth.items():
        if t["decode_seconds"] < 5:
            continue
        r = fit[int(k)]
        assert r["reason"] is None, r["reason"]
        for what in ("clean", "served"):
            assert r[f"{what}_per_stream"] == pytest.approx(t[f"{what}_per_stream"], rel=0.10)
            assert r[f"{what}_lo"] <= r[f"{what}_per_stream"] <= r[f"{what}_hi"]
        tol = AGG_TOL.get((name.removesuffix("-ms"), int(k)), 0.05)
        assert r["aggregate"] == pytest.approx(t["aggregate"], rel=tol)
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize("root", [SG, VL], ids=["sglang", "vllm"])
@pytest.mark.parametrize("name", AGENT)
def test_served_throughput_within_5pct(name, root):
    log = root / f"{name}.log"
    got = window_throughput(logscope.read(str(log)))
    assert got["tps"] == pytest.approx(_truth(log)["run"]["throughput"], rel=0.05)


def test_cpu_run_whose_forty_steps_last_seconds_is_refused_not_guessed():
    """The CPU run decodes at 4-20 t/s: an SGLang line's 40 steps span 10-20 s in which the
    streams' rates move; its states' intervals are wider than half the figure: refused."""
    fit = state_fit(logscope.read(str(SG / "spec-c32k-np2.log")))
    assert fit.height and fit["reason"].is_not_null().all()
    assert fit["reason"].str.contains("not identified").all()


def test_a_state_too_rare_is_refused_naming_the_term():
    """4 slots: one stream decoded alone for 0.6 s in the whole run."""
    fit = state_fit(logscope.read(str(SG / "sweep-np4.log")))
    one = fit.filter(pl.col("decoding") == 1).row(0, named=True)
    assert one["clean_per_stream"] is None
    assert "step time is not identified" in one["reason"] and "interval(s)" in one["reason"]


@pytest.mark.parametrize("name", ["sweep-np1", "sweep-np2", "sweep-np4"])
def test_vllm_short_agent_runs_refuse_with_the_reason(name):
    """A 45-80 s run is 5-8 ten-second intervals, each holding prompts and several states:
    the step terms are not identified, and the fit says so instead of guessing."""
    fit = state_fit(logscope.read(str(VL / f"{name}.log")))
    truth = _truth(VL / f"{name}.log")["states"]
    for r in fit.iter_rows(named=True):
        t = truth.get(str(r["decoding"]))
        if r["reason"] is None and t and t["decode_seconds"] >= 5:
            assert r["clean_per_stream"] == pytest.approx(t["clean_per_stream"], rel=0.10)
        elif r["reason"] is not None:
            assert "not identified" in r["reason"]
            assert r["served_per_stream"] is None


@pytest.mark.parametrize("name", VLLM_1S)
def test_vllm_at_a_one_second_stats_interval_clean_within_10pct(name):
    """The advice the refusals give (VLLM_LOG_STATS_INTERVAL=1), taken: the same runs at a 1 s
    interval give the busiest state's clean per-stream decode within 10 %."""
    log = VL / f"{name}.log"
    truth = _truth(log)["states"]
    fit = state_fit(logscope.read(str(log)))
    got = [r for r in fit.iter_rows(named=True) if r["reason"] is None
           and str(r["decoding"]) in truth and truth[str(r["decoding"])]["decode_seconds"] >= 5]
    assert got
    for r in got:
        t = truth[str(r["decoding"])]
        assert r["clean_per_stream"] == pytest.approx(t["clean_per_stream"], rel=0.10)


def test_vllm_long_run_two_streams_clean_within_10pct():
    log = VL / "spec-c256k-np2.log"
    r = state_fit(logscope.read(str(log))).filter(pl.col("decoding") == 2).row(0, named=True)
    assert r["clean_per_stream"] == pytest.approx(
        _truth(log)["states"]["2"]["clean_per_stream"], rel=0.10)


@pytest.mark.parametrize("log", [SG / "spec-c256k-np2.log", VL / "spec-c256k-np2.log"],
                         ids=["sglang", "vllm"])
def test_mean_accepted_length_within_2pct(log):
    got = mean_accepted_length(logscope.read(str(log)))["value"]
    assert got == pytest.approx(_truth(log)["acceptance"]["mean_len"], rel=0.02)


PAIRS = [("q8kv-c256k-np2", "spec-c256k-np2"), ("sweep-np1", "sweep-np4"),
         ("sweep-np1", "sweep-np2")]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-vs-{p[1]}")
def test_compare_decode_interval_holds_the_truths_ratio(engine, pair):
    root = FIXTURES / engine / "rendered"
    a, b = (root / f"{n}.log" for n in pair)
    v = verdict(logscope.read(str(a)), logscope.read(str(b)), pair)
    d = next(x for x in v if x["question"] == "decode_per_stream")
    ta, tb = _truth(a), _truth(b)
    if d.get("states"):   # matched states: clean per stream, weighted like the verdict
        ks = [s.split()[0] for s in d["states"]]
        lr = [math.log(tb["states"][k]["clean_per_stream"] / ta["states"][k]["clean_per_stream"])
              for k in ks]
        true = math.exp(sum(w * x for w, x in zip(d["weights"], lr, strict=True))
                        / sum(d["weights"]))
    else:                 # no state on both sides: a stream as served over the run
        true = tb["run"]["served_per_stream"] / ta["run"]["served_per_stream"]
    assert d["ratio"] is not None, d["sentence"]
    assert d["ci95"][0] <= true <= d["ci95"][1], (d["sentence"], true)


def test_report_prints_the_fit_per_state_or_the_reason_and_cure():
    from click.testing import CliRunner

    from logscope.cli import cli

    sg = CliRunner().invoke(cli, ["report", str(SG / "sweep-np4.log")])
    assert "decode per stream at 4 decoding (window fit" in sg.output
    assert "clean" in sg.output and "as served" in sg.output
    vl = CliRunner().invoke(cli, ["report", str(VL / "sweep-np4.log")])
    assert "decode per stream: no figure at 4 decoding" in vl.output
    assert "VLLM_LOG_STATS_INTERVAL=1" in vl.output


def test_no_window_lines_no_rows():
    log = next((FIXTURES / "llama-server").glob("*.log"))
    assert state_fit(logscope.read(str(log))).height == 0
    assert window_throughput(logscope.read(str(log))) is None
