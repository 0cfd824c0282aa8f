"""Prefill speed against context depth, and a physical model with a fixed overhead.

``prefill_curve(logs)`` returns one row per measured *stretch* of prefill:

===============  =======================================================================
column           meaning
===============  =======================================================================
file, run        where the stretch comes from
slot, task       llama-server request (null for SGLang batches)
source           ``llama:request`` | ``llama:tick`` | ``sglang:batch``
exactness        ``exact per request`` | ``tick interval`` | ``server window average``
depth            context depth (tokens) at the middle of the stretch
d0               context depth when the stretch started (the cached prefix for a request)
tokens           tokens *computed* in the stretch (cache hits never count)
cached           cached prefix of the request (or batch) when its prompt started
seconds          time the stretch took
tps              tokens / seconds
overhead         the stretch includes the request's fixed overhead (a whole prompt, or the
                 first progress line's ``t =`` which counts from the prompt's start)
concurrent       other requests in progress during the stretch (llama-server; >0 = the GPU
                 was shared with another slot's prefill or decode)
shared           concurrent > 0
shared_prefill   another request was computing its own prompt during the stretch (the
                 GPU's batch was split between two prompts, not only topped up with the
                 other slot's decode tokens)
===============  =======================================================================

* ``llama:request``: llama-server's own ``prompt eval time = … ms / N tokens`` per request
  (exact): N tokens from d0 = cached to cached + N.
* ``llama:tick``: the time between two consecutive ``prompt processing`` progress lines of
  one request, from the server clock (µs): one ``n_batch`` chunk (2048 tokens by default) from
  the position of the first line to that of the second. With the b9151+ line (printed once
  the prompt has taken >= 3 s) the first line's ``t =`` covers the prompt from its start:
  that stretch carries the overhead. The older lines (``n_past = …``) give the slot position.
* ``sglang:batch``: a chunk of a chunked prompt, from two consecutive ``Prefill batch`` lines
  (:func:`logscope.analysis.windows.prefill_points`): ``#new-token`` computed on top of
  ``#cached-token``; the seconds are the interval since the previous ``Prefill batch`` line,
  which is what ``input throughput`` divides by (so a first chunk, or a batch after idle
  time, gives no point: its interval is not its own).

vLLM's stats lines carry a prompt throughput but no depth, so they give no point here.

The model (:func:`fit_prefill`): computing n tokens on top of d0 cached ones takes

    time(n, d0) = c + a·n + b·n·(d0 + n/2)

c: fixed per-request overhead (s), a: s/token (weights), b: s/token² (attention over the
context, which grows by one per token: the integral of a + b·d from d0 to d0 + n). Chunks
between progress lines have no c. The marginal speed at depth d is 1 / (a + b·d).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import polars as pl

from logscope.analysis._util import EXACT, TICK, WINDOW, label_of, remembered, table

SCHEMA = {
    "label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
    "source": pl.String, "exactness": pl.String, "depth": pl.Float64, "d0": pl.Float64,
    "tokens": pl.Int64, "cached": pl.Int64, "seconds": pl.Float64, "tps": pl.Float64,
    "overhead": pl.Boolean, "concurrent": pl.Int64, "shared": pl.Boolean,
    "shared_prefill": pl.Boolean, "t_rel": pl.Float64,
}

PREDICT_AT = (4096, 16384, 32768, 65536, 131072)
EXTRAPOLATE = 1.25   # predictions at most this far beyond the measured depths
OVERLAP_TOL = 0.005  # s: another request overlapping a stretch by less is not "sharing" it


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def _llama_points(req: pl.DataFrame) -> list[dict]:
    rows: list[dict] = []
    ok = req.filter(pl.col("prompt_tokens").is_not_null() & pl.col("prompt_ms").is_not_null()
                    & (pl.col("prompt_ms") > 0) & (pl.col("prompt_tokens") > 0))
    for r in ok.iter_rows(named=True):
        cached = max(int(r["cached_tokens"] or 0), 0)
        n = int(r["prompt_tokens"])
        secs = r["prompt_ms"] / 1000.0
        # the prompt ends when decode starts: release (or summary) time minus decode time
        t1 = r["t_end"]
        if t1 is not None and r.get("decode_ms"):
            t1 = t1 - r["decode_ms"] / 1000.0
        elif t1 is None and r["t_start"] is not None:
            t1 = r["t_start"] + secs
        rows.append(dict(file=r["file"], run=r["run"], slot=r["slot"], task=r["task"],
                         source="llama:request", exactness=EXACT, depth=cached + n / 2,
                         d0=float(cached), tokens=n, cached=cached, seconds=secs,
                         tps=r["prompt_tps"] if r["prompt_tps"] is not None else n / secs,
                         overhead=True, _t0=None if t1 is None else t1 - secs, _t1=t1,
                         t_rel=r["t_start"]))
    if "prefill_tick_list" not in req.columns:
        return _with_concurrency(req, rows)
    for r in req.filter(pl.col("prefill_tick_list").list.len() > 0).iter_rows(named=True):
        ticks = r["prefill_tick_list"]
        cached = r["cached_tokens"]
        if cached is None or cached < 0:
            cached = 0
        prev_pos = prev_t = None
        for k in ticks:
            if k.get("n_past") is not None:          # old lines: slot position, cache included
                pos = int(k["n_past"])
            elif k.get("n_processed") is not None:   # b9151+: computed so far, cache excluded
                pos = cached + int(k["n_processed"])
            else:
                continue
            t = k["t_rel"]
            first = prev_pos is None
            if first:
                if k.get("pp_seconds") and k.get("n_processed"):
                    # b9151+: the first line covers the prompt from its start
                    a, dt = cached, float(k["pp_seconds"])
                else:
                    prev_pos, prev_t = pos, t
                    continue
            else:
                a, dt = prev_pos, (t - prev_t) if t is not None and prev_t is not None else None
            dn = pos - a
            if dt and dt > 0 and dn > 0:
                rows.append(dict(file=r["file"], run=r["run"], slot=r["slot"], task=r["task"],
                                 source="llama:tick", exactness=TICK, depth=(a + pos) / 2,
                                 d0=float(a), tokens=dn, cached=cached, seconds=dt,
                                 tps=dn / dt, overhead=first,
                                 _t0=None if t is None else t - dt, _t1=t, t_rel=t))
            prev_pos, prev_t = pos, t
    return _with_concurrency(req, rows)


def _with_concurrency(req: pl.DataFrame, rows: list[dict]) -> list[dict]:
    """Fill ``concurrent``: other requests of the run in progress during each stretch.

    A request is in progress from its launch to its release ([t_start, t_end]); it shares a
    stretch [t0, t1] when the two overlap by more than ``OVERLAP_TOL`` seconds.
    """
    by_group: dict[tuple, list[dict]] = {}
    for r in rows:
        by_group.setdefault((r["file"], r["run"]), []).append(r)
    for (file, run), rs in by_group.items():
        g = req.filter((pl.col("file") == file) & (pl.col("run") == run)).drop_nulls(
            ["t_start", "t_end"])
        starts = np.sort(g["t_start"].to_numpy())
        ends = np.sort(g["t_end"].to_numpy())
        mine = {(s, t): (a, b) for s, t, a, b in g.select("slot", "task", "t_start", "t_end")
                .iter_rows()}
        for r in rs:
            if r["_t0"] is None or r["_t1"] is None:
                r["concurrent"] = None
                continue
            lo, hi = r["_t0"] + OVERLAP_TOL, r["_t1"] - OVERLAP_TOL
            if hi < lo:
                lo = hi = (r["_t0"] + r["_t1"]) / 2
            n = int(np.searchsorted(starts, hi, side="left")
                    - np.searchsorted(ends, lo, side="right"))
            own = mine.get((r["slot"], r["task"]))
            if own is not None and own[0] < hi and own[1] > lo:
                n -= 1
            r["concurrent"] = max(n, 0)
    # each request's prompt interval: its prompt eval, else its progress lines' span
    spans: dict[tuple, list[float]] = {}
    for r in rows:
        if r["_t0"] is None or r["_t1"] is None:
            continue
        k = (r["file"], r["run"], r["slot"], r["task"])
        if r["source"] == "llama:request":
            spans[k] = [r["_t0"], r["_t1"], 1.0]
        elif k not in spans or spans[k][2] == 0.0:
            lo, hi = spans.get(k, [r["_t0"], r["_t1"], 0.0])[:2]
            spans[k] = [min(lo, r["_t0"]), max(hi, r["_t1"]), 0.0]
    by_run: dict[tuple, list[tuple]] = {}
    for (f, run, slot, task), (a, b, _) in spans.items():
        by_run.setdefault((f, run), []).append((a, b, slot, task))
    # per run, the spans' starts and ends sorted: the spans a stretch (lo, hi) overlaps are
    # those starting before hi less those ending by lo (a span starts before it ends)
    sweep = {k: (np.sort([s[0] for s in v]), np.sort([s[1] for s in v]))
             for k, v in by_run.items()}
    for r in rows:
        if r["_t0"] is None or r["_t1"] is None:
            r["shared_prefill"] = None
        else:
            lo, hi = r["_t0"] + OVERLAP_TOL, r["_t1"] - OVERLAP_TOL
            key = (r["file"], r["run"])
            if lo < hi and key in sweep:
                starts, ends = sweep[key]
                n = int(np.searchsorted(starts, hi, side="left")
                        - np.searchsorted(ends, lo, side="right"))
                own = spans.get((*key, r["slot"], r["task"]))
                if own is not None and own[0] < hi and own[1] > lo:
                    n -= 1
                r["shared_prefill"] = n > 0
            else:   # a stretch shorter than the tolerance: each span tested
                r["shared_prefill"] = any(
                    a < hi and b > lo and (slot, task) != (r["slot"], r["task"])
                    for a, b, slot, task in by_run.get(key, []))
        r.pop("_t0", None)
        r.pop("_t1", None)
        r["shared"] = None if r.get("concurrent") is None else r["concurrent"] > 0
    return rows


def _sglang_points(logs) -> list[dict]:
    """SGLang chunks of chunked prompts (:func:`logscope.analysis.windows.prefill_points`)."""
    from logscope.analysis.windows import prefill_points

    pp = prefill_points(logs)
    return [dict(file=r["file"], run=r["run"], slot=None, task=None, source="sglang:batch",
                 exactness=WINDOW, depth=r["depth"], d0=float(r["depth_start"]),
                 tokens=r["tokens"], cached=r["depth_start"], seconds=r["seconds"],
                 tps=r["tps"], overhead=False, concurrent=0 if r["solo"] else 1,
                 shared=not r["solo"], shared_prefill=False, t_rel=None)
            for r in pp.iter_rows(named=True)]


def prefill_curve(logs, label: str | None = None) -> pl.DataFrame:
    """Prefill stretches (depth, d0, tokens, seconds, tps, overhead, shared) of one ingest.

    Example::

        pts = prefill_curve(logscope.read("server.log"))
        pts.filter(pl.col("source") == "llama:tick", ~pl.col("shared"))   # solo chunks
    """
    pts = remembered(logs, "prefill_curve", POINT_TABLES, lambda: _points(logs))
    return pts.with_columns(pl.lit(label_of(logs, label), pl.String).alias("label")) \
        if pts.height else pts


# what the stretches are read from (a report asks for them from several analyses)
POINT_TABLES = ("requests", "decode_batch", "prefill_batch", "engine_stats", "spec_decoding")


def _points(logs) -> pl.DataFrame:
    rows: list[dict] = []
    req = table(logs, "requests")
    if req is not None:
        rows += _llama_points(req)
    if table(logs, "prefill_batch") is not None:
        rows += _sglang_points(logs)
    if not rows:
        return _empty()
    return pl.DataFrame(rows, schema=SCHEMA).sort("source", "depth")


def slot_context(logs) -> int | None:
    """The slot's context size (``n_ctx_slot``) where the log prints it."""
    for name, c in (("requests", "n_ctx_slot"), ("server_info", "n_ctx_slot")):
        df = table(logs, name)
        if df is not None and c in df.columns:
            v = df[c].drop_nulls()
            if len(v):
                return int(v.max())
    return None


