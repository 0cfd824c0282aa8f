"""The folders are the pipeline's stages: a module imports only from its own stage or earlier
ones, and no two modules import each other, directly or through others (every import counts,
also one inside a function). The order is docs/internals.md's table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "logscope"

# stage order: what enters each comes from the ones above it
STAGES = ["input", "classify", "engines", "ingest", "fleet", "telemetry", "analysis", "outputs",
          "follow", "cli"]
# the package's own facade (read, scan) ties ingest, fleet, telemetry and the state timeline
# of the analyses (on which telemetry's clock is placed) together
FACADE = {"logscope": "analysis", "logscope.__main__": "cli"}


def _name(p: Path) -> str:
    parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(mod: str) -> set[str]:
    """The logscope modules ``mod`` imports (a name imported from a package that is a module
    of it counts as that module)."""
    p = MODULES[mod]
    pkg = mod if p.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for n in ast.walk(ast.parse(p.read_text())):
        if isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                up = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                base = ".".join(up + ([n.module] if n.module else []))
            if base == "logscope" or base.startswith("logscope."):
                for a in n.names:
                    sub = f"{base}.{a.name}"
                    out.add(sub if sub in MODULES else base)
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("logscope")}
    out.discard(mod)
    return {m for m in out if m in MODULES}


GRAPH = {m: _imports(m) for m in MODULES}


def stage(mod: str) -> int:
    if mod in FACADE:
        return STAGES.index(FACADE[mod])
    first = mod.split(".")[1]
    if first not in STAGES:
        pytest.fail(f"{mod} lies in no stage: put it in one of {STAGES} (docs/internals.md)")
    return STAGES.index(first)


def test_every_module_lies_in_a_stage():
    for mod in MODULES:
        stage(mod)


def test_no_module_imports_from_a_later_stage():
    late = [f"{m} ({STAGES[stage(m)]}) imports {i} ({STAGES[stage(i)]})"
            for m, deps in GRAPH.items() for i in sorted(deps) if stage(i) > stage(m)]
    assert not late, "\n".join(late)


def test_no_import_cycle():
    """Tarjan's strongly connected components: each must be one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checker_sees_a_late_import():
    """A module of an early stage importing an analysis would be caught."""
    assert stage("logscope.input.sources") < stage("logscope.analysis.report")
    assert "logscope.analysis.concurrency" in GRAPH["logscope.analysis.metrics"]


def test_each_stage_folder_says_what_enters_leaves_and_it_may_import():
    """docs/internals.md promises it of every folder's ``__init__.py``."""
    quiet = []
    for name in STAGES:
        init = PKG / name / "__init__.py"
        if not init.exists():  # a stage that is one module (ingest.py)
            assert (PKG / f"{name}.py").exists(), f"stage {name}: no logscope/{name}/ nor .py"
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        quiet += [f"logscope/{name}/__init__.py: no {key!r}"
                  for key in ("Enters:", "Leaves:", "May import:") if key not in doc]
    assert not quiet, "\n".join(quiet)


def test_internals_table_is_the_stage_order():
    """The table that opens docs/internals.md lists the stages in the order checked here."""
    text = (PKG.parent / "docs" / "internals.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+)\. (\w+) \| `(logscope/[\w/.]+)` \|", text, flags=re.M)
    assert [name for _, name, _ in rows] == STAGES
    assert [int(n) for n, _, _ in rows] == list(range(1, len(STAGES) + 1))
    for _, name, where in rows:
        assert (PKG.parent / where).exists(), f"docs/internals.md: {name} is at {where}?"
