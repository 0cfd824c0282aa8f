"""``logscope formats``: every line format logscope knows, with its version range."""

from __future__ import annotations

import json

import click

from logscope.classify.grammar import ENGINES
from logscope.cli.ingest import OneLineErrors


@click.command(cls=OneLineErrors)
@click.option("--engine", type=click.Choice(["auto", *ENGINES, "nvidia-smi"]), default="auto",
              show_default=True,
              help="Only this server's (or telemetry tool's) formats (auto = all).")
@click.option("--kind", default=None, help="Only this event kind (e.g. prompt_eval, ignored).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per format, one per line.")
def formats(engine: str, kind: str | None, as_json: bool) -> None:
    """List every known line format: engine, kind, variant and the versions that print it.

    Variants are listed in matching order (the first that matches a line wins); `claimed`
    lines carry a server's anchor but no known format (they count as unrecognized).

    Example: logscope formats --engine llama-server
    """
    import polars as pl

    from logscope.classify.catalog import formats as catalog_formats
    from logscope.telemetry.nvidia import GRAMMAR
    from logscope.telemetry.nvidia import formats as telemetry_formats

    # GPU telemetry line formats (grammars/nvidia_smi.lark) are listed after the servers'
    df = telemetry_formats() if engine == GRAMMAR else catalog_formats(
        None if engine == "auto" else engine)
    if engine == "auto":
        df = pl.concat([df, telemetry_formats()])
    if kind:
        df = df.filter(pl.col("kind") == kind)
        if df.height == 0:
            raise click.ClickException(f"no formats of kind {kind!r} (see `logscope formats`)")
    if as_json:
        for row in df.iter_rows(named=True):
            click.echo(json.dumps(row, ensure_ascii=False))
        return
    cols = ("engine", "kind", "variant", "versions")
    rows = [[r[c] or "" for c in cols] for r in df.select(cols).iter_rows(named=True)]
    width = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(cols, width, strict=True)).rstrip())
    for r in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, width, strict=True)).rstrip())
    n_eng = df["engine"].n_unique()
    n_kinds = df.filter(~pl.col("kind").is_in(["ignored", "claimed"]))["kind"].n_unique()
    click.echo(f"{df.height} formats, {n_kinds} event kinds, {n_eng} engine(s)", err=True)