def _solve(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Least squares with every coefficient >= 0 (active set over the 3 columns)."""
    best, best_res = np.zeros(X.shape[1]), float(np.sum(y ** 2))
    k = X.shape[1]
    for m in range(k, 0, -1):
        for free in combinations(range(k), m):
            sub = X[:, free]
            if np.linalg.matrix_rank(sub) < m:
                continue
            coef, *_ = np.linalg.lstsq(sub, y, rcond=None)
            if np.any(coef < 0):
                continue
            full = np.zeros(k)
            full[list(free)] = coef
            res = float(np.sum((X @ full - y) ** 2))
            if res < best_res - 1e-18:
                best, best_res = full, res
    return best, best_res


def fit_prefill(points: pl.DataFrame, min_tokens: int = 64,
                sources: tuple[str, ...] | None = None, solo: bool | None = None,
                at: tuple[int, ...] | list[int] | None = None,
                n_ctx: int | None = None) -> dict:
    """Fit time(n, d0) = c + a·n + b·n·(d0 + n/2) to prefill stretches.

    Each stretch is one equation; the overhead c enters only those with ``overhead`` (whole
    prompts and the first progress line). Least squares on *relative* time (each equation
    divided by its measured seconds), with c, a, b >= 0. Stretches of requests with fewer
    than ``min_tokens`` computed tokens are left out (a 1-token cache hit measures nothing
    but the overhead); chunks between progress lines are always kept.

    ``solo``: True fits only stretches no other request shared, False all of them; None (the
    default) uses the solo ones when there are more of them than parameters (>= 4) over a
    spread of depths, else those during which no other prompt was computed (other slots
    only decoding), else all, saying which in ``basis``. ``at`` lists the depths
    to predict (default 4k, 16k, 32k, 64k, 128k); a prediction is given only inside the
    measured depths (×1.25 at most either way) and below ``n_ctx`` (the slot's context),
    else None with the reason in ``refused``.

    Returns ``{"c", "a", "b", "c_ms", "r2", "n", "n_solo", "n_shared", "basis", "sources",
    "depth_range", "predict": {depth: t/s}, "ttft": {depth: s for a fresh prompt},
    "extrapolated": {depth: bool}, "refused": {depth: reason}, "valid", "reason"}``.

    Example::

        fit = fit_prefill(prefill_curve(logs), at=(4096, 49152))
        fit["predict"][49152], fit["c_ms"], fit["r2"]
    """
    at = tuple(int(x) for x in (at or PREDICT_AT))
    p = points.filter(pl.col("seconds") > 0, pl.col("tokens") > 0,
                      (pl.col("source") != "llama:request") | (pl.col("tokens") >= min_tokens))
    if sources:
        p = p.filter(pl.col("source").is_in(list(sources)))
    if "shared" not in p.columns:   # points from an older frame
        p = p.with_columns(shared=pl.col("concurrent").fill_null(0) > 0
                           if "concurrent" in p.columns else pl.lit(False))
    if "d0" not in p.columns:
        p = p.with_columns(d0=pl.col("depth") - pl.col("tokens") / 2)
    if "overhead" not in p.columns:
        p = p.with_columns(overhead=pl.col("source") == "llama:request")
    if "shared_prefill" not in p.columns:
        p = p.with_columns(shared_prefill=pl.col("shared"))
    alone = p.filter(~pl.col("shared").fill_null(False))
    beside_decode = p.filter(~pl.col("shared_prefill").fill_null(False))
    n_solo, n_shared = alone.height, p.height - alone.height

    def spread(df):
        return (df.height >= 4 and df["depth"].n_unique() >= 2
                and float(df["depth"].max()) - float(df["depth"].min())
                >= 0.25 * float(df["depth"].max()))

    if solo is True or (solo is None and spread(alone)):
        p, basis = alone, "solo"
    elif solo is None and spread(beside_decode) and beside_decode.height < p.height:
        # no prompt shared the GPU with another prompt; other slots only decoded
        p, basis = beside_decode, "no other prompt (other slots decoding)"
    else:
        basis = "all (shared included)" if n_shared else "solo"
    out = {"c": None, "a": None, "b": None, "c_ms": None, "r2": None, "n": p.height,
           "n_solo": n_solo, "n_shared": n_shared, "basis": basis, "valid": False,
           "depth_range": (float(p["d0"].min()), float((p["d0"] + p["tokens"]).max()))
           if p.height else None,
           "sources": sorted(set(p["source"].to_list())) if p.height else [],
           "min_tokens": min_tokens, "reason": None, "n_ctx": n_ctx,
           "predict": {d: None for d in at}, "ttft": {d: None for d in at},
           "extrapolated": {d: None for d in at}, "refused": {d: None for d in at}}
    if not spread(p):
        out["reason"] = (f"{p.height} stretch(es) over depths too close together to fit how "
                         "prefill slows with depth" if p.height >= 4 else
                         f"{p.height} prefill stretch(es): too few to fit")
        return out
    n = p["tokens"].to_numpy().astype(float)
    d0 = p["d0"].to_numpy().astype(float)
    T = p["seconds"].to_numpy().astype(float)
    ovh = p["overhead"].fill_null(False).to_numpy().astype(float)
    X = np.stack([ovh, n, n * (d0 + n / 2)], axis=1)
    coef, _ = _solve(X / T[:, None], np.ones_like(T))
    c, a, b = (float(x) for x in coef)
    # r²: of the seconds per token, weighted by tokens (how well it explains the rates)
    y = T / n
    yhat = (X @ coef) / n
    ybar = np.average(y, weights=n)
    ss_tot = float(np.sum(n * (y - ybar) ** 2))
    r2 = 1 - float(np.sum(n * (y - yhat) ** 2)) / ss_tot if ss_tot > 0 else None
    out.update(c=c, a=a, b=b, c_ms=c * 1000, r2=r2)
    lo, hi = out["depth_range"]
    if a + b * hi <= 0:
        out["reason"] = "the fit gives no positive time per token over the measured depths"
        return out
    out.update(valid=True)
    for d in at:
        if n_ctx and d > n_ctx:
            out["refused"][d] = f"beyond the slot's context, {n_ctx:,} tokens"
        elif d > hi * EXTRAPOLATE or d < lo / EXTRAPOLATE:
            out["refused"][d] = (f"outside the measured depths {lo:,.0f}–{hi:,.0f} "
                                 f"(×{EXTRAPOLATE} at most)")
        else:
            out["predict"][d] = predict(a, b, d)
            out["ttft"][d] = c + a * d + b * d * d / 2 if lo <= 1 else None
            out["extrapolated"][d] = not (lo <= d <= hi)
    return out


def predict(a: float, b: float, depth: float) -> float | None:
    """Marginal prefill t/s at ``depth``: 1 / (a + b·depth) (None where it is not positive)."""
    t = float(a) + float(b) * depth
    return 1.0 / t if t > 0 and math.isfinite(t) else None
