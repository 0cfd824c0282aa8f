"""Every command prints the same headline figures: one definition each (analysis.metrics).

For every corpus log (and the report fixtures), ``ingest``, ``report``, ``compare``, ``card``
and the notebook's ``acceptance_summary`` must show the decode median, the aggregate, the
acceptance rate and the mean accepted length with the same digits.
"""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.metrics import acceptance_summary, fmt_figure, headline_figures
from logscope.cli import cli
from tests.conftest import CORPUS, FIXTURES

LOGS = sorted(CORPUS.glob("*.log")) + sorted((FIXTURES / "llama-server" / "h200").glob("*.log")) \
    + sorted((FIXTURES / "llama-server" / "excerpts").glob("*.log"))
OTHER = CORPUS / "generated-gpu-q8kv-c256k-np2.log"


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def expected(logs) -> dict[str, str]:
    h = headline_figures(logs)
    return {k: fmt_figure(k, v["value"]) for k, v in h.items()
            if v["value"] is not None and k != "prefill_tps"}


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_command_prints_the_same_figures(log, tmp_path):
    logs = logscope.read(str(log))
    want = expected(logs)
    assert want, "every corpus log has at least one headline figure"
    ingest = run("ingest", log)
    report = run("report", log)
    other = OTHER if log.name != OTHER.name else CORPUS / "generated-spec-pilot-c32k-np2.log"
    compare = run("compare", log, other, "--label", "this", "--label", "other")
    from logscope.outputs.plots import card
    fig = card(logs)
    card_text = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    phrases = {
        "decode_tps": (f"decode t/s median: {want.get('decode_tps')}",
                       f"median {want.get('decode_tps')}", f"median {want.get('decode_tps')}"),
        "aggregate_decode": (f"streams decode: {want.get('aggregate_decode')} t/s",
                             f"streams decode: {want.get('aggregate_decode')} t/s",
                             f"decoding: {want.get('aggregate_decode')} t/s"),
        "acceptance_rate": (f"draft acceptance: {want.get('acceptance_rate')} ",
                            f"acceptance {want.get('acceptance_rate')},",
                            f"draft acceptance {want.get('acceptance_rate')},"),
        "mean_accepted_length": (f"mean accepted length {want.get('mean_accepted_length')} ",
                                 f"mean accepted length {want.get('mean_accepted_length')} ",
                                 f"mean len {want.get('mean_accepted_length')} "),
    }
    rows = {ln.split(" | ")[0].strip("| "): ln for ln in compare.splitlines()}
    compare_metric = {"decode_tps": ("decode t/s, median per request (exact)",
                                     "decode t/s per stream, state seen longest (server windows)"),
                      "aggregate_decode": (
                          "decode rate t/s while the most streams decode (not throughput)",),
                      "acceptance_rate": ("draft acceptance rate",),
                      "mean_accepted_length": ("mean accepted length",)}
    for k, v in want.items():
        in_ingest, in_report, in_card = phrases[k]
        assert in_ingest in ingest, (k, v, ingest)
        assert in_report in report, (k, v)
        assert in_card in card_text, (k, v, card_text)
        row = next(rows[m] for m in compare_metric[k]
                   if m in rows and rows[m].split(" | ")[1] != "—")
        assert row.split(" | ")[1].startswith(v + " ") or row.split(" | ")[1] == v, (k, v, row)
    s = acceptance_summary(logs)
    h = headline_figures(logs)
    assert s["rate"] == h["acceptance_rate"]["value"]
    assert s["mean_len"] == h["mean_accepted_length"]["value"]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_the_verdict_rests_on_the_same_figures(log):
    """compare's verdict takes each side's figures from the same definitions as report: the
    acceptance of a drafting log is its pooled acceptance rate, the per-stream decode of a log
    against itself is its median exact rate over the matched requests, and the aggregate is
    the concurrency row's."""
    import json

    from logscope.analysis.concurrency import concurrency

    logs = logscope.read(str(log))
    v = {r["question"]: r for r in json.loads(run("compare", log, log, "--format", "json"))[
        "verdict"]}
    h = headline_figures(logs)
    acc = v["acceptance"]
    if h["acceptance_rate"]["value"] is not None:
        assert acc["a"] == pytest.approx(h["acceptance_rate"]["value"], rel=1e-9)
        if min(acc["n"]) >= 3:
            assert acc["ratio"] == pytest.approx(1.0)
        else:
            assert acc["ratio"] is None and "no verdict" in acc["sentence"]
    d = v["decode_per_stream"]
    if d["a"] is not None and h["decode_tps"]["exactness"] == "exact per request" \
            and d["n"][0] == h["decode_tps"]["n"]:
        assert d["a"] == pytest.approx(h["decode_tps"]["value"], rel=1e-9)
    g = v["decode_aggregate"]
    if g["a"] is not None:
        k = int(g["states"][0].split()[0])
        row = concurrency(logs).filter(pl.col("decoding") == k, pl.col("prefilling") == 0)
        assert g["a"] == pytest.approx(row["aggregate_tps"][0], rel=1e-6)


