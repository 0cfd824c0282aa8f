"""Which telemetry goes with which log: each log is joined to its own telemetry file(s) and its
clock placed alone (docs/energy.md, "Several logs").

The rules, in order, for the logs not paired by hand:

1. ``LOG=CSV`` given as one argument pairs them explicitly;
2. one log left: every telemetry file left is its own;
3. the telemetry files are first grouped into recordings (files whose time spans overlap: the
   CSV and the dmon of one run, or one file per GPU); one recording for several logs is shared
   by all of them (each log's clock is still placed alone against it);
4. when every log left has a known wall clock (its lines carry one, or ``--start-time``), each
   takes the recording that overlaps its time most;
5. else, when there are as many recordings as logs, by order: the first log with the first
   recording, and so on;
6. else a :class:`PairingError` asks for ``LOG=CSV``.

    >>> d = "fixtures/telemetry/h200/generated-gpu-"
    >>> got, how = pair(["a.log", "b.log"], [d + "pressure-np4-ctxshift.smi.csv",
    ...                                      d + "colors-tty.smi.csv"])
    >>> [g.height for g in got], how.split(":")[0]
    ([253, 40], 'telemetry paired by order')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl


class PairingError(Exception):
    """The telemetry files cannot be told apart among the logs (user error, one line)."""

    exit_code = 1


def split_pair(arg: str) -> tuple[str, str] | None:
    """``LOG=CSV`` as (log, telemetry file), or None for an ordinary argument (a path that
    exists, or one whose right side is not a telemetry file).

    Example: ``split_pair("a.log=a.csv") == ("a.log", "a.csv")``
    """
    import os

    from logscope.telemetry.files import kind_of

    if "=" not in arg or os.path.exists(arg):
        return None
    for i in [k for k, c in enumerate(arg) if c == "="][::-1]:
        left, right = arg[:i], arg[i + 1:]
        if left and os.path.isfile(right) and kind_of(right) is not None:
            return left, right
    return None


def split_args(args: list[str]) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(server log files, telemetry files, ``{log file: telemetry files}`` from ``LOG=CSV``)
    among inputs (globs expanded, order kept); what ``logscope sql`` and ``ingest`` take.

    Example: split_args(["a.log=a.csv", "b.log", "b.csv"])
    """
    from logscope.input import sources
    from logscope.telemetry.files import split_inputs

    logs: list[str] = []
    tele: list[str] = []
    explicit: dict[str, list[str]] = {}
    for a in args:
        if (pr := split_pair(a)) is not None:
            for f in sources.expand([pr[0]]):
                explicit.setdefault(f, []).append(pr[1])
                logs.append(f)
            continue
        lg, te = split_inputs([a])
        logs += lg
        tele += te
    return logs, tele, explicit


def _span(df: pl.DataFrame) -> tuple[float, float] | None:
    ts = df["ts"].drop_nulls()
    if ts.len() == 0:
        return None
    lo, hi = ts.min(), ts.max()
    return lo.timestamp(), hi.timestamp()


def recordings(paths: list[str], samples: dict[str, pl.DataFrame]) -> list[list[str]]:
    """The telemetry files grouped into recordings: files whose time spans overlap are one
    (the CSV and dmon of one run, one file per GPU); groups in the order of their first file.

    Example: recordings(["a.csv", "a.dmon", "b.csv"], samples) == [["a.csv", "a.dmon"], ["b.csv"]]
    """
    spans = {p: _span(samples[p]) for p in paths}
    timed = sorted((p for p in paths if spans[p] is not None), key=lambda p: spans[p][0])
    groups: list[list[str]] = []
    end = None
    for p in timed:
        lo, hi = spans[p]
        if groups and end is not None and lo <= end:
            groups[-1].append(p)
            end = max(end, hi)
        else:
            groups.append([p])
            end = hi
    groups += [[p] for p in paths if spans[p] is None]
    order = {p: i for i, p in enumerate(paths)}
    return sorted(([*sorted(g, key=order.get)] for g in groups), key=lambda g: order[g[0]])


