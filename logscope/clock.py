"""Wall-clock helpers shared by the engine models (wrapper timestamps, year inference)."""

from __future__ import annotations

import polars as pl

WRAP_TS = "wrap_ts"  # the rows' wrapper timestamp (UTC), made from the front end's columns
WRAP_TS_DTYPE = pl.Datetime("us", "UTC")


def wrapper_ts_expr() -> pl.Expr:
    """UTC Datetime from the wrapper columns the front end extracted (journald ISO, docker)."""
    iso = pl.col("wrap_iso").str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us").dt.convert_time_zone("UTC")
    docker = pl.col("wrap_docker").str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.fZ", strict=False, time_unit="us").dt.replace_time_zone("UTC")
    return pl.coalesce(iso, docker)
