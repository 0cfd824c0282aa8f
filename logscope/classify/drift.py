"""Format drift: group unrecognized lines by shape so a new server version is noticed.

A line's *shape* is its text with the variable parts masked: hex numbers (``0x7f3a``, hex ids
of 8 or more digits) become ``H``, decimal numbers (ints, floats, exponents, dotted versions)
become ``N``, runs of whitespace one space. Lines of the same shape are one format change,
however many times the server printed it.

    >>> shape_of("slot launch_slot_: id  3 | task 1207 | processing task, t=0.25")
    'slot launch_slot_: id N | task N | processing task, t=N'
"""

from __future__ import annotations

import polars as pl

LONG_INT = r"\b[0-9]{8,}\b"  # a long decimal number is a number, not a hex id
HEX = r"\b(?:0[xX][0-9a-fA-F]+|[0-9a-fA-F]{8,})\b"  # pointers, ids, hashes
NUMBER = r"[0-9]+(?:\.[0-9]+)*(?:[eE][-+]?[0-9]+)?"  # 3, 0.25, 1.5e-3, 2.3.4, b4321 -> bN
MAX_SHAPE = 300  # characters of a line kept for its shape (a shape is for reading)


def _mask(expr: pl.Expr) -> pl.Expr:
    return (expr.str.slice(0, MAX_SHAPE)
            .str.replace_all(LONG_INT, "\x01")
            .str.replace_all(HEX, "\x02")
            .str.replace_all(NUMBER, "N")
            .str.replace_all("\x01", "N", literal=True)
            .str.replace_all("\x02", "H", literal=True)
            .str.replace_all(r"\s+", " ").str.strip_chars())


def shape_of(text: str) -> str:
    """The shape of one line (the per-line twin of the vectorised masking)."""
    return pl.select(_mask(pl.lit(text, dtype=pl.String))).item()


def group_unrecognized(unrec: pl.DataFrame, text_col: str = "text") -> pl.DataFrame:
    """Group the ``unrecognized`` table by shape (numbers masked ``N``, hex ``H``).

    Returns one row per (engine guess, shape), most frequent first: ``engine``, ``shape``,
    ``count``, ``files`` (distinct files), and one example: ``example`` (the text),
    ``example_file``, ``example_line`` (its first occurrence) and ``diagnostic`` when present.
    """
    schema = {"engine": pl.String, "shape": pl.String, "count": pl.UInt32, "files": pl.UInt32,
              "example": pl.String, "example_file": pl.String, "example_line": pl.Int64,
              "diagnostic": pl.String}
    if unrec.height == 0:
        return pl.DataFrame(schema=schema)
    df = unrec.with_columns(
        _mask(pl.col(text_col)).alias("shape"),
        (pl.col("engine_guess") if "engine_guess" in unrec.columns
         else pl.col("engine") if "engine" in unrec.columns
         else pl.lit(None, pl.String)).cast(pl.String).alias("_engine"),
        (pl.col("file") if "file" in unrec.columns else pl.lit(None, pl.String)).alias("_file"),
        (pl.col("line") if "line" in unrec.columns else pl.lit(None, pl.Int64))
        .cast(pl.Int64).alias("_line"),
        (pl.col("diagnostic") if "diagnostic" in unrec.columns else pl.lit(None, pl.String))
        .cast(pl.String).alias("_diag"),
    ).with_row_index("_i")
    return (
        df.group_by("_engine", "shape")
        .agg(
            pl.len().cast(pl.UInt32).alias("count"),
            pl.col("_file").n_unique().cast(pl.UInt32).alias("files"),
            pl.col(text_col).sort_by("_i").first().alias("example"),
            pl.col("_file").sort_by("_i").first().alias("example_file"),
            pl.col("_line").sort_by("_i").first().alias("example_line"),
            pl.col("_diag").drop_nulls().first().alias("diagnostic"),
            pl.col("_i").min().alias("_first"),
        )
        .sort(["count", "_first"], descending=[True, False])
        .rename({"_engine": "engine"})
        .select(list(schema))
        .cast(schema)
    )


__all__ = ["group_unrecognized", "shape_of"]
