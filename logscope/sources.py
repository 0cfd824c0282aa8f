"""Input files: paths, globs, ``-`` for stdin, ``.gz``; bytes to text lines, nothing lost.

Every physical line of an input becomes exactly one row. Bytes that are not UTF-8 are replaced
(U+FFFD) and counted; a very long line is capped at ``MAX_LINE`` characters, also counted.
"""

from __future__ import annotations

import glob
import gzip
import os
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

MAX_LINE = 65536  # characters kept of one line (llama-server DBG bodies can be megabytes)


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


def read_bytes(path: str) -> tuple[bytes, float | None]:
    if path == "-":
        return sys.stdin.buffer.read(), None
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(
            f"{path}: is a directory (give the log files, or a glob like '{path}/*.log')")
    try:
        data = p.read_bytes()
        mtime = p.stat().st_mtime
    except PermissionError as e:
        raise InputError(f"{path}: permission denied") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
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
