"""SGLang's ``requests`` table: one row per finished request, from its request log.

``--log-requests`` prints, when a request finishes, its ``meta_info`` (a ``Finish:`` line at
every log level from 0.4.1, ``in=… out={…}`` before; ``{"event": "request.finished", …}`` with
``--log-requests-format json`` from 0.5.7). The figures are the server's own, exact per request:

* ``prompt_total`` = ``prompt_tokens`` (SGLang counts the whole prompt, cached part included);
* ``cached_tokens`` = ``cached_tokens`` (radix-cache hit; ``cached_source = "printed"``);
* ``prompt_tokens`` = ``prompt_tokens − cached_tokens``: the tokens computed, as llama-server's
  ``prompt_tokens`` means;
* ``gen_tokens`` = ``completion_tokens``;
* ``total_ms`` = ``e2e_latency`` × 1000 (from receipt by the tokenizer to finish), when printed;
* ``ts_end`` = the finish line's time (the JSON record's own ISO timestamp when given);
  ``ts_start`` = ``ts_end − e2e_latency``.

Not given per request by the request log, so null (never guessed): prefill time, decode time,
decode t/s, queue time, time to first token, draft acceptance, slot and task (the ``rid`` names
the request). The batch lines' figures stay window averages.
"""

from __future__ import annotations

import polars as pl

from . import AnyTables

FINISH_VARIANTS = ("request_log_finish_v0_4_1", "request_log_finish_v0_2_14",
                   "request_log_finish_v0_2_0")
SOURCE = "request_log"


def build_requests(tables: AnyTables) -> pl.DataFrame | None:
    """One row per finished request of an SGLang log (None when the log has no finish record).

    Example: ``logscope.read("sglang.log")["requests"].select("rid", "gen_tokens", "total_ms")``
    """
    t = tables.get("request_log")
    if t is None:
        return None
    if isinstance(t, pl.LazyFrame):
        t = t.collect()
    cols = {"rid": pl.String, "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64,
            "cached_tokens": pl.Int64, "finish_reason": pl.String, "e2e_latency": pl.Float64,
            "req_log_timestamp": pl.String, "req_event": pl.String}
    t = t.with_columns(pl.lit(None, d).alias(c) for c, d in cols.items() if c not in t.columns)
    fin = t.filter(pl.col("variant").cast(pl.String).is_in(FINISH_VARIANTS)
                   | (pl.col("req_event") == "finished"))
    if not fin.height:
        return None
    iso = (pl.col("req_log_timestamp").str.to_datetime(time_unit="us", time_zone="UTC",
                                                        strict=False))
    ts_end = pl.coalesce(iso, pl.col("ts"))
    e2e_us = (pl.col("e2e_latency") * 1e6).round(0).cast(pl.Int64)
    computed = pl.col("prompt_tokens") - pl.col("cached_tokens")
    out = fin.with_columns(
        ts_end.alias("ts_end"),
        pl.col("prompt_tokens").alias("prompt_total"),
        pl.when(computed >= 0).then(computed).alias("prompt_tokens"),
        pl.col("completion_tokens").alias("gen_tokens"),
        pl.when(pl.col("cached_tokens").is_not_null()).then(pl.lit("printed"))
        .alias("cached_source"),
        pl.when(pl.col("e2e_latency") >= 0).then(pl.col("e2e_latency") * 1000.0)
        .alias("total_ms"),
        pl.when(pl.col("prompt_tokens").is_not_null() | pl.col("completion_tokens").is_not_null())
        .then(pl.lit("completed")).otherwise(pl.lit("partial")).alias("status"),
    ).with_columns(
        pl.when(pl.col("e2e_latency") >= 0)
        .then(pl.col("ts_end") - pl.duration(microseconds=e2e_us)).alias("ts_start"),
        (pl.col("finish_reason") == "abort").alias("cancelled"),
        pl.lit(SOURCE).alias("source"),
        pl.lit("exact_per_request").alias("exactness"),
    )
    return out.select(
        "file", "run", "line", "rid", "status", "cancelled", "finish_reason", "ts_start",
        "ts_end", "prompt_total", "cached_tokens", "cached_source", "prompt_tokens",
        "gen_tokens", "total_ms", "source", "exactness",
    ).with_columns(pl.col("run").cast(pl.Int32)).sort("file", "run", "line")
