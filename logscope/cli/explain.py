"""``logscope explain LOG:LINE``: how one line was (or was not) parsed."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from logscope.classify.grammar import ENGINES
from logscope.cli.ingest import OneLineErrors

MAX_EXPECTED = 12  # expected tokens shown per engine (--json has them all)


def _short(s: str, n: int = 200) -> str:
    return s if len(s) <= n else s[:n] + f"… ({len(s)} chars)"


def render(r: dict[str, Any]) -> str:
    out = [f"{r['file']}:{r['line']}", f"  raw:      {_short(r['raw'])!r}"]
    if r["wrapper"]:
        out.append("  wrapper:  " + ", ".join(f"{k}={v}" for k, v in r["wrapper"].items()))
    if r["text"] != r["raw"]:
        out.append(f"  text:     {_short(r['text'])!r}")
    cls = r["class"]
    if cls == "event":
        out.append(f"  event:    {r['engine']} {r['kind']} (variant {r['variant']})")
        out.append(f"  format:   {r['format']}")
        fields = {k: v for k, v in r["fields"].items() if v is not None}
        width = max((len(k) for k in fields), default=0)
        out.append("  fields:" + ("" if fields else " none"))
        out.extend(f"    {k.ljust(width)}  {v!r}" for k, v in fields.items())
    elif cls == "ignored":
        out.append(f"  ignored:  a known {r['engine']} line without benchmark figures "
                   f"(variant {r['variant']})")
        out.append(f"  format:   {r['format']}")
    elif cls == "unrecognized":
        out.append(f"  UNRECOGNIZED: looks like {r['engine']} ({r['variant']}: {r['format']}) "
                   "but matches no known format")
    else:
        out.append("  not a server line: no engine's format or anchor matches "
                   "(counted as ignored)")
    records = r.get("records") or []
    if records:
        out.append(f"  glued:    {len(records)} records on this line (ingest counts each; the "
                   "verdict above is the first one's)")
        for k, rec in enumerate(records, 1):
            what = " ".join(x for x in (rec["engine"], rec["kind"], rec["variant"]) if x)
            out.append(f"    [{k}] {rec['class']} {what}: {_short(rec['text'], 100)!r}")
    for eng, d in r["diagnostics"].items():
        if d["ok"]:
            out.append(f"  lark ({eng}): parses")
            continue
        col = f"column {d['column']}" if d["column"] else "end of line"
        got = f", found {d['unexpected']!r}" if d["unexpected"] else ""
        exp = d["expected"]
        more = f", … {len(exp) - MAX_EXPECTED} more" if len(exp) > MAX_EXPECTED else ""
        out.append(f"  lark ({eng}): {col}{got}; expected one of: "
                   + ", ".join(exp[:MAX_EXPECTED]) + more)
        if d["column"]:
            c = d["column"] - 1
            lo = max(0, c - 60)
            out.append("    " + r["text"][lo:c + 20].replace("\t", " "))
            out.append("    " + " " * (c - lo) + "^")
    return "\n".join(out)


@click.command(cls=OneLineErrors)
@click.argument("location", metavar="LOG:LINE")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
              help="Which server printed the log; auto tries each in turn, as ingest does.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def explain(location: str, engine: str, as_json: bool) -> None:
    """Show how line LINE of LOG was parsed: the raw line, the wrapper stripped, engine, kind,
    variant and typed fields, or lark's diagnostic (column and expected tokens).

    Exit codes: 0 shown, 2 bad input (no such file or line, not LOG:LINE).

    Example: logscope explain server.log:120
    """
    from logscope.classify.catalog import explain as catalog_explain
    from logscope.classify.catalog import parse_location
    from logscope.input.sources import InputError

    try:
        path, line_no = parse_location(location)
    except ValueError as e:
        click.echo(f"Error: Invalid value for LOG:LINE: {e}", err=True)
        sys.exit(2)
    try:
        r = _telemetry_explain(path, line_no) or catalog_explain(path, line_no, engine=engine)
    except InputError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    click.echo(json.dumps(r, default=str, ensure_ascii=False) if as_json else render(r))


def _telemetry_explain(path: str, line_no: int) -> dict[str, Any] | None:
    """A line of an nvidia-smi telemetry file, read by grammars/nvidia_smi.lark (or None)."""
    from logscope.classify.catalog import _line_of
    from logscope.input.sources import load
    from logscope.telemetry import kind_of
    from logscope.telemetry.nvidia import explain_line

    if kind_of(path) is None:
        return None
    src = load(path)
    return explain_line(path, _line_of(src, line_no), line_no, whole=src.text)
