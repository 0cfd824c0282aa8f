"""The tolerant envelope decoder shared by every engine.

A server's message (its own header and text, described by ``grammars/<engine>.lark``) is found
wherever it stands in a line; whatever precedes it is the line's *prefix*: the marks of the
wrappers a log went through (journald, docker/kubectl, a compose service, a GUI launcher, Ray
actors, a user's logging config, a line-number gutter, the logger that quoted the line). This
module reads what it can from a prefix, by searching for each kind of token anywhere in it:

* a wall-clock timestamp: ISO 8601 / RFC 3339 with any fraction (nanoseconds included) and zone,
  ``YYYY-mm-dd HH:MM:SS[,.]fff`` (Python logging), ``YYYY/mm/dd`` (Go), unix seconds
  (``[1712345678]``, ``1712345678.123``). A zone-less timestamp is taken as UTC (as SGLang's own
  are); syslog/journald ``short`` timestamps (``Jun 18 08:57:40``, month names in several
  locales) carry no year: they are recognised but give no wall clock;
* a level word (``INFO``, ``[Info]``, ``level=warn``, ...), upper-cased;
* a pid (``pid=N``, ``ident[N]:``, ``LEVEL N``), a Ray/vLLM process name (``(Name pid=N)``, with
  nested parentheses), rank tags (``DP3 TP3 EP3 PP0``, ``ATTN_CP``, ``MOE_DP``, ``gpu_id=N``), a
  ``file.py:NNN`` source location, and the host (journald), service (docker compose) or pod
  (``kubectl logs --prefix``, stern): whose server the line is, when a wrapper interleaves
  several.

What the decoder does not understand stays in the ``prefix`` column; it is never a reason to drop
a line. The same regexes serve the vectorised path (Polars, over the prefixes of a batch) and the
per-line path (``follow``, ``explain``), so both decode alike.

    >>> decode_prefix("2026-06-10 20:02:40.771 [Info] (Process) ")["wrap_ts"]
    '2026-06-10T20:02:40.771000Z'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

# ---- timestamps --------------------------------------------------------------------------------
ISO_TS = (r"(?P<y>[0-9]{4})[-/](?P<mo>[0-9]{2})[-/](?P<d>[0-9]{2})[T ]"
          r"(?P<H>[0-9]{2}):(?P<M>[0-9]{2}):(?P<S>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?"
          r"(?: ?(?P<tz>Z|[+-][0-9]{2}:?[0-9]{2}|UTC)\b)?")
UNIX_TS = r"(?:^|[\[\s])(?P<unix>1[0-9]{9})(?:\.(?P<uf>[0-9]{1,9}))?(?:[\]\s]|$)"
# month names of journald/syslog ``short`` output in common locales (recognised, no year)
MONTHS = (r"(?:[JFMASOND][a-zäéû]{2,4}\.?|[jfmasond][a-zäéû]{2,4}\.?)")
SYSLOG_TS = rf"\b{MONTHS} {{1,2}}[0-9]{{1,2}} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}(?:\.[0-9]+)?"

LEVEL = (r"(?i:\b(?:level=)?(?P<level>trace|debug|info|notice|warn|warning|error|err|critical"
         r"|crit|fatal|eror|dbug)\b)")
PID = (r"\bpid=(?P<pid>[0-9]+)|\[(?P<pid2>[0-9]+)\]:"
       r"|(?i:\b(?:info|debug|warning|error)) (?P<pid3>[0-9]{2,7}) ")
PROC = r"\((?P<proc>[A-Za-z_][^\s]*) (?:[A-Za-z_]+=[^\s)]+ )*pid=[0-9]+\)"
SRC = r"(?P<src_file>[A-Za-z0-9_.-]+\.py):(?P<src_line>[0-9]+)"
RANKS = {"dp_rank": r"\bDP(?P<v>[0-9]+)\b", "tp_rank": r"\bTP(?P<v>[0-9]+)\b",
         "ep_rank": r"\bEP(?P<v>[0-9]+)\b", "pp_rank": r"\bPP(?P<v>[0-9]+)\b",
         "attn_cp_rank": r"\bATTN_CP(?P<v>[0-9]+)\b", "moe_dp_rank": r"\bMOE_DP(?P<v>[0-9]+)\b"}
GPU_ID = r"\bgpu_id=(?P<v>[0-9]+)"
# where the host is: journald short / short-iso (``<ts> host ident[pid]: ``), docker compose
# (``service  | ``) at the start of the line
HOST = (rf"^(?:{ISO_TS.replace('?P<', '?P<h_')}|{SYSLOG_TS}) (?P<host>[^\s\[:]+) "
        r"[^\s:\[]+(?:\[[0-9]+\])?:(?: |$)")  # the message may take the space (indented)
SERVICE = r"^(?P<service>[A-Za-z0-9][A-Za-z0-9_.-]*) +\| "
# Kubernetes: ``kubectl logs --prefix`` (``[pod/name/container] ``) and stern's default
# (``pod container ``: the whole prefix, the pod's name hyphenated and led by a letter, so a
# date and a word, ``2024-05-01 info ``, is no pod)
POD = (r"^\[pod/(?P<pod>[^/\]\s]+)/[^\]\s]+\] "
       r"|^(?P<pod2>[a-z][a-z0-9.]*-[a-z0-9.-]*[a-z0-9]) [a-z0-9](?:[a-z0-9-]*[a-z0-9])? $")

# a prefix that shows a wrapper was there: whitespace or a Markdown quote, a clock, a level, a
# gutter, a process tag, a compose bar (what lets a line whose message has no header of its own
# count as the engine's)
EVIDENCE = (r"^[\s>|]*$|^\s*[0-9]+\s*$|[0-9]{2}:[0-9]{2}:[0-9]{2}|pid=[0-9]|\|\s*$|"
            r"(?i:\b(?:trace|debug|info|notice|warn|warning|error|critical|fatal)\b)")

FIELDS: dict[str, pl.DataType] = {
    "wrap_ts": pl.Datetime("us", "UTC"), "level": pl.String(), "pid": pl.Int64(),
    "proc": pl.String(), "src_file": pl.String(), "src_line": pl.Int64(),
    **{r: pl.Int64() for r in RANKS}, "host": pl.String(),
}


def _has(regex: str) -> pl.Expr:
    return pl.col("prefix").str.contains(regex)


def decode_expr_columns(prefix: pl.Expr) -> list[pl.Expr]:
    """Vectorised decoder: expressions over the ``prefix`` column giving :data:`FIELDS`."""
    p = prefix
    iso = p.str.extract_groups(ISO_TS)
    frac = iso.struct.field("f").fill_null("0").str.slice(0, 6).str.pad_end(6, "0")
    tz = (iso.struct.field("tz").fill_null("+00:00").replace({"Z": "+00:00", "UTC": "+00:00"})
          .str.replace(r"^([+-][0-9]{2})([0-9]{2})$", "${1}:${2}"))
    stamp = pl.concat_str([iso.struct.field("y"), pl.lit("-"), iso.struct.field("mo"), pl.lit("-"),
                           iso.struct.field("d"), pl.lit("T"), iso.struct.field("H"), pl.lit(":"),
                           iso.struct.field("M"), pl.lit(":"), iso.struct.field("S"), pl.lit("."),
                           frac, tz])
    iso_ts = stamp.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us") \
        .dt.convert_time_zone("UTC")
    unix = p.str.extract_groups(UNIX_TS)
    unix_us = (unix.struct.field("unix").cast(pl.Int64, strict=False) * 1_000_000
               + unix.struct.field("uf").str.slice(0, 6).str.pad_end(6, "0")
               .cast(pl.Int64, strict=False).fill_null(0))
    unix_ts = unix_us.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    pid = p.str.extract_groups(PID)
    src = p.str.extract_groups(SRC)
    out = [
        pl.coalesce(iso_ts, unix_ts).alias("wrap_ts"),
        p.str.extract(LEVEL, 1).str.to_uppercase().alias("level"),
        pl.coalesce(pid.struct.field("pid"), pid.struct.field("pid2"), pid.struct.field("pid3"))
        .cast(pl.Int64, strict=False).alias("pid"),
        p.str.extract(PROC, 1).alias("proc"),
        src.struct.field("src_file").alias("src_file"),
        src.struct.field("src_line").cast(pl.Int64, strict=False).alias("src_line"),
    ]
    for name, rx in RANKS.items():
        val = p.str.extract(rx, 1).cast(pl.Int64, strict=False)
        if name == "dp_rank":  # SGLang 0.1.x–0.2.x named its one rank gpu_id
            val = pl.coalesce(val, p.str.extract(GPU_ID, 1).cast(pl.Int64, strict=False))
        out.append(val.alias(name))
    out.append(host_expr(p).alias("host"))
    return out


def host_expr(line: pl.Expr) -> pl.Expr:
    """The host (journald), service (docker compose) or pod (kubectl, stern) at the start of
    a line, or null."""
    pod = line.str.extract_groups(POD)
    return pl.coalesce(line.str.extract_groups(HOST).struct.field("host"),
                       line.str.extract_groups(SERVICE).struct.field("service"),
                       pod.struct.field("pod"), pod.struct.field("pod2"))


def decode_frame(df: pl.DataFrame, prefix: str = "prefix") -> pl.DataFrame:
    """The decoded fields (:data:`FIELDS`) of the ``prefix`` column of ``df``, one row each."""
    return df.select(decode_expr_columns(pl.col(prefix)))


def _rx(regex: str) -> re.Pattern[str]:
    from logscope.input.frontend import py_compiled

    return py_compiled(regex)


def decode_prefix(prefix: str) -> dict[str, Any]:
    """Per-line twin of :func:`decode_frame`: the fields of one prefix (``wrap_ts`` as an ISO
    string in UTC, ``Z``-suffixed), ``None`` for what is not there."""
    out: dict[str, Any] = dict.fromkeys(FIELDS)
    if not prefix:
        return out
    m = _rx(ISO_TS).search(prefix)
    ts: datetime | None = None
    if m:
        frac = (m.group("f") or "0")[:6].ljust(6, "0")
        tz = m.group("tz") or "+00:00"
        tz = "+00:00" if tz in ("Z", "UTC") else tz
        if len(tz) == 5:
            tz = f"{tz[:3]}:{tz[3:]}"
        try:
            ts = datetime.fromisoformat(
                f"{m['y']}-{m['mo']}-{m['d']}T{m['H']}:{m['M']}:{m['S']}.{frac}{tz}"
            ).astimezone(UTC)
        except ValueError:
            ts = None
    if ts is None and (u := _rx(UNIX_TS).search(prefix)):
        us = int((u.group("uf") or "0")[:6].ljust(6, "0"))
        ts = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=int(u.group("unix")),
                                                          microseconds=us)
    if ts is not None:
        out["wrap_ts"] = ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if lv := _rx(LEVEL).search(prefix):
        out["level"] = lv.group("level").upper()
    if pm := _rx(PID).search(prefix):
        out["pid"] = int(pm.group("pid") or pm.group("pid2") or pm.group("pid3"))
    if pr := _rx(PROC).search(prefix):
        out["proc"] = pr.group("proc")
    if sm := _rx(SRC).search(prefix):
        out["src_file"], out["src_line"] = sm.group("src_file"), int(sm.group("src_line"))
    for name, rx in RANKS.items():
        if rm := _rx(rx).search(prefix):
            out[name] = int(rm.group("v"))
    if out["dp_rank"] is None and (g := _rx(GPU_ID).search(prefix)):
        out["dp_rank"] = int(g.group("v"))
    if hm := _rx(HOST).search(prefix):
        out["host"] = hm.group("host")
    elif cm := _rx(SERVICE).search(prefix):
        out["host"] = cm.group("service")
    elif km := _rx(POD).search(prefix):
        out["host"] = km.group("pod") or km.group("pod2")
    return out


def has_evidence(prefix: str) -> bool:
    """Whether a prefix shows a wrapper (see :data:`EVIDENCE`): the per-line twin of the test
    ``parse.classify`` makes before it lets a header-less message count after a prefix."""
    return bool(_rx(EVIDENCE).search(prefix))


__all__ = ["FIELDS", "decode_frame", "decode_prefix", "decode_expr_columns", "has_evidence",
           "host_expr"]
