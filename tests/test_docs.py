"""docs/cli.md is generated from the click commands' --help and must be current.

Like sqlite-utils' cog check: regenerate in memory and compare with the file in the repo.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_cli_docs.py"
FIX = "docs/cli.md is out of date: run `python scripts/gen_cli_docs.py` and commit docs/cli.md"


def _gen():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cli_docs_up_to_date():
    mod = _gen()
    expected = mod.render()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == expected, FIX


def test_cli_docs_cover_every_command():
    from logscope.cli import COMMANDS

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"## logscope {name}\n" in text, f"{name} missing from docs/cli.md; {FIX}"


def test_adding_a_format_guide_names_real_things():
    """The guide's example must keep pointing at a rule, fixture and golden that exist."""
    guide = ROOT / "docs" / "adding-a-format.md"
    if not guide.exists():
        return
    text = guide.read_text(encoding="utf-8")
    grammar = (ROOT / "grammars" / "llama_server.lark").read_text(encoding="utf-8")
    assert "decode_progress_b10406" in text and "decode_progress_b10406" in grammar
    for rel in ("fixtures/llama-server/d-b10406-n-gen-trace.log",
                "fixtures/llama-server/d-b10406-n-gen-trace.expected.json"):
        assert rel in text and (ROOT / rel).exists(), rel


def _images():
    spec = importlib.util.spec_from_file_location("gen_readme_images",
                                                  ROOT / "scripts" / "gen_readme_images.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_pictured_image_is_generated_by_the_script():
    import re

    made = set(_images().names())
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for ref in re.findall(r"\]\(((?:docs/)?img/[^)]+\.png)\)", md.read_text(encoding="utf-8")):
            name = ref.rsplit("/", 1)[-1]
            assert name in made, f"{md.name} shows {ref}: add it to scripts/gen_readme_images.py"
            assert (ROOT / "docs" / "img" / name).exists(), (
                f"{ref} missing: run python scripts/gen_readme_images.py")


def test_readme_images_current():
    stale = _images().check()
    assert not stale, "; ".join(stale) + (
        " -- docs/img is out of date: run `python scripts/gen_readme_images.py`, commit docs/img")
