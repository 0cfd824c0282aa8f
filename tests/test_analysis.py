"""The passive benchmark's analyses (issue 4) on the real corpus, against the client's timings."""

from __future__ import annotations

import polars as pl
import pytest

import logscope
from logscope.analysis.decode import (
    decode_aggregate,
    decode_requests,
    decode_windows,
)
from logscope.analysis.metrics import acceptance_summary
from logscope.analysis.prefill import PREDICT_AT, fit_prefill, prefill_curve
from logscope.analysis.pressure import pressure_events, pressure_summary, pressure_timeline
from logscope.analysis.report import build_report, render
from logscope.analysis.spec import (
    acceptance_per_position,
    acceptance_requests,
    acceptance_windows,
)
from logscope.analysis.window_fit import vllm_interval_s
from tests.conftest import CORPUS, FIXTURES, client_records, client_timings

RUNS = sorted(CORPUS.glob("generated-*.log"))
GPU = CORPUS / "generated-gpu-q8kv-c256k-np2.log"


def matched(log) -> list[tuple[dict, dict]]:
    """(client timings, requests row) pairs, matched on token counts as test_corpus_client."""
    req = logscope.read(str(log))["requests"].filter(pl.col("status") == "completed")
    req = req.with_row_index("i")
    used: set[int] = set()
    out = []
    for rec in client_records(log):
        t = client_timings(rec)
        if t is None:
            continue
        cand = req.filter(
            (pl.col("prompt_tokens") == t["prompt_n"]) & (pl.col("gen_tokens") == t["predicted_n"])
            & ~pl.col("i").is_in(list(used)))
        exact = cand.filter(pl.col("cached_tokens") == t["cache_n"])
        row = (exact if exact.height else cand).row(0, named=True)
        used.add(row["i"])
        out.append((t, row))
    return out


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.stem)
def test_prompt_and_decode_tps_within_2pct_of_client(log):
    logs = logscope.read(str(log))
    pts = prefill_curve(logs).filter(pl.col("source") == "llama:request")
    dec = decode_requests(logs)
    pairs = matched(log)
    assert pairs
    for t, row in pairs:
        p = pts.filter(pl.col("task") == row["task"], pl.col("slot") == row["slot"])
        d = dec.filter(pl.col("task") == row["task"], pl.col("slot") == row["slot"])
        assert p.height == 1 and d.height == 1
        assert p["tokens"][0] == t["prompt_n"]
        assert d["gen_tokens"][0] == t["predicted_n"]
        assert rel(p["tps"][0], t["prompt_per_second"]) < 0.02
        assert rel(d["decode_tps"][0], t["predicted_per_second"]) < 0.02
        # computed from the exact times too, not only the printed rate
        assert rel(p["tokens"][0] / p["seconds"][0], t["prompt_per_second"]) < 0.02


def test_prefill_points_count_only_computed_tokens():
    pts = prefill_curve(logscope.read(str(GPU)))
    r = pts.filter(pl.col("source") == "llama:request", pl.col("task") == 2750).row(0, named=True)
    assert r["cached"] == 51567 and r["tokens"] == 30486
    assert r["depth"] == pytest.approx(51567 + 30486 / 2)
    assert r["exactness"] == "exact per request"
    ticks = pts.filter(pl.col("source") == "llama:tick", pl.col("task") == 2730).sort("depth")
    assert ticks.height == 16 and (ticks["exactness"] == "tick interval").all()
    # consecutive ticks 2047 tokens apart, timed on the server clock
    second = ticks.row(1, named=True)
    assert second["tokens"] == 41193 - 39146
    assert second["seconds"] == pytest.approx(36.697658 - 36.480824, abs=1e-6)
    assert second["depth"] == pytest.approx(1 + (39146 + 41193) / 2)


def test_fit_shows_prefill_slowing_with_depth():
    pts = prefill_curve(logscope.read(str(GPU)))
    for sources in (None, ("llama:request",)):
        fit = fit_prefill(pts, sources=sources, n_ctx=131072)
        assert fit["valid"], fit
        assert fit["b"] > 0 and fit["c"] >= 0 and fit["a"] >= 0
        pred = [fit["predict"][d] for d in PREDICT_AT if fit["predict"][d] is not None]
        assert len(pred) >= 3
        assert pred == sorted(pred, reverse=True)
        # never beyond the slot's context
        assert fit["predict"][131072] is None or fit["depth_range"][1] * 1.25 >= 131072


