"""``logscope compare``: the same metrics for several logs side by side, deltas and % change."""

from __future__ import annotations

import json

import click

from ._common import check_output, engine_option, labels_for, no_data, read_each, save


@click.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--label", "labels", multiple=True, help="Name per LOG, in order.")
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md",
              show_default=True)
@click.option("--plot", "plot_file", default=None,
              help="Also overlay the prefill curves and decode-vs-depth of all LOGs into this "
                   ".png/.svg/.pdf.")
@engine_option
def compare(logs, labels, fmt, plot_file, engine):
    """Compare A B [...]: metrics side by side; Δ and % are relative to the first LOG.

    With a llama-bench result (-o json, jsonl, csv, md) or a llama-sweep-bench table as the
    other file: per test (pp512 @ d4096, tg128 @ d16384) the active t/s, the passive t/s from
    the log, Δ % and n.

    Example: logscope compare before.log after.log --label f16 --label q8 --plot ab.png
    """
    from ..analysis.compare import compare_metrics
    from .bench_compare import bench_files, run

    if len(logs) < 2:
        raise click.UsageError("compare needs at least two LOGs")
    if benches := bench_files(logs):
        return run(logs, benches, labels, fmt, engine)
    if plot_file:
        check_output(plot_file)
    names = labels_for(logs, labels)
    frames = read_each(logs, engine)
    df = compare_metrics(frames, names)
    if df.height == 0:
        raise click.ClickException(f"no comparable data in {', '.join(logs)}")
    if fmt == "csv":
        click.echo(df.write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(df.to_dicts(), indent=2))
    else:
        cols = df.columns
        click.echo("| " + " | ".join(cols) + " |")
        click.echo("|" + "|".join("---" for _ in cols) + "|")
        for row in df.iter_rows():
            cells = [row[0]] + ["—" if v is None else
                                (f"{v:+,.1f}%" if c.startswith("% ") else
                                 f"{v:+,.2f}" if c.startswith("Δ ") else f"{v:,.2f}")
                                for c, v in zip(cols[1:], row[1:], strict=True)]
            click.echo("| " + " | ".join(cells) + " |")
    if plot_file:
        from ..plots import plot_compare
        save(no_data(plot_compare, frames, names), plot_file)
