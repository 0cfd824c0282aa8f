"""Prefill speed against context depth, and a physical fit.

``prefill_curve(logs)`` returns one row per measured point:

===============  =======================================================================
column           meaning
===============  =======================================================================
file, run        where the point comes from
slot, task       llama-server request (null for SGLang batches)
source           ``llama:request`` | ``llama:tick`` | ``sglang:batch``
exactness        ``exact per request`` | ``tick interval`` | ``server window average``
depth            context depth (tokens) at the middle of the measured stretch
tokens           tokens *computed* in the stretch (cache hits never count)
cached           cached prefix of the request (or batch) when the stretch started
seconds          time the stretch took
tps              tokens / seconds
concurrent       other requests active at the same time (llama-server; a shared GPU)
===============  =======================================================================

* ``llama:request``: llama-server's own ``prompt eval time = … ms / N tokens`` per request
  (exact); depth = cached + N/2, the midpoint of cached..cached+N.
* ``llama:tick``: the rate between two consecutive ``prompt processing`` progress lines of
  one request, from the server clock (µs); depth = cached + tokens processed so far at the
  middle of the interval. With the b9151+ line (printed once the prompt has taken >= 3 s),
  the first interval runs from the start of the prompt (its ``t =`` seconds). The older lines
  (``n_past = …``) give the slot position directly.
* ``sglang:batch``: a ``Prefill batch`` line: ``#new-token`` computed on top of
  ``#cached-token`` over ``#new-seq`` sequences; depth = (cached + new/2) / new-seq, rate =
  the line's ``input throughput`` (a window average since the previous log line).

vLLM's stats lines carry a prompt throughput but no depth, so they give no point here.

``fit_prefill(points)`` fits time per token linear in depth, t(d) = a + b·d (so
rate(d) = 1 / (a + b·d)), by least squares on seconds-per-token weighted by tokens. By default
it uses the exact per-request points (and SGLang batches) when there are at least 3 spread
over depth, else all points including tick intervals.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from logscope.analysis._util import EXACT, TICK, WINDOW, active_at, col, label_of, table

SCHEMA = {
    "label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
    "source": pl.String, "exactness": pl.String, "depth": pl.Float64, "tokens": pl.Int64,
    "cached": pl.Int64, "seconds": pl.Float64, "tps": pl.Float64, "concurrent": pl.Int64,
    "t_rel": pl.Float64,
}

PREDICT_AT = (4096, 16384, 65536, 131072)


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
        t_mid = (r["t_start"] or 0.0) + secs / 2
        rows.append(dict(file=r["file"], run=r["run"], slot=r["slot"], task=r["task"],
                         source="llama:request", exactness=EXACT, depth=cached + n / 2,
                         tokens=n, cached=cached, seconds=secs,
                         tps=r["prompt_tps"] if r["prompt_tps"] is not None else n / secs,
                         concurrent=None, _t=t_mid, _self=r["t_start"] is not None
                         and r["t_end"] is not None, t_rel=r["t_start"]))
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
            if prev_pos is None:
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
                                 tokens=dn, cached=cached, seconds=dt, tps=dn / dt,
                                 concurrent=None, _t=(t or 0.0) - dt / 2,
                                 _self=r["t_start"] is not None and r["t_end"] is not None,
                                 t_rel=t))
            prev_pos, prev_t = pos, t
    return _with_concurrency(req, rows)


def _with_concurrency(req: pl.DataFrame, rows: list[dict]) -> list[dict]:
    """Fill ``concurrent``: other requests in progress at each point's middle time."""
    by_group: dict[tuple, list[dict]] = {}
    for r in rows:
        by_group.setdefault((r["file"], r["run"]), []).append(r)
    for (file, run), rs in by_group.items():
        counts = active_at(req, file, run, [r["_t"] for r in rs])
        for r, c in zip(rs, counts, strict=True):
            # the request itself is in progress at its own time, unless it has no times
            inside = r["_self"] and r["_t"] is not None
            r["concurrent"] = max(int(c) - (1 if inside else 0), 0)
    for r in rows:
        r.pop("_t", None)
        r.pop("_self", None)
    return rows


def _sglang_points(pb: pl.DataFrame) -> list[dict]:
    new = col(pb, "new_token")
    cached = col(pb, "cached_token")
    seqs = col(pb, "new_seq")
    thr = col(pb, "input_throughput")
    if new is None or thr is None:
        return []
    rows = []
    for r in pb.iter_rows(named=True):
        n, tps = r[new], r[thr]
        if not n or not tps or tps <= 0:
            continue
        c = int(r[cached] or 0) if cached else 0
        s = max(int(r[seqs] or 1), 1) if seqs else 1
        rows.append(dict(file=r.get("file"), run=r.get("run"), slot=None, task=None,
                         source="sglang:batch", exactness=WINDOW, depth=(c + n / 2) / s,
                         tokens=int(n), cached=c, seconds=n / tps, tps=float(tps),
                         concurrent=None, t_rel=r.get("t_rel")))
    return rows


