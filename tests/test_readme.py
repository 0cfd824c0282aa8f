"""The README's first screen is what a forum user does, in order; no doc names an issue."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            ROOT / "grammars" / "README.md", ROOT / "bench" / "RESULTS.md"]


def test_first_screen_is_the_users_order():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = text[:text.index("## More")]
    at = [first.index(f"logscope {c} ") for c in ("ingest", "report", "card", "compare",
                                                   "follow")]
    assert at == sorted(at), "ingest, report, card, compare, follow: in that order"
    for internal in ("grammar", "Polars", "Parquet", "lark", "Dask", "16 MiB"):
        assert internal not in first, f"{internal!r} is an internal: move it to docs/"
    assert "| test | t/s |" in first, "the table report prints"


def test_no_issue_numbers_in_docs():
    for md in _docs():
        if md.exists():
            hits = re.findall(r"\(issues? \d+[^)]*\)", md.read_text(encoding="utf-8"))
            assert not hits, f"{md.relative_to(ROOT)}: {hits}"


def test_duckdb_is_an_ordinary_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(d.startswith("duckdb") for d in project["dependencies"])


def test_readme_links_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\(((?:docs|notebooks)/[^)#]+)", text):
        assert (ROOT / link).exists(), link
