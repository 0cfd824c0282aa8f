"""SGLang's ``requests`` table from its request log: the figures each finish record prints,
exact per request, under llama-server's column names; what it does not print stays null."""

from __future__ import annotations

import json
import math
from datetime import datetime

import polars as pl
import pytest

import logscope
from tests.conftest import FIXTURES

SGLANG = FIXTURES / "sglang"
CASES = sorted(p for p in SGLANG.glob("*.expected.json")
               if "requests" in json.loads(p.read_text()))


@pytest.mark.parametrize("expected", CASES, ids=lambda p: p.stem)
def test_requests_match_golden(expected):
    exp = json.loads(expected.read_text())
    req = logscope.read(str(expected.with_name(expected.name.replace(".expected.json", ".log"))))[
        "requests"]
    assert req.height == len(exp["requests"])
    for want in exp["requests"]:
        rows = req.filter(pl.col("rid") == want["rid"])
        assert rows.height == 1, want["rid"]
        row = rows.row(0, named=True)
        for k, v in want.items():
            if k in ("ts_start", "ts_end"):
                assert row[k] == datetime.fromisoformat(v), (want["rid"], k, row[k])
            elif isinstance(v, float):
                assert math.isclose(row[k], v, rel_tol=1e-12), (want["rid"], k, row[k])
            else:
                assert row[k] == v, (want["rid"], k, row[k])


def test_prompt_tokens_are_computed_not_total():
    req = logscope.read(str(SGLANG / "v0.5.2-finish-e2e.log"))["requests"]
    # prompt_tokens (computed) + cached_tokens = prompt_total, SGLang's whole prompt
    assert (req["prompt_tokens"] + req["cached_tokens"] == req["prompt_total"]).all()
    assert req["cached_source"].to_list() == ["printed", "printed"]
    assert req["exactness"].unique().to_list() == ["exact_per_request"]


def test_llama_columns_present_and_unknown_ones_null():
    req = logscope.read(str(SGLANG / "v0.5.7-request-log-json.log"))["requests"]
    llama = logscope.read(str(next(iter(sorted((FIXTURES / "llama-server").glob("*.log"))))))[
        "requests"]
    for c, dt in llama.schema.items():
        assert req.schema[c] == dt, c
    # the request log prints no prefill or decode time, TTFT or draft figures: never guessed
    for c in ("prompt_ms", "prompt_tps", "decode_ms", "decode_tps", "draft_accepted",
              "draft_generated", "slot", "task"):
        assert req[c].null_count() == req.height, c
    assert req.filter(pl.col("finish_reason") == "abort")["cancelled"].to_list() == [True]
    # spec_accept_length = completion_tokens / spec_verify_ct: 256/100, 97/40, 3/2
    assert sorted(req["mean_len"].to_list()) == [1.5, 2.425, 2.56]
    text = logscope.read(str(SGLANG / "v0.5.2-finish-e2e.log"))["requests"]
    assert text["mean_len"].null_count() == text.height  # no speculative decoding printed


def test_log_without_finish_records_has_no_requests():
    logs = logscope.read(str(SGLANG / "v0.4.4-retract-pressure.log"))
    assert "requests" not in logs.tables


def test_report_runs_on_sglang_requests():
    from click.testing import CliRunner

    from logscope.cli import cli

    for name in ("v0.5.2-finish-e2e.log", "v0.5.7-request-log-json.log",
                 "v0.4.1-log-requests.log"):
        for fmt in ("md", "json"):
            res = CliRunner().invoke(cli, ["report", str(SGLANG / name), "--format", fmt])
            assert res.exit_code == 0, (name, fmt, res.output)
            assert "nan" not in res.output.lower().replace("nanosec", ""), (name, fmt)


def test_report_card_shows_request_log_figures():
    from click.testing import CliRunner

    from logscope.cli import cli

    res = CliRunner().invoke(cli, ["report", str(SGLANG / "v0.5.7-request-log-json.log")])
    assert res.exit_code == 0, res.output
    # 1200 + 1300 + 64 prompt tokens, 1024 of them cached; e2e 4.5, 2.1, 0.4 s
    assert ("requests (exact per request, from the request log): 3 finished (1 aborted); "
            "prompt 2,564 tokens, 1,024 from cache (40 %); generated 356 tokens; "
            "end-to-end median 2.100 s, max 4.500 s (n = 3); "
            "mean accepted length median 2.42 tokens/step (n = 3)") in res.output
    js = json.loads(CliRunner().invoke(cli, ["report", str(SGLANG / "v0.5.2-finish-e2e.log"),
                                             "--format", "json"]).output)
    fig = next(iter(js["headline"].values()))["request_log"]
    assert (fig["n"], fig["prompt_tokens"], fig["cached_tokens"], fig["gen_tokens"]) == (
        2, 2578, 512, 552)
    assert math.isclose(fig["e2e_median_s"], (1.25 + 7.875) / 2, abs_tol=0.005)  # JSON rounds
