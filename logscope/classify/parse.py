"""Classify lines with the compiled grammars: every line becomes an event, a known ignored line,
or an unrecognized one (it carries an engine's anchor but matches no known format).

``classify`` is the vectorised path (Polars, Rust regex) used for files; ``classify_line`` is
the per-line twin (Python ``re``) used by ``follow`` and ``explain``. Both run the same
compiled patterns in the same order.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from logscope.classify.grammar import (
    FLOAT_LIST,
    MEMBER_MARK,
    CompiledGrammar,
    Repetition,
    Variant,
    convert,
    extract_fields,
    load_grammar,
)
from logscope.input.frontend import py_compiled, strip_line

DTYPES: dict[str, pl.DataType] = {
    "int": pl.Int64(),
    "float": pl.Float64(),
    "float_list": pl.List(pl.Float64()),
    "bool": pl.Boolean(),
    "str": pl.String(),
}

# classification of a line
# an ``other`` line has an engine's shape (a component header) but no rule and no figure: counted,
# never an alarm; an ``unrecognized`` one carries a benchmark figure's anchor and matches no format
EVENT, IGNORED, UNRECOGNIZED, OTHER = "event", "ignored", "unrecognized", "other"


def cast(expr: pl.Expr, dtype: str) -> pl.Expr:
    """Cast a captured string column to the field's dtype (the vectorised twin of convert)."""
    if dtype == "int":
        return expr.cast(pl.Int64, strict=False)
    if dtype == "float":
        return expr.cast(pl.Float64, strict=False)
    if dtype == FLOAT_LIST:
        return (expr.str.strip_chars().str.split(",").list.eval(
            pl.element().str.strip_chars().cast(pl.Float64, strict=False)).list.drop_nulls())
    if dtype == "bool":
        return expr.is_in(["1", "true", "True"])
    return expr


@dataclass
class Classified:
    """The result of classifying a batch of lines for one engine.

    ``rows`` is narrow: one row per line the grammar took (event, ignored or unrecognized) with
    ``_row``, ``file``, ``line``, the wrapper and envelope fields, ``kind``, ``variant`` and the
    engine's row fields (``slot``, ``task``, ...: what its model needs across kinds). Each event
    kind's own fields live in ``fields[kind]``, keyed by ``_row``, so no frame is as wide as the
    union of every kind's fields.
    """

    engine: str
    rows: pl.DataFrame
    fields: dict[str, pl.DataFrame]  # event kind -> ``_row`` + that kind's body fields
    unrecognized: pl.DataFrame  # ``_row``, ``text`` of the lines claimed but not matched
    rest: pl.DataFrame  # the lines this engine did not take (the input's columns)


MATCHED = "__matched"  # an empty group that opens every extracting regex: not null = matched


def _matching_regex(v: Variant) -> str:
    """``v.regex`` with an empty ``MATCHED`` group first, so one ``extract_groups`` pass both
    selects the matching rows and captures their fields."""
    return f"^(?P<{MATCHED}>){v.regex[1:]}" if v.regex.startswith("^") else \
        f"(?P<{MATCHED}>){v.regex}"


def _needs_groups(v: Variant) -> bool:
    return bool(v.fields or v.aliases or v.reps)


def _extract(sub: pl.DataFrame, v: Variant) -> pl.DataFrame:
    """Typed fields of the rows of ``sub`` (``_row`` and the regex groups of ``v``)."""
    by_field: dict[str, list[str]] = {}
    cols: list[pl.Expr] = []
    for g in sub.columns:
        if g in v.fields or g in v.aliases:
            by_field.setdefault(v.aliases.get(g, g), []).append(g)
    for name, gs in by_field.items():
        dtype = v.fields[name]
        exprs = [cast(pl.col(g), dtype) for g in gs]
        cols.append((pl.coalesce(exprs) if len(exprs) > 1 else exprs[0]).alias(name))
    keep = [c for c in sub.columns if c.startswith("__rep")]
    out = sub.select(pl.col("_row"), *cols, *keep)
    for rep in v.reps:
        out = _expand_rep(out, rep)
    return out


_REP_SCHEMAS: dict[tuple, pl.Schema] = {}  # (repetition, members that took items) -> schema


