"""The window fit on renderings the tests do not hold: other corpus runs, other stats phases.

    python bench/window_heldout.py   # bench/RESULTS.md, "The window fit on renderings the
                                     # tests do not hold"

``bench/window_fit.py`` measures the renderings under ``fixtures/*/rendered/`` (the ones the
tests hold to their marks). This renders, into a temporary directory, (1) every GPU and CPU
corpus run with client records that those fixtures do not hold, as SGLang and vLLM logs at the
defaults (whole-second stamps, vLLM every 10 s), (2) the agent runs as vLLM logs at a 9.7 s
and a 10.3 s stats interval (whole-second stamps: the intervals fall at other phases of the
run), (3) the runs as logs under the cures the refusals name (vLLM every 1 s, SGLang
with millisecond stamps), (4) agent runs as the data-parallel engines of one server, and
(5) as several servers one wrapper interleaves (compose services, pods: each server on its
own figures, as the report gives them). Per state with at
least 5 s of decode it prints clean and as served per stream against the truth (or the
refusal), the state's quiet intervals alone (``quiet_per_stream``: a window average at their
depth, against the truth's clean mean), served throughput, and compare's decode-per-stream
and throughput ratios against the truth's with whether the 95 % interval holds it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

from render_engine_logs import render, render_dp, render_services  # noqa: E402
from window_fit import pct, true_decode_ratio, truth  # noqa: E402

import logscope  # noqa: E402
from logscope.analysis.served import served  # noqa: E402
from logscope.analysis.servers import split_servers  # noqa: E402
from logscope.analysis.verdict import verdict  # noqa: E402
from logscope.analysis.window_fit import state_fit, window_throughput  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
OTHER_RUNS = ["gpu-colors-tty", "ngram-c4k-np1", "spec-pilot-c32k-np2"]
PHASED = ["gpu-sweep-np1", "gpu-sweep-np2", "gpu-sweep-np4", "gpu-spec-c256k-np2",
          "gpu-q8kv-c256k-np2", "gpu-pressure-np4-ctxshift", "q8k-fa-c16k-np2-ctxshift"]
# the cures the refusals name: vLLM every second, SGLang with millisecond stamps
CURED = ["base-c32k-np2", "q8k-fa-c16k-np2-ctxshift", "spec-c32k-np2", "spec-pilot-c32k-np2",
         "gpu-spec-c256k-np2", "gpu-q8kv-c256k-np2", "gpu-pressure-np4-ctxshift"]
# data-parallel engines: (name, the ranks' runs, seconds between their clocks)
DP = [("dp2-sweep-np2", ["gpu-sweep-np2", "gpu-sweep-np2"], 1.0),
      ("dp2-spec-c256k", ["gpu-spec-c256k-np2", "gpu-spec-c256k-np2"], 3.0),
      ("dp2-base-q8k-fa", ["base-c32k-np2", "q8k-fa-c16k-np2-ctxshift"], 0.4),
      ("dp4-sweep", ["gpu-sweep-np1", "gpu-sweep-np2", "gpu-sweep-np4", "gpu-sweep-np4"], 0.7)]
# several servers in one log behind a wrapper's marks (render_services): name, runs, wrapper,
# vLLM stats interval
SERVERS = [("compose-np2-q8kv", ["gpu-sweep-np2", "gpu-q8kv-c256k-np2"], "compose", 10.0),
           ("compose-np1-np4-spec", ["gpu-sweep-np1", "gpu-sweep-np4", "gpu-spec-c256k-np2"],
            "compose", 10.0),
           ("kubectl-np2-np4-1s", ["gpu-sweep-np2", "gpu-sweep-np4"], "kubectl", 1.0)]
PAIRS = [("gpu-q8kv-c256k-np2", "gpu-spec-c256k-np2"), ("gpu-sweep-np1", "gpu-sweep-np4"),
         ("gpu-sweep-np1", "gpu-sweep-np2")]


def states(log: Path, name: str) -> None:
    _rows(logscope.read(str(log)), truth(log), name)


def servers(log: Path, name: str) -> None:
    """Each server of a log a wrapper interleaved, on its own figures (as the report gives
    them: ``split_servers``), against that server's truth."""
    runs = {r["service"]: r for r in json.loads(
        log.with_name(log.name.replace(".log", ".truth.json")).read_text())["runs"]}
    for lab, one in split_servers(logscope.read(str(log)), log.name):
        server = lab.rsplit("[", 1)[1][:-1]
        _rows(one, runs[server], f"{name} [{server}]")


