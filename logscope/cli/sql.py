"""``logscope sql``: DuckDB over the tables of a dataset or of log files."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import sys

import click

from logscope.classify.grammar import ENGINES
from logscope.cli._telemetry import START_TIME_HELP, StartTime
from logscope.cli.ingest import OneLineErrors


def _jsonable(v):  # noqa: ANN001, ANN202
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return v


def _cell(v) -> str:  # noqa: ANN001
    if v is None:
        return ""
    v = _jsonable(v)
    return json.dumps(v) if isinstance(v, (dict, list)) else str(v)


def render_table(cols: list[str], rows: list[tuple]) -> str:
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(cols)]
    numeric = [all(isinstance(r[i], (int, float, decimal.Decimal)) or r[i] is None for r in rows)
               and any(r[i] is not None for r in rows) for i in range(len(cols))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    out = [line(cols), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def render_csv(cols: list[str], rows: list[tuple]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows([_cell(v) for v in r] for r in rows)
    return buf.getvalue().rstrip("\n")


def render_json(cols: list[str], rows: list[tuple]) -> str:
    return json.dumps([{c: _jsonable(v) for c, v in zip(cols, r, strict=True)} for r in rows])


@click.command(cls=OneLineErrors)
@click.argument("query")
@click.argument("logs", nargs=-1)
@click.option("--dataset", type=click.Path(file_okay=False, exists=True), default=None,
              help="A dataset written by `logscope ingest --dataset DIR` (instead of LOG files).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format (json: one array of row objects).")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
              help="Which server printed the LOG files; auto decides per line.")
@click.option("--start-time", "start_time", type=StartTime(), multiple=True, metavar="TIME",
              help=START_TIME_HELP)
def sql(query: str, logs: tuple[str, ...], dataset: str | None, fmt: str, engine: str,
        start_time: tuple[float, ...] = ()) -> None:
    """Run a DuckDB SQL QUERY over logscope's tables: one view per table (requests,
    prompt_eval, eval, draft_acceptance, retract, preemption, lines_classified, ...), from a
    --dataset directory (partition columns engine, host, date as strings) or from LOG files.

    DuckDB is installed with logscope. nvidia-smi telemetry among the LOG files (or paired
    as LOG=CSV) gives requests the energy columns report has (energy_j, prefill_energy_j,
    decode_energy_j) and the tables gpu_samples and energy_runs (docs/energy.md).

    Prefill t/s by context depth bucket:

      logscope sql --dataset ds/ "SELECT (prompt_total // 4096) * 4096 AS depth, count(*) AS n,
      median(prompt_tps) AS prompt_tps FROM requests GROUP BY depth ORDER BY depth"

    Draft acceptance by hour:

      logscope sql "SELECT date_trunc('hour', ts) AS hour,
      sum(draft_accepted) / sum(draft_generated) AS rate FROM draft_acceptance
      GROUP BY hour ORDER BY hour" server.log

    Retracts (SGLang) per day:

      logscope sql --format csv "SELECT CAST(ts AS DATE) AS day, count(*) AS retracts
      FROM retract GROUP BY day ORDER BY day" sglang.log
    """
    from logscope.input.sources import InputError
    from logscope.outputs.sql import MissingDuckDB
    from logscope.outputs.sql import query as run_query
    from logscope.telemetry import TelemetryError
    from logscope.telemetry.energy import ClockError
    from logscope.telemetry.pairing import PairingError

    if dataset is not None and logs:
        click.echo("Error: give --dataset or LOG files, not both", err=True)
        sys.exit(2)
    if dataset is None and not logs:
        click.echo("Error: give --dataset DIR or LOG files to query", err=True)
        sys.exit(2)
    try:
        cols, rows = run_query(query, dataset=dataset, logs=list(logs) or None, engine=engine,
                               start_times=list(start_time) or None,
                               on_pairing=lambda line: click.echo(line, err=True))
    except (MissingDuckDB, TelemetryError, ClockError, PairingError) as e:
        raise click.ClickException(str(e)) from e
    except InputError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    except Exception as e:
        import duckdb  # imported by run_query: only reached when DuckDB is installed

        if isinstance(e, duckdb.Error):
            raise click.ClickException(f"SQL: {str(e).splitlines()[0]}") from e
        raise
    if not cols:
        return
    render = {"table": render_table, "csv": render_csv, "json": render_json}[fmt]
    click.echo(render(cols, rows))
