"""Many log files into one hive-partitioned Parquet dataset, incrementally and in parallel.

    >>> from logscope.dataset import ingest_to_dataset
    >>> ingest_to_dataset(["logs/a.log", "logs/b.log"], "ds/")          # doctest: +SKIP
    {'ingested': 2, 'appended': 0, 'skipped': 0, ...}

Layout (what DuckDB, Spark, Trino or ``pl.scan_parquet(..., hive_partitioning=True)`` read)::

    DIR/<table>/engine=<engine>/host=<host>/date=<YYYY-MM-DD>/part-<file-hash>-<offset>.parquet
    DIR/_manifest.json

* ``engine``: the row's ``engine`` column (``engine_guess`` for ``unrecognized``; ``requests``,
  which has no engine column, takes the file's engine); ``unknown`` when there is none. The
  ``engine`` column also stays inside the files, so readers see the same values either way.
* ``host``: the host of a journald wrapper (``Nov 30 07:00:00 HOST ident[pid]: ...``), else the
  service of a docker compose wrapper (``SERVICE | ...``), else the name of the file's parent
  directory (fleets usually collect logs as ``logs/<host>/server.log``), else ``local``. One host
  per file: the first wrapped line decides. Characters outside ``[A-Za-z0-9._-]`` become ``_``.
* ``date``: the UTC date of ``ts`` (``ts_start`` for ``requests``), ``unknown`` without one.
  Read ``date`` as a string (DuckDB and Polars infer a date type, which ``unknown`` breaks:
  :func:`scan` and ``logscope sql`` pass the partition schema explicitly).

Idempotence. ``_manifest.json`` (written atomically: temp file + rename) records per source file
its identity — realpath, size, SHA-256 of the first 64 KiB — and how many bytes and lines have
been ingested. Re-ingesting an unchanged file adds nothing. A file that has grown (same first
64 KiB fingerprint, larger size) adds only the complete lines after the old end: line numbers
continue from the old count and ``run`` continues from the last run seen. A different file at
the same path (another fingerprint, or smaller) is ingested as new; its earlier parts stay.
The manifest is updated after each file's Parquet parts are written, and a part's name is a
function of the file and the byte offset it starts at, so an ingest interrupted midway and run
again rewrites the same parts instead of duplicating them. ``DIR/.lock`` (``flock``) serialises
two ingests into the same dataset.

Limitations, honestly:

* only complete lines (ending in ``\\n``) are ingested, so a line being written is picked up by
  the next ingest; a last line without a newline is ingested only once it gets one;
* a request that straddles the old end is split: its start is in the old part, its end in the
  new one, and neither part's ``requests`` row is complete (the per-kind event tables are exact;
  rebuild ``requests`` from them, or re-ingest the whole file into a fresh dataset, when that
  matters). Likewise ``ts`` inferred from a neighbouring line does not cross the boundary, and
  a server restart exactly at the boundary keeps the previous ``run`` number;
* ``.gz`` files are read whole; a rotated file under a new name is a new file (its content is
  ingested again) — the manifest is keyed by realpath, not by content;
* ``unrecognized`` diagnostics are budgeted per file (not per dataset).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

MANIFEST = "_manifest.json"
HEAD_BYTES = 64 * 1024
# the host of a journald wrapper (frontend.JOURNALD_ISO / JOURNALD_SHORT, host captured)
_JOURNALD_HOST = (r"^(?:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?[+-]\d{2}:?\d{2}"
                  r"|[A-Z][a-zä]{2,3} [ 0-9]\d \d{2}:\d{2}:\d{2}) (\S+) [^\s:\[]+(?:\[\d+\])?: ")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
PARTITIONS = ("engine", "host", "date")


def identity(path: str | os.PathLike, head_bytes: int = HEAD_BYTES) -> dict[str, Any]:
    """realpath, size and SHA-256 of the first ``head_bytes`` (64 KiB) of a file
    (``head_bytes`` is how many were hashed: less for a file shorter than that)."""
    real = os.path.realpath(path)
    with open(real, "rb") as f:
        head = f.read(head_bytes)
        size = os.fstat(f.fileno()).st_size
    return {"realpath": real, "size": size, "head_bytes": len(head),
            "head_sha256": hashlib.sha256(head).hexdigest()}


def _safe(value: str | None, default: str) -> str:
    value = _UNSAFE.sub("_", value or "").strip("._")
    return value or default


def _file_hash(ident: dict[str, Any]) -> str:
    return hashlib.sha256(f"{ident['realpath']}\0{ident['head_sha256']}".encode()).hexdigest()[:16]


def read_part(path: str, start_byte: int = 0, start_line: int = 0, engine: str = "auto",
              run_offset: int = 0) -> dict[str, Any]:
    """Ingest the complete lines of ``path`` from byte ``start_byte`` on, numbering them from
    ``start_line + 1`` (the part of a grown file); ``run`` is shifted by ``run_offset``.

    Built on ``logscope.sources`` and the ingest internals, so the frames are those of
    ``logscope.read`` for the same lines. Returns the tables, the byte offset of the end of the
    last complete line, the number of lines, the host and the per-file stats.
    """
    import polars as pl

    from . import sources
    from .frontend import strip_frame
    from .grammar import available_engines
    from .ingest import FileStats, NoServerLines, _classify_all, _lines_frame

    p = Path(path)
    if not p.is_file():
        raise sources.InputError(f"{path}: no such file")
    mtime = p.stat().st_mtime
    with open(p, "rb") as f:
        magic = f.read(2)
        if magic == b"\x1f\x8b":  # gzip: whole file (sources decompresses), no append
            data, _ = sources.read_bytes(path)
            end = p.stat().st_size
        else:
            f.seek(start_byte)
            data = f.read()
            cut = data.rfind(b"\n")
            data = data[:cut + 1] if cut >= 0 else b""
            end = start_byte + len(data)
    text, bad = sources.decode(data)
    text, n, capped = sources.normalize(text)
    src = sources.Source(path, text, mtime, n, bad, capped)
    lines = _lines_frame(src, 0).with_columns(pl.col("line") + start_line)
    lines = strip_frame(lines)
    host = None
    if lines.height and "wrap_service" in lines.columns:
        wrapped = lines.filter(pl.col("wrap_iso").is_not_null() | pl.col("wrap_short").is_not_null()
                               | pl.col("wrap_service").is_not_null()).head(1)
        if wrapped.height:
            m = re.match(_JOURNALD_HOST, wrapped["raw"][0])
            host = m.group(1) if m else wrapped["wrap_service"][0]
    if not host:
        parent = os.path.basename(os.path.dirname(os.path.realpath(path)))
        host = parent or "local"
    stats = [FileStats(path, lines=n, bad_utf8=bad, capped=capped)]
    engines = available_engines() if engine == "auto" else [engine]
    try:
        logs = _classify_all(lines, engines, stats, {path: mtime})
    except NoServerLines as e:
        logs = e.args[0]
    tables = {k: v for k, v in logs.tables.items() if not k.startswith("_")}
    if run_offset:
        tables = {k: (v.with_columns(pl.col("run") + run_offset) if "run" in v.columns else v)
                  for k, v in tables.items()}
    last_run = 0
    for df in tables.values():
        if "run" in df.columns and df.height and df["run"].max() is not None:
            last_run = max(last_run, int(df["run"].max()))
    pending = 0 if magic == b"\x1f\x8b" else p.stat().st_size - end
    return {"path": path, "tables": tables, "end_byte": end, "lines": n, "host": host,
            "pending_bytes": max(pending, 0),
            "engines": logs.engines, "stats": stats[0].__dict__, "last_run": last_run}


def _task(args: tuple) -> dict[str, Any]:
    return read_part(*args)


def _resilient(results, tasks: list[tuple]):  # noqa: ANN001, ANN202
    """Results of the pool; if it breaks (a worker killed, or spawn cannot re-import a
    ``__main__`` read from stdin), the remaining files are ingested in this process."""
    done = 0
    try:
        for res in results:
            done += 1
            yield res
    except BrokenProcessPool:
        warnings.warn("logscope: the worker processes failed; ingesting the remaining files in "
                      "this process", RuntimeWarning, stacklevel=3)
        for t in tasks[done:]:
            yield _task(t)


def _load_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    if not path.exists():
        return {"version": 1, "files": {}}
    return json.loads(path.read_text())


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_tables(res: dict[str, Any], out: Path, fhash: str, offset: int) -> list[str]:
    import polars as pl

    written: list[str] = []
    file_engine = res["engines"][0] if len(res["engines"]) == 1 else None
    for name, df in res["tables"].items():
        if df.height == 0:
            continue
        if "engine" in df.columns:
            eng = pl.col("engine")
        elif "engine_guess" in df.columns:
            eng = pl.col("engine_guess")
        else:
            eng = pl.lit(file_engine, pl.String)
        ts = next((c for c in ("ts", "ts_start") if c in df.columns), None)
        date = (pl.col(ts).dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d")
                if ts and isinstance(df.schema[ts], pl.Datetime) and df.schema[ts].time_zone
                else pl.col(ts).dt.strftime("%Y-%m-%d") if ts else pl.lit(None, pl.String))
        keyed = df.with_columns(eng.cast(pl.String).fill_null("unknown").alias("_p_engine"),
                                date.fill_null("unknown").alias("_p_date"))
        for (e, d), part in keyed.group_by("_p_engine", "_p_date", maintain_order=True):
            target = (out / name / f"engine={_safe(e, 'unknown')}" / f"host={res['host']}"
                      / f"date={d}")
            target.mkdir(parents=True, exist_ok=True)
            dest = target / f"part-{fhash}-{offset}.parquet"
            tmp = target / f".{dest.name}.tmp"
            part.drop("_p_engine", "_p_date").write_parquet(tmp)
            os.replace(tmp, dest)
            written.append(str(dest.relative_to(out)))
    return written


def ingest_to_dataset(paths: list[str] | tuple[str, ...] | str, out_dir: str | os.PathLike,
                      engine: str = "auto", workers: int | None = None) -> dict[str, Any]:
    """Ingest log files (paths or globs) into the Parquet dataset ``out_dir`` (see the module
    docstring), one file per task in a process pool of ``workers`` (default
    ``min(cpu count, files)``; 1 runs in this process). Workers are spawned (not forked: Polars'
    threads do not survive a fork), so a script calling this with workers > 1 needs the usual
    ``if __name__ == "__main__":`` guard.

    Returns ``{"ingested": new files, "appended": grown files, "skipped": unchanged files,
    "lines": lines added, "parts": Parquet files written, "pending_bytes": bytes of unfinished
    last lines (no newline yet) left for the next ingest, "files": [per-file detail]}``.
    """
    from .grammar import ENGINES

    if isinstance(paths, str):
        paths = [paths]
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # one writer at a time: a second ingest into the same dataset waits for the first
    with open(out / ".lock", "w") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no lock (do not run two ingests into one dataset)
            pass
        return _ingest_locked(paths, out, engine, workers)


def _ingest_locked(paths: list[str] | tuple[str, ...], out: Path, engine: str,
                   workers: int | None) -> dict[str, Any]:
    from . import sources

    manifest = _load_manifest(out)
    files: dict[str, Any] = manifest.setdefault("files", {})

    tasks: list[tuple] = []
    plan: list[dict[str, Any]] = []
    report = {"ingested": 0, "appended": 0, "skipped": 0, "lines": 0, "parts": 0,
              "pending_bytes": 0, "files": []}
    seen: set[str] = set()
    for p in sources.expand(list(paths)):
        if p == "-":
            raise sources.InputError("-: stdin cannot be ingested into a dataset (give files)")
        if not os.path.exists(p):
            raise sources.InputError(f"{p}: no such file")
        if os.path.isdir(p):
            raise sources.InputError(f"{p}: is a directory (give the log files, or a glob)")
        ident = identity(p)
        if ident["realpath"] in seen:  # the same file twice in one call
            continue
        seen.add(ident["realpath"])
        old = files.get(ident["realpath"])
        # a file shorter than 64 KiB when first seen: compare the bytes hashed then
        if old is not None and old.get("head_bytes", HEAD_BYTES) < ident["head_bytes"]:
            ident_then = identity(p, old["head_bytes"])
        else:
            ident_then = ident
        same = (old is not None and old["head_sha256"] == ident_then["head_sha256"]
                and ident["size"] >= old["size"])
        if same and ident["size"] == old["size"]:
            report["skipped"] += 1
            report["files"].append({"file": p, "action": "skipped", "lines": 0})
            continue
        if same and old.get("bytes", 0) >= ident["size"]:
            report["skipped"] += 1
            report["files"].append({"file": p, "action": "skipped", "lines": 0})
            continue
        if same:
            start_byte, start_line = old["bytes"], old["lines"]
            run_offset = max(old.get("last_run", 1) - 1, 0)
            action = "appended"
        else:
            start_byte, start_line, run_offset, action = 0, 0, 0, "ingested"
        tasks.append((p, start_byte, start_line, engine, run_offset))
        plan.append({"ident": ident, "action": action, "old": old if same else None,
                     "start_byte": start_byte})

    if tasks:
        n = workers or min(os.cpu_count() or 1, len(tasks))
        if n <= 1 or len(tasks) == 1:
            results = map(_task, tasks)
            pool = None
        else:  # spawn: forking a process that already runs Polars' thread pool can deadlock
            pool = ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn"))
            results = _resilient(pool.map(_task, tasks), tasks)
        try:
            for info, res in zip(plan, results, strict=True):
                ident, old = info["ident"], info["old"]
                fhash = _file_hash(old or ident)
                written = _write_tables(res, out, fhash, info["start_byte"])
                entry = {
                    "path": res["path"], "realpath": ident["realpath"],
                    "size": ident["size"], "head_bytes": ident["head_bytes"],
                    "head_sha256": ident["head_sha256"],
                    "bytes": res["end_byte"], "lines": (old["lines"] if old else 0) + res["lines"],
                    "last_run": max(res["last_run"], old.get("last_run", 0) if old else 0),
                    "host": res["host"], "engines": sorted(
                        set(res["engines"]) | set(old.get("engines", []) if old else [])),
                    "parts": (old.get("parts", []) if old else []) + written,
                    "ingested_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                # the size we saw is the size we record only if we read up to it; a partial last
                # line is left for next time (the size check then sees growth)
                entry["size"] = entry["bytes"] if res["end_byte"] < ident["size"] else ident["size"]
                files[ident["realpath"]] = entry
                # after each file: an interrupted run loses at most the file in flight
                _write_atomic(out / MANIFEST, json.dumps(manifest, indent=1).encode())
                action = info["action"]
                if action == "appended" and res["lines"] == 0:
                    action = "skipped"  # grew by a partial line only: nothing to add yet
                report[action] += 1
                report["lines"] += res["lines"]
                report["parts"] += len(written)
                report["pending_bytes"] += res["pending_bytes"]
                report["files"].append({"file": res["path"], "action": action,
                                        "lines": res["lines"]})
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    return report


def table_glob(out_dir: str | os.PathLike, table: str) -> str:
    return str(Path(out_dir) / table / "**" / "*.parquet")


def tables_in(out_dir: str | os.PathLike) -> list[str]:
    """The tables of a dataset (directories holding at least one partitioned Parquet file)."""
    out = Path(out_dir)
    return sorted(d.name for d in out.iterdir()
                  if d.is_dir() and not d.name.startswith((".", "_")) and "=" not in d.name
                  and any(d.glob("engine=*/host=*/date=*/*.parquet")))


def scan(out_dir: str | os.PathLike, table: str):  # noqa: ANN201 - polars imported lazily
    """A LazyFrame over one table of the dataset, with the partition columns as strings."""
    import polars as pl

    return pl.scan_parquet(table_glob(out_dir, table), hive_partitioning=True,
                           hive_schema={k: pl.String for k in PARTITIONS},
                           missing_columns="insert", extra_columns="ignore")
