"""Energy figures for ``report``, ``compare`` and ``card`` (an ingest joined to telemetry by
:func:`logscope.telemetry.attach`). Definitions: docs/energy.md.

    >>> from logscope.telemetry import read_with_telemetry
    >>> d = "fixtures/telemetry/h200/generated-gpu-colors-tty"
    >>> e = energy_headline(read_with_telemetry([d + ".log", d + ".smi.csv"]))
    >>> e["clock_offset_source"], abs(e["requests_j"] + e["idle_j"] - e["total_j"]) < 1e-6
    ('estimated', True)
"""

from __future__ import annotations

from typing import Any

import polars as pl


def _runs(logs) -> pl.DataFrame | None:
    runs = logs.tables.get("energy_runs")
    return runs if runs is not None and runs.height else None


def energy_by_depth(logs) -> pl.DataFrame:
    """Per depth bucket of the completed requests (context at the start of decoding, as the
    depth profile buckets it): n, prefill and decode mJ per token, decode tokens per joule."""
    from logscope.analysis._util import depth_bucket

    schema = {"depth": pl.Int64, "n": pl.UInt32, "prefill_mj_per_token": pl.Float64,
              "decode_mj_per_token": pl.Float64, "decode_tps_per_w": pl.Float64}
    req = logs.tables.get("requests")
    if req is None or "decode_energy_j" not in req.columns:
        return pl.DataFrame(schema=schema)
    r = req.filter(pl.col("decode_energy_j").is_not_null(), pl.col("gen_tokens") > 0)
    if r.height == 0:
        return pl.DataFrame(schema=schema)
    depth = pl.col("cached_tokens").fill_null(0) + pl.col("prompt_tokens").fill_null(0)
    r = r.with_columns(depth.map_elements(depth_bucket, return_dtype=pl.Int64).alias("depth"))
    return r.group_by("depth").agg(
        pl.len().cast(pl.UInt32).alias("n"),
        (1e3 * pl.col("prefill_energy_j").sum() / pl.col("prompt_tokens").sum())
        .alias("prefill_mj_per_token"),
        (1e3 * pl.col("decode_energy_j").sum() / pl.col("gen_tokens").sum())
        .alias("decode_mj_per_token"),
        (pl.col("gen_tokens").sum() / pl.col("decode_energy_j").sum()).alias("decode_tps_per_w"),
    ).sort("depth").cast(schema)


