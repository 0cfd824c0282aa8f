"""Parsed batches in, tables out: each batch's rows go through their engine's model at once;
each table is built by its own module (``kind_tables``, ``lines_table``, ``unrecognized``)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from logscope.classify.parse import IGNORED, OTHER, UNRECOGNIZED
from logscope.engines import Fields, Stream, model_for
from logscope.engines.store import MemoryStore, ParquetStore
from logscope.ingest.batch import Batch
from logscope.ingest.kind_tables import MODEL_COLUMNS, kind_fields, kind_table
from logscope.ingest.lines_table import (
    CLASSIFIED_SCHEMA,
    LINES,
    class_counts,
    classified,
    fill_stats,
)
from logscope.ingest.logs import FileStats, Logs, NoServerLines
from logscope.ingest.unrecognized import unrecognized_table

# engines whose routers log beside them: a log of router lines only is reported as the router's
ROUTERS = {"sglang": "sglang-router"}


class Assembler:
    """Batches in, frames out: each batch's rows go through their engine's model stream at once
    and land in per-kind parts kept by ``store`` (in memory, or spilled to Parquet as they come:
    :mod:`logscope.engines.store`); only the parts (the output) and the streams' small state grow.
    ``add`` renumbers ``_row`` so that batches parsed on their own follow each other.
    ``on_table(name, table)`` sees every finished table before it is stored (a streamed kind
    table part by part)."""

    def __init__(self, engines: list[str], mtimes: dict[str, float | None],
                 store: MemoryStore | ParquetStore | None = None,
                 on_table: Callable[[str, pl.DataFrame], pl.DataFrame] | None = None) -> None:
        self.engines = engines
        self.mtimes = mtimes
        self.store = MemoryStore() if store is None else store
        self.on_table = on_table
        self.streams: dict[str, Stream] = {}
        self.schemas: dict[str, pl.Schema] = {}
        self.router_only: dict[str, bool] = {}  # every line of the engine a router's so far
        self.unrecognized: list[pl.DataFrame] = []
        self.counts: list[pl.DataFrame] = []
        self.with_events: set[str] = set()
        self.with_ignored: set[str] = set()
        self.next_row = 0
        self.notes: dict[str, FileStats] = {}  # per file: the rejoined and folded lines

    def add(self, batch: Batch) -> None:
        b = batch.shift(self.next_row - batch.first_row, 0)
        self.next_row += b.n_records
        if b.rejoined or b.folded_lines:
            note = self.notes.setdefault(b.file, FileStats(b.file))
            note.rejoined += b.rejoined
            note.folded += b.folded
            note.folded_lines += b.folded_lines
        self.counts.append(class_counts([b]))
        for eng in self.engines:
            rows = b.rows.get(eng)
            if rows is None:
                continue
            rows = rows.with_columns(pl.lit(eng).alias("engine"))
            un = b.unrecognized.get(eng)
            if un is not None and un.height:
                self.unrecognized.append(
                    un.join(rows.select("_row", "file", "line"), on="_row")
                    .with_columns(pl.lit(eng).alias("engine")))
            kinds = rows.get_column("kind")
            if (~kinds.is_in([IGNORED, UNRECOGNIZED, OTHER])).any():
                self.with_events.add(eng)
            elif kinds.is_in([IGNORED, OTHER]).any():
                self.with_ignored.add(eng)
            if eng not in self.streams:
                self.streams[eng] = model_for(eng).stream(self.mtimes)
            self._emit(eng, *self.streams[eng].step(rows, b.fields.get(eng, {})))

    def _emit(self, eng: str, rows: pl.DataFrame | None, fields: Fields) -> None:
        if rows is None or not rows.height:
            return
        self.schemas.setdefault(eng, rows.schema)
        if eng in ROUTERS:
            self.router_only[eng] = self.router_only.get(eng, True) and bool(
                rows.get_column("variant").cast(pl.String).str.starts_with("ignored_router").all())
        self.store.add((LINES, eng), classified(rows))
        temp = self.streams[eng].temp_columns
        kinds = kind_fields(eng)
        for (kind,), sub in rows.partition_by("kind", as_dict=True).items():
            if kind in kinds:
                self.store.add((eng, kind), kind_table(sub, kinds[kind], fields.get(kind), temp))

    def result(self, files: list[FileStats]) -> Logs:
        try:
            return self._result(files)
        finally:
            self.store.close()

    def _result(self, files: list[FileStats]) -> Logs:
        for eng, stream in self.streams.items():
            self._emit(eng, *stream.flush())
        # rows come in input order; the frames are in (file, line) order: the same unless the
        # files were not given in name order (a glob's are)
        names = [f.file for f in files]
        resort = names != sorted(names)
        found: list[str] = []
        for eng in self.engines:
            if eng not in self.streams:
                continue
            if eng not in self.with_events:
                # only known-ignored or unknown lines of this engine: its log, with no events
                if eng in self.with_ignored:
                    found.append(ROUTERS.get(eng, eng) if self.router_only.get(eng) else eng)
                continue
            found.append(eng)
        if self.with_events:
            # a line shared by engines (uvicorn's access log under SGLang and vLLM) goes to the
            # first engine tried: an engine with only such lines is not listed beside one
            # with events
            found = [e for e in found if e in self.with_events]
        counts = (pl.concat(self.counts) if self.counts else class_counts([]))
        fill_stats(files, counts)
        for fs in files:
            if (note := self.notes.get(fs.file)) is not None:
                fs.rejoined, fs.folded, fs.folded_lines = (
                    sorted(note.rejoined), note.folded, note.folded_lines)
        if not found and not any(f.unrecognized for f in files):
            self._lines_and_unrecognized(resort)
            raise NoServerLines(Logs(self.store.result(), files, found))
        for eng in self.engines:
            if eng in self.streams and eng in self.with_events:
                self._finish(eng, resort)
        self._lines_and_unrecognized(resort)
        return Logs(self.store.result(), files, found)

    def _finish(self, eng: str, resort: bool) -> None:
        """Engine ``eng``'s tables, one at a time: each kind table stacked, finished by the
        model and put in the store; then the tables the model derives from them."""
        stream = self.streams[eng]
        temp = stream.temp_columns
        finished: dict[str, pl.DataFrame | pl.LazyFrame] = {}
        for kind, fields in kind_fields(eng).items():
            if not resort and isinstance(self.store, ParquetStore) and self.store.has((eng, kind)):
                # on disk, part by part: the table's model columns that are null throughout
                # are dropped from every part
                empty = self.store.null_columns((eng, kind), list(MODEL_COLUMNS))

                def finish(t: pl.DataFrame, kind: str = kind, empty: list[str] = empty
                           ) -> pl.DataFrame:
                    t = stream.finish_table(kind, t.drop("_row", *empty))
                    return self._hook(kind, t.drop([c for c in temp if c in t.columns]))

                finished[kind] = self.store.put_parts((eng, kind), kind, finish)
                continue
            t = self.store.take((eng, kind))
            if t is None:
                t = kind_table(pl.DataFrame(schema=self.schemas[eng]), fields, None, temp)
            if resort:
                t = t.sort("file", "line", "_row")
            t = t.drop("_row").drop([c for c in MODEL_COLUMNS if c in t.columns
                                     and t.get_column(c).null_count() == t.height])
            t = stream.finish_table(kind, t)
            finished[kind] = self._put(kind, t.drop([c for c in temp if c in t.columns]))
            del t
        for name, t in stream.derived(finished).items():
            self._put(name, t)

    def _put(self, name: str, t: pl.DataFrame) -> pl.DataFrame | pl.LazyFrame:
        return self.store.put(name, self._hook(name, t))

    def _hook(self, name: str, t: pl.DataFrame) -> pl.DataFrame:
        return t if self.on_table is None else self.on_table(name, t)

    def _lines_and_unrecognized(self, resort: bool) -> None:
        """``lines_classified`` (one row per line taken, engine by engine in the order they are
        tried) and ``unrecognized``, put in the store."""
        no_events = [e for e in self.streams if e not in self.with_events]
        parts = [self._lines_of(e) for e in self.engines if self.store.has((LINES, e))]
        lines = (pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0] if parts
                 else classified(pl.DataFrame(schema=CLASSIFIED_SCHEMA)).lazy())
        if no_events:  # one run per file, as no model ran for it
            lines = lines.with_columns(pl.when(pl.col("engine").is_in(no_events))
                                       .then(pl.lit(1, pl.Int32)).otherwise(pl.col("run"))
                                       .alias("run"))
        if resort:  # within an engine, in (file, line) order
            lines = lines.sort(pl.col("engine").cast(pl.String).replace_strict(
                {e: i for i, e in enumerate(self.engines)}, return_dtype=pl.Int32),
                pl.col("file").cast(pl.String), "line", "_row")
        self.store.put("lines_classified", lines.drop("_row"))
        self.store.put("unrecognized", unrecognized_table(self.unrecognized))

    def _lines_of(self, eng: str) -> pl.LazyFrame:
        """Engine ``eng``'s ``lines_classified`` parts, as one lazy frame."""
        if isinstance(self.store, ParquetStore):
            return self.store.scan((LINES, eng))
        return self.store.take((LINES, eng)).lazy()
