"""nvidia-smi telemetry files (``--query-gpu ... --format=csv`` and ``dmon``) into ``gpu_samples``.

The line shapes are ``grammars/nvidia_smi.lark``; its compiled patterns classify every line of a
file at once (Polars, no lark per line), then the captured cells are split and typed here.

    >>> from logscope.telemetry.nvidia import parse_text
    >>> text = "timestamp, index, power.draw [W]\\n2026/12/01 20:22:37.075, 0, 78.97 W\\n"
    >>> parse_text(text, "gpu.csv")["power_w"].to_list()
    [78.97000122070312]
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from functools import cache
from typing import Any

import polars as pl

from logscope.classify.grammar import CompiledGrammar, load_compiled

GRAMMAR = "nvidia-smi"
QUERY = "nvidia-smi-query"
QUERY_NOHEADER = "nvidia-smi-query-noheader"
DMON = "nvidia-smi-dmon"

# the gpu_samples frame: one row per GPU per sample
SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String(), "line": pl.Int64(), "source": pl.String(),
    "ts": pl.Datetime("us", "UTC"), "gpu": pl.Int16(), "name": pl.String(),
    "uuid": pl.String(), "pstate": pl.String(),
    "power_w": pl.Float32(), "power_limit_w": pl.Float32(),
    "sm_clock_mhz": pl.Int32(), "mem_clock_mhz": pl.Int32(),
    "util_gpu_pct": pl.Int16(), "util_mem_pct": pl.Int16(),
    "memory_used_mib": pl.Int32(), "memory_total_mib": pl.Int32(),
    "temp_c": pl.Int16(), "mem_temp_c": pl.Int16(),
}
_STRINGS = {"name", "uuid", "pstate"}

# --query-gpu field names (as typed, and as nvidia-smi renames them in its header) -> column;
# when several fields give one column the first in this order that has a value wins
QUERY_FIELDS: dict[str, str] = {
    "timestamp": "ts",
    "index": "gpu",
    "name": "name", "gpu_name": "name",
    "uuid": "uuid", "gpu_uuid": "uuid",
    "pstate": "pstate",
    "power.draw": "power_w", "power.draw.average": "power_w", "power.draw.instant": "power_w",
    "power.limit": "power_limit_w", "enforced.power.limit": "power_limit_w",
    "clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz",
    "clocks.gr": "sm_clock_mhz", "clocks.current.graphics": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz", "clocks.current.memory": "mem_clock_mhz",
    "utilization.gpu": "util_gpu_pct",
    "utilization.memory": "util_mem_pct",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "temperature.gpu": "temp_c",
    "temperature.memory": "mem_temp_c",
}
# dmon column names (-s p u c m and the default set) -> column
DMON_FIELDS: dict[str, str] = {
    "gpu": "gpu", "pwr": "power_w", "gtemp": "temp_c", "mtemp": "mem_temp_c",
    "sm": "util_gpu_pct", "mem": "util_mem_pct", "mclk": "mem_clock_mhz",
    "pclk": "sm_clock_mhz", "fb": "memory_used_mib",
}
NULL_VALUES = ["[N/A]", "[Not Supported]", "[Unknown Error]", "[GPU is lost]",
               "[Insufficient Permissions]", "N/A", "-", ""]
_TS_RX = r"^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"


class TelemetryError(Exception):
    """A telemetry file logscope cannot read as given (user error, one line)."""

    exit_code = 2


@cache
def grammar() -> CompiledGrammar:
    """The compiled ``grammars/nvidia_smi.lark`` (lark runs once per grammar version)."""
    return load_compiled(GRAMMAR)


def _regex(kind: str) -> str:
    return next(v.regex for v in grammar().variants if v.kind == kind)


def read_head(path: str, n_bytes: int = 8192) -> str:
    """The first bytes of a file (``.gz`` decompressed) as text; '' when unreadable."""
    try:
        with open(path, "rb") as f:
            data = f.read(2)
            f.seek(0)
            gz = data == b"\x1f\x8b"
            data = gzip.GzipFile(fileobj=f).read(n_bytes) if gz else f.read(n_bytes)
    except (OSError, EOFError):
        return ""
    return data.decode("utf-8", errors="replace")


def sniff(head: str) -> str | None:
    """Which telemetry format a file's first lines are (``QUERY``, ``QUERY_NOHEADER``,
    ``DMON``), or None for anything else (a server log)."""
    import re

    lines = [ln.rstrip("\r") for ln in head.split("\n")[:-1] or head.split("\n")]
    lines = [ln for ln in lines if ln.strip()][:8]
    if not lines:
        return None
    first = lines[0]
    if re.match(_regex("dmon_header"), first):
        return DMON
    if re.match(_regex("smi_header"), first):
        names = [_field_name(c) for c in first.split(", ")]
        if any(n in QUERY_FIELDS for n in names):
            return QUERY
        return None
    rows = [ln for ln in lines if re.match(_regex("smi_row"), ln)]
    if rows and len(rows) == len(lines) and all(re.match(_TS_RX, r) for r in rows):
        return QUERY_NOHEADER
    return None


def _field_name(cell: str) -> str:
    return cell.split(" [", 1)[0].strip()


def _classify(raw: pl.Series) -> pl.DataFrame:
    """kind and captured text of every line, by the grammar's compiled patterns."""
    df = pl.DataFrame({"text": raw.str.strip_chars_end("\r")}).with_row_index("line", offset=1)
    kind = pl.lit(None, pl.String)
    cap = pl.lit(None, pl.String)
    for v in reversed(grammar().variants):  # the first variant in grammar order wins
        got = pl.col("text").str.extract(v.regex, 1)
        kind = pl.when(got.is_not_null()).then(pl.lit(v.kind)).otherwise(kind)
        cap = pl.when(got.is_not_null()).then(got).otherwise(cap)
    return df.with_columns(kind.alias("kind"), cap.alias("cap"),
                           pl.col("line").cast(pl.Int64))