def test_fit_refuses_too_little_data():
    pts = prefill_curve(logscope.read(str(CORPUS / "seed000-joker-short-task.log")))
    fit = fit_prefill(pts)
    assert not fit["valid"] and fit["reason"]
    assert fit_prefill(pts.head(0))["valid"] is False


def test_decode_windows_carry_tg_3s_and_depth():
    logs = logscope.read(str(GPU))
    w = decode_windows(logs)
    dp = logs["decode_progress"]
    assert w.height == dp.height
    assert sorted(w["tps"].to_list()) == sorted(dp["tg_3s"].to_list())
    first = w.filter(pl.col("task") == 2750).sort("t").row(0, named=True)
    assert first["depth"] == 51567 + 30486 + 100
    assert first["exactness"].startswith("window")


def test_decode_aggregate_sums_concurrent_requests():
    logs = logscope.read(str(GPU))
    agg = decode_aggregate(logs)
    two = agg.filter(pl.col("active") == 2)
    assert two.height >= 1
    # tasks 804 (103.47 t/s) and 806 (95.46 t/s) decode together
    assert 103.47 + 95.46 in [pytest.approx(x) for x in two["tps"].to_list()]
    assert set(agg.filter(pl.col("t1") > pl.col("t0"))["active"].to_list()) == {1, 2}


def test_acceptance_per_request_matches_client():
    log = CORPUS / "generated-spec-pilot-c32k-np2.log"
    acc = acceptance_requests(logscope.read(str(log)))
    n = 0
    for t, row in matched(log):
        if not t.get("draft_n"):
            continue
        a = acc.filter(pl.col("task") == row["task"]).row(0, named=True)
        assert a["generated"] == t["draft_n"] and a["accepted"] == t["draft_n_accepted"]
        assert a["rate"] == pytest.approx(t["draft_n_accepted"] / t["draft_n"])
        n += 1
    assert n == acc.height
    s = acceptance_summary(logscope.read(str(log)))
    assert s["exactness"] == "exact per request" and 1 < s["mean_len"] < 4
    assert acceptance_windows(logscope.read(str(log))).height == 0


def test_acceptance_per_position_when_printed():
    pp = acceptance_per_position(logscope.read(str(GPU)))
    assert pp.height == 0
    for log in sorted(CORPUS.glob("*.log")):
        logs = logscope.read(str(log))
        dpp = logs.get("draft_per_position")
        pp = acceptance_per_position(logs)
        if dpp is not None and dpp.height:
            assert pp.height == dpp["acc_per_pos"].list.len().sum()


