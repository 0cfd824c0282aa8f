"""Follow a log file by name, ``tail -F`` semantics done right.

:class:`Follower` yields ``(line_no, raw_line)`` for every complete line written to ``path``:

* **Follow by name.** The file open is the one the name points at; when the name points at
  another file (rename rotation, delete + re-create), the old file is drained to its end first
  (the open descriptor still reads it), a last partial line of it is emitted, then reading
  switches to the new file from byte 0 (line numbers restart at 1: ``line`` is the line number
  in that file).
* **Truncation** (plain ``> file`` or logrotate's ``copytruncate``): the file's size is below the
  read position, *or* its first bytes (or the bytes just before the read position) changed,
  which catches a truncated file that has already grown past the old offset → restart at 0.
* **A file that does not exist yet** is waited for; a file that vanishes is waited for too (it
  may be re-created), unless its directory vanished or ``vanish_timeout`` passed
  (:class:`Vanished`).
* **Partial lines** are held until their newline arrives; ``\\r\\n`` endings are stripped. Reads
  are binary; each complete line is decoded (UTF-8, ``errors="replace"``).
* **Wake-ups** come from ``watchfiles`` (inotify on Linux) watching the file's directory, with a
  slow stat poll as a safety net; without watchfiles (or when its watcher fails) the follower
  falls back to stat polling.
* **Positions.** The position of the last line the consumer has *finished with* (the generator
  was resumed after yielding it) is what :meth:`Follower.position` reports and what a
  :class:`~logscope.follow.state.StateStore` persists: a restart continues exactly after it.

Chains: when the name was rotated more than once before the follower switched (while it was
stopped, or busy draining), the rotated siblings (same directory, name starting with the
followed name) last written after the file just finished and not read before (by their first
bytes) are read first, oldest first.

Known limits, shared with every tail -F: lines written to a file between the last read and a
``copytruncate`` (they are in the copy, not in the truncated file; a resumed follower does find
the copy) or between the last read and a deletion while no follower runs are lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass

_DEBUG = bool(os.environ.get("LOGSCOPE_FOLLOW_DEBUG"))
HEAD_BYTES = 1024  # content fingerprint: sha256 of the file's first (at most) 1 KiB
TAIL_BYTES = 256  # and of the bytes just before the resume offset
CHUNK = 1 << 16
# compressed rotations cannot be resumed from a byte offset of the plain file
_SKIP_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")


class FollowError(Exception):
    """Bad input for follow (a directory, an unreadable file): exit code 2."""

    exit_code = 2


class Vanished(FollowError):
    """The followed path went away for good (its directory is gone, or the timeout passed)."""

    exit_code = 1


@dataclass
class Position:
    """Where a follower stands: the file (by device/inode and content fingerprint) and the byte
    offset / line number just after the last line the consumer finished with."""

    path: str
    dev: int | None = None
    ino: int | None = None
    head_sha256: str | None = None  # sha256 of bytes [0, head_len)
    head_len: int = 0
    tail_sha256: str | None = None  # sha256 of bytes [offset - tail_len, offset)
    tail_len: int = 0
    offset: int = 0
    line: int = 0
    mtime_ns: int | None = None  # the file's mtime when the position was taken

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Position:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def fingerprint(fd: int, offset: int) -> tuple[str, int, str, int]:
    """(head sha256, head length, tail sha256, tail length) of an open file at ``offset``."""
    head_len = min(HEAD_BYTES, offset)
    tail_len = min(TAIL_BYTES, offset)
    head = os.pread(fd, head_len, 0) if head_len else b""
    tail = os.pread(fd, tail_len, offset - tail_len) if tail_len else b""
    return _sha(head), len(head), _sha(tail), len(tail)


def matches(fd: int, pos: Position) -> bool:
    """Does the open file hold the content ``pos`` was taken from (up to its offset)?"""
    try:
        if os.fstat(fd).st_size < pos.offset:
            return False
        head = os.pread(fd, pos.head_len, 0) if pos.head_len else b""
        tail = os.pread(fd, pos.tail_len, pos.offset - pos.tail_len) if pos.tail_len else b""
    except OSError:
        return False
    if len(head) != pos.head_len or len(tail) != pos.tail_len:
        return False
    return (pos.head_sha256 in (None, _sha(head))) and (pos.tail_sha256 in (None, _sha(tail)))


class Waker:
    """A self-pipe: ``wake`` is safe from signal handlers and other threads (no locks)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.w, b"x")

    def wait(self, timeout: float) -> bool:
        try:
            ready, _, _ = select.select([self.r], [], [], timeout)
        except (InterruptedError, OSError, ValueError):
            return True
        if ready:
            with contextlib.suppress(OSError):
                while os.read(self.r, 4096):
                    pass
        return bool(ready)

    def close(self) -> None:
        for fd in (self.r, self.w):
            with contextlib.suppress(OSError):
                os.close(fd)