def _rows(logs, t: dict, name: str) -> None:  # noqa: ANN001 - logscope.Logs
    fit = {r["decoding"]: r for r in state_fit(logs).iter_rows(named=True)}
    for k, s in t["states"].items():
        if s["decode_seconds"] < 5:
            continue
        r = fit.get(int(k))
        quiet = (f"{pct(r['quiet_per_stream'], s['clean_per_stream'])} (n = {r['quiet_windows']})"
                 if r and r.get("quiet_per_stream") else "—")
        if not r or r["reason"]:
            why = (r["reason"].split(": ", 2)[1] if r and r["reason"] else "no interval")
            low = (f"; busiest interval (a lower bound there) "
                   f"{pct(r['busiest_per_stream'], s['clean_per_stream'])}"
                   if r and r.get("busiest_per_stream") else "")
            print(f"| {name} | {k} | {s['decode_seconds']:.1f} | refused: {why[:70]}{low} "
                  f"| | | {quiet} |")
            continue
        print(f"| {name} | {k} | {s['decode_seconds']:.1f} | "
              f"{pct(r['clean_per_stream'], s['clean_per_stream'])} | "
              f"{pct(r['served_per_stream'], s['served_per_stream'])} | "
              f"{r['clean_lo'] <= s['clean_per_stream'] <= r['clean_hi']} | {quiet} |")
    wt = window_throughput(logs)
    bound = " (at least)" if wt and wt.get("lower_bound") else ""
    print(f"| {name} | throughput | | {pct(wt['tps'] if wt else None, t['run']['throughput'])}"
          f"{bound} | | | |")
    sv = served(logs)["per_stream_tps"]
    print(f"| {name} | per stream as served, the run | | | "
          f"{pct(sv, t['run']['served_per_stream'])} | | |")


def compare(a: Path, b: Path, names: tuple[str, str]) -> None:
    v = {r["question"]: r for r in verdict(logscope.read(str(a)), logscope.read(str(b)), names)}
    ta, tb = truth(a), truth(b)
    d, th = v["decode_per_stream"], v["throughput"]
    true, _basis = true_decode_ratio(d, ta, tb)
    ttrue = tb["run"]["throughput"] / ta["run"]["throughput"]

    def cell(r, x):
        if r["ratio"] is None:
            return "no verdict", "—"
        lo, hi = r["ci95"]
        return f"{r['ratio']:.3f} ({lo:.3f}–{hi:.3f})", "yes" if lo <= x <= hi else "**no**"
    dc, dh = cell(d, true)
    tc, thh = cell(th, ttrue)
    print(f"| {names[0]} vs {names[1]} | {true:.3f} | {dc} | {dh} | {ttrue:.3f} | {tc} | {thh} |")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for n in OTHER_RUNS:
            render(str(CORPUS / f"generated-{n}.log"), n, out_dir=out)
        for n in PHASED:
            for iv in (9.7, 10.3):
                render(str(CORPUS / f"generated-{n}.log"), f"{n}-{iv}", iv, ("vllm",),
                       out_dir=out)
        for n in CURED:
            render(str(CORPUS / f"generated-{n}.log"), f"{n}-1s", 1.0, ("vllm",), out_dir=out)
            render(str(CORPUS / f"generated-{n}.log"), f"{n}-ms", engines=("sglang",),
                   sglang_ms=True, out_dir=out)
        for n, runs, shift in DP:
            render_dp([str(CORPUS / f"generated-{r}.log") for r in runs], n, shift, out_dir=out)
        for n, runs, wrapper, iv in SERVERS:
            render_services([str(CORPUS / f"generated-{r}.log") for r in runs], n,
                            [f"server-{chr(97 + i)}-1" for i in range(len(runs))], 0.7, iv,
                            wrapper=wrapper, out_dir=out)
        print("| rendering | state | decode s | clean | as served | interval holds "
              "| quiet intervals alone (against clean) |")
        print("|---|---|---|---|---|---|---|")
        for eng in ("sglang", "vllm"):
            for n in OTHER_RUNS:
                states(out / eng / "rendered" / f"{n}.log", f"{eng}/{n}")
        for n in PHASED:
            for iv in (9.7, 10.3):
                states(out / "vllm" / "rendered" / f"{n}-{iv}.log", f"vllm/{n} at {iv} s")
        for n in CURED:
            states(out / "vllm" / "rendered" / f"{n}-1s.log", f"vllm/{n} at 1 s")
        for n in CURED:
            states(out / "sglang" / "rendered" / f"{n}-ms.log", f"sglang/{n} ms stamps")
        for eng in ("sglang", "vllm"):
            for n, _runs, shift in DP:
                states(out / eng / "rendered" / f"{n}.log", f"{eng}/{n} ({shift:g} s apart)")
        for eng in ("sglang", "vllm"):
            for n, _runs, wrapper, iv in SERVERS:
                servers(out / eng / "rendered" / f"{n}.log",
                        f"{eng}/{n} ({wrapper}{f', vLLM every {iv:g} s' if eng == 'vllm' else ''})")
        print("\n| pair (vLLM) | truth decode | compare decode (95 % CI) | holds | truth "
              "throughput | compare throughput (95 % CI) | holds |")
        print("|---|---|---|---|---|---|---|")
        for iv in (9.7, 10.3):
            for a, b in PAIRS:
                compare(out / "vllm" / "rendered" / f"{a}-{iv}.log",
                        out / "vllm" / "rendered" / f"{b}-{iv}.log", (f"{a}@{iv}", f"{b}@{iv}"))


if __name__ == "__main__":
    main()
