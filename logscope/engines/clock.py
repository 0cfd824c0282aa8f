"""Wall-clock helpers shared by the engine models (wrapper timestamps, year inference)."""

from __future__ import annotations

import polars as pl

from logscope.engines import same_dtypes

WRAP_TS = "wrap_ts"  # the rows' wrapper timestamp (UTC), decoded from their prefix (envelope.py)
WRAP_TS_DTYPE = pl.Datetime("us", "UTC")


# -- clocks a user can fix: --start-time / --tz -------------------------------------------------

START_SOURCE = "anchored:start-time"


def parse_tz(tz: str | None):  # noqa: ANN201
    """A time zone: an IANA name (``Europe/Berlin``), ``UTC``, ``local`` or an offset
    (``+02:00``, ``-0530``). None: UTC.

    Example: parse_tz("Asia/Shanghai")
    """
    from datetime import UTC, datetime, timedelta, timezone

    if tz is None or tz.upper() in ("UTC", "Z"):
        return UTC
    if tz.lower() == "local":
        return datetime.now().astimezone().tzinfo
    import re

    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})?", tz)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return timezone(-delta if m.group(1) == "-" else delta)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {tz!r} (an IANA name like Europe/Berlin, UTC, "
                         "local, or an offset like +02:00)") from e


def parse_start_time(text: str | float, tz: str | None = None) -> float:
    """When a server started, as Unix seconds: an ISO 8601 time (``2026-12-01T20:25:06Z``,
    ``2026-12-01T21:25:06+01:00``; without an offset it is in ``tz``, default UTC) or Unix
    seconds (``1796156706.5``). The one parser behind every command's ``--start-time``.
    Raises ``ValueError`` (one line) for anything else.

    Example: parse_start_time("2026-12-01T20:25:06Z") == 1796156706.0
    """
    return parse_start_datetime(text, tz).timestamp()


def parse_start_datetime(text: str | float, tz: str | None = None):  # noqa: ANN201
    """:func:`parse_start_time` as an aware UTC datetime.

    Example: parse_start_datetime("2026-10-01T09:30:00", tz="Europe/Berlin")
    """
    from datetime import UTC, datetime

    s = str(text).strip()
    try:
        return datetime.fromtimestamp(float(s), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        pass
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as e:
        raise ValueError(f"bad start time {s!r}: expected ISO 8601, e.g. "
                         "2026-10-01T09:30:00+02:00 or 2026-10-01T07:30:00Z, or Unix "
                         "seconds") from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=parse_tz(tz))
    return dt.astimezone(UTC)


def _relative_rows(df: pl.DataFrame) -> pl.Expr:
    """Rows on a relative clock with no wall clock of their own (only mtime, or none)."""
    return (pl.col("t_rel").is_not_null()
            & (pl.col("ts_source").is_null() | (pl.col("ts_source") == "anchored:mtime")))


def anchor_start(logs, start, tz: str | None = None):  # noqa: ANN001, ANN201
    """Anchor llama-server's relative clock (time since process start) to a wall clock the
    user knows: ``start`` (an ISO 8601 string, Unix seconds or an aware datetime) is the
    server's start, the zero of the first run's clock in each file; a dict ``{file: start}``
    gives each file its own (files not in it are left alone). Rows that had only the file's
    mtime (or no wall clock at all) get ``ts = start + t_rel`` and ``ts_source =
    "anchored:start-time"`` (``ts_inferred`` false); rows with a clock of their own (Unix
    stamps, journald/docker wrappers) keep it. ``requests`` ``ts_start``/``ts_end`` follow.
    Later runs of a file keep their anchors.

    Example: anchor_start(logscope.read("copied.log"), "2026-10-01T09:30:00+02:00")
    """
    from dataclasses import replace
    from datetime import datetime

    def us(v) -> int:  # noqa: ANN001
        return int((v if isinstance(v, datetime) else parse_start_datetime(v, tz)).timestamp()
                   * 1_000_000)

    per_file = {f: us(v) for f, v in start.items()} if isinstance(start, dict) else None
    start_us = None if per_file is not None else us(start)
    firsts: dict[str, int] = {}
    for df in logs.tables.values():
        if {"t_rel", "ts_source", "run", "file"} <= set(df.columns) and df.height:
            got = df.filter(_relative_rows(df)).group_by("file").agg(pl.col("run").min())
            for f, r in got.iter_rows():
                if r is not None and (per_file is None or f in per_file):
                    firsts[f] = min(firsts.get(f, r), r)
    if not firsts:
        return logs
    first = pl.DataFrame({"file": list(firsts), "_first": list(firsts.values()),
                          "_start": [per_file[f] if per_file is not None else start_us
                                     for f in firsts]},
                         schema={"file": pl.String, "_first": pl.Int64, "_start": pl.Int64})
    ts = (pl.col("_start") + (pl.col("t_rel") * 1e6).round(0).cast(pl.Int64)).cast(
        pl.Datetime("us", "UTC"))
    out = {}
    for name, df in logs.tables.items():
        cols = set(df.columns)
        if {"t_rel", "ts_source", "run", "file", "ts"} <= cols and df.height:
            hit = _relative_rows(df) & (pl.col("run").cast(pl.Int64) == pl.col("_first"))
            df = (df.join(same_dtypes(first, df, ["file"]), on="file", how="left",
                          maintain_order="left")
                  .with_columns(pl.when(hit).then(ts).otherwise(pl.col("ts")).alias("ts"),
                                pl.when(hit).then(pl.lit(START_SOURCE))
                                .otherwise(pl.col("ts_source").cast(pl.String))
                                .cast(df.schema["ts_source"]).alias("ts_source"),
                                *([pl.when(hit).then(False).otherwise(pl.col("ts_inferred"))
                                   .alias("ts_inferred")] if "ts_inferred" in cols else []))
                  .drop("_first", "_start"))
        elif name == "requests" and {"t_start", "t_end", "ts_start", "ts_end", "run"} <= cols:
            hit = pl.col("run").cast(pl.Int64) == pl.col("_first")
            df = df.join(same_dtypes(first, df, ["file"]), on="file", how="left",
                         maintain_order="left").with_columns(
                *[pl.when(hit & pl.col(t).is_not_null()).then(
                    (pl.col("_start") + (pl.col(t) * 1e6).round(0).cast(pl.Int64))
                    .cast(pl.Datetime("us", "UTC"))).otherwise(pl.col(w)).alias(w)
                  for t, w in (("t_start", "ts_start"), ("t_end", "ts_end"))]
            ).drop("_first", "_start")
        out[name] = df
    return replace(logs, tables=out)


