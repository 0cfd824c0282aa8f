"""Input files: paths, globs, ``-`` for stdin, ``.gz``; bytes to text lines, nothing lost.

Every physical line of an input becomes exactly one row. Bytes that are not UTF-8 are replaced
(U+FFFD) and counted; a very long line is capped at ``MAX_LINE`` characters, also counted.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_LINE = 65536  # characters kept of one line (llama-server DBG bodies can be megabytes)
CHUNK_BYTES = 16 * 2**20  # batch ingest reads a file in blocks of about this many bytes


class InputError(Exception):
    """A user error about an input (missing file, directory, unreadable, corrupt .gz)."""

    exit_code = 2


@dataclass
class Source:
    name: str  # as the user gave it (or '-')
    text: str  # decoded text, lines joined by \n, CR before \n removed
    mtime: float | None  # file modification time (Unix seconds), None for stdin
    n_lines: int
    bad_utf8: int  # lines that held bytes which are not UTF-8
    capped: int  # lines longer than MAX_LINE, cut


def expand(paths: list[str] | tuple[str, ...]) -> list[str]:
    """Expand globs (``logs/**/*.log``); a literal path is kept as given so errors name it."""
    out: list[str] = []
    for p in paths:
        if p != "-" and glob.has_magic(p):
            hits = sorted(glob.glob(p, recursive=True))
            hits = [h for h in hits if os.path.isfile(h)]
            if not hits:
                raise InputError(f"{p}: no file matches this pattern")
            out.extend(hits)
        else:
            out.append(p)
    return out


class Chunk:
    """Complete lines of a file (one block of a streamed read): the raw bytes, their line count,
    and, when asked, the lines — as one Polars Series (:meth:`lines`, vectorised: what ingest
    reads) or as text (:attr:`text`, per-line consumers). Both decode and normalise alike."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n_bytes = len(data)  # raw bytes this block covered (compressed: decompressed bytes)
        # as :func:`normalize` counts: one line per \n, and a last one without it
        self.n_lines = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        self._text: tuple[str, int, int] | None = None

    def _decoded(self) -> tuple[str, int, int]:
        if self._text is None:
            text, bad = decode(self.data)
            text, _n, capped = normalize(text)
            self._text = (text, bad, capped)
        return self._text

    @property
    def text(self) -> str:  # lines joined by \n
        return self._decoded()[0]

    @property
    def bad_utf8(self) -> int:
        return self._decoded()[1]

    @property
    def capped(self) -> int:
        return self._decoded()[2]

    def lines(self):  # noqa: ANN201 - polars is imported lazily
        """(lines as a Polars String Series, lines with bad UTF-8, capped lines): the lines of
        :attr:`text`, split, decoded and normalised by Polars (no Python string per line)."""
        import polars as pl

        data = self.data
        if not data:
            return pl.Series("raw", [], dtype=pl.String), 0, 0
        replaced = False
        try:
            whole = pl.Series("raw", [data], dtype=pl.Binary).cast(pl.String)
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
            whole = pl.Series("raw", [data.decode("utf-8", errors="replace")], dtype=pl.String)
            replaced = True
        lines = whole.str.split("\n").explode()
        if data.endswith(b"\n"):
            lines = lines.head(-1)
        if b"\r\n" in data:  # CRLF -> LF; a lone CR (the last line's, or mid-line) is kept
            crlf = lines.str.strip_suffix("\r")
            lines = crlf if data.endswith(b"\n") else pl.concat([crlf.head(-1), lines.tail(1)])
        if b"\x00" in data:
            lines = lines.str.replace_all("\x00", "", literal=True)
        # as :func:`decode` counts: the lines holding a replacement, when bytes were replaced
        bad = int(lines.str.contains("\ufffd", literal=True).sum()) if replaced else 0
        capped = 0
        # a line of at most MAX_LINE bytes has at most as many characters: they are counted only
        # when some line is longer in bytes
        if len(data) > MAX_LINE and (lines.str.len_bytes() > MAX_LINE).any():
            long = lines.str.len_chars() > MAX_LINE
            capped = int(long.sum())
            if capped:
                lines = pl.select(pl.when(long).then(lines.str.slice(0, MAX_LINE))
                                  .otherwise(lines)).to_series()
        return lines.rename("raw"), bad, capped


def check(path: str) -> None:
    """Raise ``InputError`` now if ``path`` cannot be read (before a long ingest reaches it)."""
    if path == "-":
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(
            f"{path}: is a directory (give the log files, or a glob like '{path}/*.log')")
    if not os.access(p, os.R_OK):
        raise InputError(f"{path}: permission denied")


