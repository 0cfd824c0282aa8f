"""What an ingest returns: the tables (``Logs``), the per-file counts (``FileStats``), and the
error raised when no line of the input is a server's (``NoServerLines``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from logscope.classify.parse import EVENT
from logscope.engines.store import scan


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

            >>> import logscope
            >>> logs = logscope.read(["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
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
