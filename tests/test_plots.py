"""Figures draw exactly the analysis frames (read back from the artists), and refuse no data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import logscope
from logscope.analysis._util import NoData
from logscope.analysis.decode import decode_aggregate, decode_requests, decode_windows
from logscope.analysis.depth import checked_fit
from logscope.analysis.prefill import fit_prefill, prefill_curve
from logscope.analysis.pressure import pressure_events
from logscope.analysis.spec import acceptance_requests
from logscope.outputs.plots import (
    card,
    plot_acceptance,
    plot_decode,
    plot_power,
    plot_prefill_curve,
    plot_pressure,
)
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
        # the model is drawn only where it agrees with every measured bucket (10 %)
        assert (f"{lab}|fit" in arts) == bool(checked_fit(logs).get("agrees"))
    ok = logscope.read(str(CORPUS / "generated-q8k-fa-c16k-np2-ctxshift.log"))
    arts_ok = artists(plot_prefill_curve([ok], labels=["ok"]))
    fit = fit_prefill(prefill_curve(ok, "ok").filter(pl.col("tokens") >= 64))
    x, y = arts_ok["ok|fit"].get_data()
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
    drawn = np.concatenate([offsets(a)[:, 1] for g, a in arts.items() if "llama:tg_3s" in g])
    assert sorted(drawn) == sorted(win["tps"].to_list())
    agg = decode_aggregate(gpu, "gpu").filter(pl.col("t1") > pl.col("t0"))
    segs = arts["gpu|aggregate"].get_segments()
    assert sorted(float(s[0][1]) for s in segs) == sorted(agg["tps"].to_list())
    assert any("window" in ax.get_title() for ax in fig.axes)
    legend = " ".join(t.get_text() for lg in fig.legends for t in lg.get_texts())
    assert "one request, exact" in legend and "window average" in legend


def test_decode_points_are_coloured_by_concurrency_state():
    """Each point's colour is its state's: the 4-stream requests of the pressure run share
    one colour, the one that ran alone another, and the legend names every colour drawn."""
    from matplotlib.colors import to_hex

    from logscope.outputs.plot_states import ALONE, request_points
    from tests.conftest import FIXTURES

    logs = logscope.read(str(FIXTURES / "telemetry" / "h200"
                             / "generated-gpu-pressure-np4-ctxshift.log"))
    fig = plot_decode(logs, labels=["p"])
    arts = artists(fig)
    pts = request_points(logs, "p")
    assert set(pts["state"]) == {"4 decoding", ALONE}
    a = arts["p|llama:request"]
    got = {tuple(np.round(o, 6)): to_hex(c) for o, c in zip(
        offsets(a), a.get_facecolors(), strict=True)}
    legend = {t.get_text(): to_hex(h.get_color()) for lg in fig.legends
              for t, h in zip(lg.get_texts(), lg.legend_handles, strict=True)}
    for r in pts.iter_rows(named=True):
        assert got[(round(r["depth"], 6), round(r["decode_tps"], 6))] == legend[r["state"]]
    assert legend["4 decoding"] != legend[ALONE]
    assert len({to_hex(c) for g, x in arts.items() if "tg_3s" in g
                for c in x.get_facecolors()}) >= 3  # windows at 4, 3, 2 streams and alone
    # no line styles tell slots apart: every line drawn is solid
    assert all(ln.get_linestyle() == "-" for ax in fig.axes for ln in ax.lines)


def legends_outside(fig) -> None:
    """Every legend lies outside every panel's data area."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [ax.get_window_extent(r) for ax in fig.axes if ax.axison]
    for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if lg is None:
            continue
        lb = lg.get_window_extent(r)
        for b in boxes:
            assert not lb.overlaps(b), (lb, b)