def _open(path: str) -> tuple[BinaryIO, float | None, int | None]:
    """(binary stream, mtime, size on disk) of an input; ``.gz`` content is decompressed as it
    is read. Raises ``InputError`` for what the user must fix."""
    if path == "-":
        return sys.stdin.buffer, None, None
    check(path)
    p = Path(path)
    try:
        f: BinaryIO = open(p, "rb")  # noqa: SIM115 - handed to the caller
        st = os.fstat(f.fileno())
    except PermissionError as e:
        raise InputError(f"{path}: permission denied") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    if f.read(2) == b"\x1f\x8b":
        f.seek(0)
        return gunzip(f), st.st_mtime, st.st_size
    f.seek(0)
    return f, st.st_mtime, st.st_size


try:
    from isal.isal_zlib import error as _isal_error
except ImportError:  # pragma: no cover
    _isal_error = zlib.error
INFLATE_ERRORS = (OSError, EOFError, zlib.error, _isal_error)  # a corrupt or cut .gz


def gunzip(f: BinaryIO) -> BinaryIO:
    """A binary stream of a gzip file's content, inflated as it is read: by ISA-L
    (``python-isal``, about 2.5x zlib's speed) where it is installed, else by zlib."""
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal is a dependency; a platform without a wheel
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return igzip.IGzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]


def blocks(stream: BinaryIO, name: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Blocks of complete lines (each ends in \\n but perhaps the very last), about
    ``chunk_bytes`` each; a line longer than a block extends its block. Splitting on \\n is safe
    for UTF-8: no multi-byte sequence holds that byte."""
    carry = b""
    while True:
        try:
            data = stream.read(chunk_bytes)
        except INFLATE_ERRORS as e:
            raise InputError(f"{name}: corrupt gzip file ({e})") from e
        if not data:
            break
        data = carry + data if carry else data
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 1:]
        yield data[:cut + 1]
    if carry:
        yield carry


def chunk(data: bytes) -> Chunk:
    """One block of complete lines (decoded and normalised when its lines are asked for)."""
    return Chunk(data)


def stream(path: str, chunk_bytes: int = CHUNK_BYTES) -> tuple[Iterator[Chunk], float | None,
                                                                int | None]:
    """(chunks, mtime, size) of an input read in bounded blocks; the lines of the chunks, in
    order, are the lines of ``load(path)``. The file is opened when the first chunk is asked
    for (a glob of thousands of files holds one open at a time)."""
    mtime = size = None
    if path != "-":
        check(path)
        try:
            st = os.stat(path)
        except OSError as e:
            raise InputError(f"{path}: cannot read ({e.strerror})") from e
        mtime, size = st.st_mtime, st.st_size

    def gen() -> Iterator[Chunk]:
        f, _, _ = _open(path)
        try:
            for block in blocks(f, path, chunk_bytes):
                yield chunk(block)
        finally:
            if f is not sys.stdin.buffer:
                f.close()

    return gen(), mtime, size


def read_bytes(path: str) -> tuple[bytes, float | None]:
    if path == "-":
        return sys.stdin.buffer.read(), None
    check(path)
    p = Path(path)
    try:
        data = p.read_bytes()
        mtime = p.stat().st_mtime
    except PermissionError as e:
        raise InputError(f"{path}: permission denied") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip(io.BytesIO(data)).read()
        except INFLATE_ERRORS as e:
            raise InputError(f"{path}: corrupt gzip file ({e})") from e
    return data, mtime


def decode(data: bytes) -> tuple[str, int]:
    """UTF-8 decode with replacement; returns the text and how many lines had bad bytes."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    bad = sum(1 for line in text.split("\n") if "\ufffd" in line)
    return text, bad


def normalize(text: str) -> tuple[str, int, int]:
    """Split into lines: CRLF -> LF, lone CR kept (llama-server's \\r summary lines), NUL removed,
    long lines capped. Returns (text, n_lines, capped)."""
    if not text:  # an empty input has no line; "\n" or "\x00" alone is one (empty) line
        return "", 0, 0
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if text.endswith("\n"):  # before removing NUL: a last line of only NUL is still a line
        text = text[:-1]
    if "\x00" in text:
        text = text.replace("\x00", "")
    lines = text.split("\n")
    capped = 0
    if max(map(len, lines)) > MAX_LINE:
        for i, line in enumerate(lines):
            if len(line) > MAX_LINE:
                lines[i] = line[:MAX_LINE]
                capped += 1
        text = "\n".join(lines)
    return text, len(lines), capped


def load(path: str) -> Source:
    data, mtime = read_bytes(path)
    text, bad = decode(data)
    text, n, capped = normalize(text)
    return Source(path, text, mtime, n, bad, capped)
