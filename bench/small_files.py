"""Fixed cost of an ingest per small file (a fleet of rotated logs is many of them).

Runs ``logscope.read(f)`` on each of a set of small fixture logs, one file at a time, in a
fresh process per checkout, the checkouts alternately, and prints the best per-file time of
each and their ratio. ``--tree DIR`` adds another checkout (e.g. a git worktree of an older
revision) as B.

    python bench/small_files.py --tree /tmp/base --rounds 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import logscope
files = json.loads(sys.argv[2])
logscope.read(files[0])  # imports and grammar caches warm
t = time.perf_counter()
for f in files:
    logscope.read(f)
print((time.perf_counter() - t) / len(files))
"""


def small_logs(n: int) -> list[str]:
    per = max(1, n // 2)
    return [str(p) for d in ("sglang", "llama-server")
            for p in sorted((ROOT / "fixtures" / d).glob("*.log"))[:per]]


def per_file(tree: Path, files: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), json.dumps(files)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, help="another checkout, timed as B")
    p.add_argument("--files", type=int, default=20, help="how many fixture logs")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    files = small_logs(args.files)
    trees = {"A": ROOT, **({"B": args.tree.resolve()} if args.tree else {})}
    best = {k: float("inf") for k in trees}
    for _ in range(args.rounds):
        for k, tree in trees.items():
            best[k] = min(best[k], per_file(tree, files))
    for k, tree in trees.items():
        print(f"{k} {tree}: {best[k] * 1000:.1f} ms a file (best of {args.rounds}, "
              f"{len(files)} files)")
    if "B" in best:
        print(f"A/B: {best['A'] / best['B']:.2f}")


if __name__ == "__main__":
    main()
