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

SGLang and vLLM print no per-request timings; :func:`window_table` gives their rows from the
window lines turned into time: per-stream decode per concurrency state (``tg (window) @
decoding=2``), SGLang's chunked prompts by depth (``pp (chunks) @ d8192``), vLLM's prompt
tokens per interval (``pp (busiest interval, at least) @ running=2``), labelled ``server
window average``.

Rows that measure nothing are left out: a ``pp`` row needs at least 64 computed prompt tokens
(a full cache hit computes 1), a ``tg`` row at least 16 generated. A bucket whose requests are
all within ±5 % of its power of two is labelled by it (``pp4096``); otherwise by the median of
its requests, 2 significant digits (``pp~100k``, ``d~56k``), never a size nobody sent.

Prefill and decode by depth (:mod:`logscope.analysis.depth`): measured solo chunks and
requests by depth bucket, with and without the fixed overhead; decode by depth and by the
requests running alongside.

Config card (:func:`config_card`): build, model, draft model / speculative method, quant,
context, slots, KV cache dtype, TP, read from the log's startup lines where printed.
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from pathlib import Path

import polars as pl

from logscope.analysis._util import EXACT, WINDOW, bucket, depth_bucket, label_of, table
from logscope.analysis.concurrency import concurrency
from logscope.analysis.depth import (
    checked_fit,
    decode_by_depth,
    depth_label,
    prefill_at,
    prefill_by_depth,
)
from logscope.analysis.energy import energy_headline, energy_lines
from logscope.analysis.findings import findings
from logscope.analysis.iterations import iteration_figures, iteration_lines
from logscope.analysis.metrics import (
    FIT,
    MIN_DECODE_TOKENS,
    MIN_PREFILL_TOKENS,
    acceptance_rate,
    aggregate_decode,
    decode_tps,
    fmt_figure,
    mean_accepted_length,
    measured_requests,
    round_frame,
    sig,
)
from logscope.analysis.prefill import PREDICT_AT, prefill_curve
from logscope.analysis.pressure import pressure_summary
from logscope.analysis.request_log import request_log_figures, request_log_lines
from logscope.analysis.served import BUDGET_STATES

BENCH_SCHEMA = {"label": pl.String, "test": pl.String, "kind": pl.String,
                "tokens_bucket": pl.Int64, "depth_bucket": pl.Int64, "tps_mean": pl.Float64,
                "tps_std": pl.Float64, "n": pl.Int64, "small": pl.Boolean,
                "tokens_per_step": pl.Float64, "shared": pl.Int64, "source": pl.String,
                "exactness": pl.String}


def _completed(logs) -> pl.DataFrame | None:
    """Requests with figures of their own (completed, or partial: cut by the log's edges)."""
    return measured_requests(logs)


