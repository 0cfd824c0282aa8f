"""Concurrency, defined once: what the server was doing at every moment of a run.

Every table, plot, headline and the verdict that speaks of concurrency takes it from here.

* :func:`states`: the whole run cut into segments of one state each, so that their seconds add
  up to the run's span and their tokens to the tokens generated:

  - ``decode``: ``decoding`` streams generate (``prefilling`` prompts are computed beside them);
  - ``prefill``: prompts are computed and no stream decodes;
  - ``stall``: requests are in progress but nothing computes: the server loop selected a slot
    and saves or loads its prompt cache (``selected slot`` … ``processing task``: the loop is
    blocked, so every other stream waits too), or a launched request waits for its prompt's
    compute with nothing else running;
  - ``idle``: no request in progress (before the first, between requests, after the last).

  llama-server: each request prefills from the start of its prompt's compute to the start of
  its decode (release − ``eval time``) and decodes from there to its release; a request cut
  during decode (no timing block) decodes from its first ``n_gen`` line minus ``n_gen / tg``.
  A request's tokens are read off its cumulative ``n_gen`` curve (its ``n_gen`` lines, 0 at the
  decode start and the ``eval`` count at release) on a clock that stops while the loop is
  blocked, so a stall holds no tokens. SGLang and vLLM: one segment per window interval
  (:mod:`logscope.analysis.windows`), the rest of the window lines' span as ``idle``.
* :func:`timeline`: the computing segments alone (``decode`` and ``prefill``).
* :func:`decode_samples`: the units per-request figures rest on: llama-server, one row per
  (request, state) piece (the seconds it decoded in that state, the tokens it decoded meanwhile);
  SGLang/vLLM, one row per window interval.
* :func:`concurrency`: one row per state with a stream decoding: ``seconds`` in it, ``tokens``
  decoded in it, ``aggregate_tps`` = tokens ÷ seconds (the rate *while* k streams decode, not
  the throughput a workload gets: see :mod:`logscope.analysis.served`), ``per_stream_tps`` =
  aggregate ÷ k (the same tokens and seconds, so at k = 1 they are one number), and beside them
  ``median_request_tps``: the median exact rate of the requests that decoded wholly in the state
  (``ALONE_SHARE`` of their decode; where fewer than ``MIN_PURE`` did, of those that decoded
  mostly in it; SGLang/vLLM: the seconds-weighted median of its clean windows), labelled as such:
  a request's rate counts its stalls, the state's rates do not.
  ``(1, 0)`` is "alone on the GPU"; ``(1, 1)`` is "decoding while another slot prefills".
* :func:`request_concurrency`: per llama-server request, the state it decoded in most, whether it
  decoded alone, and ``others_max``: the most other requests in progress at once beside it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from logscope.analysis._util import EXACT, WINDOW, label_of, remembered, table

MIN_SAMPLE_TOKENS = 16   # a piece shorter than this is too short to be a rate of its own
ALONE_SHARE = 0.98       # a request "ran alone" when this share of its decode was in (1, 0)
MIN_PURE = 3             # requests wholly in a state that make its median request alone
STATES = ("decode", "prefill", "stall", "idle")

TIMELINE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t0": pl.Float64,
                   "t1": pl.Float64, "decoding": pl.Int16, "prefilling": pl.Int16}
STATES_SCHEMA = {**TIMELINE_SCHEMA, "state": pl.String, "busy": pl.Int16,
                 "tokens": pl.Float64, "seconds": pl.Float64}
SAMPLE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
                 "task": pl.Int64, "unit": pl.String, "decoding": pl.Int16,
                 "prefilling": pl.Int16, "tokens": pl.Float64, "seconds": pl.Float64,
                 "tps": pl.Float64, "flag": pl.String}
STATE_SCHEMA = {"label": pl.String, "decoding": pl.Int16, "prefilling": pl.Int16,
                "seconds": pl.Float64, "tokens": pl.Float64, "per_stream_tps": pl.Float64,
                "aggregate_tps": pl.Float64, "median_request_tps": pl.Float64, "n": pl.Int64,
                "exactness": pl.String, "source": pl.String}
REQUEST_SCHEMA = {"file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
                  "decoding": pl.Int16, "alone": pl.Boolean, "others_max": pl.Int64,
                  "decode_tps": pl.Float64, "gen_tokens": pl.Int64}
KEY = ["file", "run", "slot", "task"]
CUT = "cut during decode: tokens from its n_gen lines"
NOT_TABLES = {"requests", "lines_classified", "unrecognized"}


def state_label(decoding: int, prefilling: int) -> str:
    """A state in words, the same everywhere: ``alone on the GPU`` (1, 0), ``1 decoding beside
    a prefill`` (1, 1), ``3 decoding, 1 prefilling``, ``idle`` (0, 0).

    Example: ``state_label(1, 0) == "alone on the GPU"``
    """
    if decoding == 1 and prefilling == 0:
        return "alone on the GPU"
    if decoding == 0 and prefilling == 0:
        return "idle"
    parts = [f"{decoding} decoding"] if decoding else []
    parts += [f"{prefilling} prefilling"] if prefilling else []
    return ", ".join(parts)


def _phases(logs) -> pl.DataFrame | None:
    """Per llama-server request: t_select, t_start, t_end, prefill [p0, p1), decode [d0, d1)."""
    from logscope.analysis.timeline import request_times

    rt = request_times(logs)
    req = table(logs, "requests")
    if rt.height == 0 or req is None:
        return None
    r = rt.join(req.select(*KEY, "t_end", "gen_tokens", "decode_ms", "decode_tps")
                .cast({"file": pl.String, "run": pl.Int32}), on=KEY, how="left")
    # a request cut during decode: its first n_gen line tells when decode began
    dp = table(logs, "decode_progress")
    if dp is not None and {"n_gen", "tg", "t_rel"} <= set(dp.columns):
        first = (dp.filter(pl.col("tg") > 0, pl.col("t_rel").is_not_null())
                 .sort("t_rel").group_by(KEY).first()
                 .select(*KEY, (pl.col("t_rel") - pl.col("n_gen") / pl.col("tg"))
                         .alias("_d0_tick")).cast({"file": pl.String, "run": pl.Int32}))
        r = r.join(first, on=KEY, how="left")
    else:
        r = r.with_columns(_d0_tick=pl.lit(None, pl.Float64))
    d0 = pl.coalesce(pl.col("prompt_end"),
                     pl.when(pl.col("_d0_tick") >= pl.col("t_start"))
                     .then(pl.col("_d0_tick")))
    return r.select(
        *KEY, "t_select", "t_start", "t_end", "gen_tokens", "decode_tps",
        pl.col("prompt_start").alias("p0"),
        pl.coalesce(d0, pl.col("t_end")).alias("p1"),
        d0.alias("d0"),
        pl.when(d0.is_not_null()).then(pl.col("t_end")).alias("d1"),
    ).filter(pl.col("t_start").is_not_null(), pl.col("t_end").is_not_null())


def _cover(iv: list[tuple[float, float]], t: np.ndarray) -> np.ndarray:
    """How many of the intervals [a, b) contain each time of ``t``."""
    if not iv:
        return np.zeros(len(t), dtype=np.int64)
    s = np.sort(np.array([a for a, _ in iv], dtype=float))
    e = np.sort(np.array([b for _, b in iv], dtype=float))
    return np.searchsorted(s, t, side="right") - np.searchsorted(e, t, side="right")


def _iv(a, b) -> list[tuple[float, float]]:
    return [(x, y) for x, y in zip(a, b, strict=True)
            if x is not None and y is not None and y > x]


def run_spans(logs) -> dict[tuple[str, int], tuple[float, float]]:
    """(file, run) → (first, last) server-clock time of any timed line of the run.

    Example::

        run_spans(logscope.read("server.log"))   # {("server.log", 0): (0.81, 412.3)}
    """
    tables = getattr(logs, "tables", None) or {}
    parts = []
    for name, df in tables.items():
        if name in NOT_TABLES or df is None or df.height == 0 \
                or not {"t_rel", "run", "file"} <= set(df.columns):
            continue
        parts.append(df.select(pl.col("file").cast(pl.String), pl.col("run").cast(pl.Int32),
                               pl.col("t_rel").cast(pl.Float64)).drop_nulls()
                     .group_by("file", "run").agg(pl.col("t_rel").min().alias("lo"),
                                                  pl.col("t_rel").max().alias("hi")))
    if not parts:
        return {}
    g = pl.concat(parts).group_by("file", "run").agg(pl.col("lo").min(), pl.col("hi").max())
    return {(f, r): (lo, hi) for f, r, lo, hi in g.iter_rows()}


def _ticks(logs) -> dict[tuple, list]:
    dp = table(logs, "decode_progress")
    ticks: dict[tuple, list] = {}
    if dp is not None and {"n_gen", "t_rel"} <= set(dp.columns):
        for row in (dp.drop_nulls(["t_rel", "n_gen"]).sort("t_rel")
                    .select(pl.col("file").cast(pl.String), "run", "slot", "task", "t_rel",
                            "n_gen").iter_rows()):
            ticks.setdefault(tuple(row[:4]), []).append((row[4], row[5]))
    return ticks


def _llama_states(logs, ph: pl.DataFrame, lab: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(segments of every state, decode samples per (request, state)) of a llama-server log."""
    spans = run_spans(logs)
    ticks = _ticks(logs)
    seg_parts, sample_rows = [], []
    for (file, run), g in ph.group_by(["file", "run"], maintain_order=True):
        arrive = g.select(pl.coalesce("t_select", "t_start")).to_series()
        block = _iv(g["t_select"], g["t_start"])      # the loop is blocked for every slot
        wait = _iv(g["t_start"], g["p0"])
        pre = _iv(g["p0"], g["p1"])
        dec = _iv(g["d0"], g["d1"])
        busy_iv = _iv(arrive, g["t_end"])
        lo, hi = spans.get((file, run), (None, None))
        ends = [t for iv in (block, wait, pre, dec, busy_iv) for ab in iv for t in ab]
        if not ends:
            continue
        lo = min(ends) if lo is None else min(lo, min(ends))
        hi = max(ends) if hi is None else max(hi, max(ends))
        cuts = np.unique(np.array([lo, hi, *ends], dtype=float))
        if len(cuts) < 2:
            continue
        mids, width = (cuts[:-1] + cuts[1:]) / 2, np.diff(cuts)
        blocked = _cover(block, mids) > 0
        k = np.where(blocked, 0, _cover(dec, mids))
        j = np.where(blocked, 0, _cover(pre, mids))
        busy = _cover(busy_iv, mids)
        state = np.where(blocked, "stall", np.where(
            k > 0, "decode", np.where(j > 0, "prefill", np.where(busy > 0, "stall", "idle"))))
        # the clock that stops while the loop is blocked: a request's n_gen curve runs on it
        cum_b = np.concatenate([[0.0], np.cumsum(np.where(blocked, width, 0.0))])
        tokens = np.zeros(len(mids))
        for r in g.filter(pl.col("d0").is_not_null(), pl.col("d1") > pl.col("d0")).iter_rows(
                named=True):
            t, n = _curve(ticks, (file, run, r["slot"], r["task"]), r["d0"], r["d1"],
                          r["gen_tokens"])
            if len(t) < 2:
                continue
            u = t - np.interp(t, cuts, cum_b)
            u = u + np.arange(len(u)) * 1e-12        # strictly increasing for interp
            a_i, b_i = np.searchsorted(cuts, r["d0"]), np.searchsorted(cuts, r["d1"])
            if b_i <= a_i:
                continue
            ua = cuts[a_i:b_i] - cum_b[a_i:b_i]
            ub = cuts[a_i + 1:b_i + 1] - cum_b[a_i + 1:b_i + 1]
            tok = np.clip(np.interp(ub, u, n) - np.interp(ua, u, n), 0, None)
            tokens[a_i:b_i] += tok
            per: dict[tuple[int, int], list[float]] = {}
            for kk, jj, sec, tk in zip(k[a_i:b_i], j[a_i:b_i], width[a_i:b_i], tok,
                                       strict=True):
                if kk <= 0:
                    continue
                acc = per.setdefault((int(kk), int(jj)), [0.0, 0.0])
                acc[0] += sec
                acc[1] += tk
            for (kk, jj), (sec, tk) in per.items():
                sample_rows.append((lab, file, run, r["slot"], r["task"], "request", kk, jj,
                                    float(tk), float(sec), tk / sec if sec > 0 else None,
                                    None if r["gen_tokens"] is not None else CUT))
        seg_parts.append((file, run, cuts, k, j, state, busy, tokens, width))
    if not seg_parts:
        segs = pl.DataFrame(schema=STATES_SCHEMA)
    else:   # one frame of every run's segments (a frame per run costs more than its rows)
        n = [len(p[3]) for p in seg_parts]
        segs = pl.DataFrame({
            "label": [lab] * sum(n),
            "file": [p[0] for p, m in zip(seg_parts, n, strict=True) for _ in range(m)],
            "run": [p[1] for p, m in zip(seg_parts, n, strict=True) for _ in range(m)],
            "t0": np.concatenate([p[2][:-1] for p in seg_parts]),
            "t1": np.concatenate([p[2][1:] for p in seg_parts]),
            **{c: np.concatenate([p[i] for p in seg_parts])
               for i, c in ((3, "decoding"), (4, "prefilling"), (5, "state"), (6, "busy"),
                            (7, "tokens"), (8, "seconds"))}}).cast(STATES_SCHEMA)
    return _merge(segs), pl.DataFrame(sample_rows, schema=SAMPLE_SCHEMA, orient="row")


