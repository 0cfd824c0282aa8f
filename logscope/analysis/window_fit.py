"""Decode per state from SGLang's and vLLM's window lines, prefill inside them included.

A window line reports what happened over its interval: the tokens generated (and on vLLM the
prompt tokens computed) and the wall time they took, prefill of other requests, stalls and
idle time included (docs/engines.md cites the servers' code). Under agent traffic almost every
interval holds a prompt, so instead of dropping those intervals each one is read as an equation
over its seconds::

    T_i = Σ_k s_k · S_ik + e · S_i · D_i + Σ_b a_b · P_ib + c · N_i  (+ idle or a stall)

* ``S_ik``: forward steps the interval ran with ``k`` streams decoding. SGLang prints a
  ``Decode batch`` line every ``decode_log_interval`` (40) forward steps, so ``S = 40``; when
  the running count differs at its ends (or on a ``Prefill batch`` line inside), the split
  between the two counts comes from the interval's own tokens where the stamps carry
  milliseconds, else from the fitted terms (such an interval is then not fitted). vLLM prints
  no step count: its request-steps are the generated tokens ÷ tokens per step (``Mean
  acceptance length`` of the ``SpecDecoding`` line where a draft runs, else 1), and ``S_ik`` =
  request-steps ÷ ``k``, split like SGLang's between the two ends' ``Running``.
* ``s_k``: the time of one forward step with ``k`` streams decoding, one free term per state
  (a step's time is not linear in ``k`` on a real GPU at small batches).
* ``D_i``: the KV in use (SGLang ``#token``, vLLM ``GPU KV cache usage``), ``e`` its cost per
  step: decode slows as contexts grow.
* ``P_ib``: prompt tokens computed in the interval in depth band ``b`` (SGLang: the ``Prefill
  batch`` lines between the two ``Decode batch`` lines, ``#new-token`` at depth
  ``#cached-token`` + half the chunk, octave bands from 1k tokens; vLLM: prompt throughput ×
  seconds, one band since its lines carry no depth). ``a_b``: seconds per prompt token there.
  ``N_i``: SGLang's prefill batches beside decode, ``c`` a batch's fixed cost.

The terms are fitted by least squares on the intervals that run one state throughout (or whose
split their own tokens fix). An interval holding a prompt run with nothing decoding beside it
(SGLang ``#running-req: 0``; vLLM after an idle gap) may hold idle before it too: not fitted,
its prompt no stream's. Idle and stalls only add time: an interval more than
``OUTLIER_SIGMA`` robust standard deviations and ``IDLE_FACTOR`` × its fitted time above the
fit is left out and the fit repeated; its time then counts as the fit says it was used.
Intervals come from resampling the windows (``REPS`` times, seeded).

Per state, two per-stream figures:

* **clean**: the stream's tokens ÷ the seconds of its decode steps alone (what a stream would
  get with no prompt beside it): each fitted interval's observed seconds shared between its
  steps and its prompts by the fitted terms (an interval out of the fit: its steps as the fit
  says; one that held a prompt beside nothing: at its nearest readable interval's pace,
  :func:`_lone_pace`), so clean ≥ as served, equal where no prompt ran beside the state;
* **as served**: the stream's tokens ÷ the time it was running, i.e. the state's own steps plus
  the prompts computed meanwhile (SGLang: each ``Prefill batch`` is charged to the state of its
  ``#running-req``; none when it is 0: a prompt alone on an idle server slows no stream; vLLM:
  the lower of the interval's two ends, each read as ``Running`` less the requests expected
  to be prefilling there (:func:`_charge_decoding`); none after an idle gap or where the log
  never shows more than one request running). Each interval's observed seconds are shared
  out by the fitted terms, so the seconds come from the lines and the fit only splits them.

``aggregate`` = k × as served (all tokens decoded in the state ÷ its seconds).

Where a state's own step is not identified (fewer than ``MIN_WINDOWS`` fitted intervals hold
it, or its spread is wider than ``MAX_REL_WIDTH`` of the figure: its steps move with the
prompts in the windows that hold it; the spread is the printed interval on vLLM, and on SGLang,
whose lines give each interval's steps, that of the terms resampled alone over the log's own
intervals, :meth:`_Run.width`), the **pooled** model stands in: one step time across
states, ``s_k = b + c·k`` (+ the KV term), fitted on every interval without idle, whatever
its running count did (``model`` = "pooled"; :func:`_settle`). It serves a state only when
its interval is narrow, at least ``MIN_WINDOWS`` intervals ran mostly that state with less
than ``QUIET_SHARE`` of their time in prompts, those intervals sit within ``MAX_BIAS`` of the
line (the 95 % interval of their median bias inside it), and the line meets the own step
of ``MIN_CHECKS`` states (a real step time need not be linear in k). Otherwise the state is
refused: ``reason`` gives both models' causes, the term named, and the server setting that
cures it; the figures are null.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from logscope.analysis._util import (
    col_or_null,
    label_of,
    remembered,
    sglang_kv_tokens,
    table,
    with_time,
)
from logscope.analysis.windows import DECODE_LOG_INTERVAL, resolution_s, run_intervals

MIN_WINDOWS = 3          # intervals that must hold a state for its step to be a term
MAX_REL_WIDTH = 0.5      # a 95 % interval wider than half the figure: not identified
OUTLIER_SIGMA = 4.0      # robust standard deviations above the fit ...
IDLE_FACTOR = 2.0        # ... and more than twice the fitted time above it: idle or a stall
REPS = 300
SEED = 20261206
BAND_FROM = 1024         # the first depth band ends here; then octaves
MIN_BAND_WINDOWS = 3     # a depth band held by fewer intervals joins the band below
VLLM_INTERVAL_ENV = "VLLM_LOG_STATS_INTERVAL"
MIN_CHECKS = 2           # pooled: states with their own step the line must meet
MAX_BIAS = 0.05          # pooled: a state's intervals may sit this far from the fit
QUIET_SHARE = 0.1        # pooled: a state's step must be seen in intervals this free of prompts
POOLED_ROUNDS = 5        # refits of the prompt term and the streams decoding (vLLM)

STATE_FIT_SCHEMA = {
    "label": pl.String, "engine": pl.String, "decoding": pl.Int16, "windows": pl.Int64,
    "tokens": pl.Float64, "steps": pl.Float64, "tokens_per_step": pl.Float64,
    "decode_seconds": pl.Float64, "prefill_seconds": pl.Float64, "seconds": pl.Float64,
    "clean_per_stream": pl.Float64, "clean_lo": pl.Float64, "clean_hi": pl.Float64,
    "served_per_stream": pl.Float64, "served_lo": pl.Float64, "served_hi": pl.Float64,
    "aggregate": pl.Float64, "aggregate_lo": pl.Float64, "aggregate_hi": pl.Float64,
    "model": pl.String, "reason": pl.String, "busiest_per_stream": pl.Float64,
    "quiet_windows": pl.Int64, "quiet_per_stream": pl.Float64, "quiet_kv": pl.Float64}
PREFILL_FIT_SCHEMA = {"label": pl.String, "depth_lo": pl.Int64, "depth_hi": pl.Int64,
                      "depth": pl.Float64, "tokens": pl.Float64, "windows": pl.Int64,
                      "tps": pl.Float64, "tps_lo": pl.Float64, "tps_hi": pl.Float64,
                      "reason": pl.String}


@dataclass
class _Charge:
    """Prompt tokens per (interval ``i``, depth band ``b``, state charged ``j``; ``j`` = K:
    none), kept as entries: an interval charges one or two states in one or two bands, so a
    dense (n, B, K + 1) array was mostly zeros, and each model's copy of the windows copied
    it. Entries are kept summed per key and sorted by (i, b, j)."""
    i: np.ndarray
    b: np.ndarray
    j: np.ndarray
    v: np.ndarray

    @classmethod
    def of(cls, i, b, j, v) -> _Charge:  # noqa: ANN001 - array-likes
        """The entries, each key's values summed in the order given."""
        i, b, j = (np.asarray(x, dtype=np.intp) for x in (i, b, j))
        v = np.asarray(v, dtype=float)
        if not len(v):
            return cls(i, b, j, v)
        shape = (int(i.max()) + 1, int(b.max()) + 1, int(j.max()) + 1)
        key = np.ravel_multi_index((i, b, j), shape)
        uniq, inv = np.unique(key, return_inverse=True)
        ui, ub, uj = np.unravel_index(uniq, shape)
        return cls(ui.astype(np.intp), ub.astype(np.intp), uj.astype(np.intp),
                   np.bincount(inv, v, minlength=len(uniq)))

    def bands(self, keep, into: dict[int, int] | None = None) -> _Charge:  # noqa: ANN001
        """Band ``src`` added to band ``into[src]`` first, then the bands ``keep`` kept
        (renumbered in that order)."""
        b = self.b.copy()
        for src, to in (into or {}).items():
            b[self.b == src] = to
        pos = np.full(max(int(b.max()) + 1 if len(b) else 0, max(keep, default=-1) + 1), -1)
        pos[list(keep)] = np.arange(len(keep))
        on = pos[b] >= 0 if len(b) else np.zeros(0, bool)
        return _Charge.of(self.i[on], pos[b[on]], self.j[on], self.v[on])

    def scaled(self, f: np.ndarray) -> _Charge:
        """vLLM: each interval's share ``1 - f`` kept, the share ``f`` moved to the interval
        before (a prompt's time that ran there)."""
        back = self.i >= 1
        return _Charge.of(np.concatenate([self.i, self.i[back] - 1]),
                          np.concatenate([self.b, self.b[back]]),
                          np.concatenate([self.j, self.j[back]]),
                          np.concatenate([self.v * (1 - f[self.i]),
                                          self.v[back] * f[self.i[back]]]))

    def states(self, K: int) -> tuple[np.ndarray, ...]:
        """(i, j, b, tokens) of the entries charged to a state (not to none)."""
        on = self.j < K
        return self.i[on], self.j[on], self.b[on], self.v[on]


