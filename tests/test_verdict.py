"""The verdict of compare: one answer per question, with an interval, right on a real pair."""

from __future__ import annotations

import json
import statistics

import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.compare import compare_metrics
from logscope.analysis.report import bench_table
from logscope.analysis.verdict import QUESTIONS, verdict
from logscope.cli import cli
from tests.conftest import CORPUS, client_records, client_timings

SHARED = CORPUS.parent.parent.parent.parent / "shared" / "corpus"
SPEC, BASE = SHARED / "generated-spec-c32k-np2.log", SHARED / "generated-base-c32k-np2.log"
needs_pair = pytest.mark.skipif(not SPEC.exists(), reason="../shared/corpus not present")


def _client_median(log) -> float:
    rates = [t["predicted_per_second"] for r in client_records(log)
             if (t := client_timings(r)) and t.get("predicted_n", 0) >= 16]
    return statistics.median(rates)


@needs_pair
def test_matched_pair_decode_ratio_agrees_with_the_clients():
    """Same client script, prompts and seeds, draft ON against OFF: the verdict's
    per-stream decode ratio is within 5 % of the clients' median ratio, interval around it."""
    truth = _client_median(BASE) / _client_median(SPEC)
    v = {r["question"]: r for r in verdict(logscope.read(str(SPEC)), logscope.read(str(BASE)),
                                           ("spec", "base"))}
    d = v["decode_per_stream"]
    assert d["ratio"] == pytest.approx(truth, rel=0.05)
    assert d["ci95"][0] <= truth <= d["ci95"][1]
    assert d["ci95"][0] > 1                       # base is faster, and the verdict is sure
    assert d["sentence"].startswith("base decodes 1.")
    assert d["n"] == [13, 13]


@needs_pair
def test_compare_json_leads_with_the_verdict():
    r = CliRunner().invoke(cli, ["compare", str(SPEC), str(BASE), "--format", "json"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.stdout)
    assert [v["question"] for v in j["verdict"]] == list(QUESTIONS)
    for v in j["verdict"]:
        assert {"question", "a", "b", "ratio", "ci95", "n", "sentence"} <= set(v)
        assert all(isinstance(n, int) for n in v["n"])
    only = {v["question"]: v for v in j["verdict"]}["acceptance"]
    assert only["ratio"] is None and "only generated-spec-c32k-np2.log drafts" in only[
        "sentence"]


def test_no_verdict_below_three(tmp_path):
    a = logscope.read(str(CORPUS / "generated-ngram-c4k-np1.log"))
    rows = {r["question"]: r for r in verdict(a, a, ("x", "y"))}
    d = rows["decode_per_stream"]
    assert d["n"][0] >= 3 and d["ratio"] == pytest.approx(1.0)      # a log against itself
    assert d["ci95"][0] <= 1 <= d["ci95"][1] and "no clear difference" in d["sentence"]
    agg = rows["decode_aggregate"]    # one slot: never two decoding
    assert agg["ratio"] is None and agg["sentence"].endswith("on both sides)")


def test_verdict_is_deterministic():
    a = logscope.read(str(CORPUS / "generated-spec-pilot-c32k-np2.log"))
    b = logscope.read(str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"))
    assert verdict(a, b) == verdict(a, b)


def test_detail_rows_use_report_labels_and_integer_counts():
    a = logscope.read(str(CORPUS / "generated-spec-pilot-c32k-np2.log"))
    b = logscope.read(str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"))
    df = compare_metrics([a, b], ["a", "b"], all_rows=True)
    tests = set(bench_table(a, "a")["test"]) | set(bench_table(a, "a", solo=True)["test"])
    buckets = [m for m in df["metric"] if m.endswith((" t/s", " t/s, solo"))
               and m.startswith(("pp", "tg"))]
    assert buckets and all(m.rsplit(" t/s", 1)[0] in tests for m in buckets)
    r = CliRunner().invoke(cli, ["compare", str(CORPUS / "generated-spec-pilot-c32k-np2.log"),
                                 str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"),
                                 "--label", "a", "--label", "b"])
    retr = next(ln for ln in r.stdout.splitlines() if ln.startswith("| retracts"))
    assert "0.00" not in retr and "| 0 |" in retr


@needs_pair
def test_card_carries_the_verdict(tmp_path):
    from logscope.outputs.plots import card

    a, b = logscope.read(str(SPEC)), logscope.read(str(BASE))
    fig = card(b, "base", verdicts=verdict(a, b, ("spec", "base")))
    foot = fig.get_supxlabel()
    assert foot.startswith("verdict: base: ") and "\nbase decodes 1." in foot
    assert "95 % CI" in foot
    out = tmp_path / "card.png"
    r = CliRunner().invoke(cli, ["card", str(BASE), "--vs", str(SPEC), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 20_000


def test_a_llama_server_log_against_a_window_log_gets_a_decode_verdict():
    """One side gives per-request figures, the other window lines: no state can be matched,
    so each run's per-stream decode as served is compared, and the sentence says both units
    (before: "no concurrency state seen on both sides", though both served four streams)."""
    from tests.conftest import FIXTURES
    llama = logscope.read(str(CORPUS / "generated-gpu-q8kv-c256k-np2.log"))
    sglang = logscope.read(str(FIXTURES / "sglang" / "rendered" / "q8kv-c256k-np2.log"))
    d = {r["question"]: r for r in verdict(llama, sglang, ("llama", "sglang"))}[
        "decode_per_stream"]
    assert d["ratio"] is not None and d["ci95"][0] < d["ratio"] < d["ci95"][1]
    assert "no state matched" in d["sentence"]
    assert "every request's exact rate on llama" in d["sentence"]
    assert "the window intervals' per-stream rates on sglang" in d["sentence"]
