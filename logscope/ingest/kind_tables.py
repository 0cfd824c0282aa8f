"""The event kind tables (``prompt_eval``, ``decode_batch``, ``engine_stats``, ...): one per kind,
built block by block from the engine model's rows and the kind's own fields."""

from __future__ import annotations

import polars as pl

from logscope.classify.grammar import load_grammar
from logscope.classify.parse import DTYPES
from logscope.engines import CATEGORICAL

COMMON_COLUMNS = ["file", "line", "run", "engine", "ts", "ts_source", "ts_inferred", "t_rel",
                  "level", "slot", "task", "variant"]
# columns an engine model may add to its event rows (kept in the kind tables when present)
MODEL_COLUMNS = {"basis": pl.Categorical(), "counter": pl.String,
                 "mean_acceptance_length_raw": pl.Float64,
                 "partial": pl.Boolean, "prefix": pl.String}


def kind_fields(engine: str) -> dict[str, dict[str, str]]:
    g = load_grammar(engine)
    out: dict[str, dict[str, str]] = {}
    for v in g.variants:
        if v.kind in ("ignored", "claimed", "other"):
            continue
        out.setdefault(v.kind, dict(g.envelope_fields)).update(v.all_fields)
    return out


def kind_table(rows: pl.DataFrame, fields: dict[str, str], own: pl.DataFrame | None,
                temp: tuple[str, ...] = ()) -> pl.DataFrame:
    """The rows of one event kind as its table: the common columns, the model's, the kind's
    fields (``own``, keyed by ``_row``), then ``_row`` and the model's temporary columns."""
    if own is not None:
        if (own.height == rows.height and not set(own.columns) & set(rows.columns) - {"_row"}
                and own.get_column("_row").equals(rows.get_column("_row"))):
            rows = rows.hstack(own.drop("_row").get_columns())  # the same rows, in order
        else:
            rows = rows.join(own, on="_row", how="left", maintain_order="left")
    cols = []
    for c in COMMON_COLUMNS:
        if c in rows.columns:
            cols.append(pl.col(c))
        else:
            cols.append(pl.lit(None).alias(c))
    # a model column's dtype is the table's (``basis``, one of a few long sentences a row, is
    # categorical: 4 bytes a row)
    cols += [pl.col(c).cast(d) for c, d in MODEL_COLUMNS.items() if c in rows.columns]
    for f, d in fields.items():
        if f in COMMON_COLUMNS or f in MODEL_COLUMNS:
            continue
        cols.append(pl.col(f).cast(DTYPES[d]) if f in rows.columns
                    else pl.lit(None, dtype=DTYPES[d]).alias(f))
    cols += [pl.col("_row"), *[pl.col(c) for c in temp if c in rows.columns]]
    return rows.select(cols).with_columns(
        pl.col("slot").cast(pl.Int64), pl.col("task").cast(pl.Int64),
        pl.col("run").cast(pl.Int32), pl.col("ts").cast(pl.Datetime("us", "UTC")),
        pl.col("t_rel").cast(pl.Float64), pl.col("ts_inferred").cast(pl.Boolean),
        *[pl.col(c).cast(pl.Categorical()) for c in CATEGORICAL])
