"""``--state FILE``: where a follower stands, persisted so a restart resumes exactly there.

The file is one JSON object::

    {"version": 1, "path": "/abs/server.log", "dev": 2049, "ino": 1234,
     "head_sha256": "...", "head_len": 1024, "tail_sha256": "...", "tail_len": 256,
     "offset": 81234, "line": 912, "grammars": {"llama-server": "c9bd...", ...},
     "runs": {"llama": {"0": [812.5, 3, 2]}, "config": {}},
     "saved_at": "2026-01-01T00:00:00Z"}

``runs`` is the server-run counter at that line (:class:`logscope.follow.runs.Runs`), so a
resumed follower numbers runs on as ``logscope ingest`` does and sees a restart that happens
right after the saved line.

``offset``/``line`` are just after the last line whose event the consumer finished with. The
file the offset belongs to is identified by device/inode *and* by a content fingerprint (sha256
of its first ≤ 1 KiB and of the ≤ 256 bytes before the offset): on resume the followed name is
checked first; if its content does not match (rotated, copytruncated, replaced while no follower
ran) the sibling files (``server.log.1``, ``server.log-2025...``, a copytruncate copy) are
searched by inode and fingerprint and the old file is finished before the new one is read
from its start (:func:`logscope.follow.tail.find_rotated`).

Writes are atomic (a temporary file in the same directory, fsync, rename) and happen every
``every_lines`` committed lines or ``every_seconds`` seconds (whichever first, checked as lines
are committed and while idle), when the follower switches files, and on exit (the CLI turns
SIGINT/SIGTERM into a clean stop, so the final save always happens).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from logscope.follow.tail import Position

VERSION = 1


class StateError(Exception):
    exit_code = 2


def load(file: str) -> tuple[Position, dict[str, str]] | None:
    """(position, grammar hashes) from a state file; None if it does not exist."""
    got = load_all(file)
    return None if got is None else (got[0], got[1])


def load_all(file: str) -> tuple[Position, dict[str, str], dict[str, Any]] | None:
    """(position, grammar hashes, the whole saved object) from a state file."""
    try:
        with open(file, encoding="utf-8") as f:
            d = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise StateError(f"cannot read state file {file}: {e}") from e
    if not isinstance(d, dict) or d.get("version") != VERSION or "offset" not in d:
        raise StateError(f"{file} is not a logscope follow state file (version {VERSION})")
    return Position.from_dict(d), dict(d.get("grammars") or {}), d


def write_atomic(file: str, obj: dict[str, Any]) -> None:
    d = os.path.dirname(os.path.abspath(file))
    fd, tmp = tempfile.mkstemp(prefix=".logscope-state-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class StateStore:
    """Saves a follower's position (see module doc). Pass as ``Follower(store=...)``."""

    def __init__(self, file: str, grammars: dict[str, str] | None = None,
                 every_lines: int = 1000, every_seconds: float = 1.0) -> None:
        self.file = file
        self.grammars = dict(grammars or {})
        self.every_lines = every_lines
        self.every_seconds = every_seconds
        self._last_line: tuple[int | None, int] | None = None  # (inode, offset) last saved
        self._last_time = time.monotonic()
        self._lines_since = 0
        self.saves = 0
        self.extra = None  # a callable giving more to save (the run counter), or None
        self.loaded: dict[str, Any] = {}  # the object the state was resumed from

    def load(self, path: str, warn=None) -> Position | None:  # noqa: ANN001
        """The saved position if it is about ``path`` (else a warning and None)."""
        warn = warn or (lambda m: print(f"logscope follow: {m}", file=sys.stderr))
        got = load_all(self.file)
        if got is None:
            return None
        pos, grammars, self.loaded = got
        if os.path.abspath(pos.path) != os.path.abspath(path):
            raise StateError(f"state file {self.file} is about {pos.path}, not {path}; "
                             "use one state file per followed path")
        changed = sorted(e for e, h in grammars.items()
                         if e in self.grammars and self.grammars[e] != h)
        if changed:
            warn(f"grammar changed since the state was saved ({', '.join(changed)}); "
                 "resuming at the saved byte offset with the new grammar")
        return pos

    def maybe_save(self, follower) -> None:  # noqa: ANN001
        self._lines_since += 1
        if (self._lines_since >= self.every_lines
                or time.monotonic() - self._last_time >= self.every_seconds):
            self.save(follower)

    def save(self, follower) -> None:  # noqa: ANN001
        key = (follower.ino, follower.offset)
        self._lines_since = 0
        self._last_time = time.monotonic()
        if key == self._last_line:
            return
        pos = follower.position()
        obj = {"version": VERSION, **pos.to_dict(), "grammars": self.grammars,
               "saved_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        if self.extra is not None:
            obj.update(self.extra())
        write_atomic(self.file, obj)
        self._last_line = key
        self.saves += 1
