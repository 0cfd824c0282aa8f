"""One definition per headline figure, used by every command that prints it.

``ingest`` (human summary), ``report``, ``compare``, ``card`` and the notebook call these
functions and format their ``value`` with :func:`fmt_figure`, so a figure reads the same
everywhere. Each returns a dict: ``value`` (None when the log has no data for it), ``n`` (how
many requests or windows it pools), ``exactness`` and ``source``, plus figure-specific keys.

* :func:`acceptance_rate`: accepted / drafted tokens, pooled over requests (llama-server,
  exact per request), else over server windows weighed by what each holds (SGLang: its
  request-steps; vLLM: its own counts; :func:`logscope.analysis.spec.acceptance_units`).
* :func:`mean_accepted_length`: tokens per decode step, pooled: all generated tokens / all
  steps, where a request's steps = its tokens / its printed ``mean len``; windows likewise by
  their request-steps. A request without an ``eval time`` line (a partial log) has no token
  count; when no request has one, the plain mean of the printed values.
* :func:`decode_tps`: the median of the exact per-request decode rates (requests with at
  least ``MIN_DECODE_TOKENS`` generated); on SGLang and vLLM window lines, the per-stream rate
  as served in the state the window fit (:func:`logscope.analysis.window_fit.state_fit`)
  identified with the most seconds (``decoding`` = its streams; ``min``/``max`` = its 95 %
  interval, ``n`` = intervals): one answer per state, the one ``report`` prints beside its
  clean figure. A raw interval is put at the count it closed with and mixes states, so it is
  never the figure; with no state identified there is none (the served speed per stream,
  :func:`logscope.analysis.served.served`, pools every state and says so).
* :func:`aggregate_decode`: all tokens decoded ÷ seconds in the state where the most requests
  decoded together (at least 2; with nothing prefilling when that state was seen), from
  :func:`logscope.analysis.concurrency.concurrency`; on window lines the window fit's
  aggregate of the most streams it identified (prompts beside included). ``peak`` = the
  highest aggregate of any state.
* :func:`prefill_tps`: the median exact per-request prompt rate (>= 64 computed tokens).
"""

from __future__ import annotations

import math

import polars as pl

from logscope.analysis._util import EXACT, WINDOW, table

FIT = "server window fit, as served"   # exactness of a figure from the window fit
MIN_DECODE_TOKENS = 16
MIN_PREFILL_TOKENS = 64
MEASURED = ("completed", "partial")   # requests whose printed figures are real


def measured_requests(logs) -> pl.DataFrame | None:
    """Requests with figures of their own: completed, or partial (the log cut them)."""
    req = table(logs, "requests")
    if req is None:
        return None
    if "status" in req.columns:
        req = req.filter(pl.col("status").is_in(MEASURED))
    return req if req.height else None


def _none(**extra) -> dict:
    return {"value": None, "n": 0, "exactness": None, "source": None, **extra}


def acceptance_rate(logs) -> dict:
    """Draft acceptance rate: Σ accepted ÷ Σ drafted over the units of
    :func:`logscope.analysis.spec.acceptance_units` (requests, else windows by their weight).

    Example::

        acceptance_rate(logscope.read("spec.log"))["value"]   # 0.0118
    """
    from logscope.analysis.spec import acceptance_units, acceptance_windows

    u = acceptance_units(logs).drop_nulls("drafted").filter(pl.col("drafted") > 0)
    if u.height:
        acc, gen = float(u["accepted"].sum()), float(u["drafted"].sum())
        exact = u["exactness"][0] == EXACT
        return {"value": acc / gen, "n": u.height, "exactness": u["exactness"][0],
                "source": u["source"][0], "accepted": int(acc) if exact else None,
                "generated": int(gen) if exact else None}
    w = acceptance_windows(logs).drop_nulls("rate")
    if w.height:   # cumulative or count-less lines (vLLM V0): no weight to pool by
        return {"value": float(w["rate"].mean()), "n": w.height, "exactness": WINDOW,
                "source": w["source"][0], "accepted": None, "generated": None}
    return _none(accepted=None, generated=None)


