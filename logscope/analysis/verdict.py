"""The verdict of an A/B comparison: per question, B against A, by how much, how sure.

:func:`verdict` answers, for two series (logs of config A and config B):

* ``trade``: both sides of the concurrency trade in one sentence, from the next two rows:
  B's served throughput and its speed per stream as served, against A's ("B: 1.92× the
  throughput at 0.49× the speed per stream"); where the two point different ways neither run
  is called simply faster.
* ``throughput``: served throughput (:func:`logscope.analysis.served.served`: completion
  tokens ÷ the span from first arrival to last response); the interval resamples ``BLOCKS``
  equal stretches of each run's span; the sentence says where the span's difference went
  (decode, prefill, stalls, idle) from the states' seconds.
* ``decode_per_stream``: one stream's decode t/s in matched concurrency states. Units:
  llama-server requests (exact per request), each in the stratum of the state it decoded in
  most (:func:`logscope.analysis.concurrency.request_concurrency`) and the octave of its depth
  at decode start (decode slows with depth: 170 t/s shallow against 5–20 t/s at 16k on the CPU
  runs); SGLang/vLLM window intervals by state (per stream, weighted by seconds). Per stratum
  seen on both sides, the ratio of the medians; the strata's log-ratios are averaged weighted
  by the smaller side's count, so a run that happened to be more concurrent, or deeper, is not
  called slower. ``a`` and ``b`` are the medians over the matched units. When the two runs
  serve different numbers of streams (slots, or the most streams seen decoding, differ) no state
  is a fair match: the per-stream speed each run's requests got as served (the median of their
  exact rates, unstratified) is compared instead, and the sentence says so.
* ``decode_aggregate``: the decode rate *while* k streams decode (all tokens decoded ÷ seconds in
  the most concurrent state both reached, nothing prefilling), from
  :func:`logscope.analysis.concurrency.decode_samples`; named as such, never as throughput.
* ``prefill``: solo prefill stretches (chunks between progress lines, whole prompts, SGLang
  prefill intervals) in half-octave depth buckets both sides measured; per bucket the ratio of
  the medians, weighted like decode.
* ``acceptance`` and ``mean_accepted_length``: pooled accepted ÷ drafted and tokens ÷ steps.
* ``energy_per_token``: decode joules per generated token (telemetry given); lower is better.
* ``energy_per_token_run``: joules per completion token over the whole run (telemetry given:
  power integrated from the first request's arrival to the last response, idle and stalls
  included, ÷ every completion token); units are the requests, each carrying its own energy
  and a share of the idle energy in proportion to it, so the pooled ratio is the whole-run
  figure and the interval resamples the requests; lower is better.
* ``stalls``: the mean wait of a request between launch and its prompt's compute (prompt-cache
  saves and loads, a blocked server loop); lower is better.

Each answer carries the two values, ``n`` (units per side), the ratio B/A, a 95 % bootstrap
interval (units resampled within their state or bucket on each side, ``REPS`` times, seeded:
the same input gives the same interval) and a plain sentence. Fewer than ``MIN_N`` units on a
side gives no verdict, with the reason.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from logscope.analysis._util import label_of, table
from logscope.analysis.concurrency import weighted_median

QUESTIONS = ("trade", "throughput", "decode_per_stream", "decode_aggregate", "prefill",
             "acceptance", "mean_accepted_length", "energy_per_token", "energy_per_token_run",
             "stalls")
MIN_N = 3
REPS = 2000
SEED = 20261205
MIN_PREFILL_TOKENS = 64
DEPTH_STRATA = 100   # a decode stratum is (streams decoding, depth octave at decode start)


def _depth_index(depth: pl.Expr) -> pl.Expr:
    """The octave of a context depth (below 512 tokens: 0), a decode stratum's second half."""
    return (depth.clip(lower_bound=256).log(2) - 8).floor().cast(pl.Int64)


# ---------------------------------------------------------------------------------------------
# units: (stratum, value, weight) per side
# ---------------------------------------------------------------------------------------------

