"""Helpers shared by the window-based engine models (SGLang, vLLM)."""

from __future__ import annotations

import polars as pl

from logscope.engines import SOURCE, RunNumbers, Sources, State, same_dtypes

# which figures are exact per request, and which are the server's window averages
BASIS_WINDOW = "window_average"  # averaged by the server over its logging interval
BASIS_EXACT = "exact_per_request"


def ensure(df: pl.DataFrame, cols: dict[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=d).alias(c) for c, d in cols.items() if c not in df.columns]
    return df.with_columns(missing) if missing else df


class ConfigRuns:
    """Runs of a file, batch by batch: a new server run starts at a startup (``server_config``)
    line that follows traffic lines (only the first startup line of a block counts). Each
    server a wrapper interleaves in the file (its host, service or pod) counts its own runs,
    numbered across the file's servers (:class:`~logscope.engines.RunNumbers`)."""

    def __init__(self, traffic_kinds: list[str]) -> None:
        self.traffic_kinds = traffic_kinds
        self.state = State(["file", SOURCE], {"file": pl.String, SOURCE: pl.String,
                                              "_traffic": pl.Int64, "_start": pl.Boolean,
                                              "_run": pl.Int32})
        self.sources = Sources()
        self.numbers = RunNumbers([SOURCE])

    def __call__(self, df: pl.DataFrame) -> pl.DataFrame:
        df = self.state.attach(df.with_columns(self.sources(df)))
        by = ["file", SOURCE]
        # per server; over one (the usual batch) a plain expression gives the same, unhashed
        one = df.select(pl.col("file").n_unique() == 1, pl.col(SOURCE).n_unique() == 1).row(0)

        def per(e: pl.Expr) -> pl.Expr:
            return e if all(one) else e.over(by)
        is_start = pl.col("kind") == "server_config"
        traffic = (per(pl.col("kind").is_in(self.traffic_kinds).cast(pl.Int64).cum_sum())
                   + pl.col("_traffic").fill_null(0))
        prev_traffic = per(traffic.shift(1)).fill_null(pl.col("_traffic")).fill_null(0)
        prev_start = per(is_start.shift(1)).fill_null(pl.col("_start")).fill_null(False)
        restart = is_start & (prev_traffic > 0) & ~prev_start
        df = df.with_columns(
            (per(restart.cast(pl.Int32).cum_sum()) + pl.col("_run").fill_null(1))
            .alias("run"), traffic.alias("_traffic"), is_start.alias("_start"))
        self.state.update(df.group_by(by, maintain_order=True).agg(
            pl.col("_traffic").last(), pl.col("_start").last(),
            pl.col("run").last().alias("_run")))
        return self.numbers(df.drop("_traffic", "_start", "_run")).drop(SOURCE)


class YearRollover:
    """The year of ``MM-DD`` timestamps, batch by batch: the file's mtime is the year of its
    last line, and every Dec→Jan rollover before it steps one year back. Rows keep ``_rolls``
    (rollovers so far in their file) until :meth:`years` can count them all."""

    def __init__(self, month: str) -> None:
        self.month = month
        self.state = State(["file"], {"file": pl.String, "_prev": pl.Int64, "_rolls": pl.Int64})

    def __call__(self, df: pl.DataFrame) -> pl.DataFrame:
        df = self.state.attach(df)
        m = pl.col(self.month)
        seen = m.forward_fill().over("file").fill_null(pl.col("_prev"))
        prev = seen.shift(1).over("file").fill_null(pl.col("_prev"))
        roll = ((m < prev) & m.is_not_null()).fill_null(False).cast(pl.Int64)
        df = df.with_columns((roll.cum_sum().over("file") + pl.col("_rolls").fill_null(0))
                             .alias("_rolls"), seen.alias("_prev"))
        self.state.update(df.group_by("file", maintain_order=True).agg(
            pl.col("_prev").last(), pl.col("_rolls").last()))
        return df.drop("_prev")

    def years(self, df: pl.DataFrame, mtimes: dict[str, float | None]) -> pl.Series:
        """The inferred year of each row of a finished table (with its ``_rolls``)."""
        last = self.state.frame.select("file", pl.col("_prev").alias("_last_month"),
                                       pl.col("_rolls").alias("_total"))
        info = df.select("file", "_rolls").join(same_dtypes(last, df, ["file"]), on="file",
                                                how="left", maintain_order="left")
        mt = pl.col("file").replace_strict(mtimes, default=None, return_dtype=pl.Float64)
        mt_dt = (mt * 1e6).cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
        year_last = mt_dt.dt.year() - (pl.col("_last_month") > mt_dt.dt.month()).cast(pl.Int32)
        return info.select((year_last - (pl.col("_total") - pl.col("_rolls"))).cast(pl.Int32)
                           ).to_series()