def apply_tz(logs, tz: str):  # noqa: ANN001, ANN201
    """Read the wall-clock times a server printed without a zone (SGLang's and vLLM's
    ``ts_source`` ``log...``, taken as UTC by default) as local times of ``tz``.

    Example: apply_tz(logscope.read("sglang.log"), "Asia/Shanghai")
    """
    from dataclasses import replace

    zone = parse_tz(tz)
    name = getattr(zone, "key", None)
    if name is None:  # a fixed offset: Polars wants a name, give it as Etc/GMT-N when whole
        off = zone.utcoffset(None).total_seconds() / 3600
        if off != int(off):
            raise ValueError(f"--tz {tz}: offsets that are not whole hours need an IANA name")
        name = "UTC" if off == 0 else f"Etc/GMT{'-' if off > 0 else '+'}{abs(int(off))}"
    out = {}
    for t, df in logs.tables.items():
        if {"ts", "ts_source"} <= set(df.columns) and df.height:
            local = pl.col("ts_source").cast(pl.String).str.starts_with("log").fill_null(False)
            moved = (pl.col("ts").dt.replace_time_zone(None)
                     .dt.replace_time_zone(name, ambiguous="earliest", non_existent="null")
                     .dt.convert_time_zone("UTC"))
            df = df.with_columns(pl.when(local).then(moved).otherwise(pl.col("ts")).alias("ts"))
        out[t] = df
    return replace(logs, tables=out)


def clock_summary(logs, tz: str | None = None) -> list[dict]:  # noqa: ANN001
    """Per file, where its wall clock came from: ``{"file", "relative_clock", "sources":
    {ts_source: rows}, "mtime", "runs_without_clock", "note"}`` (``note`` None when nothing
    needs saying; ``tz``: the zone the printed local times were read in, see
    :func:`apply_tz`). A relative clock anchored only by the file's modification time is said
    plainly: a copied or touched log shows the copy's date.

    Example: clock_summary(logscope.read("server.log"))[0]["note"]
    """
    import os
    from datetime import UTC, datetime

    per: dict[str, dict] = {}
    for name in logs.tables:
        df = logs.scan(name)  # the few columns read, from disk after read(out=DIR)
        cols = df.collect_schema().names()
        if not {"file", "ts_source"} <= set(cols):
            continue
        g = df.group_by("file", "ts_source").len().collect()
        for f, src, n in g.iter_rows():
            d = per.setdefault(f, {"file": f, "relative_clock": False, "sources": {},
                                   "runs_without_clock": set()})
            d["sources"][src or "none"] = d["sources"].get(src or "none", 0) + n
        if "t_rel" in cols and "run" in cols and g.height:
            r = df.filter(pl.col("t_rel").is_not_null())
            for f in r.select(pl.col("file").unique()).collect()["file"].to_list():
                per[f]["relative_clock"] = True
            for f, run in (r.filter(pl.col("ts_source").is_null())
                           .select("file", "run").unique().collect().iter_rows()):
                per[f]["runs_without_clock"].add(run)
    out = []
    for f, d in per.items():
        src = d["sources"]
        try:
            mt = datetime.fromtimestamp(os.stat(f).st_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except OSError:
            mt = None
        notes = []
        if src.get("anchored:mtime"):
            notes.append(f"time since the server started, anchored to the file's modification "
                         f"time ({mt or 'unknown'}): a copied log shows the copy's date; "
                         "--start-time (the server's start, ISO 8601 or Unix seconds) anchors it")
        if d["runs_without_clock"]:
            notes.append(f"{len(d['runs_without_clock'])} earlier server run(s) have no wall "
                         "clock (only the last run of a file is anchored to its mtime)")
        if src.get(START_SOURCE):
            notes.append("wall clock anchored to --start-time")
        if any(k == "log" or k.startswith("log:") for k in src):
            notes.append(f"the log prints local times without a zone: read as {tz}" if tz else
                         "the log prints local times without a zone: read as UTC (--tz ZONE "
                         "to say which zone they are in)")
        if any(k.startswith("log:year_from_mtime") or k == "log:date_from_mtime" for k in src):
            notes.append("the log prints no year (or date): taken from the file's modification "
                         "time")
        out.append({"file": f, "relative_clock": d["relative_clock"], "sources": src,
                    "mtime": mt, "runs_without_clock": len(d["runs_without_clock"]),
                    "note": "; ".join(notes) or None})
    return out


def clock_notes(logs, tz: str | None = None) -> list[str]:  # noqa: ANN001
    """The :func:`clock_summary` notes as lines for the readable summary.

    Example: print("\\n".join(clock_notes(logscope.read("server.log"))))
    """
    notes = [d for d in clock_summary(logs, tz) if d["note"]]
    if len(notes) == 1 and len(logs.files) == 1:
        return [f"clock: {notes[0]['note']}"]
    return [f"clock ({d['file']}): {d['note']}" for d in notes]