def _expand_rep(out: pl.DataFrame, rep: Repetition) -> pl.DataFrame:
    """Key/value family: split the repeated span into items; each item belongs to the first
    member (in grammar order) that matches it whole, as on the per-line path; per field, the
    first non-null value of a row (members in grammar order, then items in line order) wins.

    One ``extract_groups`` pass of the members' alternation (``Repetition.routing_regex``)
    routes and captures every item. Which member takes an item and what it extracts depend on
    the item's text alone, so when texts repeat (the same keys and values line after line) the
    distinct texts are routed and the result joined back to the items."""
    items = (
        out.select(pl.col(rep.group).str.extract_all(rep.item_regex).alias("_it"))
        .with_row_index("_o")
        .explode("_it")
        .drop_nulls("_it")
    )
    out = out.drop(rep.group)
    uniq = items.select(pl.col("_it").unique())
    by_text = uniq.height * 2 <= items.height
    key = "_it" if by_text else "_o"
    m = (uniq if by_text else items).select(
        key, pl.col("_it").str.extract_groups(rep.routing_regex).alias("_m")).unnest("_m")
    marks = [f"{MEMBER_MARK}{i}" for i in range(len(rep.members))]
    took = [i for i, hit in enumerate(m.select(pl.col(c).is_not_null().any() for c in marks).row(0))
            if hit]
    if not took:
        return out

    def fields_of(i: int) -> list[tuple[str, pl.Expr]]:  # member i's typed fields
        return [(f, cast(pl.col(f"{marks[i]}__{f}"), d)) for f, d in rep.members[i].fields.items()]

    sk = (rep.routing_regex, tuple(tuple(mem.fields.items()) for mem in rep.members),
          tuple(took))
    if sk not in _REP_SCHEMAS:  # what the members that took items give, in grammar order
        _REP_SCHEMAS[sk] = pl.concat([m.clear().select(e.alias(f) for f, e in fields_of(i))
                                      for i in took], how="diagonal_relaxed").schema
    schema = _REP_SCHEMAS[sk]
    # a field several members give is kept per member until the first non-null is taken, so
    # that the member first in grammar order wins, whatever the order of the items
    givers: dict[str, list[int]] = {}
    for i in took:
        for f in rep.members[i].fields:
            givers.setdefault(f, []).append(i)
    split = {f for f, g in givers.items() if len(g) > 1}
    table = m.select(key, *[e.cast(schema[f]).alias(f"{f}\x00{i}") if f in split else e.alias(f)
                            for i in took for f, e in fields_of(i)])
    if by_text:
        table = items.join(table, on="_it", how="inner", maintain_order="left").drop("_it")
    fields = table.group_by("_o").agg(pl.all().drop_nulls().first())
    if split:
        fields = fields.with_columns(pl.coalesce(f"{f}\x00{i}" for i in givers[f]).alias(f)
                                     for f in split)
    fields = fields.select("_o", *schema.names())
    clash = [f for f in schema.names() if f in out.columns]
    fields = fields.rename({f: f"{f}__m" for f in clash})
    out = (out.with_row_index("_o").join(fields, on="_o", how="left", maintain_order="left")
           .drop("_o"))
    if clash:
        out = out.with_columns([pl.coalesce(f, f"{f}__m").alias(f) for f in clash]).drop(
            [f"{f}__m" for f in clash])
    return out


ENV_GROUP = "__e_"  # the envelope's groups inside a variant's message regex
BODY_GROUP = "(?P<_body>.*)$"
WORD_CHAR = r"[A-Za-z0-9_]$"  # a message does not start inside a word (its prefix's last char)


def _message_regex(g: CompiledGrammar, v: Variant) -> str:
    """Variant ``v``'s anchored regex over a located message: ``MATCHED``, the envelope's groups
    (renamed ``__e_<group>``, so none clashes with a body field), then the body's."""
    env = _envelope_regexes(g)[0][1:]
    body = v.regex[1:] if v.regex.startswith("^") else v.regex
    return f"^(?P<{MATCHED}>){env}{body}"


