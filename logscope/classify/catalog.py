"""What logscope knows and how it read one line: the library behind ``logscope formats`` and
``logscope explain``.

    >>> import logscope.classify.catalog as cat
    >>> f = cat.formats()
    >>> f.filter(f["variant"] == "task_launch_b3761")["since"].item()
    'b3761'
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from logscope.classify.grammar import ENGINES, available_engines, load_grammar
from logscope.classify.parse import EVENT, IGNORED, OTHER, UNRECOGNIZED, classify_line
from logscope.input import sources
from logscope.input.frontend import strip_line

# a version token: llama.cpp build (b3761), a release (0.4.9.post6, 0.5.x), or now / +
_VERSION = r"(?:b\d+|\d+(?:\.(?:\d+|x))+(?:\.?post\d+)?|now)"
_RANGE = re.compile(rf"(?P<lo>{_VERSION})?\s*(?:(?P<dash>[–-])\s*(?P<hi>{_VERSION})|(?P<plus>\+))?")
_LE = re.compile(rf"^\s*(?:≤|<=)\s*(?P<hi>{_VERSION})")


def split_doc(doc: str) -> tuple[str, str]:
    """``"b3761–b4006 (DBG): text"`` -> (``"b3761–b4006 (DBG)"``, ``"text"``)."""
    head, sep, tail = doc.partition(": ")
    if not sep:  # a bare version text ("b1413–b2258 (era B)") or a bare description
        doc = doc.strip()
        return (doc, "") if re.match(rf"(?:≤|<=)?\s*{_VERSION}\b", doc) else ("", doc)
    return head.strip(), tail.strip()


def version_bounds(versions: str) -> tuple[str | None, str | None]:
    """First and last version of a ``@format`` version text: ``since`` and ``until``.

    ``until`` is None for an open range (``b3761+``, ``0.4.7–now``); both are None when the text
    names no version (``all``, ``V0``).
    """
    m = _LE.match(versions)
    if m:
        return None, m.group("hi")
    lows, highs, open_end = [], [], False
    for part in re.split(r",\s*", versions):
        part = re.sub(r"\s*\(.*$", "", part.strip())  # drop "(DBG)" and such
        r = _RANGE.fullmatch(part) or _RANGE.match(part)
        if not r or not r.group("lo"):
            continue
        lows.append(r.group("lo"))
        hi = r.group("hi")
        if r.group("plus") or hi == "now":
            open_end = True
        highs.append(hi or (None if r.group("plus") else r.group("lo")))
    if not lows:
        return None, None
    until = None if open_end else highs[-1]
    return lows[0], until


def formats(engine: str | None = None) -> pl.DataFrame:
    """Every known line format: one row per grammar variant, in grammar (matching) order.

    Columns: ``engine``, ``kind`` (event kind, ``ignored`` or ``claimed``), ``variant`` (the
    grammar rule), ``versions`` (the version text of its ``// @format`` comment), ``since`` and
    ``until`` (first and last version; ``until`` null = still printed), ``description``,
    ``anchor`` (the literal lines are routed by) and ``fields`` (the typed fields it yields).
    """
    engines = available_engines() if engine in (None, "auto") else [engine]
    for e in engines:
        if e not in ENGINES:
            raise ValueError(f"unknown engine {e!r}; choose {', '.join(ENGINES)}")
    rows: list[dict[str, Any]] = []
    for e in engines:
        g = load_grammar(e)
        for v in g.variants:
            versions, desc = split_doc(v.doc)
            since, until = version_bounds(versions)
            rows.append({
                "engine": e, "kind": v.kind, "variant": v.name, "versions": versions,
                "since": since, "until": until, "description": desc, "anchor": v.anchor,
                "fields": sorted(v.all_fields),
            })
    schema = {"engine": pl.String, "kind": pl.String, "variant": pl.String,
              "versions": pl.String, "since": pl.String, "until": pl.String,
              "description": pl.String, "anchor": pl.String, "fields": pl.List(pl.String)}
    return pl.DataFrame(rows, schema=schema)


# ---------------------------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------------------------

MAX_EXPLAIN = 4096  # lark parses at most this many characters of a line (Earley is slow)


def _readable_terminals(engine: str) -> dict[str, str]:
    lk = load_grammar(engine).lark()
    out = {}
    for t in lk.terminals:
        p = t.pattern
        if t.name.startswith("__") or t.name.startswith("_"):
            out[t.name] = repr(p.value) if p.type == "str" else f"/{p.value}/"
        else:
            out[t.name] = t.name
    return out


def diagnose(engine: str, text: str) -> dict[str, Any]:
    """lark's verdict on one stripped line: ``{"ok": True}`` or the column (1-based), the
    character found there and the tokens lark expected."""
    from lark.exceptions import UnexpectedInput

    lk = load_grammar(engine).lark()
    cut = len(text) > MAX_EXPLAIN
    try:
        lk.parse(text[:MAX_EXPLAIN])
        return {"ok": not cut, "column": None, "unexpected": None, "expected": [],
                "truncated": cut}
    except UnexpectedInput as e:
        names = _readable_terminals(engine)
        expected = getattr(e, "expected", None) or getattr(e, "allowed", None) or ()
        exp = sorted({names.get(str(x), str(x)) for x in expected})
        got = getattr(e, "char", None)
        if got is None:
            tok = getattr(e, "token", None)
            got = None if tok is None else str(tok)
        col = getattr(e, "column", None)
        return {"ok": False, "column": col if isinstance(col, int) and col > 0 else None,
                "unexpected": got, "expected": exp, "truncated": cut}


def _line_of(src: sources.Source, line_no: int) -> str:
    if line_no < 1 or line_no > src.n_lines:
        raise sources.InputError(f"{src.name}: no line {line_no} (the file has {src.n_lines})")
    # the n-th line without splitting the whole text into a list
    start = 0
    for _ in range(line_no - 1):
        start = src.text.index("\n", start) + 1
    end = src.text.find("\n", start)
    return src.text[start:] if end < 0 else src.text[start:end]


def explain(path: str, line_no: int, engine: str = "auto") -> dict[str, Any]:
    """How line ``line_no`` (1-based) of ``path`` was (or was not) parsed.

    Returns ``file``, ``line``, ``raw`` (the line as read: CRLF/NUL removed, capped like ingest),
    ``wrapper`` (the quoting logger's part, ``outer``, when a logger quoted the line), ``text``
    (what the engine grammars see), ``class`` (event / ignored / other / unrecognized / none:
    see ``why``), ``why`` (one sentence), ``prefix`` and ``envelope`` (what preceded the
    server's message, and what the envelope decoder read in it), ``engine``, ``kind``, ``variant``,
    ``format`` (the variant's ``@format`` text), ``fields`` (typed values) and, when the line
    is not an event or ignored line, ``diagnostics``: lark's verdict per engine tried (the
    engine it looks like first). A line holding glued vLLM records (which ingest splits) also
    has ``records``: the same verdict per record, the top-level one being the first record's.
    Raises ``sources.InputError`` like ``logscope.read``.
    """
    if engine != "auto" and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose auto, {', '.join(ENGINES)}")
    engines = available_engines() if engine == "auto" else [engine]
    src = sources.load(path)
    raw = _line_of(src, line_no)
    wrap, text = strip_line(raw)
    records = _split(text)
    out: dict[str, Any] = {
        "file": src.name, "line": line_no, "raw": raw,
        "wrapper": {k: v for k, v in wrap.items() if v is not None}, "text": text,
        **_explain_text(records[0], engines, wrap.get("outer")),
    }
    if len(records) > 1:  # glued vLLM records: ingest takes each as its own record
        out["records"] = [{"text": r, **_explain_text(r, engines, wrap.get("outer"))}
                          for r in records]
    return out


def _split(text: str) -> list[str]:
    from logscope.input import frontend

    split = getattr(frontend, "split_records", None)
    return split(text) if split is not None else [text]


WHY = {
    "event": "the server's message matched the format {variant}",
    "ignored": "a known {engine} line that carries no benchmark figure ({variant})",
    "other": "it has {engine}'s shape ({variant}) but no known format, and carries no benchmark "
             "figure: counted, no alarm",
    "unrecognized": "it carries a benchmark figure's anchor ({variant}) but matches no known "
                    "{engine} format: a new server version? (an alarm)",
    "none": "no engine's message was found in it (counted with the ignored lines)",
}


def _explain_text(text: str, engines: list[str], outer: str | None = None) -> dict[str, Any]:
    """class, why, engine, kind, variant, format, prefix, envelope, fields and diagnostics of
    one stripped record."""
    from logscope.input.envelope import decode_prefix

    out: dict[str, Any] = {"class": "none", "engine": None, "kind": None, "variant": None,
                           "format": None, "prefix": None, "envelope": {}, "fields": {},
                           "diagnostics": {}}
    hit = classify_line(text, engines, outer)
    if hit is not None:
        eng, kind, variant, fields = hit
        doc = next((v.doc for v in load_grammar(eng).variants if v.name == variant), "")
        cls = kind if kind in (UNRECOGNIZED, IGNORED, OTHER) else EVENT
        prefix = fields.get("prefix")
        out.update({"class": cls, "engine": eng, "kind": kind, "variant": variant,
                    "format": doc, "fields": fields if cls == EVENT else {}, "prefix": prefix,
                    "envelope": {k: v for k, v in decode_prefix(prefix or "").items()
                                 if v is not None}})
        if cls == UNRECOGNIZED:  # lark reads the message, from where the patterns found it
            out["diagnostics"] = {eng: diagnose(eng, text[len(prefix or ""):])}
    else:
        out["diagnostics"] = {e: diagnose(e, text) for e in engines}
    out["why"] = WHY[out["class"]].format(engine=out["engine"], variant=out["variant"])
    return out


def parse_location(loc: str) -> tuple[str, int]:
    """``"server.log:123"`` -> (``"server.log"``, 123); ValueError when there is no line number."""
    path, sep, num = loc.rpartition(":")
    if not sep or not path or not num.strip().isdigit():
        raise ValueError(f"{loc!r}: expected LOG:LINE, e.g. server.log:120")
    return path, int(num)


__all__ = ["formats", "explain", "diagnose", "parse_location", "split_doc", "version_bounds"]
