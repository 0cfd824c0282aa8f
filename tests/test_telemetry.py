"""GPU telemetry: nvidia-smi formats into gpu_samples (golden frames of rendered fixtures),
clock offset and energy per request on the real H200 runs, and the commands that show them."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.cli import cli
from logscope.telemetry import (
    TelemetryError,
    attach,
    kind_of,
    read_samples,
    read_with_telemetry,
    share_energy,
    split_inputs,
)
from logscope.telemetry.nvidia import grammar, parse_text
from tests.conftest import FIXTURES

TELE = FIXTURES / "telemetry"
RENDERED = sorted((TELE / "rendered").glob("*.golden.json"))
H200 = TELE / "h200"
# server process start (Unix s, from /proc) of the two real runs: ../shared/corpus/README.md
TRUE_START = {"generated-gpu-pressure-np4-ctxshift": 1796156563.556,
              "generated-gpu-colors-tty": 1796156542.805}


def _data_file(golden: Path) -> Path:
    stem = golden.name.removesuffix(".golden.json")
    return next(p for p in golden.parent.glob(stem + ".*") if not p.name.endswith(".json"))


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# ------------------------------------------------------------------------------------------
# formats
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("golden", RENDERED, ids=lambda p: p.name.split(".")[0])
def test_golden_frames(golden):
    """Every rendered fixture reads into exactly the rows the renderer wrote."""
    exp = json.loads(golden.read_text())
    path = _data_file(golden)
    assert kind_of(str(path)) == exp["format"]
    got = read_samples(str(path), fields=exp["fields"])
    assert got.height == len(exp["rows"])
    assert got.schema["power_w"] == pl.Float32 and got.schema["gpu"] == pl.Int16
    by_line = {r["line"]: r for r in got.to_dicts()}
    for row in exp["rows"]:
        g = by_line[row["line"]]
        for k, v in row.items():
            if k == "ts":
                assert g["ts"] == datetime.fromisoformat(v), row
            elif isinstance(v, float):
                assert g[k] == pytest.approx(v, abs=1e-3), (k, row)
            else:
                assert g[k] == v, (k, row)


def test_gpu_counts_and_nulls():
    """1, 2 and 4 GPUs give one row per GPU per sample; [N/A], [Not Supported], - are nulls."""
    one = read_samples(str(TELE / "rendered/query-1gpu-units.csv"))
    assert one["gpu"].unique().to_list() == [0]
    assert one["power_limit_w"].null_count() == 1 and one["memory_total_mib"].null_count() == 1
    two = read_samples(str(TELE / "rendered/query-2gpu-nounits.csv"))
    assert two.group_by("gpu").len().sort("gpu")["len"].to_list() == [8, 8]
    assert two["power_w"].null_count() == 1
    four = read_samples(str(TELE / "rendered/dmon-4gpu-pc-dt.txt"))
    assert sorted(four["gpu"].unique().to_list()) == [0, 1, 2, 3]
    assert four["sm_clock_mhz"].null_count() == four.height  # every pclk was '-'


def test_noheader_needs_fields():
    path = TELE / "rendered/query-4gpu-noheader.csv"
    with pytest.raises(TelemetryError, match="--fields"):
        read_samples(str(path))
    r = run("report", H200 / "generated-gpu-colors-tty.log", path)
    assert r.exit_code == 1
    assert "without its header line" in r.output and "--fields" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_server_logs_are_not_telemetry():
    logs = sorted(str(p) for p in FIXTURES.rglob("*.log"))
    assert len(logs) > 20
    assert all(kind_of(p) is None for p in logs)
    a, b = split_inputs([str(H200 / "generated-gpu-colors-tty.log"),
                         str(H200 / "generated-gpu-colors-tty.smi.csv"),
                         str(H200 / "generated-gpu-colors-tty.dmon.txt")])
    assert len(a) == 1 and len(b) == 2


def test_lark_and_compiled_patterns_agree():
    """Each telemetry line: lark's parse and the compiled regexes give the same kind."""
    g = grammar()
    lk = g.lark()
    files = [_data_file(p) for p in RENDERED] + sorted(H200.glob("*.smi.csv"))[:1] \
        + sorted(H200.glob("*.dmon.txt"))[:1]
    for f in files:
        for line in f.read_text().splitlines()[:40]:
            hit = g.match_line(line)
            assert hit is not None, (f.name, line)
            tree = lk.parse(line)
            kinds = [t.data for t in tree.iter_subtrees() if t.data in
                     ("smi_header", "smi_row", "dmon_header", "dmon_units", "dmon_row")]
            assert kinds == [hit[0]], (f.name, line)


