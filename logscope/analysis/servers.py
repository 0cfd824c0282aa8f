"""The servers a wrapper interleaves in one log (compose services, pods, journald hosts).

The engine models count each such server's runs apart (:class:`logscope.engines.RunNumbers`),
so every (file, run) is one server's. This module names them and splits an ingest into one
per server, so that servers with different settings in one log are reported each on its own
figures (the window fit has one set of terms per ingest).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import table

UNMARKED = "no wrapper mark"
# the tables whose rows carry each server's wrapper prefix, the busiest first
PREFIXED = ("engine_stats", "decode_batch", "prefill_batch", "decode_progress", "task_launch",
            "prompt_eval", "eval")


def server_runs(logs) -> pl.DataFrame:
    """(file, run, server) of the files that hold more than one server by their wrapper's
    marks; empty otherwise.

    Example::

        server_runs(logscope.read("compose.log"))   # file, run 1 vllm-a-1; run 2 vllm-b-1
    """
    from logscope.input.envelope import host_expr

    empty = pl.DataFrame(schema={"file": pl.String, "run": pl.Int32, "server": pl.String})
    for kind in PREFIXED:
        t = table(logs, kind)
        if t is None or "prefix" not in t.columns:
            continue
        runs = (t.group_by("file", "run").agg(pl.col("prefix").drop_nulls().first())
                .select(pl.col("file").cast(pl.String), pl.col("run").cast(pl.Int32),
                        host_expr(pl.col("prefix")).alias("server")))
        many = runs.group_by("file").agg(pl.col("server").drop_nulls().n_unique().alias("_n"))
        many = many.filter(pl.col("_n") > 1)
        # a run without a mark beside marked ones (a plain log joined to a compose log): apart
        return runs.join(many.select("file"), on="file").with_columns(
            pl.col("server").fill_null(UNMARKED)).sort("file", "run") if many.height else empty
    return empty


def split_servers(logs, label: str) -> list[tuple[str, object]]:
    """``[(label, logs)]`` as it is, or, where a file holds several servers by its wrapper's
    marks, one ingest per server (:func:`servers_of`), labelled ``label [server]``.

    Example::

        for name, one in split_servers(logscope.read("compose.log"), "compose.log"):
            print(name, served(one)["throughput_tps"])
    """
    parts = servers_of(logs)
    if len(parts) == 1:
        return [(label, logs)]
    return [(f"{label} [{server}]", one) for server, one in parts.items()]


def servers_of(logs) -> dict[str, object]:
    """``{server: ingest}``: where a file holds several servers by its wrapper's marks, one
    ingest per server (its runs' rows of every table; the files' line counts stay the whole
    file's); else ``{"": logs}``.

    Example::

        servers_of(logscope.read("compose.log"))["vllm-a-1"]["engine_stats"]
    """
    from logscope.ingest.logs import Logs

    runs = server_runs(logs)
    if runs.height == 0 or not isinstance(logs, Logs):
        return {"": logs}
    out = {}
    for (server,), part in runs.partition_by("server", as_dict=True,
                                             maintain_order=True).items():
        keep = part.select("file", "run")
        tables = {}
        for name, t in logs.tables.items():
            cols = t.collect_schema().names()
            if "file" in cols and "run" in cols:
                lazy = t.lazy().join(keep.lazy().with_columns(
                    pl.col("file").cast(t.collect_schema()["file"])), on=["file", "run"],
                    how="semi", maintain_order="left")
                t = lazy.collect()
            tables[name] = t
        out[server] = Logs(tables, logs.files, logs.engines)
    return out
