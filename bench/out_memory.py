#!/usr/bin/env python3
"""Peak memory of ``logscope ingest LOG --out DIR`` (the streamed ingest) against the log's size.

    python bench/out_memory.py [--mb 100,1000] [--engine llama-server] [--runs 1] [--tree DIR]

For each size it takes the deterministic mixed log of ``bench/throughput.py`` (built once into
``bench/data/``) and runs ``logscope ingest LOG --out <temporary dir> --json`` in a fresh child,
which prints its own high-water mark (``VmHWM`` of ``/proc/self/status``, read at exit) and wall
time; then the ratio of the peak at the largest size to the peak at the smallest (the goal: a
log ten times as long needs no more than 1.25 times the memory). The command is the user's: it
streams from 256 MiB of log on and finishes a smaller log in memory (``cli/ingest.py``).
``--tree DIR`` runs the logscope of another checkout (an older revision's worktree) for a
before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import throughput  # noqa: E402  (bench/throughput.py builds the logs)

CHILD = r"""
import atexit, sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()

def report():
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print("MEMORY " + str(hwm) + " " + str(time.perf_counter() - t0), file=sys.stderr)

atexit.register(report)
from logscope.cli import cli
sys.argv = ["logscope", "ingest", sys.argv[2], "--out", sys.argv[3], "--json"]
cli()
"""


def one(tree: Path, log: Path) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="logscope-out-"))
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(log), str(out)],
                           capture_output=True, text=True, cwd=tree)
        if p.returncode != 0:
            raise SystemExit(f"ingest of {log} exited {p.returncode}: {p.stderr[-400:]}")
        line = next(x for x in p.stderr.splitlines() if x.startswith("MEMORY "))
        _, kb, wall = line.split()
        written = sum(f.stat().st_size for f in out.glob("*.parquet"))
        return {"peak_mib": int(kb) / 1024, "wall": float(wall), "out_mib": written / 2**20,
                "requests": json.loads(p.stdout)["requests"]}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default="100,1000")
    ap.add_argument("--engine", default="llama-server")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--tree", default=str(ROOT))
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    sizes = [float(x) for x in args.mb.split(",")]
    print(f"tree {tree}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| log MiB | requests | wall s | peak RSS MiB (max of runs) | Parquet written MiB |")
    print("|---:|---:|---:|---:|---:|")
    peaks = []
    for mb in sizes:
        path, _meta = throughput.build(args.engine, mb, 1)
        runs = [one(tree, path) for _ in range(args.runs)]
        peak = max(r["peak_mib"] for r in runs)
        peaks.append(peak)
        print(f"| {path.stat().st_size / 2**20:,.0f} | {runs[0]['requests']:,} | "
              f"{min(r['wall'] for r in runs):.1f} | {peak:,.0f} | {runs[0]['out_mib']:,.1f} |",
              flush=True)
    if len(peaks) > 1:
        print(f"\npeak at {sizes[-1]:g} MiB / peak at {sizes[0]:g} MiB: "
              f"{peaks[-1] / peaks[0]:.2f}× (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
