"""Small helpers shared by the analyses."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import TypeVar

import polars as pl

T = TypeVar("T")

EXACT = "exact per request"
TICK = "tick interval"
WINDOW = "server window average"


def bucket(n: float | None) -> int | None:
    """Power-of-two bucket of a token count: 2^round(log2 n) (n >= 1)."""
    if n is None or n < 1:
        return None
    return 1 << int(round(math.log2(n)))


def depth_bucket(d: float | None) -> int | None:
    """The depth's bucket: 0 below 256 tokens (llama-bench's ``d0``), else :func:`bucket`."""
    if d is None:
        return None
    return 0 if d < 256 else bucket(d)


def table(logs, name: str) -> pl.DataFrame | None:
    """The frame ``name`` of ``logs`` if it exists and has rows, else None; one print per
    event where a server prints a line once per rank (:func:`one_print`)."""
    get = getattr(logs, "get", None)
    df = get(name) if get is not None else None
    if df is None or df.height == 0:
        return None
    return one_print(df)


# the ranks that print the same line: TP ranks of one DP rank, pipeline stages
RANKS = ("tp_rank", "pp_rank")


def one_print(df: pl.DataFrame) -> pl.DataFrame:
    """The rows of one rank where every rank of a server prints the same line: SGLang's
    schedulers print their batch, retraction and startup lines once per TP rank and once per
    pipeline stage (``[… TP1 PP1]`` repeats ``[… TP0 PP0]``), while each rank of data-parallel
    attention (``DPn``) prints its own. Per file, server run and DP rank, the rank that printed
    the most of the table's lines speaks for the others (the lowest TP rank, then the first
    stage, on a tie): a log that lost some copies (Ray folds a line repeated across its workers
    into one) keeps the fullest series.

    Example::

        one_print(logscope.read("sglang-tp2.log")["retract"])   # TP1's copies left out
    """
    have = [c for c in RANKS if c in df.columns and df[c].drop_nulls().n_unique() > 1]
    if not have:   # one rank printed (or none named): nothing to drop
        return df
    key = [c for c in ("file", "run", "dp_rank") if c in df.columns]
    ranks = [pl.col(c).fill_null(0) for c in have]
    rank = ranks[0] * 1000 + ranks[1] if len(ranks) == 2 else ranks[0]
    score = pl.len().over([*key, *ranks]).cast(pl.Int64) * 1_000_000 - rank.cast(pl.Int64)
    return df.filter(score == score.max().over(key))


_MEMO: dict[tuple, tuple] = {}   # key → (weak ref to the logs, result): reports ask often


def remembered(logs, what: str, tables: tuple[str, ...], compute: Callable[[], T]) -> T:
    """``compute()``, remembered for the same ingest (the same ``logs`` and the same objects
    for ``tables``) and ``what`` (a name and its arguments): a report asks several analyses
    that each need the same reading. Logs that cannot be referred to weakly are not
    remembered.

    Example::

        remembered(logs, "states:label", ("requests",), lambda: heavy(logs))
    """
    held = getattr(logs, "tables", None) or {}
    key = (id(logs), what, *(id(held.get(n)) for n in tables))
    hit = _MEMO.get(key)
    if hit is not None and hit[0]() is logs:
        return hit[1]
    out = compute()
    try:   # forgotten when the logs are
        ref = weakref.ref(logs, lambda _r, key=key: _MEMO.pop(key, None))
    except TypeError:
        return out
    if len(_MEMO) >= 32:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = (ref, out)
    return out


def col(df: pl.DataFrame, *names: str) -> str | None:
    """The first of ``names`` that is a column of ``df`` with at least one value."""
    for n in names:
        if n in df.columns and df[n].null_count() < df.height:
            return n
    return None


def col_or_null(df: pl.DataFrame, name: str, dtype=None) -> pl.Expr:  # noqa: ANN001
    """Column ``name`` of ``df`` (cast to ``dtype``), or a null literal where it has none."""
    e = pl.col(name) if name in df.columns else pl.lit(None)
    return e.cast(dtype) if dtype is not None else e


def sglang_kv_tokens(df: pl.DataFrame) -> pl.Expr:
    """SGLang's KV tokens in use by the running requests (Float64): ``#token``, or on a
    hybrid model (full-attention and sliding-window pools) ``#full token``, the full pool's,
    which holds every token of the running requests (the depth decode pays for)."""
    return pl.coalesce(col_or_null(df, "used_tokens", pl.Float64),
                       col_or_null(df, "full_used_tokens", pl.Float64))


def sglang_kv_usage(df: pl.DataFrame) -> pl.Expr:
    """SGLang's KV usage, 0-1 (Float64): ``token usage``, or on a hybrid model the fullest of
    its pools (``full``, ``swa``, ``mamba``: SGLang's own ``token_usage`` metric is their max)."""
    pools = [col_or_null(df, c, pl.Float64) for c in
             ("full_token_usage", "swa_token_usage", "mamba_usage") if c in df.columns]
    return pl.coalesce(col_or_null(df, "token_usage", pl.Float64),
                       pl.max_horizontal(pools) if pools else pl.lit(None, pl.Float64))


def vllm_kv_usage(df: pl.DataFrame) -> pl.Expr:
    """vLLM's KV usage, 0-1 (Float64), from its ``GPU KV cache usage`` percentage."""
    return col_or_null(df, "kv_cache_usage_pct", pl.Float64) * 0.01


def label_of(logs, default: str | None = None) -> str:
    if default:
        return default
    files = getattr(logs, "files", None) or []
    if files:
        from pathlib import Path
        names = [Path(f.file).name for f in files]
        return names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1})"
    return "log"


def requests(logs) -> pl.DataFrame | None:
    return table(logs, "requests")


def with_time(df: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Add ``t`` (seconds since the file's first event of this frame) and say its basis.

    The basis is ``ts`` (wall clock), ``t_rel`` (server clock) or ``line`` (no clock in the
    log, e.g. old SGLang lines: then ``t`` is the line number).
    """
    if "ts" in df.columns and df["ts"].null_count() < df.height:
        t = (pl.col("ts") - pl.col("ts").min().over("file")).dt.total_microseconds() / 1e6
        return df.with_columns(t=t), "s"
    if "t_rel" in df.columns and df["t_rel"].null_count() < df.height:
        return df.with_columns(t=pl.col("t_rel") - pl.col("t_rel").min().over("file")), "s"
    return df.with_columns(t=pl.col("line").cast(pl.Float64)), "line"


class NoData(ValueError):
    """The log has nothing for this analysis (the CLI turns it into a one-line user error)."""


def active_at(req: pl.DataFrame, file: str, run: int, times):
    """How many requests of (file, run) are in progress (t_start <= t <= t_end) at each time."""
    import numpy as np

    g = req.filter((pl.col("file") == file) & (pl.col("run") == run)).drop_nulls(
        ["t_start", "t_end"])
    starts = np.sort(g["t_start"].to_numpy())
    ends = np.sort(g["t_end"].to_numpy())
    t = np.asarray(times, dtype=float)
    return np.searchsorted(starts, t, side="right") - np.searchsorted(ends, t, side="left")
