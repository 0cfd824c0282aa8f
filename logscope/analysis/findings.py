"""Findings: what the log itself says about why a run was slow, each citing its lines.

:func:`findings` applies a few rules to the frames of one ingest; each finding is
``{"rule", "text", "evidence": ["file:line", ...]}``: no finding without a line it rests on,
none on a log that lacks the evidence.

* ``prompt_cache_too_small`` — llama-server skipped saving a prompt state larger than its
  prompt-cache limit (``prompt state size … exceeds cache size limit …``): later turns of that
  conversation recompute their prefix.
* ``prompt_cache_stalls`` — requests held between slot selection and launch for a second or
  more (the server loop saving the previous prompt to the cache; every slot waits then).
* ``context_shift`` — a slot ran out of context and discarded tokens to go on.
* ``kv_retry`` — llama-server found no free KV space for a batch and retried smaller.
* ``retractions`` / ``preemptions`` — SGLang retracted, vLLM preempted requests for lack of KV
  space: throughput falls while they are recomputed.
* ``kv_pressure`` — the KV cache ran at 90 % or more of its capacity (SGLang token usage, vLLM
  KV cache usage).
* ``queueing`` — requests waited in the server's queue (SGLang ``#queue-req``, vLLM
  ``Waiting``).
* ``cuda_graph_off`` — the server runs without CUDA graphs (SGLang ``disable_cuda_graph``, vLLM
  ``enforce_eager``), which costs decode speed at small batches.
* ``draft_low_acceptance`` — the draft's tokens are mostly rejected (mean accepted length
  below ``LOW_MEAN_LEN``): each step pays for the draft and keeps little of it.

:func:`pair_findings` adds what only an A/B pair shows: a draft whose run decodes slower per
stream than the run without it (the verdict's interval below 1): below break-even.
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import sglang_kv_usage, table, vllm_kv_usage

MAX_EVIDENCE = 3
KV_HIGH = 0.90
STALL_S = 1.0
LOW_MEAN_LEN = 1.5


def _first(logs, *names: str) -> pl.DataFrame | None:
    for n in names:
        df = table(logs, n)
        if df is not None:
            return df
    return None


def _where(df: pl.DataFrame, n: int = MAX_EVIDENCE) -> list[str]:
    return [f"{f}:{ln}" for f, ln in df.select(pl.col("file").cast(pl.String), "line")
            .head(n).iter_rows()]


def _cache_too_small(logs) -> list[dict]:
    df = table(logs, "prompt_cache_skip")
    if df is None:
        return []
    lo, hi = df["state_mib"].min(), df["state_mib"].max()
    lim = df["cache_limit_mib"].max()
    size = f"{lo:,.0f} MiB" if lo == hi else f"{lo:,.0f}–{hi:,.0f} MiB"
    return [{"rule": "prompt_cache_too_small",
             "text": f"prompt cache smaller than the prompt state: {df.height} time(s) the server "
                     f"skipped caching a {size} state (limit {lim:,.0f} MiB), so later turns "
                     "recompute their prefix — raise --cache-ram",
             "evidence": _where(df)}]


def _stalls(logs) -> list[dict]:
    from logscope.analysis.timeline import request_times

    rt = request_times(logs).filter(pl.col("select_to_launch_s") >= STALL_S)
    launch = table(logs, "task_launch")
    if rt.height == 0 or launch is None:
        return []
    ev = launch.select(pl.col("file").cast(pl.String), "line", "run", "slot", "task").join(
        rt.select("file", "run", "slot", "task"), on=["file", "run", "slot", "task"])
    if ev.height == 0:
        return []
    return [{"rule": "prompt_cache_stalls",
             "text": f"{rt.height} request(s) waited {rt['select_to_launch_s'].sum():,.1f} s in "
                     f"all between slot selection and launch (up to "
                     f"{rt['select_to_launch_s'].max():,.1f} s): the server loop was saving a "
                     "prompt to the prompt cache, and every slot waited",
             "evidence": _where(ev)}]


def _counted(logs, name: str, rule: str, text) -> list[dict]:
    df = table(logs, name)
    if df is None:
        return []
    if df.height == 0:
        return []
    return [{"rule": rule, "text": text(df), "evidence": _where(df)}]


def _kv_and_queue(logs) -> list[dict]:
    out = []
    for name, usage, queue in (("decode_batch", sglang_kv_usage, "queue_req"),
                               ("engine_stats", vllm_kv_usage, "waiting_reqs")):
        df = table(logs, name)
        if df is None:
            continue
        df = df.with_columns(usage(df).alias("_kv"))
        hi = df.filter(pl.col("_kv") >= KV_HIGH)
        if hi.height:
            peak = float(df["_kv"].max())
            out.append({"rule": "kv_pressure",
                        "text": f"KV cache at {KV_HIGH:.0%} or more in {hi.height} of "
                                f"{df.height} window lines (peak {peak:.0%}): new requests "
                                "wait or are retracted/preempted",
                        "evidence": _where(hi.sort("_kv", descending=True))})
        if queue in df.columns:
            q = df.filter(pl.col(queue) > 0)
            if q.height:
                out.append({"rule": "queueing",
                            "text": f"requests waited in the queue in {q.height} of {df.height} "
                                    f"window lines (up to {int(q[queue].max())} waiting): "
                                    "more arrived than the server runs at once",
                            "evidence": _where(q.sort(queue, descending=True))})
    return out


def _cuda_graph(logs) -> list[dict]:
    df = table(logs, "server_config")
    if df is None:
        return []
    out = []
    for col, what in (("disable_cuda_graph", "CUDA graphs disabled (disable_cuda_graph)"),
                      ("enforce_eager", "CUDA graphs off: eager mode (enforce_eager)")):
        if col in df.columns:
            on = df.filter(pl.col(col).cast(pl.String).str.to_lowercase()
                           .is_in(["true", "1"]))
            if on.height:
                out.append({"rule": "cuda_graph_off",
                            "text": f"{what}: every decode step launches its kernels one by "
                                    "one, slower at small batches",
                            "evidence": _where(on, 1)})
    return out


def _low_acceptance(logs) -> list[dict]:
    from logscope.analysis.metrics import mean_accepted_length

    m = mean_accepted_length(logs)
    if m["value"] is None or m["value"] >= LOW_MEAN_LEN:
        return []
    df = _first(logs, "draft_acceptance", "spec_decoding", "decode_batch")
    if df is None:
        return []
    return [{"rule": "draft_low_acceptance",
             "text": f"mean accepted length {m['value']:.2f} tokens per step ({m['exactness']}):"
                     " the draft's tokens are mostly rejected; unless drafting is nearly free, "
                     "it costs more than it saves — compare with a run without it",
             "evidence": _where(df)}]


def _retracted(df: pl.DataFrame) -> int:
    if "retracted_reqs" in df.columns:
        return int(df["retracted_reqs"].fill_null(1).sum())
    return df.height


def findings(logs, label: str | None = None) -> list[dict]:
    """The findings of one ingest (see the module docstring).

    Example::

        for f in findings(logscope.read("server.log")):
            print(f["text"], "—", ", ".join(f["evidence"]))
    """
    out = _cache_too_small(logs) + _stalls(logs)
    out += _counted(logs, "context_shift", "context_shift", lambda df: (
        f"context shift {df.height} time(s): a slot ran out of context and discarded "
        + (f"{int(df['n_discard'].sum()):,} tokens " if "n_discard" in df.columns else "tokens ")
        + "to go on (the answer lost that context)"))
    out += _counted(logs, "decode_retry", "kv_retry", lambda df: (
        f"no free KV space for a batch {df.height} time(s): the server retried with smaller "
        "batches"))
    out += _counted(logs, "retract", "retractions", lambda df: (
        f"{_retracted(df)} request(s) retracted in {df.height} event(s) for lack of KV space: "
        "their tokens are recomputed, and throughput falls meanwhile"))
    out += _counted(logs, "preemption", "preemptions", lambda df: (
        f"{df.height} preemption warning(s): requests preempted for lack of KV space and "
        "recomputed"))
    es = table(logs, "engine_stats")
    if es is not None and "preemptions" in es.columns:
        p = es.filter(pl.col("preemptions") > 0)
        if p.height:
            out.append({"rule": "preemptions",
                        "text": f"{int(p['preemptions'].sum()):,} preemption(s) in {p.height} "
                                "stats interval(s): requests preempted for lack of KV space",
                        "evidence": _where(p)})
    out += _kv_and_queue(logs) + _cuda_graph(logs) + _low_acceptance(logs)
    return out


def pair_findings(logs_a, logs_b, names: tuple[str, str], verdict_rows: list[dict]
                  ) -> list[dict]:
    """Findings only an A/B pair shows: a draft below break-even (the side that drafts decodes
    slower per stream than the side that does not, the verdict's interval clear of 1).

    Example::

        pair_findings(a, b, ("spec", "base"), verdict(a, b, ("spec", "base")))
    """
    from logscope.analysis.metrics import acceptance_rate

    ra, rb = acceptance_rate(logs_a), acceptance_rate(logs_b)
    d = next((v for v in verdict_rows if v["question"] == "decode_per_stream"), None)
    if d is None or d["ratio"] is None or not d["ci95"] or (ra["n"] > 0) == (rb["n"] > 0):
        return []
    drafts_a = ra["n"] > 0
    lo, hi = d["ci95"]
    slower = (hi < 1) if not drafts_a else (lo > 1)   # the drafting side is slower
    if not slower:
        return []
    who, lg = (names[0], logs_a) if drafts_a else (names[1], logs_b)
    other = names[1] if drafts_a else names[0]
    ratio = d["ratio"] if drafts_a else 1 / d["ratio"]
    acc = ra if drafts_a else rb
    ev = _first(lg, "draft_acceptance", "spec_decoding", "decode_batch")
    return [{"rule": "draft_below_break_even",
             "text": f"the draft is below break-even: {other}, without a draft, decodes "
                     f"{ratio:.2f}× faster per stream than {who} (drafting, acceptance "
                     f"{acc['value']:.2f}; 95 % CI of B/A {lo:.2f}–{hi:.2f})",
             "evidence": _where(ev) if ev is not None else []}]


__all__ = ["findings", "pair_findings"]
