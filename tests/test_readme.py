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


def test_first_screen_outputs_are_what_the_commands_print():
    """The ingest and report excerpts on the first screen come from the bundled log the
    README's first command ingests."""
    from click.testing import CliRunner

    from logscope.cli import cli

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    log = re.search(r"logscope ingest (fixtures/\S+\.log)", text).group(1)
    first = text[:text.index("## More")]
    r = CliRunner().invoke(cli, ["ingest", str(ROOT / log)])
    assert r.exit_code == 0, r.output
    block = first.split("logscope ingest server.log\n```\n\n```\n", 1)[1].split("```", 1)[0]
    printed = r.output.splitlines()
    for line in block.splitlines():  # "..." elides the rest of a line, or whole lines
        head = line.split("...", 1)[0].rstrip(" (")
        if head.strip():
            assert any(p.startswith(head) for p in printed), line
    r = CliRunner().invoke(cli, ["report", str(ROOT / log)])
    assert r.exit_code == 0, r.output
    rows = [ln for ln in first.split("| test | t/s |", 1)[1].splitlines()[2:]
            if ln.startswith("| ")]
    assert rows
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert any(all(f"| {c} |" in ln for c in cells[:4]) for ln in r.output.splitlines()), row
