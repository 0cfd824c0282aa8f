"""A progress bar for long ingests, on stderr, only for a person watching a terminal.

    with IngestProgress() as progress:
        logs = read(paths, progress=progress)   # progress(bytes_done, bytes_total)

The bar (bytes, MiB/s, ETA; a spinner with the bytes read when the total is unknown, e.g.
stdin) appears only once the ingest has run for ``DELAY_S`` seconds, so small files never
flicker, and is transient: it is erased when the ingest ends. It is entirely silent, and does
not import rich, when stderr is not a TTY or ``LOGSCOPE_NO_PROGRESS`` is set (to anything but
``0`` or the empty string). Updates come from ``read``'s per-block callback, so the bar appears
at the first block boundary after the delay, not at the delay itself.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

DELAY_S = 1.0  # seconds of ingest before the bar appears
ENV_OFF = "LOGSCOPE_NO_PROGRESS"
MIB = 1024 * 1024


def disabled_by_env() -> bool:
    return os.environ.get(ENV_OFF, "") not in ("", "0")


def stderr_is_tty() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class IngestProgress:
    """A ``progress(bytes_done, bytes_total)`` callable for :func:`logscope.read`, and a
    context manager that erases the bar on exit.

    ``console`` (a rich Console) and ``clock`` are for tests: with a console the bar is shown
    when ``console.is_terminal``; otherwise when ``sys.stderr`` is a TTY. ``auto_refresh=False``
    redraws only on a callback (deterministic output for tests)."""

    def __init__(self, *, console: Any = None, clock: Callable[[], float] = time.monotonic,
                 delay: float | None = None, auto_refresh: bool = True) -> None:
        self.clock = clock
        self.delay = DELAY_S if delay is None else delay
        self.auto_refresh = auto_refresh
        self._console = console
        if disabled_by_env():
            self.active = False
        elif console is not None:
            self.active = bool(console.is_terminal)
        else:
            self.active = stderr_is_tty()
        self._t0 = clock()
        self._progress: Any = None  # rich.progress.Progress, once shown
        self._task: Any = None
        self._lock = threading.Lock()  # in case read calls back from worker threads

    def __enter__(self) -> IngestProgress:
        self._t0 = self.clock()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def rate(self) -> float | None:
        """Bytes per second since the ingest began (not since the bar appeared)."""
        progress = self._progress
        if progress is None:
            return None
        elapsed = self.clock() - self._t0
        done = progress.tasks[0].completed
        return done / elapsed if elapsed > 0 and done else None

    def __call__(self, bytes_done: int, bytes_total: int | None) -> None:
        if not self.active:
            return
        with self._lock:
            if self._progress is None:
                if self.clock() - self._t0 < self.delay:
                    return
                self._start(bytes_total)
            finished = bytes_total is not None and bytes_done >= bytes_total
            self._progress.update(self._task, completed=bytes_done, total=bytes_total,
                                  description="finishing" if finished else "reading")
            if not self._progress.live.is_started:
                self._progress.start()  # the first frame shows this call's counts
            elif not self.auto_refresh:
                self._progress.refresh()

    def _start(self, bytes_total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
        )
        from rich.text import Text

        owner = self

        class BytesColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                done = f"{task.completed / MIB:,.1f}"
                text = (f"{done} MiB" if task.total is None
                        else f"{done}/{task.total / MIB:,.1f} MiB")
                return Text(text, style="progress.download")

        class ElapsedColumn(ProgressColumn):  # since the ingest began
            def render(self, task: Any) -> Text:
                s = max(0, int(owner.clock() - owner._t0))
                return Text(f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}",
                            style="progress.elapsed")

        class SpeedColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                r = owner.rate()
                return Text("? MiB/s" if r is None else f"{r / MIB:.1f} MiB/s",
                            style="progress.data.speed")

        class EtaColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                r = owner.rate()
                if task.total is None or r is None:
                    return Text("ETA -:--:--", style="progress.remaining")
                left = max(0, math.ceil((task.total - task.completed) / r))
                h, rest = divmod(left, 3600)
                return Text(f"ETA {h}:{rest // 60:02d}:{rest % 60:02d}",
                            style="progress.remaining")

        console = self._console if self._console is not None else Console(stderr=True)
        if bytes_total is None:  # stdin: no total, a spinner and the bytes read so far
            columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}"),
                                  BytesColumn(), SpeedColumn(), ElapsedColumn()]
        else:
            columns = [TextColumn("{task.description}"), BarColumn(), BytesColumn(),
                       SpeedColumn(), EtaColumn()]
        self._progress = Progress(*columns, console=console, transient=True,
                                  auto_refresh=self.auto_refresh, get_time=self.clock,
                                  redirect_stdout=False, redirect_stderr=False)
        self._task = self._progress.add_task("reading", total=bytes_total)
