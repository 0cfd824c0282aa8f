"""``logscope plot``: figures of the passive benchmark (PNG, SVG or PDF by file name)."""

from __future__ import annotations

import click

from logscope.cli._common import check_output, engine_option, no_data, save
from logscope.cli._dataset import dataset_options, series
from logscope.cli._telemetry import split_telemetry, telemetry_options

_opts = [
    click.argument("logs", nargs=-1, required=False),
    click.option("-o", "--output", required=True, help="Output file: .png, .svg or .pdf."),
    click.option("--label", "labels", multiple=True,
                 help="Series name, once per LOG in order (default: the file name, with as many "
                      "of its folders as it takes to tell the LOGs apart)."),
    engine_option,
    dataset_options,
    telemetry_options,
]


def _common(f):
    for o in reversed(_opts):
        f = o(f)
    return f


@click.group()
def plot() -> None:
    """Draw the passive benchmark: prefill curve, decode, acceptance, pressure, pareto, power.

    Example: logscope plot prefill-curve a.log b.log -o prefill.png --label before --label after
    """


def _run(fn, logs, output, labels, engine="auto", datasets=(), wheres=()):
    check_output(output)
    logs = split_telemetry(logs) if logs else logs  # GPU telemetry among the LOGs (docs/energy.md)
    frames, names = series(logs, labels, engine, datasets, wheres)
    save(no_data(fn, frames, names), output)


@plot.command("prefill-curve")
@_common
def prefill_curve_cmd(logs, output, labels, engine, datasets, wheres):
    """Prefill t/s vs context depth (log axis): points and the fit 1/(a + b·d), one series per LOG.

    Filled points are exact per request; hollow ones are tick intervals or window averages.

    Example: logscope plot prefill-curve server.log -o prefill.png
    """
    from logscope.outputs.plots import plot_prefill_curve
    _run(plot_prefill_curve, logs, output, labels, engine, datasets, wheres)


@plot.command("decode")
@_common
def decode_cmd(logs, output, labels, engine, datasets, wheres):
    """Decode t/s over time (tg_3s per slot), vs depth (exact per request), and aggregate;
    every point coloured by its concurrency state (alone on the GPU, beside a prefill, k
    streams decoding at once).

    Example: logscope plot decode server.log -o decode.png
    """
    from logscope.outputs.plots import plot_decode
    _run(plot_decode, logs, output, labels, engine, datasets, wheres)


@plot.command("acceptance")
@_common
def acceptance_cmd(logs, output, labels, engine, datasets, wheres):
    """Speculative decoding: acceptance rate and mean accepted length, vs depth and over time.

    Example: logscope plot acceptance spec.log -o acceptance.svg
    """
    from logscope.outputs.plots import plot_acceptance
    _run(plot_acceptance, logs, output, labels, engine, datasets, wheres)


@plot.command("pressure")
@_common
def pressure_cmd(logs, output, labels, engine, datasets, wheres):
    """KV usage, running/queued requests, retract/preempt/context-shift events over time.

    Example: logscope plot pressure sglang.log -o pressure.png
    """
    from logscope.outputs.plots import plot_pressure
    _run(plot_pressure, logs, output, labels, engine, datasets, wheres)


@plot.command("power")
@_common
def power_cmd(logs, output, labels, engine, datasets, wheres):
    """GPU power, SM clock and utilisation per GPU over time, above the requests' prefill and
    decode stretches; give the nvidia-smi telemetry with the log (docs/energy.md).

    Example: logscope plot power server.log gpu.csv -o power.png
    """
    from logscope.outputs.plots import plot_power
    _run(plot_power, logs, output, labels, engine, datasets, wheres)


@plot.command("pareto")
@_common
def pareto_cmd(logs, output, labels, engine, datasets, wheres):
    """The passive Pareto: per-stream t/s against aggregate t/s, one point per concurrency
    state the workload visited (area = seconds there, label = streams decoding), each log's
    frontier, and a star at what the workload got (served throughput, speed per stream as
    served). One colour per LOG; all three engines.

    Example: logscope plot pareto np1.log np2.log np4.log -o pareto.png
    """
    from logscope.outputs.plot_pareto import plot_pareto
    _run(plot_pareto, logs, output, labels, engine, datasets, wheres)
