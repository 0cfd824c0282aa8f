"""The energy columns an ingest's ``requests`` gains, and their null form without telemetry
(kept apart from the energy model so that reading logs does not import numpy)."""

from __future__ import annotations

import polars as pl

ENERGY_COLUMNS = {"energy_j": pl.Float64, "prefill_energy_j": pl.Float64,
                  "decode_energy_j": pl.Float64}


def null_energy(logs):  # noqa: ANN001, ANN201 - an ingest's Logs
    """``logs`` with null energy columns on ``requests`` (no telemetry, or none that applies).

    Example: ``null_energy(logscope.read("server.log"))["requests"]["energy_j"].null_count()``
    """
    req = logs.tables.get("requests")
    if req is not None:
        logs.tables["requests"] = null_energy_table("requests", req)
    return logs


def null_energy_table(name: str, table: pl.DataFrame) -> pl.DataFrame:
    """Table ``name`` as :func:`null_energy` leaves it (an ``on_table`` of a streamed ingest).

    Example: ``logscope.read("server.log", out="frames/", on_table=null_energy_table)``
    """
    if name != "requests":
        return table
    return table.drop([c for c in ENERGY_COLUMNS if c in table.columns]).with_columns(
        pl.lit(None, dt).alias(c) for c, dt in ENERGY_COLUMNS.items())
