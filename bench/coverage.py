#!/usr/bin/env python3
"""Coverage of the real logs: ``logscope ingest --json`` beside a plain ``grep -c`` of each anchor.

    python bench/coverage.py [LOG ...]        # default: fixtures/llama-server/corpus/*.log
    python bench/coverage.py --wild           # fixtures/wild: figure lines by construction
    python bench/coverage.py --alarms         # every fixture and ../shared/corpus log: alarms

For every log it counts the lines holding each timing anchor, exactly as ``grep -cF ANCHOR LOG``
would (``eval time =`` counts the lines that do not also hold ``prompt eval time =``), runs
``logscope ingest --json LOG`` (the CLI, as a user would) and prints, as Markdown, the two counts
side by side per event kind, and the line accounting ``lines`` = ``events`` + ``ignored`` +
``unrecognized`` + ``other`` against the file's own line count. ``--wild`` checks each wild log
(fixtures/wild: real wrapper and paste-damage shapes rendered over bare fixture lines) against its
golden figure-line counts, which bench/wild.py computed on the bare source, its engine, and
where the golden gives them the records a terminal wrapped (rejoined) and Ray's folded lines;
``--alarms`` lists, over every fixture log and ../shared/corpus, the unrecognized lines (drift
alarms) beside the count each golden expects. Exit status 1 if anything differs.
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


WILD = ROOT / "fixtures" / "wild"
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"


def _read(path: Path) -> dict:
    import logscope
    from logscope.ingest import NoServerLines

    try:
        return logscope.read(str(path)).summary()
    except NoServerLines as e:
        return {**e.args[0].summary(), "engines": []}


# wild golden key -> the count logscope's per-file stats give (summed over the log's files)
NOTES = {"rejoined": lambda f: len(f["rejoined"]), "folded": lambda f: f["folded"],
         "folded_lines": lambda f: f["folded_lines"]}


def wild() -> int:
    """Each wild log against its golden figure-line counts, alarms and engine (and, where the
    golden has them, its rejoined records and Ray's folded lines)."""
    ok = True
    rows = []
    tot_want = tot_got = 0
    for exp_path in sorted(WILD.glob("*.expected.json")):
        exp = json.loads(exp_path.read_text())
        s = _read(exp_path.with_name(exp_path.name.replace(".expected.json", ".log")))
        ev = s["events"]
        want = exp.get("figure_lines", {})
        got = {k: int(ev.get(k, 0)) for k in want}
        eng = [exp["engine"]] if exp.get("engine") else []
        alarms = int(s["unrecognized"])
        allowed = exp.get("unrecognized", 0)
        acc = s["records"] == sum(ev.values()) + s["ignored"] + s["other"] + alarms
        notes = all(sum(NOTES[k](f) for f in s["files"]) == exp[k] for k in NOTES if k in exp)
        good = got == want and s["engines"] == eng and alarms <= allowed and acc and notes
        ok &= good
        tot_want += sum(want.values())
        tot_got += sum(min(got[k], v) for k, v in want.items())
        rows.append((exp_path.name.replace(".expected.json", ".log"), "+".join(exp["wrapper"]) or
                     exp.get("class", ""), sum(want.values()), sum(got.values()), alarms,
                     ",".join(s["engines"]), good))
    print("| wild log | wrapper / class | figure lines (golden) | parsed | alarms | engines | ok |")
    print("|---|---|---:|---:|---:|---|:---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | "
              f"{'yes' if r[6] else '**NO**'} |")
    pct = 100.0 * tot_got / tot_want if tot_want else 100.0
    print(f"\n{len(rows)} wild logs, {sum(r[6] for r in rows)} exact; figure lines parsed: "
          f"{tot_got} of {tot_want} ({pct:.2f} %); alarms: {sum(r[4] for r in rows)}")
    return 0 if ok else 1


def alarms() -> int:
    """Unrecognized lines (drift alarms) over every fixture log and ../shared/corpus."""
    logs = sorted(p for p in (ROOT / "fixtures").rglob("*.log") if "wild" not in p.parts)
    logs += sorted(SHARED_CORPUS.glob("*.log")) if SHARED_CORPUS.exists() else []
    ok = True
    n_alarms = 0
    print("| log | lines | alarms | expected by its golden |")
    print("|---|---:|---:|---:|")
    for log in logs:
        exp_path = log.with_name(log.name[:-4] + ".expected.json")
        expected = (json.loads(exp_path.read_text()).get("unrecognized", 0)
                    if exp_path.exists() else 0)
        s = _read(log)
        n = int(s["unrecognized"])
        n_alarms += n
        if n or expected:
            print(f"| {rel(log)} | {s['lines']} | {n} | {expected} |")
        ok &= n == expected
    print(f"\n{len(logs)} logs, {n_alarms} alarm line(s) in all; "
          f"{'every count as its golden expects' if ok else 'DIFFERENCES FOUND'}")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--wild"]:
        return wild()
    if argv[:1] == ["--alarms"]:
        return alarms()
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    logs = [Path(a) for a in argv] or sorted(CORPUS.glob("*.log"))
    missing = [str(p) for p in logs if not p.is_file()]
    if missing:
        print(f"no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
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
        ign, unr = int(s.get("ignored", 0)) + int(s.get("other", 0)), int(s.get("unrecognized", 0))
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
    print("| log | lines in file | `lines` (JSON) | events | ignored + other | unrecognized | "
          "events+ignored+other+unrecognized = lines? | requests | anchors equal? |")
    print("|---|---:|---:|---:|---:|---:|:---:|---:|:---:|")
    for name, nl, jl, events, ign, unr, req, acc, fok in overview:
        print(f"| {name} | {nl} | {jl} | {events} | {ign} | {unr} | {'yes' if acc else '**NO**'} | "
              f"{req} | {'yes' if fok else '**NO**'} |")
    print()
    print("all equal" if ok else "DIFFERENCES FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
