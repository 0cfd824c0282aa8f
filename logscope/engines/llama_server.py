"""llama-server's engine model: continuation lines, server runs, clocks, and requests.

Input: the classified rows of one engine (events, ignored and unrecognized lines, with their
file/line/envelope/fields). Output: one frame per event kind plus ``requests``: one row per
(file, run, slot, task) assembled from its events, whatever order the slots interleave in.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from logscope.engines import (
    SOURCE,
    AnyTables,
    Fields,
    Model,
    RunNumbers,
    Sources,
    State,
    Stream,
    Tables,
    last_per_group,
)
from logscope.engines.clock import WRAP_TS, WRAP_TS_DTYPE
from logscope.engines.store import stack

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
    """Seconds since the server started, from ``M.SS.mmm.uuu``: whole microseconds, then scaled
    and rounded to the microsecond, so the value is the printed time's nearest double whatever
    the batch (Polars divides a column by a scalar as a multiplication by its reciprocal, except
    on one row: a plain ``/ 1e6`` differs by an ulp between batch layouts)."""
    ts = pl.col("ts_rel")  # fixed widths from the end (the grammar's): M+ . SS . mmm . uuu

    def num(e: pl.Expr) -> pl.Expr:
        return e.cast(pl.Int64, strict=False)

    minutes = num(ts.str.head(-11))
    # minutes beyond a billion (junk, or an overflow of the microsecond count) give no time
    us = (pl.when(minutes < 1_000_000_000)
          .then((minutes * 60 + num(ts.str.slice(-10, 2))) * 1_000_000
                + num(ts.str.slice(-7, 3)) * 1_000 + num(ts.str.slice(-3, 3))))
    return (us * 1e-6).round(6)


def _ensure(df: pl.DataFrame, cols: dict[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=d).alias(c) for c, d in cols.items() if c not in df.columns]
    return df.with_columns(missing) if missing else df


GRP = ["file", "_port", SOURCE]  # one server: its file, router port and wrapper source
IS_CONT = pl.col("variant").is_in(CONTINUATION_VARIANTS)
ORPHAN_BLOCK_START = ("prompt_eval_b1413", "prompt_eval_a")
ERA_A = ("prompt_eval_a", "eval_a", "total_a")
ERA_B_TASKLESS = ("release", "prompt_eval", "eval", "total", "cache_trim", "context_shift")
REQUEST_KINDS = ("task_launch", "release", "prompt_eval", "slot_select")
MAX_HELD_ROWS = 100_000  # an era A/B timing block waits at most this long for its release line


class LlamaStream(Stream):
    """llama-server's model, one batch at a time.

    * Continuation lines take the slot, task and clock of their entry's header: the last
      non-continuation row before them in the same file and router port (only other
      continuation lines may stand between), carried across batches.
    * Era A/B ``print_timings`` blocks have no header: they take the slot (and task) of the
      release line that follows in the same file and port before the next block starts (era B
      prints ``slot N released`` right after the block; era A prints none). A block at the end
      of a batch waits for the next batch (at most ``MAX_HELD_ROWS`` rows).
    * Era A numbers its blocks as tasks; era B's release and timing lines take the last task
      launched on their slot.
    * Runs: a new run starts where the relative clock goes back by more than
      ``CLOCK_BACKSTEP_S``, or at a startup line when requests were seen since the previous
      candidate start (a block of startup lines is one restart, not one per line).
    * ``ts`` is anchored per run (see :meth:`finish`), so it is filled once every run is seen.
    """

    temp_columns = ("_port", "_wts")

    def __init__(self, mtimes: dict[str, float | None]) -> None:
        super().__init__(mtimes)
        self.heads = State(GRP, {"file": pl.String, "_port": pl.Int64, SOURCE: pl.Int32,
                                 "_hv": pl.String,
                                 "_hs": pl.Int64, "_ht": pl.Int64, "_htr": pl.Float64})
        self.era_a = State(GRP, {"file": pl.String, "_port": pl.Int64, SOURCE: pl.Int32,
                                 "_na": pl.Int64})
        self.launches = State([*GRP, "slot"], {"file": pl.String, "_port": pl.Int64,
                                               SOURCE: pl.Int32,
                                               "slot": pl.Int64, "_lt": pl.Int64})
        self.runs = State(GRP, {"file": pl.String, "_port": pl.Int64, SOURCE: pl.Int32,
                                "_st": pl.Float64,
                                "_sreq": pl.Int64, "_sat": pl.Int64, "_srun": pl.Int32})
        self.held: pl.DataFrame | None = None
        self.held_fields: Fields = {}
        # a router's children and the servers a wrapper interleaves are servers of their own
        self.numbers = RunNumbers(["_port", SOURCE])
        self.sources = Sources()
        self.codes: dict[str, int] = {"": 0}  # a wrapper's source -> its code (SOURCE)
        self.one_group = False
        self.clock_parts: list[pl.DataFrame] = []
        self.anchors: pl.DataFrame | None = None  # per run, once every batch is in

    def step(self, rows: pl.DataFrame, fields: Fields, final: bool = False
             ) -> tuple[pl.DataFrame, Fields]:
        df = _ensure(rows, {"router_port": pl.Int64, "ts_rel": pl.String, "slot": pl.Int64,
                            "task": pl.Int64, "unix_ts": pl.Int64, "level": pl.String,
                            WRAP_TS: WRAP_TS_DTYPE})
        # the router port (0 = not under a router) separates clocks and continuation blocks
        df = df.with_columns(_t_rel().alias("t_rel"),
                             pl.col("router_port").fill_null(0).alias("_port"))
        df = self._sources(df)
        if self.held is not None:
            df = pl.concat([self.held, df], how="diagonal_relaxed")
            fields = _merge_fields(self.held_fields, fields)
            self.held, self.held_fields = None, {}
        # window expressions run per file and port; over one group (the usual batch) a plain
        # expression gives the same and skips hashing the keys of every row
        one = df.select((pl.col("file").n_unique() == 1) & (pl.col("_port").n_unique() == 1)
                        & (pl.col(SOURCE).n_unique() == 1)).item()
        self.one_group = bool(one)
        orig = df
        df = self._headers(df)
        df, cut = self._orphans(df, final)
        if cut is not None:
            self.held = orig.slice(cut)
            held_rows = self.held.get_column("_row")
            self.held_fields = {k: f.filter(pl.col("_row").is_in(held_rows.implode()))
                                for k, f in fields.items()}
            fields = {k: f.filter(~pl.col("_row").is_in(held_rows.implode()))
                      for k, f in fields.items()}
            df = df.slice(0, cut)
        self.heads.update(last_per_group(df.filter(~IS_CONT), GRP, [
            pl.col("variant").last().alias("_hv"), pl.col("slot").last().alias("_hs"),
            pl.col("task").last().alias("_ht"), pl.col("t_rel").last().alias("_htr")]))
        df = self._era_tasks(df)
        df = self._runs(df)
        return self._clock(df), fields

    def _w(self, e: pl.Expr) -> pl.Expr:
        """``e`` per server (file, router port, wrapper source)."""
        return e if self.one_group else e.over(GRP)

    def flush(self) -> tuple[pl.DataFrame | None, Fields]:
        if self.held is None:
            return None, {}
        held, fields = self.held, self.held_fields
        self.held, self.held_fields = None, {}
        return self.step(held.drop("t_rel", "_port", SOURCE), fields, final=True)

    def _sources(self, df: pl.DataFrame) -> pl.DataFrame:
        """``SOURCE`` as a small code: the line's host, compose service or pod, 0 without."""
        src = self.sources(df)
        for name in src.unique(maintain_order=True).to_list():
            self.codes.setdefault(name, len(self.codes))
        return df.with_columns(src.replace_strict(self.codes, return_dtype=pl.Int32)
                               .alias(SOURCE))

    def _headers(self, df: pl.DataFrame) -> pl.DataFrame:
        """Continuation lines: the header's values, gathered by its position (no join or window
        over the many blocks); before the batch's first header, the carried one."""
        if not df.select(IS_CONT.any()).item():
            return df
        df = self.heads.attach(df.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32)
                                               .alias("_h")))
        df = df.with_columns(self._w(pl.when(~IS_CONT).then(pl.col("_h")).forward_fill())
                             .alias("_h"))

        def head(c: str, carried: str) -> pl.Expr:
            return pl.when(pl.col("_h").is_null()).then(pl.col(carried)) \
                .otherwise(pl.col(c).gather(pl.col("_h")))

        from_header = IS_CONT & (head("variant", "_hv") == HEADER_VARIANT)
        return df.with_columns(
            pl.when(from_header).then(head("slot", "_hs")).otherwise(pl.col("slot"))
            .alias("slot"),
            pl.when(from_header).then(head("task", "_ht")).otherwise(pl.col("task"))
            .alias("task"),
            pl.when(from_header & pl.col("t_rel").is_null()).then(head("t_rel", "_htr"))
            .otherwise(pl.col("t_rel")).alias("t_rel"),
        ).drop("_h", "_hv", "_hs", "_ht", "_htr")

    def _orphans(self, df: pl.DataFrame, final: bool) -> tuple[pl.DataFrame, int | None]:
        """Era A/B timing lines without a slot take the next release's slot and task, if it
        comes before the next block; (frame, position to hold back from, if any)."""
        orphan = IS_CONT & pl.col("slot").is_null()
        if not df.select(orphan.any()).item():
            return df, None
        at = df.with_row_index("_at").filter(orphan).select("_at", *GRP, "_row")
        stop = df.with_row_index("_at").filter(
            (pl.col("kind") == "release") | (orphan & pl.col("variant").is_in(ORPHAN_BLOCK_START))
        ).select(*GRP, "_row", pl.col("kind").alias("_sk"), pl.col("slot").alias("_rs"),
                 pl.col("task").alias("_rt"))
        got = at.join_asof(stop, on="_row", by=GRP, strategy="forward", allow_exact_matches=False,
                           check_sortedness=False).sort("_at")
        cut = None
        pending = got.filter(pl.col("_sk").is_null())
        if pending.height and not final:
            first = int(pending.get_column("_at").min())
            if df.height - first <= MAX_HELD_ROWS:
                cut = first
        got = got.filter(pl.col("_sk") == "release")
        if got.height:
            idx = got.get_column("_at")
            df = df.with_columns(df.get_column("slot").scatter(idx, got.get_column("_rs")),
                                 df.get_column("task").scatter(idx, got.get_column("_rt")))
        return df, cut

    def _era_tasks(self, df: pl.DataFrame) -> pl.DataFrame:
        # era A prints neither slot nor task: each timing block is one request, numbered in order
        if df.select(pl.col("variant").is_in(ERA_A).any()).item():
            df = self.era_a.attach(df)
            start = (pl.col("variant") == "prompt_eval_a").cast(pl.Int64)
            block = self._w(start.cum_sum()) - 1 + pl.col("_na").fill_null(0)
            df = df.with_columns(
                pl.when(pl.col("variant").is_in(ERA_A) & pl.col("task").is_null())
                .then(block).otherwise(pl.col("task")).alias("task"),
                (self._w(start.cum_sum()) + pl.col("_na").fill_null(0)).alias("_na"))
            self.era_a.update(last_per_group(df, GRP, [pl.col("_na").last()]))
            df = df.drop("_na")
        # era B prints the slot, not the task, on release and timing lines: the task is the
        # last one launched on that slot
        needs = (pl.col("task").is_null() & pl.col("slot").is_not_null()
                 & pl.col("kind").is_in(ERA_B_TASKLESS))
        launched = pl.when(pl.col("kind") == "task_launch").then(pl.col("task"))
        has_launch = (pl.col("kind") == "task_launch") & pl.col("task").is_not_null()
        if df.select(needs.any()).item():
            df = self.launches.attach(df)
            last = launched.forward_fill().over([*GRP, "slot"]).fill_null(pl.col("_lt"))
            df = df.with_columns(pl.when(needs).then(last).otherwise(pl.col("task"))
                                 .alias("task")).drop("_lt")
        if df.select(has_launch.any()).item():
            self.launches.update(last_per_group(df.filter(has_launch), [*GRP, "slot"],
                                                [pl.col("task").last().alias("_lt")]))
        return df

    def _runs(self, df: pl.DataFrame) -> pl.DataFrame:
        df = self.runs.attach(df)
        t = self._w(pl.col("t_rel").forward_fill()).fill_null(pl.col("_st"))
        backstep = (t < self._w(t.shift(1)).fill_null(pl.col("_st")) - CLOCK_BACKSTEP_S
                    ).fill_null(False)
        is_start = pl.col("variant").is_in(RUN_START_VARIANTS)
        is_request = pl.col("kind").is_in(REQUEST_KINDS).cast(pl.Int64)
        requests_before = (self._w(is_request.cum_sum()) - is_request
                           + pl.col("_sreq").fill_null(0))
        candidate = backstep | is_start
        # requests seen up to the previous candidate (counts only grow: accepted or not, alike)
        at_prev = (self._w(pl.when(candidate).then(requests_before).shift(1).forward_fill())
                   .fill_null(pl.col("_sat")).fill_null(0))
        restart = backstep | (is_start & (requests_before > at_prev))
        # lazily, so that the expressions the columns share are computed once
        df = df.lazy().with_columns(
            (self._w(restart.cast(pl.Int32).cum_sum()) + pl.col("_srun").fill_null(1))
            .alias("run"),
            t.alias("_st"), (requests_before + is_request).alias("_sreq"),
            self._w(pl.when(candidate).then(requests_before).forward_fill())
            .fill_null(pl.col("_sat")).alias("_sat")).collect()
        self.runs.update(last_per_group(df, GRP, [
            pl.col("_st").last(), pl.col("_sreq").last(), pl.col("_sat").last(),
            pl.col("run").last().alias("_srun")]))
        return self.numbers(df.drop("_st", "_sreq", "_sat", "_srun"))

    def _clock(self, df: pl.DataFrame) -> pl.DataFrame:
        """Per run, what anchors its clock (kept until :meth:`finish`); and ``basis``."""
        df = df.with_columns(pl.col(WRAP_TS).cast(pl.Int64).alias("_wts")).drop(WRAP_TS)
        # in microseconds (multiplications only: a vectorised division may round differently)
        self.clock_parts.append(df.group_by("file", "_port", SOURCE, "run").agg(
            (pl.col("_wts").cast(pl.Float64) - pl.col("t_rel") * 1e6).min().alias("_a_wrap"),
            pl.col("t_rel").max().alias("_t_max")))
        return df.with_columns(
            pl.lit(None, pl.Datetime("us", "UTC")).alias("ts"),
            pl.lit(None, pl.String).alias("ts_source"),
            pl.lit(None, pl.Boolean).alias("ts_inferred"),
            pl.when(pl.col("kind").is_in(["prompt_eval", "eval", "total", "draft_acceptance"]))
            .then(pl.lit("exact_per_request"))
            .when(pl.col("kind") == "decode_progress")
            .then(pl.lit("tg: cumulative per request; tg_3s: window since the previous tick"))
            .when(pl.col("kind") == "prompt_progress")
            .then(pl.lit("cumulative since the prompt started"))
            .alias("basis"))

    def finish_table(self, name: str, table: pl.DataFrame) -> pl.DataFrame:
        """Wall-clock ``ts`` (UTC) for every row, with ``ts_source`` saying where it came from.

        * ``unix``: the line's own Unix timestamp (era B log file, era A/C JSON) — exact, 1 s.
        * ``wrapper``: journald / docker timestamp of that line — exact for the wrapper.
        * ``anchored:wrapper`` / ``anchored:mtime``: relative clock + an anchor — inferred: per
          run, min(wrapper − t_rel) (as klif does); else, for a file's last run, the file's
          mtime minus the run's last ``t_rel``.
        """
        if self.clock_parts:  # every batch is in: the runs' anchors, once
            self.anchors = _run_anchors(pl.concat(self.clock_parts), self.mtimes)
            self.clock_parts = []
        return _anchor_clock(table, self.anchors)

    def derived(self, tables: AnyTables) -> Tables:
        # server runs are independent requests-wise, so they are built a few runs at a time:
        # the working memory of one chunk, not of the whole log (in memory as when streamed)
        chunks = _run_chunks(tables)
        if len(chunks) <= 1 and not isinstance(tables.get("task_launch"), pl.LazyFrame):
            return {"requests": build_requests(tables)}
        lazy = {k: t.lazy() for k, t in tables.items()}
        parts = [build_requests({k: t.filter(sel) for k, t in lazy.items()}) for sel in chunks]
        return {"requests": stack(parts) if parts else build_requests(tables)}


