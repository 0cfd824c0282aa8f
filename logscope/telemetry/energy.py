"""Energy per request from GPU telemetry joined to a llama-server log (rules: docs/energy.md).

* Clock: a run's zero (``t_rel = 0``) in wall-clock seconds is read from the log when its lines
  carry a wall clock (Unix timestamps, journald/docker wrappers), taken from ``start_time``
  when given, else placed by the whole run's busy/idle pattern against utilisation and power
  (:func:`logscope.telemetry.placement.place`).
* Power of the run: the selected GPUs' ``power_w`` summed; each GPU's samples are joined by
  straight lines and integrated exactly (trapezoids), only where that GPU has samples.
* Sharing: :func:`share_energy`, the one rule: within every slice of time, the energy goes to
  the requests active in it in proportion to the tokens each computes per second in that slice.

    >>> import logscope
    >>> from logscope.telemetry import read_with_telemetry
    >>> d = "fixtures/telemetry/h200/"
    >>> logs = read_with_telemetry([d + "generated-gpu-pressure-np4-ctxshift.log",
    ...                             d + "generated-gpu-pressure-np4-ctxshift.smi.csv"])
    >>> e = logs.tables["energy_runs"].row(0, named=True)
    >>> round(e["total_j"] - e["idle_j"] - logs["requests"]["energy_j"].sum(), 6)
    0.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from logscope.telemetry.columns import ENERGY_COLUMNS, null_energy
from logscope.telemetry.placement import POWER_WINDOW_S, UTIL_WINDOW_S, Work, place, refusal

EXACT_CLOCK = ("unix", "wrapper", "anchored:wrapper", "anchored:start-time")
RUN_SCHEMA: dict[str, Any] = {
    "file": pl.String, "run": pl.Int32, "clock_offset_s": pl.Float64,
    "clock_offset_source": pl.String, "clock_fit_r": pl.Float64,
    "clock_fit_spread_s": pl.Float64, "clock_fit_coverage": pl.Float64,
    "clock_fit_score": pl.Float64, "clock_runner_up_s": pl.Float64,
    "clock_runner_up_score": pl.Float64,
    "gpus": pl.List(pl.Int16), "telemetry": pl.List(pl.String), "window_s": pl.Float64,
    "covered_s": pl.Float64, "total_j": pl.Float64, "idle_j": pl.Float64,
    "idle_w": pl.Float64, "net_of_idle": pl.Boolean, "mean_power_w": pl.Float64,
    "busy_power_w": pl.Float64, "power_limit_w": pl.Float64, "prefill_j": pl.Float64,
    "decode_j": pl.Float64, "prompt_tokens": pl.Int64, "gen_tokens": pl.Int64,
    "prefill_j_per_token": pl.Float64, "decode_j_per_token": pl.Float64,
    "decode_tps_per_w": pl.Float64,
    "run_t0": pl.Float64, "run_t1": pl.Float64, "run_j": pl.Float64, "work_s": pl.Float64,
    "work_j": pl.Float64, "completion_tokens": pl.Int64, "run_j_per_token": pl.Float64,
    "work_j_per_token": pl.Float64,
}


class ClockError(Exception):
    """No way to place a run's log on the telemetry's clock (user error, one line)."""

    exit_code = 1


# ---------------------------------------------------------------------------------------------
# stretches: when each request computed what
# ---------------------------------------------------------------------------------------------

def stretches(requests: pl.DataFrame) -> pl.DataFrame:
    """One row per (request, phase) with log-time bounds ``t0``/``t1`` and ``tokens`` computed.

    * ``wait``: launch (``processing task``) to the start of prompt processing (the slot held,
      nothing computed for it: prompt-cache saves, a blocked server loop);
    * ``prefill``: the ``prompt_ms`` before decoding starts, with the computed prompt tokens;
    * ``decode``: the last ``decode_ms`` before release, with the generated tokens;
    * ``active``: a cancelled request without a timing block: launch to release, with
      ``ctx_tokens - cached_tokens`` tokens (at least 1); neither phase. A rejected request
      (``status`` error) computed nothing: it is a ``wait`` stretch.
    """
    key = ["file", "run", "slot", "task"]
    r = requests.filter(pl.col("t_start").is_not_null(), pl.col("t_end").is_not_null())
    timed = pl.col("decode_ms").is_not_null() & pl.col("gen_tokens").is_not_null()
    dstart = pl.max_horizontal(pl.col("t_start"),
                               pl.col("t_end") - pl.col("decode_ms").fill_null(0) / 1e3)
    pstart = pl.max_horizontal(pl.col("t_start"), dstart - pl.col("prompt_ms").fill_null(0) / 1e3)
    wait = r.filter(timed).select(
        *key, pl.lit("wait").alias("phase"), pl.col("t_start").alias("t0"), pstart.alias("t1"),
        pl.lit(0.0).alias("tokens"))
    pre = r.filter(timed).select(
        *key, pl.lit("prefill").alias("phase"), pstart.alias("t0"), dstart.alias("t1"),
        pl.max_horizontal(pl.col("prompt_tokens").fill_null(1), pl.lit(1)).cast(pl.Float64)
        .alias("tokens"))
    dec = r.filter(timed).select(
        *key, pl.lit("decode").alias("phase"), dstart.alias("t0"), pl.col("t_end").alias("t1"),
        pl.max_horizontal(pl.col("gen_tokens"), pl.lit(1)).cast(pl.Float64).alias("tokens"))
    other_tokens = (pl.col("ctx_tokens").fill_null(0) - pl.col("cached_tokens").fill_null(0)) \
        if "ctx_tokens" in r.columns else pl.lit(1)
    rejected = pl.col("status") == "error" if "status" in r.columns else pl.lit(False)
    act = r.filter(~timed).select(
        *key, pl.when(rejected).then(pl.lit("wait")).otherwise(pl.lit("active")).alias("phase"),
        pl.col("t_start").alias("t0"), pl.col("t_end").alias("t1"),
        pl.when(rejected).then(0.0).otherwise(pl.max_horizontal(other_tokens, pl.lit(1)))
        .cast(pl.Float64).alias("tokens"))
    return pl.concat([wait, pre, dec, act]).with_columns(pl.col("run").cast(pl.Int32))


# ---------------------------------------------------------------------------------------------
# power as a function of time
# ---------------------------------------------------------------------------------------------

class Power:
    """The summed power of some GPUs, integrable between any two wall-clock times (Unix s)."""

    def __init__(self, samples: pl.DataFrame, gpus: list[int] | None = None):
        s = samples.drop_nulls(["ts", "power_w"])
        if gpus is not None:
            s = s.filter(pl.col("gpu").is_in(gpus))
        s = _one_source(s)
        self.gpus = sorted(int(g) for g in s["gpu"].drop_nulls().unique().to_list())
        self.series = []
        for g in self.gpus:
            one = s.filter(pl.col("gpu") == g).sort("ts").unique("ts", keep="first",
                                                                maintain_order=True)
            t = one["ts"].dt.epoch("us").cast(pl.Float64).to_numpy() / 1e6
            p = one["power_w"].cast(pl.Float64).to_numpy()
            c = np.concatenate([[0.0], np.cumsum(np.diff(t) * (p[1:] + p[:-1]) / 2)])
            self.series.append((t, p, c))
        self.samples = s
        self.files = sorted(s["file"].drop_nulls().unique().to_list())
        limit = s.group_by("gpu").agg(pl.col("power_limit_w").median())["power_limit_w"]
        self.power_limit_w = float(limit.sum()) if limit.null_count() < limit.len() else None

    @property
    def span(self) -> tuple[float, float] | None:
        if not self.series:
            return None
        return (min(t[0] for t, _, _ in self.series), max(t[-1] for t, _, _ in self.series))

    def cumulative(self, x: np.ndarray) -> np.ndarray:
        """Energy (J) from the first sample up to each time in ``x``, summed over the GPUs."""
        out = np.zeros(len(x))
        for t, p, c in self.series:
            if len(t) < 2:
                continue
            xc = np.clip(x, t[0], t[-1])
            k = np.clip(np.searchsorted(t, xc, side="right") - 1, 0, len(t) - 2)
            dt = xc - t[k]
            slope = (p[k + 1] - p[k]) / (t[k + 1] - t[k])
            out += c[k] + p[k] * dt + 0.5 * slope * dt * dt
        return out

    def covered(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Seconds of [a, b] inside the span of every GPU's samples."""
        if not self.series:
            return np.zeros(len(a))
        lo = max(t[0] for t, _, _ in self.series)
        hi = min(t[-1] for t, _, _ in self.series)
        return np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0, None)

    def at(self, x: np.ndarray, column: str = "power_w") -> np.ndarray:
        """A sampled column (summed over the GPUs; utilisation: averaged) at times ``x``."""
        out = np.zeros(len(x))
        n = 0
        for g in self.gpus:
            one = self.samples.filter(pl.col("gpu") == g).drop_nulls(column).sort("ts")
            if one.height == 0:
                continue
            t = one["ts"].dt.epoch("us").cast(pl.Float64).to_numpy() / 1e6
            out += np.interp(x, t, one[column].cast(pl.Float64).to_numpy())
            n += 1
        return out / n if (column.startswith("util") and n) else out


