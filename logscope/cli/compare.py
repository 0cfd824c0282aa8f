"""``logscope compare``: a verdict per question (B against A, ratio, 95 % interval), then the
detail rows both logs measured well enough, side by side."""

from __future__ import annotations

import json

import click

from logscope.cli._common import check_output, engine_option, no_data, save
from logscope.cli._dataset import dataset_options, series
from logscope.cli._telemetry import split_telemetry, telemetry_options


def _cell(metric: str, v) -> str:
    from logscope.analysis.compare import COUNTS
    from logscope.analysis.metrics import fmt_figure
    if v is None:
        return "—"
    if metric in COUNTS:
        return f"{int(round(v)):,}"
    return fmt_figure("acceptance_rate" if "acceptance rate" in metric else "", v)


def _verdict_md(rows: list[dict]) -> list[str]:
    out = ["| question | A | B | B/A | 95 % CI | n (A/B) |", "|---|---|---|---|---|---|"]
    for v in rows:
        ci = v["ci95"]
        out.append(
            f"| {v['question']} | {_num(v['a'])} | {_num(v['b'])} | "
            f"{_ratio(v['ratio'])} | "
            f"{'—' if not ci else f'{ci[0]:.2f}–{ci[1]:.2f}'} | {v['n'][0]}/{v['n'][1]} |")
    return out


def _ratio(x) -> str:
    return "—" if x is None else f"{x:.2f}"


def _num(x) -> str:
    if x is None:
        return "—"
    return f"{x:,.3g}" if abs(x) < 1 else f"{x:,.2f}"


@click.command()
@click.argument("logs", nargs=-1, required=False)
@click.option("--label", "labels", multiple=True,
              help="Name per LOG, in order (default: its file name, with as many of its "
                   "folders as it takes to tell the LOGs apart).")
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md",
              show_default=True)
@click.option("--strict", is_flag=True,
              help="Only the bench buckets every LOG measured solo (no figures pooled over "
                   "different workloads).")
@click.option("--all", "all_rows", is_flag=True,
              help="Every detail row, also those a LOG measured fewer than 3 times.")
@click.option("--plot", "plot_file", default=None,
              help="Also overlay the prefill curves and decode-vs-depth of all LOGs into this "
                   ".png/.svg/.pdf, with the verdict.")
