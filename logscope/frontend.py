"""The line front end shared by every engine: outer wrappers, ANSI colour, JSON entries.

Order (as in formats/llama-server.md §2.6): strip the wrapper (journald, docker ``-t``
timestamps, compose ``name | ``), strip ANSI colour anywhere in the line (also the reset that
llama-server leaves at the start of the next line, and the mangled ``^[[``/``[1;36m`` forms), then
the engine grammar's own envelope takes over. llama.cpp's era A/C JSON objects are re-rendered
to the era-C text form so one grammar rule serves both.

Each step exists twice, with the same regexes: vectorised over a Polars frame (batch ingest)
and per line in Python (follow, explain).
"""

from __future__ import annotations

import json
import re

# journald short-iso / short-precise, short (localised month names), docker -t RFC 3339
# journald short-iso prints a numeric offset (+01:00), never Z: a Z timestamp is docker -t's, and
# "2024-05-01T10:00:00Z slot launch_slot_: ..." must not read as host "slot", ident "launch_slot_"
JOURNALD_ISO = (r"(?P<wrap_iso>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?[+-]\d{2}:?\d{2})"
                r" \S+ [^\s:\[]+(?:\[\d+\])?: ")
JOURNALD_SHORT = (r"(?P<wrap_short>[A-Z][a-zä]{2,3} [ 0-9]\d \d{2}:\d{2}:\d{2})"
                  r" \S+ [^\s:\[]+(?:\[\d+\])?: ")
DOCKER_TS = r"(?P<wrap_docker>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) "
COMPOSE = r"(?P<wrap_service>[A-Za-z0-9][A-Za-z0-9_.-]*) +\| "
WRAPPER = f"^(?:{JOURNALD_ISO}|{JOURNALD_SHORT})?(?:{COMPOSE})?(?:{DOCKER_TS})?"
WRAPPER_FIELDS = ("wrap_iso", "wrap_short", "wrap_service", "wrap_docker")
# a line that can carry a wrapper starts like one of them (a superset test, no captures)
WRAPPER_HINT = r"^(?:\d{4}-\d{2}-\d{2}T|[A-Z][a-zä]{2,3} [ 0-9]\d |[A-Za-z0-9][A-Za-z0-9_.-]* +\| )"
ANSI = r"(?:\x1b|\^\[|ESC)\[[0-9;]*[A-Za-z]|\[[0-9]{1,2}(?:;[0-9]{1,2})*m"

# vLLM records glued onto one line (a tqdm bar or a lost newline before the next record): a
# record start — optional process prefixes, LEVEL MM-DD HH:MM:SS — right after a non-space
GLUED = (r"(\S)((?:\([A-Za-z_0-9]+ pid=[0-9]+\) )*(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) "
         r"[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})")

# Rust regex's \s (Unicode White_Space); Python's \s also matches the separators \x1c-\x1f
RUST_WS = "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"


def py_regex(regex: str) -> str:
    """A regex for Python ``re`` that means what it means to Polars (Rust ``regex``): ``\\s`` and
    ``\\S`` spelled out as Rust's White_Space, so the per-line path (follow, explain) and the
    vectorised path agree on lines holding \\x1c-\\x1f. (``\\S`` inside a class is left as is.)"""
    if "\\s" not in regex and "\\S" not in regex:
        return regex
    out: list[str] = []
    i, n, in_class = 0, len(regex), False
    while i < n:
        c = regex[i]
        if c == "\\" and i + 1 < n:
            e = regex[i + 1]
            if e == "s":
                out.append(RUST_WS if in_class else f"[{RUST_WS}]")
            elif e == "S" and not in_class:
                out.append(f"[^{RUST_WS}]")
            else:
                out.append(c + e)
            i += 2
            continue
        out.append(c)
        i += 1
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            for lit in ("^", "]"):  # [^...] and a literal ] first in the class
                if i < n and regex[i] == lit:
                    out.append(lit)
                    i += 1
    return "".join(out)


_WRAPPER_RX = re.compile(py_regex(WRAPPER))
_GLUED_RX = re.compile(GLUED)
_ANSI_RX = re.compile(ANSI)


