"""``logscope ingest``: logs in, frames (Parquet) and a summary out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from logscope.classify.grammar import ENGINES
from logscope.cli._telemetry import TZ_KEY, StartTime


def _keep_tz(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from logscope.engines import clock

    if value:
        try:
            clock.parse_tz(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx, param) from None
    ctx.meta[TZ_KEY] = value
    return value


class OneLineErrors(click.Command):
    """A command whose usage errors (bad option value, missing argument) are one ``Error:``
    line on stderr, exit code 2, without the usage text (``--help`` shows it)."""

    def make_context(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as e:
            e.ctx = None  # click prints the usage and a hint only when the error has a context
            raise


@click.command(cls=OneLineErrors)
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Write one Parquet file per table into this directory. From 256 MiB of "
                   "log on (or stdin) the tables are streamed there as the log is read, so "
                   "memory does not grow with the log (with --tz, --start-time or telemetry "
                   "files they are finished in memory first).")
@click.option("--dataset", "dataset", type=click.Path(file_okay=False), default=None,
              help="Append to a hive-partitioned Parquet dataset in this directory "
                   "(in parallel; unchanged files are skipped, grown files add their new lines).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes for --dataset (default: one per CPU, at most one per file).")
@click.option("--scheduler", default=None, metavar="ADDRESS|local:N|processes|threads",
              help="Run the --dataset ingest on Dask: tcp://host:port (an existing scheduler), "
                   "local:N (a LocalCluster of N worker processes), or Dask's local "
                   "processes/threads schedulers. Each file, with its rotation chain, is one "
                   "task that writes its own Parquet parts (docs/fleet.md).")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
              help="Which server printed the log; auto decides per line.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the JSON summary (DESIGN.md contract).")
@click.option("--start-time", "start_time", type=StartTime(), multiple=True, metavar="TIME",
              help="When the server started (llama-server's clock is time since its start; "
                   "without this the wall clock comes from the file's modification time), "
                   "ISO 8601 e.g. 2026-10-01T09:30:00+02:00, or Unix seconds; once per log "
                   "file in order, or once for all.")
@click.option("--tz", "tz", default=None, metavar="ZONE", is_eager=True, callback=_keep_tz,
              help="Zone of a --start-time without offset and of local times a log prints "
                   "without one (SGLang, vLLM); default UTC. E.g. Europe/Berlin, +08:00.")
def ingest(paths: tuple[str, ...], out: str | None, dataset: str | None, workers: int | None,
           scheduler: str | None, engine: str, as_json: bool, start_time: tuple[float, ...] = (),
           tz: str | None = None) -> None:
    """Parse server logs (files, globs, - for stdin, .gz) into event tables.

    Exit codes: 0 ok; 1 no server lines found (empty input, unknown format) or the --out
    directory cannot be written; 2 bad input (missing file, directory, unreadable, corrupt .gz)
    or a bad option (--engine).

    With --dataset DIR, every file (with its rotation chain) is ingested by its own task (a
    local process, or a Dask worker with --scheduler) and appended to
    DIR/<table>/engine=/host=/date=/ Parquet files; DIR/_manifest.json remembers what was
    read, so running the same command again adds only what is new.

    An ingest longer than about a second shows a progress bar on stderr when stderr is a
    terminal (not with --dataset); LOGSCOPE_NO_PROGRESS=1 hides it.

    Example: logscope ingest server.log --out frames/

    Example: logscope ingest 'logs/**/*.log' --dataset ds/

    Example: logscope ingest 'logs/**/*.log*' --dataset /shared/ds --scheduler tcp://head:8786
    """
    from logscope.engines import clock
    from logscope.engines.store import OutputError
    from logscope.ingest import NoServerLines, read
    from logscope.input.sources import InputError
    from logscope.outputs import summary as summary_mod

    start = list(start_time) or None
    if dataset is not None:
        if start is not None or tz:
            click.echo("Error: --start-time and --tz are not used with --dataset", err=True)
            sys.exit(2)
        if out is not None:
            click.echo("Error: give --out or --dataset, not both", err=True)
            sys.exit(2)
        if scheduler is not None and workers is not None:
            click.echo("Error: give --workers or --scheduler, not both", err=True)
            sys.exit(2)
        _ingest_dataset(paths, dataset, engine, workers, scheduler, as_json)
        return
    if scheduler is not None:
        click.echo("Error: --scheduler is used with --dataset", err=True)
        sys.exit(2)

    from logscope.cli.progress import IngestProgress
    from logscope.telemetry.pairing import split_args

    try:
        # GPU telemetry files, and LOG=CSV pairs (docs/energy.md)
        paths, telemetry, explicit = split_args(list(paths))
        # --out streams a large log's tables to Parquet as they are made (memory flat in the
        # log's size); --tz, --start-time and telemetry rewrite finished tables, so they run in
        # memory
        stream = (out is not None and not tz and start is None and not telemetry
                  and not explicit and _large(paths))
        # the bar is erased when read returns or raises, before any message below
        with IngestProgress() as progress:
            if stream:
                from logscope.telemetry.columns import null_energy_table

                logs = read(list(paths), engine=engine, progress=progress, out=out,
                            on_table=null_energy_table)
            else:
                logs = read(list(paths), engine=engine, progress=progress)
    except InputError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    except OutputError as e:
        raise click.ClickException(str(e)) from e
    except NoServerLines as e:
        logs = e.args[0]
        if as_json:
            click.echo(json.dumps(logs.summary()))
        if logs.lines == 0:
            names = ", ".join(f.file for f in logs.files[:3])
            names += ", ..." if len(logs.files) > 3 else ""
            click.echo(f"Error: {names}: empty input (0 lines)", err=True)
            sys.exit(NoServerLines.exit_code)
        click.echo(
            f"Error: no {engine if engine != 'auto' else 'llama-server, SGLang or vLLM'} lines "
            f"found in {logs.lines} line(s) of {len(logs.files)} file(s); is this a server log? "
            "(try --engine, or `logscope explain FILE:LINE`)", err=True)
        sys.exit(NoServerLines.exit_code)
    if tz:
        logs = clock.apply_tz(logs, tz)
    if start is not None:
        files = [f.file for f in logs.files]
        if len(start) not in (1, len(files)):
            click.echo(f"Error: --start-time given {len(start)} times for {len(files)} log "
                       "file(s): give it once (every file) or once per file, in order", err=True)
            sys.exit(2)
        logs = clock.anchor_start(logs, start[0] if len(start) == 1 else dict(
            zip(files, start, strict=True)))

    if stream:
        if not as_json:
            click.echo(f"wrote {len(logs.tables)} tables to {out}/", err=True)
    elif telemetry or explicit:  # tables gpu_samples, energy_runs; each file its own
        logs = _join_telemetry(logs, telemetry, explicit, start)
    else:
        from logscope.telemetry import null_energy

        logs = null_energy(logs)
    if out and not stream:
        try:
            written = write_tables(logs.tables, Path(out))
        except OSError as e:
            raise click.ClickException(
                f"cannot write the tables to {out}/: {e.strerror or e}") from e
        if not as_json:
            click.echo(f"wrote {len(written)} tables to {out}/", err=True)
    if as_json:
        click.echo(json.dumps({**logs.summary(), "clock": clock.clock_summary(logs, tz)}))
    else:
        click.echo(summary_mod.render(logs))
        for line in clock.clock_notes(logs, tz):
            click.echo(line)


def _join_telemetry(logs, telemetry: list[str], explicit: dict[str, list[str]],  # noqa: ANN001, ANN202
                    start: list[float] | None):
    from logscope.analysis.concurrency import timeline
    from logscope.input.sources import InputError
    from logscope.telemetry import ClockError, TelemetryError
    from logscope.telemetry.pairing import PairingError, join_files

    try:
        logs, line = join_files(logs, telemetry, explicit=explicit, start_times=start,
                                work_of=timeline)
    except (TelemetryError, ClockError, InputError, PairingError) as e:
        raise click.ClickException(str(e)) from e
    if line:
        click.echo(line, err=True)
    return logs


def _ingest_dataset(paths: tuple[str, ...], dataset: str, engine: str, workers: int | None,
                    scheduler: str | None, as_json: bool) -> None:
    from logscope.fleet.dataset import ingest_to_dataset
    from logscope.fleet.distributed import SchedulerError
    from logscope.input.sources import InputError

    try:
        report = ingest_to_dataset(list(paths), dataset, engine=engine, workers=workers,
                                   scheduler=scheduler)
    except SchedulerError as e:
        raise click.ClickException(str(e)) from e
    except InputError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    except OSError as e:
        raise click.ClickException(
            f"cannot write the dataset {dataset}/: {e.strerror or e}") from e
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(f"{report['ingested']} file(s) ingested, {report['appended']} appended, "
               f"{report['skipped']} skipped (unchanged): {report['lines']} new line(s), "
               f"{report['parts']} Parquet file(s) written to {dataset}/")
    if report["pending_bytes"]:
        click.echo(f"{report['pending_bytes']} byte(s) of unfinished last line(s) (no newline "
                   "yet) left for the next ingest", err=True)




def _large(paths: list[str]) -> bool:
    """Whether ``paths`` hold enough log for ``--out`` to stream it: ``store.STREAM_FROM_BYTES``
    (stdin always); below it the tables fit in memory and finishing them there is faster
    (streaming measured 1.29x the wall time of 100 MiB in memory, bench/RESULTS.md)."""
    import os

    from logscope.engines import store
    from logscope.input.sources import expand

    total = 0
    for p in expand(paths):
        if p == "-" or not os.path.isfile(p):
            return True  # stdin (size unknown); a bad path fails in read, as usual
        total += store.log_bytes(p, os.path.getsize(p))
    return total >= store.STREAM_FROM_BYTES


def write_tables(tables: dict, out: Path) -> list[Path]:
    """One Parquet file per table (internal tables starting with ``_`` are skipped)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in tables.items():
        if name.startswith("_"):
            continue
        path = out / f"{name}.parquet"
        df.write_parquet(path)
        written.append(path)
    return written
