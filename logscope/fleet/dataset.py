"""Many log files into one hive-partitioned Parquet dataset, incrementally and in parallel.

    >>> from logscope.fleet.dataset import ingest_to_dataset
    >>> ingest_to_dataset(["logs/a.log", "logs/b.log"], "ds/")          # doctest: +SKIP
    {'ingested': 2, 'appended': 0, 'skipped': 0, ...}

Layout (what DuckDB, Spark, Trino or ``pl.scan_parquet(..., hive_partitioning=True)`` read)::

    DIR/<table>/engine=<engine>/host=<host>/date=<YYYY-MM-DD>/part-<file-hash>-<offset>.parquet
    DIR/_manifest.json

* ``engine``: the row's ``engine`` column (``engine_guess`` for ``unrecognized``; ``requests``,
  which has no engine column, takes the file's engine); ``unknown`` when there is none. The
  ``engine`` column also stays inside the files, so readers see the same values either way.
* ``host``: the host of a journald wrapper (``Nov 30 07:00:00 HOST ident[pid]: ...``), else the
  service of a docker compose wrapper (``SERVICE | ...``), else the pod of ``kubectl logs
  --prefix`` (``[pod/POD/container] ...``), else the name of the file's parent
  directory (fleets usually collect logs as ``logs/<host>/server.log``), else ``local``. One host
  per file: the first wrapped line decides. Characters outside ``[A-Za-z0-9._-]`` become ``_``.
* ``date``: the UTC date of ``ts`` (``ts_start`` for ``requests``), ``unknown`` without one.
  Read ``date`` as a string (DuckDB and Polars infer a date type, which ``unknown`` breaks:
  :func:`scan` and ``logscope sql`` pass the partition schema explicitly).

Idempotence. ``_manifest.json`` (written atomically: temp file + rename) records per source file
its identity — realpath, size, SHA-256 of the first 64 KiB (``head_sha256`` over ``head_bytes``
bytes: fewer for a file shorter than that), inode — and how many bytes and lines have been
ingested. A file is the log of a manifest entry when the SHA-256 of its first ``head_bytes``
bytes (the count stored, not its current first 64 KiB, which grow while a file is shorter than
that) is the stored fingerprint and it is at least as large as recorded. Re-ingesting an
unchanged file adds nothing. A file that has grown adds only the complete lines after the old
end: line numbers continue from the old count and ``run`` continues from the last run seen. A
different file at the same path (another fingerprint, or smaller) is ingested as new; its earlier
parts stay. The manifest is updated after each file's Parquet parts are written, and a part's
name is a function of the log and the byte offset it starts at, so an ingest interrupted midway
and run again rewrites the same parts instead of duplicating them. ``DIR/.lock`` (``flock``)
serialises two ingests into the same dataset.

Rotation (``logrotate``). A file whose path is not in the manifest, or holds another log there,
but which is the log of an entry recorded under another path that no longer holds that log (the
path is gone, or has another fingerprint, or is smaller) is that log renamed — ``server.log`` ->
``server.log.1``, with ``create`` or ``copytruncate`` alike. Nothing is added if it has the size
ingested; if it grew (lines written between the last ingest and the rotation), only the new
complete lines are added, exactly as for a grown file. Its manifest entry moves to the new path
(``previous_paths`` lists the realpaths it had). A log keeps its identity across renames:

* ``file`` column: the path the log was *first* ingested under, in all its rows, also in those
  appended after a rename (read from ``server.log.1``, labelled ``server.log``): one log, one
  ``file`` value, its line numbers continuing. The fresh ``server.log`` after the rotation is
  another log under the same ``file`` value, numbered from line 1 again (as any new file at a
  known path); tell the two apart by part name (below: ``part_hash`` in the manifest; read it
  with ``pl.scan_parquet(..., include_file_paths="part")`` or DuckDB's ``filename``).
* part names ``part-<file-hash>-<offset>``: ``<file-hash>`` is fixed per log, computed when it is
  first ingested (from its realpath and fingerprint, salted when another log in the manifest
  already has that hash) and kept through growth and renames, so the renamed log's new parts
  continue its byte offsets and never collide with the parts of the new file at the old path.
* ``host``: appended parts keep the host of the log's first part.

Renamed files are continued before new files are ingested, so the new file at the old path does
not take the renamed log's entry. When the new file is ingested first (a job that ingests only
``server.log``, while ``server.log.1`` comes some other time), the entry it replaces is kept under
``displaced`` in the manifest, and the renamed file is still recognised later. When several files
look like one renamed log, one continues it — the one with the recorded inode (a ``create``
rotation keeps it), then one in the log's directory, then the first given — and the others are
new files.

Copies. A file with the fingerprint of a log still present at its recorded path (``cp``, a hard
link), or two files with one fingerprint in one ingest call that the manifest does not know, are
separate files: each is ingested, under its own ``file``, so the copied rows appear once per
copy. logscope cannot tell a copy from another log that starts the same way (llama-server logs
without a clock often begin with the same banner on every host), and dropping a file because it
looks like another would lose data silently; only a log whose path no longer holds it is
continued under another path. An entry of which nothing was ingested yet (no complete line) is
never continued under another path: there is nothing to continue, and its fingerprint is too weak.

Limitations, honestly:

* only complete lines (ending in ``\\n``) are ingested, so a line being written is picked up by
  the next ingest; a last line without a newline is ingested only once it gets one;
* a request that straddles the old end is split: its start is in the old part, its end in the
  new one, and neither part's ``requests`` row is complete (the per-kind event tables are exact;
  rebuild ``requests`` from them, or re-ingest the whole file into a fresh dataset, when that
  matters). Likewise ``ts`` inferred from a neighbouring line does not cross the boundary, and
  a server restart exactly at the boundary keeps the previous ``run`` number;
* identity is content: a log whose path no longer holds it is continued by any file that starts
  with its fingerprinted bytes (for a file shorter than 64 KiB, all of it) and is at least as
  large — a different log that begins byte for byte like it would be taken for it;
* ``.gz`` files are read whole, and a compressed rotation (``server.log.2.gz``) has other bytes
  than the log it holds: it is ingested as a new file. Rotate with ``delaycompress`` and leave
  ``*.gz`` out of the ingest, so each log is continued through ``server.log.1`` and dropped
  when compressed;
* ``unrecognized`` diagnostics are budgeted per file (not per dataset).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
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
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
PARTITIONS = ("engine", "host", "date")


def identity(path: str | os.PathLike, head_bytes: int = HEAD_BYTES) -> dict[str, Any]:
    """realpath, size, SHA-256 of the first ``head_bytes`` (64 KiB) of a file (``head_bytes`` is
    how many were hashed: less for a file shorter than that) and inode (``[st_dev, st_ino]``)."""
    return _probe(path, head_bytes)[0]


def _probe(path: str | os.PathLike, head_bytes: int = HEAD_BYTES) -> tuple[dict[str, Any], bytes]:
    """:func:`identity` and the head bytes it hashed (to compare shorter stored fingerprints).
    An fsspec URL is its own realpath and has no inode."""
    path = os.fspath(path)
    real = _real(path)
    if _is_url(path):
        with _open_bin(path) as f:
            head = f.read(head_bytes)
        size, _, inode = _stat(path)
    else:
        with open(real, "rb") as f:
            head = f.read(head_bytes)
            st = os.fstat(f.fileno())
        size, inode = st.st_size, [st.st_dev, st.st_ino]
    return ({"realpath": real, "size": size, "head_bytes": len(head),
             "head_sha256": hashlib.sha256(head).hexdigest(), "inode": inode}, head)


def _is_log_of(entry: dict[str, Any], head: bytes, size: int) -> bool:
    """Whether a file (``head``: its first 64 KiB; ``size``) is the log of manifest ``entry``,
    unchanged or grown: the SHA-256 of its first ``entry["head_bytes"]`` bytes — the count hashed
    then, not its current first 64 KiB, which grow while a file is shorter than that — is the
    stored fingerprint, and it is at least as large as recorded. Same path or renamed alike."""
    n = entry.get("head_bytes", HEAD_BYTES)
    return (len(head) >= n and size >= entry["size"]
            and hashlib.sha256(head[:n]).hexdigest() == entry["head_sha256"])


def _safe(value: str | None, default: str) -> str:
    value = _UNSAFE.sub("_", value or "").strip("._")
    return value or default


def _file_hash(ident: dict[str, Any], salt: int = 0) -> str:
    key = f"{ident['realpath']}\0{ident['head_sha256']}" + (f"\0{salt}" if salt else "")
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _part_hash(entry: dict[str, Any]) -> str:
    """The ``<file-hash>`` of a log's part names: fixed when it was first ingested (manifests
    written before ``part_hash`` was recorded: realpath + fingerprint, as then)."""
    return entry.get("part_hash") or _file_hash(entry)


def _new_part_hash(ident: dict[str, Any], taken: set[str]) -> str:
    """``<file-hash>`` for a log ingested for the first time: realpath + fingerprint, salted if
    another log of the manifest has it (a new file at a known path that starts like the old one,
    or a log since renamed away from this path), so its parts never overwrite another log's."""
    salt = 0
    while (h := _file_hash(ident, salt)) in taken:
        salt += 1
    taken.add(h)
    return h


