"""GPU telemetry beside a server log: ``gpu_samples`` and energy per request (docs/energy.md).

Enters: nvidia-smi files (``--query-gpu`` CSV, ``dmon``) beside the logs, and the tables of
:func:`logscope.ingest.read`. Leaves: ``gpu_samples``, ``energy_runs`` and the requests' energy
columns (:mod:`~logscope.telemetry.energy`), each log joined to its own files
(:mod:`~logscope.telemetry.pairing`); :func:`read` is ``logscope.read``.

Telemetry files are given among the log inputs; :func:`split_inputs` tells them apart by their
first lines (``nvidia-smi --query-gpu ... --format=csv`` or ``nvidia-smi dmon`` output), so the
server-log reader never sees them.

    >>> from logscope.telemetry import read_with_telemetry
    >>> d = "fixtures/telemetry/h200/generated-gpu-pressure-np4-ctxshift"
    >>> logs = read_with_telemetry([d + ".log", d + ".smi.csv"])
    >>> logs["gpu_samples"].height, logs["energy_runs"]["clock_offset_source"].item()
    (253, 'estimated')

May import: :mod:`logscope.input`, :mod:`logscope.classify`, :mod:`logscope.engines`,
:mod:`logscope.ingest`, :mod:`logscope.fleet` (the stages before it).
"""

from __future__ import annotations

from typing import Any

from logscope.telemetry.columns import ENERGY_COLUMNS, null_energy
from logscope.telemetry.files import kind_of, read_samples, split_inputs
from logscope.telemetry.nvidia import (
    DMON,
    QUERY,
    QUERY_NOHEADER,
    SCHEMA,
    TelemetryError,
)


def read_with_telemetry(paths: list[str] | tuple[str, ...] | str, engine: str = "auto", *,
                        telemetry: list[str] | None = None, fields: list[str] | None = None,
                        start_time: float | str | None = None, gpus: list[int] | None = None,
                        net_of_idle: bool = False, work_of: Any = None) -> Any:
    """``logscope.read`` of the server logs among ``paths``, joined to the telemetry files among
    them (and in ``telemetry``): tables ``gpu_samples``, ``energy_runs`` and the requests'
    energy columns (null without telemetry). Several log files: each is joined to its own
    telemetry and its clock placed alone (:func:`logscope.telemetry.pairing.join_files`;
    ``paths`` may hold ``LOG=CSV`` pairs); ``start_time`` (Unix s or ISO 8601) is each file's
    server start. ``work_of``: the function giving an ingest's state timeline
    (``logscope.read`` passes :func:`logscope.analysis.concurrency.timeline`; without it the
    same intervals are rebuilt from the requests' prefill and decode stretches, which cannot
    tell a blocked server loop from decode).

    Example: ``read_with_telemetry(["server.log", "gpu.csv"])["requests"]["energy_j"]``
    """
    from logscope.ingest import read
    from logscope.telemetry.pairing import join_files, split_args

    if isinstance(paths, str):
        paths = [paths]
    logs_paths, tele, explicit = split_args(list(paths))
    tele += list(telemetry or [])
    logs = read(logs_paths, engine=engine)
    if not tele and not explicit:
        return null_energy(logs)
    if start_time is not None and not isinstance(start_time, (int, float)):
        from logscope.engines.clock import parse_start_time

        start_time = parse_start_time(start_time)
    logs, _ = join_files(logs, tele, explicit=explicit, fields=fields,
                         start_times=None if start_time is None else [float(start_time)],
                         gpus=gpus, net_of_idle=net_of_idle, work_of=work_of)
    return logs


READ_OPTIONS = ("out", "on_table", "progress", "chunk_bytes")  # logscope.ingest.read's own


def read(paths: list[str] | tuple[str, ...] | str, engine: str = "auto", **options: Any) -> Any:
    """``logscope.read``: server logs only, as before, unless telemetry is among ``paths`` (or
    given as ``telemetry=[...]``); then :func:`read_with_telemetry`."""
    from logscope.ingest import read as read_logs
    from logscope.telemetry.pairing import split_args

    if isinstance(paths, str):
        paths = [paths]
    _, tele, explicit = split_args(list(paths))
    if not tele and not explicit and not options.get("telemetry"):
        return read_logs(paths, engine=engine, **{k: v for k, v in options.items()
                                                  if k in READ_OPTIONS})
    if options.get("out") is not None:
        raise ValueError("out= streams server logs only: telemetry is joined to the tables in "
                         "memory (read without out=, then write the tables)")
    return read_with_telemetry(list(paths), engine, telemetry=list(
        options.pop("telemetry", None) or []), **options)


_ENERGY = ("ClockError", "attach", "share_energy", "stretches", "joules_in")


def __getattr__(name: str) -> Any:
    """The energy model's names, imported on first use (numpy is not needed to read logs)."""
    if name in _ENERGY:
        from logscope.telemetry import energy

        return getattr(energy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["read", "read_with_telemetry", "read_samples", "split_inputs", "kind_of", "attach",
           "share_energy", "stretches", "joules_in",
           "ENERGY_COLUMNS", "null_energy", "SCHEMA", "ClockError",
           "TelemetryError", "QUERY", "QUERY_NOHEADER", "DMON"]
