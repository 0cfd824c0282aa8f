"""The human summary printed by ``logscope ingest`` (the JSON one is ``Logs.summary()``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from logscope.ingest import Logs


def _pct(s: pl.Series) -> str:
    s = s.drop_nulls()
    if s.len() == 0:
        return "-"
    q = [s.quantile(x, interpolation="linear") for x in (0.1, 0.5, 0.9)]
    return f"p10 {q[0]:.1f} · p50 {q[1]:.1f} · p90 {q[2]:.1f}  (n={s.len()})"


DRIFT_GROUPS = 5  # shapes of unrecognized lines shown in the summary


def _drift_lines(logs: Logs) -> list[str]:
    from logscope.classify.drift import group_unrecognized

    unrec = logs.get("unrecognized")
    if unrec is None or unrec.height == 0:
        return []
    groups = group_unrecognized(unrec)
    out = []
    for g in groups.head(DRIFT_GROUPS).iter_rows(named=True):
        ex = g["example"] if len(g["example"]) <= 160 else g["example"][:160] + "…"
        out.append(f"   {g['count']:>6} × {g['engine']}: {g['shape'][:160]}")
        out.append(f"            e.g. {g['example_file']}:{g['example_line']}: {ex}")
    if groups.height > DRIFT_GROUPS:
        out.append(f"   … and {groups.height - DRIFT_GROUPS} more shape(s)")
    return out


def _rejoined_folded(logs: Logs) -> list[str]:
    """A line each for records a terminal wrapped (rejoined) and Ray's folded lines."""
    out = []
    joined = [(f.file, n) for f in logs.files for n in f.rejoined]
    if joined:
        at = ", ".join(f"{Path(f).name}:{n}" for f, n in joined[:3])
        out.append(f"  {len(joined)} record(s) a terminal wrapped onto two lines, rejoined "
                   f"({at}{', …' if len(joined) > 3 else ''}); each second line is counted "
                   "with the ignored ones")
    folded = sum(f.folded for f in logs.files)
    if folded:
        n = sum(f.folded_lines for f in logs.files)
        out.append(f"  {n} line(s) end in Ray's '[repeated Nx across cluster]': {folded} alike "
                   "line(s) of other processes were folded away by Ray and are not in the log; "
                   "each printed line counts once, with its own figures")
    return out


def render(logs: Logs) -> str:
    s = logs.summary()
    out: list[str] = []
    if s["unrecognized"]:
        out.append(f"!! {s['unrecognized']} line(s) look like server lines but match no known "
                   "format (a new server version?) — see the `unrecognized` table")
        out.extend(_drift_lines(logs))
    out.append(f"{s['lines']} lines in {len(logs.files)} file(s): engines "
               f"{', '.join(s['engines']) or 'none'}, {s['runs']} server run(s)")
    routers = [e for e in s["engines"] if e.endswith("-router")]
    if routers:
        out.append(f"  {', '.join(routers)} log: a router prints no benchmark figures; ingest "
                   "the logs of the servers behind it")
    ev = sum(s["events"].values())
    out.append(f"  {ev} events, {s['ignored']} ignored, {s['other']} other (a server's lines "
               f"with no known format and no figure: no alarm), {s['unrecognized']} unrecognized")
    bad = sum(f.bad_utf8 for f in logs.files)
    capped = sum(f.capped for f in logs.files)
    if bad or capped:
        out.append(f"  {bad} line(s) with invalid UTF-8 (replaced), {capped} over-long line(s) cut")
    out.extend(_rejoined_folded(logs))
    out.append("  events: " + ", ".join(f"{k} {v}" for k, v in s["events"].items()))
    req = logs.get("requests")
    if req is not None and req.height:
        st = dict(req.group_by("status").len().iter_rows())
        out.append(f"requests: {req.height} ("
                   + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + ")")
        out.append("  prefill t/s (exact, per request, cache hits excluded): "
                   + _pct(req.filter(pl.col("prompt_tokens") >= 32)["prompt_tps"]))
        out.append("  decode t/s  (exact, per request):                     "
                   + _pct(req.filter(pl.col("gen_tokens") >= 16)["decode_tps"]))
    out.extend(headline_lines(logs))
    return "\n".join(out)


def headline_lines(logs: Logs) -> list[str]:
    """The headline figures, each from its one definition (:mod:`logscope.analysis.metrics`),
    formatted as ``report``, ``compare`` and ``card`` print them; per server where a wrapper
    interleaved several in one log (as ``report`` gives them)."""
    from logscope.analysis.servers import servers_of

    parts = servers_of(logs)
    if len(parts) == 1:
        return _headline_lines(logs)
    out = []
    for name, one in parts.items():
        out.append(f"  server {name}:")
        out += ["  " + line for line in _headline_lines(one)]
    return out


