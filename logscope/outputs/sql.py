"""SQL over logscope's tables with DuckDB (a dependency of logscope).

One view per table — ``requests``, ``prompt_eval``, ``draft_acceptance``, ``retract``, ... —
either over a Parquet dataset written by ``logscope ingest --dataset DIR`` (read with hive
partitioning: the ``engine``, ``host`` and ``date`` partition columns are strings) or over the
frames of ``logscope.read(LOG...)``.

    >>> from logscope.outputs.sql import query
    >>> cols, rows = query("SELECT count(*) FROM requests",
    ...                    logs=["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
    >>> rows
    [(6,)]

Example queries (``logscope sql --dataset ds/ "..."``):

Prefill t/s by context depth bucket (``prompt_total``: prompt tokens including a cached prefix;
llama-server, exact per request)::

    SELECT (prompt_total // 4096) * 4096 AS depth, count(*) AS n,
           round(median(prompt_tps), 1) AS prompt_tps
    FROM requests WHERE prompt_tps IS NOT NULL GROUP BY depth ORDER BY depth

Speculative-decoding acceptance by hour::

    SELECT date_trunc('hour', ts) AS hour, sum(draft_accepted) AS accepted,
           sum(draft_generated) AS drafted,
           round(sum(draft_accepted) / sum(draft_generated), 3) AS rate
    FROM draft_acceptance GROUP BY hour ORDER BY hour

Retracts (SGLang) per day::

    SELECT CAST(ts AS DATE) AS day, count(*) AS retracts, sum(retracted_reqs) AS requests
    FROM retract GROUP BY day ORDER BY day
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

INSTALL_HINT = "DuckDB is not installed: pip install duckdb (logscope depends on it)"


class MissingDuckDB(ImportError):
    """``duckdb`` is not importable."""


def _duckdb():  # noqa: ANN202
    try:
        import duckdb
    except ImportError as e:
        raise MissingDuckDB(INSTALL_HINT) from e
    return duckdb


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@contextmanager
def connect(dataset: str | os.PathLike | None = None, logs: list[str] | None = None,
            engine: str = "auto", start_times: list[float] | None = None,
            on_pairing=None):  # noqa: ANN001, ANN201
    """A DuckDB connection with one view per table (of ``dataset`` or of ``logs``).

    Telemetry files among ``logs`` (or ``LOG=CSV``) are joined as report joins them, each log
    file to its own (:func:`logscope.telemetry.pairing.join_files`; ``start_times`` one per
    log file or one for all; ``on_pairing`` receives the pairing line): ``requests`` carries
    ``energy_j``, ``prefill_energy_j``, ``decode_energy_j`` (null without telemetry), and the
    tables ``gpu_samples`` and ``energy_runs`` are there.
    """
    duckdb = _duckdb()
    if (dataset is None) == (not logs):
        raise ValueError("give a dataset directory or log files (one of them)")
    con = duckdb.connect()
    with tempfile.TemporaryDirectory(prefix="logscope-sql-") as tmp:
        try:
            if dataset is not None:
                from logscope.fleet.dataset import PARTITIONS, table_glob, tables_in
                from logscope.input.sources import InputError

                hive = ", ".join(f"{_quote_str(k)}: VARCHAR" for k in PARTITIONS)
                names = tables_in(dataset)
                if not names:
                    raise InputError(f"{dataset}: no tables here (write a dataset with "
                                     "`logscope ingest LOG... --dataset DIR`)")
                for name in names:
                    con.execute(
                        f"CREATE VIEW {_quote_ident(name)} AS SELECT * FROM read_parquet("
                        f"{_quote_str(table_glob(dataset, name))}, hive_partitioning = true, "
                        f"union_by_name = true, hive_types = {{{hive}}})")
            else:
                from logscope.ingest import NoServerLines, read
                from logscope.telemetry.columns import null_energy
                from logscope.telemetry.pairing import split_args

                paths, tele, explicit = split_args(list(logs))
                try:
                    lg = read(paths, engine=engine)
                except NoServerLines as e:
                    lg = e.args[0]
                if tele or explicit:
                    from logscope.analysis.concurrency import timeline
                    from logscope.telemetry.pairing import join_files

                    lg, line = join_files(lg, tele, explicit=explicit, start_times=start_times,
                                          work_of=timeline)
                    if line and on_pairing is not None:
                        on_pairing(line)
                else:
                    lg = null_energy(lg)
                frames = lg.tables
                # Parquet, not con.register: registering a Polars frame needs pyarrow
                for name, df in frames.items():
                    if name.startswith("_"):
                        continue
                    path = Path(tmp) / f"{name}.parquet"
                    df.write_parquet(path)
                    con.execute(f"CREATE VIEW {_quote_ident(name)} AS SELECT * FROM "
                                f"read_parquet({_quote_str(str(path))})")
            yield con
        finally:
            con.close()


def query(sql: str, dataset: str | os.PathLike | None = None, logs: list[str] | None = None,
          engine: str = "auto", start_times: list[float] | None = None,
          on_pairing=None) -> tuple[list[str], list[tuple[Any, ...]]]:  # noqa: ANN001
    """Run one SQL statement; returns (column names, rows). Telemetry among ``logs`` adds the
    energy columns (:func:`connect`).

    Example: query("SELECT sum(energy_j) FROM requests", logs=["server.log", "gpu.csv"])
    """
    with connect(dataset, logs, engine, start_times, on_pairing) as con:
        cur = con.execute(sql)
        if cur.description is None:
            return [], []
        cols = [d[0] for d in cur.description]
        return cols, cur.fetchall()