class _Watcher(threading.Thread):
    """watchfiles (inotify) on the file's directory; wakes the follower on any change to the
    file's name (write, create, delete, rename to or from)."""

    def __init__(self, path: str, waker: Waker, step_ms: int = 10, debounce_ms: int = 50):
        super().__init__(name="logscope-follow-watch", daemon=True)
        self.dir = os.path.dirname(path) or "."
        self.name_ = os.path.basename(path)
        self.waker = waker
        self.step_ms, self.debounce_ms = step_ms, debounce_ms
        self.stop_event = threading.Event()
        self.active = False  # a watcher is running (else the follower polls faster)
        self.failed = False  # watchfiles is unavailable or kept failing

    def run(self) -> None:
        try:
            from watchfiles import watch
        except ImportError:
            self.failed = True
            return
        name = self.name_

        def ours(_change, p: str) -> bool:  # noqa: ANN001
            return os.path.basename(p) == name

        failures = 0
        while not self.stop_event.is_set():
            if not os.path.isdir(self.dir):
                self.active = False
                self.stop_event.wait(0.5)
                continue
            try:
                self.active = True
                for changes in watch(self.dir, watch_filter=ours,
                                     debounce=self.debounce_ms, step=self.step_ms,
                                     stop_event=self.stop_event, rust_timeout=1000,
                                     yield_on_timeout=False, raise_interrupt=False,
                                     recursive=False, ignore_permission_denied=True):
                    if changes:
                        self.waker.wake()
                    failures = 0
                # watch returns when stop_event is set or the directory went away
                self.active = False
                self.waker.wake()
            except Exception:  # noqa: BLE001 - inotify limits, a vanished directory, ...
                self.active = False
                failures += 1
                self.waker.wake()
                if failures >= 5:
                    self.failed = True
                    return
                self.stop_event.wait(0.5)

    def stop(self) -> None:
        self.stop_event.set()


