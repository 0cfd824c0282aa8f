#!/usr/bin/env python3
"""Are the frames of this checkout those of another revision? Table by table, on any logs.

    python bench/frames_equal.py --base 5bf3cc1 bench/data/llama-server-100mb-seed1.log ...
    python bench/frames_equal.py --base 5bf3cc1 --fixtures

Checks out ``--base`` into a temporary git worktree, runs ``logscope.read`` on each log there and
here (each in its own process, the base's frames passed as Parquet), and compares every table
with ``polars.testing.assert_frame_equal`` (exact, values and order), then the ``--json``
summary. Dtype changes are listed apart (the values are compared as strings for a String that
became Categorical). Exit status 1 when a table or summary differs. ``--fixtures``: every
``fixtures/**/*.log`` (the golden set).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DUMP = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from logscope import ingest
out = Path(sys.argv[2])
for i, path in enumerate(sys.argv[3:]):
    d = out / str(i)
    d.mkdir(parents=True, exist_ok=True)
    try:
        logs = ingest.read([path])
    except ingest.NoServerLines as e:
        logs = e.args[0]
    for name, df in logs.tables.items():
        df.write_parquet(d / f"{name}.parquet")
    (d / "summary.json").write_text(json.dumps(logs.summary(), default=str))
"""


def dump(tree: Path, logs: list[str], out: Path) -> None:
    subprocess.run([sys.executable, "-c", DUMP, str(tree), str(out), *logs], check=True,
                   cwd=tree)


def compare(a: Path, b: Path, log: str) -> tuple[list[str], list[str]]:
    import polars as pl
    from polars.testing import assert_frame_equal

    problems, dtypes = [], []
    ta = {p.stem for p in a.glob("*.parquet")}
    tb = {p.stem for p in b.glob("*.parquet")}
    if ta != tb:
        problems.append(f"{log}: tables differ: {sorted(ta ^ tb)}")
    for name in sorted(ta & tb):
        x, y = pl.read_parquet(a / f"{name}.parquet"), pl.read_parquet(b / f"{name}.parquet")
        for c in set(x.columns) & set(y.columns):
            if x.schema[c] != y.schema[c]:
                dtypes.append(f"{name}.{c}: {x.schema[c]} -> {y.schema[c]}")
        try:
            assert_frame_equal(x, y, check_dtypes=False, check_exact=True,
                               categorical_as_str=True)
        except AssertionError as e:
            problems.append(f"{log}: {name}: {str(e).splitlines()[0][:300]}")
    sa = json.loads((a / "summary.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    if sa != sb:
        problems.append(f"{log}: summary differs in {[k for k in sa if sa[k] != sb.get(k)]}")
    return problems, dtypes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the revision to compare with")
    ap.add_argument("--fixtures", action="store_true", help="every fixtures/**/*.log")
    ap.add_argument("logs", nargs="*")
    args = ap.parse_args()
    logs = [str(Path(p).resolve()) for p in args.logs]
    if args.fixtures:
        logs += [str(p) for p in sorted((ROOT / "fixtures").rglob("*.log"))]
    if not logs:
        ap.error("give logs or --fixtures")
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "-f", "--detach", str(tree), args.base],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            dump(tree, logs, Path(tmp) / "a")
            dump(ROOT, logs, Path(tmp) / "b")
            problems, dtypes = [], set()
            for i, log in enumerate(logs):
                p, d = compare(Path(tmp) / "a" / str(i), Path(tmp) / "b" / str(i), log)
                problems += p
                dtypes |= set(d)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                           capture_output=True)
    for d in sorted(dtypes):
        print(f"dtype changed: {d}")
    for p in problems:
        print(f"DIFFERENT: {p}")
    print(f"{len(logs)} log(s): " + ("every table equal" if not problems
                                     else f"{len(problems)} difference(s)"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
