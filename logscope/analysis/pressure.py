"""Memory pressure: retracts and preemptions, KV usage and queue length over time.

* :func:`pressure_events`: one row per pressure event: SGLang ``retract`` (requests retracted),
  vLLM ``preemption`` (V0 warning) and V1 ``Preemptions:`` counts in ``engine_stats``,
  llama-server ``context_shift`` / ``decode_retry`` / ``decode_failure`` (the server ran out
  of context or KV space).
* :func:`pressure_timeline`: KV cache usage (0..1), running and queued requests per window
  line (SGLang ``Decode batch`` / ``Prefill batch``, vLLM stats lines: server window values).
  llama-server prints neither KV usage nor a queue; for it the timeline holds the number of
  requests in progress, from the requests table.

Both return an empty frame when the log has nothing of the kind; :func:`pressure_summary`
says so in words (``message``).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import (
    WINDOW,
    col_or_null,
    label_of,
    sglang_kv_usage,
    table,
    vllm_kv_usage,
    with_time,
)

EVENT_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t": pl.Float64,
                "t_basis": pl.String, "kind": pl.String, "count": pl.Int64,
                "source": pl.String}
TIMELINE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t": pl.Float64,
                   "t_basis": pl.String, "kv_usage": pl.Float64, "running": pl.Int64,
                   "queued": pl.Int64, "source": pl.String, "exactness": pl.String}


def pressure_events(logs, label: str | None = None) -> pl.DataFrame:
    lab = label_of(logs, label)
    parts = []
    specs = [("retract", "sglang:retract", "retract", "retracted_reqs"),
             ("preemption", "vllm:preemption", "preempt", None),
             ("context_shift", "llama:context_shift", "context_shift", None),
             ("decode_retry", "llama:decode_retry", "decode_retry", None),
             ("decode_failure", "llama:decode_failure", "decode_failure", None)]
    for name, src, kind, count in specs:
        df = table(logs, name)
        if df is None:
            continue
        df, basis = with_time(df)
        cnt = (pl.col(count).fill_null(1) if count and count in df.columns else pl.lit(1))
        parts.append(df.select(pl.lit(lab).alias("label"), "file", "run", "t",
                               pl.lit(basis).alias("t_basis"), pl.lit(kind).alias("kind"),
                               cnt.cast(pl.Int64).alias("count"),
                               pl.lit(src).alias("source")).cast(EVENT_SCHEMA))
    es = table(logs, "engine_stats")
    if es is not None and "preemptions" in es.columns:
        es, basis = with_time(es)
        parts.append(es.filter(pl.col("preemptions") > 0).select(
            pl.lit(lab).alias("label"), "file", "run", "t", pl.lit(basis).alias("t_basis"),
            pl.lit("preempt").alias("kind"), pl.col("preemptions").cast(pl.Int64).alias("count"),
            pl.lit("vllm:engine_stats").alias("source")).cast(EVENT_SCHEMA))
    if not parts:
        return pl.DataFrame(schema=EVENT_SCHEMA)
    return pl.concat(parts).sort("file", "t")


def pressure_timeline(logs, label: str | None = None) -> pl.DataFrame:
    lab = label_of(logs, label)
    parts = []
    for name, src, usage, running, queued in (
            ("decode_batch", "sglang:decode_batch", sglang_kv_usage, "running_req", "queue_req"),
            ("prefill_batch", "sglang:prefill_batch", sglang_kv_usage, "running_req",
             "queue_req"),
            ("engine_stats", "vllm:engine_stats", vllm_kv_usage, "running_reqs",
             "waiting_reqs")):
        df = table(logs, name)
        if df is None:
            continue
        df, basis = with_time(df)
        parts.append(df.select(
            pl.lit(lab).alias("label"), "file", "run", "t", pl.lit(basis).alias("t_basis"),
            usage(df).alias("kv_usage"),
            col_or_null(df, running, pl.Int64).alias("running"),
            col_or_null(df, queued, pl.Int64).alias("queued"),
            pl.lit(src).alias("source"), pl.lit(WINDOW).alias("exactness")).cast(TIMELINE_SCHEMA))
    req = table(logs, "requests")
    if not parts and req is not None and req["t_start"].null_count() < req.height:
        r = req.drop_nulls(["t_start", "t_end"])
        t0 = r["t_start"].min()
        ev = pl.concat([r.select("file", "run", (pl.col("t_start") - t0).alias("t"),
                                 pl.lit(1).alias("d")),
                        r.select("file", "run", (pl.col("t_end") - t0).alias("t"),
                                 pl.lit(-1).alias("d"))]).sort("file", "run", "t", "d")
        parts.append(ev.with_columns(running=pl.col("d").cum_sum().over("file", "run")).select(
            pl.lit(lab).alias("label"), "file", "run", "t", pl.lit("s").alias("t_basis"),
            pl.lit(None, pl.Float64).alias("kv_usage"), "running",
            pl.lit(None, pl.Int64).alias("queued"), pl.lit("llama:requests").alias("source"),
            pl.lit("exact per request").alias("exactness")).cast(TIMELINE_SCHEMA))
    if not parts:
        return pl.DataFrame(schema=TIMELINE_SCHEMA)
    return pl.concat(parts).sort("file", "t")


def pressure_summary(logs) -> dict:
    """Counts per kind, peak KV usage and queue, and a ``message`` when there is no data."""
    ev = pressure_events(logs)
    tl = pressure_timeline(logs)
    counts = {k: int(v) for k, v in   # by kind's name: the same order on every run
              ev.group_by("kind").agg(pl.col("count").sum()).sort("kind").iter_rows()}
    has_kv = tl.height > 0 and tl["kv_usage"].null_count() < tl.height
    has_q = tl.height > 0 and tl["queued"].null_count() < tl.height
    out = {"events": counts, "retracted": counts.get("retract", 0),
           "preempted": counts.get("preempt", 0),
           "kv_usage_max": tl["kv_usage"].max() if has_kv else None,
           "queued_max": tl["queued"].max() if has_q else None,
           "running_max": tl["running"].max() if tl.height else None, "message": None}
    if not counts and not has_kv and not has_q:
        out["message"] = ("no pressure data: no retract/preempt/context-shift lines and no KV "
                          "usage or queue lines in the log")
    return out