def _merge_fields(a: Fields, b: Fields) -> Fields:
    out = dict(b)
    for k, f in a.items():
        out[k] = pl.concat([f, out[k]], how="diagonal_relaxed") if k in out else f
    return out


def _run_anchors(parts: pl.DataFrame, mtime: dict[str, float | None]) -> pl.DataFrame:
    """Per (file, port, run), from the batches' clock parts: the wrapper anchor (``_a_wrap``)
    and, for the last run of a file's server, the mtime anchor (``_a_mtime``), in
    microseconds; ``file`` categorical, as in the kind tables it is joined to."""
    grp = ["file", "_port", SOURCE, "run"]
    anchors = parts.group_by(grp).agg(pl.col("_a_wrap").min(), pl.col("_t_max").max())
    # the last run of each server (a router's children, a wrapper's sources: each ends where
    # the file ends)
    last_run = anchors.group_by(grp[:-1]).agg(pl.col("run").max().alias("_last"))
    return anchors.join(last_run, on=grp[:-1]).with_columns(
        pl.when(pl.col("run") == pl.col("_last"))
        .then(pl.col("file").replace_strict(mtime, default=None, return_dtype=pl.Float64) * 1e6
              - pl.col("_t_max") * 1e6).alias("_a_mtime")).select(
        pl.col("file").cast(pl.Categorical()), "_port", "run", "_a_wrap", "_a_mtime")