def test_bulk_parse_uses_no_lark_per_line(monkeypatch):
    import lark

    def boom(*a, **k):
        raise AssertionError("lark parsed a line on the bulk path")

    monkeypatch.setattr(lark.Lark, "parse", boom)
    text = (H200 / "generated-gpu-pressure-np4-ctxshift.smi.csv").read_text()
    assert parse_text(text, "x.csv").height == 253


# ------------------------------------------------------------------------------------------
# the real H200 runs
# ------------------------------------------------------------------------------------------

def _straightforward(csv_path: Path, req: pl.DataFrame, start: float) -> dict[int, float]:
    """Prefill + decode energy of each completed request, from the raw CSV: power joined by
    straight lines on a 1 ms grid, each millisecond shared by the token rates of the requests
    computing in it (prefill: prompt_ms before decoding, decode: decode_ms before release)."""
    with open(csv_path) as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    t = np.array([datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
                  .replace(tzinfo=UTC).timestamp() - start for r in rows])
    p = np.array([float(r["power.draw [W]"].split()[0]) for r in rows])
    done = req.filter(pl.col("decode_ms").is_not_null()).to_dicts()
    end = max(r["t_end"] for r in done)
    grid = np.arange(0.0, end + 0.01, 0.001) + 0.0005
    power = np.interp(grid, t, p)
    rates = np.zeros((len(done), len(grid)))
    for i, r in enumerate(done):
        d1 = r["t_end"]
        d0 = d1 - r["decode_ms"] / 1e3
        p0 = d0 - r["prompt_ms"] / 1e3
        rates[i, (grid >= p0) & (grid < d0)] = r["prompt_tokens"] / (d0 - p0)
        rates[i, (grid >= d0) & (grid < d1)] = r["gen_tokens"] / (d1 - d0)
    total = rates.sum(axis=0)
    share = np.divide(rates, total, out=np.zeros_like(rates), where=total > 0)
    e = (share * power * 0.001).sum(axis=1)
    return {r["task"]: float(x) for r, x in zip(done, e, strict=True)}


@pytest.mark.parametrize("run_name", sorted(TRUE_START))
@pytest.mark.parametrize("ext", [".smi.csv", ".dmon.txt"])
def test_clock_offset_within_a_second(run_name, ext):
    logs = read_with_telemetry([str(H200 / f"{run_name}.log"), str(H200 / f"{run_name}{ext}")])
    e = logs["energy_runs"].row(0, named=True)
    assert e["clock_offset_source"] == "estimated"
    assert abs(e["clock_offset_s"] - TRUE_START[run_name]) < 1.0
    assert e["clock_fit_r"] > 0.8


def test_energy_per_request_matches_a_trapezoid_from_the_raw_csv():
    name = "generated-gpu-pressure-np4-ctxshift"
    csv_path = H200 / f"{name}.smi.csv"
    logs = read_with_telemetry([str(H200 / f"{name}.log"), str(csv_path)])
    req = logs["requests"]
    want = _straightforward(csv_path, req, TRUE_START[name])
    got = {r["task"]: r["prefill_energy_j"] + r["decode_energy_j"]
           for r in req.filter(pl.col("decode_ms").is_not_null()).to_dicts()}
    assert set(got) == set(want) and len(got) == 5
    for task, w in want.items():
        if w > 1000:  # the four long streams: each within 2 %
            assert got[task] == pytest.approx(w, rel=0.02), task
    # all completed requests together: within 2 %
    assert sum(got.values()) == pytest.approx(sum(want.values()), rel=0.02)
    # the README's figure: 36.8 kJ over the workload, ~1.08 J per generated token
    assert logs["energy_runs"]["decode_j_per_token"].item() == pytest.approx(1.08, abs=0.04)
    # with the true start given, every completed request (the short one too) within 2 %
    given = read_with_telemetry([str(H200 / f"{name}.log"), str(csv_path)],
                                start_time=TRUE_START[name])["requests"]
    for r in given.filter(pl.col("decode_ms").is_not_null()).to_dicts():
        assert r["prefill_energy_j"] + r["decode_energy_j"] == \
            pytest.approx(want[r["task"]], rel=0.02), r["task"]


@pytest.mark.parametrize("net", [False, True])
def test_energy_is_conserved(net):
    name = "generated-gpu-pressure-np4-ctxshift"
    logs = read_with_telemetry([str(H200 / f"{name}.log"), str(H200 / f"{name}.dmon.txt")],
                               net_of_idle=net)
    e = logs["energy_runs"].row(0, named=True)
    req_j = logs["requests"]["energy_j"].sum()
    assert req_j + e["idle_j"] == pytest.approx(e["total_j"], abs=1e-6)
    assert e["net_of_idle"] is net
    if net:
        assert e["idle_j"] > e["idle_w"] * 100  # the idle baseline under 110 s of requests


