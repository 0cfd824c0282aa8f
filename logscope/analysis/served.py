"""What the workload got: served throughput, where the time went, and the streams trade.

The rates of :func:`logscope.analysis.concurrency.concurrency` are rates *while* k streams
decode. A user pays for something else: the completion tokens the server delivered over the time
the workload ran, stalls, prefill and gaps between requests included. This module answers that,
from the same states (:func:`logscope.analysis.concurrency.states`), so the figures add up:

* :func:`time_budget`: per run, the seconds in each state: ``decode`` (nothing prefilling
  beside), ``decode + prefill``, ``prefill``, ``stall``, ``idle``, by requests in progress.
* :func:`served`: per log, completion tokens ÷ the served span (first arrival to last response,
  idle gaps between requests included: ``throughput_tps``) and ÷ the busy seconds (some request
  in progress: ``busy_tps``); the seconds of the span by state; and the per-stream speed the
  requests got as served (``per_stream_tps``: the median of the requests' exact decode rates,
  stalls and other slots' prefill included; SGLang/vLLM: the seconds-weighted median of the
  window intervals' per-stream rates).
* :func:`streams`: per number of streams decoding (whatever prefills beside them): the rate
  while they decode (``aggregate_tps``), per stream (÷ k), the marginal gain of one more stream,
  the share of the decode time spent there, and with GPU telemetry joined the joules its
  segments drew and the tokens per joule. The rows are the points of the passive Pareto
  (:func:`logscope.outputs.plots.plot_pareto`): per-stream speed against aggregate. SGLang and
  vLLM: the states the window fit identified (:func:`logscope.analysis.window_fit.state_fit`,
  as served), not the raw intervals (a 10 s interval holds several counts of streams).
* :func:`frontier`: the points no other point beats on both axes.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from logscope.analysis._util import WINDOW, label_of, table
from logscope.analysis.concurrency import (
    MIN_SAMPLE_TOKENS,
    concurrency,
    decode_samples,
    states,
    weighted_median,
)

BUDGET_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "state": pl.String,
                 "busy": pl.Int64, "seconds": pl.Float64, "share": pl.Float64}
BUDGET_STATES = ("decode", "decode + prefill", "prefill", "stall", "idle")
SERVED_SCHEMA = {"label": pl.String, "completion_tokens": pl.Float64, "requests": pl.Int64,
                 "span_s": pl.Float64, "busy_s": pl.Float64, "throughput_tps": pl.Float64,
                 "busy_tps": pl.Float64, "per_stream_tps": pl.Float64,
                 "per_stream_n": pl.Int64, "decode_s": pl.Float64,
                 "decode_prefill_s": pl.Float64, "prefill_s": pl.Float64,
                 "stall_s": pl.Float64, "idle_s": pl.Float64, "max_streams": pl.Int64,
                 "slots": pl.Int64, "per_stream_source": pl.String, "span_basis": pl.String,
                 "throughput_lower_bound": pl.Boolean, "engines": pl.Int64}
STREAMS_SCHEMA = {"label": pl.String, "decoding": pl.Int16, "seconds": pl.Float64,
                  "tokens": pl.Float64, "aggregate_tps": pl.Float64,
                  "per_stream_tps": pl.Float64, "gain_tps": pl.Float64,
                  "gain_ratio": pl.Float64, "share": pl.Float64, "prefill_share": pl.Float64,
                  "joules": pl.Float64, "tokens_per_j": pl.Float64}
# vLLM stats intervals this long hold turns that `Running`, read at each line, cannot see
LONG_INTERVAL_S = 5.0
BLOCKS = 24   # the served span is cut into this many blocks for throughput's interval


def _budget_state() -> pl.Expr:
    return (pl.when((pl.col("state") == "decode") & (pl.col("prefilling") > 0))
            .then(pl.lit("decode + prefill")).otherwise(pl.col("state")))


def time_budget(logs, label: str | None = None) -> pl.DataFrame:
    """Per run: seconds in each state (``BUDGET_STATES``) by requests in progress (``busy``),
    and their share of the run's span; the seconds add up to the span.

    Example::

        time_budget(logscope.read("server.log")).group_by("state").agg(pl.col("seconds").sum())
    """
    st = states(logs, label_of(logs, label))
    if st.height == 0:
        return pl.DataFrame(schema=BUDGET_SCHEMA)
    order = {s: str(i) for i, s in enumerate(BUDGET_STATES)}
    return (st.with_columns(_budget_state().alias("state"))
            .group_by("label", "file", "run", "state", "busy")
            .agg(pl.col("seconds").sum())
            .with_columns((pl.col("seconds") / pl.col("seconds").sum().over("file", "run"))
                          .alias("share"))
            .sort("file", "run", pl.col("state").replace(order), "busy")
            .select(list(BUDGET_SCHEMA)).cast(BUDGET_SCHEMA))


def _served_span(st: pl.DataFrame) -> pl.DataFrame:
    """The states inside each run's served span: from the first moment a request is in
    progress to the last (idle before the first request and after the last left out)."""
    if st.height == 0 or st["t0"].null_count() == st.height:
        # window logs: their intervals are the span already (lines come while work runs)
        return st
    on = pl.col("state") != "idle"
    return (st.sort("file", "run", "t0")
            .with_columns(on.cum_sum().over("file", "run").alias("_a"),
                          on.reverse().cum_sum().reverse().over("file", "run").alias("_b"))
            .filter(pl.col("_a") > 0, pl.col("_b") > 0).drop("_a", "_b"))


REQUEST_RATES = "median of the requests' exact decode rates"   # a source _per_stream_units names


def _per_stream_units(logs) -> tuple[np.ndarray, np.ndarray, str]:
    """(values, weights, source) of the per-stream speed the requests got as served."""
    req = table(logs, "requests")
    if req is not None and {"decode_tps", "gen_tokens"} <= set(req.columns):
        r = req.filter(pl.col("gen_tokens") >= MIN_SAMPLE_TOKENS, pl.col("decode_tps") > 0,
                       pl.col("decode_ms").is_not_null() if "decode_ms" in req.columns
                       else pl.lit(True))
        if r.height:
            return r["decode_tps"].to_numpy(), np.ones(r.height), REQUEST_RATES
    s = decode_samples(logs).filter(pl.col("unit") == "window", pl.col("tps") > 0)
    if s.height:
        return (s["tps"].to_numpy(), s["seconds"].to_numpy(),
                "seconds-weighted median of the window intervals' per-stream rates")
    return np.array([]), np.array([]), ""


def _slots(logs) -> int | None:
    info = table(logs, "server_info")
    if info is not None and "n_slots" in info.columns:
        v = info["n_slots"].drop_nulls()
        if len(v):
            return int(v.max())
    return None


def served(logs, label: str | None = None) -> dict:
    """Served throughput and where the span went (module docstring), as one dict.

    Example::

        s = served(logscope.read("server.log"))
        print(f"{s['throughput_tps']:.1f} t/s over {s['span_s']:.1f} s")
    """
    lab = label_of(logs, label)
    st = _served_span(states(logs, lab))
    out: dict = dict.fromkeys(SERVED_SCHEMA)
    out["label"] = lab
    if st.height == 0:
        return out
    by = st.with_columns(_budget_state().alias("_s")).group_by("_s").agg(
        pl.col("seconds").sum())
    secs = dict(by.iter_rows())
    span = float(st["seconds"].sum())
    busy = float(st.filter(pl.col("state") != "idle")["seconds"].sum())
    tokens = float(st["tokens"].sum())
    v, w, src = _per_stream_units(logs)
    req = table(logs, "requests")
    basis = "from first arrival to last response"
    if st["t0"].null_count():   # window lines: their own span and per-stream as served
        from logscope.analysis.window_fit import (
            served_units,
            vllm_interval_s,
            window_throughput,
        )
        wt = window_throughput(logs)
        if wt and wt["tps"]:
            tokens, span = wt["tokens"], wt["seconds"]
            busy = min(busy, span)
            out["throughput_lower_bound"] = wt["lower_bound"]
        su = served_units(logs)
        n_units = None
        if su is not None and su[1].sum() > 0:
            v, w = np.array([su[0].sum() / su[1].sum()]), np.array([1.0])
            src = "all tokens ÷ stream-seconds of the window intervals"
            if (vllm_interval_s(logs) or 0) >= LONG_INTERVAL_S:
                src += ("; vLLM's `Running` is read at each line, so a request prefilling, or "
                        "a turn that ended and the next that began inside an interval, counts "
                        "as a stream for all of it: at this stats interval the figure reads "
                        "low (0-31 % on agent runs rendered at 10 s intervals, more on a run "
                        "of a few intervals; within 5 % at VLLM_LOG_STATS_INTERVAL=1)")
            n_units = int((su[1] > 0).sum())   # the intervals pooled
        basis = "from the first window interval to the last line of each run"
        from logscope.analysis.windows import engines_per_run
        out["engines"] = engines_per_run(logs)
    else:
        n_units = None
    out.update(
        completion_tokens=tokens, span_s=span, busy_s=busy,
        requests=req.height if req is not None else None,
        throughput_tps=tokens / span if span > 0 else None,
        busy_tps=tokens / busy if busy > 0 else None,
        per_stream_tps=weighted_median(v, w) if len(v) else None,
        per_stream_n=n_units if n_units is not None else len(v),
        per_stream_source=src or None,
        decode_s=secs.get("decode", 0.0), decode_prefill_s=secs.get("decode + prefill", 0.0),
        prefill_s=secs.get("prefill", 0.0), stall_s=secs.get("stall", 0.0),
        idle_s=secs.get("idle", 0.0),
        max_streams=int(st["decoding"].max() or 0), slots=_slots(logs), span_basis=basis)
    return out


def throughput_blocks(logs, blocks: int = BLOCKS) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, seconds) of the served span cut into ``blocks`` equal stretches per run (window
    logs: one unit per interval), the units throughput's bootstrap interval resamples.

    Example::

        tok, sec = throughput_blocks(logscope.read("server.log"))
        tok.sum() / sec.sum()     # the served throughput
    """
    st = _served_span(states(logs))
    if st.height == 0:
        return np.array([]), np.array([])
    if st["t0"].null_count() == st.height:
        dec = st.filter(pl.col("state") != "idle")
        idle = float(st.filter(pl.col("state") == "idle")["seconds"].sum())
        sec, tok = dec["seconds"].to_numpy(), dec["tokens"].to_numpy()
        # the rest of the span spread over the intervals in proportion to their length, so
        # the units add up to the served figures
        s = served(logs)
        span = s["span_s"] or (sec.sum() + idle)
        if sec.sum() > 0:
            sec = sec * span / sec.sum()
        if tok.sum() > 0 and s["completion_tokens"]:
            tok = tok * s["completion_tokens"] / tok.sum()
        return tok, sec
    toks, secs = [], []
    for _, g in st.group_by(["file", "run"]):
        t0, t1, tk = g["t0"].to_numpy(), g["t1"].to_numpy(), g["tokens"].to_numpy()
        edges = np.linspace(t0.min(), t1.max(), blocks + 1)
        # tokens of each segment spread evenly over it, then summed per block
        cum_t = np.concatenate([[t0.min()], t1])
        cum_n = np.concatenate([[0.0], np.cumsum(tk)])
        at = np.interp(edges, cum_t, cum_n)
        toks.append(np.diff(at))
        secs.append(np.diff(edges))
    return np.concatenate(toks), np.concatenate(secs)


