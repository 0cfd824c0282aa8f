"""Records a terminal wrapped onto two lines, joined again.

A log copied from a terminal (``docker logs`` in an 80- or 157-column window, a screen capture)
can carry a long record cut at the window's edge: ``… Avg generation throughpu`` on one line,
``t: 843.6 tokens/s, Running: 38 reqs, …`` on the next. The second half carries a figure's
anchor and matches no format (an alarm); the first half alone loses the figures past the cut.

A line is joined to the one before it when all of these hold: it is unrecognized; the one before it
is 60 to 512 characters long (a terminal's width) and it is at most 512; the two
joined (with nothing between them, as a terminal cuts, or with one space, as an editor's
word wrap does) make an event; and that event has more fields than the first line alone. When
the unrecognized line is the *first* half (its cut made it match no format, and the rest, on the
next line, carries no anchor and is no event of its own), it is joined to the next line on the
same conditions. The
joined record takes the first line's number; the second line is left empty (counted with the
ignored lines) and the pair is reported as rejoined, so nothing is lost or counted twice.
Only the few unrecognized lines are tried, one by one, so the cost is nil on a clean log. A
record cut across two reading blocks (one in a few million lines) is not joined.
"""

from __future__ import annotations

import polars as pl

from logscope.classify.parse import IGNORED, OTHER, UNRECOGNIZED, parse_raw_line

NOT_EVENTS = (IGNORED, OTHER, UNRECOGNIZED)
MAX_TRIES = 200  # unrecognized lines tried per block; a log past this is not a wrapped paste
MIN_WIDTH = 60  # a first half shorter than this was not cut by a terminal's edge
MAX_WIDTH = 512  # nor one longer than this (and the per-line regexes stay fast on the pair)


def _fields(raw: str, engines: list[str]) -> tuple[str, str, int] | None:
    """(engine, kind, fields set) of ``raw`` when it is one event, else None."""
    _, _, m = parse_raw_line(raw, engines)
    if m is None or m[1] in NOT_EVENTS:
        return None
    return m[0], m[1], sum(v is not None for v in m[3].values())


def rejoin(raw: pl.Series, at: list[int], engines: list[str]) -> tuple[pl.Series, list[int]]:
    """``raw`` with each unrecognized line at index ``at[i]`` joined to the line before it where
    that makes a fuller event: (the new lines, the indexes of the joined records). A joined
    record stands at its first line; its second line becomes empty.

        >>> head = ("(APIServer pid=1) INFO 08-01 10:00:20 [loggers.py:123] Engine 000: Avg "
        ...         "prompt throughput: 0.0 tokens/s, Avg generation throughpu")
        >>> tail = "t: 843.6 tokens/s, Running: 38 reqs, Waiting: 0 reqs"
        >>> lines, joined = rejoin(pl.Series([head, tail]), [1], ["vllm"])
        >>> joined, lines[1]
        ([0], '')
    """
    out = raw.to_list()
    joined: list[int] = []
    for i in at[:MAX_TRIES]:
        if not out[i] or len(out[i]) > MAX_WIDTH:
            continue
        if (i >= 1 and not (joined and joined[-1] == i - 1)
                and MIN_WIDTH <= len(out[i - 1].rstrip("\r\n")) <= MAX_WIDTH
                and _join(out, i - 1, engines, _fields(out[i - 1], engines))):
            joined.append(i - 1)
        elif _first_half(out, i, engines) and _join(out, i, engines, None):
            joined.append(i)   # the unrecognized line is the first half, the next the rest
    return pl.Series(raw.name, out, dtype=pl.String), joined


def _first_half(out: list[str], i: int, engines: list[str]) -> bool:
    """``out[i]`` may be a record's first half: a terminal's width, and the next line, no event
    of its own, may be the rest."""
    return (i + 1 < len(out) and bool(out[i + 1]) and len(out[i + 1]) <= MAX_WIDTH
            and len(out[i].rstrip("\r\n")) >= MIN_WIDTH
            and _fields(out[i + 1], engines) is None)


def _join(out: list[str], i: int, engines: list[str], first: tuple | None) -> bool:
    """Join ``out[i]`` and ``out[i + 1]`` in place when that makes a fuller event than
    ``first`` (the first line's own event, None when it is none)."""
    for sep in ("", " "):
        text = out[i].rstrip("\r\n") + sep + out[i + 1].lstrip()
        whole = _fields(text, engines)
        if whole is not None and (first is None or (first[:2] == whole[:2]
                                                    and whole[2] > first[2])):
            out[i], out[i + 1] = text, ""
            return True
    return False


__all__ = ["rejoin"]
