"""``lines_classified`` (one row per line an engine took: its class, kind and variant) and the
lines counted per file and class (the summary's ``events``, ``ignored``, ``other``,
``unrecognized``)."""

from __future__ import annotations

import polars as pl

from logscope.classify.parse import EVENT, IGNORED, OTHER, UNRECOGNIZED
from logscope.ingest.batch import Batch
from logscope.ingest.logs import FileStats

LINES = "_lines"  # the store's key of an engine's lines_classified parts


CLASSIFIED_SCHEMA = {"_row": pl.UInt32, "file": pl.String, "line": pl.Int64, "engine": pl.String,
                     "run": pl.Int32, "kind": pl.String, "variant": pl.String}


def class_of(kind: pl.Expr) -> pl.Expr:
    return (pl.when(kind == IGNORED).then(pl.lit(IGNORED))
            .when(kind == UNRECOGNIZED).then(pl.lit(UNRECOGNIZED))
            .when(kind == OTHER).then(pl.lit(OTHER))
            .otherwise(pl.lit(EVENT)))


CLASSES = pl.Enum([EVENT, IGNORED, OTHER, UNRECOGNIZED])


def classified(rows: pl.DataFrame) -> pl.DataFrame:
    """The ``lines_classified`` columns of an engine's rows (plus ``_row``, for ordering): one
    row per line, so its repeated strings are categorical (4 bytes a row, not a string view)."""
    cat = pl.Categorical()
    return rows.select("_row", pl.col("file").cast(cat), "line", pl.col("engine").cast(cat),
                       pl.col("run").cast(pl.Int32),
                       class_of(pl.col("kind")).cast(CLASSES).alias("class"),
                       pl.col("kind").cast(cat), pl.col("variant").cast(cat))


def class_counts(batches: list[Batch]) -> pl.DataFrame:
    """Lines per (file, engine, class), and per file the lines no engine took (``other``):
    counted batch by batch, where the frames are small."""
    parts = [rows.group_by("file", class_of(pl.col("kind")).alias("class")).len()
             .with_columns(pl.lit(eng).alias("engine"))
             for b in batches for eng, rows in b.rows.items()]
    parts += [b.other.select("file", pl.lit("none").alias("class"),
                             pl.col("n").cast(pl.UInt32).alias("len"),
                             pl.lit(None, pl.String).alias("engine"))
              for b in batches if b.other.height]
    if not parts:
        return pl.DataFrame(schema={"file": pl.String, "class": pl.String, "len": pl.UInt32,
                                    "engine": pl.String})
    return pl.concat(parts, how="diagonal_relaxed").group_by("file", "class", "engine").agg(
        pl.col("len").sum())


def fill_stats(files: list[FileStats], counts: pl.DataFrame) -> None:
    per: dict[tuple[str, str], int] = {}
    engs: dict[str, set[str]] = {}
    for f, c, e, n in counts.iter_rows():
        per[(f, c)] = per.get((f, c), 0) + n
        if c == EVENT:
            engs.setdefault(f, set()).add(e)
    for fs in files:
        fs.events = per.get((fs.file, EVENT), 0)
        fs.unrecognized = per.get((fs.file, UNRECOGNIZED), 0)
        # a line of no engine at all is counted with the ignored ones
        fs.ignored = per.get((fs.file, IGNORED), 0) + per.get((fs.file, "none"), 0)
        fs.other = per.get((fs.file, OTHER), 0)
        fs.engines = sorted(engs.get(fs.file, ()))
        fs.records = fs.events + fs.unrecognized + fs.ignored + fs.other
