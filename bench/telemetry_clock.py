"""Placement of logs on their telemetry's clock, against the truth from the clients' records.

Every corpus GPU log with telemetry (the H100 sweep at 1, 2 and 4 slots; the two H200 runs with
their CSV and dmon) is placed by :func:`logscope.telemetry.placement.place` (the whole run's
busy/idle pattern from ``logscope.analysis.concurrency.timeline`` against utilisation and
power). The truth: each log's requests sorted by release map, in order, to the client records
sorted by ``t_end`` (Unix s); the log's zero is ``min(client t_end - log t_end)`` (a response
reaches the client a few ms after its release; ``max(t_send - launch)`` bounds it from below,
the bracket is printed). Harder variants of each right pair, from the same files: power only,
the telemetry cut to the log's busy span (no idle edges), one sample per second, both. Wrong
pairs: each log against every other run's telemetry. ``--old`` also runs the correlation fit
this replaced (``estimate_offset`` + ``weak_fit`` at r >= 0.7).

    python bench/telemetry_clock.py [CORPUS_DIR] [--old]   # default ../shared/corpus
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from logscope.analysis.concurrency import timeline
from logscope.ingest import read
from logscope.telemetry import placement, read_samples
from logscope.telemetry.energy import Power, _reference, _run_ends, signals_of, stretches

ROOT = Path(__file__).resolve().parent.parent
RUNS = {"gpu-sweep-np1": (".smi.csv",), "gpu-sweep-np2": (".smi.csv",),
        "gpu-sweep-np4": (".smi.csv",), "gpu-pressure-np4-ctxshift": (".smi.csv", ".dmon.txt"),
        "gpu-colors-tty": (".smi.csv", ".dmon.txt")}


def truth(corpus: Path, name: str, logs) -> tuple[float, float]:
    """(the log's zero in Unix s from the client records, the bracket's width in s)."""
    req = logs["requests"]
    cl = pl.read_ndjson(corpus / f"generated-{name}.client.jsonl")
    hi = (cl.sort("t_end")["t_end"] - req.sort("t_end")["t_end"]).min()
    lo = (cl.sort("t_send")["t_send"] - req.sort("t_start")["t_start"]).max()
    return float(hi), float(hi - lo)


def variants(samples: pl.DataFrame, work: placement.Work, start: float) -> dict[str, pl.DataFrame]:
    a, b = start + work.first, start + work.last
    inside = samples.filter(pl.col("ts").dt.epoch("us") / 1e6 >= a,
                            pl.col("ts").dt.epoch("us") / 1e6 <= b)
    every = samples.filter(pl.int_range(pl.len()).mod(2) == 0) \
        if samples["source"][0] == "nvidia-smi-query" else samples
    return {"as recorded": samples,
            "power only": samples.with_columns(pl.lit(None, pl.Int16).alias("util_gpu_pct")),
            "busy span only": inside,
            "1 s samples": every,
            "busy span, power only": inside.with_columns(
                pl.lit(None, pl.Int16).alias("util_gpu_pct"))}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    old = "--old" in sys.argv
    corpus = Path(args[0]) if args else ROOT.parent / "shared" / "corpus"
    logs = {n: read(str(corpus / f"generated-{n}.log")) for n in RUNS}
    works = {n: placement.Work(timeline(lg).select("t0", "t1", "decoding", "prefilling")
                               .to_numpy()) for n, lg in logs.items()}
    truths = {n: truth(corpus, n, lg) for n, lg in logs.items()}
    samples = {(n, e): read_samples([str(corpus / f"generated-{n}{e}")])
               for n, exts in RUNS.items() for e in exts}
    print("| log | telemetry | variant | pair | error s | R² | separation | runner-up "
          "(s from best, R² vs the best's on the same samples) | plateau s | verdict | old fit |")
    print("|---|---|---|---|---:|---:|---:|---|---:|---|---|")
    for n, work in works.items():
        true, width = truths[n]
        for (tn, e), s in samples.items():
            right = tn == n
            for v, sv in (variants(s, work, true) if right else {"as recorded": s}).items():
                power = Power(sv)
                t = time.perf_counter()
                fit = placement.place(work, signals_of(power))
                took = time.perf_counter() - t
                if fit is None:
                    print(f"| {n} | {tn}{e} | {v} | — | no fit |")
                    continue
                why = placement.refusal(fit)
                ru = "—" if fit["runner_up_s"] is None else (
                    f"{fit['runner_up_s'] - fit['offset_s']:+.1f}, "
                    f"{fit['runner_up_score']:.3f} vs {fit['runner_up_vs']:.3f}")
                err = f"{fit['offset_s'] - true:+.3f}" if right else "—"
                oldv = _old(logs[n], power) if old else ""
                print(f"| {n} | {tn}{e} | {v} | {'right' if right else 'wrong'} | {err} | "
                      f"{fit['score']:.3f} | {_c(fit['separation'])} | "
                      f"{ru} | {fit['spread_s']:.2f} | "
                      f"{'refused: ' + why if why else 'placed'} ({took:.1f} s) | {oldv} |")
    print()
    for n, (true, width) in truths.items():
        print(f"truth {n}: log zero {true:.3f} (bracket {1e3 * width:.1f} ms)")


def _c(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _old(lg, power: Power) -> str:
    est = _estimate_offset(stretches(lg["requests"]), power,
                           float(_run_ends(lg)["t_end"].max()))
    if est is None:
        return "no fit"
    return f"r {est['r']:.2f}: " + ("refused" if est["r"] < 0.7 else "placed")


# -- the correlation fit the placement replaced (for --old), as it was in the library ----------

UTIL_WINDOW_S, POWER_WINDOW_S, FIT_MARGIN_S = 0.5, 1.0, 5.0


class _Busy:
    """The log's computing time (prefill and decode stretches, merged), as a function of time."""

    def __init__(self, st: pl.DataFrame):
        iv = st.filter(pl.col("phase").is_in(["prefill", "decode"]), pl.col("t1") > pl.col("t0"))
        iv = iv.select("t0", "t1").sort("t0")
        merged: list[list[float]] = []
        for x, y in zip(iv["t0"].to_list(), iv["t1"].to_list(), strict=True):
            if merged and x <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], y)
            else:
                merged.append([x, y])
        self.m = np.array(merged, dtype=np.float64).reshape(-1, 2)
        self.cum = np.concatenate([[0.0], np.cumsum(self.m[:, 1] - self.m[:, 0])])

    def until(self, t: np.ndarray) -> np.ndarray:
        """Busy seconds before each time in ``t``."""
        if len(self.m) == 0:
            return np.zeros(len(t))
        k = np.searchsorted(self.m[:, 0], t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - self.m[kk, 0], 0, self.m[kk, 1] - self.m[kk, 0])
        return np.where(k >= 0, self.cum[kk] + inside, 0.0)

    def fraction(self, t: np.ndarray, width: float) -> np.ndarray:
        """Share of [t - width, t] in which some request computed."""
        return (self.until(t) - self.until(t - width)) / width