def test_pressure_llama_context_shift_and_running():
    logs = logscope.read(str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"))
    ev = pressure_events(logs)
    assert ev.filter(pl.col("kind") == "context_shift").height == logs["context_shift"].height
    tl = pressure_timeline(logs)
    assert tl["running"].max() == 2 and tl["running"].min() == 0
    assert pressure_summary(logs)["message"] is None


def test_pressure_sglang_retract_and_usage():
    log = FIXTURES / "sglang" / "v0.1.14-new-fill-batch.log"
    if not log.exists():
        pytest.skip("no SGLang fixture")
    logs = logscope.read(str(log))
    if logs.get("retract") is None:
        pytest.skip("SGLang engine model not present")
    s = pressure_summary(logs)
    assert s["retracted"] == int(logs["retract"]["retracted_reqs"].sum())
    assert 0 < s["kv_usage_max"] <= 1


def test_pressure_empty_says_so():
    s = pressure_summary(logscope.read(str(CORPUS / "generated-spec-pilot-c32k-np2.log")))
    assert s["events"] == {} and "no pressure data" in s["message"]


def _engine_fixture(rel, table):
    log = FIXTURES / rel
    if not log.exists():
        pytest.skip(f"no fixture {rel}")
    logs = logscope.read(str(log))
    if logs.get(table) is None or logs[table].height == 0:
        pytest.skip(f"{table} frame not produced (engine model absent)")
    return logs


def test_vllm_windows_are_labelled_window_averages():
    from logscope.analysis.report import headline, window_table
    logs = _engine_fixture("vllm/v0.8.5-eagle-mal-no-plus-one.log", "engine_stats")
    es = logs["engine_stats"]
    w = decode_windows(logs)
    assert w.height == es["gen_throughput"].drop_nulls().len()
    assert (w["exactness"] == "server window average").all()
    assert sorted(w["tps"].to_list()) == sorted(es["gen_throughput"].drop_nulls().to_list())
    acc = acceptance_windows(logs)
    sd = logs["spec_decoding"]
    assert acc["rate"].to_list() == pytest.approx((sd["draft_acceptance_pct"] / 100).to_list())
    wt = window_table(logs)
    assert set(wt["exactness"]) == {"server window average"}
    # no clean interval (below): no per-stream row either, never a plain mean of windows
    assert wt.filter(pl.col("kind") == "tg").height == 0
    pp = wt.filter(pl.col("kind") == "pp")
    with_prompts = es.filter(pl.col("prompt_throughput") * vllm_interval_s(logs) >= 64,
                             pl.col("running_reqs") > 0)
    assert pp["n"].sum() == with_prompts.height > 0
    assert pp["test"].str.starts_with("pp (busiest interval, at least) @ running=").all()
    busiest = with_prompts.group_by("running_reqs").agg(pl.col("prompt_throughput").max())
    assert sorted(pp["tps_mean"].to_list()) == sorted(busiest["prompt_throughput"].to_list())
    h = headline(logs)
    # its two intervals: one spans a prefill, in the other the running count fell 2 -> 1:
    # no clean window, so no per-stream decode headline (never one figure across states)
    assert h["decode"] is None
    assert "no state identified by the window fit" in render(build_report([logs]), "md")


def test_sglang_prefill_batches_give_window_points():
    logs = _engine_fixture("sglang/v0.2.0-gpu-id.log", "decode_batch")
    pts = prefill_curve(logs)
    pb = logs["prefill_batch"]
    if "input_throughput" in pb.columns and pb["input_throughput"].null_count() < pb.height:
        assert (pts.filter(pl.col("source") == "sglang:batch")["exactness"]
                == "server window average").all()
    else:
        assert pts.height == 0   # old SGLang: no throughput on the prefill line, no point
    agg = decode_aggregate(logs)
    assert agg["active"].to_list() == logs["decode_batch"]["running_req"].to_list()


def test_fit_flags_extrapolated_depths():
    pts = prefill_curve(logscope.read(str(CORPUS / "seed000-joker-long-agent-task.log")))
    fit = fit_prefill(pts)
    assert fit["valid"]
    lo, hi = fit["depth_range"]
    assert lo > 40000 and hi < 80000
    # inside the measured depths (×1.25 at most) only: nothing at 4k/16k/32k or 128k
    assert fit["predict"][65536] is not None and fit["extrapolated"][65536] is False
    for d in (4096, 16384, 32768, 131072):
        assert fit["predict"][d] is None and "outside the measured depths" in fit["refused"][d]


def test_config_card_does_not_guess_what_the_log_does_not_say():
    from logscope.analysis.report import config_card
    excerpt = config_card(logscope.read(str(CORPUS / "seed000-joker-short-task.log")))
    assert excerpt["spec method"] == "speculative (startup lines not in the log)"
    assert excerpt["model"] is None
    ngram = config_card(logscope.read(str(CORPUS / "generated-ngram-c4k-np1.log")))
    assert ngram["spec method"].startswith("draft-free")
    gpu = config_card(logscope.read(str(GPU)))
    assert gpu["spec method"] is None and gpu["context per slot"] == 131072


class _FakeLogs:
    def __init__(self, **tables):
        self.tables = tables
        self.files = []
        self.engines = ["llama-server"]

    def get(self, name):
        return self.tables.get(name)


def test_aggregate_tolerates_requests_without_times():
    req = logscope.read(str(GPU))["requests"]
    broken = req.with_columns(
        pl.when(pl.col("task") == 201).then(None).otherwise(pl.col("t_end")).alias("t_end"))
    agg = decode_aggregate(_FakeLogs(requests=broken))
    assert agg.height > 0
    # the sweep gives the same segments as the original when nothing is missing
    full = decode_aggregate(_FakeLogs(requests=req))
    assert full["tps"].to_list() == pytest.approx(
        decode_aggregate(logscope.read(str(GPU)))["tps"].to_list())
    assert (full["t1"] > full["t0"]).all()


def test_vllm_mean_accepted_length_from_drafted_and_configured_tokens():
    """vLLM 0.8.0–0.8.4 print "Accepted: A tokens, Drafted: D tokens" and no mean: with the
    configured k draft tokens per step, D ÷ k drafts each emit their accepted tokens and one
    more, vLLM's own later mean (1 + accepted ÷ drafts)."""
    from logscope.analysis.metrics import mean_accepted_length

    logs = logscope.read(str(FIXTURES / "vllm" / "v0.8.4-eagle.log"))
    sd = logs["spec_decoding"]
    acc, dr = sd["num_accepted_tokens"].sum(), sd["num_draft_tokens"].sum()
    assert "mean_acceptance_length" not in sd.columns \
        or sd["mean_acceptance_length"].null_count() == sd.height
    m = mean_accepted_length(logs)
    assert m["value"] == pytest.approx(1 + acc / (dr / 3))
    assert 1 < m["value"] < 4   # at most k + 1 tokens a step


def test_vllm_v0_speculative_totals_are_the_runs_pooled_figures():
    """V0's "Speculative metrics" count since the engine started: a run's last line holds its
    totals, k draft tokens a step, each step emitting its accepted tokens and one more."""
    from logscope.analysis.metrics import acceptance_rate, mean_accepted_length

    logs = logscope.read(str(FIXTURES / "vllm" / "v0.6.3-ngram-journald.log"))
    last = logs["spec_decoding"].sort("line").row(-1, named=True)
    k = last["num_spec_tokens"]
    assert acceptance_rate(logs)["value"] == pytest.approx(
        last["total_accepted_tokens"] / last["total_draft_tokens"])
    assert mean_accepted_length(logs)["value"] == pytest.approx(
        last["total_emitted_tokens"] / (last["total_draft_tokens"] / k))


def test_vllm_served_span_leaves_out_the_time_between_runs_and_idle_stretches():
    """Two runs months apart: the served span is each run's own, summed; a 21-minute gap
    with no stats line after `Running: 0` is idle, not one interval's work."""
    from logscope.analysis.served import served
    from logscope.analysis.windows import decode_intervals

    s = served(logscope.read(str(FIXTURES / "vllm" / "dev-builds-spec.log")))
    assert s["span_s"] < 60 and s["throughput_tps"] > 50   # not 2,938 tokens over 161 days
    logs = logscope.read(str(FIXTURES / "vllm" / "v0.6.6-logging-prefix.log"))
    d = decode_intervals(logs)
    assert d["seconds"].max() <= 5.0 + 1e-9          # the stats interval, never the idle gap
    s = served(logs)
    assert s["idle_s"] > 1200 and s["busy_tps"] < 200
    parts = s["decode_s"] + s["decode_prefill_s"] + s["prefill_s"] + s["stall_s"] + s["idle_s"]
    assert parts == pytest.approx(d["seconds"].sum() + s["idle_s"])


def test_sglang_time_only_stamps_go_on_past_midnight():
    """``[HH:MM:SS TP0]`` stamps (before 0.3.4) carry no date: a log that runs past midnight
    goes on into the next day, not back to the morning of the same one."""
    logs = logscope.read(str(FIXTURES / "sglang" / "v0.3.0-hms-tp.log"))
    ts = pl.concat([logs["prefill_batch"].select("line", "ts"),
                    logs["decode_batch"].select("line", "ts")]).sort("line")["ts"]
    assert ts.is_sorted()
    assert (ts.max() - ts.min()).total_seconds() < 3600


def test_vllm_stats_interval_is_read_per_server_run():
    """A restart onto a release with another stats interval (5 s, then 10 s): each run's
    tokens are its lines' throughputs × its own interval."""
    from logscope.analysis.window_fit import window_throughput

    logs = logscope.read(str(FIXTURES / "vllm" / "v0.7.3-v0.8.2-upgrade-compose.log"))
    es = logs["engine_stats"].sort("line")
    want = sum(float(g["gen_throughput"].sum()) * (5.0 if r == 1 else 10.0)
               for (r,), g in es.group_by("run"))
    assert window_throughput(logs)["tokens"] == pytest.approx(want)
