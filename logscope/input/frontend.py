"""The line front end shared by every engine: ANSI colour, trailing padding, quoted embeddings.

A line reaches the engine grammars as ``text`` plus, when a logger quoted the server's line
inside its own entry, ``outer`` (the logger's part). In order: strip ANSI colour anywhere in
the line (also the reset that llama-server leaves at the start of the next line, and the mangled
``^[[``/``[1;36m`` forms); strip trailing padding (spaces of a terminal copy, CR, a Markdown
``**``/backtick) and a handler's trailing ``file.py:NN`` column (Rich); unquote embeddings
(docker's json-file / fluent-bit ``{"log": ...}``, a logfmt ``line="..."`` / ``msg="..."`` as
LocalAI, Ollama and Go loggers write them); split vLLM records glued onto one line; re-render
llama.cpp's era A/C JSON objects as the era-C text form so one grammar rule serves both.

Nothing here looks for a wrapper at the start of the line: the engine's message is found
wherever it stands (``parse.classify``) and what precedes it is decoded by
``logscope.input.envelope``.

Each step exists twice, with the same regexes: vectorised over a Polars frame (batch ingest)
and per line in Python (follow, explain).
"""

from __future__ import annotations

import functools
import json
import re

ANSI = (r"(?:\x1b|\^\[|ESC|\\x1b|\\u001b|\\033|\\e)\[[0-9;]*[A-Za-z]"
        r"|\[[0-9]{1,2}(?:;[0-9]{1,2})*m")
# trailing padding: terminal copies pad with spaces, Windows ends in CR, Markdown pastes in ** or `
PADDING = " \t\r\x0b\x0c*`"
# a column a logging handler prints after the message (Rich's ``   serve.py:118``)
SUFFIX_HINT = ".py:"
SUFFIX = r" {2,}[A-Za-z0-9_.-]+\.py:[0-9]+$"
# Ray's log deduplication: a line that stands for itself and N more alike lines of other
# processes (numbers may differ) that Ray folded away ends in `` [repeated Nx across cluster]``;
# the suffix is cut (the line is one record, with its own figures) and N is kept in ``repeated``
DEDUP_HINT = "across cluster]"
DEDUP = r" *\[repeated ([0-9]+)x across cluster\]$"
# a logger that quotes the whole server line as one field (Go %q / logfmt escaping)
EMBED_HINT = '="'
EMBED = (r'^(?P<outer>.*?\b(?:line|msg|message|log)=)"(?P<inner>(?:[^"\\]|\\.)+)"')

# vLLM records glued onto one line (a tqdm bar or a lost newline before the next record): a
# record start — optional process prefixes, LEVEL MM-DD HH:MM:SS — right after a non-space
GLUED = (r"([^\s:*>|])((?:\([A-Za-z_0-9]+ pid=[0-9]+\) )*(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) "
         r"[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})")

GLUED_HINTS = ["INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL "]  # literals GLUED needs
# the same test as one regex of literals: Rust regex's SIMD literal search is about ten times
# faster than ``str.contains_any``'s Aho-Corasick on a block of lines
_GLUED_ANY = "|".join(re.escape(h) for h in GLUED_HINTS)

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


@functools.cache
def py_compiled(regex: str) -> re.Pattern[str]:
    """A compiled regex of the per-line paths (follow, explain), with the vectorised path's
    meaning of ``\\s`` (:func:`py_regex`); compiled once."""
    return re.compile(py_regex(regex))


_GLUED_RX = re.compile(GLUED)
_ANSI_RX = re.compile(ANSI)
_EMBED_RX = re.compile(EMBED)
_SUFFIX_RX = re.compile(SUFFIX)
_DEDUP_RX = re.compile(DEDUP)
_UNESCAPE_RX = re.compile(r'\\(["\\])')


def split_records(text: str) -> list[str]:
    """Split records glued onto one physical line (vLLM under tqdm); usually ``[text]``."""
    if "-" not in text or not _GLUED_RX.search(text):
        return [text]
    return _GLUED_RX.sub("\\1\n\\2", text).split("\n")


def unescape(inner: str) -> str:
    """A quoted embedding's text: ``\\"`` and ``\\\\`` unescaped, ``\\t`` a tab, and colour
    codes escaped as ``\\x1b[..m`` / ``\\u001b[..m`` removed."""
    text = _UNESCAPE_RX.sub(r"\1", inner).replace("\\t", "\t")
    return _ANSI_RX.sub("", text) if "\\" in text or "\x1b" in text else text


