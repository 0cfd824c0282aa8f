#!/usr/bin/env python3
"""Concurrency answers against the clients' own records.

    python bench/concurrency.py        # ../shared/corpus (the H100 sweep and every GPU/CPU run)

1. Every corpus run: the states add up (seconds to the span, tokens to the tokens generated),
   and at k = 1 per stream equals aggregate; the (1, 0) row of the three runs whose two
   figures used to contradict each other.
2. Every run with client records: served throughput (completion tokens ÷ served span) against
   the clients' (completion tokens ÷ first send to last response), and the speed per stream as
   served against the clients' median decode rate.
3. Every pair of the sweep (np1, np2, np4): compare's trade (throughput ratio, per-stream
   ratio, their intervals) against the clients' ratios, within 8 %.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import logscope  # noqa: E402
from logscope.analysis.concurrency import concurrency, run_spans, states  # noqa: E402
from logscope.analysis.served import served  # noqa: E402
from logscope.analysis.verdict import verdict  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpus"


def client(log: Path) -> dict | None:
    path = log.with_name(log.name.replace(".log", ".client.jsonl"))
    if not path.exists():
        return None
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rates, toks = [], 0
    for r in recs:
        t = None
        for holder in (r, r.get("response"), r.get("final_chunk"), r.get("last_chunk")):
            if isinstance(holder, dict) and isinstance(holder.get("timings"), dict):
                t = holder["timings"]
                break
        if t and t.get("predicted_n", 0) >= 16:
            rates.append(t["predicted_per_second"])
        if t:
            toks += t.get("predicted_n", 0)
    sends = [r.get("t_send", r.get("t_start")) for r in recs if "t_send" in r or "t_start" in r]
    ends = [r["t_end"] for r in recs if "t_end" in r]
    if not rates or not sends:
        return None
    return {"per_stream": statistics.median(rates), "tokens": toks,
            "throughput": toks / (max(ends) - min(sends))}


def pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f} %"


def main() -> None:
    logs = sorted(SHARED.glob("generated-*.log"))
    read = {p: logscope.read(str(p)) for p in logs}
    print("## states add up\n")
    print("| run | span s | states s | tokens generated | states' tokens | stall s | "
          "(1,0) per stream | (1,0) aggregate | (1,0) median request |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p, lg in read.items():
        st = states(lg)
        spans = run_spans(lg)
        span = sum(hi - lo for lo, hi in spans.values())
        req = lg.get("requests")
        gen = req.filter(pl.col("decode_ms").is_not_null())["gen_tokens"].sum()
        c = concurrency(lg).filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)
        r = c.row(0, named=True) if c.height else {}
        stall = st.filter(pl.col("state") == "stall")["seconds"].sum()
        print(f"| {p.name} | {span:,.2f} | {st['seconds'].sum():,.2f} | {gen:,} | "
              f"{st['tokens'].sum():,.0f} | {stall:,.1f} | "
              f"{r.get('per_stream_tps') or float('nan'):,.2f} | "
              f"{r.get('aggregate_tps') or float('nan'):,.2f} | "
              f"{r.get('median_request_tps') or float('nan'):,.2f} |")
    print("\n## served throughput and speed per stream against the clients\n")
    print("| run | throughput | client | Δ | per stream as served | client median | Δ |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    truth = {}
    for p, lg in read.items():
        cl = client(p)
        if cl is None:
            continue
        truth[p] = cl
        s = served(lg)
        print(f"| {p.name} | {s['throughput_tps']:,.2f} | {cl['throughput']:,.2f} | "
              f"{pct(s['throughput_tps'], cl['throughput'])} | {s['per_stream_tps']:,.2f} | "
              f"{cl['per_stream']:,.2f} | {pct(s['per_stream_tps'], cl['per_stream'])} |")
    print("\n## compare on the sweep: both sides of the trade against the clients\n")
    print("| A → B | throughput B/A | CI | client | Δ | per stream B/A | CI | client | Δ | "
          "sentence |")
    print("|---|---:|---|---:|---:|---:|---|---:|---:|---|")
    sweep = [SHARED / f"generated-gpu-sweep-np{n}.log" for n in (1, 2, 4)]
    for a, b in itertools.combinations([p for p in sweep if p in read], 2):
        rows = {r["question"]: r for r in verdict(read[a], read[b], (a.stem[-3:], b.stem[-3:]))}
        t, ps = rows["throughput"], rows["decode_per_stream"]
        ct = truth[b]["throughput"] / truth[a]["throughput"]
        cp = truth[b]["per_stream"] / truth[a]["per_stream"]
        print(f"| {a.stem[-3:]} → {b.stem[-3:]} | {t['ratio']:.3f} | "
              f"{t['ci95'][0]:.2f}–{t['ci95'][1]:.2f} | {ct:.3f} | {pct(t['ratio'], ct)} | "
              f"{ps['ratio']:.3f} | {ps['ci95'][0]:.2f}–{ps['ci95'][1]:.2f} | {cp:.3f} | "
              f"{pct(ps['ratio'], cp)} | {rows['trade']['sentence']} |")


if __name__ == "__main__":
    main()
