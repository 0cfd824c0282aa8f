"""Concurrency states as the figures colour them (the decode plot, the card's decode panel).

The states come from :mod:`logscope.analysis.concurrency` (``timeline``: how many requests
decode and prefill at every moment; ``request_concurrency``: the state each llama-server
request decoded in most, and whether it ran alone). A figure colours every point by its state:

* ``alone``: one request decoding, nothing else decoding or prefilling;
* ``1 decoding, beside a prefill``: one decoding while another request computed its prompt;
* ``k decoding`` (k = 2, 3, 4, then 5–8, 9–16, ...): k requests decoding at once (for
  SGLang/vLLM: the window's running requests).

    >>> import logscope
    >>> logs = logscope.read("fixtures/telemetry/h200/generated-gpu-pressure-np4-ctxshift.log")
    >>> sorted(set(request_points(logs)["state"]))[:2]
    ['1 decoding, beside a prefill', '2 decoding']
"""

from __future__ import annotations

import numpy as np
import polars as pl

ALONE = "alone on the GPU"
BESIDE = "1 decoding, beside a prefill"
# one colour per state, in the order of STATE_ORDER (colour-blind-safe first: Okabe-Ito)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000", "#999999", "#8c564b"]


def state_of(decoding: int | None, prefilling: int | None = 0, alone: bool | None = None) -> str:
    """The label of a concurrency state (see the module docstring).

    Example: state_of(1, 0) == "alone on the GPU"; state_of(6) == "5–8 decoding"
    """
    k = int(decoding or 0)
    if k <= 1:
        if alone is False or (alone is None and (prefilling or 0) > 0):
            return BESIDE
        return ALONE
    if k <= 4:
        return f"{k} decoding"
    lo = 1 << int(np.ceil(np.log2(k)) - 1)
    return f"{lo + 1}–{2 * lo} decoding"


def state_rank(state: str) -> float:
    """Sort key: alone, beside a prefill, then by streams."""
    if state == ALONE:
        return 0.0
    if state == BESIDE:
        return 1.0
    return float(state.split()[0].split("–")[0])


def colors_for(states) -> dict[str, str]:  # noqa: ANN001 - any iterable of labels
    """One colour per state (a figure's states, so every panel uses the same colours).

    Example: colors_for(["2 decoding", "alone on the GPU"])["alone on the GPU"] == "#0072B2"
    """
    out = {}
    for i, s in enumerate(sorted(set(states), key=state_rank)):
        out[s] = PALETTE[i % len(PALETTE)]
    return out


def segments(logs, label: str | None = None) -> pl.DataFrame:
    """``timeline``: segments of each (file, run) with how many requests decode and prefill
    (``t0``, ``t1`` on the run's clock)."""
    from logscope.analysis.concurrency import timeline

    return timeline(logs, label)


def request_states(logs, label: str | None = None) -> pl.DataFrame:
    """``request_concurrency``: per llama-server request ``file, run, slot, task, decoding,
    alone, others_max``."""
    from logscope.analysis.concurrency import request_concurrency

    return request_concurrency(logs, label)


def request_points(logs, label: str | None = None) -> pl.DataFrame:
    """``decode_requests`` (exact per request) with the state each request decoded in most:
    column ``state``."""
    from logscope.analysis.decode import decode_requests

    req = decode_requests(logs, label)
    rs = request_states(logs, label)
    if req.height == 0:
        return req.with_columns(pl.lit(None, pl.String).alias("state"))
    key = ["file", "run", "slot", "task"]
    rs = rs.select(*key, "decoding", "alone").with_columns(pl.col("run").cast(pl.Int32))
    j = req.join(rs, on=key, how="left", nulls_equal=True, maintain_order="left")
    return j.with_columns(pl.struct("decoding", "alone").map_elements(
        lambda d: state_of(d["decoding"], alone=d["alone"]), return_dtype=pl.String)
        .alias("state")).drop("decoding", "alone")


def window_points(logs, label: str | None = None) -> pl.DataFrame:
    """``decode_windows`` with the state of each window: llama ``tg_3s`` at the middle of the
    window (from the line before of the same request to this one) on the timeline; SGLang and
    vLLM windows by their running requests. Column ``state``."""
    from logscope.analysis._util import table, with_time
    from logscope.analysis.decode import decode_windows

    win = decode_windows(logs, label)
    if win.height == 0:
        return win.with_columns(pl.lit(None, pl.String).alias("state"))
    mids = None
    dp = table(logs, "decode_progress")
    if dp is not None and "t_rel" in dp.columns and (win["source"] == "llama:tg_3s").any():
        dp, _ = with_time(dp)
        key = ["file", "run", "slot", "task"]
        dp = dp.sort(*key, "t_rel").with_columns(
            ((pl.col("t_rel") + pl.col("t_rel").shift(1).over(key)
              .fill_null(pl.col("t_rel") - 3.0)) / 2).alias("_mid"))
        seg = (segments(logs, label).select(pl.col("file").cast(pl.String),
                                            pl.col("run").cast(pl.Int32), "t0", "t1",
                                            "decoding", "prefilling").sort("t0"))
        dp = (dp.select(*key, "t", "_mid").with_columns(pl.col("run").cast(pl.Int32),
                                                        pl.col("file").cast(pl.String))
              .drop_nulls("_mid").sort("_mid"))
        j = dp.join_asof(seg, left_on="_mid", right_on="t0", by=["file", "run"],
                         strategy="backward", check_sortedness=False)
        j = j.with_columns(pl.when(pl.col("_mid") < pl.col("t1")).then(
            pl.struct("decoding", "prefilling").map_elements(
                lambda d: state_of(d["decoding"], d["prefilling"]), return_dtype=pl.String))
            .alias("state"))
        mids = j.select(*key, "t", "state").unique([*key, "t"], keep="first").with_columns(
            pl.col("file").cast(win.schema["file"]))
    out = win.with_columns(pl.when(pl.col("running").is_not_null()).then(
        pl.col("running").map_elements(state_of, return_dtype=pl.String)).alias("state"))
    if mids is not None:
        out = out.join(mids.rename({"state": "_st"}), on=["file", "run", "slot", "task", "t"],
                       how="left", nulls_equal=True, maintain_order="left").with_columns(
            pl.coalesce("state", "_st").alias("state")).drop("_st")
    return out


def aggregate_points(logs, label: str | None = None) -> pl.DataFrame:
    """``decode_aggregate`` with ``state`` (by how many requests decoded in the segment)."""
    from logscope.analysis.decode import decode_aggregate

    agg = decode_aggregate(logs, label)
    one = agg.filter(pl.col("active") == 1, pl.col("t1") > pl.col("t0"))
    beside: set[tuple] = set()
    if one.height:
        seg = segments(logs, label).filter(pl.col("prefilling") > 0)
        for f, run, t0, t1 in one.select("file", "run", "t0", "t1").iter_rows():
            hit = seg.filter(pl.col("file").cast(pl.String) == f,
                             pl.col("run").cast(pl.Int32) == run, pl.col("t0") < t1,
                             pl.col("t1") > t0)
            if hit.height:
                beside.add((f, run, t0))
    return agg.with_columns(pl.struct("file", "run", "t0", "active").map_elements(
        lambda d: state_of(d["active"], alone=(d["file"], d["run"], d["t0"]) not in beside),
        return_dtype=pl.String).alias("state"))
