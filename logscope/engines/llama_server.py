"""llama-server's engine model: continuation lines, server runs, clocks, and requests.

Input: the classified rows of one engine (events, ignored and unrecognized lines, with their
file/line/envelope/fields). Output: one frame per event kind plus ``requests``: one row per
(file, run, slot, task) assembled from its events, whatever order the slots interleave in.
"""

from __future__ import annotations

import polars as pl

from . import Model

# kinds whose lines may come without a slot header: the continuation lines of a multi-line
# summary entry (b3761–b9229) and the era A/B print_timings block
CONTINUATION_VARIANTS = (
    "prompt_eval_cont_b3761", "eval_cont_b3761", "total_cont_b3761", "draft_acceptance_b4984",
    "prompt_eval_b1413", "eval_b1413", "total_b1413", "prompt_eval_a", "eval_a", "total_a",
)
HEADER_VARIANT = "ign_summary_header"
RUN_START_VARIANTS = ("info_log_start_b9151", "info_build_b3761", "info_build_info")
CLOCK_BACKSTEP_S = 1.0  # the relative clock going back by more than this starts a new run

TICK_DTYPE = pl.List(pl.Struct({"t_rel": pl.Float64, "n_processed": pl.Int64, "n_past": pl.Int64,
                                 "progress": pl.Float64, "pp_seconds": pl.Float64,
                                 "pp_tps": pl.Float64}))


def _t_rel() -> pl.Expr:
    parts = pl.col("ts_rel").str.split(".")
    return (
        parts.list.get(0, null_on_oob=True).cast(pl.Float64, strict=False) * 60
        + parts.list.get(1, null_on_oob=True).cast(pl.Float64, strict=False)
        + parts.list.get(2, null_on_oob=True).cast(pl.Float64, strict=False) / 1e3
        + parts.list.get(3, null_on_oob=True).cast(pl.Float64, strict=False) / 1e6
    )


def _ensure(df: pl.DataFrame, cols: dict[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=d).alias(c) for c, d in cols.items() if c not in df.columns]
    return df.with_columns(missing) if missing else df


def attach_continuations(df: pl.DataFrame) -> pl.DataFrame:
    """Give continuation lines the slot, task and clock of their entry's header line.

    A continuation belongs to the header immediately before it in the same file and router
    port (only other continuation lines may stand between). Era A/B ``print_timings`` blocks
    have no header: they take the slot of the release line that follows (era B prints
    ``slot N released`` right after the block).
    """
    is_cont = pl.col("variant").is_in(CONTINUATION_VARIANTS)
    grp = ["file", "_port"]
    if not df.select(is_cont.any()).item():  # b9230+ logs print no continuation lines
        return _fill_era_b_tasks(df, grp)
    # a continuation's header is the last non-continuation row before it in its file and port:
    # its position, forward-filled, gathers the header's values (no join or window over the
    # many blocks: both would copy or index the whole frame)
    df = df.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_h"))
    df = df.with_columns(pl.when(~is_cont).then(pl.col("_h")).forward_fill().over(grp)
                         .alias("_h"))

    def head(c: str) -> pl.Expr:
        return pl.col(c).gather(pl.col("_h"))

    from_header = is_cont & (head("variant") == HEADER_VARIANT)
    df = df.with_columns(
        pl.when(from_header).then(head("slot")).otherwise(pl.col("slot")).alias("slot"),
        pl.when(from_header).then(head("task")).otherwise(pl.col("task")).alias("task"),
        pl.when(from_header & pl.col("t_rel").is_null()).then(head("t_rel"))
        .otherwise(pl.col("t_rel")).alias("t_rel"),
    ).drop("_h")
    # era A/B: slot from the next release line (task ids are not printed by era A)
    nxt = (
        df.filter(pl.col("kind") == "release")
        .select(*grp, "line", pl.col("slot").alias("_rs"), pl.col("task").alias("_rt"))
        .sort("line")
    )
    orphan = is_cont & pl.col("slot").is_null()
    if nxt.height and df.select(orphan.any()).item():
        # only the orphan rows are matched, and their slot/task written back in place
        at = df.select(pl.arg_where(orphan).alias("_at")).with_columns(
            df.filter(orphan).select(*grp, "line"))
        got = at.sort("line").join_asof(nxt, on="line", by=grp, strategy="forward",
                                        check_sortedness=False).sort("_at")
        idx = got.get_column("_at")
        df = df.with_columns(
            df.get_column("slot").scatter(idx, got.get_column("_rs")),
            df.get_column("task").scatter(idx, got.get_column("_rt")))
    # era A prints neither slot nor task: each timing block is one request, numbered in order
    era_a = pl.col("variant").is_in(["prompt_eval_a", "eval_a", "total_a"])
    block_no = (pl.col("variant") == "prompt_eval_a").cast(pl.Int64).cum_sum().over(grp) - 1
    df = df.with_columns(
        pl.when(era_a & pl.col("task").is_null()).then(block_no).otherwise(pl.col("task"))
        .alias("task"))
    return _fill_era_b_tasks(df, grp)


