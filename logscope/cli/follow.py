"""``logscope follow``: follow a live server log (tail -F), print events / a live view, serve
Prometheus metrics. A thin layer over :class:`logscope.follow.EventStream`."""

from __future__ import annotations

import json
import math
import select
import signal
import sys

import click

from logscope.classify.grammar import ENGINES


def _json_default(o):  # noqa: ANN001, ANN202
    return str(o)


@click.command()
@click.argument("path")
@click.option("--from-start", "start", flag_value="start",
              help="Read an existing file from its beginning.")
@click.option("--from-end", "start", flag_value="end", default=True,
              help="Only lines written from now on (default).")
@click.option("--state", "state", type=click.Path(dir_okay=False), default=None,
              help="Resume from / save the position to this file (atomic, every 1000 lines or "
                   "1 s, and on exit).")
@click.option("--jsonl", is_flag=True, help="Print every event as one JSON line (flushed).")
@click.option("--serve", "serve", default=None, metavar="HOST:PORT",
              help="Serve Prometheus /metrics, e.g. 127.0.0.1:9464 (loopback by default).")
@click.option("--engine", type=click.Choice(["auto", *ENGINES]), default="auto",
              show_default=True, help="Which server printed the log; auto tries every grammar.")
@click.option("--all", "include_ignored", is_flag=True,
              help="Also emit known ignored lines (kind ignored) and lines of no engine (other).")
@click.option("--vanish-timeout", type=float, default=60.0, show_default=True,
              help="Seconds a vanished file is waited for before giving up (inf: for ever).")
@click.option("--telemetry", "telemetry", default=None, type=click.Path(dir_okay=False),
              help="An nvidia-smi --query-gpu CSV or dmon file being written beside the log: "
                   "/metrics (--serve) gains GPU power and energy by phase (docs/energy.md).")
@click.option("--poll", "poll", is_flag=True,
              help="Do not use inotify (watchfiles); poll the file with stat.")
def follow(path: str, start: str, state: str | None, jsonl: bool, serve: str | None,
           engine: str, include_ignored: bool, vanish_timeout: float, poll: bool,
           telemetry: str | None = None) -> None:
    """Follow a live server log like tail -F (rotation, truncation, re-creation): on a
    terminal a live view per slot (phase now, depth, cached tokens, prefill and decode t/s,
    acceptance, a sparkline of recent decode t/s); with --jsonl one JSON object per event;
    with --serve Prometheus /metrics (contrib/grafana has a dashboard).

    Exit codes: 0 stopped (Ctrl-C, SIGTERM); 1 the file vanished for good; 2 bad input (a
    directory, unreadable, a bad state file, the --serve port in use).

    Example: logscope follow server.log --state server.state --jsonl --serve 127.0.0.1:9464
    """
    from logscope.follow import EventStream, FollowError
    from logscope.follow.metrics import Metrics, PortInUse, parse_hostport
    from logscope.follow.state import StateError

    metrics = None
    if serve:
        try:
            host, port = parse_hostport(serve)
        except ValueError as e:
            raise click.UsageError(str(e)) from e
        metrics = Metrics()
        try:
            server = metrics.serve(host, port)
        except PortInUse as e:
            click.echo(f"Error: {e}", err=True)
            sys.exit(e.exit_code)
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"serving metrics on http://{shown}:{server.server_port}/metrics", err=True)
    power = None
    if telemetry:  # GPU telemetry tailed beside the log (docs/energy.md)
        from logscope.telemetry.live import LivePower

        power = LivePower(telemetry, metrics.registry if metrics is not None else None,
                          from_start=start == "start").start()

    def stdout_closed() -> None:
        """Idle: has the reader of our stdout gone away (| head)? Then stop, state saved."""
        try:
            poller = select.poll()
            poller.register(sys.stdout.fileno(), 0)  # POLLERR / POLLHUP are always reported
            if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0)):
                stream.stop()
        except (OSError, ValueError, AttributeError):
            pass

    try:
        stream = EventStream(path, from_start=start == "start", state=state,
                             engines=None if engine == "auto" else [engine],
                             include_ignored=include_ignored,
                             vanish_timeout=None if math.isinf(vanish_timeout) else vanish_timeout,
                             watch=not poll,
                             on_line=metrics.line if metrics is not None else None,
                             idle_hook=stdout_closed if hasattr(select, "poll") else None)
    except StateError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)

    def on_signal(signum, frame):  # noqa: ANN001, ANN202, ARG001
        stream.stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if hasattr(signal, "SIGHUP"):  # the terminal went away: stop cleanly too
        signal.signal(signal.SIGHUP, on_signal)

    view = None
    if not jsonl and sys.stdout.isatty():
        try:
            from logscope.follow.view import LiveView

            view = LiveView(path)
        except ImportError:
            view = None
    out = sys.stdout
    try:
        if view is not None:
            view.start()
        for ev in stream:
            if metrics is not None:
                metrics.observe(ev)
            if power is not None:
                power.observe(ev)
            if jsonl:
                out.write(json.dumps(ev, default=_json_default) + "\n")
                out.flush()
            elif view is not None:
                view.update(ev)
            else:
                out.write(_plain(ev) + "\n")
                out.flush()
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (| head): stop quietly, state saved
        sys.exit(0)
    except FollowError as e:
        if view is not None:
            view.stop()
            view = None
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    except StateError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(e.exit_code)
    finally:
        if view is not None:
            view.stop()


_SKIP = {"kind", "file", "line", "engine", "variant", "ts", "ts_source", "ts_inferred", "run",
         "t_read", "router_port", "unix_ts", "level", "ts_rel"}


def _plain(ev: dict) -> str:
    fields = " ".join(f"{k}={v}" for k, v in ev.items() if k not in _SKIP and v is not None
                      and not k.startswith("wrap_"))
    return f"{ev['line']:>7} {ev.get('engine') or '-':<12} {ev['kind']:<16} {fields}"