def strip_line(raw: str) -> tuple[dict[str, str | None], str]:
    """Per-line front end: (``{"outer": the quoting logger's part or None}``, text for the
    engine grammars). Glued records stay joined here; ``split_records`` separates them."""
    if "\x1b" in raw or "[" in raw:
        raw = _ANSI_RX.sub("", raw)
    text = raw.rstrip(PADDING)
    if SUFFIX_HINT in text:
        text = _SUFFIX_RX.sub("", text)
    if DEDUP_HINT in text:
        text = _DEDUP_RX.sub("", text).rstrip(PADDING)
    outer = None
    if text.endswith("}") and '{"' in text:
        outer, text = _json_entry(text)
    elif EMBED_HINT in text and (m := _EMBED_RX.match(text)):
        outer, text = m.group("outer"), unescape(m.group("inner")).rstrip(PADDING)
    return {"outer": outer}, text


def _json_entry(line: str) -> tuple[str | None, str]:
    """A JSON object, alone or after a prefix: docker json-file / fluent-bit
    ``{"log": ..., "time": ...}`` -> (its time, the line); llama.cpp's era A/C objects -> (the
    prefix, their text form); anything else unchanged (None, line)."""
    at = line.find('{"')
    outer, text = (line[:at] or None), line[at:]
    if '"log":' in text:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return None, text
        if isinstance(obj, dict) and isinstance(obj.get("log"), str):
            inner = _ANSI_RX.sub("", obj["log"]).rstrip(PADDING + "\n")
            nested = None
            if inner.endswith("}") and '{"' in inner:  # llama.cpp's JSON inside docker's
                nested, inner = _json_entry(inner)
            when = obj.get("time") or obj.get("@timestamp") or obj.get("date") or ""
            if isinstance(when, int | float):  # fluent-bit: unix seconds
                when = f"{when:.6f}"
            return f"{outer or ''}{when} {obj.get('stream', '')} {nested or ''}", inner
    obj = _loads(text)   # parsed once for both readings (a long config dump that only
    if obj is None:      # holds an object fails the same way twice)
        return None, line
    rendered = _llama_text(obj)
    if rendered is not None:
        return outer, rendered
    got = _structured(obj)
    if got is not None:
        return f"{outer or ''}{got[0]}", got[1]
    return None, line


def _loads(text: str) -> object | None:
    """``json.loads(text)``, None where it is not JSON (or nested too deep: hostile input)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


# the keys of a structured logger's entry (python-json-logger, structlog, zap, bunyan, pino)
MESSAGE_KEYS = ("message", "msg")
TIME_KEYS = ("asctime", "time", "timestamp", "ts", "@timestamp")
LEVEL_KEYS = ("levelname", "level", "severity")


def _structured(obj: object) -> tuple[str, str] | None:
    """A structured logger's parsed JSON entry -> (its time and level, the message), or
    None."""
    if not isinstance(obj, dict):
        return None
    msg = next((obj[k] for k in MESSAGE_KEYS if isinstance(obj.get(k), str)), None)
    if msg is None:
        return None
    when = next((str(obj[k]) for k in TIME_KEYS if obj.get(k) is not None), "")
    level = next((str(obj[k]) for k in LEVEL_KEYS if obj.get(k) is not None), "")
    return f"{when} {level} ", _ANSI_RX.sub("", msg).rstrip(PADDING + "\n")


_PLAIN_STR = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII without " and \


def _dumps(v: object) -> str:
    """``json.dumps(v)``, with its answer for the common values computed directly."""
    t = type(v)
    if t is str and _PLAIN_STR.fullmatch(v):  # type: ignore[arg-type]
        return f'"{v}"'
    if t is int:
        return str(v)
    return json.dumps(v)


def json_entry_to_text(text: str) -> str:
    """Render a llama.cpp era A/C JSON log object as the era-C text line
    ``LEVEL [func] msg | key=value ...``; anything else is returned unchanged."""
    rendered = _llama_text(_loads(text))
    return text if rendered is None else rendered


def _llama_text(obj: object) -> str | None:
    """:func:`json_entry_to_text` of a parsed object; None where it is not llama.cpp's."""
    if not isinstance(obj, dict) or "level" not in obj or "function" not in obj \
            or not ("msg" in obj or "message" in obj):
        return None  # llama.cpp's objects name the C function; other loggers' do not
    msg = obj.pop("msg", None)
    if msg is None:
        msg = obj.pop("message", "")
    level = str(obj.pop("level", ""))
    func = str(obj.pop("function", ""))
    obj.pop("line", None)
    extras = " ".join(f"{k}={_dumps(v)}" for k, v in obj.items())
    return f"{level:>4} [{func:>24}] {msg} |{' ' + extras if extras else ''}"


