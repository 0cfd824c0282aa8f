"""Energy per request and the estimated clock on the real H200 runs (fixtures/telemetry/h200).

For each run and telemetry file: the estimated wall-clock time of the log's zero against the
server's true start (from /proc, ../shared/corpus/README.md), and each completed request's
prefill + decode energy against a straightforward integration of the raw CSV (power joined by
straight lines on a 1 ms grid, each millisecond shared by the token rates of the requests
computing in it, with the true start).

    python bench/energy.py
"""

from __future__ import annotations

import csv
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from logscope.telemetry import read_with_telemetry

H200 = Path(__file__).resolve().parent.parent / "fixtures" / "telemetry" / "h200"
TRUE_START = {"generated-gpu-pressure-np4-ctxshift": 1796156563.556,
              "generated-gpu-colors-tty": 1796156542.805}


def straightforward(csv_path: Path, req: pl.DataFrame, start: float) -> dict[int, float]:
    with open(csv_path) as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    t = np.array([datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
                  .replace(tzinfo=UTC).timestamp() - start for r in rows])
    p = np.array([float(r["power.draw [W]"].split()[0]) for r in rows])
    done = req.filter(pl.col("decode_ms").is_not_null()).to_dicts()
    grid = np.arange(0.0, max(r["t_end"] for r in done) + 0.01, 0.001) + 0.0005
    power = np.interp(grid, t, p)
    rates = np.zeros((len(done), len(grid)))
    for i, r in enumerate(done):
        d0 = r["t_end"] - r["decode_ms"] / 1e3
        p0 = d0 - r["prompt_ms"] / 1e3
        rates[i, (grid >= p0) & (grid < d0)] = r["prompt_tokens"] / (d0 - p0)
        rates[i, (grid >= d0) & (grid < r["t_end"])] = r["gen_tokens"] / (r["t_end"] - d0)
    tot = rates.sum(axis=0)
    share = np.divide(rates, tot, out=np.zeros_like(rates), where=tot > 0)
    return {r["task"]: float(x) for r, x in zip(done, (share * power * 0.001).sum(axis=1),
                                                 strict=True)}


def main() -> None:
    for name, start in TRUE_START.items():
        csv_path = H200 / f"{name}.smi.csv"
        for ext in (".smi.csv", ".dmon.txt"):
            t = time.perf_counter()
            logs = read_with_telemetry([str(H200 / f"{name}.log"), str(H200 / f"{name}{ext}")])
            took = time.perf_counter() - t
            e = logs["energy_runs"].row(0, named=True)
            print(f"{name} + {ext}: offset error {e['clock_offset_s'] - start:+.3f} s "
                  f"(fit r {e['clock_fit_r']:.3f}, spread {e['clock_fit_spread_s']:.2f} s), "
                  f"total {e['total_j']:,.0f} J, idle {e['idle_j']:,.0f} J, decode "
                  f"{1e3 * e['decode_j_per_token']:,.0f} mJ/token, read+join {took:.2f} s")
            if ext != ".smi.csv":
                continue
            want = straightforward(csv_path, logs["requests"], start)
            for r in logs["requests"].filter(pl.col("decode_ms").is_not_null()).to_dicts():
                got = r["prefill_energy_j"] + r["decode_energy_j"]
                w = want[r["task"]]
                print(f"  task {r['task']:>5}: {got:9.1f} J vs {w:9.1f} J straightforward "
                      f"({100 * (got - w) / w:+.2f} %), {r['gen_tokens']} generated")
            tot_got = sum(r["prefill_energy_j"] + r["decode_energy_j"] for r in
                          logs["requests"].filter(pl.col("decode_ms").is_not_null()).to_dicts())
            print(f"  all completed: {tot_got:,.1f} J vs {sum(want.values()):,.1f} J "
                  f"({100 * (tot_got - sum(want.values())) / sum(want.values()):+.2f} %)")


if __name__ == "__main__":
    main()
