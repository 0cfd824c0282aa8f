"""Helpers shared by the window-based engine models (SGLang, vLLM)."""

from __future__ import annotations

import polars as pl

# which figures are exact per request, and which are the server's window averages
BASIS_WINDOW = "window_average"  # averaged by the server over its logging interval
BASIS_EXACT = "exact_per_request"


def ensure(df: pl.DataFrame, cols: dict[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=d).alias(c) for c, d in cols.items() if c not in df.columns]
    return df.with_columns(missing) if missing else df


def runs_from_config(df: pl.DataFrame, traffic_kinds: list[str]) -> pl.Expr:
    """A new server run starts at a startup (server_config) line that follows traffic lines."""
    is_start = pl.col("kind") == "server_config"
    traffic = pl.col("kind").is_in(traffic_kinds).cast(pl.Int32).cum_sum().over("file")
    prev_traffic = traffic.shift(1).over("file").fill_null(0)
    prev_start = is_start.shift(1).over("file").fill_null(False)
    restart = is_start & (prev_traffic > 0) & ~prev_start
    # only the first startup line of a block after traffic counts: traffic since last start
    return (restart.cast(pl.Int32).cum_sum().over("file") + 1).alias("run")


def year_from_context(df: pl.DataFrame, month: str, mtimes: dict[str, float | None]) -> pl.Expr:
    """Year for ``MM-DD`` timestamps: from an outer wrapper timestamp where present, else the
    file's mtime taken as the year of the last line, walking back over Dec→Jan rollovers."""
    from .. import clock

    grp = "file"
    m = pl.col(month)
    prev = m.forward_fill().shift(1).over(grp)
    rolls = ((m < prev) & m.is_not_null()).fill_null(False).cast(pl.Int32).cum_sum().over(grp)
    total = rolls.max().over(grp)
    mt = pl.col("file").replace_strict(mtimes, default=None, return_dtype=pl.Float64)
    mt_dt = (mt * 1e6).cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    last_month = m.drop_nulls().last().over(grp)
    year_last = mt_dt.dt.year() - (last_month > mt_dt.dt.month()).cast(pl.Int32)
    inferred = (year_last - (total - rolls)).cast(pl.Int32)
    wrap_year = pl.col(clock.WRAP_TS).dt.year().cast(pl.Int32)
    return pl.coalesce(wrap_year, inferred)
