"""Side-by-side comparison of several logs: the same metrics, deltas and % change.

:func:`compare_metrics` returns one row per metric with a column per label, then for every
label after the first ``Δ <label>`` (its value minus the first's) and ``% <label>``
(100·Δ / first). Metrics: prefill t/s predicted by the fit at 4k/16k/64k/128k, median exact
prefill and decode t/s per request, the largest-concurrency aggregate decode, speculative
acceptance and mean accepted length, retracts and preemptions, and the t/s of every bench
``test`` bucket the logs share.
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import EXACT, label_of
from logscope.analysis.report import bench_table, headline, prefill_by_depth


def _metrics(logs, label) -> dict[str, float | None]:
    h = headline(logs)
    m: dict[str, float | None] = {}
    for d, v in h["prefill_fit"]["predict"].items():
        m[f"prefill t/s @ {d // 1024}k (fit)"] = v
    pd = prefill_by_depth(logs, label).filter(pl.col("prompt_tokens") >= 64)
    m["prefill t/s, median per request (exact)"] = pd["tps"].median() if pd.height else None
    d = h["decode"]
    m["decode t/s, median per request (exact)"] = \
        d["median"] if d and d["exactness"] == EXACT else None
    m["decode t/s, median server window"] = \
        d["median"] if d and d["exactness"] != EXACT else None
    g = h["aggregate"]
    m["aggregate decode t/s (most concurrent)"] = g["mean_tps"] if g else None
    a = h["acceptance"]
    m["draft acceptance rate"] = a["rate"]
    m["mean accepted length"] = a["mean_len"]
    p = h["pressure"]
    m["retracts"] = float(p["retracted"])
    m["preemptions"] = float(p["preempted"])
    return m


def compare_metrics(logs_list: list, labels: list[str] | None = None) -> pl.DataFrame:
    labels = list(labels or [])
    labels += [None] * (len(logs_list) - len(labels))
    names = [label_of(lg, lab) for lg, lab in zip(logs_list, labels, strict=True)]
    if len(set(names)) < len(names):  # same file name twice: number them
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    per = [_metrics(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    benches = [bench_table(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    common = set(benches[0]["test"].to_list()) if benches else set()
    for b in benches[1:]:
        common &= set(b["test"].to_list())
    for test in sorted(common, key=lambda t: (t[:2], int(t.split("@ d")[1]),
                                              int(t[2:].split(" ")[0]))):
        for m, b in zip(per, benches, strict=True):
            r = b.filter(pl.col("test") == test).row(0, named=True)
            m[f"{test} t/s"] = r["tps_mean"]
    keys = list(per[0])
    data: dict[str, list] = {"metric": keys}
    for n, m in zip(names, per, strict=True):
        data[n] = [m.get(k) for k in keys]
    df = pl.DataFrame(data, schema={"metric": pl.String, **{n: pl.Float64 for n in names}})
    df = df.with_columns(pl.col(n).fill_nan(None) for n in names)
    df = df.filter(~pl.all_horizontal(pl.col(n).is_null() for n in names))  # nothing to compare
    base = names[0]
    for n in names[1:]:
        df = df.with_columns((pl.col(n) - pl.col(base)).alias(f"Δ {n}"),
                             pl.when(pl.col(base) != 0)
                             .then(100 * (pl.col(n) - pl.col(base)) / pl.col(base))
                             .alias(f"% {n}"))
    return df
