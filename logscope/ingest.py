"""Batch ingest: log files in, one Polars frame per event kind (plus ``requests``) out.

    >>> import logscope
    >>> logs = logscope.read(["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
    >>> logs["requests"].height
    6
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from logscope.classify.grammar import ENGINES, available_engines, load_grammar
from logscope.classify.parse import (
    DTYPES,
    EVENT,
    IGNORED,
    OTHER,
    PHASES,
    UNRECOGNIZED,
    AnchorIndex,
    anchors_of,
    classify,
    header_prefix,
)
from logscope.classify.wrapped import rejoin
from logscope.engines import CATEGORICAL, Fields, Stream, model_for
from logscope.engines.store import MemoryStore, ParquetStore, scan
from logscope.input import sources
from logscope.input.frontend import strip_frame

COMMON_COLUMNS = ["file", "line", "run", "engine", "ts", "ts_source", "ts_inferred", "t_rel",
                  "level", "slot", "task", "variant"]
# columns an engine model may add to its event rows (kept in the kind tables when present)
MODEL_COLUMNS = {"basis": pl.Categorical(), "counter": pl.String,
                 "mean_acceptance_length_raw": pl.Float64, "primary_rank": pl.Boolean,
                 "partial": pl.Boolean, "prefix": pl.String}
MAX_DIAGNOSTICS = 200  # lark explains at most this many unrecognized lines per ingest
# lark's Earley parser is superlinear on long lines (an 8 KB SGLang batch line takes seconds):
# it reads at most this much of one line, and this much in all per ingest (no hang on hostile input)
MAX_DIAGNOSTIC_CHARS = 1_000
DIAGNOSTIC_BUDGET_CHARS = 40_000


# engines whose routers log beside them: a log of router lines only is reported as the router's
ROUTERS = {"sglang": "sglang-router"}


class NoServerLines(Exception):
    """No line of the input was recognised as any engine's."""

    exit_code = 1


@dataclass
class FileStats:
    file: str
    lines: int = 0
    records: int = 0  # lines after splitting glued records (vLLM): events+ignored+unrecognized
    bad_utf8: int = 0
    capped: int = 0
    events: int = 0
    ignored: int = 0
    other: int = 0  # lines of an engine's shape that no rule knows and that carry no figure
    unrecognized: int = 0
    engines: list[str] = field(default_factory=list)
    rejoined: list[int] = field(default_factory=list)  # lines holding a record a terminal wrapped
    folded: int = 0  # lines of other processes Ray's deduplication folded away (not in the log)
    folded_lines: int = 0  # lines ending in Ray's ``[repeated Nx across cluster]``


