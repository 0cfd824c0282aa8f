"""Concurrency states, defined once (logscope.analysis.concurrency) and used everywhere."""

from __future__ import annotations

import polars as pl
import pytest

import logscope
from logscope.analysis.concurrency import (
    concurrency,
    decode_samples,
    request_concurrency,
    timeline,
)
from tests.conftest import CORPUS, FIXTURES

SHARED = CORPUS.parent.parent.parent.parent / "shared" / "corpus"
RUNS = sorted(CORPUS.glob("*.log")) + sorted((FIXTURES / "llama-server" / "h200").glob("*.log")) \
    + sorted(SHARED.glob("*.log"))


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.name)
def test_alone_row_is_the_median_of_requests_that_ran_alone(log):
    logs = logscope.read(str(log))
    rc = request_concurrency(logs)
    alone = rc.filter(pl.col("alone"), pl.col("gen_tokens") >= 16)["decode_tps"]
    row = concurrency(logs).filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)
    if alone.len() == 0:
        pytest.skip("no request decoded alone")
    assert row["per_stream_tps"][0] == pytest.approx(alone.median(), rel=0.10)


def _slots(logs) -> int | None:
    info = logs.get("server_info")
    if info is None or "n_slots" not in info.columns:
        return None
    v = info["n_slots"].drop_nulls()
    return int(v.max()) if len(v) else None


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.name)
def test_states_never_exceed_the_slots(log):
    logs = logscope.read(str(log))
    n = _slots(logs)
    tl = timeline(logs)
    rc = request_concurrency(logs)
    if n is None or tl.height == 0:
        pytest.skip("no slot count or no timeline")
    assert (tl["decoding"] + tl["prefilling"]).max() <= n
    assert rc["others_max"].max() <= n - 1


def _line(t: float, text: str) -> str:
    m, s = divmod(t, 60)
    sec = int(s)
    frac = int(round((s - sec) * 1e6))
    return f"{int(m)}.{sec:02d}.{frac // 1000:03d}.{frac % 1000:03d} I {text}"


def _request(slot: int, task: int, t0: float, prompt: int, p_ms: float, gen: int,
             d_ms: float) -> list[tuple[float, str]]:
    t_pe = t0 + p_ms / 1000
    t_end = t_pe + d_ms / 1000
    sl = f"slot {{}}: id  {slot} | task {task} | "
    return [
        (t0, "slot launch_slot_: " + sl.format("launch_slot_")[len("slot launch_slot_: "):]
         + "processing task, is_child = 0"),
        (t_end, "slot print_timing: " + sl.format("print_timing")[len("slot print_timing: "):]
         + "\n"),
        (t_end, f"prompt eval time = {p_ms:10.2f} ms / {prompt:5d} tokens ("
         f"{p_ms / prompt:8.2f} ms per token, {prompt / p_ms * 1000:8.2f} tokens per second)"),
        (t_end, f"       eval time = {d_ms:10.2f} ms / {gen:5d} tokens ("
         f"{d_ms / gen:8.2f} ms per token, {gen / d_ms * 1000:8.2f} tokens per second)"),
        (t_end, f"      total time = {p_ms + d_ms:10.2f} ms / {prompt + gen:5d} tokens"),
        (t_end + 0.0001, "slot      release: " + f"id  {slot} | task {task} | stop processing: "
         f"n_tokens = {prompt + gen - 1}, truncated = 0"),
    ]


def _fixture(tmp_path):
    """Two slots: A decodes alone at 100 t/s, then B joins and both decode at 60 t/s."""
    ev = []
    # A: prompt 0.0-0.5, decodes 0.5-10.5 s: alone 0.5-4.5 (400 tokens), shared 4.5-10.5 (360)
    ev += _request(0, 1, 0.0, 500, 500.0, 760, 10000.0)
    # B: prompt 4.0-4.5, decodes 4.5-10.5 shared: 360 tokens
    ev += _request(1, 2, 4.0, 500, 500.0, 360, 6000.0)
    lines = []
    for t, text in sorted(ev, key=lambda e: e[0]):
        for part in text.split("\n"):
            if part:
                lines.append(_line(t, part))
    p = tmp_path / "two-slots.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_two_slots_states_from_request_times(tmp_path):
    logs = logscope.read(str(_fixture(tmp_path)))
    req = logs["requests"]
    assert req.height == 2 and req["decode_ms"].null_count() == 0
    tl = timeline(logs).with_columns(s=pl.col("t1") - pl.col("t0"))
    secs = {(k, j): s for k, j, s in tl.group_by("decoding", "prefilling")
            .agg(pl.col("s").sum()).iter_rows()}
    assert secs[(1, 0)] == pytest.approx(3.5, abs=0.01)     # A alone, 0.5-4.0
    assert secs[(1, 1)] == pytest.approx(0.5, abs=0.01)     # A decodes while B prefills
    assert secs[(2, 0)] == pytest.approx(6.0, abs=0.01)
    c = {(r["decoding"], r["prefilling"]): r for r in concurrency(logs).iter_rows(named=True)}
    # no progress lines: the request's average rate is spread evenly over its decode
    assert c[(2, 0)]["aggregate_tps"] == pytest.approx(76 + 60, rel=0.01)
    s = decode_samples(logs)
    assert s["tokens"].sum() == pytest.approx(760 + 360, rel=1e-6)
    rc = request_concurrency(logs).sort("task")
    assert rc["others_max"].to_list() == [1, 1]
    assert rc["alone"].to_list() == [False, False]
    assert rc["decoding"].to_list() == [2, 2]


def test_window_engine_rows_weigh_time_not_lines():
    logs = logscope.read(str(FIXTURES / "sglang" / "v0.5.3-pd-decode.log"))
    c = concurrency(logs)
    assert c.height and (c["exactness"] == "server window average").all()
    # per stream = throughput ÷ running requests, never the window throughput itself
    s = decode_samples(logs).filter(pl.col("flag").is_null())
    assert (s["tps"] * s["decoding"] * s["seconds"] - s["tokens"]).abs().max() < 1e-6
