"""logscope: a passive benchmark from the logs LLM inference servers already print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from logscope.ingest import Logs


def read(paths: Any, engine: str = "auto", **telemetry: Any) -> Logs:
    """Ingest log files into Polars frames; see :func:`logscope.ingest.read`.

    GPU telemetry files among ``paths`` (nvidia-smi ``--query-gpu`` CSV, ``dmon``) are joined
    to the logs: tables ``gpu_samples`` and ``energy_runs``, the requests' ``energy_j``
    columns; ``telemetry`` takes the options of
    :func:`logscope.telemetry.read_with_telemetry` (``start_time``, ``gpus``, ...).
    """
    from logscope.analysis.concurrency import timeline
    from logscope.telemetry import read as _read

    # the clock of telemetry is placed on the same state timeline every analysis reads
    return _read(paths, engine=engine, work_of=timeline, **telemetry)


def scan(dataset: Any, where: Any = None) -> dict[str, Any]:
    """The tables of a Parquet dataset (``logscope ingest --dataset DIR``) as Polars
    LazyFrames, by table name, with the partition columns ``engine``, ``host``, ``date`` as
    strings; ``where`` (SQL, ``"host = 'gpu3' AND date >= '2026-11-01'"``, or a Polars
    expression) filters every table, selecting partitions by directory name when it names
    only partition columns. See :func:`logscope.fleet.dataset.scan_all`.

        >>> tables = logscope.scan("ds/", "host = 'gpu3'")              # doctest: +SKIP
        >>> tables["requests"].group_by("date").agg(pl.len()).collect()  # doctest: +SKIP
    """
    from logscope.fleet.dataset import scan_all

    return scan_all(dataset, where)


__all__ = ["read", "scan", "__version__"]
