"""Measured tables by context depth: prefill (solo chunks and requests) and decode.

:func:`prefill_by_depth` is the table a forum user builds by hand (seed thread: prompt size,
TTFT, raw t/s, t/s with the fixed overhead removed), measured from the log instead:

* ``chunks`` rows: the intervals between two ``prompt processing`` progress lines of one
  request (one ``n_batch`` chunk each, timed on the server clock): no fixed overhead, so
  raw and overhead-removed t/s are the same number.
* ``fresh prompts`` (cached prefix < 256) and ``prompts on a cache`` rows: whole prompts
  (``prompt eval time``, exact per request) with at least 64 computed tokens;
  ``tps_no_overhead`` = tokens / (seconds − c), c from the prefill fit;
  ``ttft_s`` = the server's prompt eval time (it excludes queueing: see
  :mod:`logscope.analysis.timeline`).

By default only *solo* stretches count (no other request in progress, so nothing shared the
GPU); ``shared=True`` adds the others, counted in ``n_shared``. Rows are depth buckets: a
chunk by its middle, a request by the context after its prompt (cached + computed, so the
TTFT of a fresh 100k prompt is in the 100k row): linear buckets ``step`` tokens wide
(default 2048, llama-server's default ``n_batch``: one chunk per bucket), or ``step=None``
for half-octave buckets (2^(k/2): 4k, 5.8k, 8k, 11k, 16k, …), the compact profile the report
leads with. t/s of a bucket = its tokens / its seconds (time-weighted); ``depth`` = the
token-weighted mean of its stretches' middles, where ``fit_tps`` is the fit's 1/(a +
b·depth) (for a request: its mean rate without the overhead, as the model has it).

:func:`decode_by_depth` groups the exact per-request decode rates by depth at the middle of
the decode (half-octave buckets) and by how many other requests were in progress during
it (``others``: the most other requests in progress at once beside it, from
:func:`logscope.analysis.concurrency.request_concurrency`; 0 = solo).
"""

from __future__ import annotations

import math

import polars as pl

from logscope.analysis._util import EXACT, TICK, label_of, table
from logscope.analysis.prefill import fit_prefill, prefill_curve, slot_context

PREFILL_SCHEMA = {
    "label": pl.String, "kind": pl.String, "depth_lo": pl.Int64, "depth_hi": pl.Int64,
    "depth": pl.Float64, "n": pl.Int64, "n_shared": pl.Int64, "tokens": pl.Int64,
    "seconds": pl.Float64, "tps": pl.Float64, "tps_no_overhead": pl.Float64,
    "ttft_s": pl.Float64, "fit_tps": pl.Float64, "exactness": pl.String,
}
DECODE_SCHEMA = {
    "label": pl.String, "depth_lo": pl.Int64, "depth_hi": pl.Int64, "depth": pl.Float64,
    "others": pl.Int64, "n": pl.Int64, "tokens": pl.Int64, "seconds": pl.Float64,
    "tps": pl.Float64, "tps_min": pl.Float64, "tps_max": pl.Float64,
    "tokens_per_step": pl.Float64, "exactness": pl.String,
}
MIN_REQUEST_TOKENS = 64
CREDIBLE_SHARE = 0.5   # overhead removed only where the fitted c leaves this share of the time


