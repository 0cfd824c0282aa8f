"""The parsing core: a batch of raw lines of one file to its classified rows and fields, per
engine (``parse_batch``, a pure function; the front end, the anchor index and every classify
pass)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from logscope.classify.grammar import available_engines, load_grammar
from logscope.classify.parse import PHASES, AnchorIndex, anchors_of, classify
from logscope.classify.wrapped import rejoin
from logscope.engines import model_for
from logscope.input.frontend import strip_frame


@dataclass
class Batch:
    """What the parsing core makes of one batch of lines: per engine, the narrow rows, each
    event kind's fields and the unrecognized lines' text; and the lines no engine took, counted
    per file. ``_row`` numbers records within the input (``shift`` moves a batch parsed on its
    own, e.g. on a Dask worker, to its place)."""

    rows: dict[str, pl.DataFrame]
    fields: dict[str, dict[str, pl.DataFrame]]
    unrecognized: dict[str, pl.DataFrame]
    other: pl.DataFrame  # file, n: lines no engine took
    n_records: int  # rows of the batch after glued records were split
    first_row: int = 0  # the ``_row`` of its first record
    file: str = ""
    rejoined: list[int] = field(default_factory=list)  # lines that hold a rejoined record
    folded: int = 0  # lines Ray's deduplication folded into the batch's lines (not in the log)
    folded_lines: int = 0  # the batch's lines that stand for such folded lines

    def shift(self, rows: int, lines: int) -> Batch:
        """The same batch with ``_row`` moved by ``rows`` and ``line`` by ``lines``."""
        if not rows and not lines:
            return self

        def mv(df: pl.DataFrame) -> pl.DataFrame:
            out = df.with_columns(pl.col("_row") + rows) if "_row" in df.columns else df
            return out.with_columns(pl.col("line") + lines) if "line" in out.columns else out

        return replace(self, rows={e: mv(df) for e, df in self.rows.items()},
                       fields={e: {k: mv(df) for k, df in ks.items()}
                               for e, ks in self.fields.items()},
                       unrecognized={e: mv(df) for e, df in self.unrecognized.items()},
                       first_row=self.first_row + rows,
                       rejoined=[n + lines for n in self.rejoined])


def lines_frame(raw: pl.Series, file: str, first_line: int = 0,
                first_row: int = 0) -> pl.DataFrame:
    """The frame the parsing core reads: ``_row``, ``raw``, ``file``, ``line`` (1-based, after
    ``first_line`` earlier lines)."""
    return pl.DataFrame({"raw": raw.cast(pl.String).rename("raw")}).with_row_index(
        "_row", offset=first_row).with_columns(
        pl.lit(file).alias("file"),
        (pl.int_range(pl.len(), dtype=pl.Int64) + first_line + 1).alias("line"),
    )


def parse_batch(raw: pl.Series, file: str, engines: list[str] | None = None, *,
                first_line: int = 0, first_row: int = 0,
                on_lines: Callable[[pl.DataFrame], None] | None = None,
                join_wrapped: bool = True) -> Batch:
    """The parsing core, a pure function: a batch of raw log lines (a Polars Series or anything
    ``pl.Series`` takes, e.g. an Arrow string array) of ``file`` to its event frames.

    ``engines`` defaults to every engine (each line goes to the first whose grammar takes it).
    Batches of one file are assembled in order by :func:`assemble`; a continuation line or a
    request spanning two batches is joined up there, not here.

        >>> line = "slot release: id  0 | task 7 | stop processing: n_tokens = 9, truncated = 0"
        >>> b = parse_batch(pl.Series([line]), "x.log")
        >>> b.rows["llama-server"].select("kind", "slot", "task").row(0)
        ('release', 0, 7)
    """
    engines = available_engines() if engines is None else engines
    if not isinstance(raw, pl.Series):
        raw = pl.Series("raw", raw, dtype=pl.String)
    lines = strip_frame(lines_frame(raw, file, first_line, first_row), first_row)
    folded = folded_lines = 0
    if "repeated" in lines.columns:
        rep = lines.get_column("repeated")
        folded, folded_lines = int(rep.sum() or 0), rep.len() - rep.null_count()
        lines = lines.drop("repeated")
    if on_lines is not None and join_wrapped:
        on_lines(lines)
    out = Batch({}, {}, {}, pl.DataFrame(schema={"file": pl.String, "n": pl.UInt32}),
                lines.height, first_row, file, [], folded, folded_lines)
    rest = lines
    index = AnchorIndex(lines.get_column("text"), anchors_of(tuple(engines)), first_row)
    # every engine's event formats, then every engine's ignored ones, then the catch-alls
    for phase in PHASES:
        for eng in engines:
            if rest.height == 0:
                break
            res = classify(rest, load_grammar(eng), model_for(eng).row_fields, phase, index)
            rest = res.rest
            if res.rows.height:
                _merge(out, eng, res)
    if join_wrapped and any(u.height for u in out.unrecognized.values()):
        cut = _wrapped_at(out, lines, first_line)
        if cut:
            joined_raw, joined = rejoin(raw, cut, engines)
            if joined:
                again = parse_batch(joined_raw, file, engines, first_line=first_line,
                                    first_row=first_row, on_lines=on_lines, join_wrapped=False)
                again.rejoined = [first_line + i + 1 for i in joined]
                return again
    if rest.height:
        out.other = rest.group_by("file").agg(pl.len().alias("n"))
    # each kind's fields in line order, as the model's rows: joined by position (_kind_table)
    out.fields = {e: {k: f if f.get_column("_row").is_sorted() else f.sort("_row")
                      for k, f in ks.items()} for e, ks in out.fields.items()}
    return out


def _wrapped_at(out: Batch, lines: pl.DataFrame, first_line: int) -> list[int]:
    """Indexes (in the batch's raw lines) of the unrecognized lines, in order: where a record
    a terminal wrapped may continue (:mod:`logscope.classify.wrapped`)."""
    rows = pl.concat([u.select("_row") for u in out.unrecognized.values() if u.height])
    at = lines.join(rows, on="_row", how="semi").get_column("line") - first_line - 1
    return sorted(set(at.to_list()))


def _merge(out: Batch, eng: str, res: Any) -> None:
    """Add one classify pass of ``eng`` to the batch (rows kept in input order)."""
    if eng not in out.rows:
        out.rows[eng], out.fields[eng], out.unrecognized[eng] = (
            res.rows, dict(res.fields), res.unrecognized)
        return
    out.rows[eng] = pl.concat([out.rows[eng], res.rows], how="diagonal_relaxed").sort("_row")
    for k, f in res.fields.items():
        prev = out.fields[eng].get(k)
        out.fields[eng][k] = f if prev is None else pl.concat([prev, f], how="diagonal_relaxed")
    if res.unrecognized.height:
        out.unrecognized[eng] = pl.concat([out.unrecognized[eng], res.unrecognized])