def test_null_energy_without_telemetry():
    logs = read_with_telemetry([str(H200 / "generated-gpu-colors-tty.log")])
    req = logs["requests"]
    for c in ("energy_j", "prefill_energy_j", "decode_energy_j"):
        assert req[c].null_count() == req.height and req.schema[c] == pl.Float64


def test_share_energy_rule():
    """Slices go to the computing stretches by token rate; waiting ones only get slices no one
    computes in; nothing covered is idle."""
    def cum(x):
        return 100.0 * np.asarray(x)  # a constant 100 W

    t0 = np.array([0.0, 0.0, 2.0, 3.0])
    t1 = np.array([2.0, 2.0, 3.0, 4.0])
    tok = np.array([300.0, 100.0, 0.0, 50.0])  # 150 t/s and 50 t/s together; a wait; alone
    waiting = np.array([False, False, True, False])
    e, idle, total = share_energy(t0, t1, tok, (0.0, 5.0), cum, waiting=waiting)
    assert e.tolist() == pytest.approx([150.0, 50.0, 100.0, 100.0])
    assert idle == pytest.approx(100.0) and total == pytest.approx(500.0)
    e, idle, _ = share_energy(t0, t1, tok, (0.0, 5.0), cum, idle_w=40.0, waiting=waiting)
    assert e.sum() + idle == pytest.approx(500.0) and e[3] == pytest.approx(60.0)


def _synthetic(n_gpus: int, watts: list[float], t0: float, t1: float) -> pl.DataFrame:
    rows = []
    for g in range(n_gpus):
        for k, t in enumerate(np.arange(t0, t1, 0.5)):
            rows.append({"file": "x.csv", "line": k, "source": "nvidia-smi-query",
                         "ts": datetime.fromtimestamp(float(t), UTC), "gpu": g,
                         "power_w": watts[g], "power_limit_w": 300.0, "util_gpu_pct": 50})
    from logscope.telemetry import SCHEMA
    return pl.DataFrame(rows).with_columns(
        pl.lit(None, dt).alias(c) for c, dt in SCHEMA.items() if c not in rows[0]
    ).select(list(SCHEMA)).cast(SCHEMA)


def test_multi_gpu_power_is_summed_and_gpus_select():
    log = H200 / "generated-gpu-colors-tty.log"
    start = 1_800_000_000.0
    samples = _synthetic(4, [100.0, 50.0, 25.0, 10.0], start - 5, start + 30)
    both = attach(logscope.read(str(log)), samples, start_time=start)
    e = both["energy_runs"].row(0, named=True)
    assert e["gpus"] == [0, 1, 2, 3] and e["power_limit_w"] == 1200.0
    assert e["total_j"] == pytest.approx(185.0 * e["window_s"])
    assert e["clock_offset_source"] == "given"
    two = attach(logscope.read(str(log)), samples, start_time=start, gpus=[0, 1])
    assert two["energy_runs"]["total_j"].item() == pytest.approx(150.0 * e["window_s"])


# ------------------------------------------------------------------------------------------
# commands
# ------------------------------------------------------------------------------------------

def test_report_json_energy_contract():
    name = "generated-gpu-pressure-np4-ctxshift"
    r = run("report", H200 / f"{name}.log", H200 / f"{name}.smi.csv", "--format", "json")
    assert r.exit_code == 0, r.output
    e = json.loads(r.output)["headline"][f"{name}.log"]["energy"]
    for k in ("total_j", "idle_j", "clock_offset_s", "clock_offset_source"):
        assert k in e
    assert e["clock_offset_source"] == "estimated"
    assert abs(e["clock_offset_s"] - TRUE_START[name]) < 1.0
    assert e["requests_j"] + e["idle_j"] == pytest.approx(e["total_j"], abs=0.02)
    r = run("report", H200 / f"{name}.log", "--format", "json")
    assert json.loads(r.output)["headline"][f"{name}.log"]["energy"] is None
    r = run("report", H200 / f"{name}.log", H200 / f"{name}.smi.csv",
            "--start-time", TRUE_START[name])
    assert "energy:" in r.output and "clock: --start-time" in r.output