def _anchor_clock(df: pl.DataFrame, anchors: pl.DataFrame | None) -> pl.DataFrame:
    if anchors is None or not df.height:
        return df
    grp = ["file", "_port", "run"]
    cols = df.select(*grp, "t_rel", "_wts", "unix_ts").join(
        anchors, on=grp, how="left", nulls_equal=True, maintain_order="left")
    unix = pl.col("unix_ts").cast(pl.Float64) * 1e6
    t = pl.col("t_rel") * 1e6
    us = (pl.when(unix.is_not_null()).then(unix)
          .when(t.is_not_null() & pl.col("_a_wrap").is_not_null()).then(pl.col("_a_wrap") + t)
          .when(pl.col("_wts").is_not_null()).then(pl.col("_wts").cast(pl.Float64))
          .when(t.is_not_null() & pl.col("_a_mtime").is_not_null())
          .then(pl.col("_a_mtime") + t))
    source = (pl.when(unix.is_not_null()).then(pl.lit("unix"))
              .when(t.is_not_null() & pl.col("_a_wrap").is_not_null())
              .then(pl.lit("anchored:wrapper"))
              .when(pl.col("_wts").is_not_null()).then(pl.lit("wrapper"))
              .when(t.is_not_null() & pl.col("_a_mtime").is_not_null())
              .then(pl.lit("anchored:mtime")))
    us = pl.when(us.is_between(0, 2e16)).then(us)  # junk clocks give no time at all
    got = cols.select(
        us.round(0).cast(pl.Int64, strict=False).cast(pl.Datetime("us", "UTC")).alias("ts"),
        source.cast(pl.Categorical()).alias("ts_source"),
        source.str.starts_with("anchored").alias("ts_inferred"))
    return df.with_columns(got.get_columns())


