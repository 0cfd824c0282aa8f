"""GPU telemetry given among the LOG arguments: the options and the split, shared by the
analysis commands (report, compare, card, plot). See docs/energy.md.

A command decorated with :func:`telemetry_options` calls :func:`split_telemetry` on its LOG
arguments first (telemetry files leave the list of series); ``read_each`` then joins the
telemetry to every series it reads (:func:`attach_each`).
"""

from __future__ import annotations

import click

_KEY = "logscope.telemetry"


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
    click.option("--start-time", "start_time", type=float, expose_value=False,
                 callback=_store("start_time"), metavar="UNIX_S",
                 help="Wall-clock time (Unix seconds) of the log's zero, instead of the clock "
                      "the log carries or the estimate from the telemetry."),
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
    """The LOG arguments that are server logs; telemetry files are kept for :func:`attach_each`.

    Example: ``split_telemetry(("server.log", "gpu.csv")) == ("server.log",)``
    """
    from .. import sources
    from ..telemetry import kind_of

    logs, tele = [], list(_opts().get("telemetry") or ())
    for p in paths:
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
    if not logs:
        raise click.UsageError("only telemetry files given: add the server log(s) they go with")
    return tuple(logs)


def attach_each(frames: list, telemetry: list[str] | None = None) -> list:
    """Join the telemetry of this command (or ``telemetry``) to each ingest: energy columns,
    null without telemetry. User errors become one-line ClickExceptions."""
    from ..telemetry import null_energy

    o = _opts()
    tele = telemetry if telemetry is not None else (o.get("telemetry") or [])
    if not tele:  # the energy model (numpy) is not imported for logs alone
        return [null_energy(lg) for lg in frames]
    from ..sources import InputError
    from ..telemetry import ClockError, TelemetryError, attach, read_samples

    try:
        samples = read_samples(tele, fields=o.get("fields")) if tele else None
        return [attach(lg, samples, start_time=o.get("start_time"), gpus=o.get("gpus"),
                       net_of_idle=bool(o.get("net_of_idle"))) for lg in frames]
    except (TelemetryError, ClockError, InputError) as e:
        raise click.ClickException(str(e)) from e
