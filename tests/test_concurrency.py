"""Concurrency states, defined once (logscope.analysis.concurrency) and used everywhere."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import logscope
from logscope.analysis.concurrency import (
    STATES,
    _others_max,
    concurrency,
    decode_samples,
    request_concurrency,
    run_spans,
    states,
    timeline,
)
from logscope.ingest import NoServerLines
from tests.conftest import CORPUS, FIXTURES

SHARED = CORPUS.parent.parent.parent.parent / "shared" / "corpus"
RUNS = sorted(CORPUS.glob("*.log")) + sorted((FIXTURES / "llama-server" / "h200").glob("*.log")) \
    + sorted(SHARED.glob("*.log"))


@pytest.mark.parametrize("log", RUNS, ids=lambda p: p.name)
def test_alone_row_median_request_is_the_median_of_requests_that_ran_alone(log):
    logs = logscope.read(str(log))
    rc = request_concurrency(logs)
    alone = rc.filter(pl.col("alone"), pl.col("gen_tokens") >= 16)["decode_tps"]
    row = concurrency(logs).filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)
    if alone.len() < 3:
        pytest.skip("fewer than 3 requests decoded alone")
    assert row["median_request_tps"][0] == pytest.approx(alone.median(), rel=1e-9)
    # one stream decoding: its speed is the aggregate, the same tokens over the same seconds
    assert row["per_stream_tps"][0] == pytest.approx(row["aggregate_tps"][0], rel=1e-9)


ALL_LOGS = sorted(p for p in FIXTURES.rglob("*.log")) + sorted(SHARED.glob("*.log"))


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_states_add_up(log):
    """The states' seconds add up to each run's span, their tokens to the tokens generated,
    and per stream × k = aggregate = tokens ÷ seconds in every state."""
    try:
        logs = logscope.read(str(log))
    except NoServerLines:
        pytest.skip("no server lines")
    st = states(logs)
    if st.height == 0:
        pytest.skip("no state: no request timing or window line")
    assert st["seconds"].min() >= 0 and st["tokens"].min() >= -1e-9
    assert set(st["state"].unique()) <= set(STATES)
    assert st.filter(pl.col("state") != "decode")["tokens"].abs().sum() < 1e-6
    s = decode_samples(logs)
    assert st["tokens"].sum() == pytest.approx(s["tokens"].sum(), rel=1e-9, abs=1e-6)
    if st["t0"].null_count() == 0:            # llama-server: timed segments tile each run
        spans = run_spans(logs)
        for (file, run), g in st.group_by(["file", "run"]):
            g = g.sort("t0")
            assert ((g["t0"][1:] - g["t1"][:-1]).abs().max() or 0) < 1e-9   # tiled: no gap
            lo, hi = spans.get((file, run), (g["t0"][0], g["t1"][-1]))
            assert g["t0"][0] <= lo + 1e-9 and g["t1"][-1] >= hi - 1e-9
            assert g["seconds"].sum() == pytest.approx(g["t1"][-1] - g["t0"][0], rel=1e-9)
        req = logs.get("requests")
        # a router's children reuse slot and task ids: each child is a run of its own
        assert not req.select(pl.struct("file", "run", "slot", "task").is_duplicated().any()
                              ).item()
        done = req.filter(pl.col("decode_ms").is_not_null(), pl.col("gen_tokens") > 0) \
            .select(pl.col("file").cast(pl.String), pl.col("run").cast(pl.Int32), "slot",
                    "task", "gen_tokens")
        got = s.group_by("file", "run", "slot", "task").agg(pl.col("tokens").sum()).join(
            done, on=["file", "run", "slot", "task"])
        # a completed request's pieces hold its generated tokens (those that decoded in a state)
        assert ((got["tokens"] - got["gen_tokens"]).abs().max() or 0) < 1e-6
    c = concurrency(logs)
    if c.height:
        assert (c["per_stream_tps"] * c["decoding"] - c["aggregate_tps"]).abs().max() < 1e-6
        assert (c["aggregate_tps"] - c["tokens"] / c["seconds"]).abs().max() < 1e-6
        dec = st.filter(pl.col("state") == "decode")
        assert c["seconds"].sum() == pytest.approx(dec["seconds"].sum(), rel=1e-9)
        assert c["tokens"].sum() == pytest.approx(st["tokens"].sum(), rel=1e-9, abs=1e-6)


def test_a_blocked_loop_is_a_stall_and_holds_no_tokens(tmp_path):
    """A slot selected while another decodes: the loop saves the prompt cache until the task
    launches; that time is a stall for every slot, and the decoding request's tokens fall
    outside it."""
    ev = _request(0, 1, 0.0, 500, 500.0, 1000, 10000.0)     # decodes 0.5-10.5 s
    ev += _request(1, 2, 6.0, 100, 100.0, 100, 1000.0)      # launched at 6.0
    ev.append((4.0, "slot get_availabl: id  1 | task -1 | selected slot by LRU, t_last = -1"))
    lines = [_line(t, part) for t, text in sorted(ev, key=lambda e: e[0])
             for part in text.split("\n") if part]
    p = tmp_path / "blocked.log"
    p.write_text("\n".join(lines) + "\n")
    logs = logscope.read(str(p))
    st = states(logs)
    stall = st.filter(pl.col("state") == "stall")
    assert stall["seconds"].sum() == pytest.approx(2.0, abs=0.01)     # 4.0-6.0 blocked
    assert stall["tokens"].sum() == pytest.approx(0.0, abs=1e-9)
    alone = concurrency(logs).filter(pl.col("decoding") == 1, pl.col("prefilling") == 0)
    # 1000 tokens over 10 s of eval time of which 2 s blocked: 125 t/s while it decoded
    assert alone["per_stream_tps"][0] == pytest.approx(125.0, rel=0.01)
    assert alone["median_request_tps"][0] is None or alone["median_request_tps"][0] < 101


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


def test_a_routers_children_are_servers_of_their_own():
    """Two children behind a router, each with 2 slots and its own clock: no state holds more
    streams than a child has slots, and each child's requests decode in its own run."""
    log = FIXTURES / "llama-server" / "router-d-b9151-b9229-two-children.log"
    logs = logscope.read(str(log))
    req = logs.get("requests")
    runs = req.group_by("router_port").agg(pl.col("run").unique())
    assert runs.height == 2 and runs["run"].list.len().max() == 1
    assert runs["run"].list.first().n_unique() == 2 and runs["run"].list.first().min() > 1
    c = concurrency(logs)
    assert c["decoding"].max() <= 2
    assert states(logs)["tokens"].sum() == pytest.approx(req["gen_tokens"].sum(), rel=1e-9)


def _others_max_one_by_one(starts, ends):
    """Per request, the straightforward reading: the events of the run in order (an end
    before a start at the same instant), the in-progress count just after each event from
    the request's start to its end, its maximum less the request itself."""
    ev = sorted([(x, 1) for x in starts] + [(y, -1) for y in ends])
    times = np.array([t for t, _ in ev])
    level = np.cumsum([d for _, d in ev])
    out = []
    for x, y in zip(starts, ends, strict=True):
        lo, hi = np.searchsorted(times, x, "left"), np.searchsorted(times, y, "left")
        out.append(max((int(level[lo:hi].max()) if hi > lo else 1) - 1, 0))
    return out


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10)), min_size=1, max_size=12))
@settings(max_examples=300, deadline=None)
def test_others_in_progress_by_one_sweep_equal_the_search_per_request(reqs):
    """The sorted sweep that replaced two searches per request gives the same count per
    request (ties at an instant included: ends first; a request of no length)."""
    starts = np.array([float(s) for s, _ in reqs])
    ends = np.array([float(s + d) for s, d in reqs])
    assert _others_max(starts, ends).tolist() == _others_max_one_by_one(starts, ends)
