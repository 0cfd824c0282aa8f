"""Placing a run's log on its telemetry's clock by the whole run's busy/idle pattern
(docs/energy.md, "The clock").

A llama-server log without wall-clock stamps counts seconds from the server's start; the
telemetry counts wall-clock seconds. For each candidate offset (the wall-clock time of the log's
zero), the log says, for every telemetry sample, what the server was doing in the window the
sample averages: the share of it with work in progress (some request decoding or prefilling),
the mean number of requests decoding, and the share with a prompt prefilling. Utilisation and
power are each fitted to those by least squares over the samples of the whole run at that
offset (its first work to its last, ± ``FIT_MARGIN_S``: the same length for every offset, and
telemetry of other runs in the same file does not dilute it); an offset's score is the share
of the variance it explains (R², averaged over the signals); a fit in which the telemetry falls
as work starts scores 0. The idle gaps, the stalls between requests, the idle before the first
request and after the last one all pin the offset, so a run that keeps the GPU busy almost all
the time is still placed by its edges and gaps. Only offsets at which the telemetry covers the
run's work (``MIN_COVERAGE``, samples no further apart than ``MAX_GAP_S``) compete, when there
are any.

The placement is refused only when two offsets explain the telemetry equally well: another peak
of the score (at least ``DISTINCT_S`` from the best, covering the run) scores within
``TIE_REL`` of the best's R², or one plateau of offsets scoring within ``TIE_R2`` of the best
is wider than ``MAX_PLATEAU_S``; the refusal names both starts.
Also when the telemetry does not cover the run, or does not show its work: over the run's own
span, a sample whose window the log says was busy reads higher than one it says was idle in
fewer than ``MIN_SEPARATION`` of such pairs (``separation``, averaged over the signals: a
recording of another run), or its work explains less than ``MIN_R2`` of the variation.

    >>> import numpy as np
    >>> seg = np.array([[10.0, 20.0, 1, 0], [40.0, 45.0, 2, 0]])
    >>> t = np.arange(0.0, 100.0, 0.5) + 1000.0
    >>> work = Work(seg)
    >>> util = 90.0 * work.features(t - 1003.0, 0.5)[0]
    >>> round(place(work, {"util": (t, util, 0.5)})["offset_s"], 2)
    1003.0
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

UTIL_WINDOW_S = 0.5  # utilisation: the share of a short window before the sample that was busy
POWER_WINDOW_S = 1.0  # power.draw / dmon pwr: an average over the last second
DISTINCT_S = 2.0  # two offsets closer than this are one placement
TIE_R2 = 0.02  # the plateau: offsets scoring within this R² of the best around it
TIE_REL = 0.05  # two placements explaining the same samples within 5 % of R² are a tie
MAX_PLATEAU_S = 10.0  # one placement spread wider than this is no placement
MIN_SEPARATION = 0.95  # below: the telemetry is not clearly higher while the log works than idle
MIN_R2 = 0.1  # below: the run's work explains next to nothing of the telemetry
FIT_MARGIN_S = 5.0  # the run's own span: its first work to its last, widened by this
MIN_COVERAGE = 0.9  # share of the log's busy seconds the telemetry covers
MAX_GAP_S = 5.0  # samples further apart than this (and 4 median intervals) leave a gap
COARSE_POINTS = 4000
CHUNK = 2_000_000  # offsets x samples evaluated at once


class Work:
    """A run's work on its own clock: segments ``(t0, t1, decoding, prefilling)`` (the state
    timeline; idle segments are left out).

    Example: ``Work(timeline(logs).select("t0", "t1", "decoding", "prefilling").to_numpy())``
    """

    def __init__(self, segments: np.ndarray):
        seg = np.asarray(segments, dtype=np.float64).reshape(-1, 4)
        seg = seg[(seg[:, 1] > seg[:, 0]) & ((seg[:, 2] > 0) | (seg[:, 3] > 0))]
        seg = seg[np.argsort(seg[:, 0])]
        self.segments = seg
        bp = np.unique(np.concatenate([seg[:, 0], seg[:, 1]])) if len(seg) else np.zeros(1)
        mid = (bp[:-1] + bp[1:]) / 2
        busy = np.zeros(len(mid))
        dec = np.zeros(len(mid))
        pre = np.zeros(len(mid))
        for a, b, d, p in seg:
            m = (mid >= a) & (mid < b)
            busy[m] = 1.0
            dec[m] += d
            pre[m] = np.maximum(pre[m], float(p > 0))
        self.bp = bp
        dt = np.diff(bp)
        self.cum = [np.concatenate([[0.0], np.cumsum(v * dt)]) for v in (busy, dec, pre)]
        self.busy_s = float(self.cum[0][-1])
        self.first = float(seg[0, 0]) if len(seg) else 0.0
        self.last = float(seg[:, 1].max()) if len(seg) else 0.0
        merged: list[list[float]] = []
        for a, b in seg[:, :2]:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.busy = np.array(merged, dtype=np.float64).reshape(-1, 2)

    def features(self, x: np.ndarray, width: float) -> np.ndarray:
        """Mean over ``[x - width, x]`` (log clock) of busy (0/1), requests decoding and
        prefilling (0/1): shape ``(3, *x.shape)``."""
        out = np.empty((3, *x.shape))
        for i, c in enumerate(self.cum):
            out[i] = (np.interp(x, self.bp, c) - np.interp(x - width, self.bp, c)) / width
        return out

    def covered(self, offsets: np.ndarray, sample_t: np.ndarray) -> np.ndarray:
        """Share of the busy seconds between two telemetry samples (no further apart than
        ``MAX_GAP_S`` and 4 median intervals) at each offset."""
        if self.busy_s <= 0 or len(sample_t) < 2:
            return np.zeros(len(offsets))
        t = np.unique(sample_t)
        gaps = np.diff(t)
        ok = gaps <= max(min(MAX_GAP_S, 4 * float(np.median(gaps))), 1e-9)
        cum = np.concatenate([[0.0], np.cumsum(np.where(ok, gaps, 0.0))])
        a = self.busy[:, 0][None, :] + offsets[:, None]
        b = self.busy[:, 1][None, :] + offsets[:, None]
        return (np.interp(b, t, cum) - np.interp(a, t, cum)).sum(axis=1) / self.busy_s


def _r2(work: Work, t: np.ndarray, y: np.ndarray, width: float,
        offsets: np.ndarray) -> np.ndarray:
    """R² of ``y`` (sampled at sorted times ``t``) fitted by least squares to the work's
    features at each offset, over the samples of the run's own span at that offset (its first
    work to its last ± FIT_MARGIN_S). Fewer than 8 samples, or a flat signal: 0."""
    out = np.zeros(len(offsets))
    if len(t) == 0 or len(offsets) == 0:
        return out
    order = np.argsort(offsets)
    offsets = offsets[order]
    # a chunk of neighbouring offsets needs only the samples near its windows
    dur = max(float(t[-1] - t[0]), 1e-9)
    width_s = work.last - work.first + 2 * FIT_MARGIN_S
    per_window = max(8.0, 2.0 * len(t) * width_s / dur)
    step = float(np.median(np.diff(offsets))) if len(offsets) > 1 else 0.0
    per = max(1, int(CHUNK // per_window))
    if step > 0:  # a chunk spans at most one window more: its slice stays near one window
        per = max(1, min(per, int(width_s / step)))
    for s in range(0, len(offsets), per):
        o = offsets[s:s + per]
        lo = o[:, None] + work.first - FIT_MARGIN_S
        hi = o[:, None] + work.last + FIT_MARGIN_S
        i0 = int(np.searchsorted(t, lo.min(), side="left"))
        i1 = int(np.searchsorted(t, hi.max(), side="right"))
        tt, yy = t[i0:i1], y[i0:i1]
        if len(tt) == 0:
            continue
        m = ((tt[None, :] >= lo) & (tt[None, :] <= hi)).astype(np.float64)  # (k, n)
        n = m.sum(axis=1)
        nn = np.maximum(n, 1.0)
        yc = (yy[None, :] - (m * yy).sum(axis=1, keepdims=True) / nn[:, None]) * m
        sst = (yc * yc).sum(axis=1)
        x = work.features(tt[None, :] - o[:, None], width)  # (3, k, n)
        x = (x - (x * m).sum(axis=2, keepdims=True) / nn[None, :, None]) * m
        g = np.einsum("ikn,jkn->kij", x, x)
        g += np.eye(3)[None] * (1e-9 + 1e-9 * np.trace(g, axis1=1, axis2=2)[:, None, None])
        xy = np.einsum("ikn,kn->ki", x, yc)
        beta = np.linalg.solve(g, xy[..., None])[..., 0]
        r2 = np.einsum("ki,ki->k", beta, xy) / np.where(sst > 0, sst, 1.0)
        # work raises utilisation and power: a fit that reads the telemetry upside down
        # (busier while the log is idle) explains nothing
        ok = (n >= 8) & (sst > 0) & (beta[:, 0] + beta[:, 1] > 0)
        out[order[s:s + per]] = np.where(ok, r2, 0.0)
    return np.clip(out, 0.0, 1.0)


def _score(work: Work, signals: dict[str, tuple[np.ndarray, np.ndarray, float]],
           offsets: np.ndarray, step: float) -> np.ndarray:
    return np.mean([_r2(work, t, y, max(w, step), offsets) for t, y, w in signals.values()],
                   axis=0)


def _peaks(grid: np.ndarray, sc: np.ndarray, tie: float,
           n: int = 5) -> tuple[tuple[float, float], list[float]]:
    """(the plateau around the best offset: its first and last offset scoring within ``tie``
    of the best; the other candidate placements: the ``n`` highest local maxima of the score
    at least ``DISTINCT_S`` from the best and from each other, best first)."""
    k = int(np.argmax(sc))
    top = sc[k]
    i = j = k
    while i > 0 and sc[i - 1] >= top - tie:
        i -= 1
    while j + 1 < len(sc) and sc[j + 1] >= top - tie:
        j += 1
    left = np.concatenate([[-np.inf], sc[:-1]])
    right = np.concatenate([sc[1:], [-np.inf]])
    idx = np.arange(len(sc))
    peak = (sc >= left) & (sc >= right) & (sc > 0) & ((idx < i) | (idx > j))
    out: list[float] = []
    for m in np.flatnonzero(peak)[np.argsort(-sc[peak])]:
        g = float(grid[m])
        if all(abs(g - x) >= DISTINCT_S for x in [float(grid[k]), *out]):
            out.append(g)
            if len(out) == n:
                break
    return (float(grid[i]), float(grid[j])), out


def place(work: Work, signals: dict[str, tuple[np.ndarray, np.ndarray, float]],
          span: tuple[float, float] | None = None) -> dict[str, Any] | None:
    """The wall-clock time (Unix s) of the log's zero that best explains the telemetry.

    ``signals``: ``{name: (sample times (Unix s), values, window s)}`` (utilisation and power;
    a signal that does not vary is left out by the caller). Offsets are searched over every
    placement where the log overlaps the telemetry (``span``: its first and last sample by
    default), coarse (4000 points, windows widened to the step so no peak falls between steps)
    then fine down to 5 ms around the best. Returns ``offset_s``, ``score`` (R² at the best
    offset, averaged over the signals), ``r`` (its square root, a
    correlation), ``separation`` (see above; None without 3 busy and 3 idle samples),
    ``coverage`` (share of the busy seconds the telemetry covers), ``spread_s`` and
    ``plateau`` (the offsets scoring within ``TIE_R2`` of the best around it), ``runner_up_s``
    and ``runner_up_score`` (the best separate covered placement and its R², or None),
    ``runner_up_vs`` (the best's R²), ``signals``; None without work or telemetry.
    :func:`refusal` says whether to use it.
    """
    if not signals or len(work.segments) == 0:
        return None
    ts = np.concatenate([t for t, _, _ in signals.values()])
    span = span or (float(ts.min()), float(ts.max()))
    lo, hi = span[0] - work.last, span[1] - work.first
    step = max(0.05, (hi - lo) / COARSE_POINTS)
    grid = np.arange(lo, hi + step, step)
    sc = _score(work, signals, grid, step)
    cover = work.covered(grid, ts)
    if (cover >= MIN_COVERAGE).any():  # only placements the telemetry covers compete
        sc = np.where(cover >= MIN_COVERAGE, sc, -1.0)
    plateau, others = _peaks(grid, sc, TIE_R2)

    def refine(at: float, step: float) -> float:
        while step > 0.005:
            step = max(step / 10, 0.005)
            fine = np.arange(at - 10 * step, at + 10.5 * step, step)
            at = float(fine[int(np.argmax(_score(work, signals, fine, step)))])
        return at

    def separation(at: float) -> float | None:
        """Over the run's own span at ``at``: the share of (busy sample, idle sample) pairs in
        which the busy one reads higher (ties half), averaged over the signals with at least
        3 samples of each (None without)."""
        got = []
        for t, y, w in signals.values():
            m = (t >= at + work.first - FIT_MARGIN_S) & (t <= at + work.last + FIT_MARGIN_S)
            b = work.features(t[m] - at, w)[0]
            hi, lo = y[m][b >= 0.9], y[m][b <= 0.01]
            if len(hi) >= 3 and len(lo) >= 3:
                d = hi[:, None] - lo[None, :]
                got.append(float((d > 0).mean() + 0.5 * (d == 0).mean()))
        return float(np.mean(got)) if got else None

    best = refine(float(grid[int(np.argmax(sc))]), step)
    top = float(_score(work, signals, np.array([best]), 0.0)[0])
    sep = separation(best)
    other = other_r2 = None
    for o in others:  # the best separate placement the telemetry covers
        o = refine(o, step)
        if work.covered(np.array([o]), ts)[0] < MIN_COVERAGE:
            continue
        r2 = float(_score(work, signals, np.array([o]), 0.0)[0])
        if other_r2 is None or r2 > other_r2:
            other, other_r2 = o, r2
    return {"offset_s": best, "score": top, "r": float(np.sqrt(top)),
            "coverage": float(work.covered(np.array([best]), ts)[0]),
            "spread_s": plateau[1] - plateau[0], "plateau": plateau,
            "runner_up_s": other, "runner_up_score": other_r2, "runner_up_vs": top,
            "separation": sep, "signals": ",".join(signals)}


def when(offset: float) -> str:
    """A wall-clock time as ``--start-time`` takes it (ISO 8601, UTC, 0.1 s)."""
    d = datetime.fromtimestamp(offset, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 100000}Z"


def refusal(fit: dict[str, Any]) -> str | None:
    """Why a :func:`place` result cannot place the log (one clause), or None to use it: two
    separate offsets explain the telemetry equally well (named), one placement spread wider
    than ``MAX_PLATEAU_S``, the telemetry covering too little of the run, or not showing its
    work at all.

    Example: refusal({"score": 0.8, "separation": 1.0, "coverage": 1.0, "spread_s": 0.4,
    "offset_s": 0.0, "runner_up_s": 30.0, "runner_up_score": 0.79, "runner_up_vs": 0.8})
    """
    if fit["coverage"] < MIN_COVERAGE:
        return (f"only {100 * fit['coverage']:.0f} % of its busy time lies inside the "
                "telemetry at the best placement")
    if fit["score"] < MIN_R2:
        return (f"at its best placement its work explains {100 * fit['score']:.0f} % of the "
                "telemetry's variation: the telemetry may be another run's")
    if fit.get("separation") is not None and fit["separation"] < MIN_SEPARATION:
        return ("at its best placement the GPU is not clearly busier while its requests run "
                f"than while it is idle (busy above idle in {100 * fit['separation']:.0f} % of "
                f"sample pairs < {100 * MIN_SEPARATION:.0f} %): the telemetry may be another "
                "run's")
    if fit.get("runner_up_s") is not None and fit["runner_up_score"] is not None \
            and fit["runner_up_score"] >= (1 - TIE_REL) * fit["runner_up_vs"]:
        return (f"two placements explain the telemetry equally well: server start "
                f"{when(fit['offset_s'])} (R² {fit['runner_up_vs']:.3f}) or "
                f"{when(fit['runner_up_s'])} (R² {fit['runner_up_score']:.3f})")
    if fit["spread_s"] > MAX_PLATEAU_S:
        lo, hi = fit.get("plateau") or (fit["offset_s"], fit["offset_s"] + fit["spread_s"])
        return (f"every server start from {when(lo)} to {when(hi)} explains the telemetry "
                "equally well")
    return None