def _merge(segs: pl.DataFrame) -> pl.DataFrame:
    """Adjacent segments of one run in the same state and count made one."""
    if segs.height == 0:
        return segs
    key = ["file", "run", "state", "decoding", "prefilling", "busy"]
    new = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in key])
    return (segs.sort("file", "run", "t0").with_columns(new.cum_sum().alias("_g"))
            .group_by("_g", maintain_order=True)
            .agg(pl.col("label", "file", "run").first(), pl.col("t0").min(),
                 pl.col("t1").max(), pl.col("decoding", "prefilling", "state", "busy").first(),
                 pl.col("tokens", "seconds").sum())
            .select(list(STATES_SCHEMA)).cast(STATES_SCHEMA))


def _window_states(logs, lab: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """SGLang/vLLM: a segment per decode window interval, the rest of the lines' span idle."""
    from logscope.analysis.windows import decode_intervals, window_timeline

    s = decode_intervals(logs, lab).cast(SAMPLE_SCHEMA)
    tl = window_timeline(logs, lab)
    if s.height == 0:
        return pl.DataFrame(schema=STATES_SCHEMA), s
    segs = s.select("label", "file", "run", pl.lit(None, pl.Float64).alias("t0"),
                    pl.lit(None, pl.Float64).alias("t1"), "decoding", "prefilling",
                    pl.lit("decode").alias("state"), pl.col("decoding").alias("busy"),
                    "tokens", "seconds")
    if tl.height:
        span = tl.group_by("file", "run", maintain_order=True).agg(   # the same order each run
            (pl.col("t1").max() - pl.col("t0").min()).alias("_span"))
        from logscope.analysis.window_fit import window_spans
        ws = window_spans(logs)
        if ws is not None:   # the run's span as served throughput reads it, where longer
            span = span.join(ws.rename({"seconds": "_ws"}), on=["file", "run"], how="left") \
                .select("file", "run", pl.max_horizontal("_span", "_ws").alias("_span"))
        used = s.group_by("file", "run").agg(pl.col("seconds").sum().alias("_used"))
        rest = span.join(used, on=["file", "run"], how="left").select(
            pl.lit(lab).alias("label"), "file", "run", pl.lit(None, pl.Float64).alias("t0"),
            pl.lit(None, pl.Float64).alias("t1"), pl.lit(0).alias("decoding"),
            pl.lit(0).alias("prefilling"), pl.lit("idle").alias("state"),
            pl.lit(0).alias("busy"), pl.lit(0.0).alias("tokens"),
            (pl.col("_span") - pl.col("_used").fill_null(0)).clip(lower_bound=0)
            .alias("seconds")).filter(pl.col("seconds") > 0)
        segs = pl.concat([segs.cast(STATES_SCHEMA), rest.cast(STATES_SCHEMA)])
    return segs.cast(STATES_SCHEMA), s


def _states(logs, lab: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(segments of every state, decode samples) from one reading of the phases or windows;
    remembered for the same ingest (the same table objects) and label."""
    def compute() -> tuple[pl.DataFrame, pl.DataFrame]:
        ph = _phases(logs)
        return _llama_states(logs, ph, lab) if ph is not None and ph.height \
            else _window_states(logs, lab)
    return remembered(logs, f"states:{lab}",
                      ("requests", "decode_progress", "decode_batch", "engine_stats"), compute)


def states(logs, label: str | None = None) -> pl.DataFrame:
    """Every moment of every run in one state (module docstring): ``t0``, ``t1`` (server clock;
    null for window logs, whose intervals are summed), ``state``, ``decoding``, ``prefilling``,
    ``busy`` (requests in progress), ``tokens`` generated and ``seconds``. The seconds add up to
    each run's span, the tokens to the tokens generated.

    Example::

        st = states(logscope.read("server.log"))
        st.group_by("state").agg(pl.col("seconds", "tokens").sum())
    """
    return _states(logs, label_of(logs, label))[0]


def timeline(logs, label: str | None = None) -> pl.DataFrame:
    """Segments of fixed (decoding, prefilling) per (file, run) in which something computes,
    on the run's clock (seconds); stalls and idle time are left out (see :func:`states`).

    Example::

        tl = timeline(logscope.read("server.log"))
        tl.group_by("decoding", "prefilling").agg((pl.col("t1") - pl.col("t0")).sum())
    """
    lab = label_of(logs, label)
    segs = _states(logs, lab)[0]
    if segs.height == 0 or segs["t0"].null_count():   # window lines: their own intervals
        from logscope.analysis.windows import window_timeline
        return window_timeline(logs, lab).cast(TIMELINE_SCHEMA)
    return segs.filter(pl.col("state").is_in(["decode", "prefill"])).select(
        list(TIMELINE_SCHEMA))


def _curve(ticks: dict[tuple, list], key: tuple, d0: float, d1: float,
           gen: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative n_gen curve of one request: times and tokens, 0 at d0 (``ticks``: the
    (t_rel, n_gen) progress lines of every request, by key)."""
    t, n = [d0], [0.0]
    if ticks:
        mine = ticks.get(key)
        if mine is not None:
            for tt, ng in mine:
                if d0 < tt < d1 and ng >= n[-1]:
                    t.append(tt)
                    n.append(float(ng))
    if gen is not None and gen >= n[-1]:
        t.append(d1)
        n.append(float(gen))
    elif len(t) > 1 and t[-1] < d1:  # cut during decode: the last tick's rate to the end
        rate = n[-1] / (t[-1] - d0) if t[-1] > d0 else 0.0
        n.append(n[-1] + rate * (d1 - t[-1]))
        t.append(d1)
    return np.asarray(t), np.asarray(n)


def decode_samples(logs, label: str | None = None) -> pl.DataFrame:
    """Per-stream decode samples, each in one state (see the module docstring).

    Example::

        s = decode_samples(logscope.read("server.log"))
        s.filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)["tps"].median()
    """
    return _states(logs, label_of(logs, label))[1]


def weighted_median(v: np.ndarray, w: np.ndarray) -> float | None:
    """Weighted median; where the half falls on a boundary, the mean of the two sides (so
    equal weights give the ordinary median)."""
    if len(v) == 0:
        return None
    o = np.argsort(v)
    v, w = v[o], w[o]
    c = np.cumsum(w)
    half = c[-1] / 2
    i = int(np.searchsorted(c, half))
    if i + 1 < len(v) and np.isclose(c[i], half):
        return float((v[i] + v[i + 1]) / 2)
    return float(v[min(i, len(v) - 1)])


def concurrency(logs, label: str | None = None) -> pl.DataFrame:
    """One row per (decoding, prefilling) state with a stream decoding (module docstring);
    what ``report --format json`` carries as ``"concurrency"``. ``per_stream_tps`` ×
    ``decoding`` = ``aggregate_tps`` = ``tokens`` ÷ ``seconds``.

    Example::

        concurrency(logscope.read("server.log")).filter(pl.col("decoding") == 1)
    """
    lab = label_of(logs, label)
    segs, s = _states(logs, lab)
    dec = segs.filter(pl.col("state") == "decode", pl.col("decoding") > 0)
    if dec.height == 0:
        return pl.DataFrame(schema=STATE_SCHEMA)
    window = bool(s.height and (s["unit"] == "window").any())
    out = (dec.group_by("decoding", "prefilling")
           .agg(pl.col("seconds").sum(), pl.col("tokens").sum())
           .with_columns((pl.col("tokens") / pl.col("seconds")).alias("aggregate_tps"))
           .with_columns((pl.col("aggregate_tps") / pl.col("decoding")).alias("per_stream_tps")))
    med_rows = []
    if window:      # the clean windows' per-stream rates, weighed by their seconds
        clean = s.filter(pl.col("flag").is_null(), pl.col("tps").is_not_null())
        for (k, j), g in clean.group_by(["decoding", "prefilling"]):
            med_rows.append((k, j, weighted_median(g["tps"].to_numpy(),
                                                   g["seconds"].to_numpy()), g.height))
    else:           # requests by the state they decoded in most: their exact rates
        rc = request_concurrency(logs, lab, ph_states=(segs, s))
        share = s.with_columns((pl.col("seconds") / pl.col("seconds").sum().over(KEY))
                               .alias("_share")).cast({"file": pl.String, "run": pl.Int32})
        dom = _dominant(s).drop("alone")
        rate = rc.select(*KEY, "decode_tps", "gen_tokens").filter(
            pl.col("gen_tokens") >= MIN_SAMPLE_TOKENS, pl.col("decode_tps").is_not_null())
        pure = share.filter(pl.col("_share") >= ALONE_SHARE).join(rate, on=KEY)
        mostly = dom.join(rate, on=KEY)
        for (k, j), g in mostly.group_by(["decoding", "prefilling"]):
            p = pure.filter(pl.col("decoding") == k, pl.col("prefilling") == j)
            use = p if p.height >= MIN_PURE else g    # wholly in the state, else mostly
            med_rows.append((k, j, float(use["decode_tps"].median()), use.height))
    med = pl.DataFrame(med_rows, schema={"decoding": pl.Int16, "prefilling": pl.Int16,
                                         "median_request_tps": pl.Float64, "n": pl.Int64},
                       orient="row")
    out = out.cast({"decoding": pl.Int16, "prefilling": pl.Int16}).join(
        med, on=["decoding", "prefilling"], how="left")
    return out.with_columns(
        pl.lit(lab).alias("label"), pl.col("n").fill_null(0),
        pl.lit(WINDOW if window else EXACT).alias("exactness"),
        pl.lit("window intervals" if window else "requests' n_gen curves").alias("source"),
    ).select(list(STATE_SCHEMA)).cast(STATE_SCHEMA).sort("decoding", "prefilling")


def _dominant(s: pl.DataFrame) -> pl.DataFrame:
    """Per request: the (decoding, prefilling) it decoded in most, and whether it was alone."""
    return (s.sort("seconds", descending=True).group_by(KEY).agg(
        pl.col("decoding").first(), pl.col("prefilling").first(),
        ((pl.when((pl.col("decoding") == 1) & (pl.col("prefilling") == 0))
          .then(pl.col("seconds")).otherwise(0.0)).sum()
         / pl.col("seconds").sum() >= ALONE_SHARE).alias("alone"))
        .cast({"file": pl.String, "run": pl.Int32}))


def _others_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per request of one server run (starts ``a``, ends ``b``): the most other requests in
    progress at once during its life, from the in-progress count just after each start or end
    inside [start, end) (ends before starts at one instant); 0 for a request no event falls in.
    Every request has both times (:func:`_phases` keeps no other)."""
    times = np.concatenate([a, b])
    step = np.concatenate([np.ones(len(a), np.int64), -np.ones(len(b), np.int64)])
    order = np.lexsort((step, times))   # by time, an end before a start at the same time
    times, level = times[order], np.cumsum(step[order])
    lo, hi = np.searchsorted(times, a, "left"), np.searchsorted(times, b, "left")
    ext = np.append(level, 0)   # lets a range end at the last event
    spans = np.maximum.reduceat(ext, np.column_stack([lo, hi]).ravel())[::2]
    m = np.where(hi > lo, spans, 1)
    return np.maximum(m - 1, 0)


def request_concurrency(logs, label: str | None = None,
                        ph_states: tuple | None = None) -> pl.DataFrame:
    """Per llama-server request: the state it decoded in most (``decoding``), ``alone`` and
    ``others_max`` (the most other requests in progress at once during its life).

    Example::

        request_concurrency(logscope.read("server.log")).filter(pl.col("alone"))
    """
    lab = label_of(logs, label)
    ph = _phases(logs)
    if ph is None or ph.height == 0:
        return pl.DataFrame(schema=REQUEST_SCHEMA)
    s = (ph_states or _states(logs, lab))[1]   # the states read once per ingest and label
    dom = _dominant(s).drop("prefilling")
    others = np.zeros(ph.height, dtype=np.int64)
    idx = ph.with_row_index("_i")
    for _, g in idx.group_by(["file", "run"]):
        a, b = g["t_start"].to_numpy(), g["t_end"].to_numpy()
        others[g["_i"].to_numpy()] = _others_max(a, b)
    out = ph.with_columns(pl.Series("others_max", others)).join(
        dom.cast({"file": pl.String, "run": pl.Int32}), on=KEY, how="left")
    return out.select(*KEY, "decoding", pl.col("alone").fill_null(False), "others_max",
                      "decode_tps", "gen_tokens").cast(REQUEST_SCHEMA)


__all__ = ["states", "timeline", "decode_samples", "concurrency", "request_concurrency",
           "state_label", "run_spans", "weighted_median", "STATES", "MIN_SAMPLE_TOKENS"]
