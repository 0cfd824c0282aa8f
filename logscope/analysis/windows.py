"""SGLang's and vLLM's window lines turned into time: each line covers the interval since the
previous line of its kind, and is weighed by that interval, never counted as one sample.

What a line's throughput is (the servers' own logging code, see the format catalogues):

* SGLang ``Decode batch``: printed every ``decode_log_interval`` (40) forward steps;
  ``gen throughput`` = the tokens generated since the previous ``Decode batch`` line ÷ the wall
  time since it, so it also spans any prefill batch, stall or idle time in between.
  ``#running-req`` = the requests in the decode batch when the line is printed.
* SGLang ``Prefill batch``: ``input throughput`` = the batch's new tokens ÷ the time since the
  previous ``Prefill batch`` line (not the batch's own speed).
* vLLM stats line: every ~10 s, ``Avg generation throughput`` and ``Avg prompt throughput`` over
  the interval; ``Running`` counts requests still prefilling too.

:func:`decode_intervals`: one row per interval between two decode window lines of one
(file, run, rank), ``decoding`` = the running requests, ``prefilling`` = 1 when a prefill batch
ran inside it (SGLang: a ``Prefill batch`` line between the two; vLLM: prompt throughput > 0),
``tokens`` = throughput × seconds, ``tps`` per stream = throughput ÷ decoding. An interval that
spans a prefill, or is more than ``STALL_FACTOR``× the median interval around it (its
``STALL_NEIGHBOURS`` neighbours each side: idle or a stall folded into the average; decode that
slows for good, as at a deep context, is not a stall), or whose running count differs at its two
ends (the state changed inside it: vLLM's ~10 s interval often holds several states, and an
SGLang line's 40 steps span seconds when decode is slow), is flagged and kept out of per-stream
figures. Timestamps printed to the whole second (``resolution_s``) cannot time a line that comes
every half second: there an SGLang interval's seconds are its tokens (``DECODE_LOG_INTERVAL``
steps × running × accept len, the server's default interval assumed) ÷ its throughput. Per-
stream rates do not depend on the seconds, which only weigh the intervals.

:func:`prefill_points`: SGLang's chunked prefill as depth stretches: the interval between two
consecutive ``Prefill batch`` lines with no decode line between them is the second batch's
compute (plus scheduling), at depth ``#cached-token`` … ``+ #new-token``.
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import WINDOW, col_or_null, label_of, table, with_time

STALL_FACTOR = 4.0
STALL_NEIGHBOURS = 3     # intervals each side that say what "usual" is around an interval
DECODE_LOG_INTERVAL = 40  # SGLang's default --decode-log-interval (forward steps per line)
MERGE_RESOLUTIONS = 10   # a stretch timed to ±1 step must span 10 (error at most 10 %)
SPANS_PREFILL = "spans a prefill batch"
SPANS_STALL = "spans idle or a stall (interval far longer than the log's usual)"
MIXED = "running count changed inside the interval (states mixed)"
FIRST = "the run's first interval (idle before its first request may be inside)"
SAMPLE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64,
                 "task": pl.Int64, "unit": pl.String, "decoding": pl.Int16,
                 "prefilling": pl.Int16, "tokens": pl.Float64, "seconds": pl.Float64,
                 "tps": pl.Float64, "flag": pl.String}
TIMELINE_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "t0": pl.Float64,
                   "t1": pl.Float64, "decoding": pl.Int16, "prefilling": pl.Int16}
PREFILL_SCHEMA = {"file": pl.String, "run": pl.Int32, "depth": pl.Float64,
                  "depth_start": pl.Int64, "tokens": pl.Int64, "seconds": pl.Float64,
                  "tps": pl.Float64, "solo": pl.Boolean, "source": pl.String,
                  "exactness": pl.String}
# one engine's own window lines: each data-parallel engine of a server run (vLLM
# ``Engine NNN``, SGLang's ``DPn``) logs its own windows; ``slot`` holds its index
GROUP = ["file", "run", "slot"]


def _lines(logs) -> tuple[pl.DataFrame, str] | None:
    """Decode and prefill window lines of one engine, in time order, with ``t`` (s)."""
    db, pb = table(logs, "decode_batch"), table(logs, "prefill_batch")
    if db is not None and "gen_throughput" in db.columns \
            and db["gen_throughput"].null_count() < db.height:
        parts = [db.select(*GROUP, "ts", "t_rel", "line", pl.lit("d").alias("_k"),
                           col_or_null(db, "accept_len", pl.Float64).alias("_acc"),
                           pl.col("gen_throughput").cast(pl.Float64).alias("_thr"),
                           pl.col("running_req").cast(pl.Int64).alias("_run"),
                           pl.lit(None, pl.Int64).alias("_new"),
                           pl.lit(None, pl.Int64).alias("_cached"),
                           pl.lit(None, pl.Float64).alias("_ithr"))]
        if pb is not None:
            parts.append(pb.select(
                *GROUP, "ts", "t_rel", "line", pl.lit("p").alias("_k"),
                pl.lit(None, pl.Float64).alias("_acc"),
                pl.lit(None, pl.Float64).alias("_thr"),
                col_or_null(pb, "running_req", pl.Int64).alias("_run"),
                col_or_null(pb, "new_token", pl.Int64).alias("_new"),
                col_or_null(pb, "cached_token", pl.Int64).alias("_cached"),
                col_or_null(pb, "input_throughput", pl.Float64).alias("_ithr")))
        df, basis = with_time(pl.concat(parts, how="vertical_relaxed"))
        return df.with_columns(pl.col("file").cast(pl.String)).sort("file", "t", "line"), \
            basis
    es = table(logs, "engine_stats")
    if es is not None and "gen_throughput" in es.columns \
            and es["gen_throughput"].null_count() < es.height:
        df, basis = with_time(es.select(
            *GROUP, "ts", "t_rel", "line", pl.lit("d").alias("_k"),
            pl.col("gen_throughput").cast(pl.Float64).alias("_thr"),
            pl.col("running_reqs").cast(pl.Int64).alias("_run"),
            col_or_null(es, "prompt_throughput", pl.Float64).alias("_pthr"),
            pl.lit(None, pl.Int64).alias("_new"), pl.lit(None, pl.Int64).alias("_cached")))
        return df.with_columns(pl.col("file").cast(pl.String)).sort("file", "t", "line"), basis
    return None


def _intervals(logs) -> pl.DataFrame | None:
    got = _lines(logs)
    if got is None:
        return None
    df, basis = got
    if basis != "s":          # no clock in the log: no interval can be timed
        return None
    g = [pl.col(c) for c in GROUP]
    is_d = pl.col("_k") == "d"
    df = df.with_columns(
        # prefill lines since the previous decode line of the same group
        (~is_d).cast(pl.Int32).cum_sum().over(GROUP).alias("_pcum"))
    d = df.filter(is_d).with_columns(
        pl.col("t").shift(1).over(g).alias("_t0"),
        pl.col("_run").shift(1).over(g).alias("_run0"),
        pl.col("_pcum").shift(1).over(g).alias("_pc0"))
    pref = (pl.col("_pcum") > pl.col("_pc0")).fill_null(False)
    vllm = "_pthr" in d.columns
    if vllm:
        pref = pref | (pl.col("_pthr").fill_null(0) > 0)
        # a stats line covers the interval before it, the run's first line too (which may
        # hold idle before the run's first request: flagged)
        res = resolution_s(logs) or 0.0
        per = run_intervals(d.select(*GROUP, "t"), res)
        per_df = pl.DataFrame([(f, r, e, v) for (f, r, e), v in per.items()], orient="row",
                              schema={"file": pl.String, "run": d.schema["run"],
                                      "slot": d.schema["slot"], "_T": pl.Float64})
        d = d.join(per_df, on=GROUP, how="left", maintain_order="left",
                   nulls_equal=True).with_columns(
            pl.col("_T").fill_null(0.0)).with_columns(
            pl.col("_t0").is_null().alias("_first"),
            pl.col("_t0").fill_null(pl.col("t") - pl.col("_T")))
    d = d.filter(pl.col("_t0").is_not_null(), pl.col("_run") > 0, pl.col("_thr") > 0)
    secs = pl.col("t") - pl.col("_t0")
    if "_pthr" not in d.columns and (resolution_s(logs) or 0) >= 1:
        # whole-second stamps: a line comes every DECODE_LOG_INTERVAL forward steps, each
        # giving every running stream (accept len) tokens, so the interval the throughput
        # divides by is those tokens ÷ the throughput (the stamps only bound it)
        step = pl.col("_acc").fill_null(1.0) if "_acc" in d.columns else pl.lit(1.0)
        secs = DECODE_LOG_INTERVAL * pl.col("_run") * step / pl.col("_thr")
    if vllm:
        # vLLM: a line comes every stats interval while work runs; after an idle stretch (no
        # line for longer) its throughputs cover one interval (V1 logs idle intervals below
        # INFO), the rest of the gap is idle, as the window fit reads it
        gap = pl.col("t") - pl.col("_t0")
        secs = pl.when(gap > 1.5 * pl.col("_T") + res).then(pl.col("_T")).otherwise(gap)
    d = d.with_columns(secs.alias("seconds"), pref.alias("_pref"))
    # a stall is an interval far longer than its neighbours (of the same group, prefill-free):
    # decode that slows down for good (a deep context on a CPU) is slow in every neighbour too
    clean = pl.when(~pl.col("_pref") & (pl.col("seconds") > 0)).then(pl.col("seconds"))
    d = d.with_columns(clean.rolling_median(window_size=2 * STALL_NEIGHBOURS + 1, center=True,
                                            min_samples=1).over(g).alias("_typical"))
    stall = (pl.col("seconds") > STALL_FACTOR * pl.col("_typical")).fill_null(False)
    # an interval whose running count differs at its two ends mixed states
    mixed = (pl.col("_run0") != pl.col("_run")).fill_null(False)
    first = pl.col("_first") if vllm else pl.lit(False)
    return d.with_columns(
        pl.when(pl.col("_pref")).then(pl.lit(SPANS_PREFILL))
        .when(first).then(pl.lit(FIRST))
        .when(stall).then(pl.lit(SPANS_STALL))
        .when(mixed).then(pl.lit(MIXED)).alias("flag"))


def decode_intervals(logs, label: str | None = None) -> pl.DataFrame:
    """Window intervals as decode samples (columns of ``concurrency.decode_samples``).

    Example::

        decode_intervals(logscope.read("sglang.log")).filter(pl.col("flag").is_null())
    """
    lab = label_of(logs, label)
    d = _intervals(logs)
    if d is None or d.height == 0:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    return d.select(
        pl.lit(lab).alias("label"), "file", "run", "slot", pl.lit(None, pl.Int64).alias("task"),
        pl.lit("window").alias("unit"), pl.col("_run").alias("decoding"),
        pl.col("_pref").cast(pl.Int16).alias("prefilling"),
        (pl.col("_thr") * pl.col("seconds")).alias("tokens"), "seconds",
        (pl.col("_thr") / pl.col("_run")).alias("tps"), "flag",
    ).filter(pl.col("seconds") > 0).cast(SAMPLE_SCHEMA)


def window_timeline(logs, label: str | None = None) -> pl.DataFrame:
    """The state timeline of a window log: one segment per interval (decoding = running
    requests, prefilling = 1 when a prefill batch ran inside).

    Example::

        window_timeline(logscope.read("sglang.log"))
    """
    lab = label_of(logs, label)
    d = _intervals(logs)
    if d is None or d.height == 0:
        return pl.DataFrame(schema=TIMELINE_SCHEMA)
    t0 = pl.col("t") - pl.col("seconds") if "_pthr" in d.columns else pl.col("_t0")
    return d.select(pl.lit(lab).alias("label"), "file", "run", t0.alias("t0"),
                    pl.col("t").alias("t1"), pl.col("_run").alias("decoding"),
                    pl.col("_pref").cast(pl.Int16).alias("prefilling")
                    ).filter(pl.col("t1") > pl.col("t0")).cast(TIMELINE_SCHEMA)


def stats_interval(gaps: pl.Series, resolution: float = 0.0) -> float | None:
    """vLLM's stats interval from the gaps between its lines: they come every interval while
    work runs and later after idle, so the mean of the gaps near the shortest common one
    (within 1.5 × the lower quartile + the stamps' resolution), not of all of them. The mean,
    not the median: whole-second stamps of a 10.3 s interval show gaps of 10 and 11 s (their
    median 10 would take 3 % off every interval's tokens), and a line late after a long step
    covers that longer interval (the server divides by the time since its last line)."""
    return gaps.rename("_gap").to_frame().select(_interval(resolution)).item()


def _interval(resolution: float) -> pl.Expr:
    """:func:`stats_interval` of the column ``_gap`` (per group in an aggregation)."""
    g = pl.col("_gap").filter(pl.col("_gap") > 0)
    return g.filter(g <= 1.5 * g.quantile(0.25, "lower") + resolution).mean()


def run_intervals(df: pl.DataFrame, resolution: float = 0.0) -> dict[tuple, float]:
    """vLLM's stats interval per server run and engine (``file``, ``run``, ``slot``: the
    engine index, each data-parallel engine printing its own lines; lines with ``t``), each
    from its own gaps (a restart may change ``VLLM_LOG_STATS_INTERVAL`` or the release's
    default), a run with too few lines taking the log's; empty without a gap to read.

    Example::

        run_intervals(pl.DataFrame({"file": ["a"] * 3, "run": [1] * 3, "slot": [0] * 3,
                                    "t": [0.0, 10.0, 20.0]}))   # {("a", 1, 0): 10.0}
    """
    gaps = df.sort(*GROUP, "t").with_columns(
        pl.col("t").diff().over(GROUP).alias("_gap"))
    every = stats_interval(gaps["_gap"], resolution)
    if every is None:
        return {}
    own = gaps.group_by(GROUP).agg(_interval(resolution).alias("_T"))   # per engine
    return {(str(f), r, e): v if v is not None else every for f, r, e, v in own.iter_rows()}


def engines_per_run(logs) -> int:
    """The most data-parallel engines any server run of a window log shows (each prints its
    own window lines: vLLM ``Engine NNN``, SGLang ``DPn``); 1 otherwise. Their intervals run
    side by side, so their seconds add up to that many times the run's span.

    Example::

        engines_per_run(logscope.read("vllm-dp2.log"))   # 2
    """
    got = _lines(logs)
    if got is None or got[0].height == 0:
        return 1
    n = got[0].group_by("file", "run").agg(pl.col("slot").drop_nulls().n_unique())
    return max(1, int(n["slot"].max() or 1))


def resolution_s(logs) -> float | None:
    """The timestamp resolution of a window log: 0.001 with milliseconds, 1.0 without."""
    db = table(logs, "decode_batch")
    if db is not None and "sg_msec" in db.columns:
        return 0.001 if db["sg_msec"].null_count() < db.height else 1.0
    es = table(logs, "engine_stats")
    return 1.0 if es is not None else None


def prefill_points(logs, label: str | None = None) -> pl.DataFrame:
    """SGLang prefill stretches by depth from consecutive ``Prefill batch`` lines.

    A stretch is a chunk of a chunked prompt: a ``Prefill batch`` line whose ``#cached-token``
    is where the line before it (with no ``Decode batch`` line between) ended, so the time
    between the two lines is this chunk's; its ``input throughput`` (the server's own
    microsecond timing of that interval) gives the seconds where printed, else the timestamps
    do (``solo``: no request was decoding at either line). Consecutive chunks of one prompt are
    merged until they span ``MERGE_RESOLUTIONS`` timestamp resolutions (10 s with whole-second
    stamps, so the timing error is at most 10 %); a stretch still shorter (the prompt ended
    first: its error could pass 10 %) is dropped, not reported.

    Example::

        prefill_points(logscope.read("sglang.log")).filter(pl.col("solo"))
    """
    got = _lines(logs)
    if got is None or got[1] != "s":
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    df, _ = got
    if "_pthr" in df.columns:   # vLLM: no depth in its lines
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    res = resolution_s(logs) or 1.0
    g = [pl.col(c) for c in GROUP]
    # decode lines so far; then the prefill lines alone, each with the one before it
    df = df.with_columns((pl.col("_k") == "d").cast(pl.Int32).cum_sum().over(g).alias("_dc"))
    p = df.filter(pl.col("_k") == "p").with_columns(
        pl.col("t").shift(1).over(g).alias("_tp"),
        pl.col("_run").shift(1).over(g).alias("_runp"),
        pl.col("_dc").shift(1).over(g).alias("_dcp"),
        (pl.col("_cached") + pl.col("_new")).shift(1).over(g).alias("_endp"))
    # a chunk of a prompt whose previous chunk was the prefill line before: the time between
    # the two lines is this chunk's (the first chunk's is not known: the line before it is
    # another's); decode lines between them mean decode steps ran in that time too
    p = p.filter(pl.col("_new") > 0, pl.col("_cached") == pl.col("_endp")).with_columns(
        ((pl.col("_dc") == pl.col("_dcp")) & (pl.col("_run").fill_null(0) == 0)
         & (pl.col("_runp").fill_null(0) == 0)).alias("_solo"))
    p = p.with_columns(pl.when(pl.col("_ithr") > 0).then(pl.col("_new") / pl.col("_ithr"))
                       .otherwise(pl.col("t") - pl.col("_tp")).alias("_secs"))
    p = p.filter(pl.col("_secs") >= 0)
    if p.height == 0:
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    rows = []
    acc: dict | None = None
    for r in p.iter_rows(named=True):
        secs = r["_secs"]
        res_r = 1e-6 if r["_ithr"] else res
        cached = r["_cached"] or 0
        solo = r["_solo"]
        if (acc is not None and acc["file"] == r["file"] and acc["run"] == r["run"]
                and acc["end"] == cached and acc["solo"] == solo
                and acc["seconds"] < MERGE_RESOLUTIONS * res_r):
            acc["tokens"] += r["_new"]
            acc["seconds"] += secs
            acc["end"] = cached + r["_new"]
            continue
        if acc is not None:
            rows.append(acc)
        acc = {"file": r["file"], "run": r["run"], "depth_start": cached, "solo": solo,
               "tokens": r["_new"], "seconds": secs, "end": cached + r["_new"], "res": res_r}
    if acc is not None:
        rows.append(acc)
    # a stretch still shorter than MERGE_RESOLUTIONS timestamp steps is too coarse to be a rate
    rows = [r for r in rows if r["seconds"] >= MERGE_RESOLUTIONS * r["res"]]
    if not rows:
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    out = pl.DataFrame(rows).with_columns(
        (pl.col("depth_start") + pl.col("tokens") / 2).cast(pl.Float64).alias("depth"),
        (pl.col("tokens") / pl.col("seconds")).alias("tps"),
        pl.lit("sglang:prefill_batch").alias("source"),
        pl.lit(f"interval between Prefill batch lines ({WINDOW})").alias("exactness"))
    return out.select(list(PREFILL_SCHEMA)).cast(PREFILL_SCHEMA)


__all__ = ["decode_intervals", "window_timeline", "prefill_points", "resolution_s"]
