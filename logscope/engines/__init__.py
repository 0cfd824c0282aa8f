"""Engine models: turn one engine's classified rows into its frames, batch by batch.

Enters: one engine's classified rows and their kinds' field frames
(:func:`logscope.classify.parse.classify`), batch by batch. Leaves: that engine's tables (one
per event kind, ``requests``) with server runs and wall clocks (:mod:`~logscope.engines.clock`),
held while they are made in a store (:mod:`~logscope.engines.store`: memory, or Parquet).

The parsing core hands each engine its rows one batch (about 16 MiB of log) at a time, in input
order, so the working memory does not grow with the log: a model is a *stream* that carries,
from one batch to the next, only the small state its window computations need (the last
continuation header of each file, the run counters, the last task launched on each slot...).

* ``Model.row_fields``: the body fields the model needs on every row, whatever the kind
  (``slot``, ``task``...); ``parse.classify`` keeps them in the narrow rows frame, every other
  field stays in its kind's own frame (``fields``).
* ``Stream.step(rows, fields) -> (rows, fields)``: one batch of the engine's rows (events,
  ignored and unrecognized lines, with ``kind``/``variant``, envelope and row fields) in input
  order, with its kinds' field frames; adds ``run``, ``t_rel``, ``slot``, ``basis``... It may
  hold rows back until a later batch decides them (then their fields too), as long as what it
  holds stays small; ``flush()`` returns what is held at the end.
* ``Stream.temp_columns``: columns the kind tables keep until they are finished (e.g. what a
  clock anchored on a whole server run needs). Once every batch is in, each kind table goes
  through ``finish_table(name, table)`` on its own (``ts`` once every run is seen;
  ``ts``/``ts_source``/``ts_inferred`` may be filled there), loses the temporary columns, and
  ``derived(tables)`` builds the tables made from the finished ones (``requests``). One table
  at a time: a streamed ingest (``read(..., out=DIR)``) holds only the table being finished,
  and gives ``derived`` lazy scans of the written ones.

May import: :mod:`logscope.input` and :mod:`logscope.classify` (the stages before it; the
models need neither today).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

Tables = dict[str, pl.DataFrame]
# what ``derived`` reads: finished tables, in memory or scanned lazily from where they were written
AnyTables = Mapping[str, pl.DataFrame | pl.LazyFrame]
Fields = dict[str, pl.DataFrame]

# the kind tables' repeated strings, categorical (4 bytes a row, not a string view a row); a
# model joining its own string-keyed state to a finished table casts the state's side
CATEGORICAL = ("file", "engine", "variant", "level", "ts_source")


def same_dtypes(small: pl.DataFrame, like: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """``small`` with ``cols`` cast to ``like``'s dtypes (a join key of a model's state, kept as
    strings, against a finished table's categorical one)."""
    return small.with_columns(pl.col(c).cast(like.schema[c]) for c in cols)


class Stream:
    """The default model: rows as they are, one run per file."""

    temp_columns: tuple[str, ...] = ()

    def __init__(self, mtimes: dict[str, float | None]) -> None:
        self.mtimes = mtimes

    def step(self, rows: pl.DataFrame, fields: Fields) -> tuple[pl.DataFrame, Fields]:
        return rows.with_columns(pl.lit(1, pl.Int32).alias("run")), fields

    def flush(self) -> tuple[pl.DataFrame | None, Fields]:
        return None, {}

    def finish_table(self, name: str, table: pl.DataFrame) -> pl.DataFrame:
        """Kind table ``name`` once every batch is in (temporary columns still there). Row by
        row: a streamed ingest gives a long table in parts, one after the other."""
        return table

    def derived(self, tables: AnyTables) -> Tables:
        """The tables built from the finished kind tables (e.g. ``requests``)."""
        return {}

    def finish(self, tables: Tables) -> Tables:
        """Every kind table finished (temporary columns dropped), then the derived tables."""
        out = drop_temp({k: self.finish_table(k, t) for k, t in tables.items()},
                        self.temp_columns)
        return {**out, **self.derived(out)}


@dataclass(frozen=True)
class Model:
    stream: type[Stream] = Stream
    row_fields: tuple[str, ...] = field(default=("slot", "task"))


GENERIC = Model()


def model_for(engine: str) -> Model:
    try:
        mod = importlib.import_module(f".{engine.replace('-', '_')}", __name__)
    except ImportError:
        return GENERIC
    return getattr(mod, "MODEL", GENERIC)


