#!/usr/bin/env python3
"""Whole-process speed of ``logscope ingest`` against the plain per-line script, in one run.

    python bench/speed.py [--mb 100] [--runs 5] [--engine all] [--json OUT] [--tree DIR]

For each engine it takes the deterministic mixed log of ``bench/throughput.py`` (built once into
``bench/data/``) and times, as a user would with ``time``, whole processes started from this
script: ``logscope ingest LOG --json`` (A) and ``python bench/plain.py ENGINE LOG`` (B, the
fifty-line script a doubting user writes: same main kinds and fields, Polars frames at the end),
alternately, A B A B ..., ``--runs`` times each after one warm-up pair. The ratio A/B is taken
pair by pair (the machine's speed drifts on a shared box; a pair sees the same drift) and the
median is reported, with the medians of wall time, CPU time (user + system of the child) and
peak RSS (``ru_maxrss`` of the child, from ``os.wait4``).

With llama-server, the same pair on a modern one-server log too (``throughput.build_modern``:
the real runs under ``fixtures/llama-server/corpus/`` replayed request by request, this year's
line formats, no router). Then, for llama-server, ``logscope ingest LOG.gz --json`` against
``logscope ingest LOG --json``
(the same log gzipped, level 6), and ``logscope --help`` alone. The load average before each
engine is printed: quote it with the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import throughput  # noqa: E402  (bench/throughput.py builds the logs)

LOGSCOPE = [sys.executable, "-m", "logscope"]


TREE: dict[str, str] = {}  # --tree: the logscope that A runs (PYTHONPATH), e.g. an older worktree


def run(cmd: list[str]) -> dict[str, float]:
    """Wall, CPU (user + system) and peak RSS (MiB) of one whole process."""
    env, cwd = dict(os.environ), ROOT
    if cmd[:3] == LOGSCOPE and TREE:  # ``-m`` puts the working directory first on sys.path
        env["PYTHONPATH"], cwd = TREE["path"], Path(TREE["path"])
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
                         env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {err.strip()[-400:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024}


def pair(a: list[str], b: list[str], runs: int) -> dict:
    """A and B alternately (one warm-up pair), the medians and the pairwise median ratio."""
    run(a), run(b)
    ra, rb = [], []
    for _ in range(runs):
        ra.append(run(a))
        rb.append(run(b))
    med = {k: {f: statistics.median(r[f] for r in rs) for f in ("wall", "cpu", "rss")}
           for k, rs in (("a", ra), ("b", rb))}
    ratio = {f: statistics.median(x[f] / y[f] for x, y in zip(ra, rb, strict=True))
             for f in ("wall", "cpu")}
    return {"a": med["a"], "b": med["b"], "ratio": ratio,
            "spread_wall_a": [min(r["wall"] for r in ra), max(r["wall"] for r in ra)],
            "spread_wall_b": [min(r["wall"] for r in rb), max(r["wall"] for r in rb)]}


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engine", default="all", choices=["all", *throughput.ENGINES])
    ap.add_argument("--json", default=None, help="write the figures here too")
    ap.add_argument("--tree", default=None,
                    help="run the logscope of this checkout (e.g. a git worktree of an older "
                         "revision) as A, for before/after figures against the same script")
    args = ap.parse_args()
    if args.tree:
        TREE["path"] = str(Path(args.tree).resolve())
    engines = list(throughput.ENGINES) if args.engine == "all" else [args.engine]
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.tree or ROOT,
                         capture_output=True, text=True).stdout.strip()
    print(f"code {rev}, {os.cpu_count()} CPUs, {args.runs} runs per command, "
          f"medians; ratio = median of the pairwise A/B\n")
    print("| engine | log | load before | A: `logscope ingest --json` wall s | cpu s | peak MiB "
          "| B: plain script wall s | cpu s | peak MiB | A/B wall | A/B cpu |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    out: dict = {"code": rev, "runs": args.runs, "engines": {}}
    for eng in engines:
        path, _meta = throughput.build(eng, args.mb, 1)
        ld = load()
        r = pair([*LOGSCOPE, "ingest", str(path), "--json"],
                 [sys.executable, str(ROOT / "bench" / "plain.py"), eng, str(path)], args.runs)
        out["engines"][eng] = {"load": ld, "mib": path.stat().st_size / 2**20, **r}
        print(f"| {eng} | {path.stat().st_size / 2**20:.0f} MiB | {ld} | {r['a']['wall']:.2f} | "
              f"{r['a']['cpu']:.2f} | {r['a']['rss']:.0f} | {r['b']['wall']:.2f} | "
              f"{r['b']['cpu']:.2f} | {r['b']['rss']:.0f} | {r['ratio']['wall']:.2f} | "
              f"{r['ratio']['cpu']:.2f} |", flush=True)
    if "llama-server" in engines:   # a modern one-server log (the second mark)
        path, _meta = throughput.build_modern(args.mb, 1)
        ld = load()
        r = pair([*LOGSCOPE, "ingest", str(path), "--json"],
                 [sys.executable, str(ROOT / "bench" / "plain.py"), "llama-server", str(path)],
                 args.runs)
        out["engines"]["llama-server-modern"] = {"load": ld, "mib": path.stat().st_size / 2**20,
                                                 **r}
        print(f"| llama-server, modern one-server log | {path.stat().st_size / 2**20:.0f} MiB "
              f"| {ld} | {r['a']['wall']:.2f} | {r['a']['cpu']:.2f} | {r['a']['rss']:.0f} | "
              f"{r['b']['wall']:.2f} | {r['b']['cpu']:.2f} | {r['b']['rss']:.0f} | "
              f"{r['ratio']['wall']:.2f} | {r['ratio']['cpu']:.2f} |", flush=True)
    if "llama-server" in engines:
        path, _ = throughput.build("llama-server", args.mb, 1)
        gz = path.with_suffix(".log.gz")
        if not gz.exists() or gz.stat().st_mtime < path.stat().st_mtime:
            with path.open("rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
                shutil.copyfileobj(f, g)
        ld = load()
        r = pair([*LOGSCOPE, "ingest", str(gz), "--json"],
                 [*LOGSCOPE, "ingest", str(path), "--json"], args.runs)
        out["gz"] = {"load": ld, **r}
        print(f"\n`.gz` (level 6, {gz.stat().st_size / 2**20:.0f} MiB) against the plain file, "
              f"load {ld}: {r['a']['wall']:.2f} s against {r['b']['wall']:.2f} s, "
              f"ratio {r['ratio']['wall']:.2f} (cpu {r['ratio']['cpu']:.2f})")
    helps = [run([*LOGSCOPE, "--help"])["wall"] for _ in range(args.runs)]
    out["help_s"] = statistics.median(helps)
    print(f"\n`logscope --help`: median {out['help_s']:.3f} s over {args.runs} runs")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