def _first(kind_df: pl.DataFrame, cols: dict[str, str]) -> pl.DataFrame:
    key = ["file", "_port", "run", "slot", "task"]
    have = {src: dst for src, dst in cols.items() if src in kind_df.columns}
    return kind_df.group_by(key).agg([pl.col(s).first().alias(d) for s, d in have.items()])


CHUNK_REQUESTS = 100_000  # a streamed ingest builds requests about this many at a time
REQUEST_KINDS_SEEN = ("task_launch", "prompt_eval", "eval", "release", "draft_acceptance",
                      "decode_progress", "prompt_progress")


def _run_chunks(tables: AnyTables) -> list[pl.Expr]:
    """Filters that cut the finished tables into groups of whole server runs, in the order of
    the ``requests`` table (file, then run), each of about ``CHUNK_REQUESTS`` launches."""
    seen = pl.concat([tables[k].lazy().group_by("file", "run").agg(
        (pl.len() if k == "task_launch" else pl.lit(0, pl.UInt32)).alias("n"))
        for k in REQUEST_KINDS_SEEN if k in tables]).group_by("file", "run").agg(
        pl.col("n").sum()).collect()
    seen = seen.with_columns(pl.col("file").cast(pl.String)).sort("file", "run",
                                                                   nulls_last=True)
    chunks: list[pl.Expr] = []
    cur: tuple[str, int, int] | None = None  # (file, first run, last run)
    n = 0
    for f, run, k in seen.iter_rows():
        if f is None or run is None:
            return []  # not cut: rows without a file or run
        if cur is not None and (cur[0] != f or n + k > CHUNK_REQUESTS):
            chunks.append(cur)
            cur, n = None, 0
        cur = (f, run, run) if cur is None else (cur[0], cur[1], run)
        n += k
    if cur is not None:
        chunks.append(cur)
    return [(pl.col("file") == f) & pl.col("run").is_between(lo, hi) for f, lo, hi in chunks]


