"""Telemetry per log: each log joined to its own telemetry (LOG=CSV, time overlap, order), each
clock placed alone, a weak clock fit refused with one line; ``--start-time`` as ISO 8601 or
Unix seconds in every command, once per log; ``sql`` has report's energy columns;
``energy_per_token`` (the verdict's energy question) agrees between compare and report."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.energy import energy_per_token
from logscope.cli import cli
from logscope.cli._common import read_each
from logscope.engines.clock import parse_start_time
from logscope.telemetry import read_samples
from logscope.telemetry.pairing import PairingError, pair, recordings, split_pair
from tests.conftest import FIXTURES

H200 = FIXTURES / "telemetry" / "h200"
P, C = "generated-gpu-pressure-np4-ctxshift", "generated-gpu-colors-tty"
TRUE_START = {P: 1796156563.556, C: 1796156542.805}  # /proc start: ../shared/corpus/README.md


def f(name: str, ext: str) -> str:
    return str(H200 / f"{name}{ext}")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def report_energy(name: str, *extra) -> dict:
    r = run("report", f(name, ".log"), f(name, ".smi.csv"), *extra, "--format", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["headline"][f"{name}.log"]["energy"]


# -- pairing -----------------------------------------------------------------------------------

def test_compare_with_two_telemetry_files_gives_each_log_its_own_energy():
    """The defect: both CSVs pooled, each log's clock estimated against both; now by order,
    each alone, and the energy per token of each log equals report's of that log alone."""
    r = run("compare", f(P, ".log"), f(C, ".log"), f(P, ".smi.csv"), f(C, ".smi.csv"),
            "--format", "json")
    assert r.exit_code == 0, r.output
    line = [x for x in r.stderr.splitlines() if x.startswith("telemetry paired")]
    assert len(line) == 1 and "by order" in line[0], r.stderr
    assert f"{P}.log ← {P}.smi.csv" in line[0] and f"{C}.log ← {C}.smi.csv" in line[0]
    rows = {row["metric"]: row for row in json.loads(r.stdout)["rows"]}
    for name in (P, C):
        alone = report_energy(name)
        for metric, key in (("prefill mJ/token", "prefill_mj_per_token"),
                            ("decode mJ/token", "decode_mj_per_token"),
                            ("decode t/s per W", "decode_tps_per_w")):
            got = rows[metric][f"{name}.log"]
            assert got == pytest.approx(alone[key], rel=0.02), (name, metric)


def test_energy_per_token_from_compare_equals_report_alone_within_2_percent():
    """The verdict's energy question reads energy_per_token: the frames compare reads (two
    logs, two telemetry files) give each log what report gives it alone."""
    ctx = cli.make_context("compare", [f(P, ".log"), f(C, ".log"), f(P, ".smi.csv"),
                                       f(C, ".smi.csv")])
    with ctx:
        from logscope.cli._telemetry import split_telemetry

        logs = split_telemetry((f(P, ".log"), f(C, ".log"), f(P, ".smi.csv"), f(C, ".smi.csv")))
        frames = read_each(logs)
    for name, frame in zip((P, C), frames, strict=True):
        got = energy_per_token(frame)
        alone = energy_per_token(logscope.read([f(name, ".log"), f(name, ".smi.csv")]))
        assert set(got) == {"prefill_j_per_token", "decode_j_per_token", "decode_tps_per_w", "n"}
        assert got["n"] == alone["n"] > 0 and isinstance(got["n"], int)
        for k in ("prefill_j_per_token", "decode_j_per_token", "decode_tps_per_w"):
            assert got[k] == pytest.approx(alone[k], rel=0.02), (name, k)
        e = report_energy(name)
        assert 1e3 * got["decode_j_per_token"] == pytest.approx(e["decode_mj_per_token"],
                                                                rel=0.02)
    empty = energy_per_token(logscope.read(f(C, ".log")))
    assert empty == {"prefill_j_per_token": None, "decode_j_per_token": None,
                     "decode_tps_per_w": None, "n": 0}


def test_telemetry_of_another_run_is_refused_with_one_line_naming_the_log():
    """The files given in the wrong order: the pressure log against the colors telemetry
    (r 0.40, 11 % covered) is an error that names the log and asks for --start-time."""
    r = run("compare", f(P, ".log"), f(C, ".log"), f(C, ".smi.csv"), f(P, ".smi.csv"))
    assert r.exit_code == 1
    err = [x for x in r.stderr.splitlines() if x.startswith("Error:")]
    assert len(err) == 1 and "Traceback" not in r.output
    assert f"{P}.log" in err[0] and "--start-time" in err[0] and "inside the telemetry" in err[0]
    # report of one log with the other run's telemetry: the same refusal, not a number
    r = run("report", f(C, ".log"), f(P, ".dmon.txt"))
    assert r.exit_code == 1 and f"{C}.log" in r.stderr and "--start-time" in r.stderr
    assert "energy" not in r.stdout