@dataclass
class _Windows:
    """One row per interval: its seconds, steps per state, prompt tokens per depth band and
    per (band, state charged), tokens per state."""
    engine: str
    states: list[int]
    bands: list[tuple[int, int]]
    T: np.ndarray                  # (n,) seconds
    S: np.ndarray                  # (n, K) forward steps per state
    tok: np.ndarray                # (n, K) tokens generated per state
    P: np.ndarray                  # (n, B) prompt tokens per band
    charge: _Charge                # prompt tokens per interval, band and state charged
    depth: np.ndarray              # (B,) token-weighted mid depth per band
    k0: np.ndarray                 # (n,) state index at the interval's start
    k1: np.ndarray                 # (n,) state index at its end
    m: np.ndarray                  # (n,) tokens per request-step
    thr: np.ndarray                # (n,) SGLang whole-second stamps: gen throughput, else nan
    G: np.ndarray                  # (n,) tokens generated (vLLM)
    D: np.ndarray                  # (n,) KV tokens in use (SGLang #token; vLLM KV usage %)
    lone: np.ndarray               # (n,) a prompt ran with no stream decoding (idle may too)
    Nb: np.ndarray                 # (n,) prefill batches (SGLang lines) beside decode
    Nch: np.ndarray                # (n, K+1) those batches per state charged
    nbb: np.ndarray                # (B,) prefill batches per depth band
    split: np.ndarray              # (n,) a mixed interval whose split the lines fix (ms stamps)
    busy: np.ndarray = None        # (n,) share of the seconds the server was busy (vLLM edges)
    edge: np.ndarray = None        # (n,) next to an idle stretch (vLLM): idle inside, not fitted
    notes: list[str] = field(default_factory=list)
    pooled: bool = False           # one step time across states: b + c·k (else one per state)
    kbar: np.ndarray = None        # (n,) vLLM: streams decoding over the interval, prefilling
                                   # requests taken out of `Running` (pooled model only)
    snaps: np.ndarray = None       # (n, 5) vLLM: Running at start, at end; prompt tokens of
                                   # the interval before, this one, the one after
    one_stream: bool = False       # vLLM: no line shows more than one request running

    def __post_init__(self) -> None:
        if self.busy is None:
            self.busy = np.ones(len(self.T))
        if self.edge is None:
            self.edge = np.zeros(len(self.T), bool)

    @property
    def fit(self) -> np.ndarray:
        """Intervals the terms are fitted on. Per state: those that run one state throughout
        (an interval whose running count changed says nothing of how its steps split between
        two free step times). Pooled: every interval with no idle inside, since its steps and
        request-steps fix the step terms b and c whatever the split."""
        if self.pooled:
            return ~self.lone & ~self.edge
        return ((self.k0 == self.k1) | self.split) & ~self.lone & ~self.edge

    @property
    def E(self) -> int:
        """1 when the lines carry the KV in use (a decode step's cost grows with it)."""
        return int(bool(np.nanmax(self.D) > 0)) if len(self.D) else 0

    @property
    def C(self) -> int:
        """1 when the lines count prefill batches (SGLang): a batch costs a fixed time
        (scheduling, launch) beside its tokens."""
        return int(self.Nb.sum() > 0)

    @property
    def n_step(self) -> int:
        """Step columns of the design: one per state, or 2 pooled (b and c)."""
        return 2 if self.pooled else len(self.states)

    def step_columns(self) -> np.ndarray:
        """Per state: steps per state. Pooled: the interval's steps (× b) and request-steps
        (× c), a step with k streams costing b + c·k; on vLLM the steps are its request-steps
        ÷ the streams decoding (prefilling requests out of ``Running``)."""
        if not self.pooled:
            return self.S
        ks = np.array(self.states, float)
        rs = self.S @ ks
        steps = self.S.sum(1)
        if self.kbar is not None:
            steps = np.where(self.kbar > 0, rs / np.where(self.kbar > 0, self.kbar, 1), steps)
        return np.column_stack([steps, rs])

    def expand(self, beta: np.ndarray) -> np.ndarray:
        """A pooled fit's coefficients as one step time per state (b + c·k), the rest as is,
        so the per-state arithmetic serves both models."""
        if not self.pooled:
            return beta
        ks = np.array(self.states, float)
        return np.concatenate([beta[0] + beta[1] * ks, beta[2:]])

    def X(self) -> np.ndarray:
        cols = [self.step_columns()]
        if self.E:
            cols.append((self.S.sum(1) * self.D)[:, None])
        cols.append(self.P)
        if self.C:
            cols.append(self.Nb[:, None])
        return np.hstack(cols)


def _bands(depths: np.ndarray) -> list[tuple[int, int]]:
    edges = [0, BAND_FROM]
    top = float(depths.max()) if len(depths) else 0.0
    while edges[-1] <= top:
        edges.append(edges[-1] * 2)
    return list(zip(edges[:-1], edges[1:], strict=False))


def _sorted_groups(df: pl.DataFrame, keys: tuple[str, ...]):  # noqa: ANN202
    """(key, rows as dicts) of each run of equal ``keys`` in ``df``, which is sorted by them:
    the rows read once, where a ``group_by`` iteration gathered every group apart (tens of
    thousands of engines and server runs in a long log)."""
    rows = df.rows(named=True)
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or any(rows[i][k] != rows[start][k] for k in keys):
            yield tuple(rows[start][k] for k in keys), rows[start:i]
            start = i


def _sglang(logs) -> _Windows | None:
    db, pb = table(logs, "decode_batch"), table(logs, "prefill_batch")
    if db is None or "gen_throughput" not in db.columns:
        return None
    parts = [db.select("file", pl.col("run").alias("srv"), "slot", "line", "ts", "t_rel",
                       pl.lit("d").alias("k"),
                       pl.col("running_req").cast(pl.Int64).alias("run"),
                       col_or_null(db, "accept_len", pl.Float64).alias("acc"),
                       pl.col("gen_throughput").cast(pl.Float64).alias("thr"),
                       sglang_kv_tokens(db).alias("kv"),
                       pl.lit(None, pl.Int64).alias("new"),
                       pl.lit(None, pl.Int64).alias("cached"))]
    if pb is not None:
        parts.append(pb.select("file", pl.col("run").alias("srv"), "slot", "line", "ts",
                               "t_rel", pl.lit("p").alias("k"),
                               col_or_null(pb, "running_req", pl.Int64).alias("run"),
                               pl.lit(None, pl.Float64).alias("acc"),
                               pl.lit(None, pl.Float64).alias("thr"),
                               pl.lit(None, pl.Float64).alias("kv"),
                               col_or_null(pb, "new_token", pl.Int64).alias("new"),
                               col_or_null(pb, "cached_token", pl.Int64).alias("cached")))
    df, basis = with_time(pl.concat(parts, how="vertical_relaxed"))
    df = df.with_columns(pl.col("file").cast(pl.String)).sort("file", "srv", "slot", "t",
                                                              "line")
    exact_t = basis == "s" and (resolution_s(logs) or 1.0) < 1.0
    rows = []   # (T, k0, k1, m, prefills[(new, depth, running)])
    for _f, g in _sorted_groups(df, ("file", "srv", "slot")):  # each DP rank's own
        prev = None
        pend: list[tuple[int, float, int]] = []
        for r in g:
            if r["k"] == "p":
                if r["new"]:
                    c = r["cached"] or 0
                    pend.append((int(r["new"]), c + r["new"] / 2, int(r["run"] or 0)))
                continue
            if not r["thr"] or r["thr"] <= 0 or not r["run"]:
                prev, pend = r, []
                continue
            if prev is not None:
                k0, k1, m = int(prev["run"] or 0), int(r["run"]), float(r["acc"] or 1.0)
                seen = [run for _n, _d, run in pend if run > 0]
                if k0 == k1 and seen and min(seen) < k0:
                    # a prefill line printed fewer running: a stream ended and the prompt's
                    # request joined after it, so part of the steps ran one state lower
                    k1 = min(seen)
                kbar = (k0 + k1) / 2 if k0 else k1
                gen = DECODE_LOG_INTERVAL * kbar * m
                # millisecond stamps time the interval; a line without a clock (a log that
                # joins stamped and unstamped parts) is read as whole-second lines are
                timed = exact_t and r["t"] is not None and prev["t"] is not None
                T = (r["t"] - prev["t"]) if timed else gen / r["thr"]
                if timed:
                    gen = r["thr"] * T
                kvs = [x for x in (prev["kv"], r["kv"]) if x is not None]
                kv = sum(kvs) / len(kvs) if kvs else 0.0
                rows.append((T, k0 or k1, k1 or k0, m, gen, pend,
                             float("nan") if timed else r["thr"],
                             float(kv) if math.isfinite(kv) else 0.0))
            prev, pend = r, []
    if not rows:
        return None
    all_p = np.array([d for r in rows for _n, d, _r in r[5]] or [0.0])
    return _assemble("sglang", rows, all_p, steps_known=True)