def energy_headline(logs) -> dict[str, Any] | None:
    """``headline[label].energy`` of the JSON report, or None without telemetry.

    ``total_j`` (power integrated over the runs' time), ``idle_j`` (no request active, plus
    the idle baseline with ``--net-of-idle``), ``requests_j`` (the requests' ``energy_j``
    summed: ``requests_j + idle_j == total_j``), ``clock_offset_s`` (wall-clock time of the
    log's zero: the first run's), ``clock_offset_source`` (log, given, estimated),
    ``clock_fit_r`` / ``clock_fit_spread_s`` (estimated only), power and per-token figures;
    the whole run: ``run_j`` over ``run_s`` (each run from its first request's arrival to its
    last response, idle and stalls included), ``work_j`` over ``work_s`` (its intervals with
    work in progress only), ``completion_tokens`` and ``run_j_per_token`` /
    ``work_j_per_token``.

    Example: ``energy_headline(read_with_telemetry(["server.log", "gpu.csv"]))["total_j"]``
    """
    runs = _runs(logs)
    if runs is None:
        return None
    req = logs.tables.get("requests")
    requests_j = float(req["energy_j"].sum()) if req is not None else 0.0
    first = runs.row(0, named=True)
    tot = runs.select(pl.col("total_j", "idle_j", "prefill_j", "decode_j", "prompt_tokens",
                             "gen_tokens", "covered_s", "run_j", "work_j", "work_s",
                             "completion_tokens").sum(),
                      (pl.col("run_t1") - pl.col("run_t0")).sum().alias("run_s")
                      ).row(0, named=True)
    ctok = tot["completion_tokens"]
    ptok, gtok = tot["prompt_tokens"], tot["gen_tokens"]
    return {
        "total_j": tot["total_j"], "idle_j": tot["idle_j"], "requests_j": requests_j,
        "prefill_j": tot["prefill_j"], "decode_j": tot["decode_j"],
        "clock_offset_s": first["clock_offset_s"],
        "clock_offset_source": first["clock_offset_source"],
        "clock_fit_r": first["clock_fit_r"], "clock_fit_spread_s": first["clock_fit_spread_s"],
        "gpus": first["gpus"], "runs": runs.height, "seconds": tot["covered_s"],
        "net_of_idle": bool(first["net_of_idle"]),
        "idle_w": first["idle_w"],
        "mean_power_w": tot["total_j"] / tot["covered_s"] if tot["covered_s"] else None,
        "busy_power_w": first["busy_power_w"] if runs.height == 1 else None,
        "power_limit_w": first["power_limit_w"],
        "prefill_mj_per_token": 1e3 * tot["prefill_j"] / ptok if ptok else None,
        "decode_mj_per_token": 1e3 * tot["decode_j"] / gtok if gtok else None,
        "decode_tps_per_w": gtok / tot["decode_j"] if tot["decode_j"] > 0 else None,
        "run_j": tot["run_j"], "run_s": tot["run_s"], "work_j": tot["work_j"],
        "work_s": tot["work_s"], "completion_tokens": ctok,
        "run_j_per_token": tot["run_j"] / ctok if ctok else None,
        "work_j_per_token": tot["work_j"] / ctok if ctok else None,
        "by_depth": energy_by_depth(logs).to_dicts(),
    }


def energy_per_token(logs) -> dict[str, Any]:
    """Energy per token of one series (a ``Logs`` joined to telemetry, or a list of them,
    pooled): ``{"prefill_j_per_token", "decode_j_per_token", "decode_tps_per_w", "n"}`` —
    Σ prefill J / Σ computed prompt tokens, Σ decode J / Σ generated tokens, Σ generated
    tokens / Σ decode J (the same sums as the report's energy headline), and ``n`` the
    completed requests with decode energy. Values are None without telemetry (``n`` 0).
    Window figures: power is sampled every 0.5-1 s and shared among the requests active.

    Example: energy_per_token(read_with_telemetry(["server.log", "gpu.csv"]))["decode_j_per_token"]
    """
    items = logs if isinstance(logs, (list, tuple)) else [logs]
    pre = dec = 0.0
    ptok = gtok = n = 0
    seen = False
    for lg in items:
        runs = _runs(lg)
        if runs is None:
            continue
        seen = True
        t = runs.select(pl.col("prefill_j", "decode_j", "prompt_tokens", "gen_tokens").sum())
        row = t.row(0, named=True)
        pre += row["prefill_j"] or 0.0
        dec += row["decode_j"] or 0.0
        ptok += row["prompt_tokens"] or 0
        gtok += row["gen_tokens"] or 0
        req = lg.tables.get("requests")
        if req is not None and "decode_energy_j" in req.columns:
            n += req.filter(pl.col("decode_energy_j").is_not_null()).height
    if not seen:
        return {"prefill_j_per_token": None, "decode_j_per_token": None,
                "decode_tps_per_w": None, "n": 0}
    return {"prefill_j_per_token": pre / ptok if ptok else None,
            "decode_j_per_token": dec / gtok if gtok else None,
            "decode_tps_per_w": gtok / dec if dec > 0 else None, "n": n}


