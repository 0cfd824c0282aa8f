#!/usr/bin/env python3
"""`logscope report` over every fixture, wild and corpus log: no traceback anywhere.

    python bench/report_all.py [GLOB ...]

Prints each log that ended in a traceback (or an exit code other than 0 = a report, 1 = one
clear error line), then ``N logs, M bad``; exits 1 when any was bad.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logscope.cli import cli  # noqa: E402


def main() -> int:
    pats = sys.argv[1:] or [str(ROOT / "fixtures" / "**" / "*.log"),
                            str(ROOT.parent / "shared" / "corpus" / "*.log")]
    files = sorted({f for p in pats for f in glob.glob(p, recursive=True)})
    bad = 0
    for f in files:
        r = CliRunner().invoke(cli, ["report", f])
        crashed = r.exception is not None and not isinstance(r.exception, SystemExit)
        if r.exit_code not in (0, 1) or crashed or "Traceback" in r.output:
            bad += 1
            print(f"BAD {f}: exit {r.exit_code} {r.exception!r}"[:300])
    print(f"{len(files)} logs, {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
