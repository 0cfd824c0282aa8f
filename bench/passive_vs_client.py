"""Passive benchmark vs the client's own timings (issue 4).

For every real llama-server run in fixtures/llama-server/corpus/ (each with ``*.client.jsonl``),
match each completed client request to the log's request by token counts (as
tests/test_corpus_client.py does) and compare t/s computed by logscope's analyses
(``prefill_curve`` per-request points, ``decode_requests``) with the client's
``prompt_per_second`` / ``predicted_per_second``. Prints one Markdown row per log.

Run: python bench/passive_vs_client.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import logscope  # noqa: E402
from logscope.analysis.decode import decode_requests  # noqa: E402
from logscope.analysis.prefill import fit_prefill, prefill_curve  # noqa: E402
from tests.conftest import CORPUS, client_records, client_timings  # noqa: E402


def main() -> None:
    print("| log | matched requests | prompt tokens equal | gen tokens equal | "
          "max rel err prompt t/s | max rel err decode t/s | client wall − server total (ms), "
          "median / max | prefill fit b (s/token²) |")
    print("|---|---|---|---|---|---|---|---|")
    for log in sorted(CORPUS.glob("generated-*.log")):
        logs = logscope.read(str(log))
        req = logs["requests"].filter(pl.col("status") == "completed").with_row_index("i")
        pts = prefill_curve(logs).filter(pl.col("source") == "llama:request")
        dec = decode_requests(logs)
        used: set[int] = set()
        n = p_eq = g_eq = 0
        ep = ed = 0.0
        overhead: list[float] = []
        for rec in client_records(log):
            t = client_timings(rec)
            if t is None:
                continue
            cand = req.filter((pl.col("prompt_tokens") == t["prompt_n"])
                              & (pl.col("gen_tokens") == t["predicted_n"])
                              & ~pl.col("i").is_in(list(used)))
            exact = cand.filter(pl.col("cached_tokens") == t["cache_n"])
            row = (exact if exact.height else cand).row(0, named=True)
            used.add(row["i"])
            p = pts.filter(pl.col("task") == row["task"], pl.col("slot") == row["slot"]).row(
                0, named=True)
            d = dec.filter(pl.col("task") == row["task"], pl.col("slot") == row["slot"]).row(
                0, named=True)
            n += 1
            if rec.get("duration_s") is not None and row["total_ms"] is not None:
                overhead.append(1000 * rec["duration_s"] - row["total_ms"])
            p_eq += p["tokens"] == t["prompt_n"]
            g_eq += d["gen_tokens"] == t["predicted_n"]
            ep = max(ep, abs(p["tps"] - t["prompt_per_second"]) / t["prompt_per_second"])
            ed = max(ed, abs(d["decode_tps"] - t["predicted_per_second"])
                     / t["predicted_per_second"])
        fit = fit_prefill(prefill_curve(logs))
        b = f"{fit['b']:.3e}" if fit["valid"] else f"— ({fit['reason']})"
        ov = sorted(overhead)
        ovs = f"{ov[len(ov) // 2]:.1f} / {ov[-1]:.1f}" if ov else "—"
        print(f"| {log.name} | {n} | {p_eq}/{n} | {g_eq}/{n} | {100 * ep:.4f} % | "
              f"{100 * ed:.4f} % | {ovs} | {b} |")


if __name__ == "__main__":
    main()
