"""``logscope ingest``: logs in, frames (Parquet) and a summary out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..grammar import ENGINES


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
              help="Write one Parquet file per table into this directory.")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
              help="Which server printed the log; auto decides per line.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the JSON summary (DESIGN.md contract).")
def ingest(paths: tuple[str, ...], out: str | None, engine: str, as_json: bool) -> None:
    """Parse server logs (files, globs, - for stdin, .gz) into event tables.

    Exit codes: 0 ok; 1 no server lines found (empty input, unknown format) or the --out
    directory cannot be written; 2 bad input (missing file, directory, unreadable, corrupt .gz)
    or a bad option (--engine).

    Example: logscope ingest server.log --out frames/
    """
    from .. import summary as summary_mod
    from ..ingest import NoServerLines, read
    from ..sources import InputError

    try:
        logs = read(list(paths), engine=engine)
    except InputError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
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
    if out:
        try:
            written = write_tables(logs.tables, Path(out))
        except OSError as e:
            raise click.ClickException(
                f"cannot write the tables to {out}/: {e.strerror or e}") from e
        if not as_json:
            click.echo(f"wrote {len(written)} tables to {out}/", err=True)
    if as_json:
        click.echo(json.dumps(logs.summary()))
    else:
        click.echo(summary_mod.render(logs))


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
