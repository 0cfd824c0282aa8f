"""Concurrency, defined once: how many requests decode and how many prefill at every moment.

Every table, plot, headline and the verdict that speaks of concurrency takes it from here.

* :func:`timeline`: the segments of each (file, run) with a fixed state — ``decoding`` requests
  and ``prefilling`` requests. llama-server: from each request's own times
  (:func:`logscope.analysis.timeline.request_times`): it prefills from the start of its prompt's
  compute to the start of its decode (release − ``eval time``), and decodes from there to its
  release. A request cut during decode (no timing block) decodes from its first ``n_gen`` line
  minus ``n_gen / tg`` to its release. SGLang and vLLM: from their window lines
  (:mod:`logscope.analysis.windows`).
* :func:`decode_samples`: the units every per-stream decode figure rests on. llama-server: one
  row per (request, state) piece: the seconds the request decoded in that state and the tokens it
  decoded meanwhile, read off its cumulative ``n_gen`` curve (the ``n_gen`` progress lines,
  0 at the decode start and the ``eval`` count at release, joined by straight lines). SGLang and
  vLLM: one row per window interval (tokens ÷ (seconds × streams decoding)).
* :func:`concurrency`: one row per state with at least one stream decoding: ``seconds`` in it,
  ``per_stream_tps`` (llama-server: the median exact rate of the requests that decoded wholly
  in the state (``ALONE_SHARE`` of their decode), when there are ``MIN_PURE`` of them; else the
  weighted median of every piece of at least ``MIN_SAMPLE_TOKENS`` tokens, a request counting
  once, shared among its states by their share of its decode time; SGLang/vLLM: the median of
  the windows weighted by their seconds), ``aggregate_tps`` (all tokens decoded in the state ÷
  its seconds), ``n``.
  ``(1, 0)`` is "alone on the GPU"; ``(1, 1)`` is "decoding while another slot prefills".
* :func:`request_concurrency`: per llama-server request, the state it decoded in most, whether it
  decoded alone, and ``others_max``: the most other requests in progress at once beside it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from logscope.analysis._util import EXACT, WINDOW, label_of, table

MIN_SAMPLE_TOKENS = 16   # a piece shorter than this is too short to be a rate of its own
ALONE_SHARE = 0.98       # a request "ran alone" when this share of its decode was in (1, 0)
MIN_PURE = 3             # requests wholly in a state that make its per-stream figure alone

TIMELINE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t0": pl.Float64,
                   "t1": pl.Float64, "decoding": pl.Int16, "prefilling": pl.Int16}
SAMPLE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
                 "task": pl.Int64, "unit": pl.String, "decoding": pl.Int16,
                 "prefilling": pl.Int16, "tokens": pl.Float64, "seconds": pl.Float64,
                 "tps": pl.Float64, "flag": pl.String}
STATE_SCHEMA = {"label": pl.String, "decoding": pl.Int16, "prefilling": pl.Int16,
                "seconds": pl.Float64, "per_stream_tps": pl.Float64,
                "aggregate_tps": pl.Float64, "n": pl.Int64, "exactness": pl.String,
                "source": pl.String}
REQUEST_SCHEMA = {"file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
                  "decoding": pl.Int16, "alone": pl.Boolean, "others_max": pl.Int64,
                  "decode_tps": pl.Float64, "gen_tokens": pl.Int64}
KEY = ["file", "run", "slot", "task"]
CUT = "cut during decode: tokens from its n_gen lines"


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
    """Per llama-server request: t_start, t_end, prefill [p0, p1), decode [d0, d1)."""
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
        *KEY, "t_start", "t_end", "gen_tokens", "decode_tps",
        pl.col("prompt_start").alias("p0"),
        pl.coalesce(d0, pl.col("t_end")).alias("p1"),
        d0.alias("d0"),
        pl.when(d0.is_not_null()).then(pl.col("t_end")).alias("d1"),
    ).filter(pl.col("t_start").is_not_null(), pl.col("t_end").is_not_null())


def _sweep(iv: list[tuple[float, float, int, int]]) -> list[tuple[float, float, int, int]]:
    """Segments of constant (decoding, prefilling) from intervals (a, b, +dec, +pre)."""
    ev: dict[float, list[int]] = {}
    for a, b, dd, pp in iv:
        if b <= a:
            continue
        ev.setdefault(a, [0, 0])
        ev.setdefault(b, [0, 0])
        ev[a][0] += dd
        ev[a][1] += pp
        ev[b][0] -= dd
        ev[b][1] -= pp
    ts = sorted(ev)
    out, k, j = [], 0, 0
    for t0, t1 in zip(ts, ts[1:], strict=False):
        k += ev[t0][0]
        j += ev[t0][1]
        if k > 0 or j > 0:
            out.append((t0, t1, k, j))
    return out


def _llama_timeline(ph: pl.DataFrame, lab: str) -> pl.DataFrame:
    rows = []
    for (file, run), g in ph.group_by(["file", "run"], maintain_order=True):
        iv = [(a, b, 0, 1) for a, b in zip(g["p0"], g["p1"], strict=True)
              if a is not None and b is not None]
        iv += [(a, b, 1, 0) for a, b in zip(g["d0"], g["d1"], strict=True)
               if a is not None and b is not None]
        rows += [(lab, file, run, t0, t1, k, j) for t0, t1, k, j in _sweep(iv)]
    return pl.DataFrame(rows, schema=TIMELINE_SCHEMA, orient="row")


def timeline(logs, label: str | None = None) -> pl.DataFrame:
    """Segments of fixed (decoding, prefilling) per (file, run), on the run's clock (seconds).

    Example::

        tl = timeline(logscope.read("server.log"))
        tl.group_by("decoding", "prefilling").agg((pl.col("t1") - pl.col("t0")).sum())
    """
    return _states(logs, label_of(logs, label), samples=False)[0]


def _states(logs, lab: str, samples: bool = True) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """(timeline, decode samples) from one reading of the requests' phases (or windows)."""
    ph = _phases(logs)
    if ph is not None and ph.height:
        tl = _llama_timeline(ph, lab)
        return tl, _llama_samples(logs, ph, tl, lab) if samples else None
    from logscope.analysis.windows import decode_intervals, window_timeline
    return (window_timeline(logs, lab).cast(TIMELINE_SCHEMA),
            decode_intervals(logs, lab).cast(SAMPLE_SCHEMA) if samples else None)


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