def _decode_units(logs) -> tuple[pl.DataFrame, str]:
    """Per-stream decode units: stratum = decoding streams, value = t/s, weight."""
    from logscope.analysis.concurrency import decode_samples, request_concurrency
    from logscope.analysis.metrics import MIN_DECODE_TOKENS

    rc = request_concurrency(logs).filter(pl.col("gen_tokens") >= MIN_DECODE_TOKENS,
                                          pl.col("decode_tps").is_not_null(),
                                          pl.col("decoding").is_not_null())
    if rc.height:
        req = table(logs, "requests").select(
            pl.col("file").cast(pl.String), "run", "slot", "task",
            (pl.col("cached_tokens").clip(lower_bound=0).fill_null(0)
             + pl.col("prompt_tokens").fill_null(0)).alias("_depth"))
        rc = rc.join(req.cast({"run": pl.Int32}), on=["file", "run", "slot", "task"],
                     how="left")
        return rc.select((pl.col("decoding").cast(pl.Int64) * DEPTH_STRATA
                          + _depth_index(pl.col("_depth"))).alias("stratum"),
                         pl.col("decode_tps").alias("value"),
                         pl.lit(1.0).alias("weight")), "requests"
    w = decode_samples(logs).filter(pl.col("flag").is_null(), pl.col("tps") > 0,
                                    pl.col("unit") == "window")
    return w.select(pl.col("decoding").cast(pl.Int64).alias("stratum"),
                    pl.col("tps").alias("value"), pl.col("seconds").alias("weight")), "windows"


def _prefill_units(logs) -> pl.DataFrame:
    from logscope.analysis.depth import _bucket_expr
    from logscope.analysis.prefill import prefill_curve

    pts = prefill_curve(logs)
    if pts.height:
        pts = pts.filter(~pl.col("shared").fill_null(False), pl.col("tokens") >= 64,
                         pl.col("seconds") > 0)
    lo, _ = _bucket_expr(pl.col("depth"), None)
    return pts.select(lo.alias("stratum"), pl.col("tps").alias("value"),
                      pl.lit(1.0).alias("weight"))


# ---------------------------------------------------------------------------------------------
# estimators and the bootstrap
# ---------------------------------------------------------------------------------------------

