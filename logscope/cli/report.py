"""``logscope report``: the depth profile, headline, llama-bench-shaped table, config card."""

from __future__ import annotations

import click

from logscope.cli._common import engine_option
from logscope.cli._dataset import dataset_options, series
from logscope.cli._telemetry import split_telemetry, telemetry_options


def _depths(value: str | None) -> tuple[int, ...] | None:
    if not value:
        return None
    out = []
    for part in value.split(","):
        p = part.strip().lower()
        try:
            out.append(int(float(p[:-1]) * 1024) if p.endswith("k") else int(p))
        except ValueError:
            raise click.ClickException(
                f"--at: {part!r} is not a depth (tokens, e.g. 4096 or 48k)") from None
    if any(d <= 0 for d in out):
        raise click.ClickException("--at: depths must be positive")
    return tuple(out)


def nothing_measured(frames: list, names) -> str:  # noqa: ANN001 - logscope.Logs
    """The one line a report with no figure ends on: no figure lines at all, or figure lines
    too few to measure anything (a window needs the line before it)."""
    events: dict[str, int] = {}
    for f in frames:
        for kind, n in f.summary()["events"].items():
            if kind not in ("server_config", "server_info"):  # settings, no figure
                events[kind] = events.get(kind, 0) + n
    where = ", ".join(names)
    if not events:
        return f"no timing, throughput or acceptance lines in {where}: nothing to report"
    seen = ", ".join(f"{k} {n}" for k, n in sorted(events.items()))
    return (f"{where}: {sum(events.values())} line(s) with events ({seen}) but no measurement: a "
            "server window is measured from one line to the next of the same kind, and a "
            "request from its own timing lines; give a longer stretch of the log")


@click.command()
@click.argument("logs", nargs=-1, required=False)
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md",
              show_default=True, help="md: everything; csv: the bench table; json: everything.")
@click.option("--label", "labels", multiple=True,
              help="Name per LOG, in order (default: its file name, with as many of its "
                   "folders as it takes to tell the LOGs apart).")
@click.option("--at", "at", default=None, metavar="DEPTHS",
              help="Depths to predict prefill t/s at, comma-separated (4096,49152 or 4k,48k); "
                   "predictions only inside the measured depths (×1.25) and the slot's context.")
@engine_option
@dataset_options
@telemetry_options
def report(logs, fmt, labels, at, engine, datasets, wheres):
    """A table a forum user can paste: prefill by depth, pp/tg t/s, measured from the log.

    Leads with the prefill depth profile (solo stretches: chunks between progress lines and
    whole prompts, raw and with the fixed overhead removed), then the prefill model
    time = c + a·n + b·n·(d0 + n/2) with c in ms and r², decode, acceptance, where the time
    went, and the llama-bench-shaped table: buckets of real requests (pp512 @ d4096: ~512
    computed prompt tokens on top of ~4096 cached; pp~100k where no power of two fits);
    t/s mean ± std over n requests (n* = fewer than 3, k shared = ran alongside another).

    With --dataset DIR the series come from a Parquet dataset (`logscope ingest --dataset`),
    without reading the logs again; --where selects rows (partitions first).

    Example: logscope report server.log --at 4k,48k --format md > bench.md

    Example: logscope report --dataset ds/ --where "host = 'gpu3' AND date >= '2026-11-01'"
    """
    from logscope.analysis.report import build_report, has_figures, render

    depths = _depths(at)
    logs = split_telemetry(logs) if logs else logs  # GPU telemetry among the LOGs (docs/energy.md)
    frames, names = series(logs, labels, engine, datasets, wheres)
    rep = build_report(frames, names, at=depths)
    if not has_figures(rep):
        raise click.ClickException(nothing_measured(frames, logs or names))
    click.echo(render(rep, fmt), nl=False)
