"""Classify lines with the compiled grammars: every line becomes an event, a known ignored line,
or an unrecognized one (it carries an engine's anchor but matches no known format).

``classify`` is the vectorised path (Polars, Rust regex) used for files; ``classify_line`` is
the per-line twin (Python ``re``) used by ``follow`` and ``explain``. Both run the same
compiled patterns in the same order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from .frontend import py_regex, strip_line
from .grammar import FLOAT_LIST, CompiledGrammar, Variant, convert, extract_fields, load_grammar

DTYPES: dict[str, pl.DataType] = {
    "int": pl.Int64(),
    "float": pl.Float64(),
    "float_list": pl.List(pl.Float64()),
    "bool": pl.Boolean(),
    "str": pl.String(),
}

# classification of a line
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


def _route(work: pl.DataFrame, rep: Any, keys: list[str]) -> list[tuple[int, pl.DataFrame]]:
    """The items of ``work`` (``keys`` + ``_it``) by member: (member index, ``keys`` + its typed
    fields) for each member that takes some. An item belongs to the first member, in grammar
    order, that matches it whole; taken items leave ``work``, so later members scan what is
    left (a literal anchor test, then one ``extract_groups`` pass that selects and captures)."""
    got: list[tuple[int, pl.DataFrame]] = []
    for i, mem in enumerate(rep.members):
        if work.height == 0:
            break
        mask: pl.Series | None = None
        n_cand = work.height
        if mem.anchor:
            mask = work.get_column("_it").str.contains(mem.anchor, literal=True)
            n_cand = mask.sum()
            if n_cand == 0:
                continue
        cand = work if n_cand == work.height else work.filter(mask)
        m = cand.select(*keys, pl.col("_it").str.extract_groups(_matching_regex(mem)).alias("_m"))
        hit = m.get_column("_m").struct.field(MATCHED).is_not_null()
        n_hit = hit.sum()
        if n_hit == 0:
            continue
        if n_hit < n_cand:  # the candidates it does not match stay for the next members
            m = m.filter(hit)
            if mask is None:
                mask = pl.repeat(True, work.height, dtype=pl.Boolean, eager=True)
            mask = mask.scatter(mask.arg_true().filter(~hit), False)
        work = work.clear() if n_hit == work.height else work.filter(~mask)
        got.append((i, m.select(*keys, *[cast(pl.col("_m").struct.field(f), d).alias(f)
                                         for f, d in mem.fields.items()])))
    return got


def _expand_rep(out: pl.DataFrame, rep: Any) -> pl.DataFrame:
    """Key/value family: split the repeated span into items; each item belongs to the first
    member (in grammar order) that matches it whole, as on the per-line path; per field, the
    first non-null value of a row (members in grammar order, then items in line order) wins.

    Which member takes an item and what it extracts depend on the item's text alone, so when
    texts repeat (the same keys and values line after line) the distinct texts are routed and
    the result joined back to the items; otherwise the items are routed themselves."""
    items = (
        out.select(pl.col(rep.group).str.extract_all(rep.item_regex).alias("_it"))
        .with_row_index("_o")
        .explode("_it")
        .drop_nulls("_it")
    )
    out = out.drop(rep.group)
    uniq = items.select(pl.col("_it").unique())
    by_text = uniq.height * 2 <= items.height
    got = _route(uniq, rep, ["_it"]) if by_text else _route(items, rep, ["_o"])
    if not got:
        return out
    # a field several members give is kept per member until the first non-null is taken, so
    # that the member first in grammar order wins, whatever the order of the items
    schema = pl.concat([p.clear() for _, p in got], how="diagonal_relaxed").schema
    names = [f for f in schema if f not in ("_it", "_o")]
    givers: dict[str, list[int]] = {}
    for i, p in got:
        for f in p.columns[1:]:
            givers.setdefault(f, []).append(i)
    split = {f for f, g in givers.items() if len(g) > 1}
    if split:
        got = [(i, p.select(p.columns[0], *[
            pl.col(f).cast(schema[f]).alias(f"{f}\x00{i}") if f in split else pl.col(f)
            for f in p.columns[1:]])) for i, p in got]
    table = pl.concat([p for _, p in got], how="diagonal_relaxed")
    if by_text:
        table = items.join(table, on="_it", how="inner", maintain_order="left").drop("_it")
    fields = table.group_by("_o").agg(pl.all().drop_nulls().first())
    if split:
        fields = fields.with_columns(pl.coalesce(f"{f}\x00{i}" for i in givers[f]).alias(f)
                                     for f in split)
    fields = fields.select("_o", *names)
    clash = [f for f in names if f in out.columns]
    fields = fields.rename({f: f"{f}__m" for f in clash})
    out = (out.with_row_index("_o").join(fields, on="_o", how="left", maintain_order="left")
           .drop("_o"))
    if clash:
        out = out.with_columns([pl.coalesce(f, f"{f}__m").alias(f) for f in clash]).drop(
            [f"{f}__m" for f in clash])
    return out


ENVELOPE = "__envelope"
BODY_GROUP = "(?P<_body>.*)$"


def _prefix_regex(g: CompiledGrammar) -> str:
    """The envelope regex without its ``_body`` group, the whole envelope captured as
    ``ENVELOPE``."""
    rx = g.envelope_regex
    if not (rx.startswith("^") and rx.endswith(BODY_GROUP)):
        raise ValueError(f"{g.engine}: envelope regex does not end in {BODY_GROUP}")
    return f"^(?P<{ENVELOPE}>{rx[1:-len(BODY_GROUP)]})"


def classify(lines: pl.DataFrame, g: CompiledGrammar,
             row_fields: tuple[str, ...] = ("slot", "task")) -> Classified:
    """Run one engine grammar over ``lines`` (columns ``_row``, ``text``, ...)."""
    df = lines.with_columns(pl.col("text").str.extract_groups(_prefix_regex(g)).alias("_e")
                            ).unnest("_e")
    # the body is the text after the envelope: sliced, not captured (a capture of ``.*`` to the
    # end of every line costs several times the envelope itself)
    df = df.with_columns(pl.col("text").str.slice(pl.col(ENVELOPE).str.len_chars().fill_null(0))
                         .alias("_body")).drop(ENVELOPE)
    dups = {c: m.group("field") for c in df.columns
            if (m := _DUP_GROUP.match(c)) and c not in g.envelope_fields
            and m.group("field") in g.envelope_fields}
    if dups:  # a field in several envelope alternatives: the first non-null wins
        df = df.with_columns(
            pl.coalesce([f, *[c for c, b in dups.items() if b == f]]).alias(f)
            for f in set(dups.values())).drop(list(dups))
    df = df.with_columns(
        [cast(pl.col(f), d).alias(f) for f, d in g.envelope_fields.items()]
        + [pl.col("_body").fill_null(pl.col("text"))]
    )
    # Candidates are routed by literal anchor (one pass per distinct anchor); a variant's regex
    # runs on its candidates only, and extracts as it matches. Taken rows are dropped from the
    # working frame once they are the majority, so later anchors scan fewer rows.
    small = df.select("_row", "_body").with_row_index("_i")
    taken = pl.repeat(False, small.height, dtype=pl.Boolean, eager=True)
    n_taken = 0
    anchor_masks: dict[str, pl.Series] = {}
    on_row = set(g.envelope_fields) | set(row_fields)
    row_parts: list[pl.DataFrame] = []
    kind_parts: dict[str, list[pl.DataFrame]] = {}
    claimed: list[pl.Series] = []
    for v in g.variants:
        if n_taken * 2 > small.height:
            keep = ~taken
            small = small.filter(keep).drop("_i").with_row_index("_i")
            anchor_masks = {a: m.filter(keep) for a, m in anchor_masks.items()}
            taken = pl.repeat(False, small.height, dtype=pl.Boolean, eager=True)
            n_taken = 0
        if small.height == 0:
            break
        if v.anchor:
            m = anchor_masks.get(v.anchor)
            if m is None:
                m = anchor_masks[v.anchor] = small.get_column("_body").str.contains(
                    v.anchor, literal=True)
            mask = m & ~taken
        else:
            mask = ~taken
        if not mask.any():
            continue
        cand = small.filter(mask)
        kind = UNRECOGNIZED if v.kind == "claimed" else v.kind
        fieldless = kind == UNRECOGNIZED or (kind == IGNORED and not on_row & set(v.all_fields))
        if fieldless or not _needs_groups(v):
            hit = cand.filter(pl.col("_body").str.contains(v.regex)).drop("_body")
        elif v.reps and (uniq := cand.select(pl.col("_body").unique())).height * 2 <= cand.height:
            # a key/value line (long, its regex slow to capture) repeated word for word: what it
            # extracts depends on its body alone, so each distinct body is captured once
            hit = cand.join(uniq.with_columns(pl.col("_body").str.extract_groups(
                _matching_regex(v)).alias("_g")).unnest("_g").filter(
                pl.col(MATCHED).is_not_null()), on="_body", how="inner",
                maintain_order="left").drop("_body")
        else:
            hit = cand.select("_i", "_row", pl.col("_body").str.extract_groups(
                _matching_regex(v)).alias("_g")).unnest("_g").filter(
                pl.col(MATCHED).is_not_null())
        if hit.height == 0:
            continue
        taken = taken.scatter(hit.get_column("_i"), True)
        n_taken += hit.height
        if kind == UNRECOGNIZED:
            claimed.append(hit.get_column("_row"))
        if fieldless:
            row_parts.append(hit.select("_row", pl.lit(kind).alias("kind"),
                                        pl.lit(v.name).alias("variant")))
            continue
        got = _extract(hit, v)
        row_parts.append(got.select("_row", pl.lit(kind).alias("kind"),
                                    pl.lit(v.name).alias("variant"),
                                    *[c for c in got.columns if c in on_row]))
        own = [c for c in got.columns if c != "_row" and c not in on_row]
        if own and kind != IGNORED:  # an ignored line's other fields are no event's
            kind_parts.setdefault(kind, []).append(got.select("_row", *own))
    fields = {k: pl.concat(ps, how="diagonal_relaxed") if len(ps) > 1 else ps[0]
              for k, ps in kind_parts.items()}
    if row_parts:
        got = pl.concat(row_parts, how="diagonal_relaxed")
        env_cols = df.drop("_body", "text", "raw", strict=False)
        # a field both in the envelope and in the body (era C's timestamp=, slot ids): body wins
        clash = [c for c in got.columns if c != "_row" and c in env_cols.columns]
        got = got.rename({c: f"{c}__body" for c in clash})
        rows = env_cols.join(got, on="_row", how="inner", maintain_order="left")
        if clash:
            rows = rows.with_columns(
                [pl.coalesce(f"{c}__body", c).alias(c) for c in clash]).drop(
                [f"{c}__body" for c in clash])
    else:
        rows = pl.DataFrame()
    unrec = (pl.DataFrame({"_row": pl.concat(claimed)}).join(
        lines.select("_row", "text"), on="_row") if claimed
        else pl.DataFrame(schema={"_row": pl.UInt32, "text": pl.String}))
    left = small.filter(~taken).get_column("_row") if small.height else small.get_column("_row")
    rest = (df if left.len() == df.height else df.filter(pl.col("_row").is_in(left.implode())))
    rest = rest.select(lines.columns)
    return Classified(g.engine, rows, fields, unrec, rest)


_DUP_GROUP = re.compile(r"^(?P<field>.+)__\d+$")
_PY_RX: dict[str, re.Pattern[str]] = {}


def _rx(regex: str) -> re.Pattern[str]:
    """A compiled regex of the per-line path, with the vectorised path's meaning of ``\\s``."""
    pat = _PY_RX.get(regex)
    if pat is None:
        pat = _PY_RX[regex] = re.compile(py_regex(regex))
    return pat


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


def classify_line(text: str, engines: list[str]) -> tuple[str, str, str, dict[str, Any]] | None:
    """Per-line twin of ``classify`` over already stripped text: (engine, kind, variant, fields)."""
    for engine in engines:
        g = load_grammar(engine)
        env, body = split_envelope(g, text)
        for v in g.variants:
            if v.anchor and v.anchor not in body:
                continue
            m = _rx(v.regex).match(body)
            if m is None:
                continue
            kind = UNRECOGNIZED if v.kind == "claimed" else v.kind
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
    """Front end + classification of one raw line: (wrapper fields, text, match)."""
    wrap, text = strip_line(raw)
    return wrap, text, classify_line(text, engines)


__all__ = ["classify", "classify_line", "parse_raw_line", "cast", "convert", "DTYPES"]
