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
@click.option("--server", default=None, metavar="NAME",
              help="The server to show of a log that holds several (a compose service, a pod).")
@engine_option
@telemetry_options
def card(log, output, label, vs, server, engine):
    """The configuration as the log tells it, prefill at 4k..128k, decode, acceptance, pressure.

    Example: logscope card server.log -o card.png

    Example: logscope card server.log=gpu.csv -o card.png

    Example: logscope card after.log --vs before.log -o card.png
    """
    from logscope.outputs.plots import card as card_fig

    check_output(output)
    (log,) = split_telemetry((log,))  # LOG=CSV pairs the log with its telemetry
    names = labels_for((log, vs) if vs else (log,), (label,) if label else ())
    name = names[0]
    logs = _one_server(read_each((log,), engine)[0], log, server)
    if server:
        name = f"{name} [{server}]"
    verdicts = None
    if vs:
        from logscope.analysis.verdict import verdict

        other = read_each((vs,), engine)[0]
        verdicts = verdict(other, logs, (names[1], name))
    save(no_data(card_fig, logs, name, verdicts=verdicts), output)


def _one_server(logs, log: str, server: str | None):  # noqa: ANN001, ANN202 - logscope.Logs
    """The ingest of ``server`` in ``log``; the whole ingest where it holds one server."""
    from logscope.analysis.servers import servers_of

    parts = servers_of(logs)
    if server is None:
        if len(parts) > 1:
            raise click.ClickException(
                f"{log} holds {len(parts)} servers ({', '.join(parts)}): pick one with --server")
        return logs
    if server not in parts:
        held = (f"servers: {', '.join(parts)}" if len(parts) > 1
                else "it holds one server, no wrapper names it")
        raise click.ClickException(f"{log}: no server {server!r} ({held})")
    return parts[server]