@engine_option
@dataset_options
@telemetry_options
def compare(logs, labels, fmt, strict, all_rows, plot_file, engine, datasets, wheres):
    """Compare A B [...]: a verdict per question, then the detail rows.

    The verdict answers, for B against A (each later LOG against the first): the trade
    (served throughput and speed per stream, both sides in one sentence; as served when the
    runs serve different numbers of streams), decode per stream in matched concurrency states,
    the decode rate while the most streams both reached decode (not throughput), prefill at
    matched depths, acceptance and mean accepted length, energy per token
    (telemetry given) and stall time — the two values, n, B/A with a 95 % bootstrap interval
    and one sentence; "no verdict" with the reason when a side has fewer than 3.

    The detail rows are the buckets every LOG measured at least 3 times (--all: every row),
    labelled as in report; n and shared (requests that ran alongside another) per LOG. A
    warning on stderr says where the workloads differ.

    With a llama-bench result (-o json, jsonl, csv, md) or a llama-sweep-bench table as the
    other file: per test (pp512 @ d4096, tg128 @ d16384) the active t/s, the passive t/s from
    the log, Δ % and n.

    Series can come from a Parquet dataset: --dataset DIR once per series, or once with
    --where once per series (one host against another, one week against the next). A log
    whose wrapper interleaves several servers (docker compose services, pods) gives one
    series per server: `logscope compare compose.log` alone compares its servers.

    Example: logscope compare before.log after.log --label f16 --label q8 --plot ab.png

    Example: logscope compare --dataset ds/ --where "host = 'gpu3'" --where "host = 'gpu4'"
    """
    from logscope.analysis.compare import compare_metrics, workload_differences
    from logscope.analysis.findings import findings, pair_findings
    from logscope.analysis.metrics import round_frame
    from logscope.analysis.verdict import verdict
    from logscope.cli.bench_compare import bench_files, run

    logs = split_telemetry(logs) if logs else logs  # GPU telemetry among the LOGs (docs/energy.md)
    n_series = len(logs) + max(len(datasets), len(wheres) if datasets else 0)
    if n_series < 1 or (n_series < 2 and datasets):
        raise click.UsageError("compare needs at least two LOGs (or --dataset series)")
    if not datasets and (benches := bench_files(logs)):
        return run(logs, benches, labels, fmt, engine)
    if plot_file:
        check_output(plot_file)
    frames, names = series(logs, labels, engine, datasets, wheres)  # a server each
    if len(frames) < 2:
        raise click.UsageError("compare needs at least two LOGs (or --dataset series), or "
                               "one log whose wrapper interleaves several servers")
    df = compare_metrics(frames, names, strict=strict, all_rows=all_rows)
    verdicts, found = [], {n: findings(lg, n) for lg, n in zip(frames, names, strict=True)}
    pairs = []
    for lg, name in zip(frames[1:], names[1:], strict=True):
        rows = verdict(frames[0], lg, (names[0], name))
        verdicts += [{**v, "label_a": names[0], "label_b": name} for v in rows]
        pairs += pair_findings(frames[0], lg, (names[0], name), rows)
    if df.height == 0 and not any(v["ratio"] is not None for v in verdicts):
        raise click.ClickException(
            f"no comparable data in {', '.join(names)}"
            + (" (--strict: no bucket measured solo in every LOG)" if strict else ""))
    for w in workload_differences(frames, names):
        click.echo(f"warning: {w}", err=True)
    if fmt == "csv":
        click.echo(round_frame(df).write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps({"verdict": verdicts, "rows": round_frame(df).to_dicts(),
                               "findings": found, "pair_findings": pairs},
                              indent=2, default=str))
    else:
        _print_md(df, names, verdicts)
        _print_findings(found, pairs)
    if plot_file:
        from logscope.outputs.plots import plot_compare
        save(no_data(plot_compare, frames, names, verdicts=verdicts), plot_file)


def _print_findings(found: dict[str, list[dict]], pairs: list[dict]) -> None:
    from logscope.analysis.report import findings_md
    if pairs:
        click.echo("\n## Findings of the pair\n")
        click.echo(findings_md(pairs).split("\n\n", 1)[1], nl=False)
    for name, items in found.items():
        if items:
            click.echo(f"\n## Findings: {name}\n")
            click.echo(findings_md(items).split("\n\n", 1)[1], nl=False)


def _print_md(df, names: list[str], verdicts: list[dict]) -> None:
    for b in names[1:]:
        rows = [v for v in verdicts if v["label_b"] == b]
        click.echo(f"## Verdict: {b} (B) against {names[0]} (A)\n")
        for v in rows:
            click.echo(f"- {v['sentence']}")
        click.echo("")
        for line in _verdict_md(rows):
            click.echo(line)
        click.echo("")
    if df.height == 0:
        return
    click.echo("## Detail (bench buckets every log measured at least 3 times; --all for every "
               "bucket; n = requests or windows, shared = ran alongside another request)\n")
    vals = [c for c in df.columns if c != "metric" and not c.startswith(("n ", "shared "))]
    cols = ["metric"] + [c for n in names for c in (n, f"n {n}")] \
        + [c for c in vals if c.startswith(("Δ ", "% "))]
    click.echo("| " + " | ".join(cols) + " |")
    click.echo("|" + "|".join("---" for _ in cols) + "|")
    for row in df.iter_rows(named=True):
        cells = [row["metric"]]
        for n in names:
            cells.append(_cell(row["metric"], row[n]))
            k, sh = row[f"n {n}"], row[f"shared {n}"]
            cells.append("—" if k is None else f"{k}" + (f" ({sh} shared)" if sh else ""))
        for c in cols[1 + 2 * len(names):]:
            v = row[c]
            if v is None:
                cells.append("—")
            elif c.startswith("% "):
                cells.append(f"{v:+,.1f}%")
            elif row["metric"] in ("retracts", "preemptions"):
                cells.append(f"{int(round(v)):+,}")
            else:
                cells.append(f"{v:+,.3g}" if "acceptance rate" in row["metric"]
                             else f"{v:+,.2f}")
        click.echo("| " + " | ".join(cells) + " |")
