"""Where the time went: per request (wait, prompt eval, decode, stalls) and per run.

llama-server's ``prompt eval time`` is only the prompt's compute; the log shows more:

* ``select_to_launch_s``: from ``selected slot by …`` to ``processing task``. The server
  loop saves the slot's previous state to the prompt cache here (``--cache-ram``): 3–4 s
  for a 5–7 GiB state on the H200 runs, during which the other slot stalls too.
* ``launch_to_prompt_s``: from ``processing task`` to the start of the prompt's compute
  (= prompt end − prompt eval time): loading a cached prompt, context checkpoints, or
  waiting for the other slot's batch. Together with the first one: ``wait_s``.
* ``prompt_s``, ``decode_s``: the server's own prompt eval and eval times (exact).
* ``prompt_start``/``prompt_end``/``decode_end``: seconds on the server clock; the prompt
  ends when decode starts (release time − eval time).

What the log cannot show: time spent in the HTTP layer or queued before a slot was selected
(a request waiting for a busy single slot prints nothing). ``partial`` requests (the log
starts inside them) are left out: their first line is not their start.

Where a whole run's time went, state by state, is :func:`logscope.analysis.served.time_budget`
(from :func:`logscope.analysis.concurrency.states`).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import label_of, table

REQ_SCHEMA = {
    "label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
    "status": pl.String, "t_select": pl.Float64, "t_start": pl.Float64,
    "prompt_start": pl.Float64, "prompt_end": pl.Float64, "decode_end": pl.Float64,
    "select_to_launch_s": pl.Float64, "launch_to_prompt_s": pl.Float64, "wait_s": pl.Float64,
    "prompt_s": pl.Float64, "decode_s": pl.Float64, "total_s": pl.Float64,
}


def request_times(logs, label: str | None = None) -> pl.DataFrame:
    """Per llama-server request: wait before the prompt, prompt eval, decode (seconds).

    Example::

        request_times(logscope.read("server.log")).sort("wait_s", descending=True).head()
    """
    lab = label_of(logs, label)
    req = table(logs, "requests")
    if req is None or "t_start" not in req.columns or req["t_start"].null_count() == req.height:
        return pl.DataFrame(schema=REQ_SCHEMA)
    # a partial request's first line is not its start: no wait or budget can be told
    req = req.filter(pl.col("t_start").is_not_null(), pl.col("status") != "partial")
    if req.height == 0:
        return pl.DataFrame(schema=REQ_SCHEMA)
    sel = table(logs, "slot_select")
    if sel is not None and "t_rel" in sel.columns and sel["t_rel"].null_count() < sel.height:
        s = (sel.select("file", "run", "slot", pl.col("t_rel").alias("t_select"))
             .drop_nulls().sort("t_select"))
        req = req.sort("t_start").join_asof(s, left_on="t_start", right_on="t_select",
                                            by=["file", "run", "slot"], strategy="backward",
                                            check_sortedness=False)
        # a selection belongs to this launch only if no earlier request of the slot
        # launched after it
        prev = req.sort("t_start").select(
            pl.col("t_start").shift(1).over(["file", "run", "slot"]).alias("_prev"))
        req = req.sort("t_start").with_columns(prev).with_columns(
            pl.when(pl.col("_prev").is_null() | (pl.col("t_select") > pl.col("_prev")))
            .then(pl.col("t_select")).alias("t_select"))
    else:
        req = req.with_columns(pl.lit(None, pl.Float64).alias("t_select"))
    dec = pl.col("decode_ms").fill_null(0) / 1000
    # a request cut during its prompt (cancelled, partial) has no prompt eval time: its
    # progress lines say when the prompt started (t − its t = … s) and it ran to release
    first = pl.col("prefill_tick_list").list.first() if "prefill_tick_list" in req.columns \
        else pl.lit(None, pl.Struct({"t_rel": pl.Float64, "pp_seconds": pl.Float64}))
    tick_start = first.struct.field("t_rel") - first.struct.field("pp_seconds")
    has_pe = pl.col("prompt_ms").is_not_null()
    prompt_end = pl.when(has_pe).then(pl.col("t_end") - dec).when(tick_start.is_not_null()) \
        .then(pl.col("t_end"))
    prompt_start = pl.when(has_pe).then(prompt_end - pl.col("prompt_ms") / 1000) \
        .otherwise(tick_start)
    out = req.select(
        pl.lit(lab).alias("label"), "file", "run", "slot", "task", "status", "t_select",
        "t_start", prompt_start.alias("prompt_start"), prompt_end.alias("prompt_end"),
        pl.when(pl.col("decode_ms").is_not_null()).then(pl.col("t_end")).alias("decode_end"),
        (pl.col("t_start") - pl.col("t_select")).alias("select_to_launch_s"),
        (prompt_start - pl.col("t_start")).clip(lower_bound=0).alias("launch_to_prompt_s"),
        (prompt_end - prompt_start).alias("prompt_s"),
        (pl.col("decode_ms") / 1000).alias("decode_s"),
        (pl.col("t_end") - pl.coalesce("t_select", "t_start")).alias("total_s"),
    ).with_columns(
        (pl.col("select_to_launch_s").fill_null(0) + pl.col("launch_to_prompt_s"))
        .alias("wait_s"))
    return out.select(list(REQ_SCHEMA)).cast(REQ_SCHEMA).sort("file", "run", "t_start")
