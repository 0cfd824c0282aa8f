"""vLLM's engine model: the year of ``MM-DD HH:MM:SS`` stamps, runs, counters and spec metrics.

* ``ts``: vLLM prints no year. It comes from an outer wrapper timestamp (journald/docker) where
  present, else from the file's mtime as the year of the last line, walking back over Dec→Jan
  rollovers; ``ts_inferred`` says so.
* ``engine_stats`` throughputs are averages over the logging interval (``basis``).
* ``spec_decoding``: V1 lines count per interval; V0 lines (``Speculative metrics``) are
  cumulative counters (``counter = cumulative``). ``mean_acceptance_length`` is normalised to
  ``1 + accepted / drafts`` (0.9.0+ definition); 0.8.5 printed ``accepted / drafts`` with the same
  string, recognised because it then equals the sum of the per-position rates. The printed value
  is kept in ``mean_acceptance_length_raw``.
* ``preemption`` (V0): ``total_num_cumulative_preemption`` is sampled every 50 preemptions.
"""

from __future__ import annotations

import polars as pl

from logscope.engines import Fields, Model, Stream
from logscope.engines.clock import WRAP_TS, WRAP_TS_DTYPE
from logscope.engines.windows import BASIS_WINDOW, ConfigRuns, YearRollover, ensure


class VllmStream(Stream):
    temp_columns = ("_rolls", "_wy")

    def __init__(self, mtimes: dict[str, float | None]) -> None:
        super().__init__(mtimes)
        self.runs = ConfigRuns(["engine_stats", "spec_decoding", "prefix_cache"])
        self.years = YearRollover("v_month")

    def step(self, rows: pl.DataFrame, fields: Fields) -> tuple[pl.DataFrame, Fields]:
        df = ensure(rows, {"v_month": pl.Int64, "v_day": pl.Int64, "v_time": pl.String,
                           "v_year": pl.Int64, "engine_idx": pl.Int64, WRAP_TS: WRAP_TS_DTYPE})
        has_wrap = pl.col(WRAP_TS).is_not_null()
        df = self.years(df).with_columns(
            pl.lit(None, pl.Datetime("us", "UTC")).alias("ts"),  # in finish: needs every year
            pl.col(WRAP_TS).dt.year().cast(pl.Int32).alias("_wy"),
            pl.when(pl.col("v_month").is_null()).then(None)
            .when(pl.col("v_year").is_not_null()).then(pl.lit("log"))
            .when(has_wrap).then(pl.lit("log:year_from_wrapper"))
            .otherwise(pl.lit("log:year_from_mtime")).alias("ts_source"),
            (pl.col("v_month").is_not_null() & pl.col("v_year").is_null()).alias("ts_inferred"),
            pl.lit(None, pl.Float64).alias("t_rel"),
            pl.col("engine_idx").alias("slot"),  # the engine index plays the slot's part
            pl.lit(None, pl.Int64).alias("task"),
            pl.when(pl.col("kind").is_in(["engine_stats", "spec_decoding"]))
            .then(pl.lit(BASIS_WINDOW)).alias("basis"),
            pl.when(pl.col("variant").str.starts_with("spec_decoding_v0"))
            .then(pl.lit("cumulative"))
            .when(pl.col("kind") == "spec_decoding").then(pl.lit("per_interval"))
            .alias("counter"),
        ).drop(WRAP_TS)
        return self.runs(df), fields

    def finish_table(self, name: str, table: pl.DataFrame) -> pl.DataFrame:
        table = self._ts(table)
        return _acceptance_length(table) if name == "spec_decoding" else table

    def _ts(self, df: pl.DataFrame) -> pl.DataFrame:
        if not df.height:
            return df
        inferred = self.years.years(df, self.mtimes)
        year = pl.coalesce(pl.col("v_year").cast(pl.Int32), pl.col("_wy"), pl.lit(inferred))
        stamp = pl.concat_str([
            year.cast(pl.String), pl.lit("-"), pl.col("v_month").cast(pl.String).str.zfill(2),
            pl.lit("-"), pl.col("v_day").cast(pl.String).str.zfill(2), pl.lit(" "),
            pl.col("v_time")])
        ts = stamp.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us") \
            .dt.replace_time_zone("UTC")
        return df.with_columns(ts.alias("ts"))


def _acceptance_length(spec: pl.DataFrame) -> pl.DataFrame:
    """``spec_decoding.mean_acceptance_length`` on the 0.9.0+ definition, the printed value kept
    in ``mean_acceptance_length_raw`` (placed before the kind's own fields)."""
    if spec.get_column("mean_acceptance_length").null_count() == spec.height:
        return spec
    pp_sum = pl.col("per_position_acceptance_rate").list.sum()
    raw = pl.col("mean_acceptance_length")
    def_085 = (pl.col("variant") == "spec_decoding_v1_b") & pp_sum.is_not_null() & (
        (raw - pp_sum).abs() < (raw - (pp_sum + 1)).abs())
    spec = spec.with_columns(
        raw.alias("mean_acceptance_length_raw"),
        pl.when(def_085).then(raw + 1).otherwise(raw).alias("mean_acceptance_length"))
    cols = spec.columns[:-1]
    at = cols.index("counter" if "counter" in cols else "variant") + 1
    return spec.select(*cols[:at], "mean_acceptance_length_raw", *cols[at:])


MODEL = Model(stream=VllmStream, row_fields=("engine_idx",))
