"""Side-by-side comparison of several logs: the detail rows under the verdict.

The verdict (:mod:`logscope.analysis.verdict`) answers "is B faster than A, by how much, how
sure"; :func:`compare_metrics` gives the rows beneath it: one row per metric with a column per
label (the value), an integer ``n <label>`` column (how many requests or windows), a
``shared <label>`` column (how many of them ran alongside another request), then for every label
after the first ``Δ <label>`` (its value minus the first's) and ``% <label>`` (100·Δ / first).
Metrics:

* the headline figures of :mod:`logscope.analysis.metrics` (decode t/s median, aggregate,
  acceptance rate, mean accepted length), retracts and preemptions (counts);
* every bench bucket the logs share, labelled as the report labels it (the first log's
  ``test``). A bucket is compared solo with solo when every log has requests in it that ran
  alone; otherwise all its requests count and ``shared`` says how many shared the GPU.

Bucket rows are kept only where every log measured them with ``n`` >= 3, unless
``all_rows=True``; the headline rows are always kept. ``strict=True`` keeps only the bench
buckets every log measured solo. :func:`workload_differences` says in words where the
workloads differ (prompt sizes, depths, concurrency); ``compare`` prints it as a warning.
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import EXACT, label_of
from logscope.analysis.energy import energy_metrics
from logscope.analysis.metrics import MIN_PREFILL_TOKENS, measured_requests
from logscope.analysis.report import bench_table, headline

COUNTS = ("retracts", "preemptions")   # metrics that are counts: integers, never floats
MIN_N = 3

Metric = tuple[float | None, int | None, int | None]   # value, n, shared


def _metrics(logs, at) -> dict[str, Metric]:
    h = headline(logs, at=at)
    m: dict[str, Metric] = {}
    d = h["decode"]
    m["decode t/s, median per request (exact)"] = \
        (d["median"], d["n"], None) if d and d["exactness"] == EXACT else (None, None, None)
    m["decode t/s per stream, state seen longest (server windows)"] = \
        (d["median"], d["n"], None) if d and d["exactness"] != EXACT else (None, None, None)
    g = h["aggregate"]
    m["decode rate t/s while the most streams decode (not throughput)"] = \
        (g["mean_tps"], g["n"], None) if g else (None, None, None)
    a = h["acceptance"]
    m["draft acceptance rate"] = (a["rate"], a["n"] or None, None)
    m["mean accepted length"] = (a["mean_len"], a["n"] or None, None)
    p = h["pressure"]
    m["retracts"] = (float(p["retracted"]), None, None)
    m["preemptions"] = (float(p["preempted"]), None, None)
    for k, (v, _note) in energy_metrics(h.get("energy")).items():  # GPU telemetry given
        m[k] = (v, None, None)
    return m


def compare_metrics(logs_list: list, labels: list[str] | None = None, strict: bool = False,
                    at: tuple[int, ...] | list[int] | None = None,
                    all_rows: bool = False) -> pl.DataFrame:
    """The comparison's detail rows (see the module docstring).

    Example::

        compare_metrics([logscope.read("a.log"), logscope.read("b.log")], ["f16", "q8"])
    """
    labels = list(labels or [])
    labels += [None] * (len(logs_list) - len(labels))
    names = [label_of(lg, lab) for lg, lab in zip(logs_list, labels, strict=True)]
    if len(set(names)) < len(names):  # same file name twice: number them
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    per = [{} if strict else _metrics(lg, at) for lg in logs_list]
    alls = [bench_table(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    solos = [bench_table(lg, n, solo=True) for lg, n in zip(logs_list, names, strict=True)]

    def keys(b):
        return {(k, tb, db) for k, tb, db in b.select("kind", "tokens_bucket", "depth_bucket")
                .iter_rows() if tb is not None}
    common = set.intersection(*(keys(b) for b in alls)) if alls else set()
    common_solo = set.intersection(*(keys(b) for b in solos)) if solos else set()
    buckets: list[str] = []
    for key in sorted(common, key=lambda k: (k[0], k[2], k[1])):
        solo = key in common_solo
        if strict and not solo:
            continue
        title = None
        for m, b_all, b_solo in zip(per, alls, solos, strict=True):
            b = b_solo if solo else b_all
            r = b.filter(pl.col("kind") == key[0], pl.col("tokens_bucket") == key[1],
                         pl.col("depth_bucket") == key[2]).row(0, named=True)
            title = title or r["test"] + (" t/s, solo" if solo else " t/s")
            m[title] = (r["tps_mean"], r["n"], r["shared"])
        buckets.append(title)
    keys_ = list(per[0])
    data: dict[str, list] = {"metric": keys_}
    schema: dict = {"metric": pl.String}
    for n, m in zip(names, per, strict=True):
        data[n] = [m.get(k, (None, None, None))[0] for k in keys_]
        schema[n] = pl.Float64
    for n, m in zip(names, per, strict=True):
        data[f"n {n}"] = [m.get(k, (None, None, None))[1] for k in keys_]
        schema[f"n {n}"] = pl.Int64
    for n, m in zip(names, per, strict=True):
        data[f"shared {n}"] = [m.get(k, (None, None, None))[2] for k in keys_]
        schema[f"shared {n}"] = pl.Int64
    df = pl.DataFrame(data, schema=schema)
    df = df.with_columns(pl.col(n).fill_nan(None) for n in names)
    df = df.filter(~pl.all_horizontal(pl.col(n).is_null() for n in names))  # nothing to compare
    if not all_rows:   # bucket rows every log measured with n >= 3
        enough = pl.all_horizontal((pl.col(f"n {n}") >= MIN_N) for n in names)
        df = df.filter(enough | ~pl.col("metric").is_in(buckets))
    base = names[0]
    for n in names[1:]:
        df = df.with_columns((pl.col(n) - pl.col(base)).alias(f"Δ {n}"),
                             pl.when(pl.col(base) != 0)
                             .then(100 * (pl.col(n) - pl.col(base)) / pl.col(base))
                             .alias(f"% {n}"))
    return df


def _workload(logs) -> dict:
    req = measured_requests(logs)
    if req is None:
        return {"n": 0}
    from logscope.analysis.report import _with_overlap
    r = _with_overlap(req, req)
    p = r.filter(pl.col("prompt_tokens") >= MIN_PREFILL_TOKENS)
    depth = (r["cached_tokens"].clip(lower_bound=0).fill_null(0)
             + r["prompt_tokens"].fill_null(0))
    return {"n": r.height,
            "prompt_median": float(p["prompt_tokens"].median()) if p.height else None,
            "depth_median": float(depth.median()) if r.height else None,
            "depth_max": float(depth.max()) if r.height else None,
            "gen_median": float(r["gen_tokens"].median())
            if r["gen_tokens"].drop_nulls().len() else None,
            "shared_share": float(r["_shared"].mean()) if r.height else None}


def workload_differences(logs_list: list, labels: list[str] | None = None) -> list[str]:
    """Warnings, in words, where the logs' workloads differ enough to move the numbers:
    median prompt size, median or deepest depth, or generated length more than 1.5× apart,
    or a share of requests that ran alongside another differing by more than 25 points.

    Example::

        for w in workload_differences([a, b], ["a", "b"]): print("warning:", w)
    """
    labels = list(labels or [])
    labels += [None] * (len(logs_list) - len(labels))
    names = [label_of(lg, lab) for lg, lab in zip(logs_list, labels, strict=True)]
    ws = [_workload(lg) for lg in logs_list]
    out = []
    if any(w["n"] == 0 for w in ws):
        return out
    what = {"prompt_median": "median prompt (computed tokens)",
            "depth_median": "median depth (cached + prompt)",
            "depth_max": "deepest request", "gen_median": "median generated tokens"}
    for k, desc in what.items():
        vals = [w[k] for w in ws]
        if any(v is None or v <= 0 for v in vals):
            continue
        if max(vals) > 1.5 * min(vals):
            out.append(f"workloads differ: {desc} " + " vs ".join(
                f"{v:,.0f} ({n})" for v, n in zip(vals, names, strict=True)))
    sh = [w["shared_share"] for w in ws]
    if all(v is not None for v in sh) and max(sh) - min(sh) > 0.25:
        out.append("workloads differ: requests that ran alongside another " + " vs ".join(
            f"{100 * v:.0f} % ({n})" for v, n in zip(sh, names, strict=True))
            + " — compare the solo rows (--strict)")
    return out