def mean_accepted_length(logs) -> dict:
    """Mean accepted length (tokens per decode step): Σ tokens ÷ Σ steps over the units of
    :func:`logscope.analysis.spec.acceptance_units` (requests, else windows by their weight).

    Example::

        mean_accepted_length(logscope.read("spec.log"))["value"]   # 1.05
    """
    from logscope.analysis.spec import acceptance_requests, acceptance_units, acceptance_windows

    u = acceptance_units(logs).drop_nulls(["tokens", "steps"]).filter(pl.col("steps") > 0)
    if u.height:
        how = ("pooled: tokens / steps" if u["exactness"][0] == EXACT
               else "pooled: windows weighed by their request-steps")
        return {"value": float(u["tokens"].sum() / u["steps"].sum()), "n": u.height,
                "exactness": u["exactness"][0], "source": u["source"][0], "how": how}
    r = acceptance_requests(logs).drop_nulls("mean_len").filter(pl.col("mean_len") > 0)
    if r.height:   # a partial log: no request has its token count
        return {"value": float(r["mean_len"].mean()), "n": r.height, "exactness": EXACT,
                "source": "llama:request", "how": "mean of the printed values"}
    w = acceptance_windows(logs).drop_nulls("mean_len")
    if w.height:
        return {"value": float(w["mean_len"].mean()), "n": w.height, "exactness": WINDOW,
                "source": w["source"][0], "how": "mean of windows"}
    return _none(how=None)


def acceptance_summary(logs) -> dict:
    """Pooled acceptance: :func:`acceptance_rate` and :func:`mean_accepted_length` (the one
    definition of each), in one dict.

    Example::

        acceptance_summary(logscope.read("spec.log"))["rate"]
    """
    r, m = acceptance_rate(logs), mean_accepted_length(logs)
    return {"source": r["source"] or m["source"], "exactness": r["exactness"] or m["exactness"],
            "n": max(r["n"], m["n"]), "accepted": r["accepted"], "generated": r["generated"],
            "rate": r["value"], "mean_len": m["value"]}


def decode_tps(logs) -> dict:
    """Median decode t/s: exact per request, else server windows.

    Example::

        decode_tps(logscope.read("server.log"))   # {"value": 93.97, "min": …, "max": …, "n": 24}
    """
    req = measured_requests(logs)
    if req is not None and "decode_tps" in req.columns:
        d = req.filter(pl.col("gen_tokens") >= MIN_DECODE_TOKENS).drop_nulls("decode_tps")
        if d.height:
            s = d["decode_tps"]
            return {"value": float(s.median()), "min": float(s.min()), "max": float(s.max()),
                    "n": d.height, "exactness": EXACT, "source": "llama:request"}
    fit = _fitted(logs)
    if fit is not None:   # window lines: the fit's state seen longest
        ok = fit.filter(pl.col("reason").is_null(), pl.col("seconds") > 0,
                        pl.col("served_per_stream") > 0)
        if ok.height:
            top = ok.sort("seconds", "decoding").row(-1, named=True)
            return {"value": top["served_per_stream"], "min": top["served_lo"],
                    "max": top["served_hi"], "n": top["windows"], "exactness": FIT,
                    "source": "window fit, per stream as served",
                    "decoding": int(top["decoding"])}
        return _none(min=None, max=None)
    from logscope.analysis.decode import decode_windows
    t3 = decode_windows(logs).filter(pl.col("source") == "llama:tg_3s", pl.col("tps") > 0)
    if t3.height:   # a pasted excerpt: only the per-slot ~3 s windows
        return {"value": float(t3["tps"].median()), "min": float(t3["tps"].min()),
                "max": float(t3["tps"].max()), "n": t3.height,
                "exactness": "window (~3 s) per slot", "source": "llama:tg_3s"}
    return _none(min=None, max=None)


def prefill_tps(logs) -> dict:
    """Median exact prompt t/s per request (>= 64 computed tokens; raw, overhead included).

    Example::

        prefill_tps(logscope.read("server.log"))["value"]
    """
    req = measured_requests(logs)
    if req is not None and "prompt_tps" in req.columns:
        d = req.filter(pl.col("prompt_tokens") >= MIN_PREFILL_TOKENS).drop_nulls("prompt_tps")
        if d.height:
            s = d["prompt_tps"]
            return {"value": float(s.median()), "min": float(s.min()), "max": float(s.max()),
                    "n": d.height, "exactness": EXACT, "source": "llama:request"}
    return _none(min=None, max=None)