def prefill_curve(logs, label: str | None = None) -> pl.DataFrame:
    """Prefill points (depth, tokens, seconds, tps, source, exactness) of one ingest.

    Example::

        pts = prefill_curve(logscope.read("server.log"))
        pts.filter(pl.col("source") == "llama:request")
    """
    rows: list[dict] = []
    req = table(logs, "requests")
    if req is not None:
        rows += _llama_points(req)
    pb = table(logs, "prefill_batch")
    if pb is not None:
        rows += _sglang_points(pb)
    lab = label_of(logs, label)
    if not rows:
        return _empty()
    for r in rows:
        r["label"] = lab
    return pl.DataFrame(rows, schema=SCHEMA).sort("source", "depth")


def fit_prefill(points: pl.DataFrame, min_tokens: int = 64,
                sources: tuple[str, ...] | None = None) -> dict:
    """Fit seconds-per-token = a + b·depth (rate(d) = 1 / (a + b·d)) to prefill points.

    Weighted least squares (weight = tokens computed), over points with at least
    ``min_tokens`` tokens (tiny prompts are dominated by fixed overhead) and, if given, only
    the ``sources`` listed. Returns ``{"a", "b", "n", "sources", "r2", "predict": {depth: t/s},
    "extrapolated": {depth: bool}, "depth_range": (lo, hi), "valid", "reason"}``; a prediction
    is ``extrapolated`` when its depth lies outside the fitted points' depths (±10 %);
    ``valid`` is False (with a ``reason``) when the points cannot pin a slope.

    Example::

        fit = fit_prefill(prefill_curve(logs))
        fit["predict"][65536]   # predicted prefill t/s at 64k depth
    """
    p = points.filter(pl.col("tokens") >= min_tokens, pl.col("seconds") > 0)
    if sources:
        p = p.filter(pl.col("source").is_in(list(sources)))
    else:
        # default: the per-request / per-batch points when they are enough (>= 3 points over
        # a spread of depths); tick intervals of concurrent requests share the GPU with
        # other slots, so they only fill in when the log has too few requests.
        best = p.filter(pl.col("source") != "llama:tick")
        if best.height >= 3 and best["depth"].max() >= 1.33 * best["depth"].min():
            p = best
    out = {"a": None, "b": None, "n": p.height, "r2": None, "valid": False,
           "depth_range": (float(p["depth"].min()), float(p["depth"].max())) if p.height
           else None, "extrapolated": {d: None for d in PREDICT_AT},
           "sources": sorted(set(p["source"].to_list())) if p.height else [],
           "min_tokens": min_tokens, "reason": None,
           "predict": {d: None for d in PREDICT_AT}}
    if p.height < 2 or p["depth"].n_unique() < 2:
        out["reason"] = f"{p.height} point(s) with >= {min_tokens} tokens: too few to fit"
        return out
    lo, hi = float(p["depth"].min()), float(p["depth"].max())
    if hi - lo < 0.25 * hi:
        out["reason"] = f"depths {lo:.0f}..{hi:.0f} too close together to fit a slope"
        return out
    d = p["depth"].to_numpy().astype(float)
    y = (p["seconds"] / p["tokens"]).to_numpy().astype(float)
    w = p["tokens"].to_numpy().astype(float)
    sw = np.sqrt(w)
    A = np.stack([np.ones_like(d), d], axis=1) * sw[:, None]
    (a, b), *_ = np.linalg.lstsq(A, y * sw, rcond=None)
    yhat = a + b * d
    ybar = np.average(y, weights=w)
    ss_tot = float(np.sum(w * (y - ybar) ** 2))
    r2 = 1 - float(np.sum(w * (y - yhat) ** 2)) / ss_tot if ss_tot > 0 else None
    if a <= 0 or a + b * hi <= 0:
        out.update(a=float(a), b=float(b), r2=r2,
                   reason="fit gives no positive time per token over the observed depths")
        return out
    out.update(a=float(a), b=float(b), r2=r2, valid=True, reason=None,
               predict={dd: predict(a, b, dd) for dd in PREDICT_AT},
               extrapolated={dd: not (lo / 1.1 <= dd <= hi * 1.1) for dd in PREDICT_AT})
    return out


def predict(a: float, b: float, depth: float) -> float | None:
    """Prefill t/s at ``depth`` from the fit (None where the model gives no positive time)."""
    t = float(a) + float(b) * depth
    return 1.0 / t if t > 0 and math.isfinite(t) else None
