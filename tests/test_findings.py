"""Findings: the log's own explanations, each citing the lines it rests on."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.findings import findings, pair_findings
from logscope.analysis.verdict import verdict
from logscope.cli import cli
from tests.conftest import CORPUS, FIXTURES

SKIP = FIXTURES / "llama-server" / "findings" / "prompt-cache-too-small.log"
SHARED = CORPUS.parent.parent.parent.parent / "shared" / "corpus"


def _lines(log) -> list[str]:
    return log.read_text().splitlines()


def test_prompt_cache_smaller_than_the_state_is_a_finding_with_its_line():
    f = {x["rule"]: x for x in findings(logscope.read(str(SKIP)))}
    got = f["prompt_cache_too_small"]
    assert "10,240 MiB" in got["text"] and "8,192 MiB" in got["text"]
    assert got["evidence"] == [f"{SKIP}:7"]
    assert "prompt state size" in _lines(SKIP)[6]
    r = CliRunner().invoke(cli, ["report", str(SKIP), "--format", "json"])
    assert json.loads(r.stdout)["findings"][SKIP.name][0]["rule"] == "prompt_cache_too_small"
    md = CliRunner().invoke(cli, ["report", str(SKIP)]).stdout
    assert "Findings (from the log's own lines)" in md and f"{SKIP}:7" in md


@pytest.mark.parametrize("log", sorted(CORPUS.glob("*.log")), ids=lambda p: p.name)
def test_every_finding_cites_a_line_that_says_it(log):
    lines = _lines(log)
    for f in findings(logscope.read(str(log))):
        assert f["evidence"], f
        for ev in f["evidence"]:
            path, _, n = ev.rpartition(":")
            assert path == str(log) and 1 <= int(n) <= len(lines)


def test_no_finding_without_evidence():
    # a short CPU run: one slot, no cache limit, no shift, no draft, no pressure
    assert findings(logscope.read(str(CORPUS / "seed000-joker-short-task.log"))) == []


def test_sglang_and_vllm_pressure_findings():
    sg = {x["rule"] for x in findings(logscope.read(
        str(FIXTURES / "sglang" / "v0.1.14-new-fill-batch.log")))}
    assert {"retractions", "kv_pressure", "queueing"} <= sg
    vl = {x["rule"] for x in findings(logscope.read(
        str(FIXTURES / "vllm" / "v0.12.0-dp2-aggregated-tty.log")))}
    assert {"preemptions", "kv_pressure", "queueing"} <= vl


def test_a_hybrid_models_pools_give_its_kv_usage_and_depth():
    """A hybrid model prints each pool (``#full token``, ``full token usage``, ``mamba
    usage``) instead of ``#token`` / ``token usage``: the usage is the fullest pool's (SGLang's
    own metric is their max) and the depth is the full pool's tokens."""
    from logscope.analysis.pressure import pressure_summary
    from logscope.analysis.window_fit import state_fit

    log = FIXTURES / "sglang" / "v0.5.11-pending-token-occupancy.log"
    lines = _lines(log)
    assert "mamba usage: 1.00" in lines[23] and ", token usage:" not in lines[23]
    logs = logscope.read(str(log))
    kv = {x["rule"]: x for x in findings(logs)}["kv_pressure"]
    assert "peak 100%" in kv["text"] and f"{log}:24" in kv["evidence"]
    assert pressure_summary(logs)["kv_usage_max"] == pytest.approx(1.0)
    swa = logscope.read(str(FIXTURES / "sglang" / "v0.5.10-swa-est-tflops.log"))
    row = state_fit(swa).row(0, named=True)
    assert row["quiet_kv"] and row["quiet_kv"] > 1000   # the full pool's tokens, not null


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/corpus not present")
def test_draft_below_break_even_from_the_pair():
    a = logscope.read(str(SHARED / "generated-spec-c32k-np2.log"))
    b = logscope.read(str(SHARED / "generated-base-c32k-np2.log"))
    names = ("spec", "base")
    (f,) = pair_findings(a, b, names, verdict(a, b, names))
    assert f["rule"] == "draft_below_break_even" and f["text"].startswith(
        "the draft is below break-even: base, without a draft, decodes 1.")
    # the same log twice: no difference, no finding
    assert pair_findings(a, a, ("x", "y"), verdict(a, a, ("x", "y"))) == []