def streams(logs, label: str | None = None) -> pl.DataFrame:
    """Per number of streams decoding: the rate while they decode, per stream, and what one
    more stream added (module docstring).

    Example::

        streams(logscope.read("server.log")).select("decoding", "per_stream_tps",
                                                    "aggregate_tps", "gain_tps")
    """
    lab = label_of(logs, label)
    c = concurrency(logs, lab)
    if c.height == 0:
        return pl.DataFrame(schema=STREAMS_SCHEMA)
    joules = _state_joules(logs, lab)
    if (c["exactness"] == WINDOW).any():
        g = _fitted_states(logs, lab)
        if g is None:
            return pl.DataFrame(schema=STREAMS_SCHEMA)
    else:
        g = (c.group_by("decoding").agg(
            pl.col("seconds").sum(), pl.col("tokens").sum(),
            pl.col("seconds").filter(pl.col("prefilling") > 0).sum().alias("_pre"))
            .with_columns((pl.col("tokens") / pl.col("seconds")).alias("aggregate_tps")))
    g = (g.sort("decoding")
        .with_columns((pl.col("aggregate_tps") / pl.col("decoding")).alias("per_stream_tps"),
                      (pl.col("seconds") / pl.col("seconds").sum()).alias("share"),
                      (pl.col("_pre") / pl.col("seconds")).alias("prefill_share")))
    prev_k = pl.col("decoding").shift(1)
    prev_a = pl.col("aggregate_tps").shift(1)
    one_more = prev_k == pl.col("decoding") - 1
    g = g.with_columns(pl.when(one_more).then(pl.col("aggregate_tps") - prev_a)
                       .alias("gain_tps"),
                       pl.when(one_more).then(pl.col("aggregate_tps") / prev_a)
                       .alias("gain_ratio"))
    g = g.join(joules, on="decoding", how="left") if joules is not None \
        else g.with_columns(pl.lit(None, pl.Float64).alias("joules"))
    g = g.with_columns((pl.col("tokens") / pl.col("joules")).alias("tokens_per_j"))
    return g.with_columns(pl.lit(lab).alias("label")).select(list(STREAMS_SCHEMA)) \
        .cast(STREAMS_SCHEMA)


