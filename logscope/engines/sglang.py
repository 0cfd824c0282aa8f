"""SGLang's engine model: clocks, runs, and window-average labelling of batch lines.

SGLang prints local wall-clock time (``[YYYY-mm-dd HH:MM:SS DP0 TP0]``, or ``[HH:MM:SS TP0]``
before 0.3.4): ``ts`` is that time taken as UTC (``ts_source = log``; the server's time zone is
not printed, usually UTC in containers). Without a date the file's mtime gives it
(``log:date_from_mtime``, inferred). ``gen_throughput`` / ``input_throughput`` are the
scheduler's averages over its logging window (``basis = window_average``); ``#new-token`` counts
computed prefill tokens and ``#cached-token`` the radix-cache hits, kept apart.

What each batch-line figure is (sglang.md):

* window averages over scheduler wall time: ``gen_throughput``, ``input_throughput``,
  ``accept_len``, ``accept_rate``, ``est_*``, occupancy;
* snapshots at log time: ``*_req`` queue counts, ``*token_usage``, ``*used_tokens``,
  ``pending_token``, ``graph_used``;
* exact per batch: ``new_seq``, ``new_token``, ``cached_token``, ``replay_token``;
* cumulative since start: ``cache_hit_rate_pct`` (≤ 0.4.3), ``forward_ct``;
* per event: ``retracted_reqs``. Batch, retraction and startup lines are printed by every TP
  rank and pipeline stage; the analyses read one print per event
  (:func:`logscope.analysis._util.one_print`).
"""

from __future__ import annotations

import polars as pl

from logscope.engines import AnyTables, Fields, Model, Stream, Tables
from logscope.engines.sglang_requests import build_requests
from logscope.engines.windows import BASIS_WINDOW, ConfigRuns, ensure


class SglangStream(Stream):
    def __init__(self, mtimes: dict[str, float | None]) -> None:
        super().__init__(mtimes)
        self.runs = ConfigRuns(["prefill_batch", "decode_batch"])
        self.clock_days: dict[str, tuple[float | None, int]] = {}   # file -> (last time, days)

    def step(self, rows: pl.DataFrame, fields: Fields) -> tuple[pl.DataFrame, Fields]:
        df = ensure(rows, {"sg_date": pl.String, "sg_time": pl.String, "sg_msec": pl.Int64,
                           "dp_rank": pl.Int64, "tp_rank": pl.Int64})
        mt = pl.col("file").replace_strict(self.mtimes, default=None, return_dtype=pl.Float64)
        mt_date = (mt * 1e6).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).dt.strftime("%Y-%m-%d")
        date = pl.coalesce(pl.col("sg_date"), mt_date)
        stamp = pl.concat_str([date, pl.lit(" "), pl.col("sg_time")])
        ts = stamp.str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us") \
            .dt.replace_time_zone("UTC")
        ts = ts + pl.duration(milliseconds=pl.col("sg_msec").fill_null(0))
        df = self._past_midnight(df)
        ts = ts + pl.duration(days=pl.col("_days"))
        df = df.with_columns(
            ts.alias("ts"),
            pl.when(pl.col("sg_time").is_null()).then(None)
            .when(pl.col("sg_date").is_not_null()).then(pl.lit("log"))
            .otherwise(pl.lit("log:date_from_mtime")).alias("ts_source"),
            (pl.col("sg_date").is_null() & pl.col("sg_time").is_not_null()).alias("ts_inferred"),
            pl.lit(None, pl.Float64).alias("t_rel"),
            pl.col("dp_rank").alias("slot"),  # the DP group plays the slot's part in the frames
            pl.lit(None, pl.Int64).alias("task"),
            pl.when(pl.col("kind").is_in(["prefill_batch", "decode_batch"]))
            .then(pl.lit(BASIS_WINDOW)).alias("basis"),
            # a line a terminal copy cut (``*_damaged``): its intact items are kept, but the
            # item beside a cut may itself be short, so the row says so
            pl.when(pl.col("variant").str.ends_with("_damaged")).then(True).alias("partial"),
        )
        return self.runs(df.drop("_days")), fields

    def _past_midnight(self, df: pl.DataFrame) -> pl.DataFrame:
        """``_days``: the midnights a time-only stamp (``[HH:MM:SS TP0]``) has passed since
        the file's first, counted where the time of day falls back by more than 12 hours
        from the line before (kept across batches): a log that runs past midnight goes on."""
        time_only = pl.col("sg_date").is_null() & pl.col("sg_time").is_not_null()
        tod = pl.col("sg_time").str.to_time("%H:%M:%S", strict=False).cast(pl.Int64) / 1e9
        df = df.with_columns(pl.when(time_only).then(tod).alias("_tod"))
        if df["_tod"].null_count() == df.height:
            return df.with_columns(pl.lit(0, pl.Int64).alias("_days")).drop("_tod")
        parts = []
        for (f,), g in df.with_row_index("_i").partition_by(
                "file", as_dict=True, maintain_order=True).items():
            last, days = self.clock_days.get(f, (None, 0))
            tods = g["_tod"].to_list()
            out = []
            for t in tods:
                if t is not None:
                    if last is not None and last - t > 43200:
                        days += 1
                    last = t
                out.append(days)
            self.clock_days[f] = (last, days)
            parts.append(g.select("_i", pl.Series("_days", out, dtype=pl.Int64)))
        order = pl.concat(parts).sort("_i")["_days"]
        return df.with_columns(order).drop("_tod")

    def derived(self, tables: AnyTables) -> Tables:
        """``requests`` from the request log's finish records (``sglang_requests``)."""
        req = build_requests(tables)
        return {} if req is None else {"requests": req}


MODEL = Model(stream=SglangStream, row_fields=())
