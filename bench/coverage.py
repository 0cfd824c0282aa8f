#!/usr/bin/env python3
"""Coverage of the real logs: ``logscope ingest --json`` beside a plain ``grep -c`` of each anchor.

    python bench/coverage.py [LOG ...]        # default: fixtures/llama-server/corpus/*.log

For every log it counts the lines holding each timing anchor, exactly as ``grep -cF ANCHOR LOG``
would (``eval time =`` counts the lines that do not also hold ``prompt eval time =``), runs
``logscope ingest --json LOG`` (the CLI, as a user would) and prints, as Markdown, the two counts
side by side per event kind, and the line accounting ``lines`` = ``events`` + ``ignored`` +
``unrecognized`` against the file's own line count. Exit status 1 if anything differs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "llama-server" / "corpus"

# (anchor as grep sees it, lines that must NOT also hold this, logscope event kind)
ANCHORS: list[tuple[str, str | None, str]] = [
    ("prompt eval time =", None, "prompt_eval"),
    ("eval time =", "prompt eval time =", "eval"),
    ("total time =", None, "total"),
    ("stop processing:", None, "release"),
    ("processing task", None, "task_launch"),
    ("draft acceptance", None, "draft_acceptance"),
    ("tg =", None, "decode_progress"),
    ("prompt processing, n_tokens", None, "prompt_progress"),
    ("selected slot by", None, "slot_select"),
    ("cancel task", None, "cancel"),
]


def grep_count(lines: list[str], anchor: str, exclude: str | None) -> int:
    """``grep -cF anchor`` (piped through ``grep -vF exclude``)."""
    return sum(1 for ln in lines if anchor in ln and (exclude is None or exclude not in ln))


def logscope_json(path: Path) -> dict:
    exe = shutil.which("logscope")
    cmd = [exe] if exe else [sys.executable, "-m", "logscope"]
    p = subprocess.run([*cmd, "ingest", "--json", str(path)], capture_output=True, text=True,
                       cwd=ROOT)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        raise SystemExit(f"logscope ingest --json {path} failed ({p.returncode}): "
                         f"{p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(p)


def main(argv: list[str]) -> int:
    logs = [Path(a) for a in argv] or sorted(CORPUS.glob("*.log"))
    if not logs:
        print("no logs found", file=sys.stderr)
        return 2
    totals: dict[str, list[int]] = {kind: [0, 0] for _, _, kind in ANCHORS}
    overview = []
    ok = True
    for log in logs:
        data = log.read_bytes().decode("utf-8", errors="replace")
        lines = data.replace("\r\n", "\n").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        s = logscope_json(log)
        ev = s.get("events", {})
        print(f"### {rel(log)}\n")
        print("| kind | anchor (`grep -cF`) | grep count | logscope count | equal? |")
        print("|---|---|---:|---:|:---:|")
        file_ok = True
        for anchor, exclude, kind in ANCHORS:
            g = grep_count(lines, anchor, exclude)
            n = int(ev.get(kind, 0))
            eq = g == n
            file_ok &= eq
            totals[kind][0] += g
            totals[kind][1] += n
            shown = f"`{anchor}`" + (f" (not `{exclude}`)" if exclude else "")
            print(f"| {kind} | {shown} | {g} | {n} | {'yes' if eq else '**NO**'} |")
        events = sum(ev.values())
        ign, unr = int(s.get("ignored", 0)), int(s.get("unrecognized", 0))
        acc = s["lines"] == len(lines) == events + ign + unr
        ok &= file_ok and acc
        overview.append((rel(log), len(lines), s["lines"], events, ign, unr, s.get("requests", 0),
                         acc, file_ok))
        print()
    print("### All logs\n")
    print("| kind | grep count | logscope count | equal? |")
    print("|---|---:|---:|:---:|")
    for _, _, kind in ANCHORS:
        g, n = totals[kind]
        print(f"| {kind} | {g} | {n} | {'yes' if g == n else '**NO**'} |")
    print()
    print("| log | lines in file | `lines` (JSON) | events | ignored | unrecognized | "
          "events+ignored+unrecognized = lines? | requests | anchors equal? |")
    print("|---|---:|---:|---:|---:|---:|:---:|---:|:---:|")
    for name, nl, jl, events, ign, unr, req, acc, fok in overview:
        print(f"| {name} | {nl} | {jl} | {events} | {ign} | {unr} | {'yes' if acc else '**NO**'} | "
              f"{req} | {'yes' if fok else '**NO**'} |")
    print()
    print("all equal" if ok else "DIFFERENCES FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