def _is_url(path: str) -> bool:
    return "://" in path


def _real(path: str) -> str:
    """The key of a file in the manifest: its realpath, or a URL (``s3://...``) as given."""
    return path if _is_url(path) else os.path.realpath(path)


def _open_bin(path: str):  # noqa: ANN202 - a binary file object (local, or through fsspec)
    if not _is_url(path):
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    import fsspec

    return fsspec.open(path, "rb").open()


def _stat(path: str) -> tuple[int, float | None, list[int] | None]:
    """(size, mtime, inode ``[st_dev, st_ino]``) of a local file or an fsspec URL (no inode)."""
    if not _is_url(path):
        st = os.stat(path)
        return st.st_size, st.st_mtime, [st.st_dev, st.st_ino]
    import fsspec

    fs, _, (p,) = fsspec.get_fs_token_paths(path)
    info = fs.info(p)  # FileNotFoundError (an OSError) if it is not there
    mt = info.get("mtime", info.get("LastModified", info.get("updated")))
    mtime = mt.timestamp() if hasattr(mt, "timestamp") else (float(mt) if mt else None)
    return int(info.get("size") or 0), mtime, None


def read_part(path: str, start_byte: int = 0, start_line: int = 0, engine: str = "auto",
              run_offset: int = 0, spill: str | os.PathLike | None = None) -> dict[str, Any]:
    """Ingest the complete lines of ``path`` from byte ``start_byte`` on, numbering them from
    ``start_line + 1`` (the part of a grown file); ``run`` is shifted by ``run_offset``.
    ``path`` is a local path or an fsspec URL (``s3://bucket/host/server.log``).

    Built on ``logscope.ingest.read_inputs`` (streamed in blocks, as ``logscope.read``), so the
    frames are those of ``logscope.read`` for the same lines. Returns the tables (lazy frames,
    read one at a time where they are written), the byte offset of the end of the last complete
    line, the number of lines, the host and the per-file stats. With ``spill`` (a directory) the
    tables are streamed there as they are made (``logscope.read(..., out=...)``), so memory
    does not grow with the file.
    """
    import gzip

    import polars as pl

    from logscope.engines.store import ParquetStore
    from logscope.ingest import Input, NoServerLines, read_inputs
    from logscope.input import sources
    from logscope.input.envelope import host_expr

    if not _is_url(path):
        sources.check(path)
    size, mtime, _ = _stat(path)
    with _open_bin(path) as f:
        gz = f.read(2) == b"\x1f\x8b"
    state = {"end": start_byte, "host": None}

    def complete_lines():  # noqa: ANN202 - the blocks of complete lines after start_byte
        with _open_bin(path) as f:
            f.seek(start_byte)
            for block in sources.blocks(f, path):
                if not block.endswith(b"\n"):
                    break  # a line still being written: the next ingest takes it
                state["end"] += len(block)
                yield sources.chunk(block)

    def all_lines():  # noqa: ANN202 - gzip: the whole file, no append
        if not _is_url(path):
            yield from sources.stream(path)[0]  # decompressed as logscope.read does
            return
        with _open_bin(path) as f, gzip.GzipFile(fileobj=f, mode="rb") as g:
            for block in sources.blocks(g, path):
                yield sources.chunk(block)

    def find_host(lines: pl.DataFrame) -> None:
        # the host (journald) or service (docker compose) the envelope decoder reads at the
        # start of a line: the first line that has one names the file's host
        if state["host"] is not None:
            return
        hosts = lines.head(1000).select(host_expr(pl.col("raw"))).to_series().drop_nulls()
        if hosts.len():
            state["host"] = hosts[0]

    if gz:
        chunks = all_lines()
        state["end"] = size
    else:
        chunks = complete_lines()
    try:
        logs = read_inputs([Input(path, chunks, mtime, first_line=start_line)], engine,
                           on_lines=find_host,
                           store=None if spill is None else ParquetStore(Path(spill)))
    except NoServerLines as e:
        logs = e.args[0]
    end, host = state["end"], state["host"]
    if not host:
        parent = os.path.basename(os.path.dirname(_real(path).rstrip("/")))
        host = parent or "local"
    stats = logs.files[0]
    n = stats.lines
    tables = {k: logs.scan(k) for k in logs.tables if not k.startswith("_")}
    if run_offset:
        tables = {k: (v.with_columns(pl.col("run") + run_offset)
                      if "run" in v.collect_schema().names() else v)
                  for k, v in tables.items()}
    last_run = 0
    for lf in tables.values():
        if "run" in lf.collect_schema().names():
            top = lf.select(pl.col("run").max()).collect().item()
            if top is not None:
                last_run = max(last_run, int(top))
    pending = 0 if gz else size - end
    return {"path": path, "tables": tables, "end_byte": end, "lines": n, "host": host,
            "pending_bytes": max(pending, 0),
            "engines": logs.engines, "stats": stats.__dict__, "last_run": last_run}


