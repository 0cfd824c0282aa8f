"""``logscope formats`` / ``logscope explain`` and their library functions
(logscope.classify.catalog)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from logscope.classify import catalog
from logscope.classify.grammar import available_engines, load_grammar
from logscope.cli import cli
from tests.conftest import CORPUS

LOG = CORPUS / "generated-ngram-c4k-np1.log"


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_formats_lists_every_variant():
    df = catalog.formats()
    assert df.height == sum(len(load_grammar(e).variants) for e in available_engines())
    assert set(df["engine"]) == set(available_engines())
    row = df.filter(df["variant"] == "slot_select_lcp_b3761").row(0, named=True)
    assert (row["kind"], row["versions"], row["since"], row["until"]) == \
        ("slot_select", "b3761–b4006 (DBG)", "b3761", "b4006")
    open_ended = df.filter(df["variant"] == "task_launch_b3761").row(0, named=True)
    assert open_ended["since"] == "b3761" and open_ended["until"] is None
    assert (df["versions"] != "").all()  # every variant documents its versions


@pytest.mark.parametrize("doc,bounds", [
    ("b3761–b4006 (DBG)", ("b3761", "b4006")),
    ("b10178+", ("b10178", None)),
    ("≤ b1412 (era A)", (None, "b1412")),
    ("0.4.4–0.4.5, 0.4.9.post6–0.5.3.post3", ("0.4.4", "0.5.3.post3")),
    ("0.4.7–now", ("0.4.7", None)),
    ("0.1.17", ("0.1.17", "0.1.17")),
    ("all", (None, None)),
])
def test_version_bounds(doc, bounds):
    assert catalog.version_bounds(doc) == bounds


def test_formats_cli_engine_filter():
    r = run("formats", "--engine", "llama-server")
    assert r.exit_code == 0, r.output
    body = r.stdout.splitlines()
    assert body[0].split()[:4] == ["ENGINE", "KIND", "VARIANT", "VERSIONS"]
    assert all(line.startswith("llama-server") for line in body[1:])
    assert any("prompt_eval_b9230" in line and "b9230+" in line for line in body)
    out = run("formats", "--json", "--kind", "retract").stdout
    rows = [json.loads(x) for x in out.splitlines()]
    assert rows and {r["engine"] for r in rows} == {"sglang"}


def test_explain_event_line():
    lines = LOG.read_text().splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "prompt eval time" in line)
    r = catalog.explain(str(LOG), n)
    assert r["class"] == "event" and r["kind"] == "prompt_eval" and r["engine"] == "llama-server"
    assert r["variant"] == "prompt_eval_b9230" and r["format"].startswith("b9230+")
    assert r["fields"]["prompt_tokens"] == 11 and r["fields"]["prompt_ms"] == 17.53
    out = run("explain", f"{LOG}:{n}")
    assert out.exit_code == 0 and "prompt_eval" in out.stdout and "prompt_tokens" in out.stdout


def test_explain_unrecognized_line_gives_lark_diagnostic(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("2024-05-01T10:00:00Z slot print_timing: id  0 | task 7 | prompt eval time ="
                 "      17.53 ms /    11 tokenz (    1.59 ms per token,   627.50 tokens per "
                 "second)\n"
                 "hello\n"
                 "2024-05-01T10:00:01Z slot launch_slot_: id  0 | task 7 | processing tasx\n")
    r = catalog.explain(str(p), 1)
    assert r["prefix"] == "2024-05-01T10:00:00Z "
    assert r["envelope"]["wrap_ts"] == "2024-05-01T10:00:00.000000Z"
    assert r["class"] == "unrecognized" and r["engine"] == "llama-server"
    assert "benchmark figure" in r["why"]
    d = r["diagnostics"]["llama-server"]
    assert d["column"] == 77  # in the message, past the docker timestamp
    out = run("explain", f"{p}:1")
    assert out.exit_code == 0 and "UNRECOGNIZED" in out.stdout and "column 77" in out.stdout
    none = catalog.explain(str(p), 2)
    assert none["class"] == "none" and set(none["diagnostics"]) == set(available_engines())
    js = json.loads(run("explain", "--json", f"{p}:2").stdout)
    assert js["class"] == "none"
    # a slot line with no known format and no figure: counted as other, no alarm
    other = catalog.explain(str(p), 3)
    assert other["class"] == "other" and "no alarm" in other["why"]


def test_explain_agrees_with_ingest(corpus_logs):
    import logscope

    log = corpus_logs[0]
    rows = logscope.read(str(log))["lines_classified"].head(300)
    for line, cls, kind, variant in rows.select("line", "class", "kind", "variant").iter_rows():
        r = catalog.explain(str(log), line)
        assert (r["class"], r["kind"], r["variant"]) == (cls, kind, variant), line


def test_explain_bad_location(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("a\n")
    r = run("explain", f"{p}:5")
    assert r.exit_code == 2 and "no line 5 (the file has 1)" in r.stderr
    r = run("explain", str(p))
    assert r.exit_code == 2 and "expected LOG:LINE" in r.stderr


def test_drift_groups_by_shape(tmp_path):
    import polars as pl

    from logscope.classify.drift import group_unrecognized, shape_of

    assert shape_of("id  3 | task 1207 | t=0.25 ptr 0x7ffe12ab b4321 -1.5e-3") == \
        "id N | task N | t=N ptr H bN -N"
    df = pl.DataFrame({"file": ["a", "a", "b", "a"], "line": [1, 5, 2, 9],
                       "text": ["foo 1 x", "foo 22 x", "bar", "foo 3.5 x"],
                       "engine_guess": ["llama-server"] * 4,
                       "diagnostic": [None, "column 5: x", None, None]})
    g = group_unrecognized(df)
    assert g["shape"].to_list() == ["foo N x", "bar"]
    assert g["count"].to_list() == [3, 1]
    top = g.row(0, named=True)
    assert (top["example"], top["example_file"], top["example_line"], top["files"]) == \
        ("foo 1 x", "a", 1, 1)
    assert top["diagnostic"] == "column 5: x"
    assert group_unrecognized(df.clear()).height == 0


def test_summary_shows_drift_groups(tmp_path):
    p = tmp_path / "d.log"
    extra = ("0.11.000.000 I slot print_timing: id  0 | task 9 | n_gen = 12, tg = 30.5 t/s v2\n"
             "0.11.000.001 I slot print_timing: id  1 | task 19 | n_gen = 40, tg = 31.5 t/s v2\n"
             "0.11.000.002 I slot launch_slot_: id  1 | task 19 | processing tasks v2\n")
    p.write_text(LOG.read_text() + extra)
    r = run("ingest", str(p))
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("!! 2 line(s)")
    shape = "N I slot print_timing: id N | task N | n_gen = N, tg = N t/s vN"
    assert f"2 × llama-server: {shape}" in lines[1]
    assert "e.g." in lines[2] and "tg = 30.5 t/s v2" in lines[2]
    # the slot line with no figure is no alarm: counted as other
    assert "1 other" in r.stdout


def test_explain_glued_vllm_records(tmp_path):
    from logscope.input import frontend

    if not hasattr(frontend, "split_records"):
        pytest.skip("the front end does not split glued records")
    p = tmp_path / "g.log"
    stats = ("INFO 05-06 07:08:09 metrics.py:341] Avg prompt throughput: 12.3 tokens/s, Avg "
             "generation throughput: 45.6 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 "
             "reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.")
    bar = "Processed prompts:  37%|███▋      | 37/100 [00:11<00:17,  3.56it/s]"
    p.write_text(bar + stats + "\n")
    r = catalog.explain(str(p), 1)
    assert len(r["records"]) == 2
    assert r["records"][1]["kind"] == "engine_stats" and r["records"][1]["engine"] == "vllm"
    out = run("explain", f"{p}:1")
    assert out.exit_code == 0 and "2 records on this line" in out.stdout
