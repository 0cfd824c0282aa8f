"""lark (the grammar itself) and the compiled fast path agree on every fixture line."""

from __future__ import annotations

import re

import polars as pl
import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from logscope.classify.grammar import available_engines, compile_grammar, convert, load_grammar
from logscope.classify.parse import classify_line
from logscope.input.frontend import strip_line
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

    from logscope.classify.grammar import grammar_path

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


@pytest.mark.parametrize("engine", available_engines())
def test_one_routing_pass_gives_each_item_to_its_first_whole_member(engine):
    # the batch path routes key/value items with one alternation of every member; the
    # per-line path tries the members in grammar order: same member, same fields, every item
    from logscope.classify.grammar import MEMBER_MARK

    g = load_grammar(engine)
    reps = {(rep.item_regex, rep.routing_regex): rep for v in g.variants for rep in v.reps}
    if not reps:
        pytest.skip(f"{engine}: no key/value family")
    lines = [raw for _, raw in _fixture_lines(engine)]
    checked = 0
    for rep in reps.values():
        items = sorted({m.group(0) for raw in lines for m in re.finditer(rep.item_regex, raw)})
        # each member's own text, too: the first member of two that match it must win
        if not items:
            continue
        got = pl.Series(items).str.extract_groups(rep.routing_regex).struct.unnest()
        for k, item in enumerate(items):
            want = next(((i, m) for i, m in enumerate(rep.members)
                         if re.fullmatch(m.regex[1:-1], item)), None)
            took = [i for i in range(len(rep.members))
                    if got.get_column(f"{MEMBER_MARK}{i}")[k] is not None]
            assert took == ([want[0]] if want else []), (item, took, want)
            if want:
                i, m = want
                exp = re.fullmatch(m.regex[1:-1], item).groupdict()
                assert {f: got.get_column(f"{MEMBER_MARK}{i}__{f}")[k] for f in m.fields} \
                    == {f: exp[f] for f in m.fields}, item
            checked += 1
    assert checked


def test_routing_regex_prefers_the_earlier_member_when_two_match_whole():
    from logscope.classify.grammar import MEMBER_MARK, Member, Repetition
    from logscope.classify.parse import _expand_rep

    rep = Repetition("__rep0", r"(?:, [a-z]+: [0-9]+)", (
        Member("named", ", x: ", r"^, x: (?P<x>[0-9]+)$", {"x": "int"}),
        Member("any", "", r"^, (?P<key>[a-z]+): (?P<x>[0-9]+)$", {"key": "str", "x": "int"}),
    ))
    got = pl.Series([", x: 5", ", y: 7"]).str.extract_groups(rep.routing_regex).struct.unnest()
    assert got.get_column(f"{MEMBER_MARK}0").to_list() == ["", None]
    assert got.get_column(f"{MEMBER_MARK}1").to_list() == [None, ""]
    assert got.get_column(f"{MEMBER_MARK}1__key").to_list() == [None, "y"]
    # per row, the field of the first member in grammar order wins, whatever the item order
    out = _expand_rep(pl.DataFrame({"_row": [0, 1], "__rep0": [", y: 7, x: 5", ", y: 7"]}), rep)
    assert out.to_dicts() == [{"_row": 0, "x": 5, "key": "y"}, {"_row": 1, "x": 7, "key": "y"}]


def test_per_line_and_ingest_agree_when_two_members_give_a_field_in_reverse_order(tmp_path):
    """SGLang's ``full_used_tokens`` comes from ``#token: full=…`` and from ``#full token: …``;
    with both in one line, in the order opposite to the grammar's, the per-line path (follow,
    explain) takes the grammar's first member, as ingest does."""
    import logscope

    line = ("[2026-04-09 12:43:05 TP0] Decode batch, #running-req: 1, #full token: 111, "
            "#token: full=222, swa=33, cuda graph: True, gen throughput (token/s): 38.55, "
            "#queue-req: 0")
    path = tmp_path / "two-members.log"
    path.write_text(line + "\n")
    batch = logscope.read(str(path))["decode_batch"].row(0, named=True)
    _eng, kind, _variant, per_line = classify_line(line, ["sglang"])
    assert kind == "decode_batch"
    assert batch["full_used_tokens"] == per_line["full_used_tokens"] == 222
    assert per_line["swa_used_tokens"] == 33


@pytest.mark.parametrize("engine", available_engines())
def test_an_alternations_literals_route_every_line_the_variant_matches(engine):
    """A variant whose common anchor is one most lines hold (``] ``, ``: ``) is routed by the
    literals of an alternation inside it instead: every fixture line whose message the
    variant's regex finds, routing aside, holds one of them."""
    g = load_grammar(engine)
    routed = [v for v in g.variants if v.any_of]
    assert any(v.anchor for v in routed) or engine != "llama-server"
    for v in routed:
        assert all(len(a.encode()) > len(v.anchor.encode()) for a in v.any_of), v.name
    found = 0
    for where, raw in _fixture_lines(engine):
        _wrap, text = strip_line(raw)
        for v in routed:
            if re.search(g.located(v), text):
                found += 1
                assert any(a in text for a in v.any_of), (where, v.name, text)
    assert found or not routed