def _envelope_regexes(g: CompiledGrammar) -> tuple[str, str]:
    """(the envelope alone, anchored, its groups renamed ``__e_<group>`` so that none clashes
    with a body field; the envelope without groups): what :func:`_captures` reads a message's
    envelope with, once per line, and what :func:`_message_regex` starts with."""
    rx = g.envelope_regex
    if not (rx.startswith("^") and rx.endswith(BODY_GROUP)):
        raise ValueError(f"{g.engine}: envelope regex does not end in {BODY_GROUP}")
    env = re.sub(r"\(\?P<", f"(?P<{ENV_GROUP}", rx[1:-len(BODY_GROUP)])
    return f"^{env}", f"^(?:{g.envelope_search})"


DEDUP_MIN = 256  # a variant's lines are captured per distinct body when half of them repeat


def _captures(hit: pl.DataFrame, g: CompiledGrammar, v: Variant, keep: list[str]
              ) -> pl.DataFrame:
    """The groups of :func:`_message_regex` over ``hit`` (located messages of variant ``v``,
    with the envelope's groups and ``_body`` read once per line), the rows that match.

    The envelope's leftmost-first match then the body's (``^body$``) is the message regex's
    match whenever the body matches after it; a line where it does not (an envelope that must
    match less for the body to match) is captured by the message regex itself. A body that
    many lines share (a configuration dump replayed at every start) is captured once."""
    env_cols = [c for c in hit.columns if c.startswith(ENV_GROUP)]
    bodies = hit.get_column("_body")
    body_rx = _matching_regex(v)
    uniq = bodies.unique() if hit.height >= DEDUP_MIN else None
    if uniq is not None and uniq.len() * 2 <= hit.height:
        cap = pl.DataFrame({"_body": uniq}).with_columns(
            pl.col("_body").str.extract_groups(body_rx).alias("_g")).unnest("_g")
        cap = hit.select("_body").join(cap, on="_body", how="left",
                                       maintain_order="left").drop("_body")
    else:
        cap = bodies.str.extract_groups(body_rx).struct.unnest()
    both = pl.concat([hit.select("_row", "prefix", *keep, *env_cols), cap], how="horizontal")
    ok = both.get_column(MATCHED).is_not_null()
    if ok.all():
        return both
    old = hit.filter(~ok).select(
        "_row", "prefix", *keep,
        pl.col("text").str.extract_groups(_message_regex(g, v)).alias("_g")
    ).unnest("_g").filter(pl.col(MATCHED).is_not_null())
    return pl.concat([both.filter(ok), old], how="diagonal_relaxed")


def _env_field(g: CompiledGrammar, group: str) -> str:
    name = group[len(ENV_GROUP):]
    dup = _DUP_GROUP.match(name)
    return dup.group("field") if dup and name not in g.envelope_fields else name