def test_explicit_pairs_and_recordings():
    """LOG=CSV pairs whatever the order; a CSV and a dmon of one run are one recording."""
    r = run("compare", f"{f(C, '.log')}={f(C, '.smi.csv')}",
            f"{f(P, '.log')}={f(P, '.smi.csv')}", "--format", "json")
    assert r.exit_code == 0, r.output
    assert "telemetry paired as LOG=CSV" in r.stderr
    rows = {row["metric"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["decode mJ/token"][f"{C}.log"] == pytest.approx(
        report_energy(C)["decode_mj_per_token"], rel=0.02)
    assert split_pair("a.log=b.log") is None  # right side not telemetry: an ordinary argument
    files = [f(P, ".smi.csv"), f(C, ".dmon.txt"), f(P, ".dmon.txt"), f(C, ".smi.csv")]
    samples = {p: read_samples([p]) for p in files}
    assert recordings(files, samples) == [[files[0], files[2]], [files[1], files[3]]]
    r = run("compare", f(P, ".log"), f(C, ".log"), *files)
    assert r.exit_code == 0, r.output
    assert "by order" in r.stderr
    got, how = pair(["a", "b", "c"], [f(P, ".smi.csv")])
    assert all(g is got[0] for g in got) and "shared" in how
    with pytest.raises(PairingError, match="LOG=CSV"):
        pair(["a", "b", "c"], [f(P, ".smi.csv"), f(C, ".smi.csv")])


def test_time_overlap_pairs_logs_whose_clock_is_known():
    """With --start-time for each log the clocks are known: each log takes the telemetry that
    overlaps its time, whatever the order of the files."""
    r = run("compare", f(P, ".log"), f(C, ".log"), f(C, ".smi.csv"), f(P, ".smi.csv"),
            "--start-time", iso(TRUE_START[P]), "--start-time", str(TRUE_START[C]),
            "--format", "json")
    assert r.exit_code == 0, r.output
    assert "by time overlap" in r.stderr and f"{P}.log ← {P}.smi.csv" in r.stderr
    rows = {row["metric"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["decode mJ/token"][f"{P}.log"] == pytest.approx(
        report_energy(P)["decode_mj_per_token"], rel=0.02)


# -- the clock fit ----------------------------------------------------------------------------

@pytest.mark.parametrize("log,tele,right", [
    (P, P, True), (C, C, True), (P, C, False), (C, P, False)])
def test_placement_separates_right_from_wrong_telemetry(log, tele, right):
    from logscope.telemetry.energy import Power, signals_of, stretches, work_segments
    from logscope.telemetry.placement import Work, place, refusal

    lg = logscope.read(f(log, ".log"))
    work = Work(work_segments(stretches(lg["requests"])))
    fit = place(work, signals_of(Power(read_samples([f(tele, ".smi.csv")]))))
    assert (refusal(fit) is None) == right, fit
    if right:
        assert abs(fit["offset_s"] - TRUE_START[log]) < 0.5 and fit["spread_s"] < 10


def test_two_equal_placements_are_refused_naming_both():
    from logscope.telemetry.placement import refusal

    why = refusal({"score": 0.8, "separation": 1.0, "coverage": 1.0,
                   "spread_s": 0.4, "offset_s": 1796156563.6, "runner_up_s": 1796156593.6,
                   "runner_up_score": 0.77, "runner_up_vs": 0.8})
    assert "equally well" in why and "2026-12-01T" in why and why.count("server start") == 1
    assert "2026-12-01T20:22:43.6Z" in why and "2026-12-01T20:23:13.6Z" in why
    assert refusal({"score": 0.8, "separation": 1.0, "coverage": 1.0,
                    "spread_s": 0.4, "offset_s": 1796156563.6, "runner_up_s": 1796156593.6,
                    "runner_up_score": 0.6, "runner_up_vs": 0.8}) is None


def test_pooled_recording_still_places_the_short_run():
    """One telemetry file that also recorded another run: the fit is judged on the log's own
    span, so the short colors run is placed (0.02 s) though the whole-file score is 0.14."""
    both = pl.concat([read_samples([f(P, ".smi.csv")]), read_samples([f(C, ".smi.csv")])])
    from logscope.telemetry.energy import attach

    lg = attach(logscope.read(f(C, ".log")), both)
    row = lg["energy_runs"].row(0, named=True)
    assert row["clock_offset_source"] == "estimated"
    assert abs(row["clock_offset_s"] - TRUE_START[C]) < 0.5 and row["clock_fit_r"] > 0.8


# -- --start-time -------------------------------------------------------------------------------

def test_start_time_parser():
    assert parse_start_time("2026-12-01T20:25:06Z") == 1796156706.0
    assert parse_start_time("2026-12-01T21:25:06+01:00") == 1796156706.0
    assert parse_start_time("1796156706.5") == 1796156706.5
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_start_time("yesterday")


@pytest.mark.parametrize("cmd", ["report", "compare", "card", "plot", "sql", "ingest"])
def test_every_command_takes_an_iso_start_time(cmd, tmp_path):
    t = iso(TRUE_START[C])
    log, tele = f(C, ".log"), f(C, ".smi.csv")
    args = {"report": ["report", log, tele, "--start-time", t, "--format", "json"],
            "compare": ["compare", log, f(P, ".log"), tele, f(P, ".smi.csv"),
                        "--start-time", t, "--start-time", iso(TRUE_START[P])],
            "card": ["card", log, "--telemetry", tele, "--start-time", t,
                     "-o", tmp_path / "c.png"],
            "plot": ["plot", "power", log, tele, "--start-time", t, "-o", tmp_path / "p.png"],
            "sql": ["sql", "SELECT clock_offset_s, clock_offset_source FROM energy_runs",
                    log, tele, "--start-time", t, "--format", "json"],
            "ingest": ["ingest", log, tele, "--start-time", t, "--json"]}[cmd]
    r = run(*args)
    assert r.exit_code == 0, r.output
    assert "not a valid float" not in r.output
    if cmd == "report":
        e = json.loads(r.stdout)["headline"][f"{C}.log"]["energy"]
        assert e["clock_offset_source"] == "given"
        assert e["clock_offset_s"] == pytest.approx(TRUE_START[C], abs=0.01)
    if cmd == "sql":
        (row,) = json.loads(r.stdout)
        assert row["clock_offset_source"] == "given"
        assert row["clock_offset_s"] == pytest.approx(TRUE_START[C], abs=0.01)
    bad = run(*[a if a != t else "yesterday" for a in args])
    assert bad.exit_code == 2 and "ISO 8601" in bad.output and "not a valid float" not in \
        bad.output


def test_start_time_count_must_match_the_logs():
    r = run("compare", f(P, ".log"), f(C, ".log"), f(P, ".smi.csv"), f(C, ".smi.csv"),
            "--start-time", "1", "--start-time", "2", "--start-time", "3")
    assert r.exit_code == 2 and "3 times for 2 LOG(s)" in r.output


# -- sql -----------------------------------------------------------------------------------

def test_sql_has_the_energy_columns_of_report():
    pytest.importorskip("duckdb")
    for name in (P, C):
        r = run("sql", "SELECT sum(energy_j) AS e, sum(decode_energy_j) AS d, "
                "sum(gen_tokens) FILTER (WHERE decode_energy_j IS NOT NULL) AS g FROM requests",
                f(name, ".log"), f(name, ".smi.csv"), "--format", "json")
        assert r.exit_code == 0, r.output
        (row,) = json.loads(r.stdout)
        e = report_energy(name)
        assert row["e"] == pytest.approx(e["requests_j"], rel=1e-6)
        assert 1e3 * row["d"] / row["g"] == pytest.approx(e["decode_mj_per_token"], rel=1e-3)
    # two logs, two files: each file its own telemetry, as in compare
    r = run("sql", "SELECT file, sum(decode_energy_j) / sum(gen_tokens) * 1000 AS mj FROM "
            "requests WHERE decode_energy_j IS NOT NULL GROUP BY file ORDER BY file",
            f(P, ".log"), f(C, ".log"), f(P, ".smi.csv"), f(C, ".smi.csv"), "--format", "json")
    assert r.exit_code == 0, r.output
    assert "by order" in r.stderr
    got = {row["file"].rsplit("/", 1)[-1]: row["mj"] for row in json.loads(r.stdout)}
    for name in (P, C):
        assert got[f"{name}.log"] == pytest.approx(report_energy(name)["decode_mj_per_token"],
                                                   rel=0.02)
    # without telemetry the columns are there, null (as report's requests)
    r = run("sql", "SELECT count(energy_j) AS n FROM requests", f(C, ".log"), "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == [{"n": 0}]


def test_one_recording_of_the_whole_session_is_shared(tmp_path):
    """One nvidia-smi file that recorded both runs: shared by both logs, each clock placed
    alone against it, each log's energy per token as with its own file."""
    a = (H200 / f"{C}.smi.csv").read_text().splitlines()
    b = (H200 / f"{P}.smi.csv").read_text().splitlines()
    assert a[0] == b[0]
    session = tmp_path / "session.csv"
    session.write_text("\n".join([a[0], *a[1:], *b[1:]]) + "\n")
    r = run("compare", f(P, ".log"), f(C, ".log"), session, "--format", "json")
    assert r.exit_code == 0, r.output
    assert "one recording shared by every log" in r.stderr
    rows = {row["metric"]: row for row in json.loads(r.stdout)["rows"]}
    for name in (P, C):
        assert rows["decode mJ/token"][f"{name}.log"] == pytest.approx(
            report_energy(name)["decode_mj_per_token"], rel=0.02)
