"""Follow a live log: ``tail -F`` done right, fed line by line through the same compiled grammar
patterns as batch ingest (:func:`logscope.classify.parse.parse_raw_line`).

Enters: a live log file (or a replay ``from_start``), line by line. Leaves: events as dicts
(below), the live state of each run (:mod:`~logscope.follow.state`), Prometheus metrics
(:mod:`~logscope.follow.metrics`) and the terminal view (:mod:`~logscope.follow.view`).

>>> for ev in logscope.follow.events("server.log", from_start=True):   # doctest: +SKIP
...     print(ev["kind"], ev["line"], ev.get("tg_3s"))

Every event is a dict with ``kind``, ``file`` (the followed path), ``line`` (line number in the
file currently behind that name), ``engine``, ``variant``, the typed fields of the grammar rule,
what preceded the server's message (``prefix``; ``outer`` when a logger quoted the line), and a
wall clock: ``ts`` (UTC ISO 8601) with ``ts_source`` ``wrapper`` (a timestamp in the prefix,
``ts_inferred`` false) or ``read`` (the time the line was read, ``ts_inferred`` true: right for
a live file, not for a replay with ``from_start``). ``run`` numbers the server runs of the file
behind the name as ``logscope ingest`` numbers them (from 1; see :mod:`logscope.follow.runs`):
kept in ``state`` files, and counted over the lines already there when following starts at the
end of a file.

``ignored`` lines (known, not an event) and lines of no engine are skipped unless
``include_ignored`` (then they come as kind ``ignored`` / ``other``); ``unrecognized`` lines
(an engine's anchor, no known format) are always events.

May import: every stage before it (:mod:`logscope.input` … :mod:`logscope.outputs`); it uses
the per-line classifier, a batch ingest to count the runs already in a file, and the
concurrency states.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from logscope.follow.parser import _Parser
from logscope.follow.tail import Follower, FollowError, Position, Vanished

__all__ = ["events", "EventStream", "Follower", "FollowError", "Vanished", "Position",
           "parse_line"]


def parse_line(parser: _Parser, raw: str, file: str, line: int, *,
               include_ignored: bool = False) -> list[dict[str, Any]]:
    """The events of one raw line: usually one or none; several when records are glued onto
    one physical line (they share its line number)."""
    wrap, matches = parser.records(raw)
    out = []
    for match in matches:
        ev = _event(match, wrap, file, line, include_ignored)
        if ev is not None:
            out.append(ev)
    return out


def _event(match: tuple | None, wrap: dict[str, Any], file: str, line: int,
           include_ignored: bool) -> dict[str, Any] | None:
    if match is None:
        if not include_ignored:
            return None
        engine, kind, variant, fields = None, "other", None, {}
    else:
        engine, kind, variant, fields = match
        if kind == "ignored" and not include_ignored:
            return None
    ev: dict[str, Any] = {"kind": kind, "file": file, "line": line, "engine": engine,
                          "variant": variant}
    for k, v in fields.items():
        if k not in ev:
            ev[k] = v
    for k, v in wrap.items():
        if v is not None:
            ev[k] = v
    ts = ev.pop("wrap_ts", None)  # decoded from the line's prefix (envelope.py)
    if ts is not None:
        ev["ts"], ev["ts_source"], ev["ts_inferred"] = ts, "wrapper", False
    else:
        ev["ts"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        ev["ts_source"], ev["ts_inferred"] = "read", True
    return ev


class EventStream:
    """Iterate the events of a followed file; :meth:`stop` ends the iteration cleanly (after
    the current event, saving the state). See :func:`events` for the arguments."""

    def __init__(self, path: str, *, from_start: bool = False, state: str | None = None,
                 engines: list[str] | None = None, include_ignored: bool = False,
                 state_every_lines: int = 1000, state_every_seconds: float = 1.0,
                 vanish_timeout: float | None = None, watch: bool = True,
                 poll_interval: float = 0.25, warn=None,  # noqa: ANN001
                 on_line=None, idle_hook=None) -> None:  # noqa: ANN001
        from logscope.classify.grammar import available_engines, load_grammar
        from logscope.follow.state import StateStore

        self.engines = list(engines or available_engines())
        self.grammars = {e: load_grammar(e).digest for e in self.engines}
        self.parser = _Parser(self.engines)
        self.path = path
        self.include_ignored = include_ignored
        self.warn = warn or (lambda m: print(f"logscope follow: {m}", file=sys.stderr))
        self.store = None
        resume: Position | None = None
        if state:
            self.store = StateStore(state, self.grammars, every_lines=state_every_lines,
                                    every_seconds=state_every_seconds)
            resume = self.store.load(path, warn=self.warn)
        self.follower = Follower(path, from_start=from_start, resume=resume, store=self.store,
                                 watch=watch, poll_interval=poll_interval,
                                 vanish_timeout=vanish_timeout, warn=self.warn,
                                 idle_hook=idle_hook)
        self.lines_read = 0
        self.on_line = on_line  # called with the followed path for every line read
        from logscope.follow.runs import Runs

        saved = self.store.loaded.get("runs") if self.store is not None else None
        self.runs = Runs(saved if resume is not None else None)
        self._resumed = resume is not None
        self.from_start = from_start
        self.run = 1
        self._switches = 0
        if self.store is not None:
            self.store.extra = lambda: {"runs": self.runs.state()}

    def stop(self) -> None:
        self.follower.stop()

    def _prime(self) -> None:
        """Following from the end of an existing file: count the runs already in it."""
        from logscope.follow.runs import PRIME_MAX_BYTES, prime

        f = self.follower
        if self.from_start or self._resumed or f.switches or f.line <= 0:
            return
        if f.offset > PRIME_MAX_BYTES:
            self.warn(f"{f.display_path} holds {f.offset >> 20} MiB before the end: run numbers "
                      "count the runs from here on, not those before (use --state to keep them)")
            return
        try:
            self.runs = prime(f.path, f.line, f.offset)
        except Exception as e:  # noqa: BLE001 - never stop following over the run count
            self.warn(f"could not count the runs already in {f.display_path}: {e}")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        f = self.follower
        first = True
        for line_no, raw in f.lines():
            if first:
                first = False
                self._prime()
            self.lines_read += 1
            if self.on_line is not None:
                self.on_line(self.path)
            if f.switches != self._switches:  # a new file behind the name: runs from 1
                self._switches = f.switches
                self.runs.reset()
            for ev in parse_line(self.parser, raw, self.path, line_no, include_ignored=True):
                kind = ev["kind"]
                if ev.get("engine") is not None:
                    self.run = self.runs.observe(ev["engine"], kind, ev.get("variant"), ev)
                if kind in ("ignored", "other") and not self.include_ignored:
                    continue
                ev["run"] = self.run
                ev["t_read"] = time.time()
                yield ev


def events(path: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Follow ``path`` (``tail -F``) and yield one dict per event.

    Keyword arguments: ``from_start`` (read an existing file from its start; default: only what
    is written from now on), ``state`` (a state file to resume from and save to), ``engines``
    (default: every grammar), ``include_ignored``, ``vanish_timeout`` (seconds a vanished file
    is waited for; None: for ever), ``watch`` (use watchfiles/inotify; else stat polling),
    ``poll_interval``.
    """
    return iter(EventStream(path, **kwargs))
