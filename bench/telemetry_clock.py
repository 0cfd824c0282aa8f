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

import polars as pl

from logscope.analysis.concurrency import timeline
from logscope.ingest import read
from logscope.telemetry import placement, read_samples
from logscope.telemetry.energy import Power, _run_ends, signals_of

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
                               .to_numpy(), float(_run_ends(lg)["t_end"].max()))
             for n, lg in logs.items()}
    truths = {n: truth(corpus, n, lg) for n, lg in logs.items()}
    samples = {(n, e): read_samples([str(corpus / f"generated-{n}{e}")])
               for n, exts in RUNS.items() for e in exts}
    print("| log | telemetry | variant | pair | error s | R² | R² own span | contrast | runner-up "
          "(s from best, R² vs the best's on the same samples) | plateau s | verdict | old fit |")
    print("|---|---|---|---|---:|---:|---:|---:|---|---:|---|---|")
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
                      f"{fit['score']:.3f} | {fit['local_r2']:.3f} | {_c(fit['contrast'])} | "
                      f"{ru} | {fit['spread_s']:.2f} | "
                      f"{'refused: ' + why if why else 'placed'} ({took:.1f} s) | {oldv} |")
    print()
    for n, (true, width) in truths.items():
        print(f"truth {n}: log zero {true:.3f} (bracket {1e3 * width:.1f} ms)")


def _c(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _old(lg, power: Power) -> str:
    from logscope.telemetry.energy import estimate_offset, stretches

    est = estimate_offset(stretches(lg["requests"]), power, float(_run_ends(lg)["t_end"].max()))
    if est is None:
        return "no fit"
    return f"r {est['r']:.2f}: " + ("refused" if est["r"] < 0.7 else "placed")


if __name__ == "__main__":
    main()
