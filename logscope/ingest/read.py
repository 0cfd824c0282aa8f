"""Files in, ``Logs`` out: ``read`` (paths), ``read_inputs`` (blocks parsed in threads, assembled
in order as they come) and ``assemble`` (batches parsed elsewhere, e.g. on Dask)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from logscope.classify.grammar import ENGINES, available_engines
from logscope.engines.store import MemoryStore, ParquetStore
from logscope.ingest.assembler import Assembler
from logscope.ingest.batch import Batch, parse_batch
from logscope.ingest.logs import FileStats, Logs
from logscope.input import sources


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