def _short(x: float) -> str:
    """2 significant digits, k for thousands: 100000 -> 100k, 56012 -> 56k, 1800 -> 1.8k."""
    v = sig(float(x), 2)
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def _honest(prefix: str, b: int, values: list[float], zero: bool = False) -> str:
    if zero and b == 0:
        return f"{prefix}0"
    if all(0.95 * b <= v <= 1.05 * b for v in values):
        return f"{prefix}{b}"
    vs = sorted(values)
    med = vs[len(vs) // 2] if len(vs) % 2 else (vs[len(vs) // 2 - 1] + vs[len(vs) // 2]) / 2
    return f"{prefix}~{_short(med)}"


def bench_table(logs, label: str | None = None, solo: bool = False) -> pl.DataFrame:
    """The llama-bench-shaped table of one ingest (see the module docstring); ``solo``
    keeps only requests that ran alone (nothing else in progress).

    Example::

        bench_table(logscope.read("server.log")).filter(pl.col("shared") == 0)
    """
    lab = label_of(logs, label)
    req = _completed(logs)
    if req is None or req.height == 0:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    allreq = table(logs, "requests")
    req = _with_overlap(allreq, req)
    if solo:
        req = req.filter(~pl.col("_shared"))
    rows = []
    for r in req.iter_rows(named=True):
        cached = max(r.get("cached_tokens") or 0, 0)
        p, g = r.get("prompt_tokens"), r.get("gen_tokens")
        shared = r["_shared"]
        if p and p >= MIN_PREFILL_TOKENS and r.get("prompt_tps"):
            rows.append(dict(kind="pp", tb=bucket(p), db=depth_bucket(cached), tok=p,
                             dep=cached, tps=r["prompt_tps"], tps_step=None, shared=shared))
        if g and g >= MIN_DECODE_TOKENS and r.get("decode_tps"):
            rows.append(dict(kind="tg", tb=bucket(g), db=depth_bucket(cached + (p or 0)),
                             tok=g, dep=cached + (p or 0), tps=r["decode_tps"],
                             tps_step=r.get("mean_len") or 1.0, shared=shared))
    if not rows:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    df = pl.DataFrame(rows, schema={"kind": pl.String, "tb": pl.Int64, "db": pl.Int64,
                                    "tok": pl.Int64, "dep": pl.Int64, "tps": pl.Float64,
                                    "tps_step": pl.Float64, "shared": pl.Boolean})
    out = (df.group_by("kind", "tb", "db")
           .agg(pl.col("tps").mean().alias("tps_mean"), pl.col("tps").std().alias("tps_std"),
                pl.len().cast(pl.Int64).alias("n"), pl.col("tps_step").mean().alias("tps_step"),
                pl.col("shared").sum().cast(pl.Int64).alias("shared"),
                pl.col("tok"), pl.col("dep"))
           .with_columns(
               (pl.col("n") < 3).alias("small"),
               pl.lit(lab).alias("label"), pl.lit("passive").alias("source"),
               pl.lit(EXACT).alias("exactness"))
           .sort(pl.col("kind").replace({"pp": "0", "tg": "1"}), "db", "tb"))
    tests = [_honest(k, tb, tok) + " @ " + _honest("d", db, dep, zero=True)
             for k, tb, db, tok, dep in out.select("kind", "tb", "db", "tok", "dep").iter_rows()]
    out = out.with_columns(pl.Series("test", tests, dtype=pl.String))
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
    # each (file, run)'s requests, split once (a long log has tens of thousands of runs)
    by_run = allreq.drop_nulls(["t_start", "t_end"]).partition_by(
        ["file", "run"], as_dict=True)
    for (file, run), g in idx.group_by(["file", "run"]):
        a = by_run.get((file, run))
        if a is None or file is None or run is None:   # no request of that run is timed
            continue
        starts, ends = np.sort(a["t_start"].to_numpy()), np.sort(a["t_end"].to_numpy())
        g = g.drop_nulls(["t_start", "t_end"])
        n = (np.searchsorted(starts, g["t_end"].to_numpy(), side="left")
             - np.searchsorted(ends, g["t_start"].to_numpy(), side="right"))
        shared[g["_i"].to_numpy()] = n - 1 > 0
    return req.with_columns(pl.Series("_shared", shared))


def window_table(logs, label: str | None = None) -> pl.DataFrame:
    """SGLang/vLLM rows of the bench table, from their window lines turned into time.

    * ``tg (window) @ decoding=K``: per-stream decode as served in the state "K streams
      decoding" that the window fit identified (:func:`logscope.analysis.window_fit.state_fit`:
      the rate ``report`` prints beside the clean one; a refused state has no row); ``n`` =
      intervals holding the state; ``tokens_per_step`` = the state's mean accepted length
      (SGLang ``accept len`` of its lines; vLLM the ``SpecDecoding metrics`` lines printed
      with its stats lines), pooled by request-steps.
    * ``tg (quiet windows) @ decoding=K, KV …``: a state the fit refused, from its quiet
      intervals alone (one running count at both ends, no prompt beside: their tokens ÷ their
      seconds ÷ K, ``state_fit``'s ``quiet_per_stream``), at the KV in use over them: a window
      average at that depth, not the state's mean; ``n`` = those intervals.
    * ``pp (chunks) @ dD``: SGLang's chunked prompts timed between consecutive ``Prefill
      batch`` lines with nothing decoding, the rows of :func:`prefill_by_depth` (tokens ÷
      seconds of the bucket's stretches).
    * ``pp (busiest interval, at least) @ running=N``: vLLM, whose lines give no depth: the
      most prompt tokens one stats interval computed ÷ its seconds (``n`` = the intervals with
      at least ``MIN_PREFILL_TOKENS`` prompt tokens) — a lower bound of prefill speed (an
      interval also decodes and idles).

    Example::

        window_table(logscope.read("sglang.log")).select("test", "tps_mean", "n")
    """
    from logscope.analysis.window_fit import state_fit

    lab = label_of(logs, label)
    rows: list[dict] = []
    sf = state_fit(logs, lab)
    fit = sf.filter(pl.col("reason").is_null(), pl.col("served_per_stream") > 0)
    quiet = sf.filter(pl.col("reason").is_not_null(), pl.col("quiet_per_stream") > 0)
    if fit.height or quiet.height:
        steps = _window_steps(logs)
        for r in fit.iter_rows(named=True):
            k = r["decoding"]
            rows.append({"test": f"tg (window) @ decoding={k}", "kind": "tg",
                         "depth_bucket": k, "tps_mean": r["served_per_stream"],
                         "tps_std": None, "n": r["windows"], "tokens_per_step": steps.get(k)})
        for r in quiet.iter_rows(named=True):
            k = r["decoding"]
            rows.append({"test": f"tg (quiet windows) @ decoding={k}{_kv_text(r, ', ')}",
                         "kind": "tg", "depth_bucket": k, "tps_mean": r["quiet_per_stream"],
                         "tps_std": None, "n": r["quiet_windows"],
                         "tokens_per_step": steps.get(k)})
    if table(logs, "prefill_batch") is not None:   # the report's own prefill-by-depth rows
        for r in prefill_by_depth(logs, lab).filter(pl.col("kind") == "chunks").iter_rows(
                named=True):
            rows.append({"test": "pp (chunks) @ " + _honest(
                            "d", depth_bucket(r["depth"]), [r["depth"]], zero=True),
                         "kind": "pp", "depth_bucket": depth_bucket(r["depth"]),
                         "tps_mean": r["tps"], "tps_std": None, "n": r["n"]})
    es = table(logs, "engine_stats")
    if es is not None and "prompt_throughput" in es.columns and "running_reqs" in es.columns:
        # each interval's prompt tokens ÷ its seconds is at most the prefill's speed (the
        # interval also decodes and idles): the busiest interval is the tightest such bound
        from logscope.analysis.window_fit import vllm_interval_s
        iv = vllm_interval_s(logs) or 0.0   # an interval of fewer prompt tokens measures nothing
        pi = (es.filter(pl.col("prompt_throughput") * iv >= MIN_PREFILL_TOKENS,
                        pl.col("running_reqs") > 0)
              .group_by(pl.col("running_reqs").cast(pl.Int64).alias("running"))
              .agg(pl.col("prompt_throughput").max().alias("tps"), pl.len().alias("n"))
              .sort("running"))
        for r in pi.iter_rows(named=True):
            rows.append({"test": f"pp (busiest interval, at least) @ running={r['running']}",
                         "kind": "pp", "depth_bucket": None, "tps_mean": r["tps"],
                         "tps_std": None, "n": r["n"]})
    if not rows:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    out = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        (pl.col("n") < 3).alias("small"), pl.lit(lab).alias("label"),
        pl.lit("passive").alias("source"), pl.lit(WINDOW).alias("exactness"),
        pl.lit(None, pl.Int64).alias("shared"))
    for c_, dt in BENCH_SCHEMA.items():
        if c_ not in out.columns:
            out = out.with_columns(pl.lit(None, dt).alias(c_))
    return out.select(list(BENCH_SCHEMA)).cast(BENCH_SCHEMA)