def _vllm(logs) -> _Windows | None:
    es = table(logs, "engine_stats")
    if es is None or "gen_throughput" not in es.columns:
        return None
    df, basis = with_time(es.select(
        "file", pl.col("run").alias("srv"), "slot", "line", "ts", "t_rel",
        pl.col("gen_throughput").cast(pl.Float64).alias("gthr"),
        col_or_null(es, "prompt_throughput", pl.Float64).alias("pthr"),
        pl.col("running_reqs").cast(pl.Int64).alias("run"),
        col_or_null(es, "kv_cache_usage_pct", pl.Float64).alias("kv")))
    if basis != "s":
        return None
    # a line without a clock (a part of the log whose stamps are gone) cannot be placed
    df = df.filter(pl.col("t").is_not_null()).with_columns(
        pl.col("file").cast(pl.String)).sort("file", "srv", "slot", "t", "line")
    sd = table(logs, "spec_decoding")
    mal: dict[tuple[str, int], float] = {}
    if sd is not None and "mean_acceptance_length" in sd.columns:
        for f, ln, v in sd.select(pl.col("file").cast(pl.String), "line",
                                  "mean_acceptance_length").iter_rows():
            if v is not None and math.isfinite(v):
                mal[(f, ln)] = v
    # the stats interval of each server run: lines come every interval when busy, later
    # after idle
    res = resolution_s(logs) or 0.0
    per_run = run_intervals(df.select("file", pl.col("srv").alias("run"), "slot", "t"), res)
    if not per_run:
        return None
    max_run = int(df["run"].max() or 0)
    rows = []
    # per file: the SpecDecoding lines' numbers (sorted) and their mean acceptance lengths
    by_file: dict[str, list[tuple[int, float]]] = {}
    for (f, ln), v in sorted(mal.items()):
        by_file.setdefault(f, []).append((ln, v))
    spec_at = {f: (np.array([ln for ln, _ in xs]), [v for _, v in xs])
               for f, xs in by_file.items()}
    edges: list[tuple[bool, bool]] = []   # per row: starts after idle, ends before idle
    snaps: list[tuple[int, int, float, float, float]] = []
    for _f, gl in _sorted_groups(df, ("file", "srv", "slot")):  # each engine's own
        prev_t, prev_run, prev_kv = None, 0, None
        interval = per_run[_f]
        # a line comes a little after each interval (the API server's log loop), so
        # whole-second stamps now and then show one second more than the interval: not idle
        idle_gap = 1.5 * interval + res
        for li, r in enumerate(gl):
            T = interval
            nxt = gl[li + 1] if li + 1 < len(gl) else None
            ends_idle = (nxt is None or nxt["t"] - r["t"] > idle_gap
                         or not ((nxt["gthr"] or 0) > 0 or (nxt["pthr"] or 0) > 0))
            adjacent = prev_t is not None and r["t"] - prev_t <= idle_gap
            k0 = prev_run if adjacent else 0
            k1 = int(r["run"] or 0)
            # the SpecDecoding line printed right after this stats line
            m = 1.0
            arr, vals = spec_at.get(_f[0], (np.array([], int), []))
            i = int(np.searchsorted(arr, r["line"], "right"))
            if i < len(arr) and arr[i] - r["line"] <= 2:
                m = vals[i]
            gen = (r["gthr"] or 0.0) * T
            pro = (r["pthr"] or 0.0) * T
            kvs = [x for x in ((prev_kv if adjacent else None), r["kv"]) if x]
            prev_t, prev_run, prev_kv = r["t"], k1, r["kv"]
            if gen <= 0 and pro <= 0:
                continue
            ka, kb = (k0 or k1), (k1 or k0)
            if not ka:
                continue
            # after an idle stretch, or where one request runs at a time, the prompts ran
            # with nothing decoding beside them (0); else beside the interval's streams (-1)
            # a prompt runs before its request joins the running count: beside the lower of
            # the interval's two counts
            pend = [(pro, 0.0, 0 if (k0 == 0 or max_run <= 1) else min(ka, kb))] \
                if pro > 0 else []
            rows.append((T, ka, kb, m, gen, pend, float("nan"),
                         float(sum(kvs) / len(kvs)) if kvs else 0.0))
            edges.append((k0 == 0, ends_idle))
            # for the pooled model: `Running` at both ends and the prompt tokens of the
            # intervals either side of each snapshot (a request prefilling at a snapshot
            # counts its prompt in an interval after it)
            prev_pro = (gl[li - 1]["pthr"] or 0.0) * T if adjacent and li else 0.0
            next_pro = (nxt["pthr"] or 0.0) * T if nxt is not None and not ends_idle else 0.0
            snaps.append((k0, k1, prev_pro, pro, next_pro))
    if not rows:
        return None
    w = _assemble("vllm", rows, np.array([0.0]), steps_known=False)
    if w is not None:
        # an interval at the edge of an idle stretch was busy part of its seconds only: its
        # busy share is its tokens against its busy neighbour's (the run's pace there)
        G = w.G
        for i, (start, end) in enumerate(edges):
            nb = i + 1 if start else i - 1
            if (start or end) and 0 <= nb < len(G) and not any(edges[nb]) and G[nb] > 0:
                w.busy[i] = min(1.0, G[i] / G[nb])
            w.edge[i] = start or end
        w.snaps = np.array(snaps, float).reshape(-1, 5)
        if max_run <= 1:
            w.one_stream = True
            w.notes.append("the log never shows more than one request running: every prompt "
                           "ran alone, none is charged to a stream")
        ivs = sorted(set(per_run.values()))
        w.notes.append(f"stats interval {' / '.join(f'{x:g}' for x in ivs)} s (vLLM's "
                       f"{VLLM_INTERVAL_ENV}{', per server run' if len(ivs) > 1 else ''})")
    return w


def _assemble(engine: str, rows: list, depths: np.ndarray, steps_known: bool) -> _Windows:
    bands = _bands(depths) if engine == "sglang" else [(0, 0)]
    states = sorted({k for _T, k0, k1, *_r in rows for k in (k0, k1) if k > 0})
    rows = [r for r in rows if r[1] > 0 and r[2] > 0]
    ki = {k: i for i, k in enumerate(states)}
    n, K, B = len(rows), len(states), len(bands)
    T = np.zeros(n)
    S, tok = np.zeros((n, K)), np.zeros((n, K))
    P = np.zeros((n, B))
    ch: list[tuple[int, int, int, float]] = []   # (interval, band, state charged, tokens)
    dsum, dtok = np.zeros(B), np.zeros(B)
    k0a, k1a, ma, thra, Ga, Da = (np.zeros(n, int), np.zeros(n, int), np.zeros(n),
                                  np.zeros(n), np.zeros(n), np.zeros(n))
    lone, split = np.zeros(n, bool), np.zeros(n, bool)
    Nb, Nch, nbb = np.zeros(n), np.zeros((n, K + 1)), np.zeros(B)
    for i, (t, k0, k1, m, gen, pend, thr, kv) in enumerate(rows):
        T[i] = t
        k0a[i], k1a[i], ma[i], thra[i], Ga[i], Da[i] = ki[k0], ki[k1], m, thr, gen, kv
        ks = [k0] if k0 == k1 else [k0, k1]
        N = DECODE_LOG_INTERVAL
        if steps_known and len(ks) == 2 and not math.isfinite(thr):
            # timestamps with milliseconds: the tokens (throughput × seconds) fix the split,
            # m (k0 S0 + k1 (N - S0)) = tokens
            s0 = min(max((gen / m - ks[1] * N) / (ks[0] - ks[1]), 0.0), N)
            split[i] = True
            for k, st in ((ks[0], s0), (ks[1], N - s0)):
                S[i, ki[k]] += st
                tok[i, ki[k]] += st * k * m
        elif steps_known:   # SGLang: the line's forward steps, split evenly between the ends
            for k in ks:
                S[i, ki[k]] += N / len(ks)
                tok[i, ki[k]] += N / len(ks) * k * m
        else:             # vLLM: request-steps = tokens ÷ tokens per step, shared evenly
            rs = gen / m
            for k in ks:
                S[i, ki[k]] += rs / sum(ks)
                tok[i, ki[k]] += gen * k / sum(ks)
        for new, d, run in pend:
            if run == 0:
                # a prompt on a server with nothing decoding: its time, and any idle before
                # it, is no stream's; the interval is not fitted, its decode counted as fitted
                lone[i] = True
                continue
            b = next(j for j, (lo, hi) in enumerate(bands) if d < hi or j == B - 1) \
                if engine == "sglang" else 0
            P[i, b] += new
            dsum[b] += new * d
            dtok[b] += new
            # the state charged: the running count printed on the prefill line (0: none)
            ch.append((i, b, ki.get(run, K) if run > 0 else K, new))
            if engine == "sglang":
                Nb[i] += 1
                Nch[i, ki.get(run, K)] += 1
                nbb[b] += 1
    charge = _Charge.of(*(zip(*ch, strict=True) if ch else ([], [], [], [])))
    # depth bands held by too few intervals join the band below (or above, for the first)
    keep = [j for j in range(B) if (P[:, j] > 0).sum() >= MIN_BAND_WINDOWS]
    if engine == "sglang" and keep and len(keep) < B:
        into: dict[int, int] = {}
        for j in range(B):
            if j in keep or dtok[j] == 0:
                continue
            to = max([x for x in keep if x < j], default=min(keep))
            P[:, to] += P[:, j]
            into[j] = to
            nbb[to] += nbb[j]
            dsum[to] += dsum[j]
            dtok[to] += dtok[j]
            lo = min(bands[to][0], bands[j][0])
            bands[to] = (lo, max(bands[to][1], bands[j][1]))
        P, charge, nbb = P[:, keep], charge.bands(keep, into), nbb[keep]
        bands, dsum, dtok = [bands[j] for j in keep], dsum[keep], dtok[keep]
    live = dtok > 0 if engine == "sglang" else np.array([P.sum() > 0])
    if engine == "sglang":
        P, charge, nbb = P[:, live], charge.bands(np.flatnonzero(live)), nbb[live]
        bands = [b for b, x in zip(bands, live, strict=True) if x]
        dsum, dtok = dsum[live], dtok[live]
    elif not live[0]:
        P, charge, bands, nbb = P[:, :0], charge.bands([]), [], nbb[:0]
        dsum, dtok = dsum[:0], dtok[:0]
    return _Windows(engine, states, bands, T, S, tok, P, charge,
                    np.where(dtok > 0, dsum / np.maximum(dtok, 1), 0.0),
                    k0a, k1a, ma, thra, Ga, Da, lone, Nb, Nch, nbb, split)


