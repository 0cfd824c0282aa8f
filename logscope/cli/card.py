"""``logscope card``: one picture for a forum post: config, headline numbers, small curves."""

from __future__ import annotations

import click

from ._common import check_output, engine_option, labels_for, no_data, read_each, save
from ._telemetry import split_telemetry, telemetry_options


@click.command()
@click.argument("log")
@click.option("-o", "--output", required=True, help="Output file: .png, .svg or .pdf.")
@click.option("--label", default=None, help="Title (default: the file name).")
@engine_option
@telemetry_options
def card(log, output, label, engine):
    """The configuration as the log tells it, prefill at 4k..128k, decode, acceptance, pressure.

    Example: logscope card server.log -o card.png

    Example: logscope card server.log=gpu.csv -o card.png
    """
    from ..plots import card as card_fig

    check_output(output)
    (log,) = split_telemetry((log,))  # LOG=CSV pairs the log with its telemetry
    name = labels_for((log,), (label,) if label else ())[0]
    logs = read_each((log,), engine)[0]
    save(no_data(card_fig, logs, name), output)
