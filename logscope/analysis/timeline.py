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

:func:`time_budget` sums one run's timeline: every instant is ``prefill`` (some request is
computing its prompt), else ``decode``, else ``stall`` (a request is selected or launched
but not computing), else ``idle``; ``busy`` is how many requests were in progress then.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from logscope.analysis._util import label_of, table

REQ_SCHEMA = {
    "label": pl.String, "file": pl.String, "run": pl.Int32, "slot": pl.Int64, "task": pl.Int64,
    "status": pl.String, "t_select": pl.Float64, "t_start": pl.Float64,
    "prompt_start": pl.Float64, "prompt_end": pl.Float64, "decode_end": pl.Float64,
    "select_to_launch_s": pl.Float64, "launch_to_prompt_s": pl.Float64, "wait_s": pl.Float64,
    "prompt_s": pl.Float64, "decode_s": pl.Float64, "total_s": pl.Float64,
}
BUDGET_SCHEMA = {"label": pl.String, "file": pl.String, "run": pl.Int32, "state": pl.String,
                 "busy": pl.Int64, "seconds": pl.Float64, "share": pl.Float64}


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


def _cover(iv: list[tuple[float, float]], t: np.ndarray) -> np.ndarray:
    """How many of the intervals [a, b) contain each time of ``t``."""
    if not iv:
        return np.zeros(len(t), dtype=np.int64)
    s = np.sort([a for a, _ in iv])
    e = np.sort([b for _, b in iv])
    return np.searchsorted(s, t, side="right") - np.searchsorted(e, t, side="right")


def time_budget(logs, label: str | None = None) -> pl.DataFrame:
    """Per run: seconds in prefill / decode / stall / idle, by requests in progress.

    Example::

        time_budget(logscope.read("server.log")).group_by("state").agg(pl.col("seconds").sum())
    """
    lab = label_of(logs, label)
    rt = request_times(logs, lab)
    req = table(logs, "requests")
    if rt.height == 0 or req is None:
        return pl.DataFrame(schema=BUDGET_SCHEMA)
    rows = []
    for (file, run), g in rt.group_by(["file", "run"], maintain_order=True):
        r = req.filter((pl.col("file") == file) & (pl.col("run") == run)).drop_nulls(
            ["t_start", "t_end"])
        busy_iv = list(zip(r["t_start"], r["t_end"], strict=True))
        pre = [(a, b) for a, b in zip(g["prompt_start"], g["prompt_end"], strict=True)
               if a is not None and b is not None and b > a]
        dec = [(a, b) for a, b in zip(g["prompt_end"], g["decode_end"], strict=True)
               if a is not None and b is not None and b > a]
        sa = g.select(pl.coalesce("t_select", "t_start")).to_series()
        sb = g.select(pl.coalesce("prompt_start", "t_start")).to_series()
        stall = [(a, b) for a, b in zip(sa, sb, strict=True)
                 if a is not None and b is not None and b > a]
        cuts = sorted({t for iv in (busy_iv, pre, dec, stall) for ab in iv for t in ab})
        if len(cuts) < 2:
            continue
        cuts_a = np.array(cuts)
        mids = (cuts_a[:-1] + cuts_a[1:]) / 2
        width = np.diff(cuts_a)

        p, d, st, busy = (_cover(iv, mids) for iv in (pre, dec, stall, busy_iv))
        state = np.where(p > 0, "prefill", np.where(d > 0, "decode",
                                                      np.where(st > 0, "stall", "idle")))
        total = float(width.sum())
        df = pl.DataFrame({"state": state, "busy": busy.astype(np.int64), "seconds": width})
        agg = df.group_by("state", "busy").agg(pl.col("seconds").sum())
        for stt, b, sec in agg.iter_rows():
            rows.append(dict(label=lab, file=file, run=run, state=stt, busy=b, seconds=sec,
                             share=sec / total if total else None))
    out = pl.DataFrame(rows, schema=BUDGET_SCHEMA)
    order = {"prefill": "0", "decode": "1", "stall": "2", "idle": "3"}
    return out.sort("file", "run", pl.col("state").replace(order), "busy")
