"""Served throughput, the streams table, the trade in compare and the passive Pareto."""

from __future__ import annotations

import json
import statistics

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis._util import NoData
from logscope.analysis.served import frontier, served, streams, throughput_blocks, time_budget
from logscope.analysis.verdict import verdict
from logscope.cli import cli
from tests.conftest import CORPUS, FIXTURES

SWEEP = FIXTURES / "telemetry" / "h100"
SHARED = CORPUS.parent.parent.parent.parent / "shared" / "corpus"
LOGS = {n: SWEEP / f"generated-gpu-sweep-np{n}.log" for n in (1, 2, 4)}


@pytest.fixture(scope="module")
def sweep():
    return {n: logscope.read(str(p)) for n, p in LOGS.items()}


def _client(n: int) -> dict:
    path = SHARED / f"generated-gpu-sweep-np{n}.client.jsonl"
    if not path.exists():
        pytest.skip("the clients' records live in ../shared/corpus")
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    toks = sum(r["timings"]["predicted_n"] for r in recs)
    span = max(r["t_end"] for r in recs) - min(r["t_send"] for r in recs)
    return {"throughput": toks / span, "tokens": toks,
            "per_stream": statistics.median(r["timings"]["predicted_per_second"]
                                            for r in recs)}


@pytest.mark.parametrize("n", [1, 2, 4])
def test_served_throughput_is_the_clients(sweep, n):
    s, c = served(sweep[n]), _client(n)
    assert s["completion_tokens"] == pytest.approx(c["tokens"], abs=1e-6)
    assert s["throughput_tps"] == pytest.approx(c["throughput"], rel=0.01)
    assert s["per_stream_tps"] == pytest.approx(c["per_stream"], rel=0.01)
    # the served span's seconds are its states' seconds
    parts = sum(s[k] for k in ("decode_s", "decode_prefill_s", "prefill_s", "stall_s",
                               "idle_s"))
    assert parts == pytest.approx(s["span_s"], rel=1e-9)
    assert s["max_streams"] == n and s["slots"] == n
    tok, sec = throughput_blocks(sweep[n])
    assert tok.sum() / sec.sum() == pytest.approx(s["throughput_tps"], rel=1e-9)


def test_budget_adds_up_and_names_the_stalls(sweep):
    tb = time_budget(sweep[4])
    assert tb["share"].sum() == pytest.approx(1.0)
    sec = dict(tb.group_by("state").agg(pl.col("seconds").sum()).iter_rows())
    # the prompt-cache saves before launches block the loop: stalls, not decode time
    assert 5.0 < sec["stall"] < 8.0
    assert sec["decode"] > sec["decode + prefill"] > sec["prefill"]


def test_streams_rows(sweep):
    st = streams(sweep[4])
    assert st["decoding"].to_list() == [1, 2, 3, 4]
    assert ((st["per_stream_tps"] * st["decoding"] - st["aggregate_tps"]).abs() < 1e-9).all()
    assert st["share"].sum() == pytest.approx(1.0)
    gain = st.filter(pl.col("decoding") == 4).row(0, named=True)
    three = st.filter(pl.col("decoding") == 3).row(0, named=True)
    assert gain["gain_tps"] == pytest.approx(gain["aggregate_tps"] - three["aggregate_tps"])
    # more streams, more aggregate on this GPU; each stream never faster than the run's best
    assert st["aggregate_tps"].is_sorted()


@pytest.mark.parametrize("a,b", [(1, 2), (1, 4), (2, 4)])
def test_compare_states_both_sides_of_the_trade(sweep, a, b):
    ca, cb = _client(a), _client(b)
    rows = {r["question"]: r for r in verdict(sweep[a], sweep[b], (f"np{a}", f"np{b}"))}
    t, p = rows["throughput"], rows["decode_per_stream"]
    assert t["ratio"] == pytest.approx(cb["throughput"] / ca["throughput"], rel=0.08)
    assert p["ratio"] == pytest.approx(cb["per_stream"] / ca["per_stream"], rel=0.08)
    assert t["ci95"][0] <= cb["throughput"] / ca["throughput"] <= t["ci95"][1]
    assert p["ci95"][0] <= cb["per_stream"] / ca["per_stream"] <= p["ci95"][1]
    trade = rows["trade"]["sentence"]
    assert trade.startswith(f"np{b}: ") and "a trade, neither is simply faster" in trade
    assert "as served" in p["sentence"]       # different slot counts: no state is a match


