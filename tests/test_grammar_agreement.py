"""lark (the grammar itself) and the compiled fast path agree on every fixture line."""

from __future__ import annotations

import re

import polars as pl
import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from logscope.frontend import strip_line
from logscope.grammar import available_engines, compile_grammar, convert, load_grammar
from logscope.parse import classify_line
from tests.conftest import FIXTURES

ENGINE_DIRS = {"llama-server": "llama-server", "sglang": "sglang", "vllm": "vllm"}


def _lark_fields(tree: Tree, g) -> tuple[str | None, str | None, dict]:
    kind = variant = None
    fields: dict = {}
    kinds = {v.kind for v in g.variants}
    names = {v.name for v in g.variants}
    dtypes = dict(g.envelope_fields)
    for v in g.variants:
        dtypes.update(v.all_fields)
    for sub in tree.iter_subtrees_topdown():
        if sub.data in kinds and kind is None:
            kind = str(sub.data)
        if sub.data in names and variant is None:
            variant = str(sub.data)
        for c in sub.children:
            if isinstance(c, Token) and not c.type.startswith("__"):  # anonymous: no field
                name = c.type.lower()
                if fields.get(name) is None:
                    fields[name] = convert(str(c), dtypes.get(name, "str"))
    return kind, variant, fields


def _fixture_lines(engine: str):
    for log in sorted((FIXTURES / ENGINE_DIRS[engine]).rglob("*.log")):
        for i, raw in enumerate(log.read_text(errors="replace").replace("\r\n", "\n").split("\n")):
            if raw:
                yield f"{log.name}:{i + 1}", raw


@pytest.mark.parametrize("engine", available_engines())
def test_grammar_compiles_strictly(engine):
    from lark import Lark

    from logscope.grammar import grammar_path

    # lark's strict mode: no terminal collisions it can detect, no unused or undefined symbols
    Lark.open(str(grammar_path(engine)), parser="earley", lexer="dynamic", strict=True)
    g = compile_grammar(engine)
    assert g.variants and all(v.regex.startswith("^") for v in g.variants)
    assert all(v.doc for v in g.variants), "every variant has an @format comment"
    # every compiled regex is valid for both engines that run it: Python re and Rust regex
    regexes = [g.envelope_regex] + [v.regex for v in g.variants] + [
        r for v in g.variants for rep in v.reps
        for r in (rep.item_regex, *(m.regex for m in rep.members))]
    probe = pl.Series(["x"])
    for rx in regexes:
        re.compile(rx)
        probe.str.contains(rx)


@pytest.mark.parametrize("engine", available_engines())
def test_lark_and_compiled_patterns_agree(engine):
    g = load_grammar(engine)
    lk = g.lark()
    checked = 0
    disagreements = []
    for where, raw in _fixture_lines(engine):
        _wrap, text = strip_line(raw)
        fast = classify_line(text, [engine])
        # lark parses the message: the line from where the compiled patterns found it
        prefix = (fast[3].get("prefix") or "") if fast is not None else ""
        try:
            tree = lk.parse(text[len(prefix):])
        except UnexpectedInput:
            tree = None
        if fast is None or fast[1] in ("unrecognized", "other"):
            if tree is not None:
                disagreements.append((where, "lark parses, compiled does not", text))
            continue
        if tree is None:
            disagreements.append((where, "compiled matches, lark does not", text))
            continue
        kind, variant, lfields = _lark_fields(tree, g)
        _eng, fkind, fvariant, ffields = fast
        if (kind or "ignored") != fkind:
            disagreements.append((where, f"kind {kind} != {fkind}", text))
            continue
        for k, v in lfields.items():
            if ffields.get(k) != v and not (isinstance(v, float) and v != v):
                disagreements.append((where, f"{k}: lark {v!r} compiled {ffields.get(k)!r}", text))
        checked += 1
    assert not disagreements, "\n".join(map(str, disagreements[:20]))
    if checked == 0:
        pytest.skip(f"no fixture lines for {engine} yet")
