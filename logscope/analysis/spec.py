"""Speculative decoding: acceptance per request (llama-server, exact) and per window.

* :func:`acceptance_requests`: llama-server's ``draft acceptance = R ( A accepted / G
  generated), mean len = L`` per request (exact): acceptance rate A/G and mean accepted length
  (tokens per decode step), with depth and decode t/s of the request.
* :func:`acceptance_windows`: SGLang ``Decode batch`` ``accept len`` / ``accept rate`` and vLLM
  ``SpecDecoding metrics`` (server window averages over all running requests).
* :func:`acceptance_per_position`: acceptance per draft position where the log prints it
  (llama-server ``acc per pos``, vLLM ``Per-position acceptance rate``).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import EXACT, WINDOW, col, label_of, table, with_time


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


def acceptance_summary(logs) -> dict:
    """Pooled acceptance: :func:`logscope.analysis.metrics.acceptance_rate` and
    :func:`~logscope.analysis.metrics.mean_accepted_length` (the one definition of each).

    Example::

        acceptance_summary(logscope.read("spec.log"))["rate"]
    """
    from logscope.analysis.metrics import acceptance_rate, mean_accepted_length

    r, m = acceptance_rate(logs), mean_accepted_length(logs)
    return {"source": r["source"] or m["source"], "exactness": r["exactness"] or m["exactness"],
            "n": max(r["n"], m["n"]), "accepted": r["accepted"], "generated": r["generated"],
            "rate": r["value"], "mean_len": m["value"]}