def _num(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def energy_lines(e: dict[str, Any] | None) -> list[str]:
    """The report's Markdown bullets for :func:`energy_headline` (none without telemetry)."""
    if not e:
        return []
    clock = {"log": "the log's wall clock", "given": "--start-time",
             "estimated": "placed by the run's busy/idle pattern against utilisation/power "
                          f"(fit r = {_num(e['clock_fit_r'], 2)} on its span, best offsets "
                          f"within {_num(e['clock_fit_spread_s'], 2)} s)"}[e["clock_offset_source"]]
    out = [f"- energy: {_num(e['total_j'] / 1e3, 2)} kJ over {_num(e['seconds'])} s on GPU(s) "
           f"{','.join(map(str, e['gpus']))} (mean {_num(e['mean_power_w'])} W, limit "
           f"{_num(e['power_limit_w'], 0)} W): requests {_num(e['requests_j'] / 1e3, 2)} kJ, "
           f"idle {_num(e['idle_j'] / 1e3, 2)} kJ (idle power {_num(e['idle_w'])} W"
           + (", requests net of it" if e["net_of_idle"] else "") + f"); clock: {clock}",
           f"- energy per token: prefill {_num(e['prefill_mj_per_token'])} mJ, decode "
           f"{_num(e['decode_mj_per_token'])} mJ ({_num(e['decode_tps_per_w'], 2)} t/s per W)"]
    if e.get("run_j_per_token") is not None:
        out.append(
            f"- energy per completion token, whole run: {_num(e['run_j_per_token'], 3)} J "
            f"({_num(e['run_j'] / 1e3, 2)} kJ over {_num(e['run_s'])} s from the first "
            f"request's arrival to the last response, idle and stalls included, ÷ "
            f"{e['completion_tokens']:,} completion tokens); busy only "
            f"{_num(e['work_j_per_token'], 3)} J ({_num(e['work_s'])} s with work in progress)")
    if len(e["by_depth"]) > 1:
        out.append("- energy by depth: " + "; ".join(
            f"{_depth(b['depth'])} n={b['n']}: prefill {_num(b['prefill_mj_per_token'])} mJ/t, "
            f"decode {_num(b['decode_mj_per_token'])} mJ/t" for b in e["by_depth"]))
    return out


def _depth(d: int | None) -> str:
    if d is None:
        return "?"
    return f"d{d // 1024}k" if d >= 1024 else f"d{d}"


def energy_metrics(e: dict[str, Any] | None) -> dict[str, tuple[float | None, str | None]]:
    """Rows of ``logscope compare`` from :func:`energy_headline` (none without telemetry):
    power limit, mean power, mJ per token, t/s per W, as (value, note)."""
    if e is None:
        return {}
    busy = e["busy_power_w"]
    return {"power limit W": (e["power_limit_w"], None),
            "mean power W (requests in progress)": (busy, None),
            "mean power W (whole run)": (e["mean_power_w"], None),
            "prefill mJ/token": (e["prefill_mj_per_token"], None),
            "decode mJ/token": (e["decode_mj_per_token"], None),
            "decode t/s per W": (e["decode_tps_per_w"], None),
            "J per completion token (whole run)": (e.get("run_j_per_token"), None),
            "J per completion token (busy only)": (e.get("work_j_per_token"), None)}


def card_lines(e: dict[str, Any] | None) -> list[str]:
    """The card's energy line (two short lines of text), none without telemetry."""
    if not e:
        return []
    out = [f"energy: decode {_num(e['decode_mj_per_token'], 0)} mJ/t, prefill "
           f"{_num(e['prefill_mj_per_token'], 1)} mJ/t, {_num(e['decode_tps_per_w'], 2)} t/s/W",
           f"  {_num(e['busy_power_w'], 0)} W busy, {_num(e['idle_w'], 0)} W idle, limit "
           f"{_num(e['power_limit_w'], 0)} W (clock {e['clock_offset_source']})"]
    if e.get("run_j_per_token") is not None:   # what the bill follows: idle and stalls included
        out.append(f"  whole run: {_num(e['run_j_per_token'], 3)} J per completion token")
    return out
