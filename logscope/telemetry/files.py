"""Which inputs are GPU telemetry files, and their samples as one frame."""

from __future__ import annotations

import polars as pl

from logscope.telemetry.nvidia import SCHEMA, parse_text, read_head, sniff


def kind_of(path: str) -> str | None:
    """The telemetry format of a file (``nvidia-smi-query``, ``nvidia-smi-query-noheader``,
    ``nvidia-smi-dmon``) or None (a server log, stdin, a missing file)."""
    if path == "-":
        return None
    return sniff(read_head(path))


def split_inputs(paths: list[str] | tuple[str, ...] | str) -> tuple[list[str], list[str]]:
    """(server logs, telemetry files) among inputs (globs expanded; order kept).

    Example: ``split_inputs(["server.log", "gpu.csv"]) == (["server.log"], ["gpu.csv"])``
    """
    from logscope.input import sources

    if isinstance(paths, str):
        paths = [paths]
    logs, tele = [], []
    for p in sources.expand(list(paths)):
        (tele if kind_of(p) is not None else logs).append(p)
    return logs, tele


def read_samples(paths: list[str] | tuple[str, ...] | str, *,
                 fields: list[str] | None = None) -> pl.DataFrame:
    """The ``gpu_samples`` frame of telemetry files (one row per GPU per sample, by GPU and ts).

    ``fields`` is the ``--query-gpu`` list of a ``--format=csv,noheader`` file. Raises
    ``TelemetryError`` (a file that is not telemetry, or cannot be joined) and
    ``sources.InputError`` (unreadable).

    Example: ``read_samples(["gpu.csv"])["power_w"].mean()``
    """
    from logscope.input import sources

    if isinstance(paths, str):
        paths = [paths]
    frames = []
    for p in sources.expand(list(paths)):
        src = sources.load(p)
        frames.append(parse_text(src.text, p, fields=fields, mtime=src.mtime))
    if not frames:
        return pl.DataFrame(schema=SCHEMA)
    return pl.concat(frames).sort("gpu", "ts", "file", "line", nulls_last=True)