def _fitted_states(logs, lab: str) -> pl.DataFrame | None:
    """Window lines: per count of streams the window fit identified, its seconds, tokens and
    prompt seconds (a 10 s interval holds several counts, so the raw intervals, each put at
    the count it closed with, would say another state's rate); None when it identified none."""
    from logscope.analysis.window_fit import state_fit

    f = state_fit(logs, lab).filter(pl.col("reason").is_null(), pl.col("seconds") > 0)
    if f.height == 0:
        return None
    return f.select(pl.col("decoding").cast(pl.Int16), "seconds", "tokens",
                    pl.col("prefill_seconds").fill_null(0.0).clip(lower_bound=0).alias("_pre"),
                    pl.col("aggregate").alias("aggregate_tps"))   # the fit's, as report says


def _state_joules(logs, lab: str) -> pl.DataFrame | None:
    """Per number of streams decoding: the GPU energy of its segments (telemetry joined and
    placed, :func:`logscope.telemetry.joules_in`), else None."""
    tables = getattr(logs, "tables", None) or {}
    if tables.get("energy_runs") is None or tables.get("gpu_samples") is None:
        return None
    from logscope.telemetry import joules_in

    st = states(logs, lab).filter(pl.col("state") == "decode", pl.col("t0").is_not_null())
    if st.height == 0:
        return None
    j = st.with_columns(joules_in(logs, st).alias("_j"))
    if j["_j"].null_count() == j.height:
        return None
    return j.group_by("decoding").agg(pl.col("_j").sum().alias("joules")).cast(
        {"decoding": pl.Int16})


def frontier(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes (higher is better on both),
    ordered by x.

    Example: ``frontier(np.array([1., 2., 3.]), np.array([3., 2., 1.]))`` → ``[0, 1, 2]``
    """
    order = np.argsort(-x, kind="stable")
    keep, best = [], -np.inf
    for i in order:
        if y[i] > best:
            keep.append(i)
            best = y[i]
    return np.array(sorted(keep, key=lambda i: x[i]), dtype=np.int64)


__all__ = ["time_budget", "served", "streams", "frontier", "throughput_blocks",
           "BUDGET_STATES"]
