"""``logscope report``: the llama-bench-shaped table, prefill by depth and the config card."""

from __future__ import annotations

import click

from ._common import engine_option, labels_for, read_each


@click.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md",
              show_default=True, help="md: everything; csv: the bench table; json: everything.")
@click.option("--label", "labels", multiple=True, help="Name per LOG, in order.")
@engine_option
def report(logs, fmt, labels, engine):
    """A table a forum user can paste: pp/tg t/s by size and depth, measured from the log.

    Tests are buckets of real requests (pp512 @ d4096: ~512 computed prompt tokens on top of
    ~4096 cached; tg128 @ d16384: ~128 generated at depth ~16384; powers of two, rounded in
    log scale); t/s mean ± std over n requests (n* = fewer than 3), source = passive.

    Example: logscope report server.log --format md > bench.md
    """
    from ..analysis.report import build_report, render

    names = labels_for(logs, labels)
    frames = read_each(logs, engine)
    rep = build_report(frames, names)
    if rep["bench"].height == 0:
        raise click.ClickException(
            f"no completed requests with timings in {', '.join(logs)}: nothing to report")
    click.echo(render(rep, fmt), nl=False)
