"""``--dataset DIR`` and ``--where SQL`` of report, plot and compare: series read from a
Parquet dataset (``ingest --dataset``) instead of from logs."""

from __future__ import annotations

from pathlib import Path

import click

from logscope.cli._common import InputClickError, distinct_names, read_each


def dataset_options(f):  # noqa: ANN001, ANN201 - a click decorator
    f = click.option(
        "--where", "wheres", multiple=True, metavar="SQL",
        help="With --dataset: only the rows matching this SQL condition, e.g. \"host = 'gpu3' "
             "AND date >= '2026-11-01'\" (conditions on engine, host, date select partitions; "
             "given more than once: one series per condition).")(f)
    return click.option(
        "--dataset", "datasets", multiple=True, type=click.Path(file_okay=False),
        help="Read a Parquet dataset written by `logscope ingest --dataset` (no log is read "
             "again); once per series.")(f)


def series(logs: tuple[str, ...], labels: tuple[str, ...], engine: str,
           datasets: tuple[str, ...], wheres: tuple[str, ...]) -> tuple[list, list[str]]:
    """(one ``Logs`` per series, their names): the LOGs, each read, then the datasets — each
    with each ``--where`` (one dataset and several conditions, or several datasets and at
    most one condition, or as many of each, paired). A log whose wrapper interleaves several
    servers gives one series per server (``name [server]``)."""
    if wheres and not datasets:
        raise click.UsageError("--where is used with --dataset")
    pairs: list[tuple[str, str | None]]
    if not wheres:
        pairs = [(d, None) for d in datasets]
    elif len(datasets) == 1:
        pairs = [(datasets[0], w) for w in wheres]
    elif len(wheres) == 1:
        pairs = [(d, wheres[0]) for d in datasets]
    elif len(wheres) == len(datasets):
        pairs = list(zip(datasets, wheres, strict=True))
    else:
        raise click.UsageError(f"{len(datasets)} --dataset and {len(wheres)} --where: give one "
                               "of them once, or as many of each")
    if not logs and not pairs:
        raise click.UsageError("give LOGs or --dataset DIR")
    default = distinct_names(list(logs)) + [
        Path(d).name + (f" ({w})" if w else "") for d, w in pairs]
    if len(labels) > len(default):
        raise click.UsageError(f"{len(labels)} --label for {len(default)} series")
    from logscope.analysis.servers import split_servers

    out = (read_each(logs, engine) if logs else []) + [read_dataset(d, w) for d, w in pairs]
    # a log holding several servers (compose services, pods): each is a series of its own
    split = [p for lg, n in zip(out, list(labels) + default[len(labels):], strict=True)
             for p in split_servers(lg, n)]
    return [p[1] for p in split], [p[0] for p in split]


def read_dataset(dataset: str, where: str | None = None):  # noqa: ANN201 - logscope.Logs
    """The ``Logs`` of a dataset's rows matching ``where``; user errors as ClickException."""
    import polars as pl

    from logscope.fleet.dataset import load
    from logscope.input.sources import InputError

    if not Path(dataset).is_dir():
        raise InputClickError(f"--dataset {dataset}: no such directory")
    try:
        logs = load(dataset, where)
    except InputError as e:
        raise InputClickError(f"--dataset {e}") from e
    except (pl.exceptions.SQLSyntaxError, pl.exceptions.SQLInterfaceError) as e:
        raise click.ClickException(f"--where {where!r}: {str(e).splitlines()[0]}") from e
    except pl.exceptions.ColumnNotFoundError as e:
        import re

        found = re.search(r'column "([^"]+)"', str(e))
        name = found.group(1) if found else str(e).splitlines()[0]
        raise click.ClickException(
            f"--where {where!r}: not every table has a column {name!r} (every table has engine, "
            "host, date and file)") from e
    if not logs.files:
        raise click.ClickException(
            f"--dataset {dataset}: no rows" + (f" where {where}" if where else ""))
    return logs