def _window_steps(logs) -> dict[int, float]:
    """Mean accepted length per decoding count, pooled by request-steps (SGLang: its decode
    lines with that ``#running-req``; vLLM: the spec lines printed with stats lines of that
    ``Running``)."""
    db = table(logs, "decode_batch")
    if db is not None and "accept_len" in db.columns and "running_req" in db.columns:
        g = (db.filter(pl.col("accept_len") > 0, pl.col("running_req") > 0)
             .group_by(pl.col("running_req").cast(pl.Int64))
             .agg(pl.col("accept_len").mean()))   # one state: every line the same weight
        return dict(g.iter_rows())
    sd, es = table(logs, "spec_decoding"), table(logs, "engine_stats")
    if sd is None or es is None or "ts" not in sd.columns or "running_reqs" not in es.columns:
        return {}
    from logscope.analysis.spec import acceptance_units
    # the V1 lines' units, row for row (V0's counters, vllm:spec_counters, are other rows)
    u = acceptance_units(logs).filter(pl.col("source") == "vllm:spec_decoding")
    if u.height == 0:
        return {}
    sd = sd.filter(pl.col("num_draft_tokens") > 0).select("file", "ts").with_columns(
        u["tokens"].alias("_tok"), u["steps"].alias("_st")).drop_nulls().sort("ts")
    st = es.select("file", "ts", pl.col("running_reqs").cast(pl.Int64).alias("_k")) \
        .drop_nulls().sort("ts")
    j = sd.join_asof(st, on="ts", by="file", strategy="nearest",
                     tolerance=timedelta(seconds=1), check_sortedness=False).drop_nulls("_k")
    g = j.group_by("_k").agg((pl.col("_tok").sum() / pl.col("_st").sum()).alias("v"))
    return dict(g.iter_rows())


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
    ("spec steps", ("speculative_num_steps",)),
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
    ("chunked prefill size", ("chunked_prefill_size",)),
    ("max prefill tokens", ("max_prefill_tokens",)),
    ("KV pool tokens", ("max_total_num_tokens", "max_total_tokens")),
    ("memory fraction", ("mem_fraction_static",)),
    ("CUDA graph disabled", ("disable_cuda_graph",)),
    ("CUDA graph max batch", ("cuda_graph_max_bs",)),
    ("eager (no CUDA graph)", ("enforce_eager",)),
    ("DP attention", ("enable_dp_attention",)),
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


