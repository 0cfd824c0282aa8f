"""Render nvidia-smi telemetry fixtures from the documented formats, with their golden frames.

Writes ``fixtures/telemetry/rendered/<name>.{csv,txt}`` and ``<name>.golden.json`` (the
``gpu_samples`` rows the renderer put in, written from its own values, not by the reader).
Shapes follow ``nvidia-smi --help-query-gpu`` / ``nvidia-smi dmon -h`` and the real H200 files
in fixtures/telemetry/h200/: the CSV header names each field with its unit in brackets (some
renamed: clocks.sm -> clocks.current.sm), values carry units unless ``nounits``, ``[N/A]`` and
``[Not Supported]`` are missing values; dmon prints two ``#`` header lines, repeats them every
``-c``-less screenful, right-aligns cells and prints ``-`` for what it cannot read.

    python scripts/render_telemetry_fixtures.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "telemetry" / "rendered"
T0 = datetime(2026, 12, 1, 20, 0, 0, 125000, tzinfo=UTC)
HEADER_NAMES = {"clocks.sm": "clocks.current.sm", "clocks.mem": "clocks.current.memory"}
UNITS = {"power.draw": "W", "power.limit": "W", "clocks.sm": "MHz", "clocks.mem": "MHz",
         "utilization.gpu": "%", "memory.used": "MiB", "memory.total": "MiB"}
COLUMN = {"timestamp": "ts", "index": "gpu", "name": "name", "pstate": "pstate",
          "power.draw": "power_w", "power.limit": "power_limit_w", "clocks.sm": "sm_clock_mhz",
          "clocks.mem": "mem_clock_mhz", "utilization.gpu": "util_gpu_pct",
          "memory.used": "memory_used_mib", "memory.total": "memory_total_mib",
          "temperature.gpu": "temp_c"}
NAMES = ["NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", "NVIDIA A100-SXM4-80GB",
         "NVIDIA A100-SXM4-80GB"]


def sample(k: int, gpu: int, n_gpus: int) -> dict:
    """The true values of sample k of one GPU (deterministic)."""
    busy = 2 <= k <= 6
    return {
        "gpu": gpu, "name": NAMES[gpu % len(NAMES)] if n_gpus < 4 else NAMES[2],
        "pstate": "P2" if busy else "P8",
        "power_w": round((300.0 if busy else 25.0) + 10 * gpu + 1.25 * k, 2),
        "power_limit_w": 350.0 if gpu % 2 == 0 else 245.0,
        "sm_clock_mhz": 1905 if busy else 210, "mem_clock_mhz": 9751 if busy else 405,
        "util_gpu_pct": 97 if busy else 0, "memory_used_mib": 20480 + 512 * gpu,
        "memory_total_mib": 24576, "temp_c": 40 + k + gpu,
    }


def cell(field: str, row: dict, units: bool, na: set[str]) -> str:
    col = COLUMN[field]
    if field in na:
        return "[N/A]" if field != "memory.total" else "[Not Supported]"
    v = row[col]
    if field == "timestamp":
        return v.strftime("%Y/%m/%d %H:%M:%S.") + f"{v.microsecond // 1000:03d}"
    if isinstance(v, float):
        v = f"{v:.2f}"
    return f"{v} {UNITS[field]}" if units and field in UNITS else str(v)


def query(name: str, fields: list[str], n_gpus: int, *, header: bool, units: bool,
          n: int = 8, interval_ms: int = 500, na: dict[tuple[int, int], set[str]] | None = None,
          ) -> None:
    lines, rows = [], []
    if header:
        lines.append(", ".join(HEADER_NAMES.get(f, f) + (f" [{UNITS[f]}]" if f in UNITS else "")
                               for f in fields))
    for k in range(n):
        for g in range(n_gpus):
            # each GPU's line is stamped when nvidia-smi reads it: a few ms apart
            ts = T0 + timedelta(milliseconds=k * interval_ms + 3 * g)
            row = {"ts": ts, **sample(k, g, n_gpus)}
            missing = (na or {}).get((k, g), set())
            lines.append(", ".join(cell(f, row, units, missing) for f in fields))
            got = {COLUMN[f]: (None if f in missing else row[COLUMN[f]]) for f in fields}
            got["ts"] = ts.isoformat()
            got["line"] = len(lines)
            rows.append(got)
    (OUT / f"{name}.csv").write_text("\n".join(lines) + "\n")
    golden = {"format": "nvidia-smi-query" if header else "nvidia-smi-query-noheader",
              "fields": None if header else fields, "rows": rows}
    (OUT / f"{name}.golden.json").write_text(json.dumps(golden, indent=1) + "\n")


DMON_COLS = {"p": [("pwr", "W", "power_w"), ("gtemp", "C", "temp_c"),
                   ("mtemp", "C", "mem_temp_c")],
             "u": [("sm", "%", "util_gpu_pct"), ("mem", "%", "util_mem_pct"), ("enc", "%", None),
                   ("dec", "%", None)],
             "c": [("mclk", "MHz", "mem_clock_mhz"), ("pclk", "MHz", "sm_clock_mhz")],
             "m": [("fb", "MB", "memory_used_mib"), ("bar1", "MB", None)]}


def dmon(name: str, groups: str, n_gpus: int, *, dt: bool, n: int = 7, every: int = 4,
         dash: set[str] = frozenset()) -> None:
    cols = [c for g in groups for c in DMON_COLS[g]]
    lines, rows = [], []

    def headers() -> None:
        pre = ("#Date        Time         gpu" if dt else "# gpu")
        unit = ("#YYYYMMDD    HH:MM:SS     Idx" if dt else "# Idx")
        lines.append(pre + "".join(f" {c:>6}" for c, _, _ in cols) + " ")
        lines.append(unit + "".join(f" {u:>6}" for _, u, _ in cols) + " ")

    printed = 0
    for k in range(n):
        for g in range(n_gpus):
            if printed % every == 0:  # dmon repeats its header every screenful
                headers()
            printed += 1
            ts = (T0 + timedelta(seconds=k)).replace(microsecond=0)
            s = sample(k, g, n_gpus)
            vals = {"power_w": int(s["power_w"]), "temp_c": s["temp_c"],
                    "util_gpu_pct": s["util_gpu_pct"], "mem_clock_mhz": s["mem_clock_mhz"],
                    "sm_clock_mhz": s["sm_clock_mhz"], "memory_used_mib": s["memory_used_mib"],
                    "mem_temp_c": s["temp_c"] + 6, "util_mem_pct": s["util_gpu_pct"] // 3}
            cells = []
            got: dict = {"ts": ts.isoformat(), "gpu": g}
            for c, _, col in cols:
                if c in dash or col is None:
                    cells.append("-" if c in dash else "0")
                    if col is not None:
                        got[col] = None
                    continue
                cells.append(str(vals[col]))
                got[col] = vals[col]
            stamp = f" {ts:%Y%m%d}    {ts:%H:%M:%S}{g:>8}" if dt else f"{g:>5}"
            lines.append(stamp + "".join(f" {v:>6}" for v in cells) + " ")
            got["line"] = len(lines)
            rows.append(got)
    (OUT / f"{name}.txt").write_text("\n".join(lines) + "\n")
    golden = {"format": "nvidia-smi-dmon", "fields": None, "rows": rows}
    (OUT / f"{name}.golden.json").write_text(json.dumps(golden, indent=1) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    full = ["timestamp", "index", "name", "pstate", "power.draw", "power.limit", "clocks.sm",
            "clocks.mem", "utilization.gpu", "memory.used", "memory.total", "temperature.gpu"]
    query("query-1gpu-units", full, 1, header=True, units=True,
          na={(3, 0): {"power.limit"}, (5, 0): {"memory.total"}})
    query("query-2gpu-nounits", ["index", "timestamp", "power.draw", "utilization.gpu",
                                 "clocks.sm", "memory.used"], 2, header=True, units=False,
          na={(4, 1): {"power.draw"}})
    query("query-4gpu-noheader", ["timestamp", "index", "power.draw", "power.limit",
                                  "utilization.gpu", "clocks.sm"], 4, header=False, units=False)
    query("query-4gpu-noheader-units", ["timestamp", "index", "power.draw",
                                        "utilization.gpu"], 4, header=False, units=True,
          interval_ms=1000)
    dmon("dmon-1gpu-pucm-dt", "pucm", 1, dt=True, dash={"mtemp"})
    dmon("dmon-2gpu-pu-dt", "pu", 2, dt=True, every=5)
    dmon("dmon-4gpu-pc-dt", "pc", 4, dt=True, every=6, dash={"pclk"})


if __name__ == "__main__":
    main()