def test_legends_are_outside_the_data(gpu, spec):
    from logscope.outputs.plots import plot_compare

    for fig in (plot_decode(gpu), plot_acceptance(spec), card(gpu), plot_pressure(
            logscope.read(str(SHIFT))), plot_prefill_curve([gpu, spec]),
            plot_compare([gpu, spec], ["a", "b"])):
        legends_outside(fig)


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
    drawn = np.concatenate([offsets(a) for g, a in arts.items() if g.startswith("gpu|decode|")])
    assert sorted(map(tuple, drawn.round(6))) == sorted(zip(
        req["depth"].round(6), req["decode_tps"].round(6), strict=True))
    legend = [t.get_text() for ax in fig.axes if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    assert any(t.endswith(f"(n={req.height})") or "decoding" in t or "alone" in t
               for t in legend)
    fig.savefig(tmp_path / "card.png")


def test_compare_overlay_has_one_series_per_log(gpu, spec):
    from logscope.outputs.plots import plot_compare
    fig = plot_compare([gpu, spec], ["a", "b"])
    arts = artists(fig)
    for lab, logs in (("a", gpu), ("b", spec)):
        req = decode_requests(logs, lab)
        same_points(arts[f"{lab}|decode"], req["depth"].to_numpy(), req["decode_tps"].to_numpy())
        assert f"{lab}|llama:request" in arts
        assert (f"{lab}|fit" in arts) == bool(checked_fit(logs).get("agrees"))


def test_acceptance_plot_draws_what_it_says():
    """A log with server windows only: no empty depth row; titles and legend name the dashed
    window lines only, and n is the number drawn."""
    from tests.conftest import FIXTURES

    logs = logscope.read(str(FIXTURES / "sglang" / "v0.5.3.post2-eagle3-accept-rate.log"))
    fig = plot_acceptance(logs, ["e"])
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 2 and all(ax.lines or ax.collections for ax in panels)
    for ax in panels:
        assert "window avg" in ax.get_title() and "per request" not in ax.get_title()
        (ln,) = ax.lines
        (text,) = [t.get_text() for t in ax.get_legend().get_texts()]
        assert f"(n={len(ln.get_xdata())})" in text and ln.get_linestyle() == "--"


def test_power_plot_names_every_bar_and_line():
    from logscope.telemetry import read_with_telemetry
    from logscope.telemetry.energy import stretches
    from tests.conftest import FIXTURES

    d = FIXTURES / "telemetry" / "h200" / "generated-gpu-pressure-np4-ctxshift"
    logs = read_with_telemetry([f"{d}.log", f"{d}.smi.csv"])
    fig = plot_power(logs, ["p"])
    ax_p, _, _, ax_r = fig.axes
    phases = set(stretches(logs["requests"]).filter(pl.col("t1") > pl.col("t0"))["phase"])
    named = [t.get_text() for t in ax_r.get_legend().get_texts()]
    assert len(named) == len(phases) and all(any(t.startswith(p) or p == "active"
                                                 for t in named) for p in phases)
    assert {c.get_facecolor()[0].tobytes() for c in ax_r.collections} == {
        h.get_color() and np.asarray(__import__("matplotlib.colors").colors.to_rgba(
            h.get_color())).tobytes() for h in ax_r.get_legend().get_lines()}
    lines = [t.get_text() for t in ax_p.get_legend().get_texts()]
    assert len(lines) == len(ax_p.lines) and any("idle" in t for t in lines)
    assert "fit r" in ax_p.get_title()
    legends_outside(fig)


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


def test_no_empty_panel():
    """A panel either draws data or says in it why there is none (short requests: no tg_3s)."""
    from tests.conftest import FIXTURES

    logs = logscope.read(str(FIXTURES / "telemetry" / "h200" / "generated-gpu-colors-tty.log"))
    for fig in (plot_decode(logs), card(logs)):
        for ax in fig.axes:
            if ax.axison:
                assert ax.collections or ax.lines, ax.get_title()
            else:
                assert ax.texts or not ax.get_title(), ax.get_title()
    ax_t = plot_decode(logs).axes[0]
    assert not ax_t.axison and "no decode windows" in ax_t.texts[0].get_text()
