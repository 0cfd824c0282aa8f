"""Engine models: turn one engine's classified rows into its frames.

A model has three parts:

* ``row_fields``: the body fields it needs on every row, whatever the kind (``slot``,
  ``task``...); ``parse.classify`` keeps them in the narrow rows frame, every other field stays
  in its kind's own frame;
* ``prepare(rows, mtimes) -> rows``: over every row the engine's grammar took (events, ignored
  and unrecognized lines, with ``kind``/``variant``, envelope and row fields), in input order
  (``_row``; so each file's rows are in line order): runs, clocks, continuation lines,
  ``basis``... It must keep that order (it is never re-sorted: a sort would copy every row);
* ``derive(tables) -> tables``: from the engine's finished per-kind tables, the derived tables
  (``requests``) and any table it rewrites.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

Tables = dict[str, pl.DataFrame]


def _no_tables(tables: Tables) -> Tables:
    return {}


def _one_run(rows: pl.DataFrame, mtimes: dict[str, float | None]) -> pl.DataFrame:
    return rows.with_columns(pl.lit(1, pl.Int32).alias("run"))


@dataclass(frozen=True)
class Model:
    prepare: Callable[[pl.DataFrame, dict[str, float | None]], pl.DataFrame] = _one_run
    derive: Callable[[Tables], Tables] = _no_tables
    row_fields: tuple[str, ...] = ("slot", "task")


GENERIC = Model()  # engines without a dedicated model yet: rows as they are, one run per file


def model_for(engine: str) -> Model:
    try:
        mod = importlib.import_module(f".{engine.replace('-', '_')}", __name__)
    except ImportError:
        return GENERIC
    return getattr(mod, "MODEL", GENERIC)
