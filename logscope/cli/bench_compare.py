"""``logscope compare server.log bench.json``: llama-bench's numbers beside the log's (the part
of ``compare`` that reads an active benchmark; a thin layer over
:mod:`logscope.analysis.activebench`)."""

from __future__ import annotations

from pathlib import Path

import click

from logscope.cli._common import labels_for, read_each


def bench_files(paths: tuple[str, ...]) -> list[str]:
    """The arguments that are llama-bench / llama-sweep-bench results, not server logs."""
    from logscope.analysis.activebench import sniff

    return [p for p in paths if p != "-" and Path(p).is_file() and sniff(p)]


def run(paths: tuple[str, ...], benches: list[str], labels: tuple[str, ...], fmt: str,
        engine: str) -> None:
    """Print one side-by-side table per bench file against the one LOG among ``paths``."""
    from logscope.analysis.activebench import (
        BenchFormatError,
        bench_header,
        read_bench,
        render,
        side_by_side,
    )

    logs = tuple(p for p in paths if p not in benches)
    if len(logs) != 1:
        raise click.UsageError(
            f"compare with a llama-bench result takes one server LOG, got {len(logs)}: "
            "logscope compare server.log bench.json")
    name = labels_for(logs, labels)[0]
    frames = read_each(logs, engine)[0]
    outs = []
    for b in benches:
        try:
            bench = read_bench(b)
            header = bench_header(b)
        except BenchFormatError as e:
            raise click.ClickException(str(e)) from e
        df = side_by_side(frames, bench, name)
        outs.append(render(df, fmt, log_name=name, bench_name=Path(b).name, header=header))
    click.echo("\n".join(outs), nl=False)
