"""Compile the lark grammars in ``grammars/`` into the fast path.

lark describes every line format (the single source of truth) and explains failures; it is far
too slow to run per line on bulk input. At load time each engine grammar is therefore compiled,
through lark's own grammar objects (``Lark.grammar.rule_defs`` for the rule trees,
``Lark.terminals`` / ``pattern.to_regexp()`` for the terminals), into:

* one *envelope* regex (the engine's common line prefix, with its fields), and
* per format *variant*: a literal anchor for routing, an anchored regex with one named group per
  field, the fields' dtypes, and for key/value families the per-member item regexes.

Compiled grammars are cached by the hash of the grammar text (in memory and on disk).
See ``grammars/README.md`` for the conventions the grammars follow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

ENGINES = ("llama-server", "sglang", "vllm")

# dtype names used across logscope (mapped to Polars types in logscope.frames)
INT, FLOAT, FLOAT_LIST, BOOL, STR = "int", "float", "float_list", "bool", "str"
_BASE_DTYPES = {
    "INT": INT,
    "SIGNED_INT": INT,
    "PORT_NUMBER": INT,
    "UNIX_SECONDS": INT,
    "FLOAT": FLOAT,
    "FLOAT_LIST": FLOAT_LIST,
    "BOOL01": BOOL,
    "BOOLWORD": BOOL,
}
_FORMAT_DOC = re.compile(r"^//\s*@format\s+(.*)$")
_RULE_DEF = re.compile(r"^\??(\w+)(?:\.-?\d+)?\s*:")


class GrammarCompileError(Exception):
    """The grammar breaks a convention of grammars/README.md."""


def grammar_dir() -> Path:
    """Where the .lark files are: packaged next to the code, or the repository's grammars/."""
    pkg = Path(__file__).resolve().parent.parent   # logscope/
    for cand in (pkg / "grammars", pkg.parent / "grammars"):
        if (cand / "common.lark").exists():
            return cand
    raise FileNotFoundError("logscope grammars not found (expected grammars/common.lark)")


def grammar_path(engine: str) -> Path:
    return grammar_dir() / f"{engine.replace('-', '_')}.lark"


@dataclass(frozen=True)
class Member:
    """One field-bearing alternative of a key/value repetition."""

    rule: str
    anchor: str
    regex: str  # anchored regex matching one whole item, with named field groups
    fields: dict[str, str]


@dataclass(frozen=True)
class Repetition:
    group: str  # name of the group that captures the whole repeated span
    item_regex: str  # non-capturing regex of one item (for finditer / extract_all)
    members: tuple[Member, ...]

    @cached_property
    def routing_regex(self) -> str:
        """Every member in one regex: an item goes to the first member, in grammar order, that
        matches it whole (the alternation is leftmost-first, each branch ends at ``$``). Member
        ``i``'s branch opens with an empty group ``MEMBER_MARK{i}`` (not null: it took the
        item) and names its fields ``MEMBER_MARK{i}__field``."""
        branches = []
        for i, m in enumerate(self.members):
            body = _GROUP_NAME.sub(lambda g, i=i: f"(?P<{MEMBER_MARK}{i}__{g.group(1)}>",
                                   m.regex[1:-1])  # the member's own ^ and $
            branches.append(f"(?P<{MEMBER_MARK}{i}>)(?:{body})$")
        return "^(?:" + "|".join(branches) + ")"