def headline(logs, at: tuple[int, ...] | list[int] | None = None) -> dict:
    """The few numbers of a card, each from its one definition in
    :mod:`logscope.analysis.metrics`; the prefill fit predicts at ``at`` (default 4k…128k).

    Example::

        h = headline(logscope.read("server.log"), at=(4096, 49152))
        h["prefill_fit"]["predict"][49152], h["acceptance"]["rate"]
    """
    pts = prefill_curve(logs)
    fit = checked_fit(logs, at=at)
    at_depths = tuple(fit["predict"])
    d = decode_tps(logs)
    dec = None if d["value"] is None else {
        "median": d["value"], "min": d["min"], "max": d["max"], "n": d["n"],
        "exactness": d["exactness"], "source": d["source"], "decoding": d.get("decoding")}
    r, m = acceptance_rate(logs), mean_accepted_length(logs)
    acc = {"rate": r["value"], "mean_len": m["value"], "n": max(r["n"], m["n"]),
           "exactness": r["exactness"] or m["exactness"], "source": r["source"] or m["source"],
           "accepted": r["accepted"], "generated": r["generated"], "mean_len_how": m["how"]}
    g = aggregate_decode(logs)
    agg_d = None if g["value"] is None else {
        "active": g["active"], "prefilling": g["prefilling"], "mean_tps": g["value"],
        "peak_tps": g["peak"],
        "exactness": g["exactness"], "n": g["n"], "seconds": g["seconds"]}
    from logscope.analysis.served import served
    return {"prefill_fit": fit, "prefill_points": pts.height, "served": served(logs),
            "prefill_at": {d: prefill_at(logs, d, fit) for d in at_depths}, "decode": dec,
            "acceptance": acc, "aggregate": agg_d, "pressure": pressure_summary(logs),
            "energy": energy_headline(logs), "request_log": request_log_figures(logs),
            "iterations": iteration_figures(logs)}


def build_report(logs_list: list, labels: list[str] | None = None,
                 at: tuple[int, ...] | list[int] | None = None) -> dict:
    """Everything ``logscope report`` prints, for one or more ingests.

    Example::

        rep = build_report([logscope.read("server.log")], at=(4096, 49152))
        print(render(rep, "md"))
    """
    from logscope.analysis.served import streams, time_budget
    from logscope.analysis.servers import split_servers

    labels = labels or [None] * len(logs_list)
    # several servers one wrapper interleaved in a log: each reported on its own figures
    pairs = [p for logs, lab in zip(logs_list, labels, strict=True)
             for p in split_servers(logs, label_of(logs, lab))]
    logs_list, labels = [p[1] for p in pairs], [p[0] for p in pairs]
    out: dict = {"bench": [], "prefill_by_depth": [], "depth_profile": [],
                 "decode_by_depth": [], "time_budget": [], "cards": {}, "headline": {},
                 "concurrency": [], "streams": [], "findings": {}}
    for logs, lab in zip(logs_list, labels, strict=True):
        name = label_of(logs, lab)
        h = headline(logs, at=at)
        fit = h["prefill_fit"]
        out["concurrency"].append(concurrency(logs, name))
        out["streams"].append(streams(logs, name))
        out["bench"].append(bench_table(logs, name))
        out["bench"].append(window_table(logs, name))
        # the model's column only where it agrees with every measured bucket
        model = [] if fit.get("agrees") else [pl.lit(None, pl.Float64).alias("fit_tps")]
        out["prefill_by_depth"].append(
            prefill_by_depth(logs, name, fit=fit).with_columns(model))
        out["depth_profile"].append(
            prefill_by_depth(logs, name, step=None, fit=fit).with_columns(model))
        out["decode_by_depth"].append(decode_by_depth(logs, name))
        out["time_budget"].append(time_budget(logs, name))
        out["cards"][name] = config_card(logs)
        out["findings"][name] = findings(logs, name)
        if str(out["cards"][name].get("engine") or "") in ("sglang", "vllm"):
            from logscope.analysis.window_fit import state_fit
            h["window_fit"] = state_fit(logs, name).drop("label").to_dicts()
        out["headline"][name] = h
    for k in ("bench", "prefill_by_depth", "depth_profile", "decode_by_depth", "time_budget",
              "concurrency", "streams"):
        out[k] = pl.concat(out[k])
    return out


def has_figures(rep: dict) -> bool:
    """True when a report holds at least one measured figure (else: nothing to report)."""
    if any(rep[k].height for k in ("bench", "prefill_by_depth", "decode_by_depth")):
        return True
    for h in rep["headline"].values():
        if h["decode"] or h["acceptance"]["n"] or h["prefill_points"] or h["aggregate"]:
            return True
        if any(not r["reason"] for r in h.get("window_fit", [])):
            return True
        if h.get("request_log") or h.get("iterations"):
            return True
    return False


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


def _round_obj(o, key: str | None = None):
    """Floats of the JSON report rounded like the server prints them (fit coefficients kept)."""
    if isinstance(o, dict):
        return {k: _round_obj(v, k if isinstance(k, str) else key) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_round_obj(v, key) for v in o]
    if isinstance(o, float):
        if not math.isfinite(o):
            return None
        if key in ("a", "b", "c"):
            return o
        if key in ("rate", "r2") or (key and "acceptance" in key):
            return sig(o, 3) if key != "r2" else round(o, 4)
        return round(o, 2)
    return o