@dataclass
class Logs:
    """The frames of an ingest: ``logs["prompt_eval"]``, ``logs["requests"]``, ``summary()``."""

    tables: Mapping[str, pl.DataFrame]  # a dict, or ParquetTables after read(out=DIR)
    files: list[FileStats]
    engines: list[str]

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name in self.tables:
            return self.tables[name]
        raise KeyError(f"no table {name!r}; have: {', '.join(sorted(self.tables))}")

    def get(self, name: str) -> pl.DataFrame | None:
        return self.tables.get(name)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name`` as a lazy frame (read from its Parquet file after ``read(out=DIR)``).

            >>> logs = read(["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
            >>> logs.scan("requests").select(pl.len()).collect().item()
            6
        """
        if name not in self.tables:
            raise KeyError(f"no table {name!r}; have: {', '.join(sorted(self.tables))}")
        return scan(self.tables, name)

    def event_counts(self) -> dict[str, int]:
        if "lines_classified" not in self.tables:
            return {}
        ev = (self.scan("lines_classified").filter(pl.col("class") == EVENT)
              .group_by("kind").len().sort("kind").collect())
        return dict(zip(ev["kind"].to_list(), ev["len"].to_list(), strict=True))

    def summary(self) -> dict[str, Any]:
        """The ``--json`` contract of DESIGN.md (plus ``ignored``, ``runs`` and ``files``)."""
        req = (self.scan("requests").select(pl.len()).collect().item()
               if "requests" in self.tables else 0)
        return {
            "lines": self.lines,
            "records": sum(f.records for f in self.files),
            "events": self.event_counts(),
            "requests": req,
            "unrecognized": sum(f.unrecognized for f in self.files),
            "ignored": sum(f.ignored for f in self.files),
            "other": sum(f.other for f in self.files),
            "engines": self.engines,
            "runs": _count_runs(self),
            "files": [f.__dict__ for f in self.files],
        }


def _count_runs(logs: Logs) -> int:
    if "lines_classified" not in logs.tables:
        return 0
    rows = logs.scan("lines_classified")
    if "run" not in rows.collect_schema().names():
        return 0
    return rows.filter(pl.col("class") == EVENT).select(
        pl.struct("file", "engine", "run").n_unique()).collect().item()


def _kind_fields(engine: str) -> dict[str, dict[str, str]]:
    g = load_grammar(engine)
    out: dict[str, dict[str, str]] = {}
    for v in g.variants:
        if v.kind in ("ignored", "claimed", "other"):
            continue
        out.setdefault(v.kind, dict(g.envelope_fields)).update(v.all_fields)
    return out


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


@dataclass
class Input:
    """One input to :func:`read_inputs`: a name, its chunks of lines, and where they start."""

    name: str
    chunks: Iterable[sources.Chunk]
    mtime: float | None
    size: int | None = None  # bytes, for progress (None: unknown, e.g. stdin)
    first_line: int = 0  # lines before the first chunk (a grown file's new part)


def read(paths: list[str] | tuple[str, ...] | str, engine: str = "auto", *,
         progress: Callable[[int, int | None], None] | None = None,
         chunk_bytes: int = sources.CHUNK_BYTES, out: str | Path | None = None,
         on_table: Callable[[str, pl.DataFrame], pl.DataFrame] | None = None) -> Logs:
    """Ingest log files (paths, globs, ``-`` for stdin, ``.gz``) into frames.

    ``engine`` is ``auto`` (decided per line: a file holding two engines yields both) or one of
    ``llama-server``, ``sglang``, ``vllm``. Files are read, parsed and modelled in blocks of
    about ``chunk_bytes`` (memory holds the frames returned plus a few blocks' work; see
    bench/RESULTS.md); ``progress(bytes_done, bytes_total)`` is called after each block
    (``bytes_total`` is None when a size is unknown). Raises
    ``sources.InputError`` for unreadable input and ``NoServerLines`` when nothing in the input
    is a server line.

    With ``out``, the tables are streamed to ``out/<table>.parquet``: each block's part of every
    table is spilled to disk as it is made and each table is finished on its own, so memory does
    not grow with the log; the ``Logs`` returned reads a table from its file when it is asked
    for (``logs.scan(name)`` lazily). ``on_table(name, frame)`` may rewrite each finished table
    before it is stored.

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> logs = read("fixtures/llama-server/corpus/generated-ngram-c4k-np1.log", out=d)
        >>> logs["requests"].height, (Path(d) / "requests.parquet").exists()
        (6, True)
    """
    if isinstance(paths, str):
        paths = [paths]
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    expanded = sources.expand(list(paths))
    for p in expanded:
        sources.check(p)  # a wrong path fails before anything is read
    inputs = []
    for p in expanded:
        chunks, mtime, size = sources.stream(p, chunk_bytes)
        inputs.append(Input(p, chunks, mtime, size))
    store = None if out is None else ParquetStore(Path(out))
    return read_inputs(inputs, engine, progress=progress, store=store, on_table=on_table)


def read_inputs(inputs: Iterable[Input], engine: str = "auto", *,
                progress: Callable[[int, int | None], None] | None = None,
                on_lines: Callable[[pl.DataFrame], None] | None = None,
                threads: int | None = None, store: MemoryStore | ParquetStore | None = None,
                on_table: Callable[[str, pl.DataFrame], pl.DataFrame] | None = None) -> Logs:
    """Parse ``inputs`` chunk by chunk with :func:`parse_batch` and assemble them as they come.

    Chunks are parsed by ``threads`` threads (default: one per CPU, at most 4; Polars releases
    the GIL), at most ``threads + 1`` in flight, and each parsed batch goes through the engine
    models at once (:class:`Assembler`), so the working memory stays bounded; with ``on_lines``
    they are parsed one at a time, in order."""
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    engines = available_engines() if engine == "auto" else [engine]
    inputs = list(inputs)
    if threads is None:
        threads = min(os.cpu_count() or 1, 4)
    if on_lines is not None:
        threads = 1
    files: list[FileStats] = []
    mtimes: dict[str, float | None] = {}
    asm = Assembler(engines, mtimes, store, on_table)
    sizes = [i.size for i in inputs]
    total = None if None in sizes else sum(s or 0 for s in sizes)
    done = 0
    pending: deque[tuple[FileStats, Future[tuple[Batch, int, int]]]] = deque()

    def parse(ch: sources.Chunk, name: str, line: int) -> tuple[Batch, int, int]:
        raw, bad, capped = ch.lines()  # decoded and split in the worker, not the main thread
        return parse_batch(raw, name, engines, first_line=line, on_lines=on_lines), bad, capped

    def add(fs: FileStats, fut: Future[tuple[Batch, int, int]]) -> None:
        batch, bad, capped = fut.result()
        fs.bad_utf8 += bad
        fs.capped += capped
        asm.add(batch)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for inp in inputs:
            name = inp.name
            if name in mtimes:  # the same file twice: keep both, tell them apart
                name = f"{name}#{len([k for k in mtimes if k.split('#')[0] == inp.name])}"
            mtimes[name] = inp.mtime
            fs = FileStats(name)
            files.append(fs)
            line = inp.first_line
            for ch in inp.chunks:
                if ch.n_lines:
                    pending.append((fs, pool.submit(parse, ch, name, line)))
                    while len(pending) > threads:
                        add(*pending.popleft())
                line += ch.n_lines
                fs.lines += ch.n_lines
                done += ch.n_bytes
                if progress is not None:
                    progress(done, total)
        while pending:
            add(*pending.popleft())
    return asm.result(files)


def assemble(batches: Iterable[Batch], files: list[FileStats],
             mtimes: dict[str, float | None], engines: list[str]) -> Logs:
    """The frames of an ingest from its parsed batches, in input order (e.g. from Dask)."""
    asm = Assembler(engines, mtimes)
    for b in batches:
        asm.add(b)
    return asm.result(files)


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
        self.counts.append(_class_counts([b]))
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
        self.store.add((LINES, eng), _classified(rows))
        temp = self.streams[eng].temp_columns
        kinds = _kind_fields(eng)
        for (kind,), sub in rows.partition_by("kind", as_dict=True).items():
            if kind in kinds:
                self.store.add((eng, kind), _kind_table(sub, kinds[kind], fields.get(kind), temp))

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
        counts = (pl.concat(self.counts) if self.counts else _class_counts([]))
        _fill_stats(files, counts)
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
        for kind, fields in _kind_fields(eng).items():
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
                t = _kind_table(pl.DataFrame(schema=self.schemas[eng]), fields, None, temp)
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
                 else _classified(pl.DataFrame(schema=CLASSIFIED_SCHEMA)).lazy())
        if no_events:  # one run per file, as no model ran for it
            lines = lines.with_columns(pl.when(pl.col("engine").is_in(no_events))
                                       .then(pl.lit(1, pl.Int32)).otherwise(pl.col("run"))
                                       .alias("run"))
        if resort:  # within an engine, in (file, line) order
            lines = lines.sort(pl.col("engine").cast(pl.String).replace_strict(
                {e: i for i, e in enumerate(self.engines)}, return_dtype=pl.Int32),
                pl.col("file").cast(pl.String), "line", "_row")
        self.store.put("lines_classified", lines.drop("_row"))
        self.store.put("unrecognized", _unrecognized(self.unrecognized))

    def _lines_of(self, eng: str) -> pl.LazyFrame:
        """Engine ``eng``'s ``lines_classified`` parts, as one lazy frame."""
        if isinstance(self.store, ParquetStore):
            return self.store.scan((LINES, eng))
        return self.store.take((LINES, eng)).lazy()


LINES = "_lines"  # the store's key of an engine's lines_classified parts


CLASSIFIED_SCHEMA = {"_row": pl.UInt32, "file": pl.String, "line": pl.Int64, "engine": pl.String,
                     "run": pl.Int32, "kind": pl.String, "variant": pl.String}


def _class_of(kind: pl.Expr) -> pl.Expr:
    return (pl.when(kind == IGNORED).then(pl.lit(IGNORED))
            .when(kind == UNRECOGNIZED).then(pl.lit(UNRECOGNIZED))
            .when(kind == OTHER).then(pl.lit(OTHER))
            .otherwise(pl.lit(EVENT)))


CLASSES = pl.Enum([EVENT, IGNORED, OTHER, UNRECOGNIZED])


def _classified(rows: pl.DataFrame) -> pl.DataFrame:
    """The ``lines_classified`` columns of an engine's rows (plus ``_row``, for ordering): one
    row per line, so its repeated strings are categorical (4 bytes a row, not a string view)."""
    cat = pl.Categorical()
    return rows.select("_row", pl.col("file").cast(cat), "line", pl.col("engine").cast(cat),
                       pl.col("run").cast(pl.Int32),
                       _class_of(pl.col("kind")).cast(CLASSES).alias("class"),
                       pl.col("kind").cast(cat), pl.col("variant").cast(cat))


def _class_counts(batches: list[Batch]) -> pl.DataFrame:
    """Lines per (file, engine, class), and per file the lines no engine took (``other``):
    counted batch by batch, where the frames are small."""
    parts = [rows.group_by("file", _class_of(pl.col("kind")).alias("class")).len()
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


def _kind_table(rows: pl.DataFrame, fields: dict[str, str], own: pl.DataFrame | None,
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


def _unrecognized(parts: list[pl.DataFrame]) -> pl.DataFrame:
    out = (pl.concat(parts).sort("_row") if parts else
           pl.DataFrame(schema={"_row": pl.UInt32, "text": pl.String, "file": pl.String,
                                "line": pl.Int64, "engine": pl.String}))
    diags: list[str | None] = []
    budget = DIAGNOSTIC_BUDGET_CHARS
    for i, (eng, text) in enumerate(zip(out["engine"], out["text"], strict=True)):
        if i >= MAX_DIAGNOSTICS or budget <= 0:
            diags.append(None)
            continue
        g = load_grammar(eng)
        head = text[:MAX_DIAGNOSTIC_CHARS]
        head = head[len(header_prefix(g, head)):]  # lark reads from the engine's own header
        budget -= len(head)
        diag = g.explain(head)
        if len(text) > len(head):
            diag += f" (lark read the first {len(head)} of {len(text)} characters)"
        diags.append(diag)
    return out.select("file", "line", "text", pl.col("engine").alias("engine_guess")).with_columns(
        pl.Series("diagnostic", diags, dtype=pl.String))


def _fill_stats(files: list[FileStats], counts: pl.DataFrame) -> None:
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
