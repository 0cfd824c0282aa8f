#!/usr/bin/env python3
"""What a user waits for on a big log: ``logscope ingest LOG`` (the summary with its headline
figures, which on SGLang and vLLM logs come from the window fit) and ``logscope report LOG``,
this checkout against another, in one run.

    python bench/analysis_speed.py --base DIR [--engine sglang,vllm] [--mb 100] [--runs 1]

``--base DIR``: another checkout (e.g. ``git worktree add /tmp/base REV``). Each command runs
as a whole process in its checkout's directory (``python -m`` puts that directory first on
``sys.path``), base then this tree, alternately, ``--runs`` times; the logs are
``bench/throughput.py``'s (built once into ``bench/data/``). Prints wall and CPU seconds and
peak RSS of each, the pairwise wall ratio, and the load before each pair. ``bench/speed.py``
times ``ingest --json``, which computes no headline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import speed  # noqa: E402  (whole-process timing)
import throughput  # noqa: E402  (builds the logs)


def timed(tree: Path, args: list[str]) -> dict[str, float]:
    speed.TREE["path"] = str(tree)
    return speed.run([*speed.LOGSCOPE, *args])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout")
    ap.add_argument("--engine", default="sglang,vllm")
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    base = Path(args.base).resolve()
    print("| log | command | load before | base wall s | cpu s | peak MiB | this wall s | cpu s "
          "| peak MiB | this/base wall |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for eng in args.engine.split(","):
        path, _meta = throughput.build(eng, args.mb, 1)
        for cmd in ("ingest", "report"):
            ld = speed.load()
            a, b = [], []
            for _ in range(args.runs):
                a.append(timed(base, [cmd, str(path)]))
                b.append(timed(ROOT, [cmd, str(path)]))

            def med(rs: list[dict], f: str) -> float:
                return statistics.median(r[f] for r in rs)
            ratio = statistics.median(y["wall"] / x["wall"] for x, y in zip(a, b, strict=True))
            print(f"| {eng} {path.stat().st_size / 2**20:.0f} MiB | `{cmd}` | {ld} | "
                  f"{med(a, 'wall'):.1f} | {med(a, 'cpu'):.1f} | {med(a, 'rss'):.0f} | "
                  f"{med(b, 'wall'):.1f} | {med(b, 'cpu'):.1f} | {med(b, 'rss'):.0f} | "
                  f"{ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
