"""SGLang's ``requests`` table: one row per finished request, from its request log.

``--log-requests`` prints, when a request finishes, its ``meta_info`` (a ``Finish:`` line at
every log level from 0.4.1, ``in=… out={…}`` before; ``{"event": "request.finished", …}`` with
``--log-requests-format json`` from 0.5.7). The figures are the server's own, exact per request:

* ``prompt_total`` = ``prompt_tokens`` (SGLang counts the whole prompt, cached part included);
* ``cached_tokens`` = ``cached_tokens`` (radix-cache hit; ``cached_source = "printed"``);
* ``prompt_tokens`` = ``prompt_tokens − cached_tokens``: the tokens computed, as llama-server's
  ``prompt_tokens`` means;
* ``gen_tokens`` = ``completion_tokens``;
* ``mean_len`` = ``spec_accept_length`` (speculative decoding, recent releases: completion
  tokens ÷ verify steps ``spec_verify_ct``, kept beside it), llama-server's mean accepted length;
* ``total_ms`` = ``e2e_latency`` × 1000 (from receipt by the tokenizer to finish), when printed;
* ``ts_end`` = the finish line's time (the JSON record's own ISO timestamp when given);
  ``ts_start`` = ``ts_end − e2e_latency``.

Not given per request by the request log, so null (never guessed): prefill time, decode time,
decode t/s, queue time, time to first token, drafted/accepted counts, slot and task (the
``rid`` names the request). The batch lines' figures stay window averages.
"""

from __future__ import annotations

import polars as pl

from logscope.engines import AnyTables

FINISH_VARIANTS = ("request_log_finish_v0_4_1", "request_log_finish_v0_2_14",
                   "request_log_finish_v0_2_0")
SOURCE = "request_log"

# llama-server's ``requests`` columns (its order and dtypes): those the request log does not
# give are null, so every consumer of the table reads the same schema and finds them unknown
LLAMA_COLUMNS: dict[str, pl.DataType] = {
    "file": pl.Categorical(), "router_port": pl.Int64(), "run": pl.Int32(), "slot": pl.Int64(),
    "task": pl.Int64(), "status": pl.String(), "cancelled": pl.Boolean(),
    "truncated": pl.Boolean(), "error": pl.String(), "is_child": pl.Boolean(),
    "select_method": pl.String(), "sim_best": pl.Float64(), "f_keep": pl.Float64(),
    "ts_start": pl.Datetime("us", "UTC"), "ts_end": pl.Datetime("us", "UTC"),
    "t_start": pl.Float64(), "t_end": pl.Float64(), "prompt_total": pl.Int64(),
    "cached_tokens": pl.Int64(), "cached_source": pl.String(), "prompt_tokens": pl.Int64(),
    "prompt_ms": pl.Float64(), "prompt_tps": pl.Float64(), "gen_tokens": pl.Int64(),
    "decode_ms": pl.Float64(), "decode_tps": pl.Float64(), "total_ms": pl.Float64(),
    "graphs_reused": pl.Int64(), "draft_accepted": pl.Int64(), "draft_generated": pl.Int64(),
    "draft_rate": pl.Float64(), "mean_len": pl.Float64(), "ctx_tokens": pl.Int64(),
    "n_ctx_slot": pl.Int64(), "context_shifts": pl.UInt32(), "n_discarded": pl.Int64(),
    "prefill_ticks": pl.UInt32(), "decode_ticks": pl.UInt32(), "tg_3s_mean": pl.Float64(),
    "prefill_tick_list": pl.List(pl.Struct({
        "t_rel": pl.Float64, "n_processed": pl.Int64, "n_past": pl.Int64,
        "progress": pl.Float64, "pp_seconds": pl.Float64, "pp_tps": pl.Float64})),
}
EXTRA_COLUMNS = ("rid", "finish_reason", "spec_verify_ct", "line", "source", "exactness")


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
            "req_log_timestamp": pl.String, "req_event": pl.String,
            "spec_accept_length": pl.Float64, "spec_verify_ct": pl.Int64}
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
        pl.when(pl.col("finish_reason") == "abort").then(pl.lit("cancelled"))
        .when(pl.col("prompt_tokens").is_not_null() | pl.col("completion_tokens").is_not_null())
        .then(pl.lit("completed")).otherwise(pl.lit("partial")).alias("status"),
    ).with_columns(
        pl.when(pl.col("e2e_latency") >= 0)
        .then(pl.col("ts_end") - pl.duration(microseconds=e2e_us)).alias("ts_start"),
        (pl.col("finish_reason") == "abort").alias("cancelled"),
        # tokens per verify step (0 when no step was verified: unknown, not zero)
        pl.when(pl.col("spec_accept_length").is_finite() & (pl.col("spec_accept_length") > 0))
        .then(pl.col("spec_accept_length")).alias("mean_len"),
        pl.lit(SOURCE).alias("source"),
        pl.lit("exact_per_request").alias("exactness"),
    )
    out = out.sort("file", "run", "line")
    return out.select(
        *[(pl.col(c) if c in out.columns else pl.lit(None)).cast(d).alias(c)
          for c, d in LLAMA_COLUMNS.items()],
        *EXTRA_COLUMNS,
    )