def _fill_era_b_tasks(df: pl.DataFrame, grp: list[str]) -> pl.DataFrame:
    """Era B prints the slot but not the task on release and timing lines: the task is the last
    one launched on that slot."""
    needs = (pl.col("task").is_null() & pl.col("slot").is_not_null()
             & pl.col("kind").is_in(["release", "prompt_eval", "eval", "total",
                                     "cache_trim", "context_shift"]))
    if not df.select(needs.any()).item():
        return df
    last_task = (pl.when(pl.col("kind") == "task_launch").then(pl.col("task"))
                 .forward_fill().over([*grp, "slot"]))
    return df.with_columns(
        pl.when(needs).then(last_task).otherwise(pl.col("task")).alias("task"))


def assign_runs(df: pl.DataFrame) -> pl.DataFrame:
    """Split each file (and router child) into server runs. A new run starts where the relative
    clock goes back, or at a startup line (build / verbosity) when requests were seen since the
    previous run start (so a block of startup lines is one restart, not one per line)."""
    grp = ["file", "_port"]
    t = pl.col("t_rel").forward_fill().over(grp)
    backstep = (t < t.shift(1).over(grp) - CLOCK_BACKSTEP_S).fill_null(False)
    is_start = pl.col("variant").is_in(RUN_START_VARIANTS)
    is_request = pl.col("kind").is_in(["task_launch", "release", "prompt_eval", "slot_select"])
    requests_before = (is_request.cast(pl.Int32).cum_sum().over(grp)
                       - is_request.cast(pl.Int32))
    candidate = backstep | is_start
    # requests seen up to the previous candidate (counts only grow, so accepted or not is alike)
    at_prev = (pl.when(candidate).then(requests_before).shift(1).forward_fill().over(grp)
               .fill_null(0))
    restart = backstep | (is_start & (requests_before > at_prev))
    return df.with_columns((restart.cast(pl.Int32).cum_sum().over(grp) + 1).alias("run"))


def anchor_clock(df: pl.DataFrame, mtime: dict[str, float | None]) -> pl.DataFrame:
    """Wall-clock ``ts`` (UTC) for every row, with ``ts_source`` saying where it came from.

    * ``unix``: the line's own Unix timestamp (era B log file, era A/C JSON) — exact, 1 s.
    * ``wrapper``: journald / docker timestamp of that line — exact for the wrapper.
    * ``anchored:wrapper`` / ``anchored:mtime``: relative clock + an anchor — inferred.
    """
    from ..clock import WRAP_TS, WRAP_TS_DTYPE

    grp = ["file", "_port", "run"]
    df = _ensure(df, {WRAP_TS: WRAP_TS_DTYPE}).rename({WRAP_TS: "_wts"})
    # anchor per run: min(wrapper - t_rel) (as klif does); else the file mtime minus last t_rel
    df = df.with_columns(
        (pl.col("_wts").cast(pl.Int64) / 1e6 - pl.col("t_rel")).min().over(grp).alias("_a_wrap"),
    )
    mt = pl.col("file").replace_strict(mtime, default=None, return_dtype=pl.Float64)
    last_run = pl.col("run") == pl.col("run").max().over(["file"])
    df = df.with_columns(
        pl.when(last_run).then(mt - pl.col("t_rel").max().over(grp)).alias("_a_mtime"),
    )
    unix = pl.col("unix_ts").cast(pl.Float64) if "unix_ts" in df.columns else pl.lit(None)
    secs = (
        pl.when(unix.is_not_null()).then(unix)
        .when(pl.col("t_rel").is_not_null() & pl.col("_a_wrap").is_not_null())
        .then(pl.col("_a_wrap") + pl.col("t_rel"))
        .when(pl.col("_wts").is_not_null()).then(pl.col("_wts").cast(pl.Int64) / 1e6)
        .when(pl.col("t_rel").is_not_null() & pl.col("_a_mtime").is_not_null())
        .then(pl.col("_a_mtime") + pl.col("t_rel"))
    )
    source = (
        pl.when(unix.is_not_null()).then(pl.lit("unix"))
        .when(pl.col("t_rel").is_not_null() & pl.col("_a_wrap").is_not_null())
        .then(pl.lit("anchored:wrapper"))
        .when(pl.col("_wts").is_not_null()).then(pl.lit("wrapper"))
        .when(pl.col("t_rel").is_not_null() & pl.col("_a_mtime").is_not_null())
        .then(pl.lit("anchored:mtime"))
    )
    secs = pl.when(secs.is_between(0, 2e10)).then(secs)  # junk clocks give no time at all
    return df.with_columns(
        (secs * 1e6).cast(pl.Int64, strict=False).cast(pl.Datetime("us", "UTC")).alias("ts"),
        source.alias("ts_source"),
        source.str.starts_with("anchored").alias("ts_inferred"),
    ).drop("_wts", "_a_wrap", "_a_mtime")