def split_records(text: str) -> list[str]:
    """Split records glued onto one physical line (vLLM under tqdm); usually ``[text]``."""
    if "-" not in text or not _GLUED_RX.search(text):
        return [text]
    return _GLUED_RX.sub("\\1\n\\2", text).split("\n")


def strip_line(raw: str) -> tuple[dict[str, str | None], str]:
    """Per-line front end: (wrapper fields, text for the engine grammar). Glued records stay
    joined here; ``split_records`` separates them."""
    if "\x1b" in raw or "[" in raw:
        raw = _ANSI_RX.sub("", raw)
    m = _WRAPPER_RX.match(raw)
    wrap = {k: m.group(k) for k in WRAPPER_FIELDS} if m else dict.fromkeys(WRAPPER_FIELDS)
    text = raw[m.end():] if m else raw
    if text.startswith("{"):
        text = json_entry_to_text(text)
    return wrap, text


def json_entry_to_text(text: str) -> str:
    """Render a llama.cpp era A/C JSON log object as the era-C text line
    ``LEVEL [func] msg | key=value ...``; anything else is returned unchanged."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deep for json (hostile input)
        return text
    if not isinstance(obj, dict) or "level" not in obj or not ("msg" in obj or "message" in obj):
        return text
    msg = obj.pop("msg", None)
    if msg is None:
        msg = obj.pop("message", "")
    level = str(obj.pop("level", ""))
    func = str(obj.pop("function", ""))
    obj.pop("line", None)
    extras = " ".join(f"{k}={json.dumps(v)}" for k, v in obj.items())
    return f"{level:>4} [{func:>24}] {msg} |{' ' + extras if extras else ''}"


def strip_frame(lines, first_row: int = 0):  # noqa: ANN001, ANN201 - polars imported lazily
    """Vectorised front end over a frame with a ``raw`` column: adds the wrapper columns and
    ``text``. Glued records become rows of their own, ``_row`` renumbered from ``first_row``."""
    import polars as pl

    raw = pl.col("raw")
    df = lines.with_columns(
        pl.when(raw.str.contains(r"\x1b|\[[0-9;]*m", literal=False))
        .then(raw.str.replace_all(ANSI, ""))
        .otherwise(raw)
        .alias("_clean")
    )
    # most lines carry no wrapper: a cheap test on the line start spares the capturing regex,
    # which runs on the lines that pass it only
    hint = df.select(pl.col("_clean").str.contains(WRAPPER_HINT)).to_series()
    if hint.any():
        at = hint.arg_true()
        clean = df.get_column("_clean")
        wrap = clean.gather(at).str.extract_groups(WRAPPER + "(?P<_rest>.*)$").struct.unnest()
        cols = [pl.repeat(None, df.height, dtype=pl.String, eager=True).alias(f)
                .scatter(at, wrap.get_column(f)) for f in WRAPPER_FIELDS]
        rest = wrap.get_column("_rest")
        text = clean.scatter(at, rest.fill_null(clean.gather(at))).alias("text")
        df = df.drop("_clean").with_columns(*cols, text)
    else:
        df = df.with_columns(*[pl.lit(None, pl.String).alias(f) for f in WRAPPER_FIELDS],
                             pl.col("_clean").alias("text")).drop("_clean")
    glued = pl.col("text").str.contains(GLUED)
    if df.height and df.select(glued.any()).item():
        # one row per record: the records of a glued line share its line number
        df = (df.with_columns(pl.col("text").str.replace_all(GLUED, "${1}\n${2}")
                              .str.split("\n"))
              .explode("text").drop("_row").with_row_index("_row", offset=first_row))
    # llama.cpp era A/C JSON entries: rare, so re-rendered in Python
    is_json = df.select(pl.col("text").str.starts_with("{")).to_series()
    if is_json.any():
        at = is_json.arg_true()
        text = df.get_column("text")
        rendered = [json_entry_to_text(t) for t in text.gather(at)]
        df = df.with_columns(text.scatter(at, pl.Series(rendered, dtype=pl.String)))
    return df
