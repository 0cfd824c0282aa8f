"""The requests frame of every real llama-server run agrees with the client's own records."""

from __future__ import annotations

import polars as pl
import pytest

import logscope
from tests.conftest import CORPUS, client_records, client_timings

RUNS = sorted(CORPUS.glob("generated-*.log"))


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.stem)
def test_one_request_per_client_record(log):
    req = logscope.read(str(log))["requests"]
    assert req.height == len(client_records(log))


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.stem)
def test_token_counts_equal_client_timings(log):
    req = logscope.read(str(log))["requests"].filter(pl.col("status") == "completed")
    unmatched = req.with_row_index("i")
    used: set[int] = set()
    for rec in client_records(log):
        t = client_timings(rec)
        if t is None:
            continue
        cand = unmatched.filter(
            (pl.col("prompt_tokens") == t["prompt_n"])
            & (pl.col("gen_tokens") == t["predicted_n"])
            & (pl.when(pl.col("cached_source") == "release_upper_bound")
               .then((pl.col("cached_tokens") - t["cache_n"]).is_between(0, 8))
               .otherwise(pl.col("cached_tokens") == t["cache_n"]))
            & ~pl.col("i").is_in(list(used))
        )
        assert cand.height >= 1, f"{rec['label']}: no request with {t}"
        row = cand.row(0, named=True)
        used.add(row["i"])
        # the server's own timings, so within rounding of the printed 2 decimals
        assert row["prompt_ms"] == pytest.approx(t["prompt_ms"], rel=0.02, abs=0.01)
        assert row["decode_ms"] == pytest.approx(t["predicted_ms"], rel=0.02, abs=0.01)
        if t.get("draft_n"):
            assert row["draft_generated"] == t["draft_n"]
            assert row["draft_accepted"] == t["draft_n_accepted"]


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.stem)
def test_cancelled_and_failed_are_flagged(log):
    req = logscope.read(str(log))["requests"]
    recs = client_records(log)
    n_400 = sum(1 for r in recs if r.get("http_status") == 400)
    n_cancel = sum(1 for r in recs if r.get("cancelled"))
    assert req.filter(pl.col("status") == "error").height == n_400
    # a client disconnect during another slot's stream can go unnoticed by the server
    # (corpus README): the log flags at most as many cancels as the client made, never more
    got = req.filter(pl.col("cancelled")).height
    assert 1 <= got <= n_cancel
    assert req.filter(pl.col("status") == "completed").height == sum(
        1 for r in recs if client_timings(r) is not None) + (n_cancel - got)
