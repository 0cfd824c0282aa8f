"""Regenerate every picture the README and docs/ show (docs/img/*.png) from the bundled logs.

    python scripts/gen_readme_images.py             # rewrite docs/img/
    python scripts/gen_readme_images.py --check     # exit 1 if an image is missing or out of date

Deterministic: fixed input logs and labels, matplotlib's default style (rcdefaults), the Agg
backend and no PNG metadata (no Software/version stamp), so the same code and matplotlib give
the same bytes. tests/test_docs.py regenerates into a temporary directory and compares
(bytes, else pixels with a tiny tolerance for rasterisation differences between builds).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"

CORPUS = "fixtures/llama-server/corpus"
GPU = f"{CORPUS}/generated-gpu-q8kv-c256k-np2.log"
SPEC = f"{CORPUS}/generated-spec-pilot-c32k-np2.log"
Q8K = f"{CORPUS}/generated-q8k-fa-c16k-np2-ctxshift.log"
SGLANG = "fixtures/sglang/v0.5.3.post2-eagle3-accept-rate.log"
VLLM = "fixtures/vllm/v0.22.0-mtp-deferred-journald.log"
SWEEP = [f"fixtures/telemetry/h100/generated-gpu-sweep-np{n}.log" for n in (1, 2, 4)]


def _figures():
    """(file name, what it shows, function returning the Figure), in README order."""
    import logscope
    from logscope.outputs import plots
    from logscope.outputs.plot_pareto import plot_pareto

    cache: dict[str, object] = {}

    def read(path: str):
        if path not in cache:
            cache[path] = logscope.read(str(ROOT / path))
        return cache[path]

    return [
        ("prefill-curve.png", "prefill t/s vs depth, two llama-server runs, with fits",
         lambda: plots.plot_prefill_curve([read(GPU), read(SPEC)],
                                          ["gpu-q8kv-c256k-np2", "spec-pilot-c32k-np2"])),
        ("decode.png", "decode t/s: tg_3s windows over time, exact per request vs depth",
         lambda: plots.plot_decode([read(SPEC)], ["spec-pilot-c32k-np2"])),
        ("acceptance.png", "speculative acceptance: llama-server (exact), SGLang/vLLM (windows)",
         lambda: plots.plot_acceptance([read(SPEC), read(SGLANG), read(VLLM)],
                                       ["llama-server spec-pilot", "SGLang 0.5.3 EAGLE3",
                                        "vLLM 0.22 MTP"])),
        ("pressure.png", "KV usage, running/queued, retracts and preemptions (SGLang, vLLM)",
         lambda: plots.plot_pressure([read(SGLANG), read(VLLM)],
                                     ["SGLang 0.5.3", "vLLM 0.22"])),
        ("pareto.png", "the passive Pareto: one agent workload at 1, 2 and 4 slots (H100)",
         lambda: plot_pareto([read(p) for p in SWEEP], ["--parallel 1", "--parallel 2",
                                                        "--parallel 4"])),
        ("compare.png", "A/B: two llama-server configurations overlaid",
         lambda: plots.plot_compare([read(SPEC), read(Q8K)], ["spec-pilot-c32k", "q8k-fa-c16k"])),
        ("card-gpu-q8kv-c256k-np2.png", "the one-picture card of a run",
         lambda: plots.card(read(GPU), Path(GPU).name)),
    ]


def render_all(out_dir: Path) -> list[Path]:
    matplotlib.rcdefaults()
    matplotlib.use("Agg")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    cwd = os.getcwd()
    os.chdir(ROOT)  # file names in titles/legends are repo-relative, whatever the caller's cwd
    try:
        for name, _what, make in _figures():
            fig = make()
            path = out_dir / name
            fig.savefig(path, metadata={"Software": None})
            written.append(path)
    finally:
        os.chdir(cwd)
    return written


def names() -> list[str]:
    return [name for name, _w, _m in _figures()]


def differs(a: Path, b: Path, tolerance: float = 0.0005) -> str | None:
    """None when the two PNGs are the same picture; else why not.

    Same bytes, or the same size with at most `tolerance` of the pixels changed (0.05 %: room
    for anti-aliasing differences between matplotlib builds, less than one changed legend label).
    """
    if not a.exists():
        return f"{a} is missing"
    if a.read_bytes() == b.read_bytes():
        return None
    import numpy as np
    from matplotlib.image import imread

    x, y = imread(a), imread(b)
    if x.shape != y.shape:
        return f"{a.name}: size {x.shape[1]}x{x.shape[0]} != {y.shape[1]}x{y.shape[0]}"
    changed = float(np.mean(np.any(np.abs(x - y) > 0.25, axis=-1)))
    if changed > tolerance:
        return f"{a.name}: {changed:.2%} of the pixels differ"
    return None


def check() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = render_all(Path(tmp))
        return [why for p in fresh if (why := differs(IMG / p.name, p))]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = check()
        for why in stale:
            print(why, file=sys.stderr)
        if stale:
            print("docs/img is out of date: run python scripts/gen_readme_images.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for p in render_all(IMG):
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
