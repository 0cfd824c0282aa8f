"""``logscope card``: one picture for a forum post: config, headline numbers, small curves."""

from __future__ import annotations

import click

from logscope.cli._common import check_output, engine_option, labels_for, no_data, read_each, save
from logscope.cli._telemetry import split_telemetry, telemetry_options


@click.command()
@click.argument("log")
@click.option("-o", "--output", required=True, help="Output file: .png, .svg or .pdf.")
@click.option("--label", default=None, help="Title (default: the file name).")
@click.option("--vs", "vs", default=None, metavar="A_LOG",
              help="Also the verdict of LOG against this log (as compare gives it).")
@engine_option
@telemetry_options
def card(log, output, label, vs, engine):
    """The configuration as the log tells it, prefill at 4k..128k, decode, acceptance, pressure.

    Example: logscope card server.log -o card.png

    Example: logscope card server.log=gpu.csv -o card.png

    Example: logscope card after.log --vs before.log -o card.png
    """
    from logscope.outputs.plots import card as card_fig

    check_output(output)
    (log,) = split_telemetry((log,))  # LOG=CSV pairs the log with its telemetry
    name = labels_for((log,), (label,) if label else ())[0]
    logs = read_each((log,), engine)[0]
    verdicts = None
    if vs:
        from logscope.analysis.verdict import verdict

        other = read_each((vs,), engine)[0]
        verdicts = verdict(other, logs, (labels_for((vs,), ())[0], name))
    save(no_data(card_fig, logs, name, verdicts=verdicts), output)