MAX_RETRIES = 8  # later starts tried when a match begins inside a word
_WORD_HEX = [f"{ord(c):02x}" for c in
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"]
# ``str.find`` gives a byte offset up to Polars 2.1 and a character offset from 2.2 on
_FIND_COUNTS_CHARS = pl.Series(["\u00e9x"]).str.find("x").item() == 1


def _find_bytes(text: pl.Series, pattern: str) -> pl.Series:
    """The byte offset of ``pattern``'s first match in each of ``text``, null where none."""
    pos = text.str.find(pattern)
    if not _FIND_COUNTS_CHARS or pos.null_count() == pos.len():
        return pos
    at = (pos > 0).fill_null(False).arg_true()  # only a message after a prefix needs the bytes
    if not at.len():
        return pos
    prefix = text.gather(at).str.slice(0, pos.gather(at)).str.len_bytes()
    return pos.scatter(at, prefix.cast(pos.dtype))


def _locate(cand: pl.DataFrame, located: str) -> pl.DataFrame | None:
    """The rows of ``cand`` in which ``located`` matches, with ``_pos``: the byte offset where
    the message starts. A match that starts inside a word (``2024-02-21T...`` read from its
    ``-02-21``) is searched again after that point, a few times."""
    text = cand.get_column("text")
    pos = _find_bytes(text, located)
    if pos.null_count() == pos.len():
        return None
    found = cand.with_columns(pos.alias("_pos")).filter(pl.col("_pos").is_not_null())
    if not found.get_column("_pos").max():  # every message starts its line: none inside a word
        return found
    # the byte before the match, as hex (it may be a UTF-8 continuation byte: no word character)
    before = pl.col("text").cast(pl.Binary).bin.slice(pl.col("_pos") - 1, 1).bin.encode("hex")
    inside = (pl.col("_pos") > 0) & before.is_in(_WORD_HEX)
    done: list[pl.DataFrame] = []
    for _ in range(MAX_RETRIES):
        bad = found.select(inside).to_series()
        if not bad.any():
            break
        done.append(found.filter(~bad))
        redo = found.filter(bad)
        rest = _find_bytes(redo.select(pl.col("text").cast(pl.Binary).bin.slice(pl.col("_pos") + 1)
                                       .cast(pl.String)).to_series(), located)
        found = redo.with_columns((pl.col("_pos") + 1 + rest).alias("_pos")).filter(
            pl.col("_pos").is_not_null())
    else:
        found = found.filter(~found.select(inside).to_series())
    done.append(found)
    out = pl.concat(done) if len(done) > 1 else done[0]
    return out.sort("_i") if len(done) > 1 else out


def is_weak(v: Variant) -> bool:
    """A variant whose text is too plain to be taken for the engine's on its own after a prefix
    (an ignored or ``other`` line): it needs the engine's own header, or a prefix that shows a
    wrapper (``envelope.EVIDENCE``)."""
    return v.kind in (IGNORED, OTHER)


# ingest passes over every engine three times: events, then known ignored lines, then the
# catch-alls (drift claims, ``other``); within a pass the leftmost message wins
PHASES = ("event", IGNORED, "rest")


def phase_of(v: Variant) -> str:
    """The pass a variant runs in (see :data:`PHASES`)."""
    if v.kind in ("claimed", OTHER):
        return "rest"
    return IGNORED if v.kind == IGNORED else "event"


def _env_nonempty(g: CompiledGrammar) -> str:
    """A regex that matches a message that starts with the engine's own envelope (non-empty)."""
    return f"^(?:{g.envelope_search})"


SHORT_ANCHOR = 3  # an anchor this short (``: ``, ``] ``) is in most lines: searched on demand


class AnchorIndex:
    """Which lines of a batch hold which variant anchors: one Aho-Corasick pass over the text
    for every anchor of every engine (instead of one substring scan per anchor and engine).
    Positions are ``_row - base``; a variant whose anchor no line holds is skipped unread.

    An anchor of at most ``SHORT_ANCHOR`` bytes is left out of that pass and searched
    alone (a literal scan) when a variant asks for it: it occurs several times in most lines,
    and every occurrence would be a string in the pass's output (two thirds of it on SGLang)."""

    def __init__(self, text: pl.Series, anchors: list[str], base: int) -> None:
        self.base, self.n = base, text.len()
        self._text = text
        self._masks: dict[str, pl.Series | None] = {}
        self.rows: dict[str, pl.Series] = {}
        self._short = {a for a in anchors if len(a.encode()) <= SHORT_ANCHOR}
        long = [a for a in anchors if a not in self._short]
        if not long or not self.n:
            return
        hits = (pl.DataFrame({"a": text.str.extract_many(long, overlapping=True)})
                .with_row_index("_p").explode("a").drop_nulls("a"))
        for (a,), df in hits.partition_by("a", as_dict=True).items():
            self.rows[a] = df.get_column("_p")  # a line holding an anchor twice: set twice

    def mask(self, anchor: str, pos: pl.Series) -> pl.Series | None:
        """Whether each line at ``pos`` holds ``anchor``; None when no line of the batch does."""
        if anchor not in self._masks:
            if anchor in self._short and self.n:
                m = self._text.str.contains(anchor, literal=True).fill_null(False)
                self._masks[anchor] = m if m.any() else None
            elif anchor in self.rows:
                self._masks[anchor] = pl.repeat(False, self.n, dtype=pl.Boolean, eager=True
                                                ).scatter(self.rows[anchor], True)
            else:
                self._masks[anchor] = None
        m = self._masks[anchor]
        if m is None:
            return None
        return m.clone() if pos.len() == self.n else m.gather(pos)  # callers may scatter


@functools.cache
def anchors_of(engines: tuple[str, ...]) -> list[str]:
    """Every variant anchor of ``engines``' grammars (what :class:`AnchorIndex` looks for)."""
    return sorted({a for e in engines for v in load_grammar(e).variants for a in v.routing})


def classify(lines: pl.DataFrame, g: CompiledGrammar,
             row_fields: tuple[str, ...] = ("slot", "task"), phase: str | None = None,
             anchors: AnchorIndex | None = None) -> Classified:
    """Run one engine grammar over ``lines`` (columns ``_row``, ``text``, optionally ``outer``).

    A line's message is the leftmost match, to the end of the line and not inside a word, of
    any variant (on a tie, the first in grammar order); the text before it is the line's
    ``prefix``, decoded by :mod:`logscope.input.envelope`. So
    ``print_timings: prompt eval time = ...``
    is era B's line, not a bare continuation line behind a prefix ``print_timings: ``. A plain
    variant (ignored, other) counts after a prefix only with the engine's own envelope or a
    wrapper's marks in the prefix. ``phase`` (one of :data:`PHASES`; None: all) runs that pass's
    variants only: ingest runs every engine's event formats, then every engine's ignored ones,
    then the catch-alls, so that an event is never lost to a known line found further left
    (an era-C-looking ``INFO  [...] `` in a wrapper) nor to another engine's drift rule.
    ``anchors`` (built over the batch ``lines`` come from) saves the anchor scans."""
    from logscope.input.envelope import EVIDENCE, decode_expr_columns

    has_outer = "outer" in lines.columns and lines.get_column("outer").null_count() < lines.height
    outer_col = ["outer"] if has_outer else []
    variants = g.variants if phase is None else [v for v in g.variants if phase_of(v) == phase]
    # 1. where each line's message starts, and whose it is. Candidates are routed by literal
    # anchor (one pass per distinct anchor); a variant's located regex runs on its candidates
    # only. A line whose message starts at its first character cannot be beaten: it is settled,
    # and settled lines leave the working frame once they are the majority.
    small = lines.select("_row", "text", *outer_col).with_row_index("_i")
    n = small.height
    best_pos = pl.repeat(None, n, dtype=pl.UInt32, eager=True)
    best_v = pl.repeat(None, n, dtype=pl.Int32, eager=True)
    settled = pl.repeat(False, n, dtype=pl.Boolean, eager=True)
    n_settled = 0
    done: list[pl.DataFrame] = []
    anchor_masks: dict[str, pl.Series | None] = {}
    env_rx = _env_nonempty(g)
    if anchors is None:
        anchors = AnchorIndex(lines.get_column("text"),
                              sorted({a for v in variants for a in v.routing}), 0)
        where = pl.select(pl.int_range(lines.height, dtype=pl.UInt32)).to_series()
    else:
        where = (lines.get_column("_row") - anchors.base).cast(pl.UInt32)
    for vi, v in enumerate(variants):
        if n_settled * 2 > small.height:
            keep = ~settled
            done.append(small.filter(settled).select(
                "_row", "text", *outer_col, best_v.filter(settled).alias("_v"),
                best_pos.filter(settled).alias("_pos")))
            small = small.filter(keep).drop("_i").with_row_index("_i")
            where = where.filter(keep)
            anchor_masks = {a: None if m is None else m.filter(keep)
                            for a, m in anchor_masks.items()}
            best_pos, best_v = best_pos.filter(keep), best_v.filter(keep)
            settled = pl.repeat(False, small.height, dtype=pl.Boolean, eager=True)
            n_settled = 0
        if small.height == 0:
            break
        routes = v.routing
        if len(routes) == 1:
            if routes[0] not in anchor_masks:
                anchor_masks[routes[0]] = anchors.mask(routes[0], where)
            m = anchor_masks[routes[0]]
            if m is None:
                continue
            mask = m & ~settled
        elif routes:  # one of several literals (an alternation's)
            ms = [anchors.mask(a, where) for a in routes]
            ms = [m for m in ms if m is not None]
            if not ms:
                continue
            mask = functools.reduce(lambda a, b: a | b, ms) & ~settled
        else:
            mask = ~settled
        if not mask.any():
            continue
        hit = _locate(small.filter(mask), g.located(v))
        if hit is None:
            continue
        need_env = v.kind == OTHER and not v.anchor  # ``other_line: _ANY``: the envelope is all
        if need_env or is_weak(v):
            at = pl.col("text").cast(pl.Binary).bin.slice(pl.col("_pos")).cast(pl.String)
            env_len = at.str.extract(env_rx, 0).str.len_bytes().fill_null(0)
            ok = env_len > 0
            if not need_env:  # a plain line: at the start, or after a wrapper's marks
                before = pl.col("text").cast(pl.Binary).bin.head(pl.col("_pos")).cast(pl.String)
                ok = ok | (pl.col("_pos") == 0) | before.str.contains(EVIDENCE)
                if has_outer:
                    ok = ok | pl.col("outer").is_not_null()
            hit = hit.filter(ok)
            if hit.height == 0:
                continue
        idx = hit.get_column("_i")
        pos = hit.get_column("_pos").cast(pl.UInt32)
        cur = best_pos.gather(idx)
        better = cur.is_null() | (pos < cur)
        if not better.any():
            continue
        idx, pos = idx.filter(better), pos.filter(better)
        best_pos = best_pos.scatter(idx, pos)
        best_v = best_v.scatter(idx, vi)
        first = idx.filter(pos == 0)
        if first.len():
            settled = settled.scatter(first, True)
            n_settled = settled.sum()
    left = best_v.is_not_null()
    done.append(small.filter(left).select(
        "_row", "text", *outer_col, best_v.filter(left).alias("_v"),
        best_pos.filter(left).alias("_pos")))
    found = pl.concat(done) if len(done) > 1 else done[0]
    # 2. each variant extracts its lines' fields from the message (the text from its start)
    env_fields = g.envelope_fields
    on_row = set(env_fields) | set(row_fields)
    row_parts: list[pl.DataFrame] = []
    kind_parts: dict[str, list[pl.DataFrame]] = {}
    claimed: list[pl.Series] = []
    if found.height:
        found = _split_prefix(found)
        env_rx, env_find = _envelope_regexes(g)
        found = found.with_columns(pl.col("text").str.replace(env_find, "").alias("_body"))
        if ENV_GROUP in env_rx:
            found = found.with_columns(
                pl.col("text").str.extract_groups(env_rx).alias("_e")).unnest("_e")
        groups = found.partition_by("_v", as_dict=True, maintain_order=True)
    else:
        groups = {}
    for (vi,), hit in sorted(groups.items()):
        v = variants[vi]
        got = _captures(hit, g, v, outer_col)
        if got.height == 0:
            continue
        env_groups = [c for c in got.columns if c.startswith(ENV_GROUP)]
        env: dict[str, list[str]] = {}
        for c in env_groups:
            env.setdefault(_env_field(g, c), []).append(c)
        env_cols = [(pl.coalesce([cast(pl.col(c), env_fields[f]) for c in cs]) if len(cs) > 1
                     else cast(pl.col(cs[0]), env_fields[f])).alias(f) for f, cs in env.items()]
        base = got.select("_row", "prefix", *outer_col, *env_cols)
        kind = UNRECOGNIZED if v.kind == "claimed" else v.kind
        if kind == UNRECOGNIZED:
            claimed.append(got.get_column("_row"))
        fieldless = kind in (UNRECOGNIZED, OTHER) or (
            kind == IGNORED and not on_row & set(v.all_fields))
        tag = [pl.lit(kind).alias("kind"), pl.lit(v.name).alias("variant")]
        if fieldless or not _needs_groups(v):
            row_parts.append(base.with_columns(*tag))
            continue
        fields = _extract(got.drop(env_groups, "prefix", *outer_col), v)
        # a field both in the envelope and in the body (era C's timestamp=, slot ids): body wins
        own_row = [c for c in fields.columns if c in on_row]
        clash = [c for c in own_row if c in base.columns]
        part = base.drop(clash).with_columns(
            *tag, *[pl.coalesce(fields.get_column(c), base.get_column(c)).alias(c) if c in clash
                    else fields.get_column(c) for c in own_row])
        row_parts.append(part)
        own = [c for c in fields.columns if c != "_row" and c not in on_row]
        if own and kind != IGNORED:  # an ignored line's other fields are no event's
            kind_parts.setdefault(kind, []).append(fields.select("_row", *own))
    fields_by_kind = {k: pl.concat(ps, how="diagonal_relaxed") if len(ps) > 1 else ps[0]
                      for k, ps in kind_parts.items()}
    if row_parts:
        rows = pl.concat(row_parts, how="diagonal_relaxed")
        rows = _decode_prefix(rows, env_fields, decode_expr_columns)
        rows = lines.drop("text", "raw", "outer", strict=False).join(
            rows, on="_row", how="inner", maintain_order="left")
        taken_rows = rows.get_column("_row")
    else:
        rows = pl.DataFrame()
        taken_rows = pl.Series("_row", [], dtype=pl.UInt32)
    unrec = (pl.DataFrame({"_row": pl.concat(claimed)}).join(
        lines.select("_row", "text"), on="_row") if claimed
        else pl.DataFrame(schema={"_row": pl.UInt32, "text": pl.String}))
    rest = (lines if taken_rows.len() == 0
            else lines.filter(~pl.col("_row").is_in(taken_rows.implode())))
    return Classified(g.engine, rows, fields_by_kind, unrec, rest)


def _split_prefix(found: pl.DataFrame) -> pl.DataFrame:
    """``prefix`` (the text before the message, null when it starts the line) and ``text`` cut
    to the message, for the located rows of ``found``; only the rows with a prefix are sliced."""
    pos = found.get_column("_pos")
    at = (pos > 0).arg_true()
    prefix = pl.repeat(None, found.height, dtype=pl.String, eager=True).alias("prefix")
    if not at.len():
        return found.with_columns(prefix)
    sub = found.select("text", "_pos").gather(at)
    raw = pl.col("text").cast(pl.Binary)
    cut = sub.select(raw.bin.head(pl.col("_pos")).cast(pl.String).alias("prefix"),
                     raw.bin.slice(pl.col("_pos")).cast(pl.String).alias("text"))
    return found.with_columns(prefix.scatter(at, cut.get_column("prefix")),
                              found.get_column("text").scatter(at, cut.get_column("text")))


def _decode_prefix(rows: pl.DataFrame, env_fields: dict[str, str], decode) -> pl.DataFrame:  # noqa: ANN001
    """The prefix (and a quoting logger's part) decoded: ``wrap_ts`` added, and the envelope
    fields the engine's own header left empty (level, ranks, pid, ...) filled from it."""
    cols = [c for c in ("outer", "prefix") if c in rows.columns]
    if not cols or rows.select(pl.all_horizontal(pl.col(c).is_null() for c in cols).all()).item():
        return rows.drop(cols).with_columns(pl.lit(None, pl.String).alias("prefix"))
    pre = pl.concat_str([pl.col(c).fill_null("") for c in cols])
    has = pl.any_horizontal(pl.col(c).is_not_null() for c in cols)
    rows = rows.with_columns(pl.when(has).then(pre).alias("prefix")).drop(
        [c for c in cols if c != "prefix"])
    at = rows.get_column("prefix").is_not_null().arg_true()
    dec = rows.select("prefix").gather(at).select(decode(pl.col("prefix")))
    out: list[pl.Series] = []
    for name in dec.columns:
        col = dec.get_column(name)
        if col.null_count() == col.len():
            continue
        if name in ("wrap_ts", "host"):  # host: whose server a wrapper's line is (runs)
            out.append(pl.repeat(None, rows.height, dtype=col.dtype, eager=True)
                       .scatter(at, col).alias(name))
        elif name in env_fields or name == "level":
            if name not in rows.columns:
                out.append(pl.repeat(None, rows.height, dtype=col.dtype, eager=True)
                           .scatter(at, col).alias(name))
                continue
            cur = rows.get_column(name)
            fill = cur.gather(at)
            fill = pl.select(pl.coalesce(pl.lit(fill), pl.lit(col.cast(cur.dtype)))).to_series()
            out.append(cur.scatter(at, fill).alias(name))
    return rows.with_columns(out) if out else rows


_DUP_GROUP = re.compile(r"^(?P<field>.+)__\d+$")
_rx = py_compiled


def split_envelope(g: CompiledGrammar, text: str) -> tuple[dict[str, Any], str]:
    """(envelope fields, body) of one line. A field that occurs in several envelope alternatives
    has one regex group per occurrence (``dp_rank``, ``dp_rank__2``): the first non-null wins."""
    m = _rx(g.envelope_regex).match(text)
    if m is None:
        return {}, text
    env: dict[str, Any] = {}
    for group, val in m.groupdict().items():
        if group == "_body":
            continue
        dup = _DUP_GROUP.match(group)
        name = dup.group("field") if dup and group not in g.envelope_fields else group
        if env.get(name) is None:
            env[name] = convert(val, g.envelope_fields[name])
    return env, m.group("_body")


def locate(g: CompiledGrammar, v: Variant, text: str) -> tuple[str, str] | None:
    """(prefix, message) of variant ``v`` in one line, as :func:`classify` finds it, or None."""
    if v.routing and not any(a in text for a in v.routing):
        return None
    rx, start = _rx(g.located(v)), 0
    for _ in range(MAX_RETRIES + 1):
        m = rx.search(text, start)
        if m is None:
            return None
        prefix, msg = text[:m.start()], text[m.start():]
        if not prefix or not _rx(WORD_CHAR).search(prefix):
            return prefix, msg
        start = m.start() + 1
    return None


def header_prefix(g: CompiledGrammar, text: str) -> str:
    """The text before the engine's own header in a line that a catch-all took (a drift claim
    matches the whole line): where its ``other`` rules would find the message, else ''. lark's
    diagnostic of an unrecognized line reads the line from there."""
    best: str | None = None
    for v in g.variants:
        if v.kind != OTHER:
            continue
        found = locate(g, v, text)
        if found is None or (best is not None and len(found[0]) >= len(best)):
            continue
        if not v.anchor:
            env_m = _rx(_env_nonempty(g)).match(found[1])
            if env_m is None or env_m.end() == 0:
                continue
        best = found[0]
    return best or ""


def classify_line(text: str, engines: list[str], outer: str | None = None
                  ) -> tuple[str, str, str, dict[str, Any]] | None:
    """Per-line twin of ``classify`` over already stripped text: (engine, kind, variant, fields).
    The passes of :data:`PHASES` run in turn over every engine, and within an engine's pass the
    leftmost message wins (the first variant in grammar order on a tie), as in ingest.
    ``fields`` holds the envelope's fields, the prefix's decoded ones where the envelope has
    none (``prefix``, ``wrap_ts``, ...) and the body's."""
    from logscope.input.envelope import decode_prefix, has_evidence

    for phase in PHASES:
        for engine in engines:
            g = load_grammar(engine)
            best: tuple[int, Variant, str, str] | None = None
            for v in g.variants:
                if phase_of(v) != phase:
                    continue
                found = locate(g, v, text)
                if found is None or (best is not None and len(found[0]) >= best[0]):
                    continue
                prefix, msg = found
                need_env = v.kind == OTHER and not v.anchor
                if need_env or is_weak(v):
                    env_m = _rx(_env_nonempty(g)).match(msg)
                    ok = env_m is not None and env_m.end() > 0
                    if not need_env:
                        ok = ok or not prefix or outer is not None or has_evidence(prefix)
                    if not ok:
                        continue
                best = (len(prefix), v, prefix, msg)
                if not prefix:
                    break
            if best is None:
                continue
            _, v, prefix, msg = best
            if v.kind == "claimed" and not prefix:  # a claim spans the line: find the header
                prefix = header_prefix(g, text)
                msg = text[len(prefix):]
            env, body = split_envelope(g, msg)
            m = _rx(v.regex).match(body)
            if m is None:
                continue
            kind = UNRECOGNIZED if v.kind == "claimed" else v.kind
            whole = (outer or "") + prefix
            if whole:
                dec = decode_prefix(whole)
                for k in [*g.envelope_fields, "level"]:
                    if env.get(k) is None and dec.get(k) is not None:
                        env[k] = dec[k]
                env["prefix"] = whole
                if dec["wrap_ts"] is not None:
                    env["wrap_ts"] = dec["wrap_ts"]
            fields = {**env, **extract_fields(g, v, m)}
            return engine, kind, v.name, {k: _fit(x) for k, x in fields.items()}
    return None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _fit(value: Any) -> Any:
    """An integer outside Int64 is null, as the vectorised cast (``strict=False``) makes it."""
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return value


def parse_raw_line(raw: str, engines: list[str]) -> tuple[dict[str, Any], str,
                                                            tuple[str, str, str, dict] | None]:
    """Front end + classification of one raw line: (front-end fields, text, match)."""
    wrap, text = strip_line(raw)
    return wrap, text, classify_line(text, engines, wrap.get("outer"))


__all__ = ["classify", "classify_line", "parse_raw_line", "cast", "convert", "DTYPES"]
