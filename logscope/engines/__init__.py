"""Engine models: turn one engine's classified rows into its frames.

Each model is a function ``(rows, mtimes) -> dict[name, DataFrame]`` where ``rows`` holds every
row the engine's grammar took (events, ignored, unrecognized) with ``kind``/``variant`` and the
typed fields. The returned frames are keyed by event kind, plus derived tables (``requests``).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

Model = Callable[[pl.DataFrame, dict[str, float | None]], dict[str, pl.DataFrame]]


def llama_server_model(rows: pl.DataFrame,
                       mtimes: dict[str, float | None]) -> dict[str, pl.DataFrame]:
    from . import llama_server

    prepared = llama_server.prepare(rows, mtimes)
    out = {"_rows": prepared}
    out["requests"] = llama_server.build_requests(prepared)
    return out


def generic_model(rows: pl.DataFrame, mtimes: dict[str, float | None]) -> dict[str, pl.DataFrame]:
    """Engines without a dedicated model yet: rows as they are, one run per file."""
    return {"_rows": rows.with_columns(pl.lit(1, pl.Int32).alias("run"))}


def model_for(engine: str) -> Model:
    if engine == "llama-server":
        return llama_server_model
    try:
        import importlib

        mod = importlib.import_module(f".{engine.replace('-', '_')}", __name__)
        return mod.model  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        return generic_model
