"""Speculative decoding: acceptance per request (llama-server, exact) and per window.

* :func:`acceptance_requests`: llama-server's ``draft acceptance = R ( A accepted / G
  generated), mean len = L`` per request (exact): acceptance rate A/G and mean accepted length
  (tokens per decode step), with depth and decode t/s of the request.
* :func:`acceptance_windows`: SGLang ``Decode batch`` ``accept len`` / ``accept rate`` and vLLM
  ``SpecDecoding metrics`` (server window averages over all running requests).
* :func:`acceptance_per_position`: acceptance per draft position where the log prints it
  (llama-server ``acc per pos``, vLLM ``Per-position acceptance rate``).
* :func:`acceptance_units`: the units the pooled figures sum over (requests, else windows with
  the weight each window carries): accepted and drafted tokens, tokens and decode steps.

A window line is an average over its interval, so windows are pooled by what they hold, not
counted one each. SGLang prints a ``Decode batch`` line every ``decode_log_interval`` forward
steps of the whole batch, so a line stands for (forward steps × ``#running-req``) request-steps:
its ``accept len`` (tokens per request-step) and ``accept rate`` are weighed by
``#running-req``. vLLM's ``SpecDecoding metrics`` line (V1) gives the interval's own counts:
accepted and drafted tokens, and its drafts (request-steps that drafted) = drafted ÷ the
number of draft positions (the per-position list's length), else accepted ÷ (mean length − 1).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import (
    EXACT,
    WINDOW,
    col,
    col_or_null,
    label_of,
    table,
    with_time,
)
from logscope.analysis.windows import DECODE_LOG_INTERVAL


def acceptance_requests(logs, label: str | None = None) -> pl.DataFrame:
    """One row per llama-server request that printed draft acceptance (exact per request)."""
    schema = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
              "task": pl.Int64, "t": pl.Float64, "accepted": pl.Int64, "generated": pl.Int64,
              "rate": pl.Float64, "mean_len": pl.Float64, "depth": pl.Float64,
              "gen_tokens": pl.Int64, "decode_tps": pl.Float64, "source": pl.String,
              "exactness": pl.String}
    req = table(logs, "requests")
    if req is None or "draft_generated" not in req.columns:
        return pl.DataFrame(schema=schema)
    r = req.filter(pl.col("draft_generated").is_not_null() & (pl.col("draft_generated") > 0))
    if r.height == 0:
        return pl.DataFrame(schema=schema)
    t0 = req["t_start"].min()
    start = (pl.col("cached_tokens").clip(lower_bound=0).fill_null(0)
             + pl.col("prompt_tokens").fill_null(0))
    return r.select(
        pl.lit(label_of(logs, label)).alias("label"), "file", "run", "slot", "task",
        (pl.col("t_start") - t0).alias("t"),
        pl.col("draft_accepted").alias("accepted"), pl.col("draft_generated").alias("generated"),
        (pl.col("draft_accepted") / pl.col("draft_generated")).alias("rate"),
        "mean_len", (start + pl.col("gen_tokens").fill_null(0) / 2).alias("depth"),
        "gen_tokens", "decode_tps",
        pl.lit("llama:request").alias("source"), pl.lit(EXACT).alias("exactness"),
    ).cast(schema).sort("file", "t")


def acceptance_windows(logs, label: str | None = None) -> pl.DataFrame:
    """SGLang/vLLM acceptance windows over time (server window averages)."""
    schema = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t": pl.Float64,
              "t_basis": pl.String, "rate": pl.Float64, "mean_len": pl.Float64,
              "accepted": pl.Int64, "generated": pl.Int64, "source": pl.String,
              "exactness": pl.String}
    lab = label_of(logs, label)
    parts = []
    db = table(logs, "decode_batch")
    if db is not None and col(db, "accept_len", "accept_rate"):
        db, basis = with_time(db)
        parts.append(db.select(
            pl.lit(lab).alias("label"), "file", "run", "t", pl.lit(basis).alias("t_basis"),
            (pl.col("accept_rate") if "accept_rate" in db.columns else pl.lit(None))
            .cast(pl.Float64).alias("rate"),
            (pl.col("accept_len") if "accept_len" in db.columns else pl.lit(None))
            .cast(pl.Float64).alias("mean_len"),
            pl.lit(None, pl.Int64).alias("accepted"), pl.lit(None, pl.Int64).alias("generated"),
            pl.lit("sglang:decode_batch").alias("source"), pl.lit(WINDOW).alias("exactness"),
        ).filter(pl.col("rate").is_not_null() | pl.col("mean_len").is_not_null()).cast(schema))
    sd = table(logs, "spec_decoding")
    if sd is not None:
        sd, basis = with_time(sd)
        if "draft_acceptance_pct" in sd.columns:
            rate = pl.coalesce(pl.col("draft_acceptance_pct") / 100,
                               pl.col("draft_acceptance_rate")
                               if "draft_acceptance_rate" in sd.columns else pl.lit(None))
        elif "draft_acceptance_rate" in sd.columns:
            rate = pl.col("draft_acceptance_rate")
        else:
            rate = pl.lit(None, pl.Float64)

        def c(name):
            return pl.col(name) if name in sd.columns else pl.lit(None)
        parts.append(sd.select(
            pl.lit(lab).alias("label"), "file", "run", "t", pl.lit(basis).alias("t_basis"),
            rate.cast(pl.Float64).alias("rate"),
            c("mean_acceptance_length").cast(pl.Float64).alias("mean_len"),
            pl.coalesce(c("num_accepted_tokens"), c("total_accepted_tokens"))
            .cast(pl.Int64).alias("accepted"),
            pl.coalesce(c("num_draft_tokens"), c("total_draft_tokens"))
            .cast(pl.Int64).alias("generated"),
            pl.lit("vllm:spec_decoding").alias("source"), pl.lit(WINDOW).alias("exactness"),
        ).cast(schema))
    if not parts:
        return pl.DataFrame(schema=schema)
    # a window with nothing drafted prints nan: no measurement, not a number
    return pl.concat(parts).with_columns(pl.col("rate").fill_nan(None),
                                         pl.col("mean_len").fill_nan(None)).sort("file", "t")


def _spec_tokens(logs) -> int | None:
    """The draft tokens per step the server was configured with (vLLM ``num_spec_tokens``),
    when the log holds one value; else None."""
    cfg = table(logs, "server_config")
    if cfg is None or "num_spec_tokens" not in cfg.columns:
        return None
    ks = cfg.get_column("num_spec_tokens").drop_nulls().cast(pl.Int64, strict=False).drop_nulls()
    ks = ks.filter(ks > 0).unique()
    return int(ks[0]) if ks.len() == 1 else None


def acceptance_per_position(logs, label: str | None = None) -> pl.DataFrame:
    """Acceptance rate per draft position, one row per (line, position)."""
    schema = {"label": pl.String, "file": pl.String, "task": pl.Int64, "position": pl.Int64,
              "rate": pl.Float64, "source": pl.String, "exactness": pl.String}
    lab = label_of(logs, label)
    parts = []
    for name, field, src, ex in (("draft_per_position", "acc_per_pos", "llama:request", EXACT),
                                 ("spec_decoding", "per_position_acceptance_rate",
                                  "vllm:spec_decoding", WINDOW)):
        df = table(logs, name)
        if df is None or field not in df.columns or df[field].null_count() == df.height:
            continue
        if df.schema[field] != pl.List(pl.Float64):
            continue
        task = pl.col("task") if "task" in df.columns else pl.lit(None, pl.Int64)
        parts.append(df.filter(pl.col(field).is_not_null()).select(
            pl.lit(lab).alias("label"), "file", task.alias("task"),
            pl.col(field).alias("rate"),
            pl.int_ranges(1, pl.col(field).list.len() + 1).alias("position"),
        ).explode("rate", "position").with_columns(
            pl.lit(src).alias("source"), pl.lit(ex).alias("exactness")).select(list(schema))
            .cast(schema))
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts)


def acceptance_units(logs) -> pl.DataFrame:
    """What the pooled acceptance figures sum over, one row per unit.

    Requests where the log prints their counts (llama-server ``draft acceptance``, exact; a
    request log's per-request accepted length), else server windows with their weight (module
    docstring). Columns: ``accepted`` and ``drafted`` (tokens; a window's relative weight where
    the line gives no count), ``tokens`` and ``steps`` (tokens ÷ steps = mean accepted length),
    ``exactness``, ``source``. Pooled rate = Σ accepted ÷ Σ drafted; pooled mean accepted
    length = Σ tokens ÷ Σ steps.

    Example::

        u = acceptance_units(logscope.read("sglang-eagle.log"))
        u["tokens"].sum() / u["steps"].sum()   # 2.64
    """
    schema = {"accepted": pl.Float64, "drafted": pl.Float64, "tokens": pl.Float64,
              "steps": pl.Float64, "exactness": pl.String, "source": pl.String}
    r = acceptance_requests(logs)
    if r.height:
        return r.select(
            pl.col("accepted").cast(pl.Float64), pl.col("generated").cast(pl.Float64)
            .alias("drafted"), pl.col("gen_tokens").cast(pl.Float64).alias("tokens"),
            (pl.col("gen_tokens") / pl.col("mean_len")).alias("steps"),
            "exactness", "source").cast(schema)
    req = table(logs, "requests")
    if req is not None and col(req, "mean_len") and "gen_tokens" in req.columns:
        q = req.filter(pl.col("mean_len") > 0, pl.col("gen_tokens") > 0)
        if q.height:   # a request log's accepted length (SGLang spec_accept_length)
            return q.select(
                pl.lit(None, pl.Float64).alias("accepted"),
                pl.lit(None, pl.Float64).alias("drafted"),
                pl.col("gen_tokens").cast(pl.Float64).alias("tokens"),
                (pl.col("gen_tokens") / pl.col("mean_len")).alias("steps"),
                pl.lit(EXACT).alias("exactness"),
                pl.lit("request_log").alias("source")).cast(schema)
    parts = []
    db = table(logs, "decode_batch")
    if db is not None and col(db, "accept_len", "accept_rate") and "running_req" in db.columns:
        steps = pl.col("running_req").cast(pl.Float64) * DECODE_LOG_INTERVAL
        parts.append(db.filter(pl.col("running_req") > 0).select(
            (col_or_null(db, "accept_rate", pl.Float64) * steps).alias("accepted"),
            pl.when(col_or_null(db, "accept_rate").is_not_null()).then(steps).alias("drafted"),
            (col_or_null(db, "accept_len", pl.Float64) * steps).alias("tokens"),
            pl.when(col_or_null(db, "accept_len").is_not_null()).then(steps).alias("steps"),
            pl.lit(WINDOW).alias("exactness"), pl.lit("sglang:decode_batch").alias("source"),
        ).cast(schema))
    sd = table(logs, "spec_decoding")
    if sd is not None and col(sd, "num_draft_tokens"):   # V1: the interval's own counts
        acc = pl.col("num_accepted_tokens").cast(pl.Float64)
        dr = pl.col("num_draft_tokens").cast(pl.Float64)
        ml = col_or_null(sd, "mean_acceptance_length", pl.Float64)
        k = (pl.col("per_position_acceptance_rate").list.len().cast(pl.Float64)
             if "per_position_acceptance_rate" in sd.columns else pl.lit(None, pl.Float64))
        k_cfg = _spec_tokens(logs)
        drafts = pl.coalesce(pl.when(k > 0).then(dr / k),
                             pl.when(ml > 1).then(acc / (ml - 1)),
                             pl.lit(None if k_cfg is None else 1.0 / k_cfg) * dr)
        # a line without the mean (0.8.0–0.8.4: "Accepted: A tokens, Drafted: D tokens"):
        # each draft of the configured k tokens is one step that emits its accepted tokens
        # and one more, vLLM's own mean (1 + accepted ÷ drafts, 0.8.5+)
        tokens = pl.coalesce(ml * drafts, drafts + acc)
        parts.append(sd.filter(pl.col("num_draft_tokens") > 0).select(
            acc.alias("accepted"), dr.alias("drafted"), tokens.alias("tokens"),
            pl.when(tokens.is_not_null()).then(drafts).alias("steps"),
            pl.lit(WINDOW).alias("exactness"), pl.lit("vllm:spec_decoding").alias("source"),
        ).cast(schema))
    if sd is not None and col(sd, "total_draft_tokens") and col(sd, "num_spec_tokens"):
        # V0 ("Speculative metrics"): counters since the engine started, so a run's last
        # line holds its totals; k draft tokens a step, each step emitting its accepted
        # tokens and one more ("Number of emitted tokens")
        v0 = (sd.filter(pl.col("total_draft_tokens") > 0, pl.col("num_spec_tokens") > 0)
              .sort("file", "run", "line").group_by("file", "run", maintain_order=True)
              .agg(pl.all().last()))
        steps = pl.col("total_draft_tokens").cast(pl.Float64) / pl.col("num_spec_tokens")
        acc = col_or_null(v0, "total_accepted_tokens", pl.Float64)
        parts.append(v0.select(
            acc.alias("accepted"), pl.col("total_draft_tokens").cast(pl.Float64).alias("drafted"),
            pl.coalesce(col_or_null(v0, "total_emitted_tokens", pl.Float64), steps + acc)
            .alias("tokens"), steps.alias("steps"),
            pl.lit(WINDOW).alias("exactness"), pl.lit("vllm:spec_counters").alias("source"),
        ).cast(schema))
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)