def _number(col: pl.Expr) -> pl.Expr:
    """``78.97 W`` / ``78.97`` / ``[N/A]`` -> 78.97 / 78.97 / null."""
    s = col.str.strip_chars()
    return (pl.when(s.is_in(NULL_VALUES)).then(None)
            .otherwise(s.str.extract(r"^(-?[0-9]+(?:\.[0-9]+)?)", 1))
            .cast(pl.Float64, strict=False))


def _typed(cells: dict[str, list[pl.Expr]]) -> list[pl.Expr]:
    out = []
    for col, dt in SCHEMA.items():
        if col in ("file", "line", "source"):
            continue
        exprs = cells.get(col, [])
        if not exprs:
            out.append(pl.lit(None, dt).alias(col))
            continue
        if col == "ts":
            vals = list(exprs)
        elif col in _STRINGS:
            vals = [pl.when(e.str.strip_chars().is_in(NULL_VALUES)).then(None)
                    .otherwise(e.str.strip_chars()) for e in exprs]
        else:
            vals = [_number(e) for e in exprs]
            if dt.is_integer():
                vals = [v.round(0) for v in vals]
        out.append(pl.coalesce(vals).cast(dt, strict=False).alias(col))
    return out


def _query_frame(rows: pl.DataFrame, header: list[str], name: str) -> pl.DataFrame:
    fields = [_field_name(h) for h in header]
    n = len(fields)
    parts = pl.col("cap").str.split(", ")
    cells: dict[str, list[pl.Expr]] = {}
    for i, f in enumerate(fields):
        col = QUERY_FIELDS.get(f)
        if col is None:
            continue
        e = parts.list.get(i, null_on_oob=True)
        if col == "ts":
            e = e.str.strip_chars().str.to_datetime("%Y/%m/%d %H:%M:%S%.f", strict=False,
                                                    time_unit="us").dt.replace_time_zone("UTC")
        cells.setdefault(col, []).append(e)
    if "ts" not in cells:
        raise TelemetryError(f"{name}: the nvidia-smi CSV has no timestamp column; record it "
                             "with --query-gpu=timestamp,... so it can be joined to a log")
    ok = rows.filter(pl.col("cap").str.count_matches(", ") == n - 1)
    out = ok.select(pl.lit(name).alias("file"), "line", pl.lit(QUERY).alias("source"),
                    *_typed(cells))
    if "gpu" not in cells:  # no index column: one GPU's series (checked), or one per uuid
        out = _one_gpu(out, name)
    return out


INTERLEAVED_GAP = 0.1  # rows closer than this share of the sampling interval: one query round
INTERLEAVED_SHARE = 0.3  # ... over several GPUs, when at least this share of the gaps are so


