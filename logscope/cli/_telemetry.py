"""GPU telemetry given among the LOG arguments: the options and the split, shared by the
analysis commands (report, compare, card, plot). See docs/energy.md.

A command decorated with :func:`telemetry_options` calls :func:`split_telemetry` on its LOG
arguments first (telemetry files leave the list of series); ``read_each`` then joins the
telemetry to every series it reads (:func:`attach_each`).
"""

from __future__ import annotations

import click

_KEY = "logscope.telemetry"
TZ_KEY = "logscope.tz"  # ingest's --tz (eager): the zone of a --start-time without offset


class StartTime(click.ParamType):
    """``--start-time``: when the server started, ISO 8601 (``2026-12-01T20:25:06Z``, with an
    offset, or in ``--tz``/UTC without one) or Unix seconds; converted to Unix seconds by
    :func:`logscope.engines.clock.parse_start_time`, the one parser.

    Example: ``click.option("--start-time", type=StartTime(), multiple=True)``
    """

    name = "start_time"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201
        from logscope.engines.clock import parse_start_time

        if isinstance(value, float):
            return value
        tz = ctx.meta.get(TZ_KEY) if ctx is not None else None
        try:
            return parse_start_time(value, tz)
        except ValueError as e:  # one Error line, exit 2, in every command (no usage text)
            err = click.ClickException(f"--start-time: {e}")
            err.exit_code = 2
            raise err from None


START_TIME_HELP = ("When the server started (the zero of the log's clock): ISO 8601, e.g. "
                   "2026-12-01T20:25:06Z or with an offset, or Unix seconds; once per LOG in "
                   "order, or once for all. Places the log on the telemetry's clock instead "
                   "of the clock the log carries or the estimate.")


def _store(name: str):
    def cb(ctx: click.Context, param: click.Parameter, value):
        ctx.meta.setdefault(_KEY, {})[name] = value
        return value
    return cb


def _gpus(ctx: click.Context, param: click.Parameter, value: str | None):
    if value:
        try:
            value = [int(g) for g in value.split(",") if g.strip()]
        except ValueError:
            raise click.BadParameter(f"{value!r}: GPU indices, comma-separated (0,1)") from None
    return _store("gpus")(ctx, param, value or None)


def _fields(ctx: click.Context, param: click.Parameter, value: str | None):
    fields = [f.strip() for f in value.split(",") if f.strip()] if value else None
    return _store("fields")(ctx, param, fields)


_OPTIONS = [
    click.option("--telemetry", "telemetry", multiple=True, expose_value=False,
                 callback=_store("telemetry"), metavar="FILE",
                 help="nvidia-smi telemetry (--query-gpu CSV or dmon output) recorded beside "
                      "the server; telemetry files given as LOGs are found by themselves."),
    click.option("--fields", expose_value=False, callback=_fields, metavar="LIST",
                 help="The --query-gpu field list of a --format=csv,noheader file "
                      "(timestamp,index,power.draw,...)."),
    click.option("--start-time", "start_time", type=StartTime(), multiple=True,
                 expose_value=False, callback=_store("start_time"), metavar="TIME",
                 help=START_TIME_HELP),
    click.option("--gpus", expose_value=False, callback=_gpus, metavar="LIST",
                 help="GPU indices the server used, e.g. 0,1 (default: every GPU in the "
                      "telemetry); their power is summed."),
    click.option("--net-of-idle", "net_of_idle", is_flag=True, expose_value=False,
                 callback=_store("net_of_idle"),
                 help="Requests' energy above the loaded-idle power only (the rest is idle)."),
]


def telemetry_options(f):
    for o in reversed(_OPTIONS):
        f = o(f)
    return f


def _opts() -> dict:
    ctx = click.get_current_context(silent=True)
    return {} if ctx is None else ctx.meta.setdefault(_KEY, {})


def split_telemetry(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The LOG arguments that are server logs; telemetry files (and the right side of
    ``LOG=CSV``) are kept for :func:`attach_each`.

    Example: ``split_telemetry(("server.log", "gpu.csv")) == ("server.log",)``
    """
    from logscope.input import sources
    from logscope.telemetry import kind_of
    from logscope.telemetry.pairing import split_pair

    logs, tele = [], list(_opts().get("telemetry") or ())
    explicit: dict[int, list[str]] = {}
    for p in paths:
        if (pr := split_pair(p)) is not None:
            explicit.setdefault(len(logs), []).append(pr[1])
            logs.append(pr[0])
            continue
        try:
            hits = sources.expand([p])
        except sources.InputError:
            logs.append(p)  # read_each says what is wrong with it
            continue
        kinds = [kind_of(h) is not None for h in hits]
        if kinds and all(kinds):
            tele.extend(hits)
        elif any(kinds):
            raise click.UsageError(f"{p} matches both server logs and telemetry files; give "
                                   "them as separate arguments")
        else:
            logs.append(p)
    _opts()["telemetry"] = tele
    _opts()["explicit"] = explicit
    if not logs:
        raise click.UsageError("only telemetry files given: add the server log(s) they go with")
    return tuple(logs)


def start_times(n_logs: int) -> list[float] | None:
    """The ``--start-time`` values of this command, checked against the number of logs."""
    got = list(_opts().get("start_time") or ())
    if got and len(got) not in (1, n_logs):
        err = click.ClickException(f"--start-time given {len(got)} times for {n_logs} LOG(s): "
                                   "give it once (every LOG) or once per LOG, in order")
        err.exit_code = 2
        raise err
    return got or None


def attach_each(frames: list, telemetry: list[str] | None = None,
                names: list[str] | tuple[str, ...] | None = None) -> list:
    """Join the telemetry of this command (or ``telemetry``) to each ingest, each to its own
    telemetry (:func:`logscope.telemetry.pairing.join_series`; the pairing said in one stderr
    line): energy columns, null without telemetry. User errors become one-line
    ClickExceptions."""
    from logscope.telemetry import null_energy

    o = _opts()
    tele = telemetry if telemetry is not None else (o.get("telemetry") or [])
    explicit = o.get("explicit") or {}
    starts = start_times(len(frames))
    if not tele and not explicit:  # the energy model (numpy) is not imported for logs alone
        return [null_energy(lg) for lg in frames]
    from logscope.analysis.concurrency import timeline
    from logscope.input.sources import InputError
    from logscope.telemetry import ClockError, TelemetryError
    from logscope.telemetry.pairing import PairingError, join_series

    names = list(names or [f.files[0].file if f.files else f"log {i + 1}"
                           for i, f in enumerate(frames)])
    try:
        out, line = join_series(frames, names, list(tele), explicit=explicit,
                                start_times=starts, fields=o.get("fields"), gpus=o.get("gpus"),
                                net_of_idle=bool(o.get("net_of_idle")), work_of=timeline)
    except (TelemetryError, ClockError, InputError, PairingError) as e:
        raise click.ClickException(str(e)) from e
    if line:
        click.echo(line, err=True)
    return out