def _headline_lines(logs: Logs) -> list[str]:
    from logscope.analysis.metrics import fmt_figure, headline_figures

    h = headline_figures(logs)
    out = []
    d = h["decode_tps"]
    if d["value"] is not None and d.get("decoding"):
        out.append(f"  decode t/s per stream at {d['decoding']} decoding (the state seen "
                   f"longest): {fmt_figure('decode_tps', d['value'])} ({d['exactness']}, "
                   f"n = {d['n']}; every state: logscope report)")
    elif d["value"] is not None:
        out.append(f"  decode t/s median: {fmt_figure('decode_tps', d['value'])} "
                   f"({d['exactness']}, n = {d['n']})")
    else:
        out += _quiet_line(logs)
    g = h["aggregate_decode"]
    if g["value"] is not None:
        out.append(f"  decode rate while {g['active']} streams decode: "
                   f"{fmt_figure('aggregate_decode', g['value'])} t/s ({g['exactness']}; "
                   "not throughput: logscope report gives the served throughput)")
    a, m = h["acceptance_rate"], h["mean_accepted_length"]
    if a["value"] is not None or m["value"] is not None:
        out.append(f"  draft acceptance: {fmt_figure('acceptance_rate', a['value'])} over "
                   f"{max(a['n'], m['n'])} request(s)/window(s), mean accepted length "
                   f"{fmt_figure('mean_accepted_length', m['value'])} ({m['how']})")
    return out


def _quiet_line(logs: Logs) -> list[str]:
    """Window lines with no state identified by the fit: the state with the most quiet
    intervals, at their depth (:func:`logscope.analysis.window_fit.state_fit`)."""
    from logscope.analysis.metrics import fmt_figure
    from logscope.analysis.window_fit import quiet_kv_text, state_fit

    sf = state_fit(logs)
    q = sf.filter(pl.col("quiet_per_stream") > 0)
    if q.height == 0:
        return _no_window_figure(sf)
    r = q.sort("quiet_windows", "decoding").row(-1, named=True)
    n, kv = r["quiet_windows"], quiet_kv_text(r)
    return [f"  decode t/s per stream at {r['decoding']} decoding in its {n} quiet interval"
            f"{'s' if n > 1 else ''}: {fmt_figure('decode_tps', r['quiet_per_stream'])} "
            f"(window average{', at ' + kv if kv else ''}, not the state's mean: no state "
            "identified by the window fit; every state: logscope report)"]


def _no_window_figure(sf: pl.DataFrame) -> list[str]:
    """Window lines that give no per-stream figure at all: a one-stream vLLM log's busiest
    interval (a lower bound), else that there is none and where the reason is."""
    from logscope.analysis.metrics import fmt_figure

    if sf.height == 0:
        return []
    b = sf.filter(pl.col("busiest_per_stream") > 0)
    if b.height:
        r = b.row(0, named=True)
        return [f"  decode t/s per stream at {r['decoding']} decoding: at least "
                f"{fmt_figure('decode_tps', r['busiest_per_stream'])} in the busiest window "
                "interval (a lower bound of the rate at its depth, not the run's mean: every "
                "interval also holds a prompt and the idle before it; why and the setting "
                "that cures it: logscope report)"]
    return ["  decode t/s per stream: no state identified by the window fit (its intervals "
            "mix states or hold prompts; why and the setting that cures it: logscope report)"]


def json_summary(logs: Logs) -> dict:
    """``Logs.summary()`` plus ``headline``: every headline figure (value, n, exactness),
    rounded as the server prints (0.01; acceptance to 3 significant digits), of the whole
    ingest; and ``servers``, each server's own, where a wrapper interleaved several in a log.

    Example::

        json_summary(logscope.read("server.log"))["headline"]["decode_tps"]["value"]
    """
    from logscope.analysis.metrics import headline_figures
    from logscope.analysis.report import _round_obj

    s = dict(logs.summary())
    from logscope.analysis.metrics import sig

    def rounded(h: dict) -> dict:
        out = {k: _round_obj(v) for k, v in h.items()}
        out["acceptance_rate"]["value"] = sig(h["acceptance_rate"]["value"], 3)
        return out

    s["headline"] = rounded(headline_figures(logs))
    from logscope.analysis.servers import servers_of

    parts = servers_of(logs)
    if len(parts) > 1:  # several servers one wrapper interleaved: each one's own (as report)
        s["servers"] = {name: rounded(headline_figures(one)) for name, one in parts.items()}
    return s
