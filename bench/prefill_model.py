"""The prefill model and the prefill-by-depth table against the log's own per-chunk speeds.

For every log given (default: the real H200 runs ``generated-gpu-*.log`` in ../shared/corpus,
else the repo copies), the solo chunks between two ``prompt processing`` lines (no other
request in progress, no fixed overhead: the intervals after a request's first progress line)
are the reference. The script prints, per log:

* the fit: c (ms), a, b, r², which stretches it used;
* the worst |1/(a + b·d) − chunk t/s| / chunk t/s over the solo chunks (bound: 5 %);
* the worst |table t/s − chunk t/s| / chunk t/s, the table being
  ``prefill_by_depth(step=2048)`` (``chunks`` rows) and each chunk compared with the row of
  its depth bucket (bound: 1 %);
* the model's TTFT for a fresh prompt against the solo shallow requests (raw t/s).

Usage::

    python bench/prefill_model.py [LOG ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import logscope  # noqa: E402
from logscope.analysis.depth import prefill_by_depth  # noqa: E402
from logscope.analysis.prefill import fit_prefill, prefill_curve, slot_context  # noqa: E402


def check(path: str) -> dict:
    logs = logscope.read(path)
    pts = prefill_curve(logs)
    fit = fit_prefill(pts, n_ctx=slot_context(logs))
    chunks = pts.filter(pl.col("source") == "llama:tick", ~pl.col("overhead"),
                        ~pl.col("shared").fill_null(True))
    beside = pts.filter(pl.col("source") == "llama:tick", ~pl.col("overhead"),
                        pl.col("shared").fill_null(True), ~pl.col("shared_prefill"))
    out = {"log": Path(path).name, "fit": fit, "chunks": chunks.height,
           "beside": beside.height}
    if fit["valid"] and beside.height:
        e = [abs(1 / (fit["a"] + fit["b"] * d) / t - 1)
             for d, t in beside.select("depth", "tps").iter_rows()]
        out["beside_worst"] = max(e)
        out["beside_depths"] = (float(beside["depth"].min()), float(beside["depth"].max()))
    if not fit["valid"] or chunks.height == 0:
        return out
    model = [1 / (fit["a"] + fit["b"] * d) for d in chunks["depth"]]
    errs = [abs(m / t - 1) for m, t in zip(model, chunks["tps"], strict=True)]
    out["model_worst"] = max(errs)
    out["model_worst_at"] = chunks["depth"][errs.index(max(errs))]
    tab = prefill_by_depth(logs, step=2048, fit=fit).filter(pl.col("kind") == "chunks")
    terr = []
    for d, t in chunks.select("depth", "tps").iter_rows():
        row = tab.filter(pl.col("depth_lo") <= d, pl.col("depth_hi") > d)
        terr.append(abs(row["tps"][0] / t - 1))
    out["table_worst"] = max(terr)
    out["depths"] = (float(chunks["depth"].min()), float(chunks["depth"].max()))
    shallow = pts.filter(pl.col("source") == "llama:request", ~pl.col("shared").fill_null(True),
                         pl.col("d0") <= 1, pl.col("tokens") >= 1024)
    out["fresh"] = [(n, n / s, n / (fit["c"] + fit["a"] * n + fit["b"] * n * n / 2))
                    for n, s in shallow.select("tokens", "seconds").iter_rows()]
    return out


def main(argv: list[str]) -> None:
    logs = argv or sorted(str(p) for p in (ROOT.parent / "shared" / "corpus")
                          .glob("generated-gpu-*.log")) or \
        [str(ROOT / "fixtures/llama-server/h200/generated-gpu-spec-c256k-np2.log")]
    print("| log | c (ms) | a (s/token) | b (s/token²) | r² | fitted on | solo chunks "
          "(depths) | model worst | table worst |")
    print("|---|---|---|---|---|---|---|---|---|")
    fresh = []
    for p in logs:
        r = check(p)
        f = r["fit"]
        if not f["valid"]:
            print(f"| {r['log']} | — | — | — | — | {f['reason']} | {r['chunks']} | — | — |")
            continue
        fitted = f"{f['n']} {f['basis']} ({', '.join(f['sources'])})"
        if r["chunks"] == 0:
            print(f"| {r['log']} | {f['c_ms']:.1f} | {f['a']:.3e} | {f['b']:.3e} | "
                  f"{f['r2']:.3f} | {fitted} | 0 | — | — |")
            continue
        lo, hi = r["depths"]
        print(f"| {r['log']} | {f['c_ms']:.1f} | {f['a']:.3e} | {f['b']:.3e} | {f['r2']:.3f} | "
              f"{fitted} | {r['chunks']} ({lo:,.0f}–{hi:,.0f}) | "
              f"{100 * r['model_worst']:.2f} % (at {r['model_worst_at']:,.0f}) | "
              f"{100 * r['table_worst']:.2f} % |")
        fresh += [(r["log"], *x) for x in r["fresh"]]
    print("\nChunks that shared the GPU only with other slots' decoding (not solo; the batch "
          "holds the other slot's decode tokens):\n")
    print("| log | chunks (depths) | model worst |")
    print("|---|---|---|")
    for p in logs:
        r = check(p)
        if r.get("beside_worst") is not None:
            lo, hi = r["beside_depths"]
            print(f"| {r['log']} | {r['beside']} ({lo:,.0f}–{hi:,.0f}) | "
                  f"{100 * r['beside_worst']:.2f} % |")
    if fresh:
        print("\nSolo fresh prompts (d0 ≤ 1, ≥ 1024 tokens): measured raw t/s vs the model's "
              "n / (c + a·n + b·n²/2)\n")
        print("| log | tokens | measured t/s | model t/s | diff |")
        print("|---|---|---|---|---|")
        for log, n, meas, mod in fresh:
            print(f"| {log} | {n:,} | {meas:,.0f} | {mod:,.0f} | {100 * (mod / meas - 1):+.1f} % |")


if __name__ == "__main__":
    main(sys.argv[1:])
