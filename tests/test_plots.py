"""Figures draw exactly the analysis frames (read back from the artists), and refuse no data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import logscope
from logscope.analysis._util import NoData
from logscope.analysis.decode import decode_aggregate, decode_requests, decode_windows
from logscope.analysis.prefill import fit_prefill, prefill_curve
from logscope.analysis.pressure import pressure_events
from logscope.analysis.spec import acceptance_requests
from logscope.plots import card, plot_acceptance, plot_decode, plot_prefill_curve, plot_pressure
from tests.conftest import CORPUS

GPU = CORPUS / "generated-gpu-q8kv-c256k-np2.log"
SPEC = CORPUS / "generated-spec-pilot-c32k-np2.log"
SHIFT = CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"


def artists(fig):
    out = {}
    for ax in fig.axes:
        for a in list(ax.collections) + list(ax.lines):
            if a.get_gid():
                out[a.get_gid()] = a
    return out


def offsets(a) -> np.ndarray:
    return np.asarray(a.get_offsets(), dtype=float)


def same_points(a, xs, ys):
    got = sorted(map(tuple, offsets(a).round(6)))
    want = sorted(zip(np.round(xs, 6), np.round(ys, 6), strict=True))
    assert got == want


@pytest.fixture(scope="module")
def gpu():
    return logscope.read(str(GPU))


@pytest.fixture(scope="module")
def spec():
    return logscope.read(str(SPEC))


def test_prefill_plot_draws_the_points_and_the_fit(gpu, spec, tmp_path):
    fig = plot_prefill_curve([gpu, spec], labels=["gpu", "spec"])
    arts = artists(fig)
    for lab, logs in (("gpu", gpu), ("spec", spec)):
        pts = prefill_curve(logs, lab).filter(pl.col("tokens") >= 64)
        for src in ("llama:request", "llama:tick"):
            p = pts.filter(pl.col("source") == src)
            same_points(arts[f"{lab}|{src}"], p["depth"].to_numpy(), p["tps"].to_numpy())
        fit = fit_prefill(pts)
        x, y = arts[f"{lab}|fit"].get_data()
        assert np.allclose(y, 1 / (fit["a"] + fit["b"] * np.asarray(x)))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert "exact per request" in ax.get_title()
    out = tmp_path / "p.png"
    fig.savefig(out)
    assert out.stat().st_size > 10_000
    fig.savefig(tmp_path / "p.svg")


def test_decode_plot_draws_windows_requests_and_aggregate(gpu):
    fig = plot_decode(gpu, labels=["gpu"])
    arts = artists(fig)
    req = decode_requests(gpu, "gpu")
    same_points(arts["gpu|llama:request"], req["depth"].to_numpy(), req["decode_tps"].to_numpy())
    win = decode_windows(gpu, "gpu")
    drawn = np.concatenate([np.asarray(a.get_data()[1], dtype=float)
                            for g, a in arts.items() if "llama:tg_3s" in g])
    assert sorted(drawn[~np.isnan(drawn)]) == sorted(win["tps"].to_list())
    agg = decode_aggregate(gpu, "gpu")
    y = arts["gpu|aggregate"].get_data()[1]
    assert sorted(set(np.asarray(y)[~np.isnan(y)].tolist())) == sorted(set(agg["tps"].to_list()))
    assert any("window" in ax.get_title() for ax in fig.axes)
    assert any("exact per request" in ax.get_title() for ax in fig.axes)


def test_acceptance_plot(spec):
    fig = plot_acceptance(spec, labels=["s"])
    arts = artists(fig)
    r = acceptance_requests(spec, "s")
    same_points(arts["s|llama:request|rate"], r["depth"].to_numpy(), r["rate"].to_numpy())
    same_points(arts["s|llama:request|mean_len"], r["depth"].to_numpy(),
                r["mean_len"].to_numpy())


def test_pressure_plot_marks_context_shift():
    logs = logscope.read(str(SHIFT))
    fig = plot_pressure(logs, labels=["x"])
    arts = artists(fig)
    ev = pressure_events(logs, "x")
    a = arts["x|event|context_shift"]
    assert np.allclose(offsets(a)[:, 0], ev["t"].to_numpy())
    assert "x|running" in arts


def test_no_data_raises(gpu, tmp_path):
    with pytest.raises(NoData, match="no speculative decoding data in generated-gpu"):
        plot_acceptance(gpu)
    with pytest.raises(NoData, match="no pressure data"):
        plot_pressure(logscope.read(str(SPEC)))


def test_card_is_forum_sized_and_labelled(gpu, tmp_path):
    fig = card(gpu, label="gpu")
    w, h = fig.get_size_inches() * fig.dpi
    assert 900 <= w <= 1400 and 600 <= h <= 1000
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "131072" in texts and "decode t/s" in texts
    arts = artists(fig)
    req = decode_requests(gpu, "gpu")
    same_points(arts["gpu|decode"], req["depth"].to_numpy(), req["decode_tps"].to_numpy())
    fig.savefig(tmp_path / "card.png")


def test_compare_overlay_has_one_series_per_log(gpu, spec):
    from logscope.plots import plot_compare
    fig = plot_compare([gpu, spec], ["a", "b"])
    arts = artists(fig)
    for lab, logs in (("a", gpu), ("b", spec)):
        req = decode_requests(logs, lab)
        same_points(arts[f"{lab}|decode"], req["depth"].to_numpy(), req["decode_tps"].to_numpy())
        assert f"{lab}|llama:request" in arts and f"{lab}|fit" in arts


def test_acceptance_plot_per_position_and_windows():
    from logscope.analysis.spec import acceptance_per_position, acceptance_windows
    from tests.conftest import FIXTURES
    llama = FIXTURES / "llama-server" / "d-b10406-n-gen-trace.log"
    vllm = FIXTURES / "vllm" / "v0.22.0-mtp-deferred-journald.log"
    if not (llama.exists() and vllm.exists()):
        pytest.skip("fixtures absent")
    la, vl = logscope.read(str(llama)), logscope.read(str(vllm))
    if vl.get("spec_decoding") is None:
        pytest.skip("vLLM engine model absent")
    fig = plot_acceptance([la, vl], ["l", "v"])
    arts = artists(fig)
    pp = acceptance_per_position(la, "l").group_by("position").agg(pl.col("rate").mean())
    x, y = arts["l|per_position"].get_data()
    assert dict(zip(x, y, strict=True)) == pytest.approx(dict(pp.iter_rows()))
    w = acceptance_windows(vl, "v").drop_nulls("rate")
    assert np.allclose(arts["v|windows|rate"].get_data()[1], w["rate"].to_numpy())
    assert "v|llama:request|rate" not in arts
