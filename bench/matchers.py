#!/usr/bin/env python3
"""Multi-pattern matchers against logscope's anchor index, on one block of a log.

    python bench/matchers.py [LOG ...]      (default: the three 100 MiB logs of bench/throughput.py)

For the first 16 MiB block of each log (the block ``logscope.read`` parses), the wall time, best
of ``--repeat``, of finding which grammar anchors (the literals of every variant of every engine)
each line holds:

* ``polars``: ``parse.AnchorIndex`` (one ``str.extract_many`` pass, overlapping) as ingest runs it;
* ``hyperscan``: one block-mode scan of the block's lines joined by ``\\n`` (the join not timed),
  one Python callback per match (the binding's only way to report matches);
* ``re2 set``: RE2's ``Set`` (google-re2), one ``Match`` call per line.

and, for the front end's literal test, ``str.contains_any(literals)`` against one regex of the
literals. A matcher whose wheel is missing is reported as such. Run on a quiet machine and quote
the load.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logscope.classify.parse import AnchorIndex, anchors_of  # noqa: E402
from logscope.input import sources  # noqa: E402
from logscope.input.frontend import GLUED_HINTS  # noqa: E402

ENGINES = ("llama-server", "sglang", "vllm")


def best(f, repeat: int) -> float:  # noqa: ANN001
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t)
    return out * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    logs = args.logs or [str(ROOT / "bench" / "data" / f"{e}-100mb-seed1.log") for e in ENGINES]
    anchors = anchors_of(ENGINES)
    try:
        import hyperscan
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(a).encode() for a in anchors],
                   ids=list(range(len(anchors))), flags=[0] * len(anchors))
    except ImportError:
        db = None
    try:
        import re2
        rset = re2.Set.SearchSet(re2.Options())
        for a in anchors:
            rset.Add(re.escape(a))
        rset.Compile()
    except ImportError:
        rset = None
    print(f"{len(anchors)} anchors; load {os.getloadavg()[0]:.1f}; ms, best of {args.repeat}\n")
    print("| log | lines | polars index | hyperscan (callbacks) | re2 set | contains_any | "
          "regex of literals |\n|---|---:|---:|---:|---:|---:|---:|")
    for log in logs:
        print(row(log, anchors, db, rset, args.repeat), flush=True)


def row(log: str, anchors: list[str], db, rset, repeat: int) -> str:  # noqa: ANN001
    """One table row: each matcher on the first block of ``log``."""
    chunks, _mtime, _size = sources.stream(log, sources.CHUNK_BYTES)
    text = next(iter(chunks)).lines()[0]
    pol = best(lambda: AnchorIndex(text, anchors, 0), repeat)
    hs = "no wheel"
    if db is not None:
        buf = "\n".join(text.to_list()).encode()
        hits: list[int] = []

        def scan() -> None:
            hits.clear()
            db.scan(buf, match_event_handler=lambda i, a, b, f, c: hits.append(i))

        hs = f"{best(scan, repeat):.0f} ({len(hits):,})"
    r2 = "no wheel"
    if rset is not None:
        lines = text.to_list()
        r2 = f"{best(lambda: [rset.Match(x) for x in lines], repeat):.0f}"
    lit_rx = "|".join(re.escape(h) for h in GLUED_HINTS)
    ca = best(lambda: text.str.contains_any(GLUED_HINTS), repeat)
    rx = best(lambda: text.str.contains(lit_rx), repeat)
    return (f"| {Path(log).name} | {text.len():,} | {pol:.0f} | {hs} | {r2} | {ca:.1f} | "
            f"{rx:.1f} |")


if __name__ == "__main__":
    main()