WINDOW_LOGS = sorted((FIXTURES / "sglang" / "rendered").glob("*.log")) \
    + sorted((FIXTURES / "vllm" / "rendered").glob("*.log"))


@pytest.mark.parametrize("log", WINDOW_LOGS, ids=lambda p: f"{p.parent.parent.name}-{p.name}")
def test_window_logs_give_one_answer_per_state_everywhere(log):
    """SGLang and vLLM window lines: the headline decode, the aggregate, the bench table's tg
    rows and the Streams table all carry the window fit's figure of a state, never a raw
    interval put at the count it closed with; ingest and report print the same digits."""
    from logscope.analysis.report import build_report, render
    from logscope.analysis.servers import split_servers

    whole = logscope.read(str(log))
    ingest = run("ingest", log)
    # a log holding several servers (a compose log): each server's own figures, everywhere
    for _name, logs in split_servers(whole, log.name):
        rep = build_report([logs])
        _one_answer_per_state(logs, render(rep, "md"), rep, ingest)


def _one_answer_per_state(logs, md: str, rep: dict, ingest: str) -> None:  # noqa: ANN001
    from logscope.analysis.window_fit import state_fit

    sf = state_fit(logs)
    fit = sf.filter(pl.col("reason").is_null(), pl.col("served_per_stream") > 0)
    h = headline_figures(logs)
    d, g = h["decode_tps"], h["aggregate_decode"]
    tgs = rep["bench"].filter(pl.col("kind") == "tg")
    # a refused state's row: its quiet intervals alone (one count at both ends), said so
    quiet = tgs.filter(pl.col("test").str.starts_with("tg (quiet windows)")).sort("depth_bucket")
    refused = sf.filter(pl.col("reason").is_not_null(), pl.col("quiet_per_stream") > 0)
    assert quiet["depth_bucket"].to_list() == refused["decoding"].to_list()
    assert quiet["tps_mean"].to_list() == refused["quiet_per_stream"].to_list()
    if fit.height == 0:
        assert d["value"] is None and g["value"] is None
        assert tgs.height == quiet.height
        return
    top = fit.sort("seconds", "decoding").row(-1, named=True)
    assert d["decoding"] == top["decoding"] and d["value"] == top["served_per_stream"]
    v = fmt_figure("decode_tps", d["value"])
    assert f"(window fit): {v} (95 % CI" in md
    assert f"{top['decoding']} decoding (the state seen longest): {v} " in ingest
    tg = tgs.filter(pl.col("test").str.starts_with("tg (window)")).sort("depth_bucket")
    assert tg["depth_bucket"].to_list() == fit["decoding"].to_list()
    assert tg["tps_mean"].to_list() == fit["served_per_stream"].to_list()
    st = rep["streams"]
    for r in fit.iter_rows(named=True):
        row = st.filter(pl.col("decoding") == r["decoding"])
        assert row["per_stream_tps"].to_list() == pytest.approx([r["served_per_stream"]])
    multi = fit.filter(pl.col("decoding") >= 2)
    if multi.height:
        top_k = multi.sort("decoding").row(-1, named=True)
        assert g["active"] == top_k["decoding"] and g["value"] == top_k["aggregate"]
        a = fmt_figure("aggregate_decode", g["value"])
        assert f"streams decode: {a} t/s" in md and f"streams decode: {a} t/s" in ingest
    else:
        assert g["value"] is None
    assert "## Decode by concurrency" not in md   # its rows would be the raw intervals