def ingest_file(job: dict[str, Any]) -> dict[str, Any]:
    """One file's whole ingest, where it runs (this process, a pool process, a Dask worker):
    read, parse and model it (:func:`read_part`), write its Parquet parts into the dataset
    ``job["out"]``, and return only the small record the manifest needs (no frames).

    ``job``: ``path``, ``start_byte``, ``start_line``, ``engine``, ``run_offset``, ``fhash``
    (the part names' ``<file-hash>``), ``out`` (the dataset directory, which every worker must
    be able to write), and ``old``, the manifest entry the file continues (or None).
    """
    # a large file's tables are streamed to a private directory of the dataset, then
    # partitioned into it table by table (memory flat in the file's size); a small file's are
    # finished in memory, which is faster (a fleet is many small files)
    from logscope.engines import store

    spill: Path | None = Path(job["out"]) / f".ingest-{job['fhash']}-{os.getpid()}"
    size = _stat(job["path"])[0]
    if size is None or store.log_bytes(job["path"], size - job["start_byte"]) \
            < store.STREAM_FROM_BYTES:
        spill = None
    try:
        res = read_part(job["path"], job["start_byte"], job["start_line"], job["engine"],
                        job["run_offset"], spill=spill)
        if job["old"] is not None:
            res = _as_log(res, job["old"])
        parts = _write_tables(res, Path(job["out"]), job["fhash"], job["start_byte"])
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)
    return {"index": job["index"], "path": res["path"], "end_byte": res["end_byte"],
            "lines": res["lines"], "host": res["host"], "engines": res["engines"],
            "last_run": res["last_run"], "pending_bytes": res["pending_bytes"], "parts": parts}


