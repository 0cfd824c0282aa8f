"""The shareable report: a llama-bench-shaped table, prefill by depth, the config card.

Bench table (:func:`bench_table`), one row per ``test`` bucket built from real requests:

* ``pp<N> @ d<D>``: prefill of N computed prompt tokens on top of D cached tokens (llama-bench's
  ``-p N -d D``); t/s = llama-server's ``prompt eval`` rate (exact per request).
* ``tg<N> @ d<D>``: N generated tokens starting at context depth D (cached + prompt);
  t/s = the ``eval`` rate (exact per request); ``tokens_per_step`` = mean accepted length
  with speculative decoding (1 without).

Bucket edges (geometric rounding to a power of two): a count n >= 1 goes to bucket 2^k where
2^(k-1/2) <= n < 2^(k+1/2), i.e. k = round(log2 n); so ``512`` holds 363..724 tokens and
``4096`` holds 2897..5792. Depth uses the same rule, except depths below 256 are ``d0``
(llama-bench's default of no depth). ``t/s`` is mean ± sample std over the requests in the
bucket; ``n`` counts them; ``small`` is true when n < 3 (shown as ``n*`` in Markdown: too few
to trust the spread); ``shared`` counts the requests of the bucket that were in progress while
another request was (their t/s shares the GPU: not a single-stream figure). ``source`` is
always ``passive`` (measured from a log, not a benchmark run). Only completed requests
count.

SGLang and vLLM print no per-request timings; :func:`window_table` groups their periodic
throughput lines by running requests instead (``tg (window) @ running=2``), labelled
``server window average``.

Prefill by depth (:func:`prefill_by_depth`): per request, like the forum's hand-made tables:
prompt tokens computed, cached tokens, TTFT ≈ prompt eval time (server side: excludes queueing
and network), t/s.

Config card (:func:`config_card`): build, model, draft model / speculative method, quant,
context, slots, KV cache dtype, TP, read from the log's startup lines where printed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl

from logscope.analysis._util import EXACT, WINDOW, label_of, table
from logscope.analysis.decode import aggregate_summary, decode_aggregate
from logscope.analysis.prefill import PREDICT_AT, fit_prefill, prefill_curve
from logscope.analysis.pressure import pressure_summary
from logscope.analysis.spec import acceptance_summary

BENCH_SCHEMA = {"label": pl.String, "test": pl.String, "kind": pl.String,
                "tokens_bucket": pl.Int64, "depth_bucket": pl.Int64, "tps_mean": pl.Float64,
                "tps_std": pl.Float64, "n": pl.Int64, "small": pl.Boolean,
                "tokens_per_step": pl.Float64, "shared": pl.Int64, "source": pl.String,
                "exactness": pl.String}


def bucket(n: float | None) -> int | None:
    """Power-of-two bucket of a token count: 2^round(log2 n) (n >= 1)."""
    if n is None or n < 1:
        return None
    return 1 << int(round(math.log2(n)))


def depth_bucket(d: float | None) -> int | None:
    if d is None:
        return None
    return 0 if d < 256 else bucket(d)


def _completed(logs) -> pl.DataFrame | None:
    req = table(logs, "requests")
    if req is None:
        return None
    return req.filter(pl.col("status") == "completed") if "status" in req.columns else req


def bench_table(logs, label: str | None = None) -> pl.DataFrame:
    """The llama-bench-shaped table of one ingest (see the module docstring)."""
    lab = label_of(logs, label)
    req = _completed(logs)
    if req is None or req.height == 0:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    allreq = table(logs, "requests")
    req = _with_overlap(allreq, req)
    rows = []
    for r in req.iter_rows(named=True):
        cached = max(r.get("cached_tokens") or 0, 0)
        p, g = r.get("prompt_tokens"), r.get("gen_tokens")
        shared = r["_shared"]
        if p and r.get("prompt_tps"):
            rows.append(dict(kind="pp", tb=bucket(p), db=depth_bucket(cached),
                             tps=r["prompt_tps"], tps_step=None, shared=shared))
        if g and r.get("decode_tps"):
            rows.append(dict(kind="tg", tb=bucket(g), db=depth_bucket(cached + (p or 0)),
                             tps=r["decode_tps"], tps_step=r.get("mean_len") or 1.0,
                             shared=shared))
    if not rows:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    df = pl.DataFrame(rows, schema={"kind": pl.String, "tb": pl.Int64, "db": pl.Int64,
                                    "tps": pl.Float64, "tps_step": pl.Float64,
                                    "shared": pl.Boolean})
    out = (df.group_by("kind", "tb", "db")
           .agg(pl.col("tps").mean().alias("tps_mean"), pl.col("tps").std().alias("tps_std"),
                pl.len().cast(pl.Int64).alias("n"), pl.col("tps_step").mean().alias("tps_step"),
                pl.col("shared").sum().cast(pl.Int64).alias("shared"))
           .with_columns(
               (pl.col("kind") + pl.col("tb").cast(pl.String) + " @ d"
                + pl.col("db").cast(pl.String)).alias("test"),
               (pl.col("n") < 3).alias("small"),
               pl.lit(lab).alias("label"), pl.lit("passive").alias("source"),
               pl.lit(EXACT).alias("exactness"))
           .sort(pl.col("kind").replace({"pp": "0", "tg": "1"}), "db", "tb"))
    return out.select("label", "test", "kind", pl.col("tb").alias("tokens_bucket"),
                      pl.col("db").alias("depth_bucket"), "tps_mean", "tps_std", "n", "small",
                      pl.col("tps_step").alias("tokens_per_step"), "shared", "source",
                      "exactness").cast(BENCH_SCHEMA)


def _with_overlap(allreq: pl.DataFrame, req: pl.DataFrame) -> pl.DataFrame:
    """Add ``_shared``: another request of the same file/run was in progress at the same time.

    Intervals [t_start, t_end] of (file, run) overlapping request i: those starting before
    i ends minus those ending before (or when) i starts, minus i itself.
    """
    import numpy as np

    shared = np.zeros(req.height, dtype=bool)
    idx = req.with_row_index("_i")
    for (file, run), g in idx.group_by(["file", "run"]):
        a = allreq.filter((pl.col("file") == file) & (pl.col("run") == run)).drop_nulls(
            ["t_start", "t_end"])
        starts, ends = np.sort(a["t_start"].to_numpy()), np.sort(a["t_end"].to_numpy())
        g = g.drop_nulls(["t_start", "t_end"])
        n = (np.searchsorted(starts, g["t_end"].to_numpy(), side="left")
             - np.searchsorted(ends, g["t_start"].to_numpy(), side="right"))
        shared[g["_i"].to_numpy()] = n - 1 > 0
    return req.with_columns(pl.Series("_shared", shared))


def window_table(logs, label: str | None = None) -> pl.DataFrame:
    """SGLang/vLLM throughput lines grouped like the bench table (server window averages).

    ``test`` is ``pp (window) @ running=N`` (SGLang ``input throughput``, vLLM ``Avg prompt
    throughput``) or ``tg (window) @ running=N`` (``gen throughput``), N = running requests on
    the line; windows with zero throughput (idle) are left out. t/s is the mean ± std of the
    window values, ``n`` the number of windows.
    """
    lab = label_of(logs, label)
    parts = []
    for name, kind, thr, run_c in (("prefill_batch", "pp", "input_throughput", "running_req"),
                                   ("decode_batch", "tg", "gen_throughput", "running_req"),
                                   ("engine_stats", "pp", "prompt_throughput", "running_reqs"),
                                   ("engine_stats", "tg", "gen_throughput", "running_reqs")):
        df = table(logs, name)
        if df is None or thr not in df.columns:
            continue
        run = pl.col(run_c) if run_c in df.columns else pl.lit(None, pl.Int64)
        parts.append(df.select(pl.lit(kind).alias("kind"), pl.col(thr).cast(pl.Float64)
                               .alias("tps"), run.cast(pl.Int64).alias("running"))
                     .filter(pl.col("tps") > 0))
    if not parts:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    df = pl.concat(parts)
    if df.height == 0:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    out = (df.group_by("kind", "running")
           .agg(pl.col("tps").mean().alias("tps_mean"), pl.col("tps").std().alias("tps_std"),
                pl.len().cast(pl.Int64).alias("n"))
           .with_columns(
               (pl.col("kind") + " (window) @ running="
                + pl.col("running").cast(pl.String).fill_null("?")).alias("test"),
               (pl.col("n") < 3).alias("small"), pl.lit(lab).alias("label"),
               pl.lit("passive").alias("source"), pl.lit(WINDOW).alias("exactness"),
               pl.lit(None, pl.Int64).alias("tokens_bucket"),
               pl.col("running").alias("depth_bucket"),
               pl.lit(None, pl.Float64).alias("tokens_per_step"),
               pl.lit(None, pl.Int64).alias("shared"))
           .sort("kind", "running"))
    return out.select(list(BENCH_SCHEMA)).cast(BENCH_SCHEMA)


def prefill_by_depth(logs, label: str | None = None) -> pl.DataFrame:
    """Per completed request: prompt tokens computed, cached, depth, TTFT (s), t/s."""
    schema = {"label": pl.String, "task": pl.Int64, "prompt_tokens": pl.Int64,
              "cached_tokens": pl.Int64, "depth": pl.Int64, "ttft_s": pl.Float64,
              "tps": pl.Float64, "exactness": pl.String}
    req = _completed(logs)
    if req is None or req.height == 0:
        return pl.DataFrame(schema=schema)
    r = req.filter(pl.col("prompt_tokens").is_not_null() & pl.col("prompt_ms").is_not_null())
    return r.select(
        pl.lit(label_of(logs, label)).alias("label"), "task", "prompt_tokens",
        pl.col("cached_tokens").clip(lower_bound=0).fill_null(0).alias("cached_tokens"),
        (pl.col("cached_tokens").clip(lower_bound=0).fill_null(0) + pl.col("prompt_tokens"))
        .alias("depth"),
        (pl.col("prompt_ms") / 1000).alias("ttft_s"), pl.col("prompt_tps").alias("tps"),
        pl.lit(EXACT).alias("exactness")).cast(schema).sort("depth")


_QUANT = re.compile(r"(?i)(?<![A-Za-z0-9])(I?Q[1-8](?:_[0-9A-Z]+)*|F16|BF16|F32|FP8|AWQ|GPTQ|"
                    r"MXFP4|NVFP4|INT4|INT8)(?![A-Za-z0-9])")

CARD_FIELDS: list[tuple[str, tuple[str, ...]]] = [
    ("engine", ()),
    ("build", ("build_number", "sglang_version", "vllm_version", "version")),
    ("commit", ("build_commit",)),
    ("model", ("model_path", "model", "served_model_name")),
    ("draft model", ("draft_model", "speculative_draft_model_path", "spec_draft_model")),
    ("spec method", ("speculative_algorithm", "spec_method")),
    ("spec tokens", ("num_spec_tokens", "speculative_num_draft_tokens")),
    ("quant", ("quantization",)),
    ("dtype", ("dtype",)),
    ("context", ("n_ctx", "context_len", "context_length", "max_model_len")),
    ("context per slot", ("n_ctx_slot",)),
    ("slots / max running", ("n_slots", "max_running_requests")),
    ("KV cache type", ("kv_cache_dtype", "kv_pool_dtype")),
    ("TP", ("tp_size",)),
    ("PP", ("pp_size",)),
    ("DP", ("dp_size",)),
    ("prefix caching", ("enable_prefix_caching",)),
    ("threads", ("n_threads",)),
]


def _first(frames: list[pl.DataFrame], names: tuple[str, ...]):
    for name in names:
        for f in frames:
            if name in f.columns:
                v = f[name].drop_nulls()
                if len(v):
                    return v[0]
    return None


def config_card(logs) -> dict:
    """Configuration read from the log (None where the log does not say)."""
    frames = [f for f in (table(logs, "server_info"), table(logs, "server_config"))
              if f is not None]
    card: dict = {}
    for key, names in CARD_FIELDS:
        v = _first(frames, names) if names else None
        card[key] = None if isinstance(v, str) and v.strip() in ("", "None", "null") else v
    card["engine"] = ", ".join(getattr(logs, "engines", []) or []) or None
    kt = _first(frames, ("cache_type_k",))
    vt = _first(frames, ("cache_type_v",))
    if card["KV cache type"] is None and (kt or vt):
        card["KV cache type"] = f"K {kt or '?'} / V {vt or '?'}"
    if card["quant"] is None and card["model"]:
        m = _QUANT.search(Path(str(card["model"])).name)
        if m:
            card["quant"] = m.group(1) + " (from file name)"
    if card["spec method"] is None:
        acc = table(logs, "draft_acceptance")
        if card["draft model"]:
            card["spec method"] = "draft model"
        elif acc is not None and card["model"]:
            # the startup lines are in the log and name no draft model
            card["spec method"] = "draft-free (n-gram / lookup): no draft model loaded"
        elif acc is not None:
            card["spec method"] = "speculative (startup lines not in the log)"
    return card


def headline(logs) -> dict:
    """The few numbers of a card: prefill fit, decode, acceptance, aggregate, pressure."""
    pts = prefill_curve(logs)
    fit = fit_prefill(pts)
    req = _completed(logs)
    dec = None
    if req is not None and "decode_tps" in req.columns:
        d = req.drop_nulls("decode_tps")
        if d.height:
            dec = {"median": float(d["decode_tps"].median()), "min": float(d["decode_tps"].min()),
                   "max": float(d["decode_tps"].max()), "n": d.height, "exactness": EXACT}
    if dec is None:
        from logscope.analysis.decode import decode_windows
        w = decode_windows(logs).filter(pl.col("source") != "llama:tg_3s", pl.col("tps") > 0)
        if w.height:
            dec = {"median": float(w["tps"].median()), "min": float(w["tps"].min()),
                   "max": float(w["tps"].max()), "n": w.height, "exactness": WINDOW}
    agg = aggregate_summary(decode_aggregate(logs))
    multi = agg.filter(pl.col("active") >= 2)
    agg_d = None
    if multi.height:
        top = multi.sort("active").row(-1, named=True)
        agg_d = {"active": top["active"], "mean_tps": top["mean_tps"], "peak_tps": top["peak_tps"],
                 "exactness": top["exactness"], "n": top["n"], "seconds": top["seconds"]}
    return {"prefill_fit": fit, "prefill_points": pts.height, "decode": dec,
            "acceptance": acceptance_summary(logs), "aggregate": agg_d,
            "pressure": pressure_summary(logs)}


def build_report(logs_list: list, labels: list[str] | None = None) -> dict:
    """Everything ``logscope report`` prints, for one or more ingests."""
    labels = labels or [None] * len(logs_list)
    out = {"bench": [], "prefill_by_depth": [], "cards": {}, "headline": {}, "aggregates": []}
    for logs, lab in zip(logs_list, labels, strict=True):
        name = label_of(logs, lab)
        out["aggregates"].append(aggregate_summary(decode_aggregate(logs, name)))
        out["bench"].append(bench_table(logs, name))
        out["bench"].append(window_table(logs, name))
        out["prefill_by_depth"].append(prefill_by_depth(logs, name))
        out["cards"][name] = config_card(logs)
        out["headline"][name] = headline(logs)
    out["bench"] = pl.concat(out["bench"]) if out["bench"] else pl.DataFrame(schema=BENCH_SCHEMA)
    out["prefill_by_depth"] = pl.concat(out["prefill_by_depth"])
    out["aggregates"] = pl.concat(out["aggregates"])
    return out


def _fmt(v, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        return f"{v:,.{digits}f}"
    return str(v)


def _md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def render(rep: dict, fmt: str = "md") -> str:
    """Render a :func:`build_report` result as ``md``, ``csv`` (the bench table) or ``json``."""
    if fmt == "csv":
        return rep["bench"].write_csv()
    if fmt == "json":
        return json.dumps({
            "bench": rep["bench"].to_dicts(),
            "prefill_by_depth": rep["prefill_by_depth"].to_dicts(),
            "aggregates": rep["aggregates"].to_dicts(),
            "cards": rep["cards"], "headline": rep["headline"]}, indent=2, default=str)
    if fmt != "md":
        raise ValueError(f"unknown format {fmt!r}")
    parts = []
    for name, card in rep["cards"].items():
        parts.append(f"## {name}\n")
        parts.append(_md_table(["config", "value"],
                               [[k, v] for k, v in card.items() if v is not None]))
        h = rep["headline"][name]
        fit = h["prefill_fit"]
        lines = []
        if fit["valid"]:
            pred = ", ".join(f"{d // 1024}k {_fmt(v, 0)}" + ("*" if fit["extrapolated"][d] else "")
                             for d, v in fit["predict"].items())
            lo, hi = fit["depth_range"]
            lines.append(f"- prefill fit 1/(a + b·d): a = {fit['a']:.3e} s/token, "
                         f"b = {fit['b']:.3e} s/token² (n = {fit['n']} points, "
                         f"{', '.join(fit['sources'])}, depths {lo:,.0f}–{hi:,.0f}); "
                         f"predicted t/s at {pred} (* = extrapolated)")
        else:
            lines.append(f"- prefill fit: none ({fit.get('reason')})")
        if h["decode"]:
            d = h["decode"]
            what = "per request (exact)" if d["exactness"] == EXACT else \
                "server windows (all running requests, window average)"
            lines.append(f"- decode t/s {what}: median {_fmt(d['median'])}, "
                         f"range {_fmt(d['min'])}–{_fmt(d['max'])}, n = {d['n']}")
        a = h["acceptance"]
        if a["n"]:
            lines.append(f"- speculative: acceptance {_fmt(a['rate'], 3)}, mean accepted length "
                         f"{_fmt(a['mean_len'])} ({a['exactness']}, n = {a['n']})")
        if h["aggregate"]:
            g = h["aggregate"]
            lines.append(f"- {g['active']}-way aggregate decode: {_fmt(g['mean_tps'])} t/s mean, "
                         f"{_fmt(g['peak_tps'])} peak ({g['exactness']}, "
                         + (f"{g['seconds']:.1f} s with {g['active']} decoding)"
                            if g["seconds"] is not None else f"{g['n']} windows)"))
        p = h["pressure"]
        lines.append(f"- pressure: {p['message']}" if p["message"] else
                     f"- pressure: events {p['events'] or 'none'}"
                     + (f", KV usage max {_fmt(p['kv_usage_max'])}" if p['kv_usage_max'] else "")
                     + (f", queue max {p['queued_max']}" if p['queued_max'] is not None else ""))
        parts.append("\n" + "\n".join(lines) + "\n")
    b = rep["bench"]
    parts.append("## llama-bench-shaped (source = passive; n* = fewer than 3; "
                 "k shared = requests that ran alongside another request)\n")
    rows = [[r["label"], r["test"],
             f"{r['tps_mean']:,.2f} ± {r['tps_std']:,.2f}" if r["tps_std"] is not None
             else f"{r['tps_mean']:,.2f}",
             (f"{r['n']}*" if r["small"] else str(r["n"]))
             + (f" ({r['shared']} shared)" if r["shared"] else ""),
             r["tokens_per_step"], r["source"],
             "exact" if r["exactness"] == EXACT else "window avg"]
            for r in b.iter_rows(named=True)]
    parts.append(_md_table(["label", "test", "t/s", "n", "tokens/step", "source", "exactness"],
                           rows))
    ag = rep["aggregates"]
    if ag.height:
        parts.append("\n## Decode throughput by concurrency (aggregate over requests decoding "
                     "together)\n")
        parts.append(_md_table(
            ["label", "decoding together", "mean t/s", "peak t/s", "time (s) / windows",
             "exactness"],
            [[r["label"], r["active"], r["mean_tps"], r["peak_tps"],
              _fmt(r["seconds"], 1) if r["seconds"] is not None else f"{r['n']} windows",
              r["exactness"]] for r in ag.iter_rows(named=True)]))
    pd = rep["prefill_by_depth"]
    if pd.height == 0:
        return "\n".join(parts) + "\n"
    parts.append("\n## Prefill by depth (per request, exact; TTFT = server prompt eval time)\n")
    parts.append(_md_table(["label", "prompt tokens", "cached", "depth", "TTFT (s)", "t/s"],
                           [[r["label"], r["prompt_tokens"], r["cached_tokens"], r["depth"],
                             _fmt(r["ttft_s"], 3), r["tps"]]
                            for r in pd.iter_rows(named=True)]))
    return "\n".join(parts) + "\n"


__all__ = ["bench_table", "window_table", "prefill_by_depth", "config_card", "headline",
           "build_report",
           "render", "bucket", "depth_bucket", "PREDICT_AT"]