class State:
    """Per-group values carried from one batch to the next (a small frame keyed by ``keys``)."""

    def __init__(self, keys: list[str], schema: dict[str, pl.DataType]) -> None:
        self.keys = keys
        self.frame = pl.DataFrame(schema=schema)

    def attach(self, df: pl.DataFrame) -> pl.DataFrame:
        """``df`` with the carried values of its rows' groups (null where none yet)."""
        vals = [c for c in self.frame.columns if c not in self.keys]
        if not self.frame.height:
            return df.with_columns(pl.lit(None, self.frame.schema[c]).alias(c) for c in vals)
        # joined on the key columns alone: the batch's other columns are not gathered again
        got = df.select(self.keys).join(self.frame, on=self.keys, how="left", nulls_equal=True,
                                        maintain_order="left")
        return df.with_columns(got.get_column(c) for c in vals)

    def update(self, new: pl.DataFrame) -> None:
        """Replace the values of the groups in ``new`` (one row per group); keep the others."""
        new = new.select(self.frame.columns).cast(self.frame.schema)
        if self.frame.height:
            old = self.frame.join(new.select(self.keys), on=self.keys, how="anti",
                                  nulls_equal=True)
            new = pl.concat([old, new])
        self.frame = new


SOURCE = "_src"  # whose server a line is in a log a wrapper interleaves: its host, service, pod


class Sources:
    """``SOURCE`` of each row, batch by batch: the line's host, compose service or pod
    (decoded from its wrapper's prefix: :func:`logscope.input.envelope.host_expr`); a line
    without one (a continuation line, a record the wrapper split) is the last source seen in
    its file's lines before it; "" before any."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def __call__(self, df: pl.DataFrame) -> pl.Series:
        if "host" not in df.columns or df.get_column("host").null_count() == df.height:
            if not self.last:
                return pl.repeat("", df.height, dtype=pl.String, eager=True).alias(SOURCE)
            host = pl.lit(None, pl.String)
        else:
            host = pl.col("host").cast(pl.String)
        carried = pl.col("file").cast(pl.String).replace_strict(
            self.last, default="", return_dtype=pl.String)
        one = df.get_column("file").n_unique() == 1
        src = df.select(pl.coalesce(host.forward_fill() if one else
                                    host.forward_fill().over("file"), carried).alias(SOURCE))
        last = (df.select(pl.col("file").cast(pl.String), src.get_column(SOURCE))
                .group_by("file").agg(pl.col(SOURCE).last()))
        self.last.update(zip(*last.get_columns(), strict=True))
        return src.get_column(SOURCE)


class RunNumbers:
    """``run`` numbered per file across the servers a file holds: each server (a router's
    child, a compose service, a pod) counts its runs on its own, and each (server, run) gets
    the file's next number in the order it first appears, so nothing keyed by (file, run)
    mixes two servers. A file of one server keeps its numbers."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys  # what tells the servers of a file apart
        self.ids: pl.DataFrame | None = None  # (file, *keys, run) -> _run, every one seen

    def __call__(self, df: pl.DataFrame) -> pl.DataFrame:
        cols = ["file", *self.keys, "run"]
        seen = df.select(pl.col("file").cast(pl.String), *cols[1:]).unique(maintain_order=True)
        if self.ids is None:
            self.ids = seen.clear().with_columns(pl.lit(0, pl.Int32).alias("_run"))
        new = seen.join(self.ids, on=cols, how="anti", nulls_equal=True, maintain_order="left")
        if new.height:
            last = self.ids.group_by("file").agg(pl.col("_run").max().alias("_last"))
            new = new.join(last, on="file", how="left", maintain_order="left").select(
                *cols, (pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("file")
                        + pl.col("_last").fill_null(0)).alias("_run"))
            self.ids = pl.concat([self.ids, new])
        ids = seen.join(self.ids, on=cols, how="left", nulls_equal=True, maintain_order="left")
        if (ids.get_column("run") == ids.get_column("_run")).all():
            return df
        ids = ids.with_columns(pl.col("file").cast(df.schema["file"]))
        return (df.join(ids, on=cols, how="left", maintain_order="left", nulls_equal=True)
                .with_columns(pl.col("_run").alias("run")).drop("_run"))


def last_per_group(df: pl.DataFrame, keys: list[str], exprs: list[pl.Expr]) -> pl.DataFrame:
    """One row per group of ``df``: the given expressions' last values."""
    return df.group_by(keys, maintain_order=True).agg(exprs)


def drop_temp(tables: Tables, temp: tuple[str, ...]) -> Tables:
    return {k: t.drop([c for c in temp if c in t.columns]) for k, t in tables.items()}
