#!/usr/bin/env python3
"""Where an ingest's CPU goes, stage by stage, on one thread (so the figures add up).

    python bench/profile_ingest.py LOG [--engine auto] [--tree DIR]

Reads the log in the blocks ``logscope.read`` uses, parses them one after another in this thread,
then runs the engine models over the parsed batches, timing each stage with the process's CPU
clock (``time.process_time``: Polars' own threads included). Prints a table of CPU seconds per
stage (nested stages indented; a stage's time includes its children's). On a shared, loaded
machine CPU seconds are steadier than wall seconds; compare two revisions in the same hour.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# --tree DIR: profile the logscope of another checkout (e.g. a worktree of an older revision)
if "--tree" in sys.argv:
    i = sys.argv.index("--tree")
    ROOT = Path(sys.argv[i + 1]).resolve()
    del sys.argv[i:i + 2]
sys.path.insert(0, str(ROOT))

import importlib  # noqa: E402

from logscope import ingest  # noqa: E402
from logscope.classify import parse  # noqa: E402
from logscope.input import frontend, sources  # noqa: E402

ACC: dict[str, float] = collections.defaultdict(float)
CALLS: collections.Counter[str] = collections.Counter()


def _mod(name: str) -> object:
    """``logscope.ingest.<name>``, or the one-module ``logscope.ingest`` of an older revision."""
    try:
        return importlib.import_module(f"logscope.ingest.{name}")
    except ImportError:
        return ingest


BATCH, ASM_MOD = _mod("batch"), _mod("assembler")  # the names each module calls
ASM = ASM_MOD.Assembler

# (owner, attribute, label, depth): the stages, in pipeline order (one table per module)
STAGES = [
    (sources.Chunk, "lines", "decode + split lines (Polars)", 1),
    (BATCH, "parse_batch", "parse_batch", 1),
    (BATCH, "strip_frame", "front end (ANSI, padding, embeddings, JSON, glued)", 2),
    (frontend, "_json_entry", "JSON entries (Python, per line)", 3),
    (BATCH, "AnchorIndex", "anchor index (one Aho-Corasick pass)", 2),
    (BATCH, "classify", "classify (9 passes: 3 phases x 3 engines)", 2),
    (parse, "_locate", "locate messages (unanchored regex)", 3),
    (parse, "_captures", "envelope + body captures", 3),
    (parse, "_extract", "typed fields", 3),
    (parse, "_expand_rep", "key/value items", 4),
    (parse, "_decode_prefix", "wrapper prefixes", 3),
    (ASM, "add", "engine models, per batch", 1),
    (ASM, "_emit", "tables' parts per batch", 2),
    (ASM_MOD, "kind_table", "event kind tables", 3),
    (ASM_MOD, "classified", "lines_classified", 3),
    (ASM_MOD, "class_counts", "counts per class", 2),
    (ASM, "result", "finish (clocks, requests, stacking)", 1),
    (ASM, "_finish", "engine tables finished (clocks, requests)", 2),
    (ASM, "_lines_and_unrecognized", "lines_classified and unrecognized", 2),
    (ASM_MOD, "unrecognized_table", "unrecognized (lark's diagnostics)", 3),
]


def wrap(owner: object, name: str, label: str) -> None:
    f = getattr(owner, name, None)
    if f is None:  # a stage this revision does not have
        return

    @functools.wraps(f)
    def timed(*a, **k):  # noqa: ANN002, ANN003, ANN202
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            ACC[label] += time.process_time() - t
            CALLS[label] += 1

    setattr(owner, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--engine", default="auto")
    args = ap.parse_args()
    for owner, name, label, _ in STAGES:
        wrap(owner, name, label)
    names = ingest.available_engines() if args.engine == "auto" else [args.engine]
    t0, w0 = time.process_time(), time.perf_counter()
    chunks, mtime, _size = sources.stream(args.log, sources.CHUNK_BYTES)
    batches, stats, line = [], ingest.FileStats(args.log), 0
    for ch in chunks:
        raw = (ch.lines()[0] if hasattr(ch, "lines") else
               __import__("polars").Series("raw", [ch.text]).str.split("\n").explode())
        batches.append(BATCH.parse_batch(raw, args.log, names, first_line=line))
        line += ch.n_lines
        stats.lines += ch.n_lines
    asm = ASM(names, {args.log: mtime})
    for b in batches:
        asm.add(b)
    logs = asm.result([stats])
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    print(f"{os.path.basename(args.log)}: {stats.lines:,} lines, {logs.summary()['requests']:,} "
          f"requests; CPU {cpu:.2f} s, wall {wall:.2f} s (one thread + Polars' pool), "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| stage | CPU s | calls |\n|---|---:|---:|")
    for _owner, _name, label, depth in STAGES:
        pad = "· " * (depth - 1)
        print(f"| {pad}{label} | {ACC[label]:.2f} | {CALLS[label]} |")


if __name__ == "__main__":
    main()