def _overlap(a: tuple[float, float], b: tuple[float, float] | None) -> float:
    if b is None:
        return 0.0
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def pair(names: list[str], telemetry: list[str], *,
         explicit: dict[int, list[str]] | None = None,
         spans: list[tuple[float, float] | None] | None = None,
         fields: list[str] | None = None) -> tuple[list[pl.DataFrame | None], str | None]:
    """The ``gpu_samples`` of each log (None: no telemetry for it) and one line saying how they
    were paired (None when there is nothing to say: one log, or no telemetry).

    ``names``: the logs (series), in order; ``telemetry``: the telemetry files not paired by
    hand, in the order given; ``explicit``: ``{log index: files}`` from ``LOG=CSV``;
    ``spans``: each log's wall-clock span (Unix s) when its clock is known, else None.
    Raises :class:`PairingError` and ``TelemetryError``.

    Example: pair(["a.log", "b.log"], ["a.csv", "b.csv"])
    """
    from logscope.telemetry.files import read_samples

    explicit = dict(explicit or {})
    n = len(names)
    spans = list(spans or [None] * n)
    cache: dict[str, pl.DataFrame] = {}

    def one(p: str) -> pl.DataFrame:
        if p not in cache:
            cache[p] = read_samples([p], fields=fields)
        return cache[p]

    def join(paths: list[str]) -> pl.DataFrame:
        frames = [one(p) for p in paths]
        if len(frames) == 1:
            return frames[0]
        return pl.concat(frames).sort("gpu", "ts", "file", "line", nulls_last=True)

    chosen: list[list[str] | None] = [explicit.get(i) for i in range(n)]
    rest = [i for i in range(n) if i not in explicit]
    rule = "as LOG=CSV" if explicit else None
    if rest and telemetry:
        for p in telemetry:
            one(p)
        groups = recordings(list(telemetry), cache)
        if len(rest) == 1:
            chosen[rest[0]] = list(telemetry)
            rule = rule or "all telemetry to the one log"
        elif len(groups) == 1:
            for i in rest:
                chosen[i] = groups[0]
            rule = "one recording shared by every log (each clock placed alone)"
        elif all(spans[i] is not None for i in rest):
            for i in rest:
                over = [_overlap(spans[i], _span(join(g))) for g in groups]
                k = max(range(len(groups)), key=over.__getitem__)
                if over[k] <= 0:
                    raise PairingError(
                        f"{names[i]}: no telemetry file covers its time; pair them as LOG=CSV")
                chosen[i] = groups[k]
            rule = "by time overlap"
        elif len(groups) == len(rest):
            for i, g in zip(rest, groups, strict=True):
                chosen[i] = g
            rule = "by order"
        else:
            raise PairingError(
                f"{len(rest)} logs and {len(groups)} telemetry recordings: say which goes with "
                "which as LOG=CSV (e.g. a.log=a.csv b.log=b.csv)")
    out = [join(c) if c else None for c in chosen]
    if n < 2 or not any(chosen):
        return out, None
    pairs = "; ".join(f"{Path(names[i]).name} ← "
                      + (", ".join(Path(p).name for p in chosen[i]) if chosen[i] else "none")
                      for i in range(n))
    return out, f"telemetry paired {rule}: {pairs}"


def known_span(logs: Any, start_time: float | None = None) -> tuple[float, float] | None:
    """The wall-clock span (Unix s) of a log whose clock is known: ``start_time`` (its zero),
    or the runs whose lines carry a wall clock; None otherwise (the mtime is not trusted).

    Example: known_span(logscope.read("server.log"), 1796156563.5)
    """
    from logscope.telemetry.energy import _log_clock, _run_ends

    ends = _run_ends(logs)
    if ends.height == 0:
        return None
    lo, hi = [], []
    first = ends["run"].min()
    for f, run, t_end in ends.iter_rows():
        o = float(start_time) if start_time is not None and run == first else \
            _log_clock(logs, f, run)
        if o is None:
            return None
        lo.append(o)
        hi.append(o + (t_end or 0.0))
    return min(lo), max(hi)