def prepare(events: pl.DataFrame, mtime: dict[str, float | None]) -> pl.DataFrame:
    """Continuations, runs and clocks over all classified llama-server rows."""
    df = _ensure(events, {"router_port": pl.Int64, "ts_rel": pl.String, "slot": pl.Int64,
                          "task": pl.Int64, "unix_ts": pl.Int64, "level": pl.String})
    # the router port (0 = not under a router) separates clocks and continuation blocks
    df = df.with_columns(_t_rel().alias("t_rel"), pl.col("router_port").fill_null(0).alias("_port"))
    df = attach_continuations(df)
    df = assign_runs(df)
    df = anchor_clock(df, mtime)
    return df.with_columns(
        pl.when(pl.col("kind").is_in(["prompt_eval", "eval", "total", "draft_acceptance"]))
        .then(pl.lit("exact_per_request"))
        .when(pl.col("kind") == "decode_progress")
        .then(pl.lit("tg: cumulative per request; tg_3s: window since the previous tick"))
        .when(pl.col("kind") == "prompt_progress")
        .then(pl.lit("cumulative since the prompt started"))
        .alias("basis"))


def _first(kind_df: pl.DataFrame, cols: dict[str, str]) -> pl.DataFrame:
    key = ["file", "_port", "run", "slot", "task"]
    have = {src: dst for src, dst in cols.items() if src in kind_df.columns}
    return kind_df.group_by(key).agg([pl.col(s).first().alias(d) for s, d in have.items()])


