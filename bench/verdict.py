"""The verdict and the concurrency states against the clients' own records.

    python bench/verdict.py            # ../shared/corpus and the bundled runs

1. The matched speculative ON/OFF pair (same client script, prompts and seeds): compare's
   ``decode_per_stream`` ratio and its 95 % interval against the ratio of the clients' median
   per-request decode rates.
2. Every run: the alone row's per-stream decode (``concurrency``) against the median exact rate
   of the requests that decoded alone; the most requests active beside one (``others_max``)
   against the slots.
3. Every run: whether the prefill model agrees with every measured bucket (10 %).
4. SGLang and vLLM logs rendered from real runs' timelines (fixtures/*/rendered, truth beside):
   per-stream decode per state against the truth.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import logscope  # noqa: E402
from logscope.analysis.concurrency import concurrency, request_concurrency  # noqa: E402
from logscope.analysis.depth import checked_fit  # noqa: E402
from logscope.analysis.metrics import acceptance_rate, mean_accepted_length  # noqa: E402
from logscope.analysis.verdict import verdict  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpus"


def client_median(log: Path) -> float:
    rates = []
    for line in log.with_name(log.name.replace(".log", ".client.jsonl")).read_text().splitlines():
        rec = json.loads(line)
        for holder in (rec.get("response"), rec.get("final_chunk"), rec.get("last_chunk")):
            t = holder.get("timings") if isinstance(holder, dict) else None
            if isinstance(t, dict) and t.get("predicted_n", 0) >= 16:
                rates.append(t["predicted_per_second"])
                break
    return statistics.median(rates)


def main() -> None:
    spec, base = SHARED / "generated-spec-c32k-np2.log", SHARED / "generated-base-c32k-np2.log"
    if spec.exists():
        truth = client_median(base) / client_median(spec)
        v = verdict(logscope.read(str(spec)), logscope.read(str(base)), ("spec", "base"))[0]
        lo, hi = v["ci95"]
        print(f"pair: clients' median ratio base/spec {truth:.3f}; verdict {v['ratio']:.3f} "
              f"({100 * (v['ratio'] / truth - 1):+.1f} %), 95 % CI {lo:.2f}–{hi:.2f}, "
              f"contains it: {lo <= truth <= hi}, n {v['n']}")
    logs = sorted(SHARED.glob("*.log")) + sorted(
        (ROOT / "fixtures" / "llama-server" / "h200").glob("*.log"))
    print("\n| run | alone row t/s | median of alone requests | n alone | Δ | others max | "
          "model agrees |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for log in logs:
        lg = logscope.read(str(log))
        rc = request_concurrency(lg)
        alone = rc.filter(pl.col("alone"), pl.col("gen_tokens") >= 16)["decode_tps"]
        row = concurrency(lg).filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)
        a = row["per_stream_tps"][0] if row.height else None
        m = alone.median() if alone.len() else None
        d = f"{100 * (a / m - 1):+.1f} %" if a and m else "—"
        fit = checked_fit(lg)
        print(f"| {log.name} | {a or float('nan'):,.2f} | {m or float('nan'):,.2f} | "
              f"{alone.len()} | {d} | {rc['others_max'].max()} | {fit.get('agrees')} |")


def rendered() -> None:
    print("\n| rendered log | state (decoding, prefilling) | per stream t/s | truth | Δ |")
    print("|---|---|---:|---:|---:|")
    acc = []
    for log in sorted((ROOT / "fixtures").glob("*/rendered/*.log")):
        truth = json.loads(log.with_name(log.name.replace(".log", ".truth.json")).read_text())
        lg = logscope.read(str(log))
        for r in concurrency(lg).iter_rows(named=True):
            t = truth["decode_per_stream"].get(f"{r['decoding']},{r['prefilling']}")
            if t:
                print(f"| {log.parent.parent.name}/{log.name} | {r['decoding']}, "
                      f"{r['prefilling']} | "
                      f"{r['per_stream_tps']:,.2f} | {t['tps']:,.2f} | "
                      f"{100 * (r['per_stream_tps'] / t['tps'] - 1):+.1f} % |")
        if "acceptance" in truth:
            m, a = mean_accepted_length(lg)["value"], acceptance_rate(lg)["value"]
            ta = truth["acceptance"]
            acc.append(f"| {log.parent.parent.name}/{log.name} | {m:.3f} | {ta['mean_len']:.3f}"
                       f" | {100 * (m / ta['mean_len'] - 1):+.1f} % | {a:.4f} | "
                       f"{ta['rate']:.4f} | {100 * (a / ta['rate'] - 1):+.1f} % |")
    print("\n| rendered log | mean accepted length | truth | Δ | acceptance rate | truth | Δ |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(acc))


if __name__ == "__main__":
    main()
    rendered()