def aggregate_decode(logs) -> dict:
    """The decode rate while the most requests decoded together (>= 2): all tokens decoded in
    that state ÷ its seconds — the rate *while* they decode, not the throughput a workload got
    (:func:`logscope.analysis.served.served`).

    Example::

        aggregate_decode(logscope.read("server.log"))   # {"value": 127.37, "active": 2, …}
    """
    from logscope.analysis.concurrency import concurrency

    fit = _fitted(logs)
    if fit is not None:   # window lines: the fit's states, never the raw intervals
        ok = fit.filter(pl.col("reason").is_null(), pl.col("decoding") >= 2,
                        pl.col("aggregate") > 0)
        if ok.height == 0:
            return _none(active=None, peak=None, seconds=None, prefilling=None)
        top = ok.sort("decoding").row(-1, named=True)
        return {"value": top["aggregate"], "n": top["windows"], "exactness": FIT,
                "source": "window fit", "active": int(top["decoding"]), "prefilling": 0,
                "peak": float(ok["aggregate"].max()), "seconds": top["seconds"]}
    c = concurrency(logs).filter(pl.col("decoding") >= 2, pl.col("aggregate_tps").is_not_null())
    if c.height == 0:
        return _none(active=None, peak=None, seconds=None, prefilling=None)
    top = c.sort("decoding", pl.col("prefilling").cast(pl.Int32) * -1).row(-1, named=True)
    return {"value": top["aggregate_tps"], "n": top["n"], "exactness": top["exactness"],
            "source": top["source"], "active": int(top["decoding"]),
            "prefilling": int(top["prefilling"]),
            "peak": float(c["aggregate_tps"].max()), "seconds": top["seconds"]}


def _fitted(logs) -> pl.DataFrame | None:
    """The window fit's states of a log with SGLang or vLLM window lines, else None."""
    from logscope.analysis.window_fit import state_fit

    f = state_fit(logs)
    return f if f.height else None


FIGURES = {
    "prefill_tps": prefill_tps,
    "decode_tps": decode_tps,
    "aggregate_decode": aggregate_decode,
    "acceptance_rate": acceptance_rate,
    "mean_accepted_length": mean_accepted_length,
}


def headline_figures(logs) -> dict[str, dict]:
    """Every headline figure of one ingest, by name (what ``ingest --json`` can carry).

    Example::

        {k: v["value"] for k, v in headline_figures(logscope.read("server.log")).items()}
    """
    return {name: fn(logs) for name, fn in FIGURES.items()}


def sig(x: float | None, digits: int = 3) -> float | None:
    """``x`` rounded to ``digits`` significant digits (0.011805 -> 0.0118)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    if x == 0:
        return 0.0
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def fmt_figure(name: str, value: float | None) -> str:
    """The one text form of a headline figure: acceptance with 3 significant digits, mean
    length and t/s with 2 decimals (what llama-server prints), ``—`` when absent.

    Example::

        fmt_figure("acceptance_rate", 0.011805)   # '0.0118'
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if name == "acceptance_rate":
        v = sig(value, 3)
        return f"{v:.{max(3 - 1 - int(math.floor(math.log10(abs(v)))), 0)}f}" if v else "0"
    return f"{value:,.2f}"


def round_frame(df: pl.DataFrame, decimals: int = 2) -> pl.DataFrame:
    """Floats rounded to what the server prints (0.01 ms, 0.01 t/s) for CSV/JSON output;
    columns named ``rate``/``*acceptance*`` keep 3 significant digits instead, and the fit's
    coefficients (``a``, ``b``, ``c``) are left exact.

    Example::

        round_frame(bench_table(logs)).write_csv()
    """
    exprs = []
    for name, dt in df.schema.items():
        if dt not in (pl.Float64, pl.Float32):
            continue
        if name in ("a", "b", "c") or name.endswith("_s2"):
            continue
        if name == "rate" or "acceptance" in name:
            exprs.append(pl.col(name).map_elements(sig, return_dtype=pl.Float64))
        else:
            exprs.append(pl.col(name).round(decimals))
    return df.with_columns(exprs) if exprs else df
