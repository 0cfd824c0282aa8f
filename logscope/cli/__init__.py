"""The ``logscope`` command line: one module per command group, each a thin layer over the API.

Enters: the command line. Leaves: what the stages before it print, write or plot.

Commands are registered lazily (by module name) so ``logscope --help`` does not import Polars.
User errors are ``click.ClickException`` (exit 1) or ``UsageError`` (exit 2); ``--debug`` shows
the traceback of an unexpected error instead of the one-line message.

May import: every stage (the last one); the facade :mod:`logscope` imports nothing from it
but ``__main__``.
"""

from __future__ import annotations

import importlib
import sys

import click

# command name -> (module, attribute)
COMMANDS: dict[str, tuple[str, str]] = {
    "follow": ("logscope.cli.follow", "follow"),
    "ingest": ("logscope.cli.ingest", "ingest"),
    "plot": ("logscope.cli.plot", "plot"),
    "report": ("logscope.cli.report", "report"),
    "compare": ("logscope.cli.compare", "compare"),
    "card": ("logscope.cli.card", "card"),
    "formats": ("logscope.cli.formats", "formats"),
    "explain": ("logscope.cli.explain", "explain"),
    "sql": ("logscope.cli.sql", "sql"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        mod, attr = COMMANDS[name]
        return getattr(importlib.import_module(mod), attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="logscope")
@click.option("--debug", is_flag=True, help="Show tracebacks of unexpected errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """logscope: a passive benchmark from the logs llama-server, SGLang and vLLM already print.

    Example: logscope ingest server.log
    """
    ctx.obj = {"debug": debug}


def main() -> None:
    debug = "--debug" in sys.argv
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # an unexpected error: one line, not a traceback
        if debug:
            raise
        click.echo(f"Error: internal error: {type(e).__name__}: {e} (run with --debug for details)",
                   err=True)
        sys.exit(70)
