"""Wall-clock helpers shared by the engine models (wrapper timestamps, year inference)."""

from __future__ import annotations

import polars as pl

WRAP_TS = "wrap_ts"  # the rows' wrapper timestamp (UTC), decoded from their prefix (envelope.py)
WRAP_TS_DTYPE = pl.Datetime("us", "UTC")
