"""Shared by the analysis commands (plot, report, compare, card): read logs, name them."""

from __future__ import annotations

from pathlib import Path

import click

from logscope.classify.grammar import ENGINES

SUFFIXES = (".png", ".svg", ".pdf")

engine_option = click.option(
    "--engine", type=click.Choice(["auto", *ENGINES]), default="auto", show_default=True,
    help="Which server printed the log; auto decides per line.")


class InputClickError(click.ClickException):
    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


def read_each(paths: tuple[str, ...], engine: str = "auto") -> list:
    """One ``Logs`` per LOG argument (each is its own series); user errors as ClickException."""
    from logscope.ingest import NoServerLines, read
    from logscope.input.sources import InputError

    out = []
    for p in paths:
        try:
            out.append(read(p, engine=engine))
        except InputError as e:
            raise InputClickError(str(e), getattr(e, "exit_code", 2)) from e
        except NoServerLines as e:
            what = "llama-server, SGLang or vLLM" if engine == "auto" else engine
            raise click.ClickException(
                f"no {what} lines in {p}; is this a server log?") from e
    from logscope.cli._telemetry import (
        attach_each,  # GPU telemetry given with the logs (docs/energy.md)
    )
    return attach_each(out, names=paths)


def labels_for(paths: tuple[str, ...], labels: tuple[str, ...]) -> list[str]:
    if len(labels) > len(paths):
        raise click.UsageError(f"{len(labels)} --label for {len(paths)} LOG(s)")
    return list(labels) + distinct_names(list(paths))[len(labels):]


def distinct_names(paths: list[str]) -> list[str]:
    """Each path's file name, with as many of its folders as it takes to tell it from the
    others (``sglang/server.log`` and ``vllm/server.log``); the same path given twice is
    numbered (``server.log (2)``).

    Example::

        distinct_names(["a/x/run.log", "b/x/run.log", "c.log"])
        # ['a/x/run.log', 'b/x/run.log', 'c.log']
    """
    unique = list(dict.fromkeys(str(Path(p)) for p in paths))
    parts = [Path(p).parts or (p,) for p in unique]
    depth = [1] * len(unique)
    while True:
        names = [str(Path(*ps[-d:])) for ps, d in zip(parts, depth, strict=True)]
        seen: dict[str, list[int]] = {}
        for i, n in enumerate(names):
            seen.setdefault(n, []).append(i)
        grow = [i for same in seen.values() if len(same) > 1 for i in same
                if depth[i] < len(parts[i])]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    name_of = dict(zip(unique, names, strict=True))
    count: dict[str, int] = {}
    out = []
    for p in paths:
        n = name_of[str(Path(p))]
        count[n] = count.get(n, 0) + 1
        out.append(n if count[n] == 1 else f"{n} ({count[n]})")
    return out


def check_output(path: str) -> None:
    if Path(path).suffix.lower() not in SUFFIXES:
        raise click.UsageError(f"-o {path}: the file name must end in {', '.join(SUFFIXES)}")


def save(fig, path: str) -> None:
    try:
        fig.savefig(path)
    except OSError as e:
        raise click.ClickException(f"cannot write {path}: {e.strerror or e}") from e
    click.echo(f"wrote {path}", err=True)


def no_data(fn, *args, **kwargs):
    """Call a plotting function; its NoData becomes a one-line user error."""
    from logscope.analysis._util import NoData

    try:
        return fn(*args, **kwargs)
    except NoData as e:
        raise click.ClickException(str(e)) from e
