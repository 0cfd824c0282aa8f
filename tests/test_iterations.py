"""vLLM's step lines (``--enable-logging-iteration-details``): per-stream decode per count of
streams, prefill, and the report's lines, on logs rendered from the format string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import logscope
from logscope.analysis.iterations import iteration_decode, iteration_prefill, iteration_steps
from logscope.cli import cli

HEAD = "(EngineCore_DP0 pid=96) INFO 04-09 18:{m:02d}:{s:02d} [core.py:421] Engine 000: "


def _step(i: int, ctx: int, ctx_tok: int, gen: int, gen_tok: int, ms: float,
          dummy: bool = False) -> str:
    m, s = divmod(i // 20, 60)
    return (HEAD.format(m=m, s=s) + f"Iteration({i}): {ctx} context requests, {ctx_tok} context "
            f"tokens, {gen} generation requests, {gen_tok} generation tokens, iteration elapsed "
            f"time: {ms:.2f} ms{' (dummy)' if dummy else ''}, GPU KV cache usage: 10.0%")


def _log(tmp_path, per_req: int = 1, spec: str | None = None) -> str:
    """k = 1..4 decoding at (10 + 2k) ms a step, prompts of 2048 tokens at 100 ms alone and
    1024 tokens beside 2 streams at 14 + 50 ms; a dummy step that must be left out."""
    lines, i = [], 0
    for k in (1, 2, 3, 4):
        for _ in range(50):
            lines.append(_step(i, 0, 0, k, k * per_req, 10 + 2 * k))
            i += 1
    for _ in range(5):
        lines.append(_step(i, 1, 2048, 0, 0, 100.0))
        i += 1
        lines.append(_step(i, 1, 1024, 2, 2 * per_req, 64.0))
        i += 1
    lines.append(_step(i, 0, 0, 0, 0, 4.87, dummy=True))
    if spec:
        lines.append(spec)
    p = tmp_path / "steps.log"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_steps_give_the_step_time_per_count_of_streams(tmp_path):
    logs = logscope.read(_log(tmp_path))
    st = iteration_steps(logs)
    assert st.height == 210 and set(st["phase"]) == {"decode", "prefill", "mixed"}
    d = iteration_decode(logs)
    assert d["decoding"].to_list() == [1, 2, 3, 4]
    for k, per, agg in d.select("decoding", "per_stream_tps", "aggregate_tps").iter_rows():
        assert per == pytest.approx(1000 / (10 + 2 * k))
        assert agg == pytest.approx(k * per)
    assert set(d["exactness"]) == {"exact per step"}
    p = {r["phase"]: r for r in iteration_prefill(logs).to_dicts()}
    assert p["prefill"]["tps"] == pytest.approx(2048 / 0.1)
    assert p["mixed"]["tps"] == pytest.approx(1024 / 0.05)   # 64 ms less 14 ms of decode


def test_drafts_take_the_mean_accepted_length(tmp_path):
    spec = ("(APIServer pid=1) INFO 04-09 18:00:20 [metrics.py:120] SpecDecoding metrics: Mean "
            "acceptance length: 2.00, Accepted throughput: 10.00 tokens/s, Drafted throughput: "
            "30.00 tokens/s, Accepted: 100 tokens, Drafted: 300 tokens, Per-position acceptance "
            "rate: 0.500, 0.300, 0.200, Avg Draft acceptance rate: 33.3%")
    logs = logscope.read(_log(tmp_path, per_req=4, spec=spec))
    d = iteration_decode(logs)
    one = d.filter(d["decoding"] == 1)
    assert one["per_stream_tps"][0] == pytest.approx(2.0 * 1000 / 12, rel=1e-6)
    assert "mean accepted length" in one["exactness"][0]


def test_report_says_the_step_figures(tmp_path):
    path = _log(tmp_path)
    r = CliRunner().invoke(cli, ["report", path])
    assert r.exit_code == 0, r.output
    assert "decode from vLLM's step lines (exact per step" in r.output
    assert "1 decoding 83.33 t/s per stream" in r.output
    j = CliRunner().invoke(cli, ["report", path, "--format", "json"])
    assert j.exit_code == 0
    heads = json.loads(j.output)["headline"]
    fig = next(iter(heads.values()))["iterations"]
    assert fig["steps"] == 210 and len(fig["decode"]) == 4


def test_compare_reads_the_steps(tmp_path):
    """Two step logs, B's steps 20 % shorter at every count: decode per stream ratio 1.25."""
    from logscope.analysis.verdict import verdict

    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    a = logscope.read(_log(a_dir))
    lines = (b_dir / "steps.log")
    text = _log(b_dir)
    out = []
    for ln in Path(text).read_text().splitlines():
        if "iteration elapsed time: " in ln:
            head, tail = ln.split("iteration elapsed time: ")
            ms, rest = tail.split(" ms", 1)
            ln = f"{head}iteration elapsed time: {float(ms) * 0.8:.2f} ms{rest}"
        out.append(ln)
    lines.write_text("\n".join(out) + "\n")
    b = logscope.read(str(lines))
    row = next(r for r in verdict(a, b, ("a", "b")) if r["question"] == "decode_per_stream")
    assert row["ratio"] == pytest.approx(1.25, rel=1e-3)
    assert row["units"] == "steps" and "step lines" in row["sentence"]