def served_lines(s: dict | None) -> list[str]:
    """The report's served-throughput lines (:func:`logscope.analysis.served.served`)."""
    if not s or not s.get("throughput_tps"):
        return []
    least = s.get("throughput_lower_bound")
    out = [f"- served throughput: {'at least ' if least else ''}{_fmt(s['throughput_tps'])} t/s "
           f"({s['completion_tokens']:,.0f} completion tokens ÷ {_fmt(s['span_s'], 1)} s "
           f"{s['span_basis']}; {_fmt(s['busy_tps'])} t/s per busy second"
           + ("; a run of fewer than three intervals with tokens starts and ends somewhere "
              "inside its first and last: they count whole" if least else "") + ")"]
    if (s.get("engines") or 1) > 1:
        out.append(f"- data parallel: {s['engines']} engines, each printing its own window "
                   "lines; a state is the streams decoding on one engine, the served "
                   "throughput is the whole server's")
    if s.get("per_stream_tps"):
        out.append(f"- speed per stream as served: {_fmt(s['per_stream_tps'])} t/s "
                   f"({s['per_stream_source']}, n = {s['per_stream_n']}; up to "
                   f"{s['max_streams']} stream{'s' if s['max_streams'] != 1 else ''} "
                   "decoding at once" + (" on one engine" if (s.get("engines") or 1) > 1
                                          else "") + ")")
    parts = [(w, s[k]) for k, w in (("decode_s", "decode"),
                                    ("decode_prefill_s", "decode + prefill"),
                                    ("prefill_s", "prefill"), ("stall_s", "stall"),
                                    ("idle_s", "idle")) if s[k]]
    # shares of the time the states account for: the span itself on a request log; on window
    # lines the intervals, where the span's edge intervals count only their busy part
    span = sum(v for _, v in parts) or s["span_s"]
    n = s.get("engines") or 1
    out.append("- the served span: " + ", ".join(
        f"{w} {v:,.1f} s ({100 * v / span:.0f} %)" for w, v in parts)
        + (f" (engine-seconds: {n} data-parallel engines, each its own window lines, side by "
           "side)" if n > 1 else ""))
    return out


def findings_md(items: list[dict]) -> str:
    """The findings of one log as a Markdown list, each with the lines it rests on."""
    return "Findings (from the log's own lines)\n\n" + "\n".join(
        f"- {f['text']} ({', '.join(f['evidence'])})" for f in items) + "\n"


def fit_text(fit: dict) -> str:
    """The prefill fit in one line: c (ms), a, b, r², basis, depths, predictions."""
    if not fit["valid"]:
        return f"prefill fit: none ({fit.get('reason')})"
    if fit.get("agrees") is False:
        where = "; ".join(f"{d} {k}: measured {m:,.0f} t/s, model {f:,.0f}"
                          for d, k, m, f in fit["disagrees"][:4])
        return ("prefill model: not shown — it disagrees with the measured buckets by more "
                f"than 10 % ({where}" + (", …" if len(fit["disagrees"]) > 4 else "")
                + "); the measured buckets above are the answer")
    lo, hi = fit["depth_range"]
    pred = ", ".join(
        f"{d:,}: {_fmt(v, 0)}" + ("*" if fit["extrapolated"][d] else "")
        for d, v in fit["predict"].items() if v is not None)
    fresh = ", ".join(f"{d:,} tokens {t:.2f} s = {d / t:,.0f} t/s"
                      for d, t in fit["ttft"].items() if t)
    refused = [f"{d:,}" for d, v in fit["refused"].items() if v]
    why = {v for v in fit["refused"].values() if v}
    r2 = "—" if fit["r2"] is None else f"{fit['r2']:.3f}"
    out = (f"prefill model time = c + a·n + b·n·(d0 + n/2): c = {fit['c_ms']:,.0f} ms, "
           f"a = {fit['a']:.3e} s/token, b = {fit['b']:.3e} s/token², r² = {r2} "
           f"({fit['n']} {fit['basis']} stretches: {', '.join(fit['sources'])}; depths "
           f"{lo:,.0f}–{hi:,.0f}"
           + (f"; {fit['n_shared']} shared stretches left out" if fit["basis"] == "solo"
              and fit["n_shared"] else "") + ")")
    if pred:
        out += f"; marginal t/s = 1/(a + b·d) at depth {pred}" + (
            " (* = beyond the measured depths, ≤ ×1.25)" if "*" in pred else "")
    if fresh:
        out += f"; a fresh prompt of {fresh} (TTFT = c + a·n + b·n²/2, raw)"
    if refused:
        out += f"; no prediction at {', '.join(refused)} ({'; '.join(sorted(why))})"
    return out


CURES = ("; a shorter stats interval", "; SGLANG_LOG_MS=1")   # window_fit._cure's openings


def _kv_text(r: dict, lead: str) -> str:
    """``lead`` and the KV in use over a state's quiet intervals (nothing without it)."""
    from logscope.analysis.window_fit import quiet_kv_text

    kv = quiet_kv_text(r)
    return lead + kv if kv else ""