def build_requests(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per (file, router port, run, slot, task) that the server launched or reported on,
    from the per-kind tables."""
    key = ["file", "_port", "run", "slot", "task"]

    def kind(k: str) -> pl.DataFrame:
        return tables[k].with_columns(pl.col("router_port").fill_null(0).alias("_port"))

    launch = kind("task_launch").filter(pl.col("task") >= 0)
    base = launch.group_by(key).agg(
        pl.col("t_rel").first().alias("t_start"),
        pl.col("ts").first().alias("ts_start"),
        pl.col("line").first().alias("line_start"),
        (pl.col("is_child").first() if "is_child" in launch.columns
         else pl.lit(None, pl.Boolean)).alias("is_child"),
    )
    # requests seen only through their summary (log cut at the start) still count
    summ = pl.concat([kind(k).select(*key, "t_rel", "ts", "line")
                      for k in ("prompt_eval", "eval", "release")]).filter(
        pl.col("task").is_null() | (pl.col("task") >= 0))
    extra = summ.group_by(key).agg(
        pl.col("t_rel").min().alias("t_start"), pl.col("ts").min().alias("ts_start"),
        pl.col("line").min().alias("line_start"))
    base = pl.concat([base, extra.join(base, on=key, how="anti", nulls_equal=True)],
                     how="diagonal_relaxed")

    # slot selection (task -1) belongs to the next launch of the same slot
    sel = kind("slot_select")
    if sel.height:
        sel = sel.select("file", "_port", "run", "slot", "line",
                         pl.col("variant").str.extract(r"slot_select_([a-z]+)_").alias("select_method"),
                         *[c for c in ("sim_best", "f_keep") if c in sel.columns]).sort("line")
        starts = base.select(*key, "line_start").sort("line_start")
        picked = sel.join_asof(starts, left_on="line", right_on="line_start",
                               by=["file", "_port", "run", "slot"], strategy="forward",
                               check_sortedness=False)
        picked = picked.filter(pl.col("task").is_not_null()).group_by(key).agg(
            pl.all().exclude(*key, "line", "line_start").last())
        base = base.join(picked, on=key, how="left", nulls_equal=True)

    pe = _first(kind("prompt_eval"), {"prompt_tokens": "prompt_tokens", "prompt_ms": "prompt_ms",
                                       "prompt_tps": "prompt_tps"})
    ev = _first(kind("eval"), {"gen_tokens": "gen_tokens", "eval_ms": "decode_ms",
                               "eval_tps": "decode_tps"})
    tt = _first(kind("total"), {"total_ms": "total_ms", "ts": "_ts_summary", "t_rel": "_t_summary"})
    gr = _first(kind("graphs_reused"), {"graphs_reused": "graphs_reused"})
    dr = _first(kind("draft_acceptance"), {"draft_accepted": "draft_accepted",
                                           "draft_generated": "draft_generated",
                                           "draft_rate": "draft_rate", "mean_len": "mean_len",
                                           "acc_per_pos": "acc_per_pos"})
    rel = _first(kind("release"), {"ctx_tokens": "ctx_tokens", "truncated": "truncated",
                                   "ts": "_ts_release", "t_rel": "_t_release"})
    npr = _first(kind("new_prompt"), {"prompt_total": "prompt_total", "n_ctx_slot": "n_ctx_slot"})
    trim = kind("cache_trim")
    trim = trim.sort("line").group_by(key).agg(
        (pl.col("trim_pos").first() if "trim_pos" in trim.columns else pl.lit(None, pl.Int64))
        .alias("_c_trim"),
        (pl.col("cached_tokens").first() if "cached_tokens" in trim.columns
         else pl.lit(None, pl.Int64)).alias("_c_era_b"),
    ) if trim.height else pl.DataFrame(schema={**{k: pl.Int64 for k in key}, "file": pl.String,
                                               "_c_trim": pl.Int64, "_c_era_b": pl.Int64})
    shift = kind("context_shift")
    shift = shift.group_by(key).agg(pl.len().alias("context_shifts"),
                                    pl.col("n_discard").sum().alias("n_discarded")) \
        if shift.height else None
    pp = kind("prompt_progress")
    ppagg = None
    if pp.height:
        pp = _ensure(pp, {"n_processed": pl.Int64, "pp_seconds": pl.Float64, "pp_tps": pl.Float64,
                          "progress": pl.Float64, "n_past": pl.Int64})
        ppagg = pp.sort("line").group_by(key).agg(
            pl.len().alias("prefill_ticks"),
            pl.struct(pl.col("t_rel"), pl.col("n_processed"), pl.col("n_past"),
                      pl.col("progress"), pl.col("pp_seconds"), pl.col("pp_tps"))
            .alias("prefill_tick_list"),
        )
    tg = kind("decode_progress")
    tgagg = None
    if tg.height:
        tg = _ensure(tg, {"tg_3s": pl.Float64})
        tgagg = tg.group_by(key).agg(pl.len().alias("decode_ticks"),
                                     pl.col("tg_3s").mean().alias("tg_3s_mean"))

    # cancel / error lines name the task only
    def by_task(k: str, agg: list[pl.Expr]) -> pl.DataFrame | None:
        sub = kind(k)
        return sub.group_by("file", "_port", "run", "task").agg(agg) if sub.height else None

    cancel = by_task("cancel", [pl.lit(True).alias("cancel_line")])
    err = by_task("task_error", [pl.col("error_text").first().alias("error")])

    out = base
    for part in (pe, ev, tt, gr, dr, rel, npr, trim, shift, ppagg, tgagg):
        if part is not None and part.height:
            out = out.join(part, on=key, how="left", nulls_equal=True)
    for part in (cancel, err):
        if part is not None:
            out = out.join(part, on=["file", "_port", "run", "task"], how="left")
    out = _ensure(out, {
        "prompt_tokens": pl.Int64, "prompt_ms": pl.Float64, "prompt_tps": pl.Float64,
        "gen_tokens": pl.Int64, "decode_ms": pl.Float64, "decode_tps": pl.Float64,
        "total_ms": pl.Float64, "graphs_reused": pl.Int64, "draft_accepted": pl.Int64,
        "draft_generated": pl.Int64, "draft_rate": pl.Float64, "mean_len": pl.Float64,
        "ctx_tokens": pl.Int64, "truncated": pl.Boolean, "prompt_total": pl.Int64,
        "n_ctx_slot": pl.Int64, "_c_trim": pl.Int64, "_c_era_b": pl.Int64,
        "context_shifts": pl.UInt32, "n_discarded": pl.Int64, "prefill_ticks": pl.UInt32,
        "decode_ticks": pl.UInt32, "tg_3s_mean": pl.Float64, "cancel_line": pl.Boolean,
        "error": pl.String, "_ts_summary": pl.Datetime("us", "UTC"), "_t_summary": pl.Float64,
        "_ts_release": pl.Datetime("us", "UTC"), "_t_release": pl.Float64,
        "select_method": pl.String, "sim_best": pl.Float64, "f_keep": pl.Float64,
    })
    if "prefill_tick_list" not in out.columns:
        out = out.with_columns(pl.lit(None, dtype=TICK_DTYPE).alias("prefill_tick_list"))
    has_summary = pl.col("prompt_tokens").is_not_null() | pl.col("gen_tokens").is_not_null()
    # cached prefix: printed exactly (first KV trim / era-B in-cache line), else from the
    # release line (n_ctx = C + P + G - 1, plus what a context shift discarded), else from the
    # progress ticks (progress = (C + n) / T); the source says which
    from_release = (pl.col("ctx_tokens") - pl.col("prompt_tokens") - pl.col("gen_tokens") + 1
                    + pl.col("n_discarded").fill_null(0))
    first_two = pl.col("prefill_tick_list").list.head(2)
    p1 = first_two.list.get(0, null_on_oob=True).struct.field("progress")
    p2 = first_two.list.get(1, null_on_oob=True).struct.field("progress")
    n1 = first_two.list.get(0, null_on_oob=True).struct.field("n_processed")
    n2 = first_two.list.get(1, null_on_oob=True).struct.field("n_processed")
    t_est = (n2 - n1) / (p2 - p1)
    from_ticks = (p1 * t_est - n1).round(0).cast(pl.Int64, strict=False)
    exact = pl.coalesce("_c_era_b", "_c_trim")
    out = out.with_columns(
        pl.when(exact.is_not_null()).then(exact)
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0))
        .then(from_release)
        .when(pl.col("prefill_tick_list").is_not_null() & (p2 > p1)).then(from_ticks)
        .alias("cached_tokens"),
        pl.when(exact.is_not_null()).then(pl.lit("printed"))
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0)
              & pl.col("truncated").fill_null(False) & (pl.col("draft_generated") > 0))
        # at the context limit the slot also holds draft tokens: only an upper bound
        .then(pl.lit("release_upper_bound"))
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0))
        .then(pl.lit("release_arithmetic"))
        .when(pl.col("prefill_tick_list").is_not_null() & (p2 > p1))
        .then(pl.lit("progress_fit"))
        .alias("cached_source"),
    )
    status = (
        pl.when(pl.col("error").is_not_null()).then(pl.lit("error"))
        .when(has_summary).then(pl.lit("completed"))
        .when(pl.col("cancel_line").fill_null(False)).then(pl.lit("cancelled"))
        # released with no summary and no error: aborted (era B prints no cancel line)
        .when(pl.col("ctx_tokens").is_not_null()).then(pl.lit("cancelled"))
        .otherwise(pl.lit("incomplete"))
    )
    out = out.with_columns(
        pl.when(pl.col("_port") > 0).then(pl.col("_port")).alias("router_port"),
        status.alias("status"),
        (status == "cancelled").alias("cancelled"),
        pl.coalesce("_ts_release", "_ts_summary").alias("ts_end"),
        pl.coalesce("_t_release", "_t_summary").alias("t_end"),
        pl.when(pl.col("prompt_total").is_null() & pl.col("cached_tokens").is_not_null())
        .then(pl.col("cached_tokens") + pl.col("prompt_tokens"))
        .otherwise(pl.col("prompt_total")).alias("prompt_total"),
    )
    cols = [
        "file", "router_port", "run", "slot", "task", "status", "cancelled", "truncated", "error",
        "is_child",
        "select_method", "sim_best", "f_keep", "ts_start", "ts_end", "t_start", "t_end",
        "prompt_total", "cached_tokens", "cached_source", "prompt_tokens", "prompt_ms",
        "prompt_tps", "gen_tokens", "decode_ms", "decode_tps", "total_ms", "graphs_reused",
        "draft_accepted", "draft_generated", "draft_rate", "mean_len", "ctx_tokens",
        "n_ctx_slot", "context_shifts", "n_discarded", "prefill_ticks", "decode_ticks",
        "tg_3s_mean", "prefill_tick_list",
    ]
    return out.select(cols).sort("file", "run", "t_start", "task", "slot", nulls_last=True)


def derive(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    return {"requests": build_requests(tables)}


MODEL = Model(prepare=prepare, derive=derive, row_fields=("slot", "task"))
