"""Whole-run joules per completion token: ``logscope`` against an independent integral.

For each run of the H100 sweep (and the two H200 runs), the figure ``report`` gives
(``energy_runs.run_j_per_token``: the telemetry's power integrated from the first request's
arrival to the last response, on the log's clock placed on the telemetry's by the busy/idle
pattern, ÷ the log's completion tokens) against a straightforward computation that never
touches logscope's clock or parser: the CSV read with the ``csv`` module, power joined by
straight lines (``numpy.interp`` on a 1 ms grid) from the first client ``t_send`` to the last
client ``t_end`` (Unix s), ÷ the clients' ``completion_tokens``. Then the ratio of every pair
of sweep runs, both ways, and ``compare``'s verdict rows for the pair (whole run, and the
decode share), with their 95 % intervals.

    python bench/energy_run.py [CORPUS_DIR]   # default ../shared/corpus
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import numpy as np

from logscope.analysis.verdict import verdict
from logscope.telemetry import read_with_telemetry

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("gpu-sweep-np1", "gpu-sweep-np2", "gpu-sweep-np4", "gpu-pressure-np4-ctxshift",
        "gpu-colors-tty")


def independent(csv_path: Path, client_path: Path) -> tuple[float, float, int]:
    """(joules from first send to last response, seconds, completion tokens)."""
    with open(csv_path) as f:
        rows = list(csv.reader(f, skipinitialspace=True))
    head = [h.strip() for h in rows[0]]
    it, ip = head.index("timestamp"), head.index("power.draw [W]")
    t = np.array([datetime.strptime(r[it].strip(), "%Y/%m/%d %H:%M:%S.%f")
                  .replace(tzinfo=UTC).timestamp() for r in rows[1:]])
    p = np.array([float(r[ip].split()[0]) for r in rows[1:]])
    with open(client_path) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    a = min(r["t_send"] for r in recs)
    b = max(r["t_end"] for r in recs)
    grid = np.arange(a, b, 0.001)
    joules = float(np.interp(grid + 0.0005, t, p).sum() * 0.001)
    return joules, b - a, sum(_tokens(r) for r in recs)


def _tokens(r: dict) -> int:
    if r.get("completion_tokens") is not None:
        return int(r["completion_tokens"])
    if (r.get("usage") or {}).get("completion_tokens") is not None:
        return int(r["usage"]["completion_tokens"])
    return int((r.get("timings") or {}).get("predicted_n") or 0)


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpus"
    print("| run | logscope J/token (whole run) | span s | tokens | independent J/token | span s "
          "| tokens | Δ | busy only J/token | decode share mJ/token | clock |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    got, frames = {}, {}
    for n in RUNS:
        base = corpus / f"generated-{n}"
        lg = read_with_telemetry([f"{base}.log", f"{base}.smi.csv"])
        frames[n] = lg
        e = lg["energy_runs"].row(0, named=True)
        j, s, tok = independent(Path(f"{base}.smi.csv"), Path(f"{base}.client.jsonl"))
        mine, ref = e["run_j_per_token"], j / tok
        got[n] = (mine, ref)
        print(f"| {n} | {mine:.4f} | {e['run_t1'] - e['run_t0']:.2f} | {e['completion_tokens']:,} "
              f"| {ref:.4f} | {s:.2f} | {tok:,} | {100 * (mine - ref) / ref:+.2f} % "
              f"| {e['work_j_per_token']:.4f} | {1e3 * e['decode_j_per_token']:.1f} "
              f"| {e['clock_offset_source']} |")
    print()
    print("| pair (B/A) | logscope | independent | Δ | verdict whole run (95 % CI) "
          "| verdict decode share (95 % CI) |")
    print("|---|---:|---:|---:|---|---|")
    sweep = [n for n in RUNS if "sweep" in n]
    for x, y in combinations(sweep, 2):
        for a, b in ((x, y), (y, x)):
            mine, ref = got[b][0] / got[a][0], got[b][1] / got[a][1]
            v = {r["question"]: r for r in verdict(frames[a], frames[b], (a, b))}
            print(f"| {b.removeprefix('gpu-sweep-')}/{a.removeprefix('gpu-sweep-')} | "
                  f"{mine:.3f} | {ref:.3f} | {100 * (mine - ref) / ref:+.2f} % | "
                  f"{_v(v['energy_per_token_run'])} | {_v(v['energy_per_token'])} |")


def _v(r: dict) -> str:
    if r["ratio"] is None:
        return "no verdict"
    return f"{r['ratio']:.3f} ({r['ci95'][0]:.3f}–{r['ci95'][1]:.3f})"


if __name__ == "__main__":
    main()