def _estimate_offset(st: pl.DataFrame, power: Power, log_end: float) -> dict[str, float] | None:
    """The wall-clock time (Unix s) of a run's log zero that best lines its computing stretches
    up with the GPUs' utilisation and power.

    A candidate offset scores the correlation, over the samples, between utilisation and the
    share of the 0.5 s before each sample in which a request computed (prefill or decode), plus
    the same for power over the 1 s before each sample (power.draw is a one-second average).
    Offsets are searched over the whole telemetry span, coarse to fine (down to 5 ms); a coarse
    step looks through a window at least as wide as the step, so no peak falls between steps.
    Returns ``offset_s``, ``score`` (the best score over the number of signals used: a
    correlation over the whole telemetry), ``r`` (the same correlation at the best offset, over
    the samples inside the log's busy span ± 5 s only: it does not fall when the telemetry also
    recorded other runs), ``coverage`` (the share of the log's busy seconds inside the
    telemetry's span) and ``spread_s`` (how far apart the offsets scoring within 0.02 of the
    best lie: how sharply the fit is pinned), or None without computing time or varying
    telemetry. :func:`weak_fit` says whether to trust it.
    """
    span = power.span
    busy = _Busy(st)
    if span is None or len(busy.m) == 0:
        return None
    refs = [(r, w) for r, w in ((_reference(power, "util_gpu_pct"), UTIL_WINDOW_S),
                                (_reference(power, "power_w"), POWER_WINDOW_S)) if r is not None]
    if not refs:
        return None

    first, last = float(busy.m[0, 0]), float(busy.m[-1, 1])

    def score(offsets: np.ndarray, step: float) -> np.ndarray:
        out = np.zeros(len(offsets))
        for (t, y), w in refs:
            yc = (y - y.mean()) / y.std()
            n = len(t)
            width = max(w, step)  # a coarse step looks through a window as wide: no aliasing
            # the busy share is 0 outside the log's busy span: only the samples inside count
            i0 = np.searchsorted(t, first + offsets)
            i1 = np.searchsorted(t, last + offsets + width, side="right")
            for i, o in enumerate(offsets):
                b = busy.fraction(t[i0[i]:i1[i]] - o, width)
                mean = b.sum() / n
                var = (b * b).sum() / n - mean * mean
                if var > 1e-12:
                    out[i] += float((b * yc[i0[i]:i1[i]]).sum() / n / np.sqrt(var))
        return out / len(refs)

    lo, hi = span[0] - log_end, span[1]
    step = max(0.05, (hi - lo) / 4000)
    grid = np.arange(lo, hi + step, step)
    sc = score(grid, step)
    best, top = float(grid[int(np.argmax(sc))]), float(sc.max())
    near = grid[sc >= top - 0.02]
    while step > 0.005:
        step = max(step / 10, 0.005)
        fine = np.arange(best - 10 * step, best + 10 * step, step)
        sf = score(fine, step)
        best, top = float(fine[int(np.argmax(sf))]), max(top, float(sf.max()))
    lo_t, hi_t = span
    busy_s = float(busy.cum[-1])
    inside = float(sum(max(0.0, min(b + best, hi_t) - max(a + best, lo_t)) for a, b in busy.m))
    local = []
    for (t, y), w in refs:
        m = (t >= first + best - FIT_MARGIN_S) & (t <= last + best + FIT_MARGIN_S)
        if m.sum() < 4:
            continue
        b = busy.fraction(t[m] - best, w)
        ok = b.std() > 0 and y[m].std() > 0
        local.append(float(np.corrcoef(b, y[m])[0, 1]) if ok else 0.0)
    return {"offset_s": best, "score": top, "r": float(np.mean(local)) if local else 0.0,
            "coverage": inside / busy_s if busy_s > 0 else 0.0,
            "spread_s": float(near.max() - near.min())}


if __name__ == "__main__":
    main()