def test_compare_adds_power_rows():
    a, b = "generated-gpu-pressure-np4-ctxshift", "generated-gpu-colors-tty"
    r = run("compare", H200 / f"{a}.log", H200 / f"{b}.log", H200 / f"{a}.smi.csv",
            H200 / f"{b}.smi.csv", "--format", "json")
    assert r.exit_code == 0, r.output
    j = json.loads(r.stdout)
    rows = {row["metric"]: row for row in j["rows"]}
    for m in ("power limit W", "mean power W (requests in progress)", "decode mJ/token",
              "prefill mJ/token", "decode t/s per W"):
        assert m in rows, sorted(rows)
        assert any(k.startswith("% ") for k in rows[m])
    # the verdict's energy per token is each log's own, as report gives it for the log alone
    e = {v["question"]: v for v in j["verdict"]}["energy_per_token"]
    for side, name in (("a", a), ("b", b)):
        alone = json.loads(run("report", H200 / f"{name}.log", H200 / f"{name}.smi.csv",
                               "--format", "json").stdout)
        mj = alone["headline"][f"{name}.log"]["energy"]["decode_mj_per_token"]
        assert 1000 * e[side] == pytest.approx(mj, rel=0.02)


def test_plot_power_and_card(tmp_path):
    name = "generated-gpu-colors-tty"
    out = tmp_path / "power.png"
    r = run("plot", "power", H200 / f"{name}.log", H200 / f"{name}.dmon.txt", "-o", out)
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 10_000
    r = run("plot", "power", H200 / f"{name}.log", "-o", out)
    assert r.exit_code == 1 and "no GPU telemetry" in r.output
    from logscope.outputs.plots import card
    logs = read_with_telemetry([str(H200 / f"{name}.log"), str(H200 / f"{name}.smi.csv")])
    fig = card(logs)
    assert any("mJ/t" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_formats_and_explain():
    r = run("formats", "--engine", "nvidia-smi")
    assert r.exit_code == 0
    for kind in ("smi_header", "smi_row", "dmon_header", "dmon_units", "dmon_row"):
        assert kind in r.output
    assert "nvidia-smi" in run("formats").output
    r = run("explain", f"{H200 / 'generated-gpu-pressure-np4-ctxshift.smi.csv'}:2")
    assert r.exit_code == 0 and "smi_row" in r.output and "power_w" in r.output


def test_live_power_counts_energy_by_phase(tmp_path):
    from prometheus_client import CollectorRegistry, generate_latest

    from logscope.telemetry.live import LivePower

    src = (H200 / "generated-gpu-pressure-np4-ctxshift.smi.csv").read_text().splitlines(True)
    f = tmp_path / "gpu.csv"
    f.write_text("".join(src[:3]))
    reg = CollectorRegistry()
    lp = LivePower(str(f), reg, from_start=True)
    assert lp.poll() == 2
    lp.observe({"kind": "task_launch", "slot": 0})
    with open(f, "a") as out:
        out.write("".join(src[3:10]) + src[10][:20])  # a partial last line waits
    assert lp.poll() == 7
    lp.observe({"kind": "decode_progress", "slot": 0})
    with open(f, "a") as out:
        out.write(src[10][20:])
    assert lp.poll() == 1
    text = generate_latest(reg).decode()
    assert 'logscope_gpu_power_watts{gpu="0"}' in text
    assert 'logscope_energy_joules_total{phase="prefill"}' in text
    assert 'logscope_energy_joules_total{phase="decode"}' in text
    assert lp.energy["idle"] > 0 and lp.energy["prefill"] > 0 and lp.energy["decode"] > 0


def test_logscope_read_unchanged_without_telemetry():
    from logscope.ingest import read as read_logs

    log = str(H200 / "generated-gpu-colors-tty.log")
    assert set(logscope.read(log).tables) == set(read_logs(log).tables)
    both = logscope.read([log, str(H200 / "generated-gpu-colors-tty.smi.csv")])
    assert {"gpu_samples", "energy_runs"} <= set(both.tables)
    assert both["requests"]["energy_j"].null_count() == 0


def test_clock_found_in_hours_of_idle_telemetry():
    """Two hours of idle samples before the run: the same offset, found in a few seconds."""
    from datetime import timedelta

    name = "generated-gpu-pressure-np4-ctxshift"
    s = read_samples(str(H200 / f"{name}.smi.csv"))
    first = s["ts"].min()
    pad = pl.DataFrame({"ts": pl.datetime_range(
        first - timedelta(hours=2), first - timedelta(seconds=0.5), timedelta(milliseconds=500),
        eager=True, time_zone="UTC")}).with_columns(
        pl.lit(0).alias("gpu"), pl.lit(79.0).alias("power_w"), pl.lit(0).alias("util_gpu_pct"),
        pl.lit("nvidia-smi-query").alias("source"))
    big = pl.concat([pad, s], how="diagonal_relaxed").select(s.columns).cast(s.schema)
    logs = attach(logscope.read(str(H200 / f"{name}.log")), big.sort("gpu", "ts"))
    assert abs(logs["energy_runs"]["clock_offset_s"].item() - TRUE_START[name]) < 1.0