def join_series(frames: list, names: list[str], telemetry: list[str], *,
                explicit: dict[int, list[str]] | None = None,
                start_times: list[float] | None = None, fields: list[str] | None = None,
                gpus: list[int] | None = None, net_of_idle: bool = False,
                work_of: Any = None) -> tuple[list, str | None]:
    """Each ingest in ``frames`` (one per log, named ``names``) joined to its own telemetry
    (:func:`pair`), its clock placed alone (``start_times``: one per log, or one for all;
    ``work_of``: a function giving an ingest's state timeline, e.g.
    ``logscope.analysis.concurrency.timeline``, for :func:`~logscope.telemetry.energy.attach`).
    Returns (the frames, the pairing line or None). Raises ``PairingError``,
    ``TelemetryError``, ``ClockError``.

    Example: join_series([read("a.log"), read("b.log")], ["a.log", "b.log"], ["a.csv", "b.csv"])
    """
    from logscope.telemetry.energy import attach

    starts = _per_log(start_times, len(frames))
    spans = [known_span(f, s) for f, s in zip(frames, starts, strict=True)]
    samples, line = pair(names, telemetry, explicit=explicit, spans=spans, fields=fields)
    out = [attach(f, s, start_time=t, gpus=gpus, net_of_idle=net_of_idle,
                  work=work_of(f) if work_of is not None and s is not None else None)
           for f, s, t in zip(frames, samples, starts, strict=True)]
    return out, line


def join_files(logs: Any, telemetry: list[str], *,
               explicit: dict[str, list[str]] | None = None,
               start_times: list[float] | None = None, fields: list[str] | None = None,
               gpus: list[int] | None = None, net_of_idle: bool = False,
               work_of: Any = None) -> tuple[Any, str | None]:
    """One ingest of several log files (``ingest``, ``sql``), each file joined to its own
    telemetry (:func:`pair` over the files, ``explicit`` keyed by file; ``start_times``: one
    per file in order, or one for all; ``work_of`` as in :func:`join_series`). Returns (logs,
    the pairing line or None).

    Example: join_files(read(["a.log", "b.log"]), ["a.csv", "b.csv"])
    """
    from logscope.telemetry.energy import attach

    files = [f.file for f in logs.files]
    starts = _per_log(start_times, len(files))
    explicit = explicit or {}
    idx = {i: explicit[f] for i, f in enumerate(files) if f in explicit}
    spans = []
    for f, s in zip(files, starts, strict=True):
        one = _only(logs, f)
        spans.append(known_span(one, s))
    samples, line = pair(files, telemetry, explicit=idx, spans=spans, fields=fields)
    per = {f: s for f, s in zip(files, samples, strict=True) if s is not None}
    st = {f: s for f, s in zip(files, starts, strict=True) if s is not None}
    work = work_of(logs) if work_of is not None and per else None
    return attach(logs, per, start_time=st or None, gpus=gpus, net_of_idle=net_of_idle,
                  work=work), line


def _only(logs: Any, file: str) -> Any:
    from dataclasses import replace

    return replace(logs, tables={k: (v.filter(pl.col("file") == file) if "file" in v.columns
                                     else v) for k, v in logs.tables.items()})


def _per_log(start_times: list[float] | None, n: int) -> list[float | None]:
    if not start_times:
        return [None] * n
    if len(start_times) == 1:
        return [start_times[0]] * n
    if len(start_times) != n:
        raise PairingError(f"--start-time given {len(start_times)} times for {n} logs: give it "
                           "once (every log) or once per log, in the order of the logs")
    return list(start_times)
