#!/usr/bin/env python3
"""The headline figures of the SGLang and vLLM renderings against their truth, per state.

    python bench/headline_truth.py [TREE]     # TREE: a checkout to import logscope from (default .)

For each rendered fixture (``fixtures/{sglang,vllm}/rendered/*.log``, the truth of every state
beside it in ``*.truth.json``): the headline decode per stream (its state), the aggregate (its
state) and each ``tg (window)`` row of the bench table, as % off the truth as served of that
state. Prints a Markdown table; run it on two trees for a before/after.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else str(ROOT))

import polars as pl  # noqa: E402

import logscope  # noqa: E402
from logscope.analysis.metrics import headline_figures  # noqa: E402
from logscope.analysis.report import window_table  # noqa: E402


def err(truth: dict, v: float | None, k: int | None, key: str) -> str:
    """``k: ±x.x %`` of ``v`` against the truth's ``key`` of state ``k``; ``—`` when none."""
    tr = truth.get(str(k), {}).get(key)
    return "—" if v is None or not tr else f"{k}: {100 * (v / tr - 1):+.1f} %"


def main() -> None:
    print("| log | decode headline | aggregate | tg rows |\n|---|---|---|---|")
    logs_ = sorted((ROOT / "fixtures" / "sglang" / "rendered").glob("*.log")) \
        + sorted((ROOT / "fixtures" / "vllm" / "rendered").glob("*.log"))
    for f in logs_:
        truth = json.loads(f.with_suffix(".truth.json").read_text())["states"]
        logs = logscope.read(str(f))
        h = headline_figures(logs)
        d, g = h["decode_tps"], h["aggregate_decode"]
        tg = window_table(logs).filter(pl.col("kind") == "tg")
        rows = ", ".join(err(truth, r["tps_mean"], int(r["depth_bucket"]), "served_per_stream")
                         for r in tg.iter_rows(named=True)) or "—"
        print(f"| {f.parent.parent.name}/{f.name} "
              f"| {err(truth, d['value'], d.get('decoding'), 'served_per_stream')} "
              f"| {err(truth, g['value'], g.get('active'), 'aggregate')} | {rows} |")


if __name__ == "__main__":
    main()