def _llama_samples(logs, ph: pl.DataFrame, tl: pl.DataFrame, lab: str) -> pl.DataFrame:
    dp = table(logs, "decode_progress")
    ticks: dict[tuple, list] = {}
    if dp is not None and {"n_gen", "t_rel"} <= set(dp.columns):
        for row in (dp.drop_nulls(["t_rel", "n_gen"]).sort("t_rel")
                    .select(pl.col("file").cast(pl.String), "run", "slot", "task", "t_rel",
                            "n_gen").iter_rows()):
            ticks.setdefault(tuple(row[:4]), []).append((row[4], row[5]))
    rows = []
    # segments of a run are disjoint and in time order: a request's are one slice of them
    segs = {k: tuple(g.sort("t0")[c].to_numpy() for c in ("t0", "t1", "decoding", "prefilling"))
            for k, g in tl.group_by(["file", "run"])}
    for r in ph.filter(pl.col("d0").is_not_null(), pl.col("d1") > pl.col("d0")).iter_rows(
            named=True):
        seg = segs.get((r["file"], r["run"]))
        if seg is None:
            continue
        t0s, t1s, ks, js = seg
        lo, hi = np.searchsorted(t1s, r["d0"], "right"), np.searchsorted(t0s, r["d1"], "left")
        if hi <= lo:
            continue
        t, n = _curve(ticks, (r["file"], r["run"], r["slot"], r["task"]), r["d0"], r["d1"],
                      r["gen_tokens"])
        if len(t) < 2:
            continue
        a = np.maximum(t0s[lo:hi], r["d0"])
        b = np.minimum(t1s[lo:hi], r["d1"])
        tok = np.interp(b, t, n) - np.interp(a, t, n)
        per: dict[tuple[int, int], list[float]] = {}
        for k, j, sec, tk in zip(ks[lo:hi], js[lo:hi], b - a, tok, strict=True):
            acc = per.setdefault((int(k), int(j)), [0.0, 0.0])
            acc[0] += sec
            acc[1] += tk
        for (k, j), (sec, tk) in per.items():
            rows.append((lab, r["file"], r["run"], r["slot"], r["task"], "request", k, j,
                         float(tk), float(sec), tk / sec if sec > 0 else None,
                         None if r["gen_tokens"] is not None else CUT))
    return pl.DataFrame(rows, schema=SAMPLE_SCHEMA, orient="row")


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
    what ``report --format json`` carries as ``"concurrency"``.

    Example::

        concurrency(logscope.read("server.log")).filter(pl.col("decoding") == 1)
    """
    lab = label_of(logs, label)
    tl, s = _states(logs, lab)
    if tl.height == 0 or s.height == 0:
        return pl.DataFrame(schema=STATE_SCHEMA)
    window = bool((s["unit"] == "window").any())
    secs = (tl.filter(pl.col("decoding") > 0)
            .group_by("decoding", "prefilling")
            .agg((pl.col("t1") - pl.col("t0")).sum().alias("seconds")))
    clean = s.filter(pl.col("flag").is_null()).with_columns(
        pl.col("seconds").sum().over(["file", "run", "slot", "task"]).alias("_req_s"))
    rows = []
    tokens = dict(((k, j), v) for k, j, v in s.group_by("decoding", "prefilling")
                  .agg(pl.col("tokens").sum()).iter_rows())
    for (k, j), g in clean.group_by(["decoding", "prefilling"]):
        use = g.filter(pl.col("tokens") >= MIN_SAMPLE_TOKENS, pl.col("tps").is_not_null())
        pure = use.filter(pl.col("seconds") >= ALONE_SHARE * pl.col("_req_s"))
        if window:   # windows weigh by their seconds
            per = weighted_median(use["tps"].to_numpy(), use["seconds"].to_numpy())
        elif pure.height >= MIN_PURE or pure.height == use.height:
            per = float(pure["tps"].median()) if pure.height else None  # exact per request
        else:        # pieces too: a request counts once, shared by its share of decode time
            share = (use["seconds"] / use["_req_s"]).to_numpy()
            per = weighted_median(use["tps"].to_numpy(), share)
        rows.append((lab, k, j, float(tokens[(k, j)]), per, use.height))
    per = pl.DataFrame(rows, schema={"label": pl.String, "decoding": pl.Int16,
                                     "prefilling": pl.Int16, "_tokens": pl.Float64,
                                     "per_stream_tps": pl.Float64, "n": pl.Int64},
                       orient="row")
    if window:   # the windows' own seconds: the timeline of a window log is those intervals
        secs = (clean.group_by("decoding", "prefilling")
                .agg(pl.col("seconds").sum()))
    out = per.join(secs.cast({"decoding": pl.Int16, "prefilling": pl.Int16}),
                   on=["decoding", "prefilling"], how="left")
    out = out.with_columns(
        (pl.col("_tokens") / pl.col("seconds")).alias("aggregate_tps"),
        pl.lit(WINDOW if window else EXACT).alias("exactness"),
        pl.lit("window intervals" if window else "requests' n_gen curves").alias("source"))
    return out.select(list(STATE_SCHEMA)).cast(STATE_SCHEMA).sort("decoding", "prefilling")


def request_concurrency(logs, label: str | None = None) -> pl.DataFrame:
    """Per llama-server request: the state it decoded in most (``decoding``), ``alone`` and
    ``others_max`` (the most other requests in progress at once during its life).

    Example::

        request_concurrency(logscope.read("server.log")).filter(pl.col("alone"))
    """
    lab = label_of(logs, label)
    ph = _phases(logs)
    if ph is None or ph.height == 0:
        return pl.DataFrame(schema=REQUEST_SCHEMA)
    s = _llama_samples(logs, ph, _llama_timeline(ph, lab), lab)
    dom = (s.sort("seconds", descending=True).group_by(KEY).agg(
        pl.col("decoding").first(),
        ((pl.when((pl.col("decoding") == 1) & (pl.col("prefilling") == 0))
          .then(pl.col("seconds")).otherwise(0.0)).sum()
         / pl.col("seconds").sum() >= ALONE_SHARE).alias("alone")))
    others = np.zeros(ph.height, dtype=np.int64)
    idx = ph.with_row_index("_i")
    for _, g in idx.group_by(["file", "run"]):
        a, b = g["t_start"].to_numpy(), g["t_end"].to_numpy()
        ev = sorted([(x, 1) for x in a] + [(y, -1) for y in b], key=lambda e: (e[0], e[1]))
        times = np.array([e[0] for e in ev])
        level = np.cumsum([e[1] for e in ev])
        for i, x, y in zip(g["_i"], a, b, strict=True):
            # in-progress count just after each event inside (x, y), and at x itself
            lo, hi = np.searchsorted(times, x, "left"), np.searchsorted(times, y, "left")
            m = int(level[lo:hi].max()) if hi > lo else 1
            others[i] = max(m - 1, 0)
    out = ph.with_columns(pl.Series("others_max", others)).join(
        dom.cast({"file": pl.String, "run": pl.Int32}), on=KEY, how="left")
    return out.select(*KEY, "decoding", pl.col("alone").fill_null(False), "others_max",
                      "decode_tps", "gen_tokens").cast(REQUEST_SCHEMA)


__all__ = ["timeline", "decode_samples", "concurrency", "request_concurrency", "state_label",
           "MIN_SAMPLE_TOKENS"]