# the tables the window readings come from (a reading is remembered while they are the same)
WINDOW_TABLES = ("decode_batch", "prefill_batch", "engine_stats", "spec_decoding")


def _windows(logs) -> _Windows | None:
    """The log's intervals, read once per ingest (a copy each time: the fits change them)."""
    w = remembered(logs, "windows", WINDOW_TABLES, lambda: _sglang(logs) or _vllm(logs))
    return copy.deepcopy(w)


def _solve(w: _Windows, idx: np.ndarray, X: np.ndarray | None = None) -> np.ndarray | None:
    """The terms fitted on the intervals ``idx`` (those of them the fit takes); ``X``: the
    design (``w.X()``), where the caller has it already."""
    idx = idx[w.fit[idx]]
    beta, *_ = np.linalg.lstsq((w.X() if X is None else X)[idx], w.T[idx], rcond=None)
    return beta


def _merge_band(w: _Windows, j: int) -> None:
    """Join depth band j to its neighbour (the one below, or above for the first)."""
    to = j - 1 if j > 0 else j + 1
    tot = w.P[:, [j, to]].sum()
    w.depth[to] = (w.depth[to] * w.P[:, to].sum() + w.depth[j] * w.P[:, j].sum()) / tot
    w.P[:, to] += w.P[:, j]
    w.nbb[to] += w.nbb[j]
    lo, hi = min(w.bands[to][0], w.bands[j][0]), max(w.bands[to][1], w.bands[j][1])
    w.bands[to] = (lo, hi)
    keep = [x for x in range(len(w.bands)) if x != j]
    w.P, w.charge, w.depth = w.P[:, keep], w.charge.bands(keep, {j: to}), w.depth[keep]
    w.nbb = w.nbb[keep]
    w.bands = [w.bands[x] for x in keep]


