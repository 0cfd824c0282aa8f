"""The window fit (logscope.analysis.window_fit) against the truth of the rendered engine logs.

    python bench/window_fit.py   # bench/RESULTS.md, "SGLang and vLLM under agent load"

Renderings: ``python scripts/render_engine_logs.py <corpus log> <name>`` (SGLang and vLLM at
10 s), ``… <name>-interval1 1`` (vLLM alone at a 1 s stats interval), ``… <name>-ms ms``
(SGLang alone with millisecond stamps). Per state with at least
5 s of decode: truth against clean and as served per stream, aggregate; served throughput; mean
accepted length; SGLang prefill by depth (consecutive chunks); compare's decode-per-stream
ratio and interval against the truth's ratio.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import logscope  # noqa: E402
from logscope.analysis.metrics import mean_accepted_length  # noqa: E402
from logscope.analysis.verdict import verdict  # noqa: E402
from logscope.analysis.window_fit import state_fit, window_throughput  # noqa: E402
from logscope.analysis.windows import prefill_points  # noqa: E402

FIX = ROOT / "fixtures"
RUNS = ["sweep-np1", "sweep-np2", "sweep-np4", "spec-c256k-np2", "q8kv-c256k-np2"]
PAIRS = [("q8kv-c256k-np2", "spec-c256k-np2"), ("sweep-np1", "sweep-np4"),
         ("sweep-np1", "sweep-np2")]


def truth(path: Path) -> dict:
    """A rendering's truth; of several servers in one log (``render_services``), as read
    together: states add their tokens and seconds, the served figures their spans."""
    t = json.loads(path.with_name(path.name.replace(".log", ".truth.json")).read_text())
    if "runs" not in t:
        return t
    from render_engine_logs import _merge_truths

    both = _merge_truths(t["runs"], 0.0)
    tok, span = (sum(r["run"][k] for r in t["runs"]) for k in ("tokens", "span_s"))
    both["run"].update(span_s=span, throughput=tok / span)
    return both


def pct(a, b) -> str:
    return "—" if a is None or b is None else f"{100 * (a / b - 1):+.1f} %"


def f(x, d=1) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def states() -> None:
    print("| log | state | decode s | truth clean | fit clean | Δ | truth served | fit served "
          "| Δ | truth agg | fit agg | Δ | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ms = ["sweep-np2-ms", "sweep-np4-ms", "spec-c256k-np2-ms"]   # SGLANG_LOG_MS=1
    for eng, names in (("sglang", RUNS + ms), ("vllm", RUNS + [f"sweep-np{k}-interval1"
                                                                 for k in (1, 2, 4)])):
        for n in names:
            log = FIX / eng / "rendered" / f"{n}.log"
            t0 = time.perf_counter()
            sf = {r["decoding"]: r for r in state_fit(logscope.read(str(log))).iter_rows(
                named=True)}
            el = time.perf_counter() - t0
            for k, t in truth(log)["states"].items():
                if t["decode_seconds"] < 5:
                    continue
                r = sf.get(int(k), {})
                why = r.get("reason") or ""
                note = ("refused: " + why.split(": ", 1)[1][:90] + "…") if why else (
                    "" if r else "no line printed this running count")
                print(f"| {eng}/{n} ({el:.2f} s) | {k} | {t['decode_seconds']:.1f} | "
                      f"{t['clean_per_stream']:.1f} | {f(r.get('clean_per_stream'))} | "
                      f"{pct(r.get('clean_per_stream'), t['clean_per_stream'])} | "
                      f"{t['served_per_stream']:.1f} | {f(r.get('served_per_stream'))} | "
                      f"{pct(r.get('served_per_stream'), t['served_per_stream'])} | "
                      f"{t['aggregate']:.1f} | {f(r.get('aggregate'))} | "
                      f"{pct(r.get('aggregate'), t['aggregate'])} | {note} |")


def throughput() -> None:
    print("\n| log | truth t/s | windows t/s | Δ |")
    print("|---|---|---|---|")
    for eng in ("sglang", "vllm"):
        for n in RUNS:
            log = FIX / eng / "rendered" / f"{n}.log"
            got = window_throughput(logscope.read(str(log)))["tps"]
            tr = truth(log)["run"]["throughput"]
            print(f"| {eng}/{n} | {tr:.1f} | {got:.1f} | {pct(got, tr)} |")


def acceptance() -> None:
    print("\n| log | truth mean accepted length | logscope | Δ |")
    print("|---|---|---|---|")
    for eng in ("sglang", "vllm"):
        for n in ("spec-c256k-np2", "spec-c32k-np2"):
            log = FIX / eng / "rendered" / f"{n}.log"
            tr = truth(log)["acceptance"]["mean_len"]
            got = mean_accepted_length(logscope.read(str(log)))["value"]
            print(f"| {eng}/{n} | {tr:.3f} | {got:.3f} | {pct(got, tr)} |")


def prefill() -> None:
    print("\n| log | depth start | tokens | truth t/s | prefill_points t/s | Δ |")
    print("|---|---|---|---|---|---|")
    for n in RUNS:
        log = FIX / "sglang" / "rendered" / f"{n}.log"
        chunks = truth(log)["prefill_chunks"]
        pts = prefill_points(logscope.read(str(log)))
        if pts.height == 0:
            print(f"| sglang/{n} | — | — | — | none (no chunked prompt timed: single chunks, "
                  "or stretches under 10 timestamp steps) | — |")
        for r in pts.iter_rows(named=True):
            best = None
            for p in {c["prompt"] for c in chunks if c["start"] == r["depth_start"]}:
                ch = [c for c in chunks if c["prompt"] == p
                      and r["depth_start"] <= c["start"] < r["depth_start"] + r["tokens"]]
                if sum(c["tokens"] for c in ch) == r["tokens"]:
                    tr = r["tokens"] / sum(c["seconds"] for c in ch)
                    if best is None or abs(r["tps"] / tr - 1) < abs(r["tps"] / best - 1):
                        best = tr
            print(f"| sglang/{n} | {r['depth_start']:,} | {r['tokens']:,} | {f(best, 0)} | "
                  f"{r['tps']:.0f} | {pct(r['tps'], best)} |")


def true_decode_ratio(d: dict, ta: dict, tb: dict) -> tuple[float, str]:
    """The truth's B/A for compare's decode-per-stream row ``d``: the clean ratio over the
    states it compared, weighted as it weighted them, else as served over the runs."""
    if d.get("states"):
        ks = [s.split()[0] for s in d["states"]]
        lr = [math.log(tb["states"][k]["clean_per_stream"] / ta["states"][k]["clean_per_stream"])
              for k in ks]
        return (math.exp(sum(w * x for w, x in zip(d["weights"], lr, strict=True))
                         / sum(d["weights"])), f"clean, states {ks[0]}–{ks[-1]}")
    return tb["run"]["served_per_stream"] / ta["run"]["served_per_stream"], "as served over the run"


def compare() -> None:
    print("\n| engine | A | B | truth B/A | compare B/A | 95 % interval | holds | basis |")
    print("|---|---|---|---|---|---|---|---|")
    for eng in ("sglang", "vllm"):
        for a, b in PAIRS:
            pa, pb = (FIX / eng / "rendered" / f"{x}.log" for x in (a, b))
            v = verdict(logscope.read(str(pa)), logscope.read(str(pb)), (a, b))
            d = next(x for x in v if x["question"] == "decode_per_stream")
            true, basis = true_decode_ratio(d, truth(pa), truth(pb))
            ci = d["ci95"]
            holds = "yes" if ci and ci[0] <= true <= ci[1] else "no"
            print(f"| {eng} | {a} | {b} | {true:.3f} | {f(d['ratio'], 3)} | "
                  f"{f(ci[0], 3)}–{f(ci[1], 3)} | {holds} | {basis} |")


if __name__ == "__main__":
    states()
    throughput()
    acceptance()
    prefill()
    compare()