def strip_frame(lines, first_row: int = 0):  # noqa: ANN001, ANN201 - polars imported lazily
    """Vectorised front end over a frame with a ``raw`` column: adds ``text`` and ``outer``
    (null unless a logger quoted the line). Glued records become rows of their own, ``_row``
    renumbered from ``first_row``."""
    import polars as pl

    def on(mask: pl.Series, col: pl.Series, fix) -> pl.Series:  # noqa: ANN001
        """``col`` with ``fix`` applied to the rows of ``mask`` only (a regex that runs on the
        few lines a cheap test picked, not on every line)."""
        if not mask.any():
            return col
        at = mask.arg_true()
        return col.scatter(at, fix(col.gather(at)))

    raw = lines.get_column("raw")
    text = on(raw.str.contains(r"\x1b|\[[0-9;]*m"), raw.clone(),
              lambda t: t.str.replace_all(ANSI, "")).str.strip_chars_end(PADDING)
    text = on(text.str.contains(SUFFIX_HINT, literal=True), text,
              lambda t: t.str.replace(SUFFIX, ""))
    repeated = None
    dedup = text.str.contains(DEDUP_HINT, literal=True)
    if dedup.any():
        at = dedup.arg_true()
        repeated = pl.Series("repeated", [None] * len(text), dtype=pl.Int32).scatter(
            at, text.gather(at).str.extract(DEDUP, 1).cast(pl.Int32, strict=False))
        text = text.scatter(at, text.gather(at).str.replace(DEDUP, "").str.strip_chars_end(
            PADDING))
    df = lines.with_columns(text.alias("text"), pl.lit(None, pl.String).alias("outer"))
    if repeated is not None:
        df = df.with_columns(repeated)
    # quoted embeddings (logfmt line="..." / msg="..."): a literal test, then the regex on the
    # lines that pass it
    hint = df.select(pl.col("text").str.contains(EMBED_HINT, literal=True)).to_series()
    if hint.any():
        at = hint.arg_true()
        text = df.get_column("text")
        got = text.gather(at).str.extract_groups(EMBED).struct.unnest()
        inner = (got.get_column("inner").str.replace_all(r'\\(["\\])', "${1}")
                 .str.replace_all("\\t", "\t", literal=True).str.replace_all(ANSI, "")
                 .str.strip_chars_end(PADDING))
        df = df.with_columns(text.scatter(at, inner.fill_null(text.gather(at))),
                             df.get_column("outer").scatter(at, got.get_column("outer")))
    # JSON entries (docker json-file, llama.cpp era A/C), alone or after a prefix: rare, so
    # decoded in Python
    is_json = df.select(pl.col("text").str.ends_with("}")
                        & pl.col("text").str.contains('{"', literal=True)).to_series()
    if is_json.any():
        at = is_json.arg_true()
        text = df.get_column("text")
        pairs = [_json_entry(t) for t in text.gather(at)]
        df = df.with_columns(
            text.scatter(at, pl.Series([t for _, t in pairs], dtype=pl.String)),
            df.get_column("outer").scatter(at, pl.Series([o for o, _ in pairs], dtype=pl.String)))
    text = df.get_column("text")
    hint = text.str.contains(_GLUED_ANY)  # the literal test first, the regex on its lines
    glued = (pl.repeat(False, df.height, dtype=pl.Boolean, eager=True)
             .scatter(hint.arg_true(), text.filter(hint).str.contains(GLUED))
             if hint.any() else None)
    if glued is not None and glued.any():
        # one row per record: the records of a glued line share its line number (only the
        # glued lines are split; a stable sort puts their records back in place)
        split = (df.filter(glued).with_columns(
            pl.col("text").str.replace_all(GLUED, "${1}\n${2}").str.split("\n"))
            .explode("text"))
        df = (pl.concat([df.filter(~glued), split]).sort("_row", maintain_order=True)
              .drop("_row").with_row_index("_row", offset=first_row))
    return df
