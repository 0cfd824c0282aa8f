"""The estimated clock on right and wrong (log, telemetry) pairs: where a weak fit begins.

Every real log with GPU telemetry (fixtures/telemetry/h200) is placed against its own
telemetry (CSV, dmon, and one file holding both runs), and every log is placed against telemetry
of another run: the two H200 runs crossed, and the other real logs (the H200 runs without
telemetry, the CPU runs) against both H200 recordings. For each: the whole-telemetry score,
the fit r on the log's own span (``clock_fit_r``), the share of the log's busy time inside the
telemetry, the spread, the error against the true start (right pairs), and the verdict of
``weak_fit``.

    python bench/telemetry_clock.py [CORPUS_DIR]   # default ../shared/corpus
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl

from logscope.ingest import read
from logscope.telemetry import read_samples
from logscope.telemetry.energy import Power, _run_ends, estimate_offset, stretches, weak_fit

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "fixtures" / "telemetry" / "h200"
TRUE_START = {"generated-gpu-pressure-np4-ctxshift": 1796156563.556,
              "generated-gpu-colors-tty": 1796156542.805}
OTHERS = ("generated-gpu-q8kv-c256k-np2", "generated-gpu-spec-c256k-np2",
          "generated-base-c32k-np2", "generated-ngram-c4k-np1", "generated-spec-c32k-np2")


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent.parent / "shared" / "corpus"
    tele = {f"{k.removeprefix('generated-gpu-')}{e}": [H200 / f"{k}{e}"]
            for k in TRUE_START for e in (".smi.csv", ".dmon.txt")}
    tele["both runs .smi.csv"] = [H200 / f"{k}.smi.csv" for k in TRUE_START]
    logs = {k: H200 / f"{k}.log" for k in TRUE_START}
    logs |= {k: corpus / f"{k}.log" for k in OTHERS if (corpus / f"{k}.log").exists()}
    print("| log | telemetry | pair | score (whole file) | r (log's span) | busy time covered "
          "| spread s | error s | weak_fit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, path in logs.items():
        lg = read(str(path))
        st = stretches(lg["requests"])
        ends = _run_ends(lg)
        for tname, paths in tele.items():
            power = Power(read_samples([str(p) for p in paths]))
            right = name in TRUE_START and (name.removeprefix("generated-gpu-") in tname
                                             or tname.startswith("both"))
            for (f, run), one in st.group_by(["file", "run"], maintain_order=True):
                end = float(ends.filter(pl.col("file") == f, pl.col("run") == run)["t_end"]
                            .max())
                t = time.perf_counter()
                est = estimate_offset(one, power, end)
                took = time.perf_counter() - t
                if est is None:
                    continue
                err = f"{est['offset_s'] - TRUE_START[name]:+.2f}" if right else "—"
                why = weak_fit(est)
                print(f"| {name.removeprefix('generated-')} | {tname} | "
                      f"{'right' if right else 'wrong'} | {est['score']:.3f} | {est['r']:.3f} "
                      f"| {100 * est['coverage']:.0f} % | {est['spread_s']:.2f} | {err} | "
                      f"{'refused: ' + why if why else 'used'} ({took:.1f} s) |")


if __name__ == "__main__":
    main()
