"""Parse a fleet's logs with Dask: the parsing core mapped over byte ranges, assembled locally.

    >>> from logscope.fleet.distributed import read_dask
    >>> logs = read_dask(["logs/a.log", "logs/b.log"], scheduler="processes")  # doctest: +SKIP

An optional extra (``pip install 'logscope[dask]'``). The expensive part of an ingest, turning
lines into typed event frames (:func:`logscope.ingest.parse_batch`), is a pure function of a
batch of lines, so each file is cut into byte ranges of about ``block_bytes`` and every range is
parsed by a Dask task (threads, processes, or the workers of a ``dask.distributed`` cluster:
pass ``scheduler=client``). The tasks return narrow Polars frames; the driver puts them in
order (``_row`` and line numbers) and runs the engine models (:func:`logscope.ingest.assemble`),
which need a file's rows together (continuation lines, server runs, clocks, requests). The
frames equal those of :func:`logscope.read` on the same files (tested).

Why Dask rather than Ray Data: Dask is pure Python and a few megabytes, runs in-process with no
daemon (good on a 2-core box and in tests), and the same graph runs on a cluster through
``dask.distributed``; its tasks carry Polars frames as they are. Ray Data's Arrow batches fit
the parsing core as well, but Ray is a large binary install with a per-node raylet, heavy for
what is a map over byte ranges. Paths go through ``fsspec`` (a Dask dependency), so
``s3://...`` or ``gcs://...`` logs work where the matching fsspec plugin is installed; every
worker must be able to open every path.

A byte range holds the lines that *start* in it: a range that begins inside a line skips to the
next one, and its last line is read to its end, so each line is parsed exactly once.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from logscope.ingest import Batch, FileStats, Logs, assemble, parse_batch
from logscope.input import sources

BLOCK_BYTES = 64 * 2**20  # one Dask task parses about this many bytes


@dataclass(frozen=True)
class Block:
    """A byte range of one file; ``end`` None = to the end (compressed files are one block).
    ``name`` is the ``file`` value of its rows (the path; ``path#1`` for a path given twice)."""

    path: str
    name: str
    index: int
    start: int
    end: int | None


@dataclass
class Parsed:
    """What a task returns: the batches of its range, numbered from 0, and line statistics."""

    block: Block
    batches: list[Batch]
    lines: int
    records: int
    bad_utf8: int
    capped: int


def _fs(path: str) -> tuple[Any, str]:
    import fsspec

    fs, _, (p,) = fsspec.get_fs_token_paths(path)
    return fs, p


def plan(paths: list[str], block_bytes: int = BLOCK_BYTES) -> tuple[list[Block], dict]:
    """Byte-range blocks for ``paths`` (globs expanded) and each file's mtime (Unix s or None)."""
    blocks: list[Block] = []
    mtimes: dict[str, float | None] = {}
    for path in sources.expand(paths):
        name = path
        if name in mtimes:  # the same file twice: kept apart, as logscope.read does
            name = f"{path}#{len([k for k in mtimes if k.split('#')[0] == path])}"
        if path == "-":
            raise sources.InputError("-: stdin cannot be read by Dask workers (give files)")
        if "://" not in path:
            sources.check(path)
        fs, p = _fs(path)
        try:
            info = fs.info(p)
        except FileNotFoundError as e:
            raise sources.InputError(f"{path}: no such file") from e
        size = int(info.get("size") or 0)
        mt = info.get("mtime", info.get("LastModified"))
        mtimes[name] = mt.timestamp() if hasattr(mt, "timestamp") else (
            float(mt) if mt is not None else None)
        with fs.open(p, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        if gz or size <= block_bytes:
            blocks.append(Block(path, name, 0, 0, None))
            continue
        for i, start in enumerate(range(0, size, block_bytes)):
            blocks.append(Block(path, name, i, start, min(start + block_bytes, size)))
    return blocks, mtimes


def _range_bytes(block: Block) -> bytes:
    """The bytes of the lines that start in the block's range."""
    fs, p = _fs(block.path)
    with fs.open(p, "rb") as f:
        if block.end is None:
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":
                import gzip

                return gzip.GzipFile(fileobj=f).read()
            return f.read()
        start = block.start
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":  # inside a line: it belongs to the previous range
                f.readline()
            start = f.tell()
        if start >= block.end:
            return b""
        data = f.read(block.end - start)
        if data and not data.endswith(b"\n"):
            data += f.readline()  # the last line, to its end
        return data


def parse_block(block: Block, engines: list[str] | None = None,
                chunk_bytes: int = sources.CHUNK_BYTES) -> Parsed:
    """A Dask task: parse the lines of one byte range (rows and lines numbered from 0)."""
    try:
        data = _range_bytes(block)
    except (OSError, EOFError) as e:
        raise sources.InputError(f"{block.path}: cannot read ({e})") from e
    out = Parsed(block, [], 0, 0, 0, 0)
    for raw_block in sources.blocks(io.BytesIO(data), block.path, chunk_bytes):
        ch = sources.chunk(raw_block)
        if ch.n_lines:
            import polars as pl

            raw = pl.Series("raw", [ch.text], dtype=pl.String).str.split("\n").explode()
            b = parse_batch(raw, block.name, engines, first_line=out.lines,
                            first_row=out.records)
            out.batches.append(b)
            out.records += b.n_records
        out.lines += ch.n_lines
        out.bad_utf8 += ch.bad_utf8
        out.capped += ch.capped
    return out


def read_dask(paths: list[str] | tuple[str, ...] | str, engine: str = "auto", *,
              block_bytes: int = BLOCK_BYTES, scheduler: Any = "processes",
              window: int | None = None) -> Logs:
    """Ingest ``paths`` like :func:`logscope.read`, parsing byte ranges as Dask tasks: the path
    for one huge file (a fleet of files goes to a dataset: ``ingest --dataset --scheduler``).

    ``scheduler`` is any Dask scheduler: ``"processes"`` (default), ``"threads"``,
    ``"synchronous"``, or a ``dask.distributed.Client``.

    Memory on the driver. The ranges are parsed ahead, in parallel, but handed to the engine
    models in order, one at a time, each dropped once modelled: the driver holds the frames it
    returns plus at most ``window`` parsed ranges (default: two per worker; on a
    ``dask.distributed`` cluster the parsed ranges not yet taken wait in the workers' memory),
    not every range's parse and the frames together. The engine models themselves run on the
    driver, carrying their state from one range to the next: that state (open requests per
    slot, the run and the clock of each file) is small, but the models' end of file — building
    ``requests`` from a file's whole event tables — needs all of them, and the returned
    ``Logs`` is those frames, so the driver holding them is the contract of this function. To
    keep a fleet's frames off the driver, write them to a dataset from the workers
    (:func:`logscope.fleet.dataset.ingest_to_dataset` with ``scheduler=``).

        >>> logs = read_dask("logs/**/*.log", scheduler="threads")  # doctest: +SKIP
    """
    try:
        import dask  # noqa: F401 - fail early without the extra
    except ImportError as e:  # pragma: no cover - the extra is not installed
        raise ImportError("read_dask needs Dask: pip install 'logscope[dask]'") from e
    from logscope.classify.grammar import ENGINES, available_engines

    if isinstance(paths, str):
        paths = [paths]
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    engines = available_engines() if engine == "auto" else [engine]
    blocks, mtimes = plan(list(paths), block_bytes)
    files: list[FileStats] = []  # filled as the ranges come; read by assemble at the end

    def batches() -> Iterator[Batch]:
        # in order: _row across the whole input, line numbers within each file
        by_name: dict[str, FileStats] = {}
        row = 0
        for part in _parsed_in_order(blocks, engines, scheduler, window):
            fs = by_name.get(part.block.name)
            if fs is None:
                fs = by_name[part.block.name] = FileStats(part.block.name)
                files.append(fs)
            for b in part.batches:
                yield b.shift(row, fs.lines)
            row += part.records
            fs.lines += part.lines
            fs.bad_utf8 += part.bad_utf8
            fs.capped += part.capped

    return assemble(batches(), files, mtimes, engines)


def _parsed_in_order(blocks: list[Block], engines: list[str], scheduler: Any,
                     window: int | None) -> Iterator[Parsed]:
    """:func:`parse_block` of each block, parsed ahead in parallel, yielded in order."""
    from collections import deque

    if hasattr(scheduler, "submit") and hasattr(scheduler, "gather"):  # a distributed Client
        n = window or 2 * max(len(scheduler.scheduler_info().get("workers", {})), 1)
        pending: deque = deque()
        todo = iter(blocks)
        for b in todo:
            pending.append(scheduler.submit(parse_block, b, engines, pure=False))
            if len(pending) >= n:
                break
        while pending:
            fut = pending.popleft()
            part = fut.result()
            fut.release()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(scheduler.submit(parse_block, nxt, engines, pure=False))
            yield part
        return
    import os
    from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
    from contextlib import nullcontext
    from multiprocessing import get_context

    import dask

    workers = os.cpu_count() or 1
    n = window or 2 * workers
    pool: Executor | None = None
    if scheduler == "processes" and len(blocks) > 1:  # one pool for every window
        pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
    elif scheduler == "threads" and len(blocks) > 1:
        pool = ThreadPoolExecutor(workers)
    with pool if pool is not None else nullcontext():
        for i in range(0, len(blocks), n):
            tasks = [dask.delayed(parse_block, pure=False)(b, engines) for b in blocks[i:i + n]]
            kw = {"pool": pool} if pool is not None else {}
            yield from dask.compute(*tasks, scheduler=scheduler, **kw)


class SchedulerError(ValueError):
    """A scheduler that cannot be used: not installed, malformed, or unreachable (a user
    error: the CLI prints it as one line)."""


LOCAL_SCHEDULERS = ("processes", "threads", "synchronous")
CONNECT_TIMEOUT = "10s"


@contextmanager
def runner(scheduler: Any, work: Callable[[Any], Any]
           ) -> Iterator[Callable[[list], Iterator[Any]]]:
    """A function that runs ``work`` (:func:`logscope.fleet.dataset.ingest_chain`) over units
    of work on ``scheduler`` and yields their results as they complete (the driver merges
    them).

    ``scheduler``: ``"local:N"`` (a ``dask.distributed.LocalCluster`` of N worker processes,
    one thread each, created here and closed on exit), ``"tcp://host:port"`` (or any
    ``proto://`` address: an existing scheduler), a ``dask.distributed.Client`` (used, not
    closed), or one of Dask's local schedulers ``"processes"``, ``"threads"``,
    ``"synchronous"``. Raises :class:`SchedulerError` for a missing package, a malformed value
    or an unreachable scheduler, before any work is sent.

        >>> with runner("local:2", ingest_chain) as run:          # doctest: +SKIP
        ...     records = list(run([[job_a], [job_b, job_b1]]))
    """
    if isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        try:
            import dask
        except ImportError as e:
            raise SchedulerError(
                f"--scheduler {scheduler} needs Dask: pip install 'logscope[dask]'") from e

        def local(units: list) -> Iterator[Any]:
            tasks = [dask.delayed(work, pure=False)(u) for u in units]
            yield from dask.compute(*tasks, scheduler=scheduler)

        yield local
        return
    client, owned = _client(scheduler)
    try:
        def on_cluster(units: list) -> Iterator[Any]:
            from distributed import as_completed

            futures = client.map(work, units, pure=False)
            try:
                for fut in as_completed(futures, loop=client.loop):
                    yield fut.result()
            finally:
                client.cancel(futures)

        yield on_cluster
    finally:
        if owned:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()


def _client(scheduler: Any) -> tuple[Any, bool]:
    """(a ``dask.distributed.Client``, whether it was made here and is to be closed)."""
    if not isinstance(scheduler, str):
        if type(scheduler).__name__ == "Client":
            return scheduler, False
        raise SchedulerError(f"scheduler {scheduler!r}: not a dask.distributed.Client")
    local = re.fullmatch(r"local:(\d+)", scheduler)
    if not local and "://" not in scheduler:
        raise SchedulerError(
            f"--scheduler {scheduler}: give local:N, tcp://host:port, "
            f"{', '.join(LOCAL_SCHEDULERS[:2])}")
    if local and int(local.group(1)) < 1:
        raise SchedulerError(f"--scheduler {scheduler}: N must be at least 1")
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise SchedulerError(
            f"--scheduler {scheduler} needs dask.distributed: "
            "pip install 'logscope[dask]' (or 'dask[distributed]')") from e
    if local:
        import logging

        import dask

        # the workers' statistical profiler samples every thread's stack every 10 ms, under
        # the GIL: off, as nobody looks at a dashboard of a cluster that lives for one ingest
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=int(local.group(1)), threads_per_worker=1,
                                   processes=True, dashboard_address=":0",
                                   silence_logs=logging.ERROR)
        try:
            return Client(cluster, set_as_default=False), True
        except BaseException:
            cluster.close()
            raise
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False), True
    except (OSError, TimeoutError, ValueError) as e:
        raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from e


__all__ = ["Block", "Parsed", "plan", "parse_block", "read_dask", "runner",
           "SchedulerError", "BLOCK_BYTES"]
