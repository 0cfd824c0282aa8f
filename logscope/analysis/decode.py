"""Decode speed: per request (exact), ``tg_3s`` windows per slot, aggregate across requests.

* :func:`decode_requests`: llama-server's ``eval time = … ms / N tokens`` per request (exact),
  with the context depth at the start of decode (cached + prompt) and at its middle, and the
  tokens per step (= mean accepted length with speculative decoding, else 1).
* :func:`decode_windows`: llama-server's ``n_gen, tg, tg_3s`` lines (``tg_3s`` is the slot's
  rate over the last ~3 s, a window per slot; depth = cached + prompt + n_gen), SGLang's
  ``Decode batch`` ``gen throughput`` and vLLM's generation throughput (server window
  averages across all running requests).
* :func:`decode_aggregate`: throughput summed over concurrently decoding requests, over time
  (what the card's aggregate-over-time panel draws; per-state figures come from
  :mod:`logscope.analysis.concurrency`). For
  llama-server each request decodes at its exact average rate over its decode interval
  [end − decode_ms, end]; the timeline is cut where any request starts or stops, so each
  segment has a fixed set of active requests. For SGLang/vLLM the windows already are
  aggregates (``running`` requests at that time).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import EXACT, WINDOW, col, label_of, sglang_kv_tokens, table, with_time

TG3S = "window (~3 s) per slot"


def decode_requests(logs, label: str | None = None) -> pl.DataFrame:
    """One row per llama-server request with an ``eval time`` line (exact per request)."""
    req = table(logs, "requests")
    schema = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
              "task": pl.Int64, "gen_tokens": pl.Int64, "decode_ms": pl.Float64,
              "decode_tps": pl.Float64, "depth_start": pl.Int64, "depth": pl.Float64,
              "tokens_per_step": pl.Float64, "t_decode_start": pl.Float64,
              "t_decode_end": pl.Float64, "source": pl.String, "exactness": pl.String}
    if req is None or "decode_ms" not in req.columns:
        return pl.DataFrame(schema=schema)
    r = req.filter(pl.col("gen_tokens").is_not_null() & (pl.col("gen_tokens") > 0)
                   & pl.col("decode_ms").is_not_null() & (pl.col("decode_ms") > 0))
    start = (pl.col("cached_tokens").clip(lower_bound=0).fill_null(0)
             + pl.col("prompt_tokens").fill_null(0))
    out = r.select(
        pl.lit(label_of(logs, label)).alias("label"), "file", "run", "slot", "task",
        "gen_tokens", "decode_ms",
        pl.coalesce("decode_tps", pl.col("gen_tokens") / pl.col("decode_ms") * 1000)
        .alias("decode_tps"),
        start.alias("depth_start"),
        (start + pl.col("gen_tokens") / 2).alias("depth"),
        pl.col("mean_len").fill_null(1.0).alias("tokens_per_step"),
        (pl.col("t_end") - pl.col("decode_ms") / 1000).alias("t_decode_start"),
        pl.col("t_end").alias("t_decode_end"),
        pl.lit("llama:request").alias("source"), pl.lit(EXACT).alias("exactness"),
    )
    return out.cast(schema).sort("file", "run", "t_decode_start")


def decode_windows(logs, label: str | None = None) -> pl.DataFrame:
    """Decode rate windows over time: llama ``tg_3s`` per slot, SGLang/vLLM server windows.

    Columns: label, file, run, slot, task, t (s since the file's first window, or line number
    when ``t_basis`` is ``line``), t_basis, tps, depth, running, source, exactness.
    """
    lab = label_of(logs, label)
    schema = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
              "task": pl.Int64, "t": pl.Float64, "t_basis": pl.String, "tps": pl.Float64,
              "depth": pl.Float64, "running": pl.Int64, "source": pl.String,
              "exactness": pl.String}
    parts = []
    dp = table(logs, "decode_progress")
    if dp is not None and col(dp, "tg_3s", "tg"):
        req = table(logs, "requests")
        if req is not None:
            base = req.select("file", "run", "slot", "task",
                              (pl.col("cached_tokens").clip(lower_bound=0).fill_null(0)
                               + pl.col("prompt_tokens").fill_null(0)).alias("_base"))
            dp = dp.join(base, on=["file", "run", "slot", "task"], how="left")
        else:
            dp = dp.with_columns(_base=pl.lit(None, pl.Int64))
        dp, basis = with_time(dp)
        rate = pl.col("tg_3s") if "tg_3s" in dp.columns else pl.col("tg")
        parts.append(dp.select(
            pl.lit(lab).alias("label"), "file", "run", "slot", "task", "t",
            pl.lit(basis).alias("t_basis"), rate.alias("tps"),
            (pl.col("_base") + pl.col("n_gen")).cast(pl.Float64).alias("depth"),
            pl.lit(None, pl.Int64).alias("running"),
            pl.lit("llama:tg_3s").alias("source"), pl.lit(TG3S).alias("exactness"),
        ).filter(pl.col("tps").is_not_null()).cast(schema))
    for name, src, thr, run_c, kv_tokens in (
            ("decode_batch", "sglang:decode_batch", "gen_throughput", "running_req",
             sglang_kv_tokens),
            ("engine_stats", "vllm:engine_stats", "gen_throughput", "running_reqs", None)):
        df = table(logs, name)
        if df is None or thr not in df.columns or df[thr].null_count() == df.height:
            continue
        df, basis = with_time(df)
        rc = run_c if run_c in df.columns else None
        depth = (kv_tokens(df) / pl.col(rc)).cast(pl.Float64) if kv_tokens and rc \
            else pl.lit(None, pl.Float64)
        parts.append(df.select(
            pl.lit(lab).alias("label"), "file", "run",
            pl.lit(None, pl.Int64).alias("slot"), pl.lit(None, pl.Int64).alias("task"), "t",
            pl.lit(basis).alias("t_basis"), pl.col(thr).cast(pl.Float64).alias("tps"),
            depth.alias("depth"),
            (pl.col(rc) if rc else pl.lit(None)).cast(pl.Int64).alias("running"),
            pl.lit(src).alias("source"), pl.lit(WINDOW).alias("exactness"),
        ).filter(pl.col("tps").is_not_null()).cast(schema))
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat(parts).sort("file", "t")


def decode_aggregate(logs, label: str | None = None) -> pl.DataFrame:
    """Decode throughput summed over the requests decoding at the same time.

    llama-server: one row per segment [t0, t1) of the timeline with a fixed set of decoding
    requests (``active``), ``tps`` = the sum of their exact average decode rates.
    SGLang/vLLM: one row per window line, ``active`` = running requests, ``tps`` = the line's
    generation throughput (already an aggregate).
    """
    lab = label_of(logs, label)
    schema = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t0": pl.Float64,
              "t1": pl.Float64, "active": pl.Int64, "tps": pl.Float64, "source": pl.String,
              "exactness": pl.String}
    rows = []
    dr = decode_requests(logs, lab).drop_nulls(["t_decode_start", "t_decode_end"])
    for (file, run), g in dr.group_by(["file", "run"], maintain_order=True):
        # sweep line: +rate at a decode start, -rate at its end
        ev = sorted([(a, 1, r) for a, r in zip(g["t_decode_start"], g["decode_tps"],
                                              strict=True)]
                    + [(b, -1, -r) for b, r in zip(g["t_decode_end"], g["decode_tps"],
                                                  strict=True)])
        active, rate = 0, 0.0
        for (t0, d, r), (t1, _, _) in zip(ev, ev[1:] + [(None, 0, 0.0)], strict=True):
            active += d
            rate += r
            if t1 is None or t1 <= t0 or active <= 0:
                continue
            rows.append(dict(label=lab, file=file, run=run, t0=t0, t1=t1, active=active,
                             tps=max(rate, 0.0), source="llama:request",
                             exactness="sum of " + EXACT))
    out = pl.DataFrame(rows, schema=schema)
    win = decode_windows(logs, lab).filter(pl.col("source") != "llama:tg_3s")
    if win.height:
        out = pl.concat([out, win.select(
            "label", "file", "run", pl.col("t").alias("t0"), pl.col("t").alias("t1"),
            pl.col("running").alias("active"), "tps", "source", "exactness").cast(schema)])
    return out
