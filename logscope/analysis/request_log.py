"""Per-request figures a request log prints (SGLang ``--log-requests``), summarised for a card.

The ``requests`` rows of an engine whose table comes from a request log (``source =
"request_log"``) carry the server's own per-request counts and its end-to-end time, exact per
request, but no prefill or decode time: the card says so and derives nothing else from them.
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import table

SOURCE = "request_log"


def request_log_figures(logs) -> dict | None:
    """Counts and end-to-end times of the finished requests of a request log (None without).

    ``n`` finished (``cancelled`` of them aborted); token sums; the radix-cache share of the
    prompt tokens; median and maximum end-to-end seconds (requests that printed it); median
    mean accepted length (speculative decoding, where printed).

    Example::

        request_log_figures(logscope.read("sglang.log"))["e2e_median_s"]   # 2.1
    """
    req = table(logs, "requests")
    if req is None or "source" not in req.columns:
        return None
    req = req.filter(pl.col("source") == SOURCE)
    if not req.height:
        return None
    e2e = req["total_ms"].drop_nulls() / 1000.0
    ml = req["mean_len"].drop_nulls()
    prompt = req["prompt_total"].drop_nulls()
    cached = req.filter(pl.col("cached_tokens").is_not_null()
                        & pl.col("prompt_total").is_not_null())
    ptot = int(cached["prompt_total"].sum())
    return {
        "n": req.height,
        "cancelled": int(req["cancelled"].fill_null(False).sum()),
        "prompt_tokens": int(prompt.sum()) if prompt.len() else None,
        "cached_tokens": int(cached["cached_tokens"].sum()) if cached.height else None,
        "cached_share": (float(cached["cached_tokens"].sum()) / ptot) if ptot > 0 else None,
        "gen_tokens": int(req["gen_tokens"].drop_nulls().sum())
        if req["gen_tokens"].drop_nulls().len() else None,
        "e2e_median_s": float(e2e.median()) if e2e.len() else None,
        "e2e_max_s": float(e2e.max()) if e2e.len() else None,
        "n_e2e": int(e2e.len()),
        "mean_len_median": float(ml.median()) if ml.len() else None,
        "n_mean_len": int(ml.len()),
        "exactness": "exact per request",
    }


def request_log_lines(fig: dict | None) -> list[str]:
    """The card's lines for :func:`request_log_figures` (none when it is None).

    Example: ``request_log_lines({"n": 2, ...})[0]`` → ``"- requests (exact per request): 2 …"``
    """
    if not fig:
        return []
    parts = [f"{fig['n']} finished" + (f" ({fig['cancelled']} aborted)" if fig["cancelled"]
                                       else "")]
    if fig["prompt_tokens"] is not None:
        parts.append(f"prompt {fig['prompt_tokens']:,} tokens"
                     + (f", {fig['cached_tokens']:,} from cache "
                        f"({100 * fig['cached_share']:.0f} %)"
                        if fig["cached_share"] is not None else ""))
    if fig["gen_tokens"] is not None:
        parts.append(f"generated {fig['gen_tokens']:,} tokens")
    if fig["e2e_median_s"] is not None:
        parts.append(f"end-to-end median {fig['e2e_median_s']:,.3f} s, max "
                     f"{fig['e2e_max_s']:,.3f} s (n = {fig['n_e2e']})")
    if fig.get("mean_len_median") is not None:
        parts.append(f"mean accepted length median {fig['mean_len_median']:.2f} tokens/step "
                     f"(n = {fig['n_mean_len']})")
    return ["- requests (exact per request, from the request log): " + "; ".join(parts),
            "- per-request prefill and decode time: not printed by the request log "
            "(decode t/s stays the window figure)"]