def _bucket_expr(depth: pl.Expr, step: int | None) -> tuple[pl.Expr, pl.Expr]:
    if step:
        lo = (depth // step * step).cast(pl.Int64)
        return lo, lo + step
    # half-octave: 2^(k/2) <= d < 2^((k+1)/2); depths below 1024 in one bucket
    k = (depth.clip(lower_bound=1).log(2) * 2).floor()
    lo = pl.when(depth < 1024).then(0).otherwise((2 ** (k / 2)).round(0)).cast(pl.Int64)
    hi = pl.when(depth < 1024).then(1024).otherwise((2 ** ((k + 1) / 2)).round(0))
    return lo, hi.cast(pl.Int64)


def prefill_by_depth(logs, label: str | None = None, step: int | None = 2048,
                     shared: bool = False, fit: dict | None = None) -> pl.DataFrame:
    """Measured prefill t/s by depth bucket, chunks and requests apart (see the module doc).

    Example::

        prefill_by_depth(logscope.read("server.log"), step=None)   # the compact profile
    """
    lab = label_of(logs, label)
    pts = prefill_curve(logs, lab)
    if fit is None:
        fit = fit_prefill(pts, n_ctx=slot_context(logs))
    c = fit["c"] if fit.get("valid") else None
    pts = pts.filter(
        pl.col("source").is_in(["llama:request", "llama:tick", "sglang:batch"]),
        # the first progress line counts from the prompt's start: not one chunk
        (pl.col("source") == "llama:request") | ~pl.col("overhead"),
        (pl.col("source") == "llama:tick") | (pl.col("tokens") >= MIN_REQUEST_TOKENS))
    if not shared:
        pts = pts.filter(~pl.col("shared").fill_null(False))
    if pts.height == 0:
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    is_req = pl.col("source") == "llama:request"
    # requests by the context after the prompt (a TTFT "at 100k" is that of a 100k prompt),
    # chunks by their middle
    lo, hi = _bucket_expr(pl.when(is_req).then(pl.col("d0") + pl.col("tokens"))
                          .otherwise(pl.col("depth")), step)
    secs_no = pl.when(is_req).then(
        pl.col("seconds") - (c if c is not None else float("nan"))).otherwise(pl.col("seconds"))
    g = (pts.with_columns(kind=pl.when(is_req & (pl.col("d0") < 256))
                          .then(pl.lit("fresh prompts"))
                          .when(is_req).then(pl.lit("prompts on a cache"))
                          .otherwise(pl.lit("chunks")),
                          depth_lo=lo, depth_hi=hi, _secs_no=secs_no)
         .group_by("kind", "depth_lo", "depth_hi")
         .agg(((pl.col("depth") * pl.col("tokens")).sum() / pl.col("tokens").sum())
              .alias("depth"),
              pl.len().cast(pl.Int64).alias("n"),
              pl.col("shared").fill_null(False).sum().cast(pl.Int64).alias("n_shared"),
              pl.col("tokens").sum().alias("tokens"), pl.col("seconds").sum().alias("seconds"),
              pl.col("_secs_no").sum().alias("_secs_no"),
              pl.when(pl.col("source") == "llama:request").then(pl.col("seconds")).mean()
              .alias("ttft_s")))
    a, b = (fit["a"], fit["b"]) if fit.get("valid") else (None, None)
    out = g.with_columns(
        pl.lit(lab).alias("label"),
        (pl.col("tokens") / pl.col("seconds")).alias("tps"),
        # removing c is credible only while it leaves most of the seconds (else: no figure)
        pl.when(pl.col("_secs_no") > CREDIBLE_SHARE * pl.col("seconds"))
        .then(pl.col("tokens") / pl.col("_secs_no")).alias("tps_no_overhead"),
        (1 / (a + b * pl.col("depth")) if a is not None else pl.lit(None, pl.Float64))
        .alias("fit_tps"),
        pl.when(pl.col("kind") == "chunks").then(pl.lit(TICK)).otherwise(pl.lit(EXACT))
        .alias("exactness"),
    ).with_columns(pl.col("tps_no_overhead").fill_nan(None))
    return (out.select(list(PREFILL_SCHEMA)).cast(PREFILL_SCHEMA)
            .sort("depth_lo", pl.col("kind").replace({"fresh prompts": "0",
                                                      "prompts on a cache": "1",
                                                      "chunks": "2"})))


def decode_by_depth(logs, label: str | None = None, step: int | None = None) -> pl.DataFrame:
    """Exact per-request decode t/s by depth bucket and by other requests in progress.

    Example::

        decode_by_depth(logscope.read("server.log")).filter(pl.col("others") == 0)
    """
    from logscope.analysis.decode import decode_requests

    lab = label_of(logs, label)
    dr = decode_requests(logs, lab)
    req = table(logs, "requests")
    if dr.height == 0 or req is None:
        return pl.DataFrame(schema=DECODE_SCHEMA)
    from logscope.analysis.concurrency import request_concurrency

    oth = request_concurrency(logs).select("file", "run", "slot", "task",
                                           pl.col("others_max").alias("others"))
    dr = dr.join(oth, on=["file", "run", "slot", "task"], how="left").with_columns(
        pl.col("others").fill_null(0))
    lo, hi = _bucket_expr(pl.col("depth"), step)
    out = (dr.with_columns(depth_lo=lo, depth_hi=hi, _secs=pl.col("decode_ms") / 1000)
           .group_by("depth_lo", "depth_hi", "others")
           .agg(((pl.col("depth") * pl.col("gen_tokens")).sum() / pl.col("gen_tokens").sum())
                .alias("depth"),
                pl.len().cast(pl.Int64).alias("n"), pl.col("gen_tokens").sum().alias("tokens"),
                pl.col("_secs").sum().alias("seconds"),
                pl.col("decode_tps").min().alias("tps_min"),
                pl.col("decode_tps").max().alias("tps_max"),
                ((pl.col("tokens_per_step") * pl.col("gen_tokens")).sum()
                 / pl.col("gen_tokens").sum()).alias("tokens_per_step"))
           .with_columns(pl.lit(lab).alias("label"),
                         (pl.col("tokens") / pl.col("seconds")).alias("tps"),
                         pl.lit(EXACT).alias("exactness")))
    return out.select(list(DECODE_SCHEMA)).cast(DECODE_SCHEMA).sort("depth_lo", "others")


def depth_label(lo: int | None, hi: int | None) -> str:
    """``47k–49k`` for a bucket [lo, hi) (k = 1000 tokens, rounded)."""
    def k(x):
        if x is None:
            return "?"
        if x < 1000:
            return str(int(x))
        v = x / 1000
        return f"{v:.0f}k" if v >= 10 or math.isclose(v, round(v)) else f"{v:.1f}k"
    return f"{k(lo)}–{k(hi)}"


MODEL_TOLERANCE = 0.10   # the model is shown only within this of every measured bucket


def _measured(r: dict) -> float | None:
    """A profile row's figure like for like with the model (which keeps c apart): chunks as
    they are (no overhead in them), whole prompts with the fixed overhead removed where that
    is credible, else raw."""
    if r["kind"] == "chunks":
        return r["tps"]
    return r["tps_no_overhead"] if r["tps_no_overhead"] is not None else r["tps"]


def checked_fit(logs, at: tuple[int, ...] | list[int] | None = None) -> dict:
    """The prefill fit, checked against the measured depth buckets (solo chunks and prompts).

    ``agrees`` is True when the model is within ``MODEL_TOLERANCE`` of every measured bucket
    (chunks: their t/s; prompts: t/s with the overhead removed); ``disagrees`` lists where it
    is not (depth label, measured, model). A model that disagrees predicts nothing
    (``predict`` None, the reason in ``refused``): no model headline is printed or drawn.

    Example::

        fit = checked_fit(logscope.read("server.log"))
        fit["agrees"], fit["disagrees"][:1]
    """
    fit = fit_prefill(prefill_curve(logs), at=at, n_ctx=slot_context(logs))
    fit["agrees"], fit["disagrees"] = None, []
    if not fit.get("valid"):
        return fit
    prof = prefill_by_depth(logs, step=None, fit=fit)
    bad = []
    for r in prof.iter_rows(named=True):
        m, f = _measured(r), r["fit_tps"]
        if m and f and abs(f / m - 1) > MODEL_TOLERANCE:
            bad.append((depth_label(r["depth_lo"], r["depth_hi"]), r["kind"], m, f))
    fit["agrees"] = not bad and prof.height > 0
    fit["disagrees"] = bad
    if bad:
        why = (f"the model disagrees with {len(bad)} measured bucket(s) by more than "
               f"{MODEL_TOLERANCE:.0%}")
        for d in fit["predict"]:
            if fit["predict"][d] is not None:
                fit["predict"][d] = None
                fit["ttft"][d] = None
                fit["refused"][d] = why
    return fit


def prefill_at(logs, depth: int, fit: dict | None = None) -> dict:
    """The one answer to "how fast does it prefill at this depth": the measured solo bucket
    that holds ``depth`` (half-octave profile; chunks first, then whole prompts; raw t/s, what
    the prompts took, the fixed overhead included for whole prompts), else the model where it
    agrees with every measured bucket, else nothing, with the reason.

    Returns ``{"tps", "basis": "measured" | "modelled" | None, "n", "depth_lo", "depth_hi",
    "kind", "why"}``.

    Example::

        prefill_at(logscope.read("server.log"), 4096)   # {"tps": 11110.2, "basis": "measured"…}
    """
    fit = fit if fit is not None else checked_fit(logs, at=(depth,))
    prof = prefill_by_depth(logs, step=None, fit=fit)
    rows = prof.filter(pl.col("depth_lo") <= depth, pl.col("depth_hi") > depth)
    if rows.height:
        order = {"chunks": 0, "prompts on a cache": 1, "fresh prompts": 2}
        r = min(rows.iter_rows(named=True), key=lambda x: order.get(x["kind"], 9))
        return {"tps": r["tps"], "basis": "measured", "n": r["n"], "kind": r["kind"],
                "depth_lo": r["depth_lo"], "depth_hi": r["depth_hi"], "why": None}
    none = {"tps": None, "basis": None, "n": 0, "kind": None, "depth_lo": None,
            "depth_hi": None}
    if not fit.get("valid"):
        return {**none, "why": fit.get("reason") or "no prefill fit"}
    if not fit.get("agrees"):
        return {**none, "why": "no measurement at this depth, and the model disagrees with the "
                "measured buckets"}
    if depth not in fit["predict"]:
        fit = checked_fit(logs, at=(depth,))
    v = fit["predict"].get(depth)
    if v is None:
        return {**none, "why": fit["refused"].get(depth) or "no prediction"}
    return {**none, "tps": v, "basis": "modelled", "n": fit["n"],
            "why": "no measured bucket at this depth"}