def _one_gpu(df: pl.DataFrame, name: str) -> pl.DataFrame:
    """The samples of a ``--query-gpu`` CSV without ``index``: GPU 0 when they are one GPU's
    series; one GPU per ``uuid`` (in order of appearance) when the file has several uuids.
    Several GPUs interleaved with nothing to tell them apart (one timestamp repeated, or rows
    a few ms apart, in every round; or power alternating between two levels row by row) raise
    :class:`TelemetryError` asking for ``index``.

    Example: ``_one_gpu(frame, "gpu.csv")["gpu"].unique().to_list() == [0]``
    """
    df = df.sort("line")
    ids = df["uuid"].drop_nulls().unique(maintain_order=True).to_list()
    if len(ids) > 1:
        return df.with_columns(pl.col("uuid").replace_strict(
            ids, list(range(len(ids))), default=None).cast(pl.Int16).alias("gpu"))
    if _interleaved(df):
        raise TelemetryError(
            f"{name}: this nvidia-smi CSV holds several GPUs' samples without an index column "
            "(rows of one query round share a timestamp); record it with --query-gpu="
            "timestamp,index,power.draw,... so each GPU's series can be told apart")
    return df.with_columns(pl.lit(0, pl.Int16).alias("gpu"))


def _interleaved(df: pl.DataFrame) -> bool:
    """Whether the rows of a CSV without ``index`` are several GPUs' series interleaved."""
    t = df["ts"].drop_nulls().dt.epoch("us").cast(pl.Float64) / 1e6
    if t.len() < 4:
        return False
    gaps = t.diff().drop_nulls().abs()
    interval = float(gaps.quantile(0.9))  # the sampling interval (-l / -lms), however fast
    tiny = (gaps == 0) | (gaps < INTERLEAVED_GAP * interval)
    if float(tiny.mean()) >= INTERLEAVED_SHARE:
        return True
    p = df["power_w"].drop_nulls().cast(pl.Float64)
    if p.len() < 8:
        return False
    lag1 = float(p.diff().abs().mean())
    lag2 = float(p.diff(2).abs().mean())
    return lag1 > 20.0 and lag1 > 3 * lag2  # two levels alternating row by row


def _dmon_frame(rows: pl.DataFrame, header: str, name: str, mtime: float | None) -> pl.DataFrame:
    cols = header.split()
    parts = pl.col("cap").str.strip_chars().str.replace_all(r" +", " ").str.split(" ")
    cells: dict[str, list[pl.Expr]] = {}
    date = time = None
    for i, c in enumerate(cols):
        e = parts.list.get(i, null_on_oob=True)
        if c == "Date":
            date = e
        elif c == "Time":
            time = e
        elif c in DMON_FIELDS:
            cells.setdefault(DMON_FIELDS[c], []).append(e)
    if time is None:
        raise TelemetryError(f"{name}: this nvidia-smi dmon output has no time column; record "
                             "it with `nvidia-smi dmon -o DT` so it can be joined to a log")
    if date is None:  # -o T: the day is the file's (UTC); a midnight rollover adds a day
        day = datetime.fromtimestamp(mtime or 0, UTC).strftime("%Y%m%d")
        date = pl.lit(day)
    ts = pl.concat_str(date, pl.lit(" "), time).str.to_datetime(
        "%Y%m%d %H:%M:%S", strict=False, time_unit="us").dt.replace_time_zone("UTC")
    cells["ts"] = [ts]
    ok = rows.filter(pl.col("cap").str.strip_chars().str.count_matches(r" +") == len(cols) - 1)
    return ok.select(pl.lit(name).alias("file"), "line", pl.lit(DMON).alias("source"),
                     *_typed(cells))