def _one_source(s: pl.DataFrame) -> pl.DataFrame:
    """Per GPU, the query CSV's samples when both a CSV and dmon cover it (no double count)."""
    if s.height == 0 or s["source"].n_unique() < 2:
        return s
    best = s.group_by("gpu").agg(
        pl.col("source").filter(pl.col("source") == "nvidia-smi-query").first()
        .fill_null(pl.col("source").first()).alias("_keep"))
    return s.join(best, on="gpu").filter(pl.col("source") == pl.col("_keep")).drop("_keep")


# ---------------------------------------------------------------------------------------------
# the sharing rule
# ---------------------------------------------------------------------------------------------

def share_energy(t0: np.ndarray, t1: np.ndarray, tokens: np.ndarray, window: tuple[float, float],
                 cumulative, idle_w: float | None = None,
                 waiting: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """Share the energy of ``window`` among stretches: (energy per stretch, idle J, total J).

    The window is cut at every stretch end; a slice's energy (``cumulative(b) - cumulative(a)``)
    goes to the computing stretches covering it in proportion to their token rate
    ``tokens / (t1 - t0)`` (a stretch computes its tokens evenly over its length), so a request
    prefilling thousands of tokens a second takes most of a slice it shares with a decoding one.
    A slice no computing stretch covers goes in equal shares to the ``waiting`` stretches
    covering it (a request held in its slot while nothing computes), else it is idle. With
    ``idle_w``, a covered slice gives its requests only the energy above ``idle_w`` watts and
    the rest is idle too. So ``sum(energy) + idle == total`` always.
    """
    lo, hi = window
    a = np.clip(t0, lo, hi)
    b = np.clip(t1, lo, hi)
    if waiting is None:
        waiting = np.zeros(len(a), dtype=bool)
    bounds = np.unique(np.concatenate([[lo, hi], a, b]))
    e_slice = np.diff(cumulative(bounds))
    total = float(e_slice.sum())
    dur = t1 - t0
    rate = np.where(waiting, 1.0, np.where(dur > 0, tokens / np.where(dur > 0, dur, 1), 0.0))
    i0 = np.searchsorted(bounds, a)
    i1 = np.searchsorted(bounds, b)
    n = len(bounds)

    def coverage(mask: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cnt = np.zeros(n, dtype=np.int64)  # exact: which slices some stretch covers
        np.add.at(cnt, i0[mask], 1)
        np.add.at(cnt, i1[mask], -1)
        ws = np.zeros(n)
        np.add.at(ws, i0[mask], w[mask])
        np.add.at(ws, i1[mask], -w[mask])
        return np.cumsum(cnt)[:-1] > 0, np.cumsum(ws)[:-1]

    comp = ~waiting & (rate > 0)
    busy_c, wsum_c = coverage(comp, rate)
    busy_w, wsum_w = coverage(waiting, rate)
    busy_w &= ~busy_c
    if idle_w is not None:
        e_slice = np.where(busy_c | busy_w, e_slice - idle_w * np.diff(bounds), e_slice)
    energy = np.zeros(len(a))
    for mask, busy, wsum in ((comp, busy_c, wsum_c), (waiting, busy_w, wsum_w)):
        per = np.where(busy, e_slice / np.where(busy, wsum, 1.0), 0.0)
        cum = np.concatenate([[0.0], np.cumsum(per)])
        energy = np.where(mask, rate * (cum[i1] - cum[i0]), energy)
    return energy, total - float(energy.sum()), total


# ---------------------------------------------------------------------------------------------
# the clock
# ---------------------------------------------------------------------------------------------

def _reference(power: Power, col: str) -> tuple[np.ndarray, np.ndarray] | None:
    s = power.samples.drop_nulls(col)
    if s.height < 4:
        return None
    agg = pl.col(col).cast(pl.Float64)
    ref = s.group_by("ts").agg(agg.mean() if col.startswith("util") else agg.sum()).sort("ts")
    y = ref[col].to_numpy()
    if y.std() == 0:
        return None
    return ref["ts"].dt.epoch("us").cast(pl.Float64).to_numpy() / 1e6, y


def signals_of(power: Power) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """The telemetry signals the clock is placed by: utilisation (averaged over the GPUs) and
    power (summed), each ``(sample times (Unix s), values, the window a sample averages)``;
    a signal that does not vary is left out.

    Example: ``signals_of(Power(read_samples(["gpu.csv"])))["power_w"][1].mean()``
    """
    out = {}
    for col, w in (("util_gpu_pct", UTIL_WINDOW_S), ("power_w", POWER_WINDOW_S)):
        ref = _reference(power, col)
        if ref is not None:
            out[col] = (ref[0], ref[1], w)
    return out


def _log_clock(logs, file: str, run: int) -> float | None:
    """A run's zero in Unix seconds from lines that carry a wall clock, or None."""
    vals = []
    for name, df in logs.tables.items():
        if name in ("requests", "lines_classified", "unrecognized", "gpu_samples"):
            continue
        if not {"file", "run", "t_rel", "ts", "ts_source"} <= set(df.columns):
            continue
        d = df.filter(pl.col("file") == file, pl.col("run") == run,
                      pl.col("ts_source").is_in(EXACT_CLOCK), pl.col("t_rel").is_not_null())
        if d.height:
            vals.append(d["ts"].dt.epoch("us").cast(pl.Float64) / 1e6 - d["t_rel"])
    if not vals:
        return None
    return float(pl.concat(vals).median())


def _run_ends(logs) -> pl.DataFrame:
    parts = []
    for name, df in logs.tables.items():
        if name in ("requests", "gpu_samples") or not {"file", "run", "t_rel"} <= set(df.columns):
            continue
        parts.append(df.select("file", pl.col("run").cast(pl.Int32), "t_rel"))
    if not parts:
        return pl.DataFrame(schema={"file": pl.String, "run": pl.Int32, "t_end": pl.Float64})
    return pl.concat(parts).group_by("file", "run").agg(pl.col("t_rel").max().alias("t_end"))


# ---------------------------------------------------------------------------------------------
# attach telemetry to an ingest
# ---------------------------------------------------------------------------------------------

def attach(logs, samples: pl.DataFrame | dict[str, pl.DataFrame] | None, *,
           start_time: float | dict[str, float] | None = None,
           gpus: list[int] | None = None, net_of_idle: bool = False, strict_clock: bool = True,
           work: pl.DataFrame | None = None):
    """Join GPU telemetry to an ingest: ``gpu_samples``, ``energy_runs`` and the requests'
    ``energy_j``, ``prefill_energy_j``, ``decode_energy_j`` (null without telemetry).

    ``samples``: one ``gpu_samples`` frame for every file of ``logs``, or a dict ``{file:
    frame}`` giving each log file its own telemetry (files not in it get no energy; see
    :func:`logscope.telemetry.pairing.pair`). ``start_time`` (Unix s, or ``{file: Unix s}``)
    is the wall-clock time of a file's zero, used for its first run (later runs of a file
    take their clock from the log or the estimate). ``gpus``: the GPU indices the server
    used (default: all in the telemetry). Each run's clock is placed alone; an estimate that
    :func:`~logscope.telemetry.placement.refusal` refuses raises :class:`ClockError` naming
    the file (with ``strict_clock=False`` the run gets no energy instead). ``work``: the state
    timeline of ``logs`` (``logscope.analysis.concurrency.timeline``: ``file``, ``run``,
    ``t0``, ``t1``, ``decoding``, ``prefilling``), the intervals with work in progress that
    place an estimated clock and bound the busy-only energy; without it, the same intervals
    from the requests' prefill and decode stretches (:func:`work_segments`). Returns ``logs``
    (tables updated).

    Example: ``attach(logscope.read("server.log"), read_samples(["gpu.csv"]))``
    """
    req = logs.tables.get("requests")
    if samples is None or (isinstance(samples, dict) and not samples):
        return null_energy(logs)
    per_file = samples if isinstance(samples, dict) else None
    every = (pl.concat(list({id(v): v for v in per_file.values()}.values()))
             .unique(["file", "line", "gpu"], maintain_order=True)
             .sort("gpu", "ts", "file", "line", nulls_last=True)
             if per_file is not None else samples)
    logs.tables["gpu_samples"] = every
    logs.tables["energy_runs"] = pl.DataFrame(schema=RUN_SCHEMA)
    if req is None or req.height == 0 or "t_start" not in req.columns or every.height == 0:
        return null_energy(logs)
    if req["t_start"].is_null().all():  # requests with no server-clock span (a request log)
        return null_energy(logs)
    req = req.drop([c for c in ENERGY_COLUMNS if c in req.columns])
    powers: dict[int, Power] = {}

    def power_of(file: str) -> Power | None:
        s = per_file.get(file) if per_file is not None else samples
        if s is None or s.height == 0:
            return None
        if id(s) not in powers:
            p = Power(s, gpus)
            if not p.series:
                raise ClockError("no power.draw samples in the telemetry"
                                 + (f" for GPU(s) {','.join(map(str, gpus))}" if gpus else ""))
            powers[id(s)] = p
        return powers[id(s)]

    st = stretches(req)
    ends = _run_ends(logs)
    firsts = st.group_by("file").agg(pl.col("run").min())
    first_run = dict(zip(firsts["file"].to_list(), firsts["run"].to_list(), strict=True))
    runs, parts = [], []
    for (file, run), one in st.group_by(["file", "run"], maintain_order=True):
        power = power_of(file)
        if power is None:
            continue
        log_end = ends.filter(pl.col("file") == file, pl.col("run") == run)["t_end"]
        log_end = float(log_end.max()) if log_end.len() else float(one["t1"].max())
        fit: dict[str, Any] = {}
        seg = _segments(work, file, run, one)
        given = start_time.get(file) if isinstance(start_time, dict) else start_time
        if given is not None and run == first_run.get(file):
            offset, source = float(given), "given"
        elif (o := _log_clock(logs, file, run)) is not None:
            offset, source = o, "log"
        else:
            est = place(Work(seg), signals_of(power))
            if est is None:
                continue
            why = refusal(est)
            if why is not None:
                if not strict_clock:
                    continue
                what = file + (f" (server run {run})" if first_run.get(file) != run else "")
                raise ClockError(
                    f"{what}: cannot place this log on the telemetry's clock: {why}; give "
                    "--start-time (when this server started, ISO 8601 or Unix seconds) or pair "
                    "it with its own telemetry as LOG=CSV")
            offset, source, fit = est["offset_s"], "estimated", est
        row, energy = _run_energy(one, power, offset, log_end, net_of_idle)
        gen = req.filter(pl.col("file") == file, pl.col("run").cast(pl.Int32) == run)
        row |= _whole_run(one, seg, power, offset, int(gen["gen_tokens"].fill_null(0).sum()))
        runs.append({"file": file, "run": run, "clock_offset_s": offset,
                     "clock_offset_source": source, "clock_fit_r": fit.get("r"),
                     "clock_fit_spread_s": fit.get("spread_s"),
                     "clock_fit_coverage": fit.get("coverage"),
                     "clock_fit_score": fit.get("score"),
                     "clock_runner_up_s": fit.get("runner_up_s"),
                     "clock_runner_up_score": fit.get("runner_up_score"), "gpus": power.gpus,
                     "telemetry": power.files, **row})
        parts.append(one.with_columns(pl.Series("energy", energy, dtype=pl.Float64)))
    key = ["file", "run", "slot", "task"]
    if parts:
        e = pl.concat(parts).group_by(key).agg(
            pl.col("energy").sum().alias("energy_j"),
            pl.col("energy").filter(pl.col("phase") == "prefill").sum().alias("prefill_energy_j"),
            pl.col("energy").filter(pl.col("phase") == "decode").sum().alias("decode_energy_j"),
            (pl.col("phase") == "decode").any().not_().alias("_untimed"))
        e = e.with_columns(pl.when(~pl.col("_untimed")).then(pl.col(c)).alias(c)
                           for c in ("prefill_energy_j", "decode_energy_j")).drop("_untimed")
        req = req.with_columns(pl.col("run").cast(pl.Int32).alias("_run")).join(
            e.rename({"run": "_run"}), on=["file", "_run", "slot", "task"], how="left",
            nulls_equal=True, maintain_order="left").drop("_run")
    else:
        req = req.with_columns(pl.lit(None, dt).alias(c) for c, dt in ENERGY_COLUMNS.items())
    logs.tables["requests"] = req.with_columns(pl.col(c).cast(dt) for c, dt in
                                               ENERGY_COLUMNS.items())
    df = pl.DataFrame(runs, schema=RUN_SCHEMA) if runs else pl.DataFrame(schema=RUN_SCHEMA)
    logs.tables["energy_runs"] = df
    return logs


def work_segments(st: pl.DataFrame) -> np.ndarray:
    """The intervals with work in progress of one run from its stretches (``t0``, ``t1``,
    requests decoding, requests prefilling), as the state timeline draws them for
    llama-server: a request prefills over its prefill stretch and decodes over its decode
    stretch; a request without timings counts as decoding while active.

    Example: ``work_segments(stretches(logs["requests"]))``
    """
    iv = st.filter(pl.col("phase") != "wait", pl.col("t1") > pl.col("t0"))
    ev: dict[float, list[int]] = {}
    for a, b, ph in iv.select("t0", "t1", "phase").iter_rows():
        d, p = (0, 1) if ph == "prefill" else (1, 0)
        for t, sign in ((a, 1), (b, -1)):
            e = ev.setdefault(t, [0, 0])
            e[0] += sign * d
            e[1] += sign * p
    ts = sorted(ev)
    rows, k, j = [], 0, 0
    for t0, t1 in zip(ts, ts[1:], strict=False):
        k += ev[t0][0]
        j += ev[t0][1]
        if k > 0 or j > 0:
            rows.append((t0, t1, k, j))
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def _segments(work: pl.DataFrame | None, file: str, run: int, st: pl.DataFrame) -> np.ndarray:
    if work is not None and work.height:
        w = work.filter(pl.col("file") == file, pl.col("run").cast(pl.Int32) == run,
                        (pl.col("decoding") > 0) | (pl.col("prefilling") > 0))
        if w.height:
            return w.select(pl.col("t0", "t1", "decoding", "prefilling").cast(pl.Float64)) \
                .to_numpy()
    return work_segments(st)


def _whole_run(st: pl.DataFrame, seg: np.ndarray, power: Power, offset: float,
               tok: int) -> dict[str, Any]:
    """Energy of the whole run: from the first request's arrival (its launch) to the last
    response (the last release), idle and stalls included (``run_j``), and of its intervals
    with work in progress only (``work_j``); per completion token (every request's generated
    tokens, finished or cut)."""
    t0, t1 = float(st["t0"].min()), float(st["t1"].max())
    run_j = float(np.diff(power.cumulative(np.array([t0, t1]) + offset))[0])
    a = seg[:, 0] + offset if len(seg) else np.zeros(0)
    b = seg[:, 1] + offset if len(seg) else np.zeros(0)
    work_j = float((power.cumulative(b) - power.cumulative(a)).sum()) if len(seg) else 0.0
    work_s = float((b - a).sum()) if len(seg) else 0.0
    return {"run_t0": t0, "run_t1": t1, "run_j": run_j, "work_s": work_s, "work_j": work_j,
            "completion_tokens": tok, "run_j_per_token": run_j / tok if tok else None,
            "work_j_per_token": work_j / tok if tok else None}


def joules_in(logs, segments: pl.DataFrame) -> pl.Series:
    """The telemetry's energy (J, the selected GPUs' power integrated) over each segment of
    ``segments``, on the run's clock after clock placement: ``t0``, ``t1`` in seconds of the
    run's clock (as :func:`logscope.analysis.concurrency.timeline` gives them), with ``file``
    and ``run`` when ``logs`` holds more than one run. ``logs`` is an ingest joined to its
    telemetry (:func:`attach`, ``read_with_telemetry``, the analysis commands' frames). Null
    for a segment of a run with no placed telemetry; a segment reaching outside the
    telemetry's span counts only the part inside it. Summed over a run's segments that tile
    its span, it is the run's ``run_j``.

    Example::

        logs = read_with_telemetry(["server.log", "gpu.csv"])
        tl = logscope.analysis.concurrency.timeline(logs)
        tl.with_columns(joules_in(logs, tl).alias("j")).group_by("decoding").agg(
            pl.col("j").sum())
    """
    runs = logs.tables.get("energy_runs")
    samples = logs.tables.get("gpu_samples")
    out = np.full(segments.height, np.nan)
    if runs is None or samples is None or runs.height == 0 or segments.height == 0:
        return pl.Series("joules", out, dtype=pl.Float64).fill_nan(None)
    keys = [c for c in ("file", "run") if c in segments.columns]
    seg = segments.with_row_index("_i")
    if not keys:
        if runs.height > 1:
            raise ValueError("these logs hold several runs: give segments a file and a run column")
        seg = seg.with_columns(pl.lit(runs["file"][0]).alias("file"),
                               pl.lit(runs["run"][0]).alias("run"))
    for r in runs.iter_rows(named=True):
        mine = seg
        if "file" in seg.columns:
            mine = mine.filter(pl.col("file") == r["file"])
        if "run" in seg.columns:
            mine = mine.filter(pl.col("run").cast(pl.Int32) == r["run"])
        if mine.height == 0:
            continue
        s = samples.filter(pl.col("file").is_in(r["telemetry"] or [])) \
            if r.get("telemetry") else samples
        power = Power(s, list(r["gpus"]) if r["gpus"] is not None else None)
        off = r["clock_offset_s"]
        a = mine["t0"].cast(pl.Float64).to_numpy() + off
        b = mine["t1"].cast(pl.Float64).to_numpy() + off
        out[mine["_i"].to_numpy()] = power.cumulative(b) - power.cumulative(a)
    return pl.Series("joules", out, dtype=pl.Float64).fill_nan(None)


def _empty_samples() -> pl.DataFrame:
    from logscope.telemetry.nvidia import empty

    return empty()


def _run_energy(st: pl.DataFrame, power: Power, offset: float, log_end: float,
                net_of_idle: bool) -> tuple[dict[str, Any], np.ndarray]:
    t0 = st["t0"].to_numpy() + offset
    t1 = st["t1"].to_numpy() + offset
    tok = st["tokens"].to_numpy()
    window = (offset, offset + max(log_end, float(st["t1"].max())))
    waiting = (st["phase"] == "wait").to_numpy()
    energy, idle_j, total = share_energy(t0, t1, tok, window, power.cumulative, waiting=waiting)
    idle_w = _idle_power(st, power, offset, window)
    if net_of_idle and idle_w is not None:
        energy, idle_j, total = share_energy(t0, t1, tok, window, power.cumulative, idle_w,
                                             waiting=waiting)
    win = np.array([window[0]]), np.array([window[1]])
    covered = float(power.covered(*win)[0])
    busy_s = _union_length(t0, t1, window)
    ph = st["phase"].to_numpy()
    pre = float(energy[ph == "prefill"].sum())
    dec = float(energy[ph == "decode"].sum())
    ptok = int(tok[ph == "prefill"].sum())
    gtok = int(tok[ph == "decode"].sum())
    busy_j = float(energy.sum()) + (idle_w * busy_s if net_of_idle and idle_w else 0.0)
    row = {"window_s": window[1] - window[0], "covered_s": covered, "total_j": total,
           "idle_j": idle_j, "idle_w": idle_w, "net_of_idle": net_of_idle and idle_w is not None,
           "mean_power_w": total / covered if covered else None,
           "busy_power_w": busy_j / busy_s if busy_s else None,
           "power_limit_w": power.power_limit_w, "prefill_j": pre, "decode_j": dec,
           "prompt_tokens": ptok, "gen_tokens": gtok,
           "prefill_j_per_token": pre / ptok if ptok else None,
           "decode_j_per_token": dec / gtok if gtok else None,
           "decode_tps_per_w": gtok / dec if dec > 0 else None}
    return row, energy


def _union_length(t0: np.ndarray, t1: np.ndarray, window: tuple[float, float]) -> float:
    a = np.clip(t0, *window)
    b = np.clip(t1, *window)
    order = np.argsort(a)
    total, end = 0.0, -math.inf
    for x, y in zip(a[order], b[order], strict=True):
        if y <= end:
            continue
        total += y - max(x, end)
        end = y
    return total


def _idle_power(st: pl.DataFrame, power: Power, offset: float,
                window: tuple[float, float]) -> float | None:
    """Median summed power of the run's samples with no request active in the second before
    them (power.draw averages the last second), from the first request's launch on (the model
    is loaded); else of every such sample of the run; None without one."""
    s = power.samples.select(pl.col("ts").dt.epoch("us").cast(pl.Float64) / 1e6).to_series()
    t = np.unique(s.to_numpy())
    t = t[(t >= window[0]) & (t <= window[1])]
    if len(t) == 0 or st.height == 0:
        return None
    a = st["t0"].to_numpy() + offset
    b = st["t1"].to_numpy() + offset
    order = np.argsort(a)
    a, b = a[order], np.maximum.accumulate(b[order])
    k = np.searchsorted(a, t, side="right") - 1  # the last stretch started by t
    active = (k >= 0) & (b[np.maximum(k, 0)] >= t - POWER_WINDOW_S)
    idle = t[~active]
    loaded = idle[idle >= a.min()]
    pick = loaded if len(loaded) else idle
    if len(pick) == 0:
        return None
    return float(np.median(power.at(pick)))