def build_requests(tables: AnyTables) -> pl.DataFrame:
    """One row per (file, router port, run, slot, task) that the server launched or reported on,
    from the per-kind tables (in memory, or lazy scans of where a streamed ingest wrote them:
    each is read for the columns it gives, one kind at a time)."""
    key = ["file", "_port", "run", "slot", "task"]

    def kind(k: str, *cols: str) -> pl.DataFrame:
        t = tables[k]
        have = t.collect_schema().names()
        t = t.select(c for c in ("file", "router_port", "run", "slot", "task", *cols) if c in have)
        if isinstance(t, pl.LazyFrame):
            t = t.collect()
        return t.with_columns(pl.col("router_port").fill_null(0).alias("_port"))

    launch = kind("task_launch", "t_rel", "ts", "line", "is_child").filter(pl.col("task") >= 0)
    base = launch.group_by(key).agg(
        pl.col("t_rel").first().alias("t_start"),
        pl.col("ts").first().alias("ts_start"),
        pl.col("line").first().alias("line_start"),
        (pl.col("is_child").first() if "is_child" in launch.columns
         else pl.lit(None, pl.Boolean)).alias("is_child"),
        pl.lit(True).alias("_launched"),
    )
    # requests seen only through their figures (log cut at the start) still count; the
    # earliest of each kind, then of all (no copy of the large tables' key columns at once)
    firsts = [pl.col("t_rel").min().alias("t_start"), pl.col("ts").min().alias("ts_start"),
              pl.col("line").min().alias("line_start")]
    # (each kind's requests not launched in the log, then the earliest over the kinds)
    extra = pl.concat([kind(k, "t_rel", "ts", "line")
                       .filter(pl.col("task").is_null() | (pl.col("task") >= 0))
                       .group_by(key).agg(firsts).join(base, on=key, how="anti", nulls_equal=True)
                       for k in ("prompt_eval", "eval", "release", "draft_acceptance",
                                 "decode_progress", "prompt_progress")
                       if k in tables]).group_by(key).agg(
        pl.col("t_start").min(), pl.col("ts_start").min(), pl.col("line_start").min())
    base = pl.concat([base, extra], how="diagonal_relaxed")

    # slot selection (task -1) belongs to the next launch of the same slot
    sel = kind("slot_select", "line", "variant", "sim_best", "f_keep")
    if sel.height:
        method = pl.col("variant").cast(pl.String).str.extract(r"slot_select_([a-z]+)_")
        sel = sel.select("file", "_port", "run", "slot", "line", method.alias("select_method"),
                         *[c for c in ("sim_best", "f_keep") if c in sel.columns]).sort("line")
        starts = base.select(*key, "line_start").sort("line_start")
        picked = sel.join_asof(starts, left_on="line", right_on="line_start",
                               by=["file", "_port", "run", "slot"], strategy="forward",
                               check_sortedness=False)
        picked = picked.filter(pl.col("task").is_not_null()).group_by(key).agg(
            pl.all().exclude(*key, "line", "line_start").last())
        base = base.join(picked, on=key, how="left", nulls_equal=True)

    def first(k: str, cols: dict[str, str]) -> Callable[[], pl.DataFrame]:
        return lambda: _first(kind(k, *cols), cols)

    def trim() -> pl.DataFrame:
        trim = kind("cache_trim", "trim_pos", "cached_tokens")
        return trim.group_by(key).agg(  # the table is in line order: first = earliest
            (pl.col("trim_pos").first() if "trim_pos" in trim.columns
             else pl.lit(None, pl.Int64)).alias("_c_trim"),
            (pl.col("cached_tokens").first() if "cached_tokens" in trim.columns
             else pl.lit(None, pl.Int64)).alias("_c_era_b"),
        ) if trim.height else pl.DataFrame(schema={
            **{k: pl.Int64 for k in key}, "file": pl.Categorical(), "_c_trim": pl.Int64,
            "_c_era_b": pl.Int64})

    def shift() -> pl.DataFrame | None:
        shift = kind("context_shift", "n_discard")
        return shift.group_by(key).agg(pl.len().alias("context_shifts"),
                                       pl.col("n_discard").sum().alias("n_discarded")) \
            if shift.height else None

    def prefill() -> pl.DataFrame | None:
        pp = kind("prompt_progress", "t_rel", "n_processed", "n_past", "progress", "pp_seconds",
                  "pp_tps")
        if not pp.height:
            return None
        pp = _ensure(pp, {"n_processed": pl.Int64, "pp_seconds": pl.Float64,
                          "pp_tps": pl.Float64, "progress": pl.Float64, "n_past": pl.Int64})
        return pp.group_by(key).agg(  # ticks in line order (the table's)
            pl.len().alias("prefill_ticks"),
            pl.struct(pl.col("t_rel"), pl.col("n_processed"), pl.col("n_past"),
                      pl.col("progress"), pl.col("pp_seconds"), pl.col("pp_tps"))
            .alias("prefill_tick_list"),
        )

    def decode() -> pl.DataFrame | None:
        tg = kind("decode_progress", "tg_3s")
        if not tg.height:
            return None
        tg = _ensure(tg, {"tg_3s": pl.Float64})
        return tg.group_by(key).agg(pl.len().alias("decode_ticks"),
                                    pl.col("tg_3s").mean().alias("tg_3s_mean"))

    # cancel / error lines name the task only
    def by_task(k: str, agg: list[pl.Expr], *cols: str) -> Callable[[], pl.DataFrame | None]:
        def part() -> pl.DataFrame | None:
            sub = kind(k, *cols)
            return sub.group_by("file", "_port", "run", "task").agg(agg) if sub.height else None
        return part

    # each part made just before it is joined, and let go after (one at a time in memory)
    by_request = [
        first("prompt_eval", {"prompt_tokens": "prompt_tokens", "prompt_ms": "prompt_ms",
                              "prompt_tps": "prompt_tps"}),
        first("eval", {"gen_tokens": "gen_tokens", "eval_ms": "decode_ms",
                       "eval_tps": "decode_tps"}),
        first("total", {"total_ms": "total_ms", "ts": "_ts_summary", "t_rel": "_t_summary"}),
        first("graphs_reused", {"graphs_reused": "graphs_reused"}),
        first("draft_acceptance", {"draft_accepted": "draft_accepted",
                                   "draft_generated": "draft_generated",
                                   "draft_rate": "draft_rate", "mean_len": "mean_len",
                                   "acc_per_pos": "acc_per_pos"}),
        first("release", {"ctx_tokens": "ctx_tokens", "truncated": "truncated",
                          "ts": "_ts_release", "t_rel": "_t_release"}),
        first("new_prompt", {"prompt_total": "prompt_total", "n_ctx_slot": "n_ctx_slot"}),
        trim, shift, prefill, decode,
    ]
    # in the table's order from here on; each part's columns are lined up with the requests
    # (a left join of the key columns alone) and added beside them: no copy of the growing table
    order = ["file", "run", "t_start", "task", "slot"]
    out = base.sort(order, nulls_last=True)
    del base

    def beside(out: pl.DataFrame, part: pl.DataFrame, on: list[str], nulls: bool
               ) -> pl.DataFrame:
        got = out.select(on).join(part, on=on, how="left", nulls_equal=nulls,
                                  maintain_order="left")
        return out.hstack(got.drop(on).get_columns())

    for make in by_request:
        part = make()
        if part is not None and part.height:
            out = beside(out, part, key, True)
        del part
    for make in (by_task("cancel", [pl.lit(True).alias("cancel_line")]),
                 by_task("task_error", [pl.col("error_text").first().alias("error")],
                         "error_text")):
        part = make()
        if part is not None:
            out = beside(out, part, ["file", "_port", "run", "task"], False)
        del part
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
        "_launched": pl.Boolean,
    })
    if "prefill_tick_list" not in out.columns:
        out = out.with_columns(pl.lit(None, dtype=TICK_DTYPE).alias("prefill_tick_list"))
    has_summary = pl.col("prompt_tokens").is_not_null() | pl.col("gen_tokens").is_not_null()
    # cached prefix: printed exactly (first KV trim / era-B in-cache line), else from the
    # release line (n_ctx = C + P + G - 1, plus what a context shift discarded), else from the
    # progress ticks (progress = (C + n) / T); the source says which
    from_release = (pl.col("ctx_tokens") - pl.col("prompt_tokens") - pl.col("gen_tokens") + 1
                    + pl.col("n_discarded").fill_null(0))
    # first and last tick: the widest span, so the 2-decimal progress rounds least. The
    # estimate is kept only when it exceeds its own rounding error (progress ±0.005 at both
    # ends): a cached prefix smaller than that is unknown (null), never a negative count
    ticks = pl.col("prefill_tick_list")
    p1 = ticks.list.first().struct.field("progress")
    p2 = ticks.list.last().struct.field("progress")
    n1 = ticks.list.first().struct.field("n_processed")
    n2 = ticks.list.last().struct.field("n_processed")
    t_est = (n2 - n1) / (p2 - p1)
    c_est = p1 * t_est - n1
    c_err = 0.005 * t_est + p1 * t_est * 0.01 / (p2 - p1)
    from_ticks = pl.when(c_est > c_err).then(c_est.round(0)).cast(pl.Int64, strict=False)
    ticks_ok = pl.col("prefill_tick_list").is_not_null() & (p2 > p1) & (c_est > c_err)
    exact = pl.coalesce("_c_era_b", "_c_trim")
    out = out.with_columns(
        pl.when(exact.is_not_null()).then(exact)
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0))
        .then(from_release)
        .when(ticks_ok).then(from_ticks)
        .alias("cached_tokens"),
        pl.when(exact.is_not_null()).then(pl.lit("printed"))
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0)
              & pl.col("truncated").fill_null(False) & (pl.col("draft_generated") > 0))
        # at the context limit the slot also holds draft tokens: only an upper bound
        .then(pl.lit("release_upper_bound"))
        .when(has_summary & pl.col("ctx_tokens").is_not_null() & (from_release >= 0))
        .then(pl.lit("release_arithmetic"))
        .when(ticks_ok).then(pl.lit("progress_fit"))
        .alias("cached_source"),
    )
    launched = pl.col("_launched").fill_null(False)
    figures = (pl.col("draft_generated").is_not_null() | (pl.col("decode_ticks").fill_null(0) > 0)
               | (pl.col("prefill_ticks").fill_null(0) > 0))
    status = (
        pl.when(pl.col("error").is_not_null()).then(pl.lit("error"))
        .when(has_summary & launched).then(pl.lit("completed"))
        .when(pl.col("cancel_line").fill_null(False)).then(pl.lit("cancelled"))
        # the log starts inside the request: its figures are real, its start is not seen
        .when(has_summary | ~launched).then(pl.lit("partial"))
        # launched and released with no summary and no error: aborted (era B prints no
        # cancel line)
        .when(pl.col("ctx_tokens").is_not_null()).then(pl.lit("cancelled"))
        # the log ends inside the request
        .when(figures).then(pl.lit("partial"))
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
    return out.select(cols)


MODEL = Model(stream=LlamaStream, row_fields=("slot", "task"))