def ingest_chain(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The unit of parallel work: the files of one rotation chain (``server.log``,
    ``server.log.1``, ``server.log.2.gz``), one after the other, renamed logs first."""
    return [ingest_file(job) for job in jobs]


_ROTATED = re.compile(r"(\.\d+)?(\.gz)?$")


def chain_key(path: str) -> str:
    """The rotation chain a file belongs to: its path without logrotate's ``.N`` / ``.N.gz``."""
    return _ROTATED.sub("", _real(path), count=1)


def _chains(jobs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for job in jobs:
        by.setdefault(chain_key(job["path"]), []).append(job)
    return list(by.values())


def _local_map(units: list[list[dict[str, Any]]], workers: int | None):  # noqa: ANN202
    """The records of ``units`` run in this process or a spawned process pool (``workers``);
    yields each unit's records as it completes. If the pool breaks (a worker killed, or spawn
    cannot re-import a ``__main__`` read from stdin), the remaining units run here."""
    n = workers or min(os.cpu_count() or 1, len(units))
    if n <= 1 or len(units) <= 1:
        yield from map(ingest_chain, units)
        return
    from concurrent.futures import as_completed

    # spawn: forking a process that already runs Polars' thread pool can deadlock
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(ingest_chain, u): i for i, u in enumerate(units)}
        done: set[int] = set()
        try:
            for fut in as_completed(futures):
                done.add(futures[fut])
                yield fut.result()
        except BrokenProcessPool:
            warnings.warn("logscope: the worker processes failed; ingesting the remaining files "
                          "in this process", RuntimeWarning, stacklevel=3)
            for i, u in enumerate(units):
                if i not in done:
                    yield ingest_chain(u)
        finally:
            for fut in futures:
                fut.cancel()


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
    for name, lf in res["tables"].items():
        schema = lf.collect_schema()
        if "engine" in schema:
            eng = pl.col("engine")
        elif "engine_guess" in schema:
            eng = pl.col("engine_guess")
        else:
            eng = pl.lit(file_engine, pl.String)
        ts = next((c for c in ("ts", "ts_start") if c in schema), None)
        date = (pl.col(ts).dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d")
                if ts and isinstance(schema[ts], pl.Datetime) and schema[ts].time_zone
                else pl.col(ts).dt.strftime("%Y-%m-%d") if ts else pl.lit(None, pl.String))
        keyed = lf.with_columns(eng.cast(pl.String).fill_null("unknown").alias("_p_engine"),
                                date.fill_null("unknown").alias("_p_date"))
        # the partitions in order of first appearance; each written by a streaming pass over
        # the table (never the whole table in memory)
        keys = keyed.select("_p_engine", "_p_date").unique(maintain_order=True).collect()
        for e, d in keys.iter_rows():
            target = (out / name / f"engine={_safe(e, 'unknown')}" / f"host={res['host']}"
                      / f"date={d}")
            target.mkdir(parents=True, exist_ok=True)
            dest = target / f"part-{fhash}-{offset}.parquet"
            tmp = target / f".{dest.name}.tmp"
            part = keyed if keys.height == 1 else keyed.filter(
                (pl.col("_p_engine") == e) & (pl.col("_p_date") == d))
            part.drop("_p_engine", "_p_date").sink_parquet(tmp)
            os.replace(tmp, dest)
            written.append(str(dest.relative_to(out)))
    return written


def ingest_to_dataset(paths: list[str] | tuple[str, ...] | str, out_dir: str | os.PathLike,
                      engine: str = "auto", workers: int | None = None,
                      scheduler: Any = None) -> dict[str, Any]:
    """Ingest log files (paths, globs or fsspec URLs) into the Parquet dataset ``out_dir`` (see
    the module docstring). The unit of work is a file with its rotation chain (``server.log``,
    ``server.log.1``, ``server.log.2.gz``): one task reads, parses and models it and writes its
    own Parquet parts; only a small record per file comes back, and this process, the sole
    writer of ``_manifest.json`` (under ``DIR/.lock``), merges them.

    Where the tasks run: ``scheduler=None`` (default) in a process pool of ``workers`` (default
    ``min(cpu count, chains)``; 1 runs in this process); else on Dask
    (:func:`logscope.fleet.distributed.runner`): ``"local:N"`` (a ``LocalCluster`` of N worker
    processes, started and closed here), ``"tcp://host:port"`` (an existing scheduler), a
    ``dask.distributed.Client``, or ``"processes"`` / ``"threads"`` (Dask's local schedulers).
    Workers must be able to read the logs and write ``out_dir`` (a shared filesystem on a
    cluster). Pool and ``local:N`` workers are spawned (not forked: Polars' threads do not
    survive a fork), so a script calling this needs the usual ``if __name__ == "__main__":``
    guard.

    Returns ``{"ingested": new files, "appended": grown files, "skipped": unchanged files,
    "renamed": files found to be a recorded log under a new name (also counted as appended or
    skipped; their per-file detail has ``renamed_from``, the path the log was recorded under),
    "lines": lines added, "parts": Parquet files written, "pending_bytes": bytes of unfinished
    last lines (no newline yet) left for the next ingest, "files": [per-file detail]}``.

        >>> ingest_to_dataset("logs/**/*.log", "ds/", scheduler="local:2")  # doctest: +SKIP
        {'ingested': 144, 'appended': 0, 'skipped': 0, 'renamed': 0, ...}
    """
    from contextlib import nullcontext

    from logscope.classify.grammar import ENGINES

    if isinstance(paths, str):
        paths = [paths]
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    if scheduler is not None:
        from logscope.fleet.distributed import runner

        # a bad or unreachable scheduler fails before any work
        where = runner(scheduler, ingest_chain)
    else:
        where = nullcontext(lambda units: _local_map(units, workers))
    out = Path(out_dir).absolute()
    out.mkdir(parents=True, exist_ok=True)
    with where as run, open(out / ".lock", "w") as lock:
        # one writer at a time: a second ingest into the same dataset waits for the first
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no lock (do not run two ingests into one dataset)
            pass
        return _ingest_locked(paths, out, engine, run)


def _expand(paths: list[str]) -> list[str]:
    """Local paths and globs as :func:`logscope.input.sources.expand`; fsspec URLs (globs too)."""
    from logscope.input import sources

    out: list[str] = []
    for p in paths:
        if not _is_url(p):
            out.extend(sources.expand([p]))
            continue
        import fsspec

        fs, _, hits = fsspec.get_fs_token_paths(p)
        proto = p.split("://", 1)[0]
        hits = [h if "://" in h else f"{proto}://{h}" for h in sorted(hits)]
        if not hits or not all(fs.isfile(h) for h in hits):
            raise sources.InputError(f"{p}: no such file" if not _glob(p) else
                                     f"{p}: no file matches this pattern")
        out.extend(hits)
    return out


def _glob(p: str) -> bool:
    return any(c in p for c in "*?[")


def _ingest_locked(paths: list[str] | tuple[str, ...], out: Path, engine: str,
                   run: Any) -> dict[str, Any]:
    from logscope.input import sources

    manifest = _load_manifest(out)
    files: dict[str, Any] = manifest.setdefault("files", {})
    displaced: dict[str, Any] = manifest.setdefault("displaced", {})

    report = {"ingested": 0, "appended": 0, "skipped": 0, "renamed": 0, "lines": 0, "parts": 0,
              "pending_bytes": 0, "files": []}
    probes: list[tuple[str, dict[str, Any], bytes]] = []
    seen: set[str] = set()
    for p in _expand(list(paths)):
        if p == "-":
            raise sources.InputError("-: stdin cannot be ingested into a dataset (give files)")
        if not _is_url(p):
            if not os.path.exists(p):
                raise sources.InputError(f"{p}: no such file")
            if os.path.isdir(p):
                raise sources.InputError(f"{p}: is a directory (give the log files, or a glob)")
        try:
            ident, head = _probe(p)
        except OSError as e:
            raise sources.InputError(f"{p}: cannot read ({e.strerror or e})") from e
        if ident["realpath"] in seen:  # the same file twice in one call
            continue
        seen.add(ident["realpath"])
        probes.append((p, ident, head))

    # the log each file continues: the one recorded at its path (unchanged or grown), else one
    # recorded under another path that no longer holds it (renamed), else none (a new log)
    claims: dict[int, dict[str, Any]] = {}
    for i, (_, ident, head) in enumerate(probes):
        old = files.get(ident["realpath"])
        if old is not None and _is_log_of(old, head, ident["size"]):
            claims[i] = old
    renamed = _find_renamed(probes, claims, files, displaced)
    claims.update(renamed)

    taken = {_part_hash(e) for e in (*files.values(), *displaced.values())}
    moves: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    jobs: list[dict[str, Any]] = []
    plan: list[dict[str, Any]] = []
    for i, (p, ident, _) in enumerate(probes):
        old = claims.get(i)
        was = {"renamed_from": old["path"]} if i in renamed else {}
        if old is not None and (ident["size"] == old["size"]
                                or old.get("bytes", 0) >= ident["size"]):
            if was:  # renamed, nothing new: only the manifest entry moves
                moves.append((p, ident, old))
                report["renamed"] += 1
            report["skipped"] += 1
            report["files"].append({"file": p, "action": "skipped", "lines": 0, **was})
            continue
        if old is not None:
            start_byte, start_line = old["bytes"], old["lines"]
            run_offset = max(old.get("last_run", 1) - 1, 0)
            action, fhash = "appended", _part_hash(old)
        else:
            start_byte, start_line, run_offset, action = 0, 0, 0, "ingested"
            fhash = _new_part_hash(ident, taken)
        # what the task needs of the entry it continues (the label, the host, the line count)
        carried = None if old is None else {k: old[k] for k in ("path", "file", "host", "lines")
                                            if k in old}
        jobs.append({"path": p, "start_byte": start_byte, "start_line": start_line,
                     "engine": engine, "run_offset": run_offset, "fhash": fhash,
                     "out": str(out), "old": carried, "renamed": bool(was)})
        plan.append({"ident": ident, "action": action, "old": old, "was": was})

    for p, ident, old in moves:
        _record(manifest, ident["realpath"], {**old, **_renamed(old, p, ident)}, old)
    if moves:
        _write_atomic(out / MANIFEST, json.dumps(manifest, indent=1).encode())
    # renamed logs first: their entries leave the old paths before new files land there (an
    # interrupted run then still finds them by fingerprint)
    order = sorted(range(len(jobs)), key=lambda i: not jobs[i]["renamed"])
    for n, i in enumerate(order):
        jobs[i]["index"] = n
    jobs, plan = [jobs[i] for i in order], [plan[i] for i in order]

    details: dict[int, dict[str, Any]] = {}
    for records in (run(_chains(jobs)) if jobs else ()):
        for res in records:  # a chain's records, merged as each chain completes
            info = plan[res["index"]]
            ident, old = info["ident"], info["old"]
            entry = {
                "path": res["path"], "realpath": ident["realpath"],
                "file": old.get("file", old["path"]) if old else res["path"],
                "part_hash": jobs[res["index"]]["fhash"], "inode": ident["inode"],
                "size": ident["size"], "head_bytes": ident["head_bytes"],
                "head_sha256": ident["head_sha256"],
                "bytes": res["end_byte"], "lines": (old["lines"] if old else 0) + res["lines"],
                "last_run": max(res["last_run"], old.get("last_run", 0) if old else 0),
                "host": res["host"], "engines": sorted(
                    set(res["engines"]) | set(old.get("engines", []) if old else [])),
                "parts": (old.get("parts", []) if old else []) + res["parts"],
                "previous_paths": _renamed(old, res["path"], ident)["previous_paths"]
                if old else [],
                "ingested_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            # the size we saw is the size we record only if we read up to it; a partial last
            # line is left for next time (the size check then sees growth)
            entry["size"] = entry["bytes"] if res["end_byte"] < ident["size"] else ident["size"]
            _record(manifest, ident["realpath"], entry, old)
            action = info["action"]
            if action == "appended" and res["lines"] == 0:
                action = "skipped"  # grew by a partial line only: nothing to add yet
            report[action] += 1
            report["renamed"] += bool(info["was"])
            report["lines"] += res["lines"]
            report["parts"] += len(res["parts"])
            report["pending_bytes"] += res["pending_bytes"]
            details[res["index"]] = {"file": res["path"], "action": action,
                                     "lines": res["lines"], **info["was"]}
        # after each chain: an interrupted run loses at most the chains in flight (their parts,
        # named by log and offset, are rewritten by the next run, not duplicated)
        _write_atomic(out / MANIFEST, json.dumps(manifest, indent=1).encode())
    report["files"].extend(details[i] for i in sorted(details))
    return report


def _find_renamed(probes: list[tuple[str, dict[str, Any], bytes]], claims: dict[int, Any],
                  files: dict[str, Any], displaced: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The files (by index in ``probes``) that are a log recorded under another path which no
    longer holds it, and that log's entry (module docstring: Rotation). An entry continues at
    most one file: the one with its recorded inode, then one in its directory, then the first."""
    index: dict[tuple[int, str], list[tuple[int, dict[str, Any]]]] = {}
    claimed = {id(e) for e in claims.values()}
    for order, e in enumerate((*files.values(), *displaced.values())):
        # nothing ingested (no complete line yet): nothing to continue, and a weak fingerprint
        if e.get("bytes", 0) > 0 and id(e) not in claimed:
            index.setdefault((e.get("head_bytes", HEAD_BYTES), e["head_sha256"]), []).append(
                (order, e))
    if not index or len(claims) == len(probes):
        return {}
    counts = sorted({n for n, _ in index})
    here = {ident["realpath"]: (ident, head) for _, ident, head in probes}
    away = {id(e) for e in displaced.values()}  # their path already holds another file

    def left(e: dict[str, Any]) -> bool:  # its recorded path no longer holds the log
        if id(e) not in away:
            try:
                ident, head = here.get(e["realpath"]) or _probe(e["realpath"])
            except OSError:
                ident, head = None, b""
            if ident is None or not _is_log_of(e, head, ident["size"]):
                away.add(id(e))
        return id(e) in away

    pairs = []
    for i, (_, ident, head) in enumerate(probes):
        if i in claims:
            continue
        folder = os.path.dirname(ident["realpath"])
        sha, done = hashlib.sha256(), 0
        for n in counts:  # the SHA-256 of the first n bytes, for each stored head_bytes n
            if n > len(head):
                break
            sha.update(head[done:n])
            done = n
            for order, e in index.get((n, sha.copy().hexdigest()), ()):
                if e["realpath"] == ident["realpath"] or e["size"] > ident["size"] or not left(e):
                    continue
                pairs.append((e.get("inode") != ident["inode"],
                              os.path.dirname(e["realpath"]) != folder, i, order, e))
    found: dict[int, dict[str, Any]] = {}
    used: set[int] = set()
    for *_, i, _order, e in sorted(pairs, key=lambda pair: pair[:4]):
        if i not in found and id(e) not in used:
            found[i] = e
            used.add(id(e))
    return found


def _renamed(old: dict[str, Any], path: str, ident: dict[str, Any]) -> dict[str, Any]:
    """What changes in a log's manifest entry when it is found at ``path`` (maybe renamed): the
    path, realpath and inode; the ``file`` label and ``part_hash`` stay (set if missing: older
    manifests); ``previous_paths`` gains the old realpath."""
    prev = list(old.get("previous_paths", []))
    if old["realpath"] != ident["realpath"]:
        prev.append(old["realpath"])
    return {"path": path, "realpath": ident["realpath"], "inode": ident["inode"],
            "file": old.get("file", old["path"]), "part_hash": _part_hash(old),
            "previous_paths": prev}


def _record(manifest: dict[str, Any], key: str, entry: dict[str, Any],
            old: dict[str, Any] | None) -> None:
    """Record ``entry`` at ``key``: the entry it continues (``old``) leaves its place; a different
    log recorded at ``key`` (the file there was replaced) is kept under ``displaced``, so its
    renamed file, ingested later, still continues it."""
    files, displaced = manifest["files"], manifest["displaced"]
    if old is not None:
        if files.get(old["realpath"]) is old:
            del files[old["realpath"]]
        if displaced.get(_part_hash(old)) is old:
            del displaced[_part_hash(old)]
    occupant = files.get(key)
    if occupant is not None and occupant is not old and occupant.get("bytes", 0) > 0:
        displaced[_part_hash(occupant)] = occupant
    files[key] = entry


def _as_log(res: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The part of a log seen before (grown, maybe renamed) as a part of that log: its rows keep
    the log's ``file`` label (the path it was first ingested under) and its host."""
    import polars as pl

    label = old.get("file", old["path"])
    tables = res["tables"]
    if label != res["path"]:
        tables = {k: (v.with_columns(pl.lit(label).cast(v.collect_schema()["file"]).alias("file"))
                      if "file" in v.collect_schema().names() else v) for k, v in tables.items()}
    host = old.get("host") if old.get("lines") else None
    return {**res, "tables": tables, "host": host or res["host"]}


def table_glob(out_dir: str | os.PathLike, table: str) -> str:
    return str(Path(out_dir) / table / "**" / "*.parquet")


def tables_in(out_dir: str | os.PathLike) -> list[str]:
    """The tables of a dataset (directories holding at least one partitioned Parquet file)."""
    out = Path(out_dir)
    return sorted(d.name for d in out.iterdir()
                  if d.is_dir() and not d.name.startswith((".", "_")) and "=" not in d.name
                  and any(d.glob("engine=*/host=*/date=*/*.parquet")))


def _parts(out_dir: str | os.PathLike, table: str):  # noqa: ANN202 - a polars DataFrame
    """The Parquet files of one table and their partition values (``path``, ``engine``,
    ``host``, ``date``, all strings), read from the directory names alone."""
    import polars as pl

    rows = []
    for f in sorted((Path(out_dir) / table).glob("engine=*/host=*/date=*/*.parquet")):
        d, h, e = f.parent, f.parent.parent, f.parent.parent.parent
        rows.append((str(f), e.name[len("engine="):], h.name[len("host="):],
                     d.name[len("date="):]))
    return pl.DataFrame(rows, schema={"path": pl.String, **{k: pl.String for k in PARTITIONS}},
                        orient="row")


def _where(where: Any):  # noqa: ANN202 - (polars Expr | None, whether it reads partitions only)
    """``where`` (a SQL condition, ``"host = 'gpu3' AND date >= '2026-11-01'"``, or a Polars
    expression) as an expression, and whether it names only partition columns."""
    import polars as pl

    if where is None:
        return None, True
    expr = pl.sql_expr(where) if isinstance(where, str) else where
    return expr, set(expr.meta.root_names()) <= set(PARTITIONS)


def scan(out_dir: str | os.PathLike, table: str, where: Any = None,
         partitions: bool = True):  # noqa: ANN201 - polars imported lazily
    """A LazyFrame over one table of the dataset; the partition columns are strings.

    Each part is scanned on its own and the scans are stacked by column name
    (``diagonal_relaxed``), so a column that only some parts have (formats differ between
    server versions) is kept, null elsewhere. ``where`` (SQL or a Polars expression) that names
    only ``engine``, ``host``, ``date`` selects the parts by their directory names before any
    file is opened; other conditions are pushed into the scans. ``partitions=False`` leaves out
    the partition columns that the files do not hold themselves (``host``, ``date``; ``engine``
    for ``requests``), giving the columns of :func:`logscope.read`'s table.

        >>> scan("ds/", "requests", "host = 'gpu3'").collect()  # doctest: +SKIP
    """
    import polars as pl

    expr, on_parts = _where(where)
    parts = _parts(out_dir, table)
    if expr is not None and on_parts:
        parts = parts.filter(expr)
    scans = []
    for path, *values in parts.iter_rows():
        lf = pl.scan_parquet(path)
        have = lf.collect_schema().names()
        add = [pl.lit(v, pl.String).alias(k) for k, v in zip(PARTITIONS, values, strict=True)
               if k not in have and (partitions or not on_parts)]
        scans.append(lf.with_columns(add) if add else lf)
    if not scans:
        schema = {k: pl.String for k in PARTITIONS} if partitions else {}
        return pl.LazyFrame(schema=schema)
    lf = pl.concat(scans, how="diagonal_relaxed")
    if expr is not None and not on_parts:
        lf = lf.filter(expr)
    if not partitions and not on_parts:  # the partition columns were only for the filter
        lf = lf.drop([k for k in PARTITIONS if k not in _file_columns(parts["path"][0])])
    return lf


def _file_columns(path: str) -> list[str]:
    import polars as pl

    return list(pl.read_parquet_schema(path))


def scan_all(out_dir: str | os.PathLike, where: Any = None) -> dict[str, Any]:
    """Every table of the dataset as a LazyFrame (:func:`scan`), by name; ``where`` applies to
    each. This is ``logscope.scan``.

        >>> tables = scan_all("ds/", "host = 'gpu3' AND date >= '2026-11-01'")  # doctest: +SKIP
        >>> tables["requests"].group_by("date").agg(pl.col("decode_tps").median()).collect()
    """
    return {t: scan(out_dir, t, where) for t in _tables_of(out_dir)}


def _tables_of(out_dir: str | os.PathLike) -> list[str]:
    """:func:`tables_in`, or an ``InputError`` if ``out_dir`` is not a dataset."""
    if not Path(out_dir).is_dir() or (
            not (Path(out_dir) / MANIFEST).exists() and not tables_in(out_dir)):
        from logscope.input import sources

        raise sources.InputError(f"{out_dir}: not a logscope dataset (no {MANIFEST})")
    return tables_in(out_dir)


_ORDER = {"requests": ("file", "run", "t_start", "task", "slot")}


def load(out_dir: str | os.PathLike, where: Any = None):  # noqa: ANN201 - logscope.Logs
    """The dataset (its rows matching ``where``) as the ``Logs`` of :func:`logscope.read`, for
    ``report``, ``plot`` and ``compare``: the tables with the columns ``logscope.read`` gives
    them, in its row order (``file``, ``line``; requests by file, run, start), and one
    ``FileStats`` per log file (its ``lines``: the lines ingested, from the manifest). No log
    is read again.

        >>> logs = load("ds/", "host = 'gpu3'")                       # doctest: +SKIP
        >>> build_report([logs])                                      # doctest: +SKIP
    """
    import polars as pl

    from logscope.classify.grammar import ENGINES
    from logscope.ingest import FileStats, Logs

    tables = {}
    for t in _tables_of(out_dir):
        df = scan(out_dir, t, where, partitions=False).collect()
        keys = [c for c in _ORDER.get(t, ("file", "line")) if c in df.columns]
        tables[t] = df.sort(keys, nulls_last=True, maintain_order=True) if keys else df
    names: set[str] = set()
    for df in tables.values():
        if "file" in df.columns:
            names.update(df.get_column("file").drop_nulls().unique().to_list())
    manifest = _load_manifest(Path(out_dir))
    lines: dict[str, int] = {}
    engines: set[str] = set()
    for e in (*manifest.get("files", {}).values(), *manifest.get("displaced", {}).values()):
        label = e.get("file", e["path"])
        if label in names:
            lines[label] = lines.get(label, 0) + e.get("lines", 0)
            engines.update(e.get("engines", []))
    lc = tables.get("lines_classified")
    if lc is not None and "engine" in lc.columns:
        engines &= set(lc.filter(pl.col("class") == "event")["engine"].unique().to_list())
    files = [FileStats(n, lines=lines.get(n, 0)) for n in sorted(names)]
    return Logs(tables, files, [e for e in ENGINES if e in engines])