def parse_text(text: str, name: str, *, fields: list[str] | None = None,
               mtime: float | None = None) -> pl.DataFrame:
    """The ``gpu_samples`` rows of one telemetry file's text (see :data:`SCHEMA`).

    A ``--format=csv,noheader`` file needs ``fields``: the ``--query-gpu`` list it was
    recorded with. Raises :class:`TelemetryError` for a file that cannot be joined (no time)."""
    raw = pl.Series("raw", text.split("\n"), dtype=pl.String)
    lines = _classify(raw).filter(pl.col("kind").is_not_null())
    fmt = sniff(text[:8192])
    frames: list[pl.DataFrame] = []
    if fmt in (QUERY, QUERY_NOHEADER) or (fmt is None and fields):
        seg = lines.filter(pl.col("kind").is_in(["smi_header", "smi_row"])).with_columns(
            pl.when(pl.col("kind") == "smi_header").then(pl.col("cap")).otherwise(None)
            .forward_fill().alias("header"))
        if fields:
            seg = seg.with_columns(pl.col("header").fill_null(", ".join(fields)))
        if seg.filter(pl.col("kind") == "smi_row", pl.col("header").is_null()).height:
            raise TelemetryError(
                f"{name}: an nvidia-smi CSV without its header line (--format=csv,noheader); "
                "give the --query-gpu field list with --fields, e.g. "
                "--fields timestamp,index,power.draw,utilization.gpu")
        body = seg.filter(pl.col("kind") == "smi_row")
        for h in body["header"].unique(maintain_order=True).to_list():
            frames.append(_query_frame(body.filter(pl.col("header") == h),
                                       [c.strip() for c in h.split(",")], name))
    elif fmt == DMON:
        seg = lines.filter(pl.col("kind").is_in(["dmon_header", "dmon_row"])).with_columns(
            pl.when(pl.col("kind") == "dmon_header").then(pl.col("cap")).otherwise(None)
            .forward_fill().alias("header"))
        body = seg.filter(pl.col("kind") == "dmon_row", pl.col("header").is_not_null())
        for h in body["header"].unique(maintain_order=True).to_list():
            frames.append(_dmon_frame(body.filter(pl.col("header") == h), h, name, mtime))
    else:
        raise TelemetryError(f"{name}: not an nvidia-smi --query-gpu CSV or dmon output")
    if not frames:
        return empty()
    return pl.concat(frames).sort("gpu", "ts", "line", nulls_last=True)


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def formats() -> pl.DataFrame:
    """The telemetry line formats, shaped like :func:`logscope.classify.catalog.formats`."""
    from logscope.classify.catalog import split_doc

    rows: list[dict[str, Any]] = []
    for v in grammar().variants:
        versions, desc = split_doc(v.doc)
        rows.append({"engine": GRAMMAR, "kind": v.kind, "variant": v.name, "versions": versions,
                     "since": versions.split("+")[0].split()[-1] if versions else None,
                     "until": None, "description": desc, "anchor": v.anchor,
                     "fields": sorted(v.all_fields)})
    schema = {"engine": pl.String, "kind": pl.String, "variant": pl.String,
              "versions": pl.String, "since": pl.String, "until": pl.String,
              "description": pl.String, "anchor": pl.String, "fields": pl.List(pl.String)}
    return pl.DataFrame(rows, schema=schema)


def explain_line(path: str, text: str, line_no: int, whole: str | None = None,
                 query_fields: list[str] | None = None) -> dict[str, Any]:
    """How one telemetry line was read: kind, variant, captured cells (and, given the ``whole``
    file's text, the typed ``gpu_samples`` values of a sample line) and lark's verdict, in the
    shape of :func:`logscope.classify.catalog.explain`."""
    g = grammar()
    out: dict[str, Any] = {"file": path, "line": line_no, "raw": text, "wrapper": {},
                           "text": text, "class": "other", "engine": None, "kind": None,
                           "variant": None, "format": None, "fields": {}, "diagnostics": {}}
    hit = g.match_line(text)
    if hit is not None:
        kind, variant, fields = hit
        doc = next(v.doc for v in g.variants if v.name == variant)
        out.update({"class": "event", "engine": GRAMMAR, "kind": kind, "variant": variant,
                    "format": doc, "fields": fields})
        if whole is not None and kind in ("smi_row", "dmon_row"):
            try:
                row = parse_text(whole, path, fields=query_fields).filter(pl.col("line") == line_no)
            except TelemetryError as e:
                out["fields"] = {**fields, "error": str(e)}
                return out
            if row.height:
                typed = row.drop("file", "line").row(0, named=True)
                out["fields"] = {**fields, **{k: v for k, v in typed.items() if v is not None}}
        return out
    from lark.exceptions import UnexpectedInput

    try:
        g.lark().parse(text)
        out["diagnostics"] = {GRAMMAR: {"ok": True}}
    except UnexpectedInput as e:
        expected = getattr(e, "expected", None) or getattr(e, "allowed", None) or ()
        col = getattr(e, "column", None)
        out["diagnostics"] = {GRAMMAR: {
            "ok": False, "column": col if isinstance(col, int) and col > 0 else None,
            "unexpected": getattr(e, "char", None), "expected": sorted(str(x) for x in expected),
            "truncated": False}}
    return out
