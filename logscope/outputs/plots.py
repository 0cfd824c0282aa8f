"""Figures of the passive benchmark, as matplotlib ``Figure`` objects (no pyplot state).

Each function takes one ``Logs`` or a list of them (one series per log, named by ``labels`` or
the file name) and returns a Figure; save it with ``fig.savefig("x.png")``. Titles and
legends say which numbers are exact per request (llama-server's timing lines) and which are
server window averages (SGLang, vLLM) or per-slot windows (llama-server ``tg_3s``). Every
drawn series carries a ``gid`` (``"<label>|<source>"``) so tests and notebooks can find it.

A function raises :class:`logscope.analysis._util.NoData` when the logs hold nothing it
could draw ("no prefill data in ..."), never an empty figure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from logscope.analysis._util import EXACT, NoData, label_of
from logscope.analysis.decode import decode_aggregate, decode_requests, decode_windows
from logscope.analysis.depth import checked_fit
from logscope.analysis.prefill import fit_prefill, prefill_curve, slot_context
from logscope.analysis.pressure import pressure_events, pressure_timeline
from logscope.analysis.spec import acceptance_per_position, acceptance_requests, acceptance_windows

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf"]
MIN_TOKENS = 64  # prefill points with fewer computed tokens are overhead-dominated: not drawn


def _as_list(logs_list, labels):
    if not isinstance(logs_list, (list, tuple)):
        logs_list = [logs_list]
    labels = list(labels or [])
    labels += [None] * (len(logs_list) - len(labels))
    names = [label_of(lg, lab) for lg, lab in zip(logs_list, labels, strict=False)]
    return logs_list, names


def _files(logs_list) -> str:
    out: dict[str, None] = {}  # each file once (the servers of one log share its file)
    for lg in logs_list:
        out.update((Path(f.file).name, None) for f in getattr(lg, "files", []))
    return ", ".join(out) or "the input"


def _kfmt(x, _pos=None) -> str:
    if x >= 1024 and x % 1024 == 0:
        return f"{int(x) // 1024}k"
    if x >= 1000:
        return f"{x / 1000:g}k"
    return f"{x:g}"


def _steps(seg: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """x, y of a step line over [t0, t1) segments, broken (NaN) where segments do not touch."""
    xs: list[float] = []
    ys: list[float] = []
    t00 = float(seg["t0"].min())
    prev = None
    for t0, t1, v in seg.select("t0", "t1", "tps").iter_rows():
        if prev is not None and t0 - prev > 1e-6:
            xs.append(np.nan)
            ys.append(np.nan)
        xs += [t0 - t00, t1 - t00]
        ys += [v, v]
        prev = t1
    return np.array(xs), np.array(ys)


def _fit_lines(ax, pts, fit, color, name, label):
    """The model 1/(a + b·d): solid over the measured depths, dashed beyond them, never
    further than the fit predicts (×1.25 of the measured depths, below the slot's context)."""
    lo = max(float(pts["depth"].min()), 1.0)
    hi = float(pts["depth"].max())
    d = np.geomspace(lo, hi, 100)
    (ln,) = ax.plot(d, 1.0 / (fit["a"] + fit["b"] * d), color=color, lw=1.5, label=label)
    ln.set_gid(f"{name}|fit")
    top = hi * 1.25
    if fit.get("n_ctx"):
        top = min(top, float(fit["n_ctx"]))
    first = True
    for a, b in ((hi, top), (lo / 1.25, lo)):
        if b <= a * 1.001:
            continue
        d2 = np.geomspace(a, b, 30)
        (ln2,) = ax.plot(d2, 1.0 / (fit["a"] + fit["b"] * d2), color=color, lw=1, ls="--",
                         label="beyond the measured depths (≤ ×1.25)"
                         if first and label.startswith("model 1/(a+b·d)") else None)
        ln2.set_gid(f"{name}|fit_extrapolated")
        first = False


def _finish(ax) -> None:
    """The common finish of a panel: a light grid, and a legend below it (outside the data)
    when something is labelled."""
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        _legend_below(ax)


def _legend_below(ax, **kw) -> None:
    """The panel's legend under its x label, outside the data."""
    ax.legend(fontsize=7, title_fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              frameon=False,
              **kw)

def plot_prefill_curve(logs_list, labels=None, min_tokens: int = MIN_TOKENS) -> Figure:
    """Prefill t/s against context depth (log axis), points and the fit 1/(a + b·d)."""
    logs_list, names = _as_list(logs_list, labels)
    fig = Figure(figsize=(8, 5), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    if _draw_prefill(ax, logs_list, names, min_tokens) == 0:
        raise NoData(f"no prefill data in {_files(logs_list)}")
    return fig


def _draw_prefill(ax, logs_list, names, min_tokens: int = MIN_TOKENS) -> int:
    drawn = 0
    hidden = 0
    for i, (lg, name) in enumerate(zip(logs_list, names, strict=True)):
        c = COLORS[i % len(COLORS)]
        pts = prefill_curve(lg, name)
        hidden += pts.filter(pl.col("tokens") < min_tokens).height
        pts = pts.filter(pl.col("tokens") >= min_tokens, pl.col("depth") > 0)
        for src, marker, face, desc in (
                ("llama:request", "o", c, "per request, exact"),
                ("llama:tick", "^", "none", "between progress ticks"),
                ("sglang:batch", "s", "none", "SGLang batch, window avg")):
            p = pts.filter(pl.col("source") == src)
            if p.height == 0:
                continue
            shared = p.filter(pl.col("concurrent") > 0).height
            note = f", {shared} with another request active" if shared else ""
            sc = ax.scatter(p["depth"].to_numpy(), p["tps"].to_numpy(), marker=marker,
                            facecolors=face, edgecolors=c, s=36 if face != "none" else 28,
                            label=f"{name}: {desc} (n={p.height}{note})", zorder=3)
            sc.set_gid(f"{name}|{src}")
            drawn += p.height
        fit = fit_prefill(prefill_curve(lg, name), min_tokens=min_tokens,
                          n_ctx=slot_context(lg))
        # the model is drawn only where it agrees with every measured bucket
        if fit["valid"] and checked_fit(lg).get("agrees"):
            _fit_lines(ax, pts, fit, c, name,
                       f"{name}: model 1/(a+b·d), c={fit['c_ms']:.0f} ms, b={fit['b']:.2e}")
    if drawn == 0:
        return 0
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(_kfmt)
    ax.set_xlabel("context depth (tokens: cached prefix + computed so far, log scale)")
    ax.set_ylabel("prefill t/s (computed tokens only)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title("Prefill speed vs context depth\n"
                 "filled = exact per request (llama-server timings); hollow = tick intervals "
                 "or server window averages\nline = model 1/(a + b·d), dashed beyond the measured "
                 "depths (×1.25 at most)",
                 fontsize=9)
    if hidden:
        ax.text(0.99, 0.01, f"{hidden} point(s) under {min_tokens} tokens not drawn",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="grey")
    _legend_below(ax)
    return drawn


def plot_compare(logs_list, labels=None, verdicts: list[dict] | None = None) -> Figure:
    """Overlay for ``compare --plot``: prefill curves, and decode t/s vs depth, one colour per log.

    Decode points are exact per request (llama-server) or, where a log has none, its server
    windows (SGLang/vLLM, window averages, drawn hollow against the window's depth if known).
    ``verdicts`` (rows of :func:`logscope.analysis.verdict.verdict`): their sentences above.
    """
    logs_list, names = _as_list(logs_list, labels)
    lines = [v["sentence"] for v in verdicts or [] if v.get("ratio") is not None]
    fig = Figure(figsize=(14, 5.5 + 0.22 * len(lines)), dpi=100, layout="constrained")
    if lines:   # the verdict above the panels (compare --plot)
        fig.suptitle("\n".join(lines), fontsize=9, x=0.01, ha="left")
    ax_p, ax_d = fig.subplots(1, 2)
    n_p = _draw_prefill(ax_p, logs_list, names)
    if n_p == 0:
        ax_p.text(0.5, 0.5, "no prefill data", ha="center", va="center",
                  transform=ax_p.transAxes, color="grey")
    n_d = 0
    for i, (lg, name) in enumerate(zip(logs_list, names, strict=True)):
        c = COLORS[i % len(COLORS)]
        req = decode_requests(lg, name)
        if req.height:
            sc = ax_d.scatter(req["depth"].to_numpy(), req["decode_tps"].to_numpy(), color=c,
                              s=36, label=f"{name}: per request, exact (n={req.height})")
            sc.set_gid(f"{name}|decode")
            n_d += req.height
            continue
        win = decode_windows(lg, name).filter(pl.col("depth").is_not_null())
        if win.height:
            sc = ax_d.scatter(win["depth"].to_numpy(), win["tps"].to_numpy(), facecolors="none",
                              edgecolors=c, s=28, label=f"{name}: server windows (window avg)")
            sc.set_gid(f"{name}|decode_windows")
            n_d += win.height
    if n_p == 0 and n_d == 0:
        raise NoData(f"no prefill or decode data in {_files(logs_list)}")
    ax_d.set_title("Decode t/s vs context depth\n(filled: exact per request; hollow: server "
                   "windows)", fontsize=9)
    ax_d.set_xlabel("context depth (tokens)")
    ax_d.xaxis.set_major_formatter(_kfmt)
    ax_d.set_ylabel("decode t/s")
    ax_d.set_ylim(bottom=0)
    _finish(ax_d)
    return fig


def plot_decode(logs_list, labels=None) -> Figure:
    """Decode: t/s over time (tg_3s per slot, server windows), vs depth, and aggregate; every
    point coloured by the concurrency state it was measured in (logscope.outputs.plot_states: alone
    on the GPU, beside a prefill, k decoding), one marker shape per log."""
    from logscope.outputs.plot_states import (
        aggregate_points,
        colors_for,
        request_points,
        window_points,
    )

    logs_list, names = _as_list(logs_list, labels)
    fig = Figure(figsize=(14, 5.6), dpi=100, layout="constrained")
    ax_t, ax_d, ax_a = fig.subplots(1, 3)
    data = [(request_points(lg, n), window_points(lg, n), aggregate_points(lg, n))
            for lg, n in zip(logs_list, names, strict=True)]
    states = [x for req, win, agg in data for df in (req, win, agg)
              for x in df["state"].drop_nulls().to_list()]
    color = colors_for(states)

    def c_of(df: pl.DataFrame) -> list[str]:
        return [color.get(st, "grey") for st in df["state"].to_list()]

    drawn = 0
    kinds: set[str] = set()
    for i, (name, (req, win, agg)) in enumerate(zip(names, data, strict=True)):
        mk = MARKERS[i % len(MARKERS)]
        for key, g in win.group_by(["source", "slot"], maintain_order=True):
            src, slot = key
            # a thin grey line per slot, broken (NaN) between its requests, points by state
            g = g.sort("file", "run", "task", "t", nulls_last=True)
            brk = (pl.col("task") != pl.col("task").shift(1)) | (
                pl.col("run") != pl.col("run").shift(1)) | (
                pl.col("file") != pl.col("file").shift(1))
            g = g.with_columns(brk.fill_null(False).alias("_brk"))
            xs, ys = [], []
            for t, v, b in g.select("t", "tps", "_brk").iter_rows():
                if b:
                    xs.append(np.nan)
                    ys.append(np.nan)
                xs.append(t)
                ys.append(v)
            ax_t.plot(xs, ys, lw=0.8, color="0.75", zorder=1)
            sc = ax_t.scatter(g["t"].to_numpy(), g["tps"].to_numpy(), c=c_of(g), marker=mk,
                              s=16, zorder=3)
            sc.set_gid(f"{name}|{src}|slot{slot}")
            kinds.add("tg_3s" if src == "llama:tg_3s" else "window")
            drawn += g.height
        if req.height:
            sc = ax_d.scatter(req["depth"].to_numpy(), req["decode_tps"].to_numpy(),
                              c=c_of(req), marker=mk, s=40, edgecolors="black", linewidths=0.6,
                              zorder=4)
            sc.set_gid(f"{name}|llama:request")
            kinds.add("request")
            drawn += req.height
        wd = win.filter(pl.col("depth").is_not_null())
        if wd.height:
            sc = ax_d.scatter(wd["depth"].to_numpy(), wd["tps"].to_numpy(), facecolors="none",
                              edgecolors=c_of(wd), marker=mk, s=16, zorder=3)
            sc.set_gid(f"{name}|windows")
        seg = agg.filter(pl.col("t1") > pl.col("t0")).sort("t0")
        if seg.height:
            xs, ys = _steps(seg)
            ax_a.plot(xs, ys, color="0.75", lw=0.8, zorder=1)
            t00 = float(seg["t0"].min())
            lc = ax_a.hlines(seg["tps"].to_numpy(), seg["t0"].to_numpy() - t00,
                             seg["t1"].to_numpy() - t00, colors=c_of(seg), lw=3, zorder=3)
            lc.set_gid(f"{name}|aggregate")
            # a dot where each stretch starts: a stretch too short for a visible bar still shows
            sc = ax_a.scatter(seg["t0"].to_numpy() - t00, seg["tps"].to_numpy(), c=c_of(seg),
                              marker=mk, s=10, zorder=4)
            sc.set_gid(f"{name}|aggregate_starts")
        wins = agg.filter(pl.col("t1") == pl.col("t0"))
        if wins.height:
            ax_a.plot(wins["t0"].to_numpy(), wins["tps"].to_numpy(), color="0.75", lw=0.8,
                      zorder=1)
            sc = ax_a.scatter(wins["t0"].to_numpy(), wins["tps"].to_numpy(), c=c_of(wins),
                              marker=mk, s=16, zorder=3)
            sc.set_gid(f"{name}|aggregate_windows")
    if drawn == 0:
        raise NoData(f"no decode data in {_files(logs_list)}")
    what = {"tg_3s": "llama tg_3s: one slot, ~3 s window",
            "window": "server window: all running"}
    ax_t.set_title("Decode t/s over time" + "".join(
        f"\n({x})" for x in ["; ".join(what[k] for k in sorted(kinds) if k in what)] if x),
        fontsize=10)
    ax_t.set_xlabel("time since first window (s, or line number without a clock)")
    ax_t.set_ylabel("decode t/s")
    ax_d.set_title("Decode t/s vs context depth\n(per stream; SGLang/vLLM windows: all "
                   "running)" if "window" in kinds else "Decode t/s vs context depth\n"
                   "(per stream)", fontsize=10)
    ax_d.set_xlabel("context depth (tokens)")
    ax_d.xaxis.set_major_formatter(_kfmt)
    ax_a.set_title("Aggregate decode t/s\n(all streams decoding at once)", fontsize=10)
    ax_a.set_xlabel("time since first decode (s)")
    ax_a.set_ylabel("aggregate t/s")
    for ax in (ax_t, ax_d, ax_a):
        ax.grid(True, alpha=0.3)
    why = {ax_t: "no decode windows in the log\n(llama-server prints tg_3s every ~3 s of a "
                 "request's decoding:\nthese requests decoded for less)",
           ax_d: "no decode point with a known depth",
           ax_a: "no aggregate: no request's decode time is known"}
    for ax in (ax_t, ax_d, ax_a):
        ys = [o[:, 1] for o in (c.get_offsets() for c in ax.collections) if len(o)]
        if not ys:  # say in the panel why it has no data, without empty axes
            ax.set_axis_off()
            ax.text(0.5, 0.5, why[ax], ha="center", va="center", transform=ax.transAxes,
                    color="grey", fontsize=9)
            continue
        top = float(np.nanmax(np.concatenate(ys)))
        ax.set_ylim(0, top * 1.08 if top > 0 else 1)
    _state_legend(fig, color, names if len(names) > 1 else None, kinds)
    return fig


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _state_legend(fig, color: dict[str, str], names: list[str] | None = None,
                  kinds: set[str] | None = None) -> None:
    """One legend below the panels: a colour per concurrency state, what each mark is (and a
    marker per log)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="", marker="o", markersize=7, color=c, label=s)
               for s, c in color.items()]
    kinds = kinds or set()
    if "request" in kinds:
        handles.append(Line2D([], [], ls="", marker="o", markersize=8, color="white",
                              markeredgecolor="black", label="one request, exact (its "
                              "state: where it decoded most)"))
    if kinds & {"tg_3s", "window"}:
        handles.append(Line2D([], [], ls="", marker="o", markersize=6, color="white",
                              markeredgecolor="grey", label="window average (vs depth)"))
    if "request" in kinds:
        handles.append(Line2D([], [], lw=3, color="grey", label="aggregate: a stretch with the "
                              "same streams decoding"))
    for i, n in enumerate(names or []):
        handles.append(Line2D([], [], ls="", marker=MARKERS[i % len(MARKERS)], markersize=7,
                              color="grey", label=n))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5),
                   fontsize=8, title="colour: requests decoding at once (concurrency state)"
                   + ("; marker: log" if names else ""), title_fontsize=8, frameon=False)


def plot_acceptance(logs_list, labels=None) -> Figure:
    """Speculative decoding: acceptance rate and mean accepted length, vs depth and over time.

    Against context depth, per request (llama-server, exact): a row drawn only when some log
    has per-request lines. Over time: per request (exact, at the request's start) and per
    window (SGLang/vLLM, server window averages). A third column shows acceptance per draft
    position when the log prints it. Titles and legends name only what is drawn.
    """
    logs_list, names = _as_list(logs_list, labels)
    per_pos = [acceptance_per_position(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    reqs = [acceptance_requests(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    wins = [acceptance_windows(lg, n) for lg, n in zip(logs_list, names, strict=True)]
    has_pp = any(pp.height for pp in per_pos)
    has_req = any(r.height for r in reqs)
    ncol = 3 if has_pp else 2
    nrow = 2 if has_req else 1
    fig = Figure(figsize=(5.2 * ncol, 4.6 * nrow + 0.6), dpi=100, layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    ax_r, ax_l = (axes[0, 0], axes[0, 1]) if has_req else (None, None)
    ax_rt, ax_lt = axes[nrow - 1, 0], axes[nrow - 1, 1]
    drawn = 0
    what_t = {"rate": set(), "mean_len": set()}
    for i, (name, r, w, pp) in enumerate(zip(names, reqs, wins, per_pos, strict=True)):
        c = COLORS[i % len(COLORS)]
        if r.height:
            ml = r.drop_nulls("mean_len")
            for ax, df, x, y, gid in ((ax_r, r, "depth", "rate", "rate"),
                                      (ax_rt, r, "t", "rate", "rate_time"),
                                      (ax_l, ml, "depth", "mean_len", "mean_len"),
                                      (ax_lt, ml, "t", "mean_len", "mean_len_time")):
                if df.height == 0:
                    continue
                sc = ax.scatter(df[x].to_numpy(), df[y].to_numpy(), color=c, s=36,
                                label=f"{name}: per request, exact (n={df.height})")
                sc.set_gid(f"{name}|llama:request|{gid}")
                if x == "t":
                    what_t[y].add("points: exact per request")
            drawn += r.height
        for col_name, ax in (("rate", ax_rt), ("mean_len", ax_lt)):
            ww = w.drop_nulls(col_name)
            if ww.height:
                (ln,) = ax.plot(ww["t"].to_numpy(), ww[col_name].to_numpy(), color=c, ls="--",
                                marker=".", label=f"{name}: {ww['source'][0]} window avg "
                                f"(n={ww.height})")
                ln.set_gid(f"{name}|windows|{col_name}")
                what_t[col_name].add("dashed: server window avg")
                drawn += ww.height
        if pp.height:
            m = pp.group_by("position").agg(pl.col("rate").mean()).sort("position")
            (ln,) = axes[0, 2].plot(m["position"].to_numpy(), m["rate"].to_numpy(), color=c,
                                    marker="o",
                                    label=f"{name}: mean over lines ({pp['exactness'][0]})")
            ln.set_gid(f"{name}|per_position")
    if drawn == 0:
        raise NoData(f"no speculative decoding data in {_files(logs_list)}")
    if has_req:
        ax_r.set_title("Draft acceptance rate vs depth\n(accepted / drafted, exact per "
                       "request)", fontsize=10)
        ax_l.set_title("Mean accepted length vs depth\n(tokens per decode step, exact per "
                       "request)", fontsize=10)
        for ax in (ax_r, ax_l):
            ax.set_xlabel("context depth (tokens)")
            ax.xaxis.set_major_formatter(_kfmt)
    for ax, title, key in ((ax_rt, "Acceptance rate over time", "rate"),
                           (ax_lt, "Mean accepted length over time", "mean_len")):
        ax.set_title(title + ("\n(" + "; ".join(sorted(what_t[key])) + ")"
                              if what_t[key] else "\n(no value in the log)"), fontsize=10)
        ax.set_xlabel("time (s, or line number where the log has no clock)")
    for ax in (ax_r, ax_rt):
        if ax is not None:
            ax.set_ylim(0, 1.05)
    for ax in (ax_l, ax_lt):
        if ax is not None:
            ax.set_ylim(bottom=0)
    if has_pp:
        axes[0, 2].set_title("Acceptance per draft position", fontsize=10)
        axes[0, 2].set_xlabel("draft position")
        axes[0, 2].set_ylim(0, 1.05)
        axes[0, 2].xaxis.set_major_locator(MaxNLocator(integer=True))
        if nrow == 2:
            axes[1, 2].axis("off")
    for ax in axes.ravel():
        if ax.axison:
            _finish(ax)
    return fig


def plot_pressure(logs_list, labels=None) -> Figure:
    """KV usage, running/queued requests over time, with retract/preempt/shift events."""
    logs_list, names = _as_list(logs_list, labels)
    fig = Figure(figsize=(11, 4.5), dpi=100, layout="constrained")
    ax_k, ax_q = fig.subplots(1, 2)
    drawn = 0
    marks = {"retract": "v", "preempt": "x", "context_shift": "D", "decode_retry": "s",
             "decode_failure": "X"}
    for i, (lg, name) in enumerate(zip(logs_list, names, strict=True)):
        c = COLORS[i % len(COLORS)]
        tl = pressure_timeline(lg, name)
        ev = pressure_events(lg, name)
        kv = tl.drop_nulls("kv_usage")
        if kv.height:
            (ln,) = ax_k.plot(kv["t"].to_numpy(), kv["kv_usage"].to_numpy(), color=c,
                              marker=".", label=f"{name}: KV usage (server window)")
            ln.set_gid(f"{name}|kv_usage")
            drawn += kv.height
        run = tl.drop_nulls("running")
        if run.height:
            step = "post" if run["source"][0] == "llama:requests" else None
            kw = {"drawstyle": "steps-post"} if step else {"marker": "."}
            (ln,) = ax_q.plot(run["t"].to_numpy(), run["running"].to_numpy(), color=c,
                              label=f"{name}: running ({run['source'][0]})", **kw)
            ln.set_gid(f"{name}|running")
        q = tl.drop_nulls("queued")
        if q.height:
            (ln,) = ax_q.plot(q["t"].to_numpy(), q["queued"].to_numpy(), color=c, ls="--",
                              label=f"{name}: queued")
            ln.set_gid(f"{name}|queued")
            drawn += q.height
        for kind, g in ev.group_by("kind"):
            kind = kind[0]
            sc = ax_q.scatter(g["t"].to_numpy(), np.zeros(g.height), marker=marks.get(kind, "o"),
                              color=c, s=50, zorder=4, clip_on=False,
                              label=f"{name}: {kind} ×{int(g['count'].sum())}")
            sc.set_gid(f"{name}|event|{kind}")
            drawn += g.height
    if drawn == 0:
        raise NoData(f"no pressure data (retract/preempt/context shift, KV usage, queue) in "
                     f"{_files(logs_list)}")
    ax_k.set_title("KV cache usage (server window values)", fontsize=10)
    ax_k.set_ylim(0, 1.05)
    if not ax_k.lines:
        ax_k.text(0.5, 0.5, "this server prints no KV usage", ha="center", va="center",
                  transform=ax_k.transAxes, color="grey")
    ax_q.set_title("Requests running / queued, pressure events", fontsize=10)
    for ax in (ax_k, ax_q):
        ax.set_xlabel("time (s, or line number where the log has no clock)")
        _finish(ax)
    return fig


def card(logs, label: str | None = None, verdicts: list[dict] | None = None) -> Figure:
    """One forum-sized picture: config, headline numbers and the curves the log has data for.

    ``verdicts`` (rows of :func:`logscope.analysis.verdict.verdict` with this log as B): the
    sentences that have a verdict go at the foot (``logscope card B.log --vs A.log``).

    Up to three panels (prefill vs depth, decode, acceptance or aggregate); a panel with
    fewer than 2 points, or of a kind the server never prints (KV usage for llama-server), is
    left out and the card says why. Works on any log with at least one figure (a pasted
    excerpt with only ``tg_3s`` windows and a ``draft acceptance`` line included).
    """
    from logscope.analysis.metrics import fmt_figure
    from logscope.analysis.report import config_card, fit_text, headline

    name = label_of(logs, label)
    h = headline(logs)
    cfg = config_card(logs)
    if (h["prefill_points"] == 0 and h["decode"] is None and not h["acceptance"]["n"]
            and h["aggregate"] is None):
        raise NoData(f"no prefill, decode or speculative data in {_files([logs])}")
    fit = h["prefill_fit"]
    left_out: list[str] = []
    panels: list[tuple[str, object]] = []

    pts = prefill_curve(logs, name).filter(pl.col("tokens") >= MIN_TOKENS, pl.col("depth") > 0)
    if pts.height >= 2:
        def draw_prefill(ax):
            for src, marker in (("llama:request", "o"), ("llama:tick", "^"),
                                ("sglang:batch", "s")):
                for shared in (False, True):
                    q = pts.filter(pl.col("source") == src,
                                   pl.col("shared").fill_null(False) == shared)
                    if q.height == 0:
                        continue
                    face = COLORS[0] if src == "llama:request" and not shared else "none"
                    sc = ax.scatter(q["depth"].to_numpy(), q["tps"].to_numpy(), marker=marker,
                                    facecolors=face,
                                    edgecolors="grey" if shared else COLORS[0], s=30,
                                    label=f"{src}{' shared' if shared else ''} (n={q.height})")
                    sc.set_gid(f"{name}|{src}" + ("|shared" if shared else ""))
            if fit["valid"] and fit.get("agrees"):
                _fit_lines(ax, pts, fit, COLORS[1], name, "model 1/(a+b·d), overhead removed")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(_kfmt)
            ax.set_ylim(bottom=0)
            _legend_below(ax, ncols=2)
            ax.set_title("Prefill t/s vs depth (filled: solo request, exact; grey: shared)",
                         fontsize=10)
        panels.append(("prefill", draw_prefill))
    else:
        from logscope.outputs.plot_states import colors_for, window_points

        win = window_points(logs, name).filter(pl.col("source") != "llama:tg_3s")
        if win.height >= 2:
            def draw_win(ax):
                ax.plot(win["t"].to_numpy(), win["tps"].to_numpy(), color="0.75", lw=0.8,
                        zorder=1)
                color = colors_for(win["state"].drop_nulls().to_list())
                for st, c in color.items():
                    q = win.filter(pl.col("state") == st)
                    sc = ax.scatter(q["t"].to_numpy(), q["tps"].to_numpy(), color=c, s=16,
                                    zorder=3, label=f"{st} (windows: {q.height})")
                    sc.set_gid(f"{name}|decode_windows|{st}")
                ax.set_xlabel("time (s, or line number where the log has no clock)")
                _legend_below(ax, ncols=3, title="colour: requests running in the window")
                ax.set_ylim(bottom=0)
                ax.set_title("Decode throughput over time (server window averages, all "
                             "running requests)", fontsize=10)
            panels.append(("windows", draw_win))
        left_out.append(f"prefill curve: {pts.height} prefill stretch(es) of >= {MIN_TOKENS} "
                        "tokens (2 needed)")

    from logscope.outputs.plot_states import colors_for, request_points

    dr = request_points(logs, name).filter(pl.col("depth") > 0)
    t3 = decode_windows(logs, name).filter(pl.col("source") == "llama:tg_3s")
    if dr.height >= 2:
        def draw_dec(ax):
            color = colors_for(dr["state"].drop_nulls().to_list())
            for st, c in color.items():
                q = dr.filter(pl.col("state") == st)
                sc = ax.scatter(q["depth"].to_numpy(), q["decode_tps"].to_numpy(), color=c,
                                s=30, label=f"{st} (n={q.height})")
                sc.set_gid(f"{name}|decode|{st}")
            ax.xaxis.set_major_formatter(_kfmt)
            ax.set_xlabel("context depth (tokens)")
            ax.set_title("Decode t/s vs depth (exact per request;\ncolour: streams decoding "
                         "at once)", fontsize=10)
            ax.set_ylim(0, 1.08 * float(dr["decode_tps"].max()))
            _legend_below(ax)
        panels.append(("decode", draw_dec))
    elif t3.height >= 2:
        def draw_t3(ax):
            for i, ((slot,), g) in enumerate(t3.group_by(["slot"], maintain_order=True)):
                (ln,) = ax.plot(g["t"].to_numpy(), g["tps"].to_numpy(), marker=".",
                                color=COLORS[i % len(COLORS)], label=f"slot {slot}")
                ln.set_gid(f"{name}|tg_3s")
            ax.set_xlabel("time (s)")
            ax.set_ylim(bottom=0)
            ax.set_title("Decode t/s over time (tg_3s: ~3 s window per slot)", fontsize=10)
            _legend_below(ax, ncols=4)
        panels.append(("tg_3s", draw_t3))
    else:
        tl = pressure_timeline(logs, name).drop_nulls("kv_usage")
        if tl.height >= 2:
            def draw_kv(ax):
                (ln,) = ax.plot(tl["t"].to_numpy(), tl["kv_usage"].to_numpy(),
                                color=COLORS[4], marker=".")
                ln.set_gid(f"{name}|kv_usage")
                ax.set_ylim(0, 1.05)
                ax.set_xlabel("time (s, or line number where the log has no clock)")
                ax.set_title("KV cache usage (server window values)", fontsize=10)
            panels.append(("kv", draw_kv))
        else:
            left_out.append(f"decode panel: {dr.height} request(s) with a known depth and "
                            f"{t3.height} tg_3s window(s) (2 needed)")

    from logscope.analysis.served import streams
    from logscope.outputs.plot_pareto import draw_pareto

    pareto_ok = streams(logs, name).height >= 2   # the trade panel (or an inset, below)
    ar = acceptance_requests(logs, name).filter(pl.col("depth") > 0).drop_nulls("mean_len")
    aw = acceptance_windows(logs, name).drop_nulls("mean_len")
    if ar.height >= 2:
        def draw_acc(ax):
            sc = ax.scatter(ar["depth"].to_numpy(), ar["mean_len"].to_numpy(),
                            color=COLORS[3], s=30)
            sc.set_gid(f"{name}|mean_len")
            ax.set_title("Mean accepted length vs depth\n(exact per request)", fontsize=10)
            ax.xaxis.set_major_formatter(_kfmt)
            ax.set_xlabel("context depth (tokens)")
            ax.set_ylim(bottom=0)
        panels.append(("acceptance", draw_acc))
    elif aw.height >= 2:
        def draw_aw(ax):
            (ln,) = ax.plot(aw["t"].to_numpy(), aw["mean_len"].to_numpy(), color=COLORS[3])
            ln.set_gid(f"{name}|mean_len")
            ax.set_ylim(bottom=0)
            ax.set_title("Mean accepted length\n(server window average)", fontsize=10)
        panels.append(("acceptance", draw_aw))
    else:
        agg = decode_aggregate(logs, name).filter(pl.col("t1") > pl.col("t0")).sort("t0")
        if pareto_ok:
            def draw_par(ax):
                draw_pareto(ax, [logs], [name], small=True)
                ax.set_title("Streams: per stream vs aggregate\n(a point per state, "
                             "★ = as served)", fontsize=10)
            panels.append(("pareto", draw_par))
            pareto_ok = False     # drawn: no inset
        elif agg.height >= 2 and agg["active"].max() >= 2:
            def draw_agg(ax):
                xs, ys = _steps(agg)
                (ln,) = ax.plot(xs, ys, color=COLORS[3])
                ln.set_gid(f"{name}|aggregate")
                ax.set_title("Aggregate decode t/s over time\n(sum of exact per-request "
                             "rates)", fontsize=10)
                ax.set_ylim(bottom=0)
            panels.append(("aggregate", draw_agg))
        elif h["acceptance"]["n"]:
            left_out.append(f"acceptance panel: {h['acceptance']['n']} request(s) with "
                            "acceptance, too few to draw against depth (figures in the text)")
        elif any(k == "windows" for k, _ in panels):
            left_out.append("acceptance panel: no speculative decoding in the log (the decode "
                            "panel is already the aggregate of all running requests)")
        else:
            left_out.append("acceptance panel: no speculative decoding in the log; aggregate "
                            "panel: never two requests decoding together")

    fig = Figure(figsize=(11, 7.2), dpi=100, layout="constrained")
    gs = fig.add_gridspec(2, 3)
    ax_txt = fig.add_subplot(gs[0, 0])
    ax_txt.axis("off")
    lines = [f"{k}: {v}" for k, v in cfg.items() if v is not None]
    ax_txt.text(0, 1, "Configuration (from the log)\n" + ("\n".join(lines) or
                                                          "(no startup lines in the log)"),
                va="top", fontsize=9, family="monospace", transform=ax_txt.transAxes)
    if pareto_ok and len(lines) <= 7:   # the panels are taken: an inset under the config
        ax_p = ax_txt.inset_axes([0.16, 0.0, 0.8, 0.34])
        ax_p.set_gid("panel|pareto")
        draw_pareto(ax_p, [logs], [name], small=True)
        ax_p.tick_params(labelsize=7)
        ax_p.set_xlabel("per stream t/s", fontsize=7)
        ax_p.set_ylabel("aggregate t/s", fontsize=7)
        ax_p.set_title("streams: a point per state, ★ = as served", fontsize=8)
        ax_p.grid(True, alpha=0.3)
    ax_h = fig.add_subplot(gs[1, 0])
    ax_h.axis("off")
    hl = ["Headline (passive: measured from the log)"]
    if fit["valid"] and fit.get("agrees") is not False:
        short = {"solo": "solo", "no other prompt (other slots decoding)": "beside decode"}
        hl.append(f"prefill model: c {fit['c_ms']:,.0f} ms, r² "
                  + ("—" if fit["r2"] is None else f"{fit['r2']:.3f}")
                  + f" ({short.get(fit['basis'], 'shared incl.')})")
        hl += [f"  @ {d:>7,}  {v:>9,.0f} t/s" + ("  (beyond data)" if fit["extrapolated"][d]
                                                  else "")
               for d, v in fit["predict"].items() if v is not None]
    elif fit["valid"]:
        hl.append(f"prefill model: not shown (off by >10 % at {len(fit['disagrees'])} "
                  "measured depth(s))")
        hl += [f"  @ {d:>7,}  {p['tps']:>9,.0f} t/s (measured)"
               for d, p in h.get("prefill_at", {}).items() if p["basis"] == "measured"][:3]
    else:
        hl.append("prefill: " + fit_text(fit).removeprefix("prefill fit: "))
    if h["decode"]:
        d = h["decode"]
        how = {EXACT: "exact/request"}.get(d["exactness"], d["exactness"])
        if d.get("decoding"):
            how += f", {d['decoding']} decoding"
        hl.append(f"decode t/s ({how}): median {fmt_figure('decode_tps', d['median'])}")
        hl.append(f"  range {d['min']:.2f}–{d['max']:.2f}, n={d['n']}")
    a = h["acceptance"]
    if a["n"]:
        hl.append(f"draft acceptance {fmt_figure('acceptance_rate', a['rate'])}, mean len "
                  f"{fmt_figure('mean_accepted_length', a['mean_len'])} (n={a['n']})")
        hl.append("  " + ("exact per request" if a["exactness"] == EXACT
                          else "server window average"))
    if h["aggregate"]:
        g = h["aggregate"]
        hl.append(f"decode rate with {g['active']} decoding: "
                  f"{fmt_figure('aggregate_decode', g['mean_tps'])} t/s")
        hl.append("  (while they decode; not throughput)")
    sv = h.get("served") or {}
    if sv.get("throughput_tps"):
        hl.append(f"served: {sv['throughput_tps']:,.2f} t/s throughput")
        if sv.get("per_stream_tps"):
            hl.append(f"  at {sv['per_stream_tps']:,.2f} t/s per stream as served")
    p = h["pressure"]
    if not p["message"]:
        hl.append(f"retracts {p['retracted']}, preemptions {p['preempted']}, other events "
                  f"{sum(v for k, v in p['events'].items() if k not in ('retract', 'preempt'))}")
    from logscope.analysis.energy import card_lines
    hl += card_lines(h.get("energy"))  # GPU telemetry given (docs/energy.md)
    from logscope.analysis.findings import findings
    found = findings(logs)
    if found:   # the log's own explanations, in short (report gives them whole, with lines)
        hl.append(f"findings ({len(found)}; lines in `logscope report`):")
        hl += [f"  ! {f['rule'].replace('_', ' ')} ({f['evidence'][0].rsplit('/', 1)[-1]})"
               for f in found[:4]]
    ax_h.text(0, 1, "\n".join(hl), va="top", fontsize=9, family="monospace",
              transform=ax_h.transAxes)
    slots = [gs[0, 1:], gs[1, 1], gs[1, 2]]
    for (kind, draw), slot in zip(panels, slots, strict=False):
        ax = fig.add_subplot(slot)
        ax.set_gid(f"panel|{kind}")
        draw(ax)
        ax.grid(True, alpha=0.3)
    if left_out:
        free = slots[len(panels)] if len(panels) < len(slots) else None
        note = "Not drawn:\n" + "\n".join("• " + x for x in left_out)
        if free is not None:
            ax_n = fig.add_subplot(free)
            ax_n.axis("off")
            ax_n.set_gid("panel|note")
            ax_n.text(0, 1, note, va="top", fontsize=8, color="grey", wrap=True,
                      transform=ax_n.transAxes)
        else:
            fig.text(0.99, 0.005, note.replace("\n", "  "), ha="right", va="bottom",
                     fontsize=7, color="grey")
    fig.suptitle(f"logscope passive benchmark — {name}", fontsize=12, weight="bold")
    said = [v["sentence"] for v in verdicts or [] if v.get("ratio") is not None][:4]
    if said:   # the verdict against another log, at the foot (the layout makes room)
        fig.set_figheight(fig.get_figheight() + 0.2 * len(said))
        fig.supxlabel("verdict: " + "\n".join(said), fontsize=8, x=0.01, ha="left")
    return fig


PHASE_COLORS = {"prefill": "#D55E00", "decode": "#0072B2", "active": "#CC79A7",
                "wait": "#BBBBBB"}
PHASE_TEXT = {"prefill": "prefill: computing the prompt",
              "decode": "decode: generating tokens",
              "active": "cancelled before its timings: launch to release",
              "wait": "wait: launched, nothing computed yet (slot held)"}


def plot_power(logs_list, labels=None) -> Figure:
    """GPU power, SM clock and utilisation per GPU over the log's time, above the requests'
    prefill and decode stretches (one row per slot), for logs joined to telemetry
    (:func:`logscope.telemetry.attach`); time 0 = the log's zero placed by its clock offset.
    Every line, bar and colour is named in a legend beside its panel."""
    from logscope.telemetry.energy import stretches

    logs_list, names = _as_list(logs_list, labels)
    fig = Figure(figsize=(12.5, 8.5), dpi=100, layout="constrained")
    ax_p, ax_c, ax_u, ax_r = fig.subplots(4, 1, sharex=True,
                                          gridspec_kw={"height_ratios": [3, 2, 2, 2]})
    drawn = 0
    clocks = []
    phases: set[str] = set()
    many = len(logs_list) > 1
    base, ticks = 0, {}
    for i, (lg, name) in enumerate(zip(logs_list, names, strict=True)):
        runs = lg.tables.get("energy_runs")
        samples = lg.tables.get("gpu_samples")
        if runs is None or runs.height == 0 or samples is None or samples.height == 0:
            continue
        run = runs.row(0, named=True)
        off = run["clock_offset_s"]
        s = samples.filter(pl.col("gpu").is_in(run["gpus"])).with_columns(
            (pl.col("ts").dt.epoch("us").cast(pl.Float64) / 1e6 - off).alias("t"))
        lo, hi = -5.0, run["window_s"] + 5.0
        s = s.filter(pl.col("t").is_between(lo, hi))
        who = f"{name}: " if many else ""
        for j, ((gpu,), g) in enumerate(s.sort("t").group_by(["gpu"], maintain_order=True)):
            c = COLORS[(i + j) % len(COLORS)]
            tag = f"{who}GPU {gpu}"
            for ax, col, gid, what in ((ax_p, "power_w", "power", "power.draw (1 s average)"),
                                       (ax_c, "sm_clock_mhz", "sm_clock", "SM clock"),
                                       (ax_u, "util_gpu_pct", "util", "utilisation")):
                q = g.drop_nulls(col)
                if q.height:
                    (ln,) = ax.plot(q["t"].to_numpy(), q[col].to_numpy(), color=c, lw=1,
                                    label=f"{tag} {what}")
                    ln.set_gid(f"{name}|gpu{gpu}|{gid}")
                    drawn += q.height
            if g["power_limit_w"].drop_nulls().len():
                lim = float(g["power_limit_w"].drop_nulls().median())
                ax_p.axhline(lim, color=c, ls=":", lw=1,
                             label=f"{tag} power limit {lim:.0f} W")
        if run["idle_w"] is not None:
            ax_p.axhline(run["idle_w"], color=COLORS[i % len(COLORS)] if many else "grey",
                         ls="--", lw=1,
                         label=f"{who}idle {run['idle_w']:.0f} W (median power with no "
                               "request active)")
        req = lg.tables.get("requests")
        if req is not None and req.height:
            st = stretches(req).filter(pl.col("file") == run["file"], pl.col("run") == run["run"],
                                       pl.col("t1") > pl.col("t0"))
            slots = sorted({int(x) for x in st["slot"].drop_nulls().to_list()} or {0})
            for k in slots:  # each log its own rows: bars of two logs never overlap
                ticks[base + k] = f"{who}slot {k}" if many else str(k)
            for (phase, slot), g in st.sort("phase", "slot").group_by(["phase", "slot"],
                                                                      maintain_order=True):
                y = base + (slot if slot is not None else 0) - 0.4
                spans = list(zip(g["t0"].to_list(), (g["t1"] - g["t0"]).to_list(), strict=True))
                bars = ax_r.broken_barh(spans, (y, 0.8),
                                        color=PHASE_COLORS.get(phase, "grey"))
                bars.set_gid(f"{name}|{phase}|slot{slot}")
                phases.add(phase)
            base += slots[-1] + 2
        src = run["clock_offset_source"]
        clocks.append(f"{who}{src}" + (f" (fit r = {run['clock_fit_r']:.2f}, "
                                       f"±{run['clock_fit_spread_s']:.1f} s)"
                                       if src == "estimated" and run["clock_fit_r"] is not None
                                       else ""))
    if drawn == 0:
        raise NoData(f"no GPU telemetry joined to {_files(logs_list)}: give the nvidia-smi "
                     "CSV or dmon file with the log")
    for phase in [p for p in PHASE_TEXT if p in phases]:
        ax_r.plot([], [], color=PHASE_COLORS[phase], lw=8, label=PHASE_TEXT[phase])
    ax_p.set_title("GPU power (its energy is shared among the requests computing: "
                   "docs/energy.md)\nthe log placed on the telemetry's clock: "
                   + "\n".join(clocks), fontsize=10)
    ax_p.set_ylabel("power (W)")
    ax_c.set_ylabel("SM clock (MHz)")
    ax_u.set_ylabel("utilisation (%)")
    ax_u.set_ylim(0, 105)
    ax_r.set_ylabel("slot")
    if ticks:
        ax_r.set_yticks(list(ticks), list(ticks.values()), fontsize=7 if many else None)
    ax_r.set_xlabel("time since the log's zero (s)")
    ax_r.set_title("Requests: one bar per request stretch, in its slot's row", fontsize=10)
    for ax in (ax_p, ax_c, ax_u, ax_r):
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      frameon=False)
    return fig


__all__ = ["plot_prefill_curve", "plot_compare", "plot_decode", "plot_acceptance",
           "plot_pressure", "plot_power", "card"]