class Follower:
    """Follow ``path`` by name; iterate :meth:`lines` for ``(line_no, raw_line)``.

    ``from_start``: read an existing file from its beginning (default: from the end of its last
    complete line; a file created later is always read from its beginning). ``resume``: a
    :class:`Position` to continue from (see :mod:`logscope.follow.state`); it wins over
    ``from_start``. ``store``: something with ``maybe_save(follower)`` and ``save(follower)``
    (a :class:`~logscope.follow.state.StateStore`). ``vanish_timeout``: seconds a file that
    existed may stay missing before :class:`Vanished` (None: wait for ever).
    """

    def __init__(self, path: str, *, from_start: bool = False, resume: Position | None = None,
                 store=None, watch: bool = True, poll_interval: float = 0.25,  # noqa: ANN001
                 safety_interval: float = 1.0, vanish_timeout: float | None = None,
                 warn=None, idle_hook=None) -> None:  # noqa: ANN001
        self.path = os.path.abspath(path)
        self.idle_hook = idle_hook  # called before each wait (e.g. to notice a closed stdout)
        self.display_path = path
        self.from_start = from_start
        self.resume = resume
        self.store = store
        self.use_watch = watch
        self.poll_interval = poll_interval
        self.safety_interval = safety_interval
        self.vanish_timeout = vanish_timeout
        self.warn = warn or (lambda msg: print(f"logscope follow: {msg}", file=sys.stderr))
        self.waker = Waker()
        self.watcher: _Watcher | None = None
        self._stop = False
        # the open file
        self.fd: int | None = None
        self.dev: int | None = None
        self.ino: int | None = None
        self.head = b""  # its first bytes seen so far (to notice in-place replacement)
        self.read_pos = 0  # bytes read from it (committed lines + pending data)
        self.buf = b""  # read but not yet split into lines
        self.last = b""  # the last bytes read (before read_pos), to notice replacement
        self.ctail = b""  # the last bytes committed (before offset): the tail fingerprint
        self.offset = 0  # end of the last committed line
        self.line = 0  # number of the last committed line
        self.missing_since: float | None = None
        # the first bytes of files read (or their length and sha256, from a state file)
        self.seen: deque[tuple[int, str, bytes | None]] = deque(maxlen=64)
        self.ever_opened = False
        self.switches = 0  # files switched to (rotations, re-creations, truncations)

    # -- control ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the follower to stop after the current line (safe from a signal handler)."""
        self._stop = True
        self.waker.wake()

    @property
    def stopped(self) -> bool:
        return self._stop

    def position(self) -> Position:
        # the fingerprints come from the bytes as they were read, never from re-reading the file
        # (it may have been truncated and rewritten since)
        head = self.head[:min(HEAD_BYTES, self.offset)]
        mtime_ns = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                mtime_ns = os.fstat(self.fd).st_mtime_ns
        return Position(path=self.path, dev=self.dev, ino=self.ino, offset=self.offset,
                        line=self.line, head_sha256=_sha(head), head_len=len(head),
                        tail_sha256=_sha(self.ctail), tail_len=len(self.ctail),
                        mtime_ns=mtime_ns)

    # -- opening ----------------------------------------------------------------------------
    def _open(self, path: str) -> int | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except IsADirectoryError as e:
            raise FollowError(f"{self.display_path} is a directory, not a log file") from e
        except PermissionError as e:
            raise FollowError(f"cannot read {self.display_path}: permission denied") from e
        except OSError as e:
            raise FollowError(f"cannot open {self.display_path}: {e.strerror or e}") from e
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            raise FollowError(f"{self.display_path} is a directory, not a log file")
        return fd

    def _adopt(self, fd: int, offset: int, line: int) -> None:
        if self.fd is not None and self.fd != fd:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        st = os.fstat(fd)
        self.fd, self.dev, self.ino = fd, st.st_dev, st.st_ino
        self.read_pos = self.offset = offset
        self.line = line
        self.buf = b""
        self.head = os.pread(fd, min(HEAD_BYTES, offset), 0) if offset else b""
        n = min(TAIL_BYTES, offset)
        self.last = self.ctail = os.pread(fd, n, offset - n) if n else b""
        self.ever_opened = True
        self.missing_since = None

    def _start(self) -> None:
        """Open the file for the first time: resume, from start, or from the end."""
        if os.path.isdir(self.path):
            raise FollowError(f"{self.display_path} is a directory, not a log file")
        if not os.path.isdir(os.path.dirname(self.path)):
            raise FollowError(f"{self.display_path}: no such directory "
                              f"{os.path.dirname(self.display_path) or '.'}")
        fd = self._open(self.path)
        if self.resume is not None:
            self._resume(fd, self.resume)
            return
        if fd is None:  # does not exist yet: read it from the start when it appears
            self.warn(f"{self.display_path} does not exist yet; waiting for it to be created")
            return
        if self.from_start:
            self._adopt(fd, 0, 0)
        else:
            off, line = _end_of_last_line(fd)
            self._adopt(fd, off, line)

    def _resume(self, fd: int | None, pos: Position) -> None:
        if _DEBUG:
            self.warn(f"debug: resume {pos}")
        if fd is not None and matches(fd, pos) and (pos.head_len or _same_file(fd, pos)):
            self._adopt(fd, pos.offset, pos.line)
            return
        old = find_rotated(self.path, pos)
        if old is not None:
            # drain the rotated file from the saved offset; the main loop then notices that
            # the name points at another file and switches to it
            ofd, opath = old
            if fd is not None:
                os.close(fd)
            self._adopt(ofd, pos.offset, pos.line)
            if os.path.abspath(opath) != self.path:
                self.warn(f"{self.display_path} was rotated while not followed; "
                          f"finishing {opath} first")
            return
        if pos.head_len:
            self.seen.append((pos.head_len, pos.head_sha256 or "", None))
        self.dev, self.ino = pos.dev, pos.ino
        missed = self._next_missed(pos.mtime_ns) if pos.mtime_ns is not None else None
        if missed is not None:
            # the old file is gone, but files rotated after it was last written are here
            mfd, mpath = missed
            if fd is not None:
                os.close(fd)
            self.warn(f"{self.display_path} was replaced while not followed and the old file "
                      f"was not found (the lines after the saved position are lost); reading "
                      f"{mpath}, rotated since, first")
            self._adopt(mfd, 0, 0)
            return
        if fd is None:
            self.warn(f"{self.display_path} does not exist (any more); waiting for it "
                      "(the lines after the saved position are lost)")
            return
        self.warn(f"{self.display_path} was replaced or truncated while not followed and the "
                  "old file was not found; reading the new file from its start")
        self._adopt(fd, 0, 0)

    def _next_missed(self, after_ns: int | None) -> tuple[int, str] | None:
        """The oldest file next to the name that was rotated away after ``after_ns`` (the
        mtime of the file just finished) and that this follower has not read: the middle of
        a chain of rotations (the name was rotated again before the follower switched)."""
        if after_ns is None:
            return None
        d = os.path.dirname(self.path) or "."
        base = os.path.basename(self.path)
        try:
            names = os.listdir(d)
            cst = os.stat(self.path)
            cur = (cst.st_dev, cst.st_ino)
        except FileNotFoundError:
            cur = None
        except OSError:
            return None
        cands = []
        for name in names:
            if name == base or not name.startswith(base) or name.endswith(_SKIP_SUFFIXES):
                continue
            p = os.path.join(d, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            ident = (st.st_dev, st.st_ino)
            if (not stat.S_ISREG(st.st_mode) or ident in (cur, (self.dev, self.ino))
                    or st.st_mtime_ns <= after_ns or st.st_size == 0):
                continue
            cands.append((st.st_mtime_ns, p))
        for _, p in sorted(cands):
            try:
                fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                head = os.pread(fd, HEAD_BYTES, 0)
            except OSError:
                continue
            if self._seen(head):
                os.close(fd)  # already read (a copytruncate copy of a file read, ...)
                continue
            return fd, p
        return None

    def _seen(self, head: bytes) -> bool:
        """Was a file starting like this read (one is a prefix of the other)?"""
        for n, h, b in self.seen:
            if b is not None:
                k = min(len(b), len(head))
                if k and head[:k] == b[:k]:
                    return True
            elif len(head) >= n and _sha(head[:n]) == h:
                return True
        return False

    def _remember(self) -> int | None:
        """Note the content of the file being left; return its mtime (ns)."""
        if self.head:
            self.seen.append((len(self.head), "", self.head))
        if self.fd is None:
            return None
        try:
            return os.fstat(self.fd).st_mtime_ns
        except OSError:
            return None

    # -- the loop ---------------------------------------------------------------------------
    def lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(line_no, raw_line)`` until :meth:`stop` (or :class:`Vanished`)."""
        try:
            self._start()
            if self.use_watch:
                self.watcher = _Watcher(self.path, self.waker)
                self.watcher.start()
            while not self._stop:
                action = self._check()
                if action and _DEBUG:
                    self.warn(f"debug: {action} ino={self.ino} read_pos={self.read_pos} "
                              f"line={self.line}")
                if action == "switch":
                    # the name now points at another file: finish the old one first
                    yield from self._drain()
                    if self._stop:
                        break
                    yield from self._flush_partial()
                    if self._stop:
                        break
                    missed = self._next_missed(self._remember())
                    if missed is not None:
                        # rotated again before we switched: read the file in between first
                        self.warn(f"{self.display_path} was rotated more than once; reading "
                                  f"{missed[1]} first")
                        self.switches += 1
                        self._adopt(missed[0], 0, 0)
                        if self.store is not None:
                            self.store.save(self)
                        continue
                    self._switch()
                    continue
                if action == "truncated":
                    yield from self._flush_partial()
                    if self._stop:
                        break
                    self._remember()
                    self._restart_same()
                    continue
                before = self.read_pos
                yield from self._drain()
                if self._stop:
                    break
                if self.store is not None:
                    self.store.maybe_save(self)
                if self.read_pos == before:
                    if self.idle_hook is not None:
                        self.idle_hook()
                        if self._stop:
                            break
                    self.waker.wait(self._wait_time())
        finally:
            if self.watcher is not None:
                self.watcher.stop()
            if self.store is not None:
                with contextlib.suppress(Exception):
                    self.store.save(self)
            if self.fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self.fd)
                self.fd = None
            self.waker.close()

    def _wait_time(self) -> float:
        w = self.watcher
        if w is not None and w.active and not w.failed:
            return self.safety_interval
        return self.poll_interval

    def _emit(self, whole: bytes) -> Iterator[tuple[int, str]]:
        """Yield one line (``whole``: its bytes with the terminator); on resumption, commit it
        (the consumer is done with it)."""
        raw = whole[:-1] if whole.endswith(b"\n") else whole
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        line_no = self.line + 1
        yield line_no, raw.decode("utf-8", errors="replace")
        self.line = line_no
        self.offset += len(whole)
        self.ctail = whole[-TAIL_BYTES:] if len(whole) >= TAIL_BYTES \
            else (self.ctail + whole)[-TAIL_BYTES:]
        if self.store is not None:
            self.store.maybe_save(self)

    def _drain(self) -> Iterator[tuple[int, str]]:
        """Read the open file to its end, yielding complete lines."""
        if self.fd is None:
            return
        while not self._stop:
            try:
                data = os.pread(self.fd, CHUNK, self.read_pos)
            except OSError as e:
                self.warn(f"read error on {self.display_path}: {e.strerror or e}")
                return
            if not data:
                return
            if self.read_pos < HEAD_BYTES and len(self.head) == self.read_pos:
                self.head = (self.head + data)[:HEAD_BYTES]
            self.read_pos += len(data)
            self.last = (self.last + data)[-TAIL_BYTES:] if len(data) < TAIL_BYTES \
                else data[-TAIL_BYTES:]
            buf = self.buf + data if self.buf else data
            start = 0
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                if self._stop:
                    return
                yield from self._emit(buf[start:nl + 1])
                start = nl + 1
            self.buf = buf[start:]
            if self._stop:
                return

    def _flush_partial(self) -> Iterator[tuple[int, str]]:
        """The file is finished (rotated away, deleted, truncated): its unterminated last
        line will never be completed; emit it as it is."""
        if self.buf and not self._stop:
            raw, self.buf = self.buf, b""
            yield from self._emit(raw)

    def _check(self) -> str | None:
        """Compare the name with the open file: None (nothing new), "switch" or "truncated"."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._missing()
        except NotADirectoryError:
            return self._missing()
        except PermissionError as e:
            raise FollowError(f"cannot read {self.display_path}: permission denied") from e
        if stat.S_ISDIR(st.st_mode):
            raise FollowError(f"{self.display_path} is a directory, not a log file")
        self.missing_since = None
        if self.fd is None or (st.st_dev, st.st_ino) != (self.dev, self.ino):
            return "switch"
        try:
            size = os.fstat(self.fd).st_size
        except OSError:
            return "switch"
        if size < self.read_pos:
            return "truncated"
        # same size or larger: make sure the content was not replaced in place by a file that
        # has already grown past our offset (copytruncate followed by a burst of writes)
        if self.head and os.pread(self.fd, len(self.head), 0) != self.head:
            return "truncated"
        if self.last and os.pread(self.fd, len(self.last), self.read_pos - len(self.last)) \
                != self.last:
            return "truncated"
        return None

    def _missing(self) -> str | None:
        now = time.monotonic()
        if not self.ever_opened:
            return None  # not created yet: wait
        if self.missing_since is None:
            self.missing_since = now
        if not os.path.isdir(os.path.dirname(self.path)):
            raise Vanished(f"{self.display_path} vanished (its directory is gone)")
        if self.vanish_timeout is not None and now - self.missing_since > self.vanish_timeout:
            raise Vanished(f"{self.display_path} vanished and did not come back within "
                           f"{self.vanish_timeout:g} s")
        return None

    def _switch(self) -> None:
        fd = self._open(self.path)
        if fd is None:  # gone again between stat and open: keep the old one, wait
            return
        self.switches += 1
        self._adopt(fd, 0, 0)
        if self.store is not None:
            self.store.save(self)

    def _restart_same(self) -> None:
        self.switches += 1
        assert self.fd is not None
        self._adopt(self.fd, 0, 0)
        if self.store is not None:
            self.store.save(self)


def _end_of_last_line(fd: int) -> tuple[int, int]:
    """(offset just after the last newline, number of lines before it) of an open file."""
    size = os.fstat(fd).st_size
    pos, end = 0, 0
    lines = 0
    while pos < size:
        data = os.pread(fd, 1 << 20, pos)
        if not data:
            break
        n = data.count(b"\n")
        if n:
            lines += n
            end = pos + data.rfind(b"\n") + 1
        pos += len(data)
    return end, lines


def _same_file(fd: int, pos: Position) -> bool:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (pos.dev, pos.ino)


def find_rotated(path: str, pos: Position) -> tuple[int, str] | None:
    """An open descriptor (and its name) of the file ``pos`` was taken from, if it still exists
    next to ``path`` under another name (``server.log.1``, ``server.log-20250101``, a
    copytruncate copy): same device/inode first, then any sibling whose content fingerprint
    matches."""
    d = os.path.dirname(path) or "."
    base = os.path.basename(path)
    try:
        names = os.listdir(d)
    except OSError:
        return None
    by_inode: list[str] = []
    similar: list[tuple[float, str]] = []
    for name in names:
        p = os.path.join(d, name)
        if name.endswith(_SKIP_SUFFIXES):
            continue
        try:
            st = os.stat(p)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if (st.st_dev, st.st_ino) == (pos.dev, pos.ino):
            by_inode.append(p)
        elif name != base and name.startswith(base):
            similar.append((-st.st_mtime, p))
    if not pos.head_len:  # nothing was read from it: only its inode identifies it
        similar = []
    for p in by_inode + [p for _, p in sorted(similar)[:32]]:
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        if matches(fd, pos):
            return fd, p
        os.close(fd)
    return None