def test_frontier():
    x, y = np.array([300.0, 200.0, 150.0, 100.0]), np.array([300.0, 400.0, 350.0, 600.0])
    assert frontier(x, y).tolist() == [3, 1, 0]    # (150, 350) is beaten by (200, 400)


def test_plot_pareto_draws_states_frontier_and_served(sweep, tmp_path):
    from logscope.outputs.plot_pareto import plot_pareto

    fig = plot_pareto([sweep[1], sweep[4]], ["np1", "np4"])
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()}
    assert {"np1|pareto_states", "np1|pareto_served", "np4|pareto_states",
            "np4|pareto_frontier", "np4|pareto_served"} <= gids
    out = tmp_path / "p.png"
    r = CliRunner().invoke(cli, ["plot", "pareto", str(LOGS[1]), str(LOGS[4]), "-o",
                                  str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 10_000


def test_plot_pareto_window_engines(tmp_path):
    from logscope.outputs.plot_pareto import plot_pareto

    logs = [logscope.read(str(FIXTURES / e / "rendered" / "pressure-np4.log"))
            for e in ("sglang", "vllm")]
    fig = plot_pareto(logs, ["sglang", "vllm"])
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()}
    assert {"sglang|pareto_states", "vllm|pareto_states"} <= gids


def test_plot_pareto_without_decode_is_one_line_error(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("0.00.010.000 I srv          init: initializing slots, n_slots = 1\n")
    r = CliRunner().invoke(cli, ["plot", "pareto", str(p), "-o", str(tmp_path / "x.png")])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    with pytest.raises(NoData):
        from logscope.outputs.plot_pareto import plot_pareto
        plot_pareto([logscope.read(str(p))])


def test_report_gives_served_and_streams(sweep):
    r = CliRunner().invoke(cli, ["report", str(LOGS[4])])
    assert r.exit_code == 0, r.output
    assert "- served throughput: 503." in r.output
    assert "## Streams:" in r.output and "not throughput" in r.output
    j = json.loads(CliRunner().invoke(cli, ["report", str(LOGS[2]), "--format",
                                             "json"]).output)
    assert [s["decoding"] for s in j["streams"]] == [1, 2]


def test_a_run_of_two_vllm_intervals_gives_throughput_as_a_lower_bound(tmp_path):
    """Two stats lines: the run starts somewhere in the first interval and ends somewhere in
    the second, and there is no neighbour to read either edge by: the throughput printed is
    the least it can be, said so, and compare gives no throughput verdict on it."""
    from logscope.analysis.report import served_lines
    from logscope.analysis.served import served
    from logscope.analysis.verdict import verdict

    line = ("INFO 11-20 09:00:{s} [loggers.py:123] Engine 000: Avg prompt throughput: 300.0 "
            "tokens/s, Avg generation throughput: {g} tokens/s, Running: {r} reqs, Waiting: 0 "
            "reqs, GPU KV cache usage: {u}%, Prefix cache hit rate: 0.0%")
    short = tmp_path / "short.log"
    short.write_text(line.format(s=11, g=50.0, r=1, u=1.0) + "\n"
                     + line.format(s=21, g=60.0, r=0, u=0.0) + "\n")
    s = served(logscope.read(str(short)))
    assert s["throughput_lower_bound"] is True
    assert s["throughput_tps"] == pytest.approx(1100 / 20.0)
    assert served_lines(s)[0].startswith("- served throughput: at least 55")
    long = FIXTURES / "vllm" / "rendered" / "sweep-np1.log"
    assert served(logscope.read(str(long)))["throughput_lower_bound"] is False
    v = {r["question"]: r for r in verdict(logscope.read(str(short)), logscope.read(str(long)),
                                          ("short", "long"))}
    assert v["throughput"]["ratio"] is None
    assert "short's served span is not read" in v["throughput"]["sentence"]
