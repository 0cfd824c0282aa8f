"""Batch ingest: log files in, one Polars frame per event kind (plus ``requests``) out.

    >>> import logscope
    >>> logs = logscope.read(["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
    >>> logs["requests"].height
    6
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from . import sources
from .engines import model_for
from .frontend import strip_frame
from .grammar import ENGINES, available_engines, load_grammar
from .parse import DTYPES, EVENT, IGNORED, UNRECOGNIZED, classify

COMMON_COLUMNS = ["file", "line", "run", "engine", "ts", "ts_source", "ts_inferred", "t_rel",
                  "level", "slot", "task", "variant"]
# columns an engine model may add to its event rows (kept in the kind tables when present)
MODEL_COLUMNS = {"basis": pl.String, "counter": pl.String, "mean_acceptance_length_raw": pl.Float64,
                 "primary_rank": pl.Boolean}
MAX_DIAGNOSTICS = 200  # lark explains at most this many unrecognized lines per ingest
# lark's Earley parser is superlinear on long lines (an 8 KB SGLang batch line takes seconds):
# it reads at most this much of one line, and this much in all per ingest (no hang on hostile input)
MAX_DIAGNOSTIC_CHARS = 1_000
DIAGNOSTIC_BUDGET_CHARS = 40_000


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
    unrecognized: int = 0
    engines: list[str] = field(default_factory=list)


@dataclass
class Logs:
    """The frames of an ingest: ``logs["prompt_eval"]``, ``logs["requests"]``, ``summary()``."""

    tables: dict[str, pl.DataFrame]
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

    def event_counts(self) -> dict[str, int]:
        rows = self.tables.get("lines_classified")
        if rows is None or rows.height == 0:
            return {}
        ev = rows.filter(pl.col("class") == EVENT).group_by("kind").len().sort("kind")
        return dict(zip(ev["kind"].to_list(), ev["len"].to_list(), strict=True))

    def summary(self) -> dict[str, Any]:
        """The ``--json`` contract of DESIGN.md (plus ``ignored``, ``runs`` and ``files``)."""
        req = self.tables.get("requests")
        return {
            "lines": self.lines,
            "records": sum(f.records for f in self.files),
            "events": self.event_counts(),
            "requests": 0 if req is None else req.height,
            "unrecognized": sum(f.unrecognized for f in self.files),
            "ignored": sum(f.ignored for f in self.files),
            "engines": self.engines,
            "runs": _count_runs(self.tables),
            "files": [f.__dict__ for f in self.files],
        }


def _count_runs(tables: dict[str, pl.DataFrame]) -> int:
    rows = tables.get("lines_classified")
    if rows is None or rows.height == 0 or "run" not in rows.columns:
        return 0
    return rows.filter(pl.col("class") == EVENT).select(
        pl.struct("file", "engine", "run").n_unique()).item()


def _kind_fields(engine: str) -> dict[str, dict[str, str]]:
    g = load_grammar(engine)
    out: dict[str, dict[str, str]] = {}
    for v in g.variants:
        if v.kind in ("ignored", "claimed"):
            continue
        out.setdefault(v.kind, dict(g.envelope_fields)).update(v.all_fields)
    return out


def _lines_frame(src: sources.Source, offset: int) -> pl.DataFrame:
    s = pl.Series("raw", [src.text], dtype=pl.String)
    raw = s.str.split("\n").explode() if src.n_lines else pl.Series("raw", [], dtype=pl.String)
    return pl.DataFrame({"raw": raw}).with_row_index("_row", offset=offset).with_columns(
        pl.lit(src.name).alias("file"),
        (pl.col("_row") - offset + 1).cast(pl.Int64).alias("line"),
    )


def read(paths: list[str] | tuple[str, ...] | str, engine: str = "auto") -> Logs:
    """Ingest log files (paths, globs, ``-`` for stdin, ``.gz``) into frames.

    ``engine`` is ``auto`` (decided per line: a file holding two engines yields both) or one of
    ``llama-server``, ``sglang``, ``vllm``. Raises ``sources.InputError`` for unreadable input
    and ``NoServerLines`` when nothing in the input is a server line.
    """
    if isinstance(paths, str):
        paths = [paths]
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    engines = available_engines() if engine == "auto" else [engine]
    files: list[FileStats] = []
    frames: list[pl.DataFrame] = []
    mtimes: dict[str, float | None] = {}
    offset = 0
    for p in sources.expand(list(paths)):
        src = sources.load(p)
        name = src.name
        if name in mtimes:  # the same file twice: keep both, tell them apart
            name = f"{name}#{len([k for k in mtimes if k.split('#')[0] == src.name])}"
            src.name = name
        mtimes[name] = src.mtime
        files.append(FileStats(name, lines=src.n_lines, bad_utf8=src.bad_utf8, capped=src.capped))
        frames.append(_lines_frame(src, offset))
        offset += src.n_lines
    lines = pl.concat(frames) if frames else pl.DataFrame(
        schema={"_row": pl.UInt32, "raw": pl.String, "file": pl.String, "line": pl.Int64})
    lines = strip_frame(lines)
    return _classify_all(lines, engines, files, mtimes)


def _classify_all(lines: pl.DataFrame, engines: list[str], files: list[FileStats],
                  mtimes: dict[str, float | None]) -> Logs:
    rest = lines
    tables: dict[str, pl.DataFrame] = {}
    per_engine_rows: list[pl.DataFrame] = []
    found: list[str] = []
    for eng in engines:
        res = classify(rest, load_grammar(eng))
        rest = res.rest
        if res.events.height == 0:
            continue
        rows = res.events.with_columns(pl.lit(eng).alias("engine"))
        if rows.filter(~pl.col("kind").is_in([IGNORED, UNRECOGNIZED])).height == 0:
            # only known-ignored or unknown lines of this engine: its log, with no events
            if rows.filter(pl.col("kind") == IGNORED).height:
                found.append(eng)
            per_engine_rows.append(rows.with_columns(pl.lit(1, pl.Int32).alias("run")))
            continue
        found.append(eng)
        out = model_for(eng)(rows, mtimes)
        prepared = out.pop("_rows")
        per_engine_rows.append(prepared)
        for kind, fields in _kind_fields(eng).items():
            tables[kind] = _kind_table(prepared, kind, fields, tables.get(kind))
        tables.update(out)
    classified = (pl.concat(per_engine_rows, how="diagonal_relaxed") if per_engine_rows
                  else pl.DataFrame(schema={"_row": pl.UInt32, "file": pl.String,
                                            "line": pl.Int64, "engine": pl.String,
                                            "run": pl.Int32, "kind": pl.String,
                                            "variant": pl.String}))
    classified = classified.with_columns(
        pl.when(pl.col("kind") == IGNORED).then(pl.lit(IGNORED))
        .when(pl.col("kind") == UNRECOGNIZED).then(pl.lit(UNRECOGNIZED))
        .otherwise(pl.lit(EVENT)).alias("class"))
    tables["lines_classified"] = classified.select(
        [c for c in ("file", "line", "engine", "run", "class", "kind", "variant")
         if c in classified.columns])
    tables["unrecognized"] = _unrecognized(classified, lines)
    _fill_stats(files, classified, rest)
    logs = Logs(tables, files, found)
    if not found and not any(f.unrecognized for f in files):
        raise NoServerLines(logs)
    return logs


def _kind_table(rows: pl.DataFrame, kind: str, fields: dict[str, str],
                prev: pl.DataFrame | None) -> pl.DataFrame:
    sub = rows.filter(pl.col("kind") == kind)
    cols = []
    for c in COMMON_COLUMNS:
        if c in sub.columns:
            cols.append(pl.col(c))
        else:
            cols.append(pl.lit(None).alias(c))
    for c in MODEL_COLUMNS:
        if c in sub.columns and sub.get_column(c).null_count() < sub.height:
            cols.append(pl.col(c))
    for f, d in fields.items():
        if f in COMMON_COLUMNS or f in MODEL_COLUMNS:
            continue
        cols.append(pl.col(f).cast(DTYPES[d]) if f in sub.columns
                    else pl.lit(None, dtype=DTYPES[d]).alias(f))
    table = sub.select(cols).with_columns(
        pl.col("slot").cast(pl.Int64), pl.col("task").cast(pl.Int64),
        pl.col("run").cast(pl.Int32), pl.col("ts").cast(pl.Datetime("us", "UTC")),
        pl.col("t_rel").cast(pl.Float64), pl.col("ts_inferred").cast(pl.Boolean),
        pl.col("ts_source").cast(pl.String), pl.col("level").cast(pl.String))
    if prev is not None and prev.height:
        table = pl.concat([prev, table], how="diagonal_relaxed")
    return table.sort("file", "line")


def _unrecognized(classified: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    un = classified.filter(pl.col("class") == UNRECOGNIZED).select("_row", "engine")
    out = un.join(lines.select("_row", "file", "line", "text"), on="_row").sort("_row")
    diags: list[str | None] = []
    budget = DIAGNOSTIC_BUDGET_CHARS
    for i, (eng, text) in enumerate(zip(out["engine"], out["text"], strict=True)):
        if i >= MAX_DIAGNOSTICS or budget <= 0:
            diags.append(None)
            continue
        head = text[:MAX_DIAGNOSTIC_CHARS]
        budget -= len(head)
        diag = load_grammar(eng).explain(head)
        if len(text) > len(head):
            diag += f" (lark read the first {len(head)} of {len(text)} characters)"
        diags.append(diag)
    return out.select("file", "line", "text", pl.col("engine").alias("engine_guess")).with_columns(
        pl.Series("diagnostic", diags, dtype=pl.String))


def _fill_stats(files: list[FileStats], classified: pl.DataFrame, rest: pl.DataFrame) -> None:
    if classified.height:
        per = classified.group_by("file", "class").len()
        counts = {(f, c): n for f, c, n in per.iter_rows()}
        eng = classified.filter(pl.col("class") == EVENT).group_by("file").agg(
            pl.col("engine").unique().sort())
        engs = {f: e for f, e in eng.iter_rows()}
    else:
        counts, engs = {}, {}
    other = dict(rest.group_by("file").len().iter_rows()) if rest.height else {}
    for fs in files:
        fs.records = 0
        fs.events = counts.get((fs.file, EVENT), 0)
        fs.unrecognized = counts.get((fs.file, UNRECOGNIZED), 0)
        fs.ignored = counts.get((fs.file, IGNORED), 0) + other.get(fs.file, 0)
        fs.engines = engs.get(fs.file, [])
        fs.records = fs.events + fs.unrecognized + fs.ignored
