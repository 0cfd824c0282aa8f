"""``logscope compare``: the same metrics for several logs side by side, deltas and % change."""

from __future__ import annotations

import json

import click

from ._common import check_output, engine_option, no_data, save
from ._dataset import dataset_options, series
from ._telemetry import split_telemetry, telemetry_options


@click.command()
@click.argument("logs", nargs=-1, required=False)
@click.option("--label", "labels", multiple=True, help="Name per LOG, in order.")
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md",
              show_default=True)
@click.option("--strict", is_flag=True,
              help="Only the bench buckets every LOG measured solo (no figures pooled over "
                   "different workloads).")
@click.option("--plot", "plot_file", default=None,
              help="Also overlay the prefill curves and decode-vs-depth of all LOGs into this "
                   ".png/.svg/.pdf.")
@engine_option
@dataset_options
@telemetry_options
def compare(logs, labels, fmt, strict, plot_file, engine, datasets, wheres):
    """Compare A B [...]: metrics side by side; Δ and % are relative to the first LOG.

    Each row says how many requests it rests on (n; * = fewer than 3; "k shared" = ran
    alongside another request; ⚠ = not solo in every LOG). Buckets are compared solo with
    solo where every LOG has solo requests in them. A warning on stderr says where the
    workloads differ.

    With a llama-bench result (-o json, jsonl, csv, md) or a llama-sweep-bench table as the
    other file: per test (pp512 @ d4096, tg128 @ d16384) the active t/s, the passive t/s from
    the log, Δ % and n.

    Series can come from a Parquet dataset: --dataset DIR once per series, or once with
    --where once per series (one host against another, one week against the next).

    Example: logscope compare before.log after.log --label f16 --label q8 --plot ab.png

    Example: logscope compare --dataset ds/ --where "host = 'gpu3'" --where "host = 'gpu4'"
    """
    from ..analysis.compare import compare_metrics, workload_differences
    from ..analysis.metrics import fmt_figure, round_frame
    from .bench_compare import bench_files, run

    logs = split_telemetry(logs) if logs else logs  # GPU telemetry among the LOGs (docs/energy.md)
    n_series = len(logs) + max(len(datasets), len(wheres) if datasets else 0)
    if n_series < 2:
        raise click.UsageError("compare needs at least two LOGs (or --dataset series)")
    if not datasets and (benches := bench_files(logs)):
        return run(logs, benches, labels, fmt, engine)
    if plot_file:
        check_output(plot_file)
    frames, names = series(logs, labels, engine, datasets, wheres)
    df = compare_metrics(frames, names, strict=strict)
    if df.height == 0:
        raise click.ClickException(
            f"no comparable data in {', '.join(names)}"
            + (" (--strict: no bucket measured solo in every LOG)" if strict else ""))
    for w in workload_differences(frames, names):
        click.echo(f"warning: {w}", err=True)
    if fmt == "csv":
        click.echo(round_frame(df).write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(round_frame(df).to_dicts(), indent=2))
    else:
        vals = [c for c in df.columns if c != "metric" and not c.startswith("n ")]
        cols = ["metric"] + vals
        click.echo("| " + " | ".join(cols) + " |")
        click.echo("|" + "|".join("---" for _ in cols) + "|")
        for row in df.iter_rows(named=True):
            cells = [row["metric"]]
            for c in vals:
                v = row[c]
                if v is None:
                    cells.append("—")
                elif c.startswith("% "):
                    cells.append(f"{v:+,.1f}%")
                elif c.startswith("Δ "):
                    cells.append(f"{v:+,.3g}" if "acceptance rate" in row["metric"]
                                 else f"{v:+,.2f}")
                else:
                    txt = fmt_figure("acceptance_rate" if "acceptance rate" in row["metric"]
                                     else "", v)
                    n = row.get(f"n {c}")
                    cells.append(txt + (f" (n={n})" if n else ""))
            click.echo("| " + " | ".join(cells) + " |")
    if plot_file:
        from ..plots import plot_compare
        save(no_data(plot_compare, frames, names), plot_file)