def _strata(df: pl.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return {int(k[0]): (g["value"].to_numpy(), g["weight"].to_numpy())
            for k, g in df.group_by("stratum")}


def _matched_ratio(a: pl.DataFrame, b: pl.DataFrame, rng: np.random.Generator
                   ) -> dict | None:
    """Stratified ratio of medians B/A, its bootstrap interval, and the pooled medians."""
    sa, sb = _strata(a), _strata(b)
    common = sorted(set(sa) & set(sb))
    if not common:
        return None
    wts = np.array([min(len(sa[k][0]), len(sb[k][0])) for k in common], dtype=float)
    na = int(sum(len(sa[k][0]) for k in common))
    nb = int(sum(len(sb[k][0]) for k in common))

    def est(pa, pb):
        lr = [math.log(weighted_median(*pb[k]) / weighted_median(*pa[k])) for k in common]
        return math.exp(float(np.dot(wts, lr) / wts.sum()))

    ratio = est(sa, sb)
    boots = []
    for _ in range(REPS):
        ra, rb = {}, {}
        for k in common:
            for src, dst in ((sa, ra), (sb, rb)):
                v, w = src[k]
                i = rng.integers(0, len(v), len(v))
                dst[k] = (v[i], w[i])
        boots.append(est(ra, rb))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    va = weighted_median(np.concatenate([sa[k][0] for k in common]),
                  np.concatenate([sa[k][1] for k in common]))
    vb = weighted_median(np.concatenate([sb[k][0] for k in common]),
                  np.concatenate([sb[k][1] for k in common]))
    return {"a": va, "b": vb, "ratio": ratio, "ci95": [float(lo), float(hi)], "n": [na, nb],
            "strata": common}


def _pooled_ratio(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                  rng: np.random.Generator) -> dict:
    """Ratio of pooled Σnum/Σden between sides, bootstrap over units."""
    def val(num, den):
        return float(num.sum() / den.sum()) if den.sum() > 0 else float("nan")
    va, vb = val(*a), val(*b)
    boots = []
    for _ in range(REPS):
        ia = rng.integers(0, len(a[0]), len(a[0]))
        ib = rng.integers(0, len(b[0]), len(b[0]))
        x, y = val(a[0][ia], a[1][ia]), val(b[0][ib], b[1][ib])
        if x > 0 and math.isfinite(y):
            boots.append(y / x)
    ci = [float(v) for v in np.percentile(boots, [2.5, 97.5])] if boots else None
    return {"a": va, "b": vb, "ratio": vb / va if va > 0 else None, "ci95": ci,
            "n": [len(a[0]), len(b[0])]}


# ---------------------------------------------------------------------------------------------
# the sentences
# ---------------------------------------------------------------------------------------------

def _ci_text(r: dict) -> str:
    ci = r.get("ci95")
    ci_s = f"95 % CI {ci[0]:.2f}–{ci[1]:.2f}, " if ci else ""
    return f"({ci_s}n {r['n'][0]}/{r['n'][1]}{r.get('matched', '')})"


def _sentence(q: str, r: dict, names: tuple[str, str], what: str,
              lower_is_better: bool = False) -> str:
    a, b = names
    ratio, ci = r["ratio"], r.get("ci95")
    if ratio is None or not math.isfinite(ratio):
        return f"{what}: no verdict ({r.get('why', 'no ratio')})"
    if ci and ci[0] <= 1 <= ci[1]:
        return (f"{what}: no clear difference between {b} and {a} (ratio {ratio:.2f}, "
                + _ci_text(r)[1:])
    better = ratio < 1 if lower_is_better else ratio > 1
    if q == "decode_aggregate":
        k = r.get("k")
        if ratio >= 1:
            return (f"while {k} streams decode, {b}'s decode rate is {ratio:.2f}× {a}'s (the rate "
                    f"while they decode, not throughput) " + _ci_text(r))
        return (f"while {k} streams decode, {a}'s decode rate is {1 / ratio:.2f}× {b}'s (the "
                f"rate while they decode, not throughput; ratio {ratio:.2f}, "
                + _ci_text(r)[1:])
    if q == "throughput":
        more, less = (b, a) if ratio >= 1 else (a, b)
        x = ratio if ratio >= 1 else 1 / ratio
        tail = f"; {r['where']}" if r.get("where") else ""
        return (f"{more} serves {x:.2f}× the throughput of {less} (completion tokens ÷ served "
                f"span; ratio {ratio:.2f}, " + _ci_text(r)[1:] + tail)
    if q in ("decode_per_stream", "prefill"):
        verb = {"decode_per_stream": "decodes", "prefill": "prefills"}[q]
        tail = {"decode_per_stream": r.get("tail", " per stream"), "prefill": ""}[q]
        if ratio >= 1:
            return f"{b} {verb} {ratio:.2f}× faster{tail} than {a} " + _ci_text(r)
        return f"{a} {verb} {1 / ratio:.2f}× faster{tail} than {b} (ratio {ratio:.2f}, " \
            + _ci_text(r)[1:]
    word = "better" if better else "worse"
    return f"{what}: {b} {word} than {a}, ratio {ratio:.2f} " + _ci_text(r)


def _row(q: str, r: dict | None, names: tuple[str, str], what: str, why: str = "",
         lower_is_better: bool = False) -> dict:
    if r is None:
        return {"question": q, "a": None, "b": None, "ratio": None, "ci95": None,
                "n": [0, 0], "sentence": f"{what}: no verdict ({why})"}
    if min(r["n"]) < MIN_N:
        return {"question": q, "a": r["a"], "b": r["b"], "ratio": None, "ci95": None,
                "n": r["n"], "sentence": f"{what}: no verdict (n {r['n'][0]}/{r['n'][1]}: "
                f"fewer than {MIN_N} on a side)"}
    out = {"question": q, "a": r["a"], "b": r["b"], "ratio": r["ratio"], "ci95": r["ci95"],
           "n": r["n"]}
    out["sentence"] = _sentence(q, r, names, what, lower_is_better)
    return out


# ---------------------------------------------------------------------------------------------
# the questions
# ---------------------------------------------------------------------------------------------

def _window_decode(a, b, names, rng) -> dict | None:
    """SGLang/vLLM: the fitted per-stream decode (:mod:`logscope.analysis.window_fit`).
    States identified on both sides: the clean per-stream ratio, states weighted by the
    smaller side's intervals; none: each run's stream as served over its own states (tokens ÷
    stream-seconds). The interval pairs the two sides' window resamples."""
    from logscope.analysis.window_fit import state_fit, state_fit_replicates
    fa, fb = state_fit(a), state_fit(b)
    ra, rb = state_fit_replicates(a), state_fit_replicates(b)
    if ra is None or rb is None or fa.height == 0 or fb.height == 0:
        return None
    ok_a = {r["decoding"]: r["windows"] for r in fa.iter_rows(named=True) if not r["reason"]}
    ok_b = {r["decoding"]: r["windows"] for r in fb.iter_rows(named=True) if not r["reason"]}
    common = sorted(set(ok_a) & set(ok_b))
    n = min(len(ra[2]), len(rb[2]))
    if common:
        ia = [ra[0].index(k) for k in common]
        ib = [rb[0].index(k) for k in common]
        wts = np.array([min(ok_a[k], ok_b[k]) for k in common], float)

        def est(xa, xb):
            return float(np.exp(np.dot(wts, np.log(xb[ib, 0] / xa[ia, 0])) / wts.sum()))
        va = float(np.average(ra[1][ia, 0], weights=wts))
        vb = float(np.average(rb[1][ib, 0], weights=wts))
        how = "clean per stream (the decode steps alone)"
        units = [int(sum(ok_a[k] for k in common)), int(sum(ok_b[k] for k in common))]
    else:
        from logscope.analysis.window_fit import served_units
        why = "; ".join(sorted({r.split(":")[0] + ": not identified"
                                for r in fa["reason"].to_list() + fb["reason"].to_list()
                                if r}))
        how = ("as served over each run's own states: no state identified on both sides "
               f"({why})")
        units = [int(fa["windows"].sum()), int(fb["windows"].sum())]
        ia = ib = []
        if "vllm" in (fa["engine"][0], fb["engine"][0]):
            # vLLM: the fit's shares are no better than its terms: straight from the lines
            r = _pooled_ratio(served_units(a), served_units(b), rng)
            r.update(strata=[], weights=[], matched=(
                f"; {how}, straight from the lines{_one_stream_bounds(names, fa, fb)} "
                "(VLLM_LOG_STATS_INTERVAL=1 in the server's environment gives intervals that "
                "each hold one state)"))
            return r

        def run(x, ks):   # tokens ÷ stream-seconds over the run's states
            k = np.array(ks, float)
            with np.errstate(invalid="ignore", divide="ignore"):
                return float((x[:, 2] * x[:, 3]).sum() / (k * x[:, 3]).sum())

        def est(xa, xb):
            return run(xb, rb[0]) / run(xa, ra[0])
        va, vb = run(ra[1], ra[0]), run(rb[1], rb[0])
    ratio = est(ra[1], rb[1])
    with np.errstate(invalid="ignore", divide="ignore"):   # a resample that could not fit
        boots = [est(ra[2][i], rb[2][i]) for i in range(n)]
    boots = [x for x in boots if math.isfinite(x)]
    ci = [float(x) for x in np.percentile(boots, [2.5, 97.5])] if boots else None
    return {"a": va, "b": vb, "ratio": ratio, "ci95": ci, "n": units, "strata": common,
            "matched": f"; {how}" + (f", states {common[0]}–{common[-1]} decoding"
                                     if common else ""),
            "weights": [float(min(ok_a[k], ok_b[k])) for k in common]}


def _one_stream_bounds(names: tuple[str, str], fa: pl.DataFrame, fb: pl.DataFrame) -> str:
    """A vLLM side that never shows two requests running: every interval holding a turn's
    prompt also holds the idle before it, which the lines count as decoding, so that side's
    figure is a lower bound (``state_fit``'s ``busiest_per_stream`` is set only there)."""
    out = []
    for name, f in zip(names, (fa, fb), strict=True):
        x = f.get_column("busiest_per_stream").drop_nulls()
        if x.len():
            out.append(f"; {name} never runs two requests, so the idle before each turn's "
                       f"prompt counts as decoding there: its figure is a lower bound (its "
                       f"busiest interval: at least {float(x.max()):.1f} t/s)")
    return "".join(out)


def _streams_differ(a, b) -> tuple[int | None, int | None] | None:
    """(streams of A, of B) when the runs serve different numbers of streams, else None."""
    from logscope.analysis.served import served
    sa, sb = served(a), served(b)
    ka = sa["slots"] or sa["max_streams"]
    kb = sb["slots"] or sb["max_streams"]
    if ka and kb and ka != kb:
        return ka, kb
    if sa["max_streams"] and sb["max_streams"] and sa["max_streams"] != sb["max_streams"]:
        return sa["max_streams"], sb["max_streams"]
    return None


EXACT_RATES = "every request's exact rate"


def _as_served(lg) -> tuple[pl.DataFrame, str]:
    """(units, what they are) of a run's per-stream decode as served."""
    from logscope.analysis.served import REQUEST_RATES, _per_stream_units
    v, w, src = _per_stream_units(lg)
    what = EXACT_RATES if src == REQUEST_RATES else "the window intervals' per-stream rates"
    return (pl.DataFrame({"stratum": np.zeros(len(v), dtype=np.int64), "value": v,
                          "weight": w}), what)


def _decode_per_stream_served(a, b, names, rng, ks) -> dict:
    """Each run's per-stream decode as served, when states cannot be matched: the runs serve
    different numbers of streams (``ks``), or one log gives per-request figures and the other
    window lines (``ks`` None)."""
    what = "decode per stream as served"
    (ua, wa), (ub, wb) = _as_served(a), _as_served(b)
    if ua.height == 0 or ub.height == 0:
        return _row("decode_per_stream", None, names, what,
                    "no decode figures on " + (names[0] if ua.height == 0 else names[1]))
    r = _matched_ratio(ua, ub, rng)
    head = (f"{ks[0]} against {ks[1]} streams" if ks else
            "no state matched (one log gives per-request figures, the other window lines)")
    basis = wa if wa == wb else f"{wa} on {names[0]} against {wb} on {names[1]}"
    r["matched"] = f"; as served: {head}, {basis}, stalls and other slots' prefill included"
    r["tail"] = " per stream as served"
    row = _row("decode_per_stream", r, names, what)
    row["units"] = "requests as served" if wa == wb == EXACT_RATES else "as served"
    return row


def _step_decode(a, b, names, rng) -> dict | None:
    """vLLM's step lines on both sides: one stream's t/s per step, matched by streams
    decoding (:mod:`logscope.analysis.iterations`); None where they share no count."""
    from logscope.analysis.iterations import step_units

    sa, sb = step_units(a), step_units(b)
    if sa.height == 0 or sb.height == 0:
        return None
    r = _matched_ratio(sa, sb, rng)
    if r is None:
        return None
    ks = r["strata"]
    span = f"{ks[0]}" if len(ks) == 1 else f"{ks[0]}–{ks[-1]}"
    r["matched"] = f"; matched states: {span} decoding, from vLLM's step lines (exact per step)"
    row = _row("decode_per_stream", r, names, "decode per stream")
    row["states"] = [f"{k} decoding" for k in ks]
    row["units"] = "steps"
    return row


def _decode_per_stream(a, b, names, rng) -> dict:
    what = "decode per stream"
    # per-step lines beat any window (with different slot counts, per stream is as served)
    steps = _step_decode(a, b, names, rng) if _streams_differ(a, b) is None else None
    if steps is not None:
        return steps
    (ua, ka), (ub, kb) = _decode_units(a), _decode_units(b)
    if ka == kb == "windows":   # SGLang/vLLM: the window fit, states matched or as served
        r = _window_decode(a, b, names, rng)
        if r is not None:
            row = _row("decode_per_stream", r, names, what)
            row["states"] = [f"{k} decoding" for k in r["strata"]]
            row["units"] = "window fit"
            row["weights"] = r["weights"]
            return row
    ks = _streams_differ(a, b)
    if ks is not None or ka != kb:
        return _decode_per_stream_served(a, b, names, rng, ks)
    if ua.height == 0 or ub.height == 0:
        return _row("decode_per_stream", None, names, what,
                    "no decode figures on " + (names[0] if ua.height == 0 else names[1]))
    r = _matched_ratio(ua, ub, rng)
    if r is None:
        return _row("decode_per_stream", None, names, what,
                    "no concurrency state seen on both sides")
    ks = sorted({k // DEPTH_STRATA for k in r["strata"]}) if ka == "requests" else r["strata"]
    span = f"{ks[0]}" if len(ks) == 1 else f"{ks[0]}–{ks[-1]}"
    r["matched"] = f"; matched states: {span} decoding" + (
        ", by depth octave" if ka == "requests" else "")
    row = _row("decode_per_stream", r, names, what)
    row["states"] = [f"{k} decoding" for k in ks]
    row["units"] = ka if ka == kb else f"{ka} / {kb}"
    return row


def _decode_aggregate(a, b, names, rng) -> dict:
    from logscope.analysis.concurrency import decode_samples
    what = "decode rate while k streams decode"

    def units(lg):
        s = decode_samples(lg).filter(pl.col("prefilling") == 0, pl.col("seconds") > 0)
        # state seconds: a request piece's seconds are the state's; k pieces share them
        return s.with_columns(pl.when(pl.col("unit") == "request")
                              .then(pl.col("seconds") / pl.col("decoding"))
                              .otherwise(pl.col("seconds")).alias("_state_s"))
    fitted = _window_aggregate(a, b, names)
    if fitted is not None and fitted.get("ratio") is not None:
        return fitted
    if fitted is not None:   # window logs: a raw interval mixes states; the fit's reason
        return _row("decode_aggregate", None, names, what, fitted["why"])
    sa, sb = units(a), units(b)
    common = set(sa["decoding"].to_list()) & set(sb["decoding"].to_list())
    common.discard(1)
    if not common:
        return _row("decode_aggregate", None, names, what,
                    "no state with 2 or more streams decoding on both sides")
    k = max(common)
    ga, gb = sa.filter(pl.col("decoding") == k), sb.filter(pl.col("decoding") == k)
    r = _pooled_ratio((ga["tokens"].to_numpy(), ga["_state_s"].to_numpy()),
                      (gb["tokens"].to_numpy(), gb["_state_s"].to_numpy()), rng)
    r["k"] = k
    row = _row("decode_aggregate", r, names, f"decode rate while {k} streams decode")
    row["states"] = [f"{k} decoding"]
    return row


def _window_aggregate(a, b, names) -> dict | None:
    """SGLang/vLLM: the aggregate (all tokens decoded in a state ÷ its seconds, prompts of
    others included) of the busiest state of 2 or more streams that the window fit gives on
    both sides, its interval from pairing the two sides' window resamples; None for other
    logs, or ``{"why": …}`` naming the fit's reason and the server setting that cures it."""
    from logscope.analysis.window_fit import state_fit, state_fit_replicates
    fa, fb = state_fit(a), state_fit(b)
    if fa.height == 0 or fb.height == 0:
        return None
    ok_a = {r["decoding"] for r in fa.iter_rows(named=True) if not r["reason"]}
    ok_b = {r["decoding"] for r in fb.iter_rows(named=True) if not r["reason"]}
    common = sorted(k for k in ok_a & ok_b if k >= 2)
    if not common:
        both = {int(k) for k in fa["decoding"]} & {int(k) for k in fb["decoding"]}
        both.discard(1)
        if not both:
            return {"why": "no state with 2 or more streams decoding on both sides"}
        k = max(both)
        rs = [r for f in (fa, fb) for r in f.filter(pl.col("decoding") == k)["reason"] if r]
        return {"why": f"{k} decoding is not identified on "
                + ("both sides" if len(rs) == 2 else "one side") + ": " + rs[0].split(": ", 1)[1]}
    k = common[-1]
    ra, rb = state_fit_replicates(a), state_fit_replicates(b)
    ia, ib = ra[0].index(k), rb[0].index(k)
    va, vb = float(ra[1][ia, 2]), float(rb[1][ib, 2])
    n = min(len(ra[2]), len(rb[2]))
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = [rb[2][i][ib, 2] / ra[2][i][ia, 2] for i in range(n)]
    boots = [x for x in boots if math.isfinite(x) and x > 0]
    ci = [float(x) for x in np.percentile(boots, [2.5, 97.5])] if boots else None
    wa = int(fa.filter(pl.col("decoding") == k)["windows"][0])
    wb = int(fb.filter(pl.col("decoding") == k)["windows"][0])
    r = {"a": va, "b": vb, "ratio": vb / va, "ci95": ci, "n": [wa, wb], "k": k,
         "matched": "; window fit, as served × k"}
    row = _row("decode_aggregate", r, names, f"decode rate while {k} streams decode")
    row["states"] = [f"{k} decoding"]
    row["units"] = "window fit"
    return row


def _where(sa: dict, sb: dict, names: tuple[str, str]) -> str:
    """Where the served spans differ, from the states' seconds (largest differences first)."""
    parts = []
    for key, word in (("decode_s", "decoding"), ("decode_prefill_s", "decoding beside a prefill"),
                      ("prefill_s", "prefill alone"), ("stall_s", "stalls"),
                      ("idle_s", "idle")):
        d = (sb[key] or 0.0) - (sa[key] or 0.0)
        if abs(d) >= 0.05 * max(sa["span_s"], sb["span_s"]) and abs(d) >= 0.5:
            parts.append((abs(d), f"{word} {d:+.1f} s"))
    if not parts:
        return ""
    parts.sort(reverse=True)
    return (f"{names[1]}'s span {sb['span_s']:.1f} s against {sa['span_s']:.1f} s: "
            + ", ".join(p for _, p in parts))


def _throughput(a, b, names, rng) -> dict:
    from logscope.analysis.served import served, throughput_blocks
    what = "served throughput"
    sa, sb = served(a), served(b)
    if not sa["throughput_tps"] or not sb["throughput_tps"]:
        return _row("throughput", None, names, what, "no served span on " + (
            names[0] if not sa["throughput_tps"] else names[1]))
    short = [n for n, s in zip(names, (sa, sb), strict=True) if s.get("throughput_lower_bound")]
    if short:
        return _row("throughput", None, names, what, f"{short[0]}'s served span is not read: "
                    "a run of fewer than three stats intervals with tokens, whose first and "
                    "last hold its start and end somewhere inside; give a longer log")
    r = _pooled_ratio(throughput_blocks(a), throughput_blocks(b), rng)
    r["a"], r["b"] = sa["throughput_tps"], sb["throughput_tps"]
    r["ratio"] = sb["throughput_tps"] / sa["throughput_tps"]
    r["where"] = _where(sa, sb, names)
    r["matched"] = " window intervals" if sa["span_basis"] != sb["span_basis"] or \
        "window" in (sa["span_basis"] or "") else " blocks of the served span"
    row = _row("throughput", r, names, what)
    row["span_s"] = [sa["span_s"], sb["span_s"]]
    return row


def _trade(rows: list[dict], names: tuple[str, str]) -> dict:
    """Both sides of the trade from the throughput and per-stream rows."""
    by = {r["question"]: r for r in rows}
    t, p = by.get("throughput"), by.get("decode_per_stream")
    a, b = names
    out = {"question": "trade", "a": None, "b": None, "ratio": None, "ci95": None,
           "n": [0, 0]}
    if not t or not p or t["ratio"] is None or p["ratio"] is None:
        out["sentence"] = ("trade: no verdict (throughput and speed per stream are not both "
                           "measured on both sides)")
        return out

    def sure(r):   # +1 up, -1 down, 0 when the interval holds 1
        ci = r.get("ci95")
        if not ci:
            return 0
        return 1 if ci[0] > 1 else -1 if ci[1] < 1 else 0
    st, sp = sure(t), sure(p)
    what = "speed per stream" + (" as served" if p.get("units") == "requests as served" else "")
    both = (f"{b}: {t['ratio']:.2f}× the throughput of {a} at {p['ratio']:.2f}× the {what}")
    if st and sp and st != sp:
        tail = " — a trade, neither is simply faster"
    elif st and sp:
        tail = f" — {b if st > 0 else a} is faster both ways"
    elif sp:
        tail = " — clear per stream; throughput's 95 % interval holds 1"
    elif st:
        tail = " — clear in throughput; per stream's 95 % interval holds 1"
    else:
        tail = " — neither difference is clear (both 95 % intervals hold 1)"
    out.update(a=None, b=None, ratio=t["ratio"], ci95=t.get("ci95"), n=t["n"],
               per_stream_ratio=p["ratio"], per_stream_ci95=p.get("ci95"),
               sentence=both + tail)
    return out


def _prefill(a, b, names, rng) -> dict:
    ua, ub = _prefill_units(a), _prefill_units(b)
    what = "prefill"
    if ua.height == 0 or ub.height == 0:
        return _row("prefill", None, names, what, "no solo prefill stretch on "
                    + (names[0] if ua.height == 0 else names[1]))
    r = _matched_ratio(ua, ub, rng)
    if r is None:
        return _row("prefill", None, names, what, "no depth bucket measured on both sides")
    row = _row("prefill", r, names, "prefill at matched depths")
    row["depths"] = r["strata"]
    return row


def _acceptance(lg) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(accepted, drafted, [tokens; steps]) per unit: requests, else windows by their weight
    (:func:`logscope.analysis.spec.acceptance_units`, the metrics' own definition)."""
    from logscope.analysis.spec import acceptance_units, acceptance_windows
    u = acceptance_units(lg)
    if u.height:
        def f(c):
            return u[c].fill_null(np.nan).to_numpy()
        return f("accepted"), f("drafted"), np.vstack([f("tokens"), f("steps")])
    w = acceptance_windows(lg).drop_nulls("rate")
    if w.height:   # count-less lines: one window, one unit
        ml = w["mean_len"].fill_null(np.nan).to_numpy()
        return (w["rate"].to_numpy(), np.ones(w.height), np.vstack([ml, np.ones(w.height)]))
    return None


def _spec_rows(a, b, names, rng) -> list[dict]:
    xa, xb = _acceptance(a), _acceptance(b)
    if xa is None or xb is None:
        if xa is None and xb is None:
            why = "neither side drafts"
        else:
            who = names[1] if xa is None else names[0]
            why = f"only {who} drafts: compare decode per stream for the draft's worth"
        return [_row("acceptance", None, names, "draft acceptance", why),
                _row("mean_accepted_length", None, names, "mean accepted length", why)]
    fa = np.isfinite(xa[0]) & np.isfinite(xa[1])
    fb = np.isfinite(xb[0]) & np.isfinite(xb[1])
    if fa.any() and fb.any():
        acc = _pooled_ratio((xa[0][fa], xa[1][fa]), (xb[0][fb], xb[1][fb]), rng)
        out = [_row("acceptance", acc, names, "draft acceptance")]
    else:
        out = [_row("acceptance", None, names, "draft acceptance",
                    "no drafted-token counts on " + (names[1] if fa.any() else names[0]))]
    ma = xa[2][:, np.isfinite(xa[2]).all(axis=0)]
    mb = xb[2][:, np.isfinite(xb[2]).all(axis=0)]
    if ma.shape[1] and mb.shape[1]:
        ml = _pooled_ratio((ma[0], ma[1]), (mb[0], mb[1]), rng)
        out.append(_row("mean_accepted_length", ml, names, "mean accepted length"))
    else:
        out.append(_row("mean_accepted_length", None, names, "mean accepted length",
                        "no token counts per step"))
    return out


def _energy(a, b, names, rng) -> dict:
    what = "decode energy per token"

    def units(lg):
        req = table(lg, "requests")
        if req is None or "decode_energy_j" not in req.columns:
            return None
        r = req.filter(pl.col("decode_energy_j").is_not_null(), pl.col("gen_tokens") > 0)
        if r.height == 0:
            return None
        return (r["decode_energy_j"].to_numpy(), r["gen_tokens"].cast(pl.Float64).to_numpy())
    ea, eb = units(a), units(b)
    if ea is None or eb is None:
        return _row("energy_per_token", None, names, what,
                    "no GPU telemetry joined to " + (names[0] if ea is None else names[1]))
    row = _row("energy_per_token", _pooled_ratio(ea, eb, rng), names,
               what + " (J/token)", lower_is_better=True)
    return row


def _energy_run(a, b, names, rng) -> dict:
    what = "energy per completion token, whole run"

    def units(lg):
        runs, req = table(lg, "energy_runs"), table(lg, "requests")
        if runs is None or req is None or runs.height == 0 or "run_j" not in runs.columns \
                or "energy_j" not in req.columns:
            return None
        r = req.filter(pl.col("energy_j").is_not_null()).select(
            pl.col("file").cast(pl.String), pl.col("run").cast(pl.Int32), "energy_j",
            "gen_tokens").join(runs.select(pl.col("file").cast(pl.String),
                                           pl.col("run").cast(pl.Int32), "run_j"),
                               on=["file", "run"])
        r = r.with_columns((pl.col("energy_j") * pl.col("run_j")
                            / pl.col("energy_j").sum().over("file", "run")).alias("_j"))
        if r.height == 0 or r["gen_tokens"].fill_null(0).sum() == 0:
            return None
        return (r["_j"].fill_nan(0.0).to_numpy(),
                r["gen_tokens"].fill_null(0).cast(pl.Float64).to_numpy())
    ea, eb = units(a), units(b)
    if ea is None or eb is None:
        return _row("energy_per_token_run", None, names, what,
                    "no GPU telemetry joined to " + (names[0] if ea is None else names[1]))
    return _row("energy_per_token_run", _pooled_ratio(ea, eb, rng), names,
                what + " (J/token)", lower_is_better=True)


def _stalls(a, b, names, rng) -> dict:
    from logscope.analysis.timeline import request_times
    what = "stall time per request"

    def units(lg):
        rt = request_times(lg).drop_nulls("wait_s")
        return None if rt.height == 0 else (rt["wait_s"].to_numpy(), np.ones(rt.height))
    sa, sb = units(a), units(b)
    if sa is None or sb is None:
        return _row("stalls", None, names, what,
                    "the log gives no per-request launch and prompt times (llama-server only)")
    r = _pooled_ratio(sa, sb, rng)
    if r["a"] < 0.01 and r["b"] < 0.01:
        return {"question": "stalls", "a": r["a"], "b": r["b"], "ratio": None, "ci95": None,
                "n": r["n"], "sentence": f"{what}: none worth a verdict on either side "
                f"(mean {1000 * r['a']:.1f} ms / {1000 * r['b']:.1f} ms)"}
    return _row("stalls", r, names, what + " (s, mean)", lower_is_better=True)


def verdict(logs_a, logs_b, names: tuple[str, str] | list[str] | None = None) -> list[dict]:
    """B against A, one row per question (see the module docstring).

    Example::

        for v in verdict(logscope.read("a.log"), logscope.read("b.log"), ("f16", "q8")):
            print(v["sentence"])
    """
    names = tuple(names) if names else (label_of(logs_a), label_of(logs_b))
    rng = np.random.default_rng(SEED)
    rows = [_throughput(logs_a, logs_b, names, rng),
            _decode_per_stream(logs_a, logs_b, names, rng),
            _decode_aggregate(logs_a, logs_b, names, rng),
            _prefill(logs_a, logs_b, names, rng)]
    rows += _spec_rows(logs_a, logs_b, names, rng)
    rows += [_energy(logs_a, logs_b, names, rng), _energy_run(logs_a, logs_b, names, rng),
             _stalls(logs_a, logs_b, names, rng)]
    return [_trade(rows, names), *rows]


__all__ = ["verdict", "QUESTIONS", "MIN_N"]
