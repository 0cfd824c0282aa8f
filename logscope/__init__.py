"""logscope: a passive benchmark from the logs LLM inference servers already print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .ingest import Logs


def read(paths: Any, engine: str = "auto", **telemetry: Any) -> Logs:
    """Ingest log files into Polars frames; see :func:`logscope.ingest.read`.

    GPU telemetry files among ``paths`` (nvidia-smi ``--query-gpu`` CSV, ``dmon``) are joined
    to the logs: tables ``gpu_samples`` and ``energy_runs``, the requests' ``energy_j``
    columns; ``telemetry`` takes the options of
    :func:`logscope.telemetry.read_with_telemetry` (``start_time``, ``gpus``, ...).
    """
    from .telemetry import read as _read

    return _read(paths, engine=engine, **telemetry)


__all__ = ["read", "__version__"]
