"""Where an ingest keeps its tables while it runs: in memory (``logscope.read``), or on disk as
Parquet (``logscope.read(..., out=DIR)``, ``logscope ingest --out DIR``).

The assembler hands a store each batch's part of every table as it is made (``add``), takes a
table's parts back once every batch is in (``take``), and puts the finished table (``put``).
In memory the parts are frames in a list. On disk each part is written to a spill directory
inside ``DIR`` as soon as it is made and the finished table is written to ``DIR/<name>.parquet``
and dropped, so the working memory holds one table at a time however long the log is; the
tables the engine models derive from the finished ones (``requests``) read them back lazily,
column by column.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import polars as pl


def stack(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Parts of one table, one after the other, without copying them into one chunk (the
    parts of a kind share a schema; should one differ, it is widened)."""
    if len(parts) == 1:
        return parts[0]
    try:
        return pl.concat(parts, how="vertical", rechunk=False)
    except (pl.exceptions.SchemaError, pl.exceptions.ShapeError):
        return pl.concat(parts, how="diagonal_relaxed", rechunk=False)


def merge(prev: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Two engines' tables of one name, as one (in (file, line) order when they have both)."""
    if not prev.height:
        return table
    out = pl.concat([prev, table], how="diagonal_relaxed")
    if {"file", "line"} <= set(out.columns):
        out = out.sort("file", "line", maintain_order=True)
    return out


class MemoryStore:
    """Parts and tables as frames in memory."""

    def __init__(self) -> None:
        self.parts: dict[tuple[str, ...], list[pl.DataFrame]] = {}
        self.tables: dict[str, pl.DataFrame] = {}

    def add(self, key: tuple[str, ...], part: pl.DataFrame) -> None:
        self.parts.setdefault(key, []).append(part)

    def has(self, key: tuple[str, ...]) -> bool:
        return key in self.parts

    def take(self, key: tuple[str, ...]) -> pl.DataFrame | None:
        """The parts of ``key`` stacked (and forgotten), or None when there were none."""
        parts = self.parts.pop(key, None)
        return stack(parts) if parts else None

    def put(self, name: str, table: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
        """Keep finished table ``name``; returns what later steps read it as."""
        if isinstance(table, pl.LazyFrame):
            table = table.collect()
        prev = self.tables.get(name)
        self.tables[name] = table if prev is None else merge(prev, table)
        return self.tables[name]

    def result(self) -> dict[str, pl.DataFrame]:
        return self.tables

    def close(self) -> None:
        self.parts.clear()


# a streamed ingest costs more time than one in memory (spill writes, tables read back): the CLI's
# --out and --dataset stream from this much log on (a .gz counted GZIP_RATIO times its size)
STREAM_FROM_BYTES = 256 * 2**20
GZIP_RATIO = 10


def log_bytes(path: str, size: int) -> int:
    """About how much log a file of ``size`` bytes holds (a .gz counted ``GZIP_RATIO``x)."""
    return size * GZIP_RATIO if path.endswith(".gz") else size


class OutputError(Exception):
    """The output directory cannot be written (the user's to fix)."""


SPILL_DIR = ".logscope-spill"  # inside the output directory, removed when the ingest ends


class ParquetStore:
    """Parts spilled to ``out/.logscope-spill-<pid>/`` as they are made; finished tables
    written to ``out/<name>.parquet``."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        with self._writing():
            self.out.mkdir(parents=True, exist_ok=True)
        self.spill = self.out / f"{SPILL_DIR}-{os.getpid()}"
        self.parts: dict[tuple[str, ...], list[Path]] = {}
        self.names: list[str] = []

    def add(self, key: tuple[str, ...], part: pl.DataFrame) -> None:
        files = self.parts.setdefault(key, [])
        where = self.spill.joinpath(*key)
        path = where / f"{len(files):06d}.parquet"
        with self._writing():
            where.mkdir(parents=True, exist_ok=True)
            part.write_parquet(path, compression="lz4", statistics=False)
        files.append(path)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            yield
        except OSError as e:
            raise OutputError(f"cannot write the tables to {self.out}/: {e.strerror or e}") \
                from e

    def has(self, key: tuple[str, ...]) -> bool:
        return key in self.parts

    def take(self, key: tuple[str, ...]) -> pl.DataFrame | None:
        files = self.parts.pop(key, None)
        if not files:
            return None
        parts = [pl.read_parquet(f) for f in files]
        for f in files:
            f.unlink()
        return stack(parts)

    def null_columns(self, key: tuple[str, ...], cols: list[str]) -> list[str]:
        """Which of ``cols`` the parts of ``key`` have and hold no value in (read alone)."""
        lf = pl.scan_parquet(self.parts[key])
        have = [c for c in cols if c in lf.collect_schema().names()]
        if not have:
            return []
        row = lf.select(pl.col(c).is_not_null().any() for c in have).collect().row(0)
        return [c for c, any_value in zip(have, row, strict=True) if not any_value]

    def put_parts(self, key: tuple[str, ...], name: str,
                  finish: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.LazyFrame:
        """Table ``name`` from the parts of ``key``, each read, finished and spilled again on its
        own, then written as one file without being held whole (``finish`` must work row by
        row). A name an earlier engine wrote is merged in memory."""
        if name in self.names:
            return self.put(name, finish(self.take(key)))
        files = self.parts.pop(key)
        done = []
        where = self.spill.joinpath(*key, "finished")
        with self._writing():
            where.mkdir(parents=True, exist_ok=True)
            for i, f in enumerate(files):
                part = finish(pl.read_parquet(f))
                f.unlink()
                done.append(where / f"{i:06d}.parquet")
                part.write_parquet(done[-1], compression="lz4", statistics=False)
                del part
        table = pl.concat([pl.scan_parquet(f) for f in done], how="diagonal_relaxed")
        out = self.put(name, table)
        for f in done:
            f.unlink()
        return out

    def scan(self, key: tuple[str, ...]) -> pl.LazyFrame | None:
        """The parts of ``key`` as one lazy frame (read when it is written out)."""
        files = self.parts.get(key)
        return pl.scan_parquet(files) if files else None

    def path(self, name: str) -> Path:
        return self.out / f"{name}.parquet"

    def put(self, name: str, table: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
        path = self.path(name)
        if name in self.names:
            prev = pl.read_parquet(path)
            table = merge(prev, table.collect() if isinstance(table, pl.LazyFrame) else table)
        else:
            self.names.append(name)
        with self._writing():
            if isinstance(table, pl.LazyFrame):
                table.sink_parquet(path)
            else:
                table.write_parquet(path)
        return pl.scan_parquet(path)

    def result(self) -> ParquetTables:
        return ParquetTables({n: self.path(n) for n in self.names})

    def close(self) -> None:
        shutil.rmtree(self.spill, ignore_errors=True)


class ParquetTables(Mapping[str, pl.DataFrame]):
    """An ingest's tables as written to Parquet: each is read when it is asked for (the last one
    read is kept), so a summary over a large ingest holds one table at a time.
    ``scan(name)`` reads it lazily. A table set here (``tables[name] = df``) stays in memory."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths
        self.set: dict[str, pl.DataFrame] = {}
        self._last: tuple[str, pl.DataFrame] | None = None

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name in self.set:
            return self.set[name]
        if self._last is not None and self._last[0] == name:
            return self._last[1]
        self._last = None
        df = pl.read_parquet(self.paths[name])
        self._last = (name, df)
        return df

    def __setitem__(self, name: str, df: pl.DataFrame) -> None:
        self.set[name] = df

    def __iter__(self) -> Iterator[str]:
        return iter([*self.paths, *(n for n in self.set if n not in self.paths)])

    def __len__(self) -> int:
        return len(set(self.paths) | set(self.set))

    def scan(self, name: str) -> pl.LazyFrame:
        if name in self.set:
            return self.set[name].lazy()
        return pl.scan_parquet(self.paths[name])


def scan(tables: Mapping[str, pl.DataFrame], name: str) -> pl.LazyFrame:
    """Table ``name`` as a lazy frame, read from disk if that is where it is."""
    if isinstance(tables, ParquetTables):
        return tables.scan(name)
    return tables[name].lazy()