MEMBER_MARK = "__m"
_GROUP_NAME = re.compile(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")  # a named group's opening


@dataclass(frozen=True)
class Variant:
    """One line format: a rule that is an alternative of an event kind (or of ``ignored``)."""

    kind: str  # event kind, "ignored" (known, not an event) or "claimed" (anchor only)
    name: str  # the variant rule's name
    doc: str  # the ``// @format`` comment
    anchor: str  # a literal every matching body contains ('' = none)
    regex: str  # anchored ``^...$`` regex over the body, named groups = fields
    fields: dict[str, str]  # field -> dtype name (duplicates coalesced: see ``aliases``)
    aliases: dict[str, str]  # regex group name -> field name (for duplicate field groups)
    reps: tuple[Repetition, ...] = ()
    # literals of which every matching body holds at least one (an alternation's): set where
    # there is no common anchor, or only one so short that most lines hold it (``] ``)
    any_of: tuple[str, ...] = ()

    @property
    def routing(self) -> tuple[str, ...]:
        """The literals a line must hold (one of) to be a candidate: ``any_of`` where set,
        else the anchor (neither: every line is one)."""
        return self.any_of or ((self.anchor,) if self.anchor else ())

    @property
    def all_fields(self) -> dict[str, str]:
        out = dict(self.fields)
        for rep in self.reps:
            for m in rep.members:
                out.update(m.fields)
        return out


@dataclass
class CompiledGrammar:
    engine: str
    digest: str
    envelope_regex: str
    envelope_fields: dict[str, str]
    variants: list[Variant]
    envelope_search: str = ""  # the envelope without captures, for locating a message
    _py: dict[str, re.Pattern[str]] = field(default_factory=dict, repr=False)
    _located: dict[str, str] = field(default_factory=dict, repr=False)

    def located(self, v: Variant) -> str:
        """The unanchored regex that finds variant ``v``'s message (envelope + body, to the end
        of the line) wherever it stands: its leftmost match starts where the message does."""
        rx = self._located.get(v.name)
        if rx is None:
            body = v.regex[1:] if v.regex.startswith("^") else v.regex
            rx = self._located[v.name] = _strip_groups(f"(?:{self.envelope_search}){body}")
        return rx

    # -- per-line fast path (Python ``re``), used by follow and diagnostics ---------------------
    def _rx(self, regex: str) -> re.Pattern[str]:
        pat = self._py.get(regex)
        if pat is None:
            pat = self._py[regex] = re.compile(regex)
        return pat

    def split_envelope(self, line: str) -> tuple[dict[str, Any], str]:
        m = self._rx(self.envelope_regex).match(line)
        if m is None:  # cannot happen: every envelope part is optional
            return {}, line
        groups = m.groupdict()
        body = groups.pop("_body")
        out: dict[str, Any] = {}
        for k, v in groups.items():
            name = k.split("__")[0]  # a repeated envelope field: the first non-null wins
            if out.get(name) is None:
                out[name] = convert(v, self.envelope_fields[name])
        return out, body

    def match_body(self, body: str) -> tuple[Variant, dict[str, Any]] | None:
        for v in self.variants:
            if v.anchor and v.anchor not in body:
                continue
            m = self._rx(v.regex).match(body)
            if m is None:
                continue
            return v, extract_fields(self, v, m)
        return None

    def match_line(self, line: str) -> tuple[str, str, dict[str, Any]] | None:
        """(kind, variant, fields incl. envelope fields) for one stripped line, or None."""
        env, body = self.split_envelope(line)
        hit = self.match_body(body)
        if hit is None:
            return None
        v, fields = hit
        return v.kind, v.name, {**env, **fields}

    # -- lark itself: validation, diagnostics, agreement tests ----------------------------------
    def lark(self) -> Any:
        return _lark_parser(self.engine)

    def explain(self, line: str) -> str:
        """Parse one line with lark; return the parse tree or lark's precise diagnostic."""
        from lark.exceptions import UnexpectedInput

        try:
            return self.lark().parse(line).pretty()
        except UnexpectedInput as e:
            return f"column {e.column}: {_short_lark_error(e)}"


def _strip_groups(regex: str) -> str:
    """The regex with its named groups made non-capturing (a search needs no captures)."""
    return _GROUP_NAME.sub("(?:", regex)


def _short_lark_error(e: Exception) -> str:
    expected = getattr(e, "expected", None) or getattr(e, "allowed", None) or ()
    exp = ", ".join(sorted(str(x) for x in expected)[:12])
    got = getattr(e, "char", None) or getattr(e, "token", None)
    return f"unexpected {got!r}; expected one of: {exp}" if exp else str(e).splitlines()[0]


def convert(value: str | None, dtype: str) -> Any:
    """Convert one captured string to its Python value (the per-line twin of frames.cast)."""
    if value is None:
        return None
    if dtype == INT:
        return int(value)
    if dtype == FLOAT:
        try:
            return float(value)
        except ValueError:
            return None
    if dtype == FLOAT_LIST:
        return [float(x) for x in re.split(r",\s*", value.strip()) if x]
    if dtype == BOOL:
        return value in ("1", "true", "True")
    return value


def extract_fields(g: CompiledGrammar, v: Variant, m: re.Match[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group, val in m.groupdict().items():
        if group.startswith("__rep"):
            continue
        name = v.aliases.get(group, group)
        if out.get(name) is None:
            out[name] = convert(val, v.fields[name])
    for rep in v.reps:
        for fname in {f for mem in rep.members for f in mem.fields}:
            out.setdefault(fname, None)
        span = m.group(rep.group)
        if not span:
            continue
        # an item is its first member's (grammar order) that matches it whole; a field several
        # members give is taken from the first such member, then the first item, as in ingest
        given: list[dict[str, Any]] = [{} for _ in rep.members]
        for item in g._rx(rep.item_regex).finditer(span):
            text = item.group(0)
            for mem, vals in zip(rep.members, given, strict=True):
                if mem.anchor and mem.anchor not in text:
                    continue
                mm = g._rx(mem.regex).match(text)
                if mm:
                    for k, val in mm.groupdict().items():
                        if vals.get(k) is None:
                            vals[k] = convert(val, mem.fields[k])
                    break
        for vals in given:
            for k, val in vals.items():
                if out.get(k) is None:
                    out[k] = val
    return out


# ---------------------------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------------------------

_REGEX_META = set("\\.^$|?*+()[]{}")


def escape(s: str) -> str:
    """Escape a literal for both Python ``re`` and Rust ``regex``."""
    return "".join("\\" + c if c in _REGEX_META else ("\\t" if c == "\t" else c) for c in s)


def _unquote(tok: str) -> tuple[str, bool]:
    flags = ""
    while tok and tok[-1] in "il":
        flags += tok[-1]
        tok = tok[:-1]
    value = json.loads(tok) if tok.startswith('"') else tok[1:-1]
    return value, "i" in flags


class _Compiler:
    def __init__(self, lk: Any, base_dtypes: dict[str, str]):
        from lark.grammar import NonTerminal, Terminal

        self.NT, self.T = NonTerminal, Terminal
        self.rules = {str(name): tree for name, _params, tree, _opts in lk.grammar.rule_defs}
        self.terms = {t.name: t.pattern for t in lk.terminals}
        self.base = base_dtypes
        self._groups: dict[str, int] = {}

    # dtype of a field terminal: by its pattern, compared with the typed bases of common.lark
    def dtype(self, term: str) -> str:
        return self.base.get(self.terms[term].to_regexp(), STR)

    def term_regex(self, name: str) -> str:
        pat = self.terms[name]
        from lark.lexer import PatternStr

        rx = escape(pat.value) if isinstance(pat, PatternStr) else pat.value
        if "i" in pat.flags:
            rx = f"(?i:{rx})"
        return rx

    def is_field(self, sym: Any) -> bool:
        return isinstance(sym, self.T) and not sym.name.startswith("_") and sym.name.isupper() \
            and not sym.name.startswith("__")

    def has_fields(self, node: Any, seen: tuple[str, ...] = ()) -> bool:
        if isinstance(node, self.T):
            return self.is_field(node)
        if isinstance(node, self.NT):
            if node.name in seen:
                raise GrammarCompileError(f"recursive rule {node.name}")
            return self.has_fields(self.rules[node.name], (*seen, node.name))
        if hasattr(node, "children"):
            return any(self.has_fields(c, seen) for c in node.children)
        return False

    def reaches(self, node: Any, rule: str) -> bool:
        if isinstance(node, self.NT):
            return node.name == rule or self.reaches(self.rules[node.name], rule)
        if hasattr(node, "children"):
            return any(self.reaches(c, rule) for c in node.children)
        return False

    def direct_field_rules(self, node: Any) -> list[str]:
        """Rules reachable from node that hold field terminals directly."""
        out: list[str] = []

        def walk(n: Any) -> None:
            if isinstance(n, self.NT):
                tree = self.rules[n.name]
                if _direct_fields(tree, self) and n.name not in out:
                    out.append(n.name)
                walk(tree)
            elif hasattr(n, "children"):
                for c in n.children:
                    walk(c)

        walk(node)
        return out

    # ---- regex generation ----
    def rx(self, node: Any, ctx: _Ctx) -> str:
        T, NT = self.T, self.NT
        if isinstance(node, T):
            body = self.term_regex(node.name)
            if self.is_field(node) and ctx.capture:
                name = node.name.lower()
                group = ctx.new_group(name)
                ctx.fields[name] = self.dtype(node.name)
                return f"(?P<{group}>{body})"
            return f"(?:{body})"
        if isinstance(node, NT):
            if node.name in ctx.stack:
                raise GrammarCompileError(f"recursive rule {node.name}")
            ctx.stack.append(node.name)
            try:
                return self.rx(self.rules[node.name], ctx)
            finally:
                ctx.stack.pop()
        data = node.data
        kids = node.children
        if data == "expansions":
            alts = kids
            if ctx.select is not None:
                sel = [a for a in alts if self.reaches(a, ctx.select)]
                alts = sel or alts
            parts = [self.rx(a, ctx) for a in alts]
            return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
        if data == "expansion":
            return "".join(self.rx(c, ctx) for c in kids)
        if data == "value":
            return self.rx(kids[0], ctx)
        if data == "literal":
            tok = kids[0]
            if tok.type == "STRING":
                value, icase = _unquote(str(tok))
                rx = escape(value)
                return f"(?i:{rx})" if icase else rx
            body, _, flags = str(tok)[1:].rpartition("/")
            return f"(?i:{body})" if "i" in flags else f"(?:{body})"
        if data == "maybe":
            return f"(?:{self.rx(kids[0], ctx)})?"
        if data == "expr":
            item, op = kids[0], str(kids[1])
            if op in ("*", "+") and self.has_fields(item):
                if ctx.capture and ctx.select is None:
                    return self.repetition(item, op, ctx)
                inner = self.rx(item, ctx.nocap())  # fields of a repetition: see repetition()
            else:
                inner = self.rx(item, ctx)
            if op in ("?", "*", "+"):
                return f"(?:{inner}){op}"
            if op == "~":
                lo = int(str(kids[2]))
                hi = int(str(kids[3])) if len(kids) > 3 else lo
                return f"(?:{inner}){{{lo},{hi}}}"
        raise GrammarCompileError(f"unsupported grammar construct {data!r}")

    def repetition(self, item: Any, op: str, ctx: _Ctx) -> str:
        item_rx = self.rx(item, ctx.nocap())
        members = []
        for rule in self.direct_field_rules(item):
            mctx = _Ctx(capture=True, select=rule)
            regex = "^" + self.rx(item, mctx) + "$"
            members.append(Member(rule, self.anchor(self.rules[rule]), regex, dict(mctx.fields)))
        group = f"__rep{len(ctx.reps)}"
        ctx.reps.append(Repetition(group, item_rx, tuple(members)))
        return f"(?P<{group}>(?:{item_rx}){op})"

    # ---- anchors: literals every match must contain ----
    def required_literals(self, node: Any, stack: tuple[str, ...] = ()) -> list[str]:
        if isinstance(node, self.T):
            from lark.lexer import PatternStr

            pat = self.terms[node.name]
            return [pat.value] if isinstance(pat, PatternStr) and "i" not in pat.flags else []
        if isinstance(node, self.NT):
            if node.name in stack:
                return []
            return self.required_literals(self.rules[node.name], (*stack, node.name))
        data = node.data
        if data == "expansions":
            if len(node.children) == 1:
                return self.required_literals(node.children[0], stack)
            sets = [set(self.required_literals(a, stack)) for a in node.children]
            return sorted(set.intersection(*sets))
        if data == "expansion":
            return [x for c in node.children for x in self.required_literals(c, stack)]
        if data == "value":
            return self.required_literals(node.children[0], stack)
        if data == "literal":
            tok = node.children[0]
            if tok.type == "STRING":
                value, icase = _unquote(str(tok))
                return [] if icase else [value]
            return []
        if data == "expr" and str(node.children[1]) == "+":
            return self.required_literals(node.children[0], stack)
        return []

    def anchor(self, node: Any) -> str:
        lits = self.required_literals(node)
        return max(lits, key=len) if lits else ""

    def literal_choices(self, node: Any, stack: tuple[str, ...] = ()) -> list[str] | None:
        """Literals of which every match of ``node`` holds at least one (an alternation's
        anchors), or None: routing for a variant without one common anchor."""
        req = self.required_literals(node, stack)
        if req and len(best := max(req, key=len)) >= MIN_CHOICE:
            return [best]
        # no required literal, or only a short one: an alternation inside may hold longer ones
        if isinstance(node, self.T):
            return None
        if isinstance(node, self.NT):
            if node.name in stack:
                return None
            return self.literal_choices(self.rules[node.name], (*stack, node.name))
        data = node.data
        if data == "expansions":
            alts = [self.literal_choices(a, stack) for a in node.children]
            if any(a is None for a in alts):
                return None
            out = sorted({x for a in alts for x in a or ()})
            return out if len(out) <= MAX_CHOICES else None
        if data == "expansion":
            options = [c for c in (self.literal_choices(ch, stack) for ch in node.children) if c]
            return min(options, key=lambda o: (len(o), -min(map(len, o)))) if options else None
        if data == "value" or (data == "expr" and str(node.children[1]) == "+"):
            return self.literal_choices(node.children[0], stack)
        return None

    def variant(self, kind: str, name: str, doc: str) -> Variant:
        ctx = _Ctx(capture=True)
        body = self.rx(self.NT(name), ctx)
        aliases = {g: f for g, f in ctx.group_names.items() if g != f}
        anchor = self.anchor(self.NT(name))
        choices: tuple[str, ...] = ()
        if len(anchor.encode()) < MIN_CHOICE:  # none, or one most lines hold: the alternation's
            lits = tuple(self.literal_choices(self.NT(name)) or ())
            if lits and min(len(x.encode()) for x in lits) > len(anchor.encode()):
                choices = lits
        return Variant(kind, name, doc, anchor, f"^(?:{body})$", dict(ctx.fields), aliases,
                       tuple(ctx.reps), choices)


MIN_CHOICE = 3  # a routing literal shorter than this would hold for most lines
MAX_CHOICES = 16


def _direct_fields(tree: Any, comp: _Compiler) -> bool:
    if isinstance(tree, comp.T):
        return comp.is_field(tree)
    if isinstance(tree, comp.NT):
        return False
    return any(_direct_fields(c, comp) for c in getattr(tree, "children", ()))


@dataclass
class _Ctx:
    capture: bool = True
    select: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    group_names: dict[str, str] = field(default_factory=dict)  # group -> field
    reps: list[Repetition] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)

    def new_group(self, name: str) -> str:
        group, n = name, 1
        while group in self.group_names:
            n += 1
            group = f"{name}__{n}"
        self.group_names[group] = name
        return group

    def nocap(self) -> _Ctx:
        c = _Ctx(capture=False, select=self.select)
        c.stack = self.stack
        return c


def _alternatives(tree: Any, NT: type) -> list[str]:
    out = []
    for exp in tree.children:
        syms = exp.children
        if len(syms) != 1 or syms[0].data != "value" or not isinstance(syms[0].children[0], NT):
            raise GrammarCompileError("event/kind rules must be plain alternatives of rule names")
        out.append(syms[0].children[0].name)
    return out


def _format_docs(text: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    pending: str | None = None
    for line in text.splitlines():
        s = line.strip()
        m = _FORMAT_DOC.match(s)
        if m:
            pending = m.group(1).strip()
            continue
        r = _RULE_DEF.match(s)
        if r and pending is not None:
            docs[r.group(1)] = pending
            pending = None
        elif s and not s.startswith("//"):
            pending = None
    return docs


@cache
def _lark_parser(engine: str) -> Any:
    from lark import Lark

    return Lark.open(str(grammar_path(engine)), parser="earley", lexer="dynamic", start="start",
                     strict=False)


def _base_dtypes() -> dict[str, str]:
    from lark import Lark

    names = sorted(_BASE_DTYPES)
    text = f"%import .common ({', '.join(names)})\nstart: " + " | ".join(names) + "\n"
    lk = Lark(text, parser="earley", lexer="dynamic", import_paths=[str(grammar_dir())],
              source_path=str(grammar_dir() / "_bases.lark"))
    return {t.pattern.to_regexp(): _BASE_DTYPES[t.name] for t in lk.terminals}


def _digest(engine: str) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())  # the compiler itself is part of the cache key
    for p in (grammar_dir() / "common.lark", grammar_path(engine)):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _cache_file(engine: str, digest: str) -> Path:
    root = Path(os.environ.get("LOGSCOPE_CACHE_DIR") or Path.home() / ".cache" / "logscope")
    return root / f"grammar-{engine}-{digest}.json"


def compile_grammar(engine: str) -> CompiledGrammar:
    """Compile an engine grammar with lark (no cache). Raises GrammarCompileError."""
    lk = _lark_parser(engine)
    comp = _Compiler(lk, _base_dtypes())
    text = grammar_path(engine).read_text()
    docs = _format_docs(text)
    if "envelope" not in comp.rules or "event" not in comp.rules:
        raise GrammarCompileError(f"{engine}: grammar needs `envelope` and `event` rules")
    ectx = _Ctx(capture=True)
    env = comp.rx(comp.rules["envelope"], ectx)
    if ectx.reps:
        raise GrammarCompileError("envelope: no repetitions with fields")
    variants: list[Variant] = []
    kinds = _alternatives(comp.rules["event"], comp.NT)
    kinds += [k for k in ("ignored", "claimed", "other") if k in comp.rules]
    for kind in kinds:
        for name in _alternatives(comp.rules[kind], comp.NT):
            variants.append(comp.variant(kind, name, docs.get(name, "")))
    for v in variants:  # both engines must accept every regex
        re.compile(v.regex)
    return CompiledGrammar(engine, _digest(engine), f"^(?:{env})(?P<_body>.*)$",
                           dict(ectx.fields), variants, _strip_groups(env))


def _to_json(g: CompiledGrammar) -> dict[str, Any]:
    def var(v: Variant) -> dict[str, Any]:
        return {
            "kind": v.kind, "name": v.name, "doc": v.doc, "anchor": v.anchor,
            "any_of": list(v.any_of), "regex": v.regex,
            "fields": v.fields, "aliases": v.aliases,
            "reps": [{"group": r.group, "item_regex": r.item_regex,
                      "members": [m.__dict__ for m in r.members]} for r in v.reps],
        }

    return {"engine": g.engine, "digest": g.digest, "envelope_regex": g.envelope_regex,
            "envelope_fields": g.envelope_fields, "envelope_search": g.envelope_search,
            "variants": [var(v) for v in g.variants]}


def _from_json(d: dict[str, Any]) -> CompiledGrammar:
    variants = [
        Variant(v["kind"], v["name"], v["doc"], v["anchor"], v["regex"], v["fields"], v["aliases"],
                tuple(Repetition(r["group"], r["item_regex"],
                                 tuple(Member(**m) for m in r["members"])) for r in v["reps"]),
                tuple(v["any_of"]))
        for v in d["variants"]
    ]
    return CompiledGrammar(d["engine"], d["digest"], d["envelope_regex"], d["envelope_fields"],
                           variants, d["envelope_search"])


@cache
def load_grammar(engine: str) -> CompiledGrammar:
    """The compiled grammar of an engine, cached by grammar hash (memory, then disk).

    >>> g = load_grammar("llama-server")
    >>> g.match_line("slot launch_slot_: id  0 | task 7 | processing task")[0]
    'task_launch'
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    return load_compiled(engine)


@cache
def load_compiled(name: str) -> CompiledGrammar:
    """The compiled grammar ``grammars/<name>.lark`` (a server's or a telemetry format's),
    cached by grammar hash in memory and on disk: lark runs once per grammar version."""
    digest = _digest(name)
    path = _cache_file(name, digest)
    try:
        return _from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    g = compile_grammar(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_to_json(g)))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home is fine: we just compile again next time
    return g


def available_engines() -> list[str]:
    return [e for e in ENGINES if grammar_path(e).exists()]
