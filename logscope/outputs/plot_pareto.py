"""The passive Pareto: per-stream speed against aggregate, from the states a workload visited.

Active tools draw this trade from runs they launch (one point per concurrency they set). A real
workload visits many concurrency states in one log, so each is a point here, at no cost:

* x: per-stream t/s in the state (the rate while k streams decode ÷ k), y: the rate while they
  decode (aggregate t/s), from :func:`logscope.analysis.served.streams`: one point per number
  of streams decoding, its area the seconds spent there, its label k;
* one colour per log, each log's frontier (the points no other point of that log beats on both
  axes) as a line;
* each log's *served* point: a star at (its speed per stream as served, its served throughput),
  what the workload really got once stalls, prefill and idle gaps are counted
  (:func:`logscope.analysis.served.served`). The distance from a log's frontier down to its star
  is the time the server spent not decoding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from logscope.analysis._util import NoData, label_of
from logscope.analysis.served import frontier, served, streams

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf"]
MAX_AREA = 900.0   # points² of the state that held the most seconds


def draw_pareto(ax, logs_list: list, names: list[str], small: bool = False) -> int:
    """Draw the Pareto of every log on ``ax``; returns how many points (states and served
    stars) were drawn. A log with no identified state (SGLang/vLLM intervals that mix counts of
    streams the window fit cannot split) still gets its star, its label saying so.

    Example::

        fig = Figure(); ax = fig.add_subplot()
        draw_pareto(ax, [logscope.read("np1.log"), logscope.read("np4.log")], ["np1", "np4"])
    """
    drawn, top_x, top_y = 0, 0.0, 0.0
    for i, (lg, name) in enumerate(zip(logs_list, names, strict=True)):
        c = COLORS[i % len(COLORS)]
        st = streams(lg, name).drop_nulls("aggregate_tps")
        if st.height:
            x = st["per_stream_tps"].to_numpy()
            y = st["aggregate_tps"].to_numpy()
            sec = st["seconds"].to_numpy()
            area = MAX_AREA * (0.35 if small else 1.0) * sec / sec.max()
            sc = ax.scatter(x, y, s=np.maximum(area, 12), color=c, alpha=0.55,
                            edgecolors=c, label=f"{name}: states (area = seconds)")
            sc.set_gid(f"{name}|pareto_states")
            for k, xx, yy in zip(st["decoding"].to_list(), x, y, strict=True):
                ax.annotate(str(k), (xx, yy), ha="center", va="center",
                            fontsize=7 if small else 9, color="black")
            f = frontier(x, y)
            if len(f) >= 2:
                (ln,) = ax.plot(x[f], y[f], color=c, lw=1.2, ls="-")
                ln.set_gid(f"{name}|pareto_frontier")
            drawn += st.height
            top_x, top_y = max(top_x, float(x.max())), max(top_y, float(y.max()))
        s = served(lg, name)
        if s["throughput_tps"] and s["per_stream_tps"]:
            none = "" if st.height else "; no state identified"
            sc = ax.scatter([s["per_stream_tps"]], [s["throughput_tps"]], marker="*",
                            s=120 if small else 260, color=c, edgecolors="black", zorder=5,
                            label=f"{name}: as served ({s['throughput_tps']:,.0f} t/s "
                                  f"throughput, {s['per_stream_tps']:,.0f} t/s per stream"
                                  f"{none})")
            sc.set_gid(f"{name}|pareto_served")
            drawn += 1
            top_x = max(top_x, s["per_stream_tps"])
            top_y = max(top_y, s["throughput_tps"])
    ax.set_xlim(0, 1.12 * top_x or 1)
    ax.set_ylim(0, 1.12 * top_y or 1)
    ax.set_xlabel("per-stream decode t/s")
    ax.set_ylabel("aggregate t/s (all streams)")
    return drawn


def legend_handles(ax) -> list:
    """The axes' legend entries with markers of one size (the states' areas vary)."""
    from matplotlib.lines import Line2D

    out = []
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        star = "as served" in lab
        color = h.get_facecolor()[0] if hasattr(h, "get_facecolor") else "grey"
        out.append(Line2D([], [], ls="none", marker="*" if star else "o", markersize=11 if star
                          else 8, markerfacecolor=color, markeredgecolor="black" if star
                          else color, alpha=1.0 if star else 0.55, label=lab))
    return out


def plot_pareto(logs_list, labels=None) -> Figure:
    """The passive Pareto of one or more logs (module docstring).

    Example::

        plot_pareto([logscope.read("np1.log"), logscope.read("np4.log")]).savefig("pareto.png")
    """
    if not isinstance(logs_list, (list, tuple)):
        logs_list = [logs_list]
    labels = list(labels or []) + [None] * len(logs_list)
    names = [label_of(lg, lab) for lg, lab in zip(logs_list, labels, strict=False)]
    fig = Figure(figsize=(8.5, 6.4), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    if draw_pareto(ax, logs_list, names) == 0:
        files = [Path(f.file).name for lg in logs_list for f in getattr(lg, "files", [])]
        raise NoData(f"no decode state or served figure in {', '.join(files) or 'the input'}")
    ax.grid(True, alpha=0.3)
    ax.set_title("Passive Pareto: each point a concurrency state the workload visited "
                 "(label = streams decoding)\nline = each log's frontier; ★ = what the "
                 "workload got (served throughput, speed per stream as served)", fontsize=10)
    ax.legend(handles=legend_handles(ax), fontsize=8, loc="upper center",
              bbox_to_anchor=(0.5, -0.1), frameon=False)
    return fig


__all__ = ["plot_pareto", "draw_pareto"]