def _window_fit_lines(rows: list[dict]) -> list[str]:
    """The window fit's figures per state (:mod:`logscope.analysis.window_fit`), or why a
    state has none (states in a row refused for the same reason on one line, each one's quiet
    intervals and bound after it); the server setting that would let the refused states be
    read, once."""
    lines: list[str] = []
    cure = ""
    if rows and all(r["reason"] for r in rows):
        lines.append("- decode per stream: no state identified by the window fit "
                     "(docs/engines.md); per state:")
    # a refused state: [states, reason, their own lines]; states in a row alike join
    items: list[str | list] = []
    for r in rows:
        k = r["decoding"]
        if r["reason"]:
            why = r["reason"]
            for c in CURES:
                if c in why:
                    why, cure = why[:why.index(c)], why[why.index(c) + 2:]
            why = why.removeprefix(f"{k} decoding: ")
            if not (items and isinstance(items[-1], list) and items[-1][1] == why):
                items.append([[], why, []])
            items[-1][0].append(k)
            own = items[-1][2]
            if r.get("quiet_per_stream"):
                n = r["quiet_windows"]
                own.append(f"- decode per stream at {k} decoding in its {n} quiet interval"
                           f"{'s' if n > 1 else ''}: {_fmt(r['quiet_per_stream'])} t/s (the "
                           f"running count unchanged, no prompt beside{_kv_text(r, ', at ')}; "
                           "their tokens ÷ their seconds, a window average at that depth, not "
                           "the state's mean)")
            if r.get("busiest_per_stream"):
                own.append(f"- decode per stream at {k} decoding, one stream throughout: at "
                           f"least {_fmt(r['busiest_per_stream'])} t/s in the busiest interval "
                           "(its tokens ÷ its seconds, its prompts and idle included: a lower "
                           "bound of the rate at that interval's depth, not the run's mean)")
            continue
        model = ("one step time per state" if r.get("model", "per state") == "per state"
                 else "pooled step time b + c·k across states")
        items.append(f"- decode per stream at {k} decoding (window fit, {model}, "
                     f"{r['windows']} intervals):"
                     f" clean {_fmt(r['clean_per_stream'])} t/s ({_fmt(r['clean_lo'])}–"
                     f"{_fmt(r['clean_hi'])}), as served {_fmt(r['served_per_stream'])} t/s "
                     f"({_fmt(r['served_lo'])}–{_fmt(r['served_hi'])}), aggregate "
                     f"{_fmt(r['aggregate'])} t/s over {_fmt(r['seconds'], 1)} s")
    for item in items:
        if isinstance(item, str):
            lines.append(item)
            continue
        ks, why, own = item
        at = ", ".join(map(str, ks[:-1])) + (" and " if len(ks) > 1 else "") + str(ks[-1])
        lines.append(f"- decode per stream: no figure at {at} decoding: {why}")
        lines.extend(own)
    if cure:
        lines.append(f"- to read the refused states: {cure}")
    return lines