def _fit(w: _Windows) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients and the inlier mask (idle and stalls left out). A prompt term fitted at
    zero or below (its band's tokens too few to time beside the decode steps) joins its band
    to the next; a last one at zero or below is dropped, with a note."""
    while True:
        beta, inl = _fit_once(w)
        off = w.n_step + w.E
        a = beta[off:off + len(w.bands)]
        if w.C and beta[-1] <= 0:   # no fixed cost per batch to be seen: tokens alone
            w.Nb, w.Nch = np.zeros_like(w.Nb), np.zeros_like(w.Nch)
            continue
        bad = np.flatnonzero(a <= 0)
        if len(bad) == 0:
            return beta, inl
        if len(w.bands) > 1:
            _merge_band(w, int(bad[0]))
            continue
        w.notes.append("prompt time not identified beside the decode steps: left at zero")
        w.P, w.charge, w.bands = w.P[:, :0], w.charge.bands([]), []
        w.depth, w.nbb = w.depth[:0], w.nbb[:0]
        w.Nb, w.Nch = np.zeros_like(w.Nb), np.zeros_like(w.Nch)


def _fit_once(w: _Windows) -> tuple[np.ndarray, np.ndarray]:
    inl = np.ones(len(w.T), bool)
    beta = None
    X = w.X()   # w does not change here: the design read once
    for _ in range(6):
        beta = _solve(w, np.flatnonzero(inl), X)
        fitted = X @ beta
        z = w.T - fitted
        ref = inl & w.fit
        if not ref.any():
            break
        med = np.median(z[ref])
        mad = 1.4826 * np.median(np.abs(z[ref] - med)) or 1e-9
        # idle or a stall: far above the others and more than the fitted time itself
        new = (z - med <= OUTLIER_SIGMA * mad) | (z <= IDLE_FACTOR * fitted)
        if (new == inl).all():
            break
        inl = new
    return beta, inl


@dataclass
class _Sparse:
    """What a resample reads of the intervals, kept sparse: an interval's steps and tokens sit
    at the states of its two ends only (``j0``, ``j1``: ``k0``, ``k1``; slot 1 empty where they
    are one), and its prompt tokens charged per state and band at a few entries (``c*``), as
    are its prefill batches charged per state (``n*``). Dense (n, K) and (n, K, B) arrays made
    each resample cost n × K × B on a long log with many counts. ``X``: the design."""
    j0: np.ndarray
    j1: np.ndarray
    S0: np.ndarray
    S1: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    ci: np.ndarray
    cj: np.ndarray
    cb: np.ndarray
    cv: np.ndarray
    ni: np.ndarray
    nj: np.ndarray
    nv: np.ndarray
    X: np.ndarray

    @classmethod
    def of(cls, w: _Windows) -> _Sparse:
        n, K = len(w.T), len(w.states)
        rows = np.arange(n)
        j0, j1 = w.k0.astype(np.intp), w.k1.astype(np.intp)
        two = j0 != j1
        S0, t0 = w.S[rows, j0], w.tok[rows, j0]
        S1 = np.where(two, w.S[rows, j1], 0.0)
        t1 = np.where(two, w.tok[rows, j1], 0.0)
        if not (np.allclose(S0 + S1, w.S.sum(1), equal_nan=True)
                and np.allclose(t0 + t1, w.tok.sum(1), equal_nan=True)):   # _assemble's rule
            raise RuntimeError("window fit: an interval's steps outside its two ends' states")
        ci, cj, cb, cv = w.charge.states(K)
        ni, nj = np.nonzero(w.Nch[:, :K])
        return cls(j0, j1, S0, S1, t0, t1, ci, cj, cb, cv, ni, nj, w.Nch[ni, nj], w.X())


def _figures(w: _Windows, beta: np.ndarray, inl: np.ndarray, sp: _Sparse,
             weights: np.ndarray | None = None, parts: tuple | None = None) -> np.ndarray:
    """(K, 5): clean, served, aggregate per state, the state's seconds and decode seconds,
    over the intervals each counted ``weights`` times (a resample's counts; None: once each).
    ``sp``: :class:`_Sparse` of ``w``; ``parts``: :func:`_per_interval` of ``beta``, where
    the caller has them already."""
    S0, S1, t0, t1, d0, d1, pre_c, pre_n, f = \
        _per_interval(w, beta, inl, sp) if parts is None else parts
    K = len(w.states)
    wf = f if weights is None else weights * f
    wt = np.ones(len(f)) if weights is None else weights

    def by_state(x0: np.ndarray, x1: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (np.bincount(sp.j0, v * x0, minlength=K)
                + np.bincount(sp.j1, v * x1, minlength=K))
    f_dec = by_state(d0, d1, wf)                  # (K,) the observed decode seconds
    secs = (f_dec + np.bincount(sp.cj, wf[sp.ci] * pre_c, minlength=K)
            + np.bincount(sp.nj, wf[sp.ni] * pre_n, minlength=K))
    tk = by_state(t0, t1, wt)
    steps = by_state(S0, S1, wt)
    ks = np.array(w.states, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_step = tk / (steps * ks)
        clean = per_step / (f_dec / steps)        # the observed decode part
        served = tk / ks / secs
    return np.column_stack([clean, served, served * ks, secs, f_dec])


def _per_interval(w: _Windows, beta: np.ndarray, inl: np.ndarray,
                  sp: _Sparse) -> tuple[np.ndarray, ...]:
    """Per interval under the terms ``beta``: steps and tokens at its two ends' states (a
    mixed interval's split by :func:`_split`), their decode seconds, the prompt seconds of
    each charge entry of ``sp`` (tokens, then prefill batches), and the factor that shares its
    observed seconds out (idle and stalls count as the fit says; a prompt beside nothing and
    the idle before it at the nearest readable interval's pace)."""
    beta = w.expand(beta)
    K, E, B = len(w.states), w.E, len(w.bands)
    a = beta[K + E:K + E + B]
    c = beta[K + E + B] if w.C else 0.0
    n = len(w.T)
    # a step's time per window at each end's state: its term plus the KV term at its depth
    kv = beta[K] * w.D if E else np.zeros(n)
    s0, s1 = beta[sp.j0] + kv, beta[sp.j1] + kv
    pre_total = (w.P @ a if len(a) else np.zeros(n)) + c * w.Nb
    S0, S1, t0, t1, T = _split(w, s0, s1, pre_total, sp)
    d0, d1 = S0 * s0, S1 * s1                      # decode seconds at each end's state
    model = d0 + d1 + pre_total
    clear = inl & ~w.lone & ~w.edge & (model > 0)
    f = np.where(clear, T / np.where(model > 0, model, 1), 1.0)
    f = _lone_pace(w, f, clear, d0 + d1, T)
    pre_c = sp.cv * a[sp.cb] if len(a) else np.zeros(len(sp.cv))
    pre_n = c * sp.nv if len(a) else np.zeros(len(sp.nv))
    return S0, S1, t0, t1, d0, d1, pre_c, pre_n, f


def _lone_pace(w: _Windows, f: np.ndarray, clear: np.ndarray, dec: np.ndarray,
               T: np.ndarray) -> np.ndarray:
    """An interval that also held a prompt run with nothing decoding beside it (and any idle
    before it) cannot be read from its own seconds: its fitted terms are scaled as those of
    its nearest interval that can be read (the one after on a tie: usually the same request, a
    few steps deeper), i.e. by that interval's observed seconds over its fitted ones, its
    steps taking at most its own seconds. Where the step time departs from the fitted terms
    (a CPU run whose step grows faster than linearly with depth) the neighbour shows by how
    much; where it does not, the factor is 1 and the fit stands."""
    lone = np.flatnonzero(w.lone & (dec > 0))
    ok = np.flatnonzero(clear & (f > 0))
    if not len(lone) or not len(ok):
        return f
    f = f.copy()
    f[lone] = np.minimum(f[_nearest(ok, lone)], T[lone] / dec[lone])
    return f


def _nearest(ok: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each index of ``at``, the nearest index of the sorted ``ok`` (the one after on a
    tie)."""
    i = np.searchsorted(ok, at)
    after = ok[np.minimum(i, len(ok) - 1)]
    before = ok[np.maximum(i - 1, 0)]
    use_after = (i < len(ok)) & ((i == 0) | (after - at <= at - before))
    return np.where(use_after, after, before)


def _split(w: _Windows, s0: np.ndarray, s1: np.ndarray, pre: np.ndarray, sp: _Sparse
           ) -> tuple[np.ndarray, ...]:
    """An interval whose running count changed from k0 to k1: the steps at k0 (S0) and at
    k1 that its seconds and tokens imply under the fitted step times ``s0``, ``s1`` (one
    unknown, one equation); the even split stays where that has no solution in range.
    Returns the steps and tokens at each end and the intervals' seconds."""
    S0, S1, t0, t1, T = sp.S0, sp.S1, sp.t0, sp.t1, w.T
    mix = np.flatnonzero((w.k0 != w.k1) & ~w.split)
    if len(mix) == 0:
        return S0, S1, t0, t1, T
    S0, S1, t0, t1, T = S0.copy(), S1.copy(), t0.copy(), t1.copy(), T.copy()
    ks = np.array(w.states, float)
    k0, k1, m = ks[sp.j0[mix]], ks[sp.j1[mix]], w.m[mix]
    a0, a1 = s0[mix], s1[mix]
    with np.errstate(divide="ignore", invalid="ignore"):
        if w.engine == "sglang":
            N = float(DECODE_LOG_INTERVAL)
            whole = np.isfinite(w.thr[mix])
            thr = np.where(whole, w.thr[mix], 1.0)
            # whole-second stamps: T = m (k0 S0 + k1 (N - S0)) / thr = s0 S0 + s1 (N - S0) + pre
            num = np.where(whole, pre[mix] + N * a1 - N * m * k1 / thr,
                           T[mix] - N * a1 - pre[mix])
            den = np.where(whole, m * (k0 - k1) / thr - a0 + a1, a0 - a1)
            x0 = np.clip(num / den, 0, N)
            ok = np.isfinite(x0) & (a0 > 0) & (a1 > 0)
            x0 = np.where(ok, x0, N / 2)
            x1 = N - x0
            T[mix] = np.where(whole, m * (k0 * x0 + k1 * x1) / thr, T[mix])
        else:
            # vLLM: k0 S0 + k1 S1 = request-steps R, s0 S0 + s1 S1 + pre = T
            R = w.G[mix] / m
            x0 = (T[mix] - pre[mix] - a1 * R / k1) / (a0 - a1 * k0 / k1)
            x0 = np.clip(x0, 0, R / k0)
            ok = np.isfinite(x0) & (a0 > 0) & (a1 > 0)
            x0 = np.where(ok, x0, R / (k0 + k1))
            x1 = (R - k0 * x0) / k1
    S0[mix], S1[mix] = x0, x1
    t0[mix], t1[mix] = x0 * k0 * m, x1 * k1 * m
    return S0, S1, t0, t1, T


@dataclass
class _Run:
    """One model's fit of a log's windows: coefficients, inliers, figures per state (K, 5),
    their resamples (REPS, K, 5, NaN where a resample could not fit) and coefficient
    resamples."""
    w: _Windows
    beta: np.ndarray
    inl: np.ndarray
    est: np.ndarray
    boots: np.ndarray
    beta_boots: np.ndarray
    held: np.ndarray               # the log's own intervals under each resample's terms

    def width(self) -> np.ndarray:
        """(K,) the 95 % spread of each state's clean figure when only the terms are
        resampled and the intervals are the log's own: whether the lines identify the step.
        (:attr:`lo`/:attr:`hi` resample the intervals too: a run whose steps slow thirtyfold
        with depth has a wide interval for its mean however well each step is fitted.)"""
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanpercentile(self.held[:, :, 0], [2.5, 97.5], axis=0)
        return hi - lo

    @functools.cached_property
    def lo(self) -> np.ndarray:   # read by every state's row and check: computed once
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanpercentile(self.boots, 2.5, axis=0)

    @functools.cached_property
    def hi(self) -> np.ndarray:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanpercentile(self.boots, 97.5, axis=0)


def _weighted_solver(w: _Windows, X: np.ndarray, inl: np.ndarray):  # noqa: ANN202
    """The terms fitted on a resample given as counts per interval (the inliers the fit
    takes, each as often as drawn): the same least-squares problem as :func:`_solve` on the
    drawn rows, each distinct row once with its weight √count (about two thirds of the rows
    of a resample are distinct, so the copy and the factoring shrink by a third)."""
    rows = np.flatnonzero(inl & w.fit)
    Xr, Tr = X[rows], w.T[rows]

    def solve(counts: np.ndarray) -> np.ndarray:
        c = counts[rows]
        u = np.flatnonzero(c)
        r = np.sqrt(c[u])
        beta, *_ = np.linalg.lstsq(Xr[u] * r[:, None], Tr[u] * r, rcond=None)
        return beta
    return solve


def _run(w: _Windows) -> _Run:
    beta, inl = _fit(w)
    if w.engine == "vllm" and w.snaps is not None and len(w.snaps) and w.bands:
        _charge_decoding(w, max(float(beta[w.n_step + w.E]), 0.0))
    allidx = np.arange(len(w.T))
    sp = _Sparse.of(w)   # w no longer changes: read once for every resample
    X = sp.X
    est = _figures(w, beta, inl, sp)
    rng = np.random.default_rng(SEED)
    K = len(w.states)
    boots = np.full((REPS, K, 5), np.nan)
    held = np.full((REPS, K, 5), np.nan)
    bb = np.full((REPS, len(beta)), np.nan)
    solve = _weighted_solver(w, X, inl)
    for r in range(REPS):
        idx = rng.choice(allidx, len(allidx))
        counts = np.bincount(idx, minlength=len(allidx))
        if counts[inl].sum() < 2:   # fewer than two resampled inliers
            continue
        b = solve(counts)
        if b is not None:
            bb[r] = b
            parts = _per_interval(w, b, inl, sp)
            boots[r] = _figures(w, b, inl, sp, counts, parts=parts)
            if w.engine == "sglang":   # only SGLang's identification reads it (_reasons)
                held[r] = _figures(w, b, inl, sp, parts=parts)
    return _Run(w, beta, inl, est, boots, bb, held)


def _charge_decoding(w: _Windows, a: float) -> None:
    """vLLM: a prompt is charged to the streams decoding beside it. ``Running`` counts a
    request still prefilling, so the streams decoding at each snapshot are ``Running`` less the
    requests expected to be prefilling there (:func:`_prefilling_out`'s reading); the prompt
    goes to the lower of the two ends, split between the two whole counts around it (0: no
    stream's, a prompt beside nothing slows no stream). The charge moves seconds between
    states' as-served figures only."""
    k0, k1, rho0, rho1 = _snap_prefilling(w, a)
    d = np.minimum(np.maximum(k0 - rho0, 0.0), np.maximum(k1 - rho1, 0.0))
    K, ch = len(w.states), w.charge
    ci, _cj, cb, cv = ch.states(K)
    if not len(cv):
        return
    # the interval's prompt tokens per band, over the states they were charged to
    key, inv = np.unique(np.column_stack([ci, cb]), axis=0, return_inverse=True)
    tot = np.bincount(inv.ravel(), cv, minlength=len(key))
    ti, tb = key[:, 0], key[:, 1]
    lo = np.floor(d[ti]).astype(np.intp)
    hi_w = d[ti] - lo
    ki = {k: i for i, k in enumerate(w.states)}
    # the column of each whole count: none for 0, a count no interval ended on the nearest
    # that did
    col = np.array([K] + [ki[k] if k in ki else ki[min(w.states, key=lambda x: abs(x - k))]
                          for k in range(1, int(lo.max()) + 2)], dtype=np.intp)
    none = ch.j >= K
    parts = [(ch.i[none], ch.b[none], ch.j[none], ch.v[none])]
    for k, wt in ((lo, 1.0 - hi_w), (lo + 1, hi_w)):
        on = wt > 0
        parts.append((ti[on], tb[on], col[k[on]], wt[on] * tot[on]))
    w.charge = _Charge.of(*(np.concatenate(x) for x in zip(*parts, strict=True)))


def _snap_prefilling(w: _Windows, a: float) -> tuple[np.ndarray, ...]:
    """vLLM: (``Running`` at each interval's start, at its end, the requests expected to be
    prefilling at the start snapshot, at the end one). A prompt's tokens are counted in the
    interval its prefill completes (V1 ``IterationStats.update_from_output`` adds
    ``prompt_len`` at the request's first output); completing at a uniform point of that
    interval after ``a`` × its tokens of prefill, it began before the interval's start snapshot
    with chance min(1, prefill seconds ÷ interval seconds)."""
    k0, k1, _pp, pc, pn = w.snaps.T
    with np.errstate(divide="ignore", invalid="ignore"):
        rho0 = np.clip(a * pc / w.T, 0.0, 1.0)
        rho1 = np.clip(a * pn / w.T, 0.0, 1.0)
    return k0, k1, np.minimum(rho0, np.maximum(k0, 0)), np.minimum(rho1, np.maximum(k1, 0))


def _prefilling_out(p: _Windows, a: float) -> np.ndarray:
    """vLLM: streams decoding over each interval, the mean of its two ends' ``Running`` less
    the requests expected to be prefilling at each snapshot. ``Running`` counts a request from
    the step its prefill is scheduled (``len(self.running)``); the requests expected to be
    prefilling at each snapshot are :func:`_snap_prefilling`'s. At least one stream decodes
    where tokens came."""
    k0, k1, rho0, rho1 = _snap_prefilling(p, a)
    d0, d1 = np.maximum(k0 - rho0, 0.0), np.maximum(k1 - rho1, 0.0)
    kbar = np.where(k0 > 0, (d0 + d1) / 2, d1)
    return np.maximum(kbar, 1.0)


def _settle(w: _Windows, pooled: bool) -> _Windows:
    """A copy of the windows under one model, settled. Pooled: a step with k streams decoding
    costs b + c·k (+ the KV term), fitted on every interval with no idle inside. On vLLM the
    reading of the lines needs the prompt term, so the two are fitted in turn until they
    settle: a prompt's tokens are counted in the interval its prefill completes, so part of its
    time ran in the interval before (:func:`_prompt_time_before`), and (pooled) the streams
    decoding are ``Running`` less the requests prefilling at each snapshot."""
    p = copy.deepcopy(w)
    p.pooled = pooled
    if p.snaps is None or not len(p.snaps):
        return p
    P0, ch0 = p.P.copy(), p.charge
    if pooled:
        p.kbar = _prefilling_out(p, 0.0)
    a_prev = -1.0
    for _ in range(POOLED_ROUNDS):
        q = copy.deepcopy(p)
        beta, _inl = _fit(q)
        a = max(float(beta[q.n_step + q.E]), 0.0) if q.bands else 0.0
        if abs(a - a_prev) <= 1e-3 * max(a, 1e-12):
            break
        a_prev = a
        if P0.shape[1]:
            f = _prompt_time_before(p, a, P0[:, 0])
            p.P = P0 * (1 - f)[:, None]
            p.charge = ch0.scaled(f)
            p.P[:-1] += P0[1:] * f[1:, None]
        if pooled:
            p.kbar = _prefilling_out(p, a)
    return p


def _prompt_time_before(w: _Windows, a: float, P: np.ndarray) -> np.ndarray:
    """vLLM: per interval, the share of its counted prompt tokens' time that ran in the
    interval before it (when that interval is the one printed just before). A prefill of d
    seconds completing at a uniform point of an interval of T seconds began before it by
    d − uT when positive: on average d²/2T, i.e. a share d/2T for d ≤ T, 1 − T/2d beyond."""
    d = a * P
    T = w.T
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(d <= T, d / (2 * T), 1 - T / (2 * np.maximum(d, 1e-12)))
    pc, pp = w.snaps[:, 3], w.snaps[:, 2]
    prev_ok = np.zeros(len(T), bool)
    prev_ok[1:] = (pp[1:] >= 0) & np.isclose(w.snaps[:-1, 3], pp[1:]) & (w.snaps[1:, 0] > 0)
    return np.where(prev_ok & (pc > 0) & np.isfinite(f), np.clip(f, 0.0, 1.0), 0.0)


def _pooled(w: _Windows) -> _Windows:
    """:func:`_settle` under the pooled model."""
    return _settle(w, True)


def _reasons(r: _Run) -> list[str | None]:
    """Per state: None when its clean figure is identified, else why not (the term named)."""
    w, K = r.w, len(r.w.states)
    lo, hi, est = r.lo, r.hi, r.est
    fitted = r.inl & w.fit
    held = ((w.S > 0) & fitted[:, None]).sum(0)
    alone = ((w.S > 0) & w.lone[:, None]).sum(0)
    out: list[str | None] = []
    n_terms = r.w.X().shape[1]
    quiet = _quiet(r) if w.pooled else held
    bias, bias_ci = _misfit(r) if w.pooled else (np.zeros(K), np.zeros(K))
    # SGLang's lines give each interval's forward steps (decode_log_interval): the state's
    # steps and seconds are seen, so only the terms are resampled; vLLM's steps are read from
    # tokens and ``Running``, and resampling the intervals is what shows a reading that moves
    spread = r.width() if w.engine == "sglang" else hi[:, 0] - lo[:, 0]
    for j, k in enumerate(w.states):
        reason = None
        wide = not (est[j, 0] > 0 and math.isfinite(est[j, 0]) and math.isfinite(hi[j, 0])
                    and math.isfinite(lo[j, 0]) and math.isfinite(spread[j])) \
            or spread[j] > MAX_REL_WIDTH * est[j, 0]
        if w.pooled:
            if int(fitted.sum()) <= n_terms:
                reason = (f"{k} decoding: the pooled step time (b + c·k) is not identified: "
                          f"{int(fitted.sum())} interval(s) without idle inside for {n_terms} "
                          "terms")
            elif abs(bias[j]) > MAX_BIAS:
                reason = (f"{k} decoding: the pooled step time (b + c·k) does not hold at this "
                          f"count: the intervals that ran it sit {100 * bias[j]:+.0f} % from "
                          "the fit (median)")
            elif abs(bias[j]) + bias_ci[j] > MAX_BIAS:
                reason = (f"{k} decoding: the pooled step time (b + c·k) is not checked at "
                          "this count: the intervals that ran it scatter about the fit "
                          f"(median {100 * bias[j]:+.0f} ± {100 * bias_ci[j]:.0f} %, "
                          f"{100 * MAX_BIAS:.0f} % allowed)")
            elif quiet[j] < MIN_WINDOWS:
                reason = (f"{k} decoding: the pooled step time is not identified at this "
                          f"count: {quiet[j]} fitted interval(s) ran mostly this state with "
                          f"less than {QUIET_SHARE:.0%} of their time in prompts "
                          f"({MIN_WINDOWS} needed); in the others the prompt term absorbs "
                          "its steps")
            elif wide:
                reason = (f"{k} decoding: the pooled step time is not identified: "
                          f"{_loosest(r)} moves with the other terms in these windows "
                          f"({_spread_text(lo[j, 0], hi[j, 0])})")
        elif held[j] < MIN_WINDOWS and alone[j] >= MIN_WINDOWS:
            reason = (f"{k} decoding: the step time is not identified: {held[j]} interval(s) "
                      f"hold this state alone ({MIN_WINDOWS} needed); {alone[j]} more also hold "
                      "a prompt run with nothing decoding beside it, whose time (and any idle "
                      "before it) the lines cannot split from the steps")
        elif held[j] < MIN_WINDOWS:
            reason = (f"{k} decoding: the step time is not identified: {held[j]} interval(s) "
                      f"run this state throughout ({MIN_WINDOWS} needed)")
        elif wide:
            other = ("the prompt tokens" if w.bands else
                     "the KV in use (decode slows as contexts grow)" if w.E else "the idle")
            reason = (f"{k} decoding: the step time is not identified: in the intervals that "
                      f"hold this state its decode steps move with {other}, so the "
                      f"lines cannot tell one from the other ({_spread_text(lo[j, 0], hi[j, 0])})")
        out.append(reason)
    return out


def _spread_text(lo: float, hi: float) -> str:
    """A refused state's 95 % interval in words, never an impossible rate."""
    if not (math.isfinite(hi) and hi > 0):
        return "its resamples give no positive rate"
    return f"interval {max(lo, 0) if math.isfinite(lo) else 0:.3g}–{hi:.3g} t/s"


def _cure(w: _Windows) -> str:
    """The server setting that gives lines a refused state can be read from."""
    if w.engine == "vllm":
        return (f"; a shorter stats interval ({VLLM_INTERVAL_ENV}=1 in the server's "
                "environment) gives intervals that each hold one state, and from 0.26 "
                "--enable-logging-iteration-details prints every step's time")
    if np.isfinite(w.thr).any():
        return ("; SGLANG_LOG_MS=1 (0.5.6+) prints milliseconds, so an interval whose "
                "running count changed is split by its own tokens and seconds")
    return ""


def _quiet(r: _Run) -> np.ndarray:
    """Per state: fitted intervals that ran mostly this state (half their steps or more) with
    less than ``QUIET_SHARE`` of their fitted time in prompts: where its step is seen apart
    from the prompt term."""
    w = r.w
    beta = w.expand(r.beta)
    K, E, B = len(w.states), w.E, len(w.bands)
    pre = (w.P @ beta[K + E:K + E + B] if B else np.zeros(len(w.T))) \
        + (beta[K + E + B] * w.Nb if w.C else 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = pre / w.T
        most = w.S / np.maximum(w.S.sum(1, keepdims=True), 1e-12) >= 0.5
    ok = (r.inl & w.fit & (share < QUIET_SHARE))[:, None] & most
    return ok.sum(0)


def _misfit(r: _Run) -> tuple[np.ndarray, np.ndarray]:
    """Per state: the median of (seconds − fitted seconds) ÷ seconds over the fitted intervals
    that ran mostly this state, and the half-width of its 95 % interval (from their robust
    spread; NaN where none): a pooled step that does not hold at this count shows as a bias in
    its own intervals, and intervals too scattered about the fit cannot show that it holds."""
    w = r.w
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (w.T - w.X() @ r.beta) / w.T
        most = w.S / np.maximum(w.S.sum(1, keepdims=True), 1e-12) >= 0.5
    sel = (r.inl & w.fit)[:, None] & most
    med, half = np.full(len(w.states), np.nan), np.full(len(w.states), np.nan)
    for j in range(len(w.states)):
        x = rel[sel[:, j]]
        if len(x):
            med[j] = float(np.median(x))
            # the median's standard error: 1.2533 σ / √n, σ from the MAD (1.4826 MAD); an
            # interval of no seconds makes both NaN, which no test fails (as the median alone)
            with np.errstate(invalid="ignore"):
                half[j] = 1.96 * 1.2533 * 1.4826 * float(np.median(np.abs(x - med[j]))) \
                    / math.sqrt(len(x))
    return med, half


def _loosest(r: _Run) -> str:
    """The pooled fit's term whose resampled spread is widest against its value."""
    w = r.w
    names = ["the per-step cost b", "the per-stream cost c"] + (["the KV term"] if w.E else []) \
        + ["the prompt term"] * len(w.bands) + (["the prefill-batch cost"] if w.C else [])
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = (np.nanpercentile(r.beta_boots, 97.5, axis=0)
                  - np.nanpercentile(r.beta_boots, 2.5, axis=0)) / np.abs(r.beta)
    spread = np.where(np.isfinite(spread), spread, np.inf)
    return names[int(np.argmax(spread))] if len(names) == len(spread) else "a term"


def _unchecked(free: _Run, rf: list[str | None], pooled: _Run) -> str | None:
    """Why the pooled line b + c·k may not stand in for a state, or None. Its slope comes
    from the counts the log holds; a real step time need not be linear in k at small batches,
    so the line serves only where it meets the step of at least ``MIN_CHECKS`` states that
    their own intervals identify (within their 95 % intervals, widened by ``MAX_BIAS``)."""
    own = [j for j, r in enumerate(rf) if r is None]
    ks = free.w.states
    if len(own) < MIN_CHECKS:
        return (f"{ks[0]} decoding: the pooled step time is not checked: {len(own)} state(s) "
                f"have their own step identified ({MIN_CHECKS} needed to test b + c·k against "
                "them)")
    lo, hi, est = free.lo[:, 0], free.hi[:, 0], free.est[:, 0]
    tol = np.maximum(MAX_BIAS * est, 0.0)
    miss = [j for j in own if not lo[j] - tol[j] <= pooled.est[j, 0] <= hi[j] + tol[j]]
    if miss:
        j = miss[0]
        return (f"{ks[j]} decoding: the pooled step time does not hold: at {ks[j]} decoding it "
                f"gives {pooled.est[j, 0]:.3g} t/s per stream where that state's own intervals "
                f"give {lo[j]:.3g}–{hi[j]:.3g} (± {100 * MAX_BIAS:.0f} %)")
    return None


def _models(logs) -> tuple[_Windows, list[tuple[_Run, str | None, str]]] | None:
    """Per state: the run that gives its figure (the per-state model where its step is
    identified, else the pooled one), its reason when neither does, and the model's name;
    remembered for the same ingest (a report asks for it from several analyses)."""
    return remembered(logs, "window_fit", WINDOW_TABLES, lambda: _fit_models(logs))


def _fit_models(logs) -> tuple[_Windows, list[tuple[_Run, str | None, str]]] | None:
    w = _windows(logs)
    if w is None or not w.states:
        return None
    free = _run(_settle(w, False))
    rf = _reasons(free)
    pooled = rp = None
    pick: list[tuple[_Run, str | None, str]] = []
    for j in range(len(w.states)):
        if rf[j] is None:
            pick.append((free, None, "per state"))
            continue
        if pooled is None:
            pooled = _run(_pooled(w))
            rp = [r or _unchecked(free, rf, pooled) for r in _reasons(pooled)]
        if rp[j] is None:
            pick.append((pooled, None, "pooled"))
        else:
            pick.append((free, rf[j] + "; pooled across states: " + rp[j].split(": ", 1)[1]
                         + _cure(w), "per state"))
    return w, pick


def _busiest(w: _Windows) -> float | None:
    """vLLM, a log that never shows more than one request running: the busiest interval's
    generation throughput. With one stream at most, an interval's tokens ÷ its seconds is the
    decode rate less whatever prompts and idle it also held, so this is a lower bound of the
    decode rate at that interval's depth (not the state's mean, which may be lower where
    contexts grew); the figure a one-stream log gives when its intervals each also hold a
    turn's prompt and the idle before it, which the fit cannot split (None otherwise)."""
    if w.engine != "vllm" or not w.one_stream or w.states != [1]:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where((w.G > 0) & (w.T > 0), w.G / w.T, np.nan)
    return float(np.nanmax(rate)) if np.isfinite(rate).any() else None


def _quiet_rates(w: _Windows, inl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per state: the intervals that ran it throughout with no prompt computed in them and no
    idle at their edges (SGLang: no ``Prefill batch`` line between their two ``Decode batch``
    lines; vLLM: ``Running`` the same at both ends, no prompt tokens in them nor in the
    interval after, whose first request may have joined ``Running`` before its prompt was
    counted), stalls the fit found (not ``inl``) left out. Returns their count, the rate per
    stream over them (their tokens ÷ their seconds ÷ k; NaN where none) and the KV in use over
    them (seconds-weighted: SGLang ``#token``, vLLM ``GPU KV cache usage`` %; NaN where the
    lines carry none). Nothing is fitted, so it stands where the fit is refused: what a short
    log's quiet intervals say, a window average of the state at their own depth. Not the
    state's mean: quiet stretches lie deeper into their requests than the intervals where
    prompts arrive (on a CPU, where decode slows steeply with depth, the vLLM renderings'
    one-stream states read 25–69 % under their mean).
    """
    K = len(w.states)
    base = ~w.lone & ~w.edge & inl & (w.T > 0) & (w.k0 == w.k1)
    base &= (w.P.sum(1) == 0) if w.P.shape[1] else True
    base &= w.Nb == 0
    if w.engine == "vllm" and w.snaps is not None and len(w.snaps) == len(w.T):
        # `Running` as printed at both ends (a request that ended leaves idle behind it)
        base &= (w.snaps[:, 0] == w.snaps[:, 1]) & (w.snaps[:, 0] > 0) & (w.snaps[:, 4] == 0)
    n, rate, kv = np.zeros(K, int), np.full(K, np.nan), np.full(K, np.nan)
    for j, k in enumerate(w.states):
        q = base & (w.k0 == j)
        n[j] = int(q.sum())
        if n[j] and w.T[q].sum() > 0:
            rate[j] = float(w.tok[q, j].sum() / w.T[q].sum() / k)
            if (w.D[q] > 0).any():
                kv[j] = float((w.D[q] * w.T[q]).sum() / w.T[q].sum())
    return n, rate, kv


def quiet_kv_text(row: dict) -> str:
    """A :func:`state_fit` row's ``quiet_kv`` in the unit its engine prints ("KV 3,621
    tokens", "KV 38 %", "KV 0.3 %"; "" where the lines carry none)."""
    kv = row.get("quiet_kv")
    if not kv:
        return ""
    if row.get("engine") == "sglang":
        return f"KV {kv:,.0f} tokens"
    return f"KV {kv:.0f} %" if kv >= 10 else f"KV {kv:.1f} %"   # vLLM prints one decimal


def state_fit(logs, label: str | None = None) -> pl.DataFrame:
    """Per-stream decode per state (streams decoding) from SGLang or vLLM window lines, mixed
    windows included (module docstring): one row per state with ``clean_per_stream`` (the
    decode steps alone), ``served_per_stream`` (tokens over the time running, prompts of
    others included), ``aggregate`` (k × served), each with a 95 % interval (``_lo``/``_hi``),
    ``tokens``, ``steps``, ``tokens_per_step``, ``decode_seconds``, ``prefill_seconds``
    (prompts charged to the state), ``seconds`` (their sum) and ``windows`` (intervals holding
    the state). ``model`` names the fit that gave the figure: "per state" (a free step time
    per state) or "pooled" (one step time b + c·k across states, where the per-state one is
    not identified). ``reason`` is null for a figure, or says why the state is refused under
    both models (its figures then null). ``busiest_per_stream``: on a vLLM log that never
    shows more than one request running, the busiest interval's rate at 1 decoding, a lower
    bound of the decode rate at that interval's depth (:func:`_busiest`; null elsewhere): what
    a one-stream log says where each interval also holds a turn's prompt and the idle before
    it. ``quiet_windows``, ``quiet_per_stream`` and ``quiet_kv``: the intervals that ran the
    state throughout with no prompt beside it, their tokens ÷ seconds per stream (no term
    fitted) and the KV in use over them (SGLang tokens, vLLM %) (:func:`_quiet_rates`; null
    where none): what a short log still says of a refused state, at that depth.
    Empty for a llama-server log or a log without a clock.

    Example::

        sf = state_fit(logscope.read("vllm.log"))
        sf.filter(pl.col("reason").is_null()).select("decoding", "model", "clean_per_stream",
                                                     "served_per_stream", "aggregate")
    """
    lab = label_of(logs, label)
    got = _models(logs)
    if got is None:
        return pl.DataFrame(schema=STATE_FIT_SCHEMA)
    w, pick = got
    busiest = _busiest(w)
    rows = []
    quiet = {id(run): _quiet_rates(w, run.inl) for run, _r, _m in pick}   # once per model
    for j, k in enumerate(w.states):
        run, reason, model = pick[j]
        qn, qr, qkv = quiet[id(run)]
        est, lo, hi = run.est, run.lo, run.hi
        fitted = run.inl & run.w.fit
        held = int(((run.w.S[:, j] > 0) & fitted).sum())
        steps, tok = float(w.S[:, j].sum()), float(w.tok[:, j].sum())
        dec = float(est[j, 4])
        ok = reason is None

        def v(x, ok=ok):
            return float(x) if ok and math.isfinite(x) else None
        rows.append({"label": lab, "engine": w.engine, "decoding": k, "windows": held,
                     "tokens": tok, "steps": steps,
                     "tokens_per_step": tok / (steps * k) if steps else None,
                     "decode_seconds": v(dec), "prefill_seconds": v(est[j, 3] - dec),
                     "seconds": v(est[j, 3]),
                     "clean_per_stream": v(est[j, 0]), "clean_lo": v(lo[j, 0]),
                     "clean_hi": v(hi[j, 0]),
                     "served_per_stream": v(est[j, 1]), "served_lo": v(lo[j, 1]),
                     "served_hi": v(hi[j, 1]),
                     "aggregate": v(est[j, 2]), "aggregate_lo": v(lo[j, 2]),
                     "aggregate_hi": v(hi[j, 2]), "model": model, "reason": reason,
                     "busiest_per_stream": busiest if k == 1 else None,
                     "quiet_windows": int(qn[j]),
                     "quiet_per_stream": float(qr[j]) if qn[j] and math.isfinite(qr[j])
                     else None,
                     "quiet_kv": float(qkv[j]) if math.isfinite(qkv[j]) else None})
    return pl.DataFrame(rows, schema=STATE_FIT_SCHEMA)


def state_fit_replicates(logs) -> tuple[list[int], np.ndarray, np.ndarray] | None:
    """(states, estimate (K, 5), bootstrap replicates (REPS, K, 5), NaN where a resample
    could not fit) of :func:`state_fit`'s clean, served, aggregate, seconds and decode seconds
    per state (columns in that order), each state from the model :func:`state_fit` used, for
    a comparison's interval; None without window lines. Refusals are :func:`state_fit`'s.

    Example::

        states, est, reps = state_fit_replicates(logscope.read("sglang.log"))
    """
    got = _models(logs)
    if got is None:
        return None
    w, pick = got
    est = np.stack([run.est[j] for j, (run, _r, _m) in enumerate(pick)])
    boots = np.stack([run.boots[:, j] for j, (run, _r, _m) in enumerate(pick)], axis=1)
    return w.states, est, boots


def served_units(logs) -> tuple[np.ndarray, np.ndarray] | None:
    """Per interval, straight from the lines: (tokens generated, stream-seconds = the running
    count, the mean of its two ends, × the seconds it decoded, :func:`_decoding_seconds`).
    Their pooled ratio is a stream's decode as served over the run's own states, the figure a
    comparison falls back on when no state is identified on both sides.

    Example::

        tok, ss = served_units(logscope.read("vllm.log")); tok.sum() / ss.sum()
    """
    w = _windows(logs)
    if w is None:
        return None
    ks = np.array(w.states, float)
    kbar = (ks[w.k0] + ks[w.k1]) / 2
    return w.tok.sum(1), kbar * _decoding_seconds(w)


def vllm_interval_s(logs) -> float | None:
    """vLLM's stats interval (the median over the log's intervals), None on other logs.

    Example::

        vllm_interval_s(logscope.read("vllm.log"))   # 10.0 at the default
    """
    w = _windows(logs)
    return float(np.median(w.T)) if w is not None and w.engine == "vllm" and len(w.T) else None


def _decoding_seconds(w: _Windows) -> np.ndarray:
    """Per interval, the seconds its streams were decoding, from the lines: its seconds
    (vLLM's first and last intervals of a run: their busy share), except an interval that also
    held a prompt run with nothing decoding beside it (and any idle before that prompt, which
    the lines cannot split from it): its steps at the pace of its nearest interval without one,
    at most its seconds. The prompt and the idle are no stream's time."""
    T = w.T * w.busy
    steps = w.S.sum(1)
    clear = np.flatnonzero(~w.lone & (steps > 0))
    if not len(clear):
        return T
    out = T.copy()
    lone = np.flatnonzero(w.lone & (steps > 0))
    j = _nearest(clear, lone)   # the nearest interval without a lone prompt
    out[lone] = np.minimum(T[lone], T[j] / steps[j] * steps[lone])
    return out


def prefill_fit(logs, label: str | None = None) -> pl.DataFrame:
    """Not reported by logscope (docs/engines.md: on whole-second stamps the prompt term is not
    identified beside agent traffic's decode); kept for inspecting the fit's prompt term.

    Prefill speed by depth band from the same fit (SGLang: the ``Prefill batch`` lines'
    ``#new-token`` at ``#cached-token``; vLLM: one band, no depth in its lines): per band the
    prompt tokens it held, ``tps`` = 1 ÷ the fitted seconds per token, its 95 % interval, and
    ``reason`` when refused (fewer than ``MIN_BAND_WINDOWS`` intervals, or an interval wider
    than ``MAX_REL_WIDTH``).

    Example::

        prefill_fit(logscope.read("sglang.log")).select("depth", "tps", "tps_lo", "tps_hi")
    """
    lab = label_of(logs, label)
    w = _windows(logs)
    if w is None or not w.bands:
        return pl.DataFrame(schema=PREFILL_FIT_SCHEMA)
    beta, inl = _fit(w)
    good = np.flatnonzero(inl)
    rng = np.random.default_rng(SEED)
    K = w.n_step + w.E
    B = len(w.bands)
    tokens = w.P.sum(0)

    def rate(b: np.ndarray) -> np.ndarray:
        """Per band: its tokens ÷ (their seconds per token + a fixed time per batch)."""
        c = b[K + B] if w.C else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return tokens / (b[K:K + B] * tokens + c * w.nbb)
    est = rate(beta)
    boots = np.array([rate(_solve(w, rng.choice(good, len(good)))) for _ in range(REPS)])
    rows = []
    for j, (lo, hi) in enumerate(w.bands):
        a = beta[K + j]
        blo, bhi = np.nanpercentile(boots[:, j], [2.5, 97.5])
        held = int((w.P[:, j] > 0).sum())
        reason = None
        if held < MIN_BAND_WINDOWS:
            reason = f"{held} interval(s) hold prompts at this depth ({MIN_BAND_WINDOWS} needed)"
        elif a <= 0 or blo <= 0 or (bhi - blo) > MAX_REL_WIDTH * est[j]:
            reason = ("the prompt term is not identified: its tokens are too few beside the "
                      "decode steps of their intervals")
        ok = reason is None
        rows.append({"label": lab, "depth_lo": lo, "depth_hi": hi, "depth": float(w.depth[j]),
                     "tokens": float(tokens[j]), "windows": held,
                     "tps": float(est[j]) if ok else None, "tps_lo": float(blo) if ok else None,
                     "tps_hi": float(bhi) if ok else None, "reason": reason})
    return pl.DataFrame(rows, schema=PREFILL_FIT_SCHEMA)


def window_spans(logs) -> pl.DataFrame | None:
    """Per server run (``file``, ``run``), the ``seconds`` its window lines span: from the first
    interval's start to the last line (idle inside the run included, as a client sees it; a
    server with data-parallel engines, from the first engine's start to the last one's end).
    vLLM: from the first to the last interval that computed a token; those two intervals are
    partly idle (the run starts and ends inside them), so each counts the seconds its tokens
    took at its neighbour's rate; ``edges_read`` is false where a run has fewer than three such
    intervals (no neighbour to read its edges by: its span is then the longest it can be).
    None without window lines or a clock.

    Example::

        window_spans(logscope.read("vllm.log"))["seconds"].sum()
    """
    return remembered(logs, "window_spans", WINDOW_TABLES, lambda: _window_spans(logs))


def _window_spans(logs) -> pl.DataFrame | None:
    w = _windows(logs)
    if w is None:
        return None
    rows = []
    if w.engine == "vllm":
        es, _ = with_time(table(logs, "engine_stats"))
        act = es.filter((pl.col("gen_throughput").fill_null(0) > 0)
                        | (pl.col("prompt_throughput").fill_null(0) > 0),
                        pl.col("t").is_not_null()).sort("t")
        per_run = run_intervals(es.select(pl.col("file").cast(pl.String), "run", "slot", "t"),
                                resolution_s(logs) or 0.0)
        runs: dict[tuple, list] = {}   # each engine's busy stretch; a run spans their union
        g = pl.col("gen_throughput").fill_null(0).cast(pl.Float64)
        edges = act.group_by("file", "run", "slot", maintain_order=True).agg(
            pl.col("t").min().alias("tmin"), pl.col("t").max().alias("tmax"),
            pl.len().alias("n"), g.first().alias("g0"), g.slice(1, 1).first().alias("g1"),
            g.slice(-2, 1).first().alias("g_2"), g.last().alias("g_1"))
        for f, r, e, tmin, tmax, n, g0, g1, g_2, g_1 in edges.iter_rows():
            T = per_run.get((str(f), r, e), float(w.T[0]))
            t0, t1 = float(tmin) - T, float(tmax)
            if n >= 3:
                if g1 > 0:
                    t0 += T - min(T, T * g0 / g1)
                if g_2 > 0:
                    t1 -= T - min(T, T * g_1 / g_2)
            runs.setdefault((str(f), r), []).append((t0, t1, n >= 3))
        rows = [(f, r, max(x[1] for x in v) - min(x[0] for x in v), all(x[2] for x in v))
                for (f, r), v in runs.items()]
    else:
        parts = [with_time(x)[0].select(pl.col("file").cast(pl.String), "run", "ts") for x in
                 (table(logs, "decode_batch"), table(logs, "prefill_batch")) if x is not None]
        t = pl.concat(parts, how="vertical_relaxed").drop_nulls("ts")
        if t.height == 0:   # lines without a clock: no span to divide by
            return None
        rows = t.group_by("file", "run", maintain_order=True).agg(
            (pl.col("ts").max() - pl.col("ts").min()).dt.total_microseconds() / 1e6,
            pl.lit(True)).rows()
    return pl.DataFrame(rows, schema={"file": pl.String, "run": pl.Int32,
                                      "seconds": pl.Float64, "edges_read": pl.Boolean},
                        orient="row")


def window_throughput(logs) -> dict | None:
    """Served throughput from window lines: all tokens generated ÷ the spans of the server
    runs (:func:`window_spans`), summed: the time between two runs is not served.
    ``lower_bound``: a run too short to read its edges (fewer than three vLLM intervals with
    tokens) counts its first and last intervals whole, so ``tps`` is the least it can be.

    Example::

        window_throughput(logscope.read("vllm.log"))["tps"]
    """
    w = _windows(logs)
    spans = window_spans(logs)
    if w is None or spans is None:
        return None
    tok, span = float(w.tok.sum()), float(spans["seconds"].sum())
    return {"tokens": tok, "seconds": span, "tps": tok / span if span > 0 else None,
            "lower_bound": not spans["edges_read"].all()}


__all__ = ["state_fit", "state_fit_replicates", "served_units", "vllm_interval_s",
           "window_throughput",
           "window_spans",
           "STATE_FIT_SCHEMA", "PREFILL_FIT_SCHEMA", "quiet_kv_text"]