def render(rep: dict, fmt: str = "md") -> str:
    """Render a :func:`build_report` result as ``md``, ``csv`` (the bench table) or ``json``.

    Floats in CSV and JSON are rounded to what the server prints (0.01 t/s, 0.01 ms;
    acceptance to 3 significant digits); the fit's a, b, c stay exact.

    Example::

        render(build_report([logscope.read("server.log")]), "csv")
    """
    if fmt == "csv":
        return round_frame(rep["bench"]).write_csv()
    if fmt == "json":
        return json.dumps(_round_obj({
            "bench": rep["bench"].to_dicts(),
            "depth_profile": rep["depth_profile"].to_dicts(),
            "prefill_by_depth": rep["prefill_by_depth"].to_dicts(),
            "decode_by_depth": rep["decode_by_depth"].to_dicts(),
            "time_budget": rep["time_budget"].to_dicts(),
            "concurrency": rep["concurrency"].select(
                "label", "decoding", "prefilling", "seconds", "tokens", "per_stream_tps",
                "aggregate_tps", "median_request_tps", "n", "exactness").to_dicts(),
            "streams": rep["streams"].to_dicts(),
            "cards": rep["cards"], "headline": rep["headline"],
            "findings": rep["findings"]}), indent=2, default=str)
    if fmt != "md":
        raise ValueError(f"unknown format {fmt!r}")
    parts = []
    for name, card in rep["cards"].items():
        parts.append(f"## {name}\n")
        prof = rep["depth_profile"].filter(pl.col("label") == name)
        if prof.height:
            parts.append("Prefill by depth (solo: nothing else ran; chunks = between progress "
                         "lines, exact server clock; prompts = whole prompts, exact; "
                         "TTFT = server prompt eval)\n")
            parts.append(_md_table(
                ["depth", "measured", "n", "tokens each", "t/s", "t/s, overhead removed",
                 "TTFT (s)", "model t/s"],
                [[depth_label(r["depth_lo"], r["depth_hi"]), r["kind"], r["n"],
                  f"{r['tokens'] / r['n']:,.0f}", r["tps"], r["tps_no_overhead"],
                  _fmt(r["ttft_s"], 3), r["fit_tps"]]
                 for r in prof.iter_rows(named=True)]) + "\n")
        h = rep["headline"][name]
        engine = str(card.get("engine") or "")
        if engine == "vllm" and not h["prefill_points"]:
            lines = ["- prefill by depth: not measurable from vLLM's lines (its stats give "
                     "prompt throughput per interval, never the depth it ran at)"]
        else:
            lines = ["- " + fit_text(h["prefill_fit"])]
        lines += [f"- prefill t/s at depth {d:,}: " + (
            f"{_fmt(p['tps'])} ({p['basis']}"
            + (f", {p['kind']} {depth_label(p['depth_lo'], p['depth_hi'])}, n = {p['n']})"
               if p["basis"] == "measured" else ": the model, no measured bucket here)")
            if p["tps"] is not None else f"— ({p['why']})")
            for d, p in h.get("prefill_at", {}).items() if p["tps"] is not None]
        d = h["decode"]
        if d and d["exactness"] == FIT:
            lines.append(f"- decode t/s per stream as served at {d['decoding']} decoding, the "
                         f"state seen longest (window fit): "
                         f"{fmt_figure('decode_tps', d['median'])} (95 % CI {_fmt(d['min'])}–"
                         f"{_fmt(d['max'])}), n = {d['n']} intervals; every state, clean and "
                         "as served, below")
        elif d:
            what = {EXACT: "per request (exact)"}.get(d["exactness"], f"{d['exactness']}")
            if d.get("decoding"):
                what += f" at {d['decoding']} decoding, the state seen longest"
            lines.append(f"- decode t/s {what}: median {fmt_figure('decode_tps', d['median'])},"
                         f" range {_fmt(d['min'])}–{_fmt(d['max'])}, n = {d['n']}")
        if engine in ("sglang", "vllm"):
            lines += _window_fit_lines(h.get("window_fit") or [])
        a = h["acceptance"]
        if a["n"]:
            lines.append(f"- speculative: acceptance {fmt_figure('acceptance_rate', a['rate'])},"
                         f" mean accepted length "
                         f"{fmt_figure('mean_accepted_length', a['mean_len'])} "
                         f"({a['exactness']}, n = {a['n']})")
        lines += served_lines(h.get("served"))
        refused = [r["decoding"] for r in h.get("window_fit") or []
                   if r["reason"] and r["decoding"] >= 2]
        if h["aggregate"] and h["aggregate"]["exactness"] == FIT:
            g = h["aggregate"]
            lines.append(f"- decode rate while {g['active']} streams decode: "
                         f"{fmt_figure('aggregate_decode', g['mean_tps'])} t/s (window fit, as "
                         f"served: all tokens ÷ the state's {_fmt(g['seconds'], 1)} s, prompts "
                         "beside included; the rate while they decode, not throughput)")
        elif h["aggregate"]:
            g = h["aggregate"]
            lines.append(f"- decode rate while {g['active']} streams decode: "
                         f"{fmt_figure('aggregate_decode', g['mean_tps'])} t/s "
                         f"(all tokens ÷ {_fmt(g['seconds'], 1)} s with {g['active']} "
                         f"decoding{' and one prefilling' if g['prefilling'] else ''}; "
                         f"{g['exactness']}; the rate while they decode, not throughput)")
        if refused and engine in ("sglang", "vllm") and (
                not h["aggregate"] or max(refused) > h["aggregate"]["active"]):
            lines.append(f"- decode rate while {max(refused)} streams decode: not identified "
                         "(the window intervals mix states; see the fit above)")
        p = h["pressure"]
        lines.append(f"- pressure: {p['message']}" if p["message"] else
                     f"- pressure: events {p['events'] or 'none'}"
                     + (f", KV usage max {_fmt(p['kv_usage_max'])}" if p['kv_usage_max'] else "")
                     + (f", queue max {p['queued_max']}" if p['queued_max'] is not None else ""))
        lines += request_log_lines(h.get("request_log"))
        lines += iteration_lines(h.get("iterations"))  # vLLM's step lines, where printed
        lines += energy_lines(h.get("energy"))  # GPU telemetry given (docs/energy.md)
        tb = rep["time_budget"].filter(pl.col("label") == name)
        n_eng = (h.get("served") or {}).get("engines") or 1
        if tb.height:
            tot = tb.group_by("state").agg(pl.col("seconds").sum())
            sec = dict(tot.iter_rows())
            total = sum(sec.values())
            lines.append("- time of the whole log: " + ", ".join(
                f"{k} {sec[k]:,.1f} s ({100 * sec[k] / total:.0f} %)"
                for k in BUDGET_STATES if k in sec)
                + (" (stall = requests in progress, nothing computing: the server loop saving "
                   "or loading a prompt cache blocks every slot)" if sec.get("stall") else "")
                + (f" (engine-seconds of {n_eng} data-parallel engines)" if n_eng > 1 else ""))
        parts.append("\n".join(lines) + "\n")
        if rep["findings"].get(name):
            parts.append(findings_md(rep["findings"][name]))
        parts.append(_md_table(["config", "value"],
                               [[k, v] for k, v in card.items() if v is not None]))
    b = rep["bench"]
    if b.height:
        parts.append("\n## llama-bench-shaped (source = passive; n* = fewer than 3; "
                     "k shared = requests that ran alongside another request; "
                     "~ = median size where the bucket's requests are not within ±5 % of a "
                     "power of two)\n")
        rows = [[r["label"], r["test"],
                 f"{r['tps_mean']:,.2f} ± {r['tps_std']:,.2f}" if r["tps_std"] is not None
                 else f"{r['tps_mean']:,.2f}",
                 (f"{r['n']}*" if r["small"] else str(r["n"]))
                 + (f" ({r['shared']} shared)" if r["shared"] else ""),
                 r["tokens_per_step"], r["source"],
                 "exact" if r["exactness"] == EXACT else "window avg"]
                for r in b.iter_rows(named=True)]
        parts.append(_md_table(["label", "test", "t/s", "n", "tokens/step", "source",
                                "exactness"], rows))
    dd = rep["decode_by_depth"]
    if dd.height:
        parts.append("\n## Decode by depth and concurrency (exact per request; others = "
                     "requests in progress alongside, 0 = solo)\n")
        parts.append(_md_table(
            ["label", "depth", "others", "n", "t/s", "min–max", "tokens/step"],
            [[r["label"], depth_label(r["depth_lo"], r["depth_hi"]), r["others"], r["n"],
              r["tps"], f"{r['tps_min']:,.2f}–{r['tps_max']:,.2f}", r["tokens_per_step"]]
             for r in dd.iter_rows(named=True)]))
    st = rep["streams"]
    if st.height:
        parts.append("\n## Streams: the rate while k streams decode, per stream, and what one "
                     "more stream adds (prefill beside them included; the points of "
                     "`logscope plot pareto`; not throughput: see served throughput above)\n")
        energy = st["tokens_per_j"].null_count() < st.height
        parts.append(_md_table(
            ["label", "streams decoding", "seconds", "share of decode time", "aggregate t/s",
             "per stream t/s", "one more stream adds", "prefill beside"]
            + (["tokens per J (GPU)"] if energy else []),
            [[r["label"], r["decoding"], _fmt(r["seconds"], 1), f"{100 * r['share']:.0f} %",
              r["aggregate_tps"], r["per_stream_tps"],
              f"{r['gain_tps']:+,.2f} t/s (×{r['gain_ratio']:.2f})"
              if r["gain_tps"] is not None else "—",
              f"{100 * r['prefill_share']:.0f} %"]
             + ([_fmt(r["tokens_per_j"], 3)] if energy else [])
             for r in st.iter_rows(named=True)]))
    # window lines: the raw intervals, each at the count it closed with, mix states; their
    # answer per state is the fit's (the Streams table above), so they are not tabled here
    cc = rep["concurrency"].filter(pl.col("source") != "window intervals")
    if cc.height:
        parts.append("\n## Decode by concurrency (state = streams decoding, prompts prefilling "
                     "at once; aggregate = all tokens decoded in the state ÷ its seconds, the "
                     "rate while in it; per stream = aggregate ÷ streams; median request = the "
                     "median rate of the requests that decoded mostly in the state, stalls "
                     "included (SGLang/vLLM: of its clean windows); 1 decoding, 0 prefilling = "
                     "alone on the GPU)\n")
        parts.append(_md_table(
            ["label", "decoding", "prefilling", "seconds", "tokens", "aggregate t/s",
             "per stream t/s", "median request t/s", "n", "exactness"],
            [[r["label"], r["decoding"], r["prefilling"], _fmt(r["seconds"], 1),
              f"{r['tokens']:,.0f}", r["aggregate_tps"], r["per_stream_tps"],
              r["median_request_tps"], r["n"], r["exactness"]]
             for r in cc.iter_rows(named=True)]))
    tb = rep["time_budget"]
    if tb.height:
        dp = max(((h.get("served") or {}).get("engines") or 1
                  for h in rep["headline"].values()), default=1)
        parts.append("\n## Where the time went (server clock, the whole log; busy = requests "
                     "in progress; the seconds add up to the log's span"
                     + (", times its data-parallel engines (each logs its own windows)"
                        if dp > 1 else "") + ")\n")
        parts.append(_md_table(["label", "state", "busy", "seconds", "share"],
                               [[r["label"], r["state"], r["busy"], _fmt(r["seconds"], 1),
                                 f"{100 * r['share']:.1f} %" if r["share"] is not None else None]
                                for r in tb.iter_rows(named=True)]))
    pd = rep["prefill_by_depth"]
    if pd.height:
        parts.append("\n## Prefill by depth, 2048-token buckets (solo; chunks: between "
                     "progress lines; requests: whole prompts)\n")
        parts.append(_md_table(
            ["label", "depth", "measured", "n", "tokens", "t/s", "t/s, overhead removed",
             "TTFT (s)", "model t/s"],
            [[r["label"], depth_label(r["depth_lo"], r["depth_hi"]), r["kind"], r["n"],
              r["tokens"], r["tps"], r["tps_no_overhead"], _fmt(r["ttft_s"], 3),
              r["fit_tps"]] for r in pd.iter_rows(named=True)]))
    return "\n".join(parts) + "\n"


__all__ = ["bench_table", "window_table", "prefill_by_depth", "decode_by_depth", "config_card",
           "headline", "build_report", "has_figures", "render", "fit_text", "bucket",
           "depth_bucket", "PREDICT_AT"]
