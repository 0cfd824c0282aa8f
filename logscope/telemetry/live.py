"""``logscope follow --telemetry gpu.csv``: tail an nvidia-smi file beside the followed log and
export ``logscope_gpu_power_watts{gpu}`` and ``logscope_energy_joules_total{phase}``.

Live, a request's prefill/decode split is not known until its timing block is printed, so the
live counters attribute each sample interval's energy (trapezoid, per GPU, summed) by the
state of the followed slots when the sample is read: ``prefill`` while some slot has launched
a task (or printed prompt progress) and not yet printed decode progress, else ``decode`` while
some slot decodes, else ``idle``. The batch figures (``report``) share energy exactly
(docs/energy.md); these are for dashboards.

    >>> from prometheus_client import CollectorRegistry
    >>> lp = LivePower("gpu.csv", CollectorRegistry())
    >>> lp.observe({"kind": "task_launch", "slot": 0}); lp.phase()
    'prefill'
"""

from __future__ import annotations

import calendar
import os
import re
import threading
from datetime import datetime
from typing import Any

from logscope.telemetry.nvidia import DMON_FIELDS, NULL_VALUES, QUERY_FIELDS, grammar


class LivePower:
    """Reads new lines of a telemetry file every ``interval`` seconds in a daemon thread."""

    def __init__(self, path: str, registry: Any | None, interval: float = 0.5,
                 from_start: bool = False, fields: list[str] | None = None):
        self.path = path
        self.interval = interval
        self.pos = 0 if from_start else _size(path)
        self.partial = ""
        self.header: list[str] | None = [f.strip() for f in fields] if fields else None
        self.dmon = False
        self.slots: dict[Any, str] = {}
        self.last: dict[int, tuple[float, float]] = {}  # gpu -> (t, W)
        self.energy: dict[str, float] = {"prefill": 0.0, "decode": 0.0, "idle": 0.0}
        self.power_now: dict[int, float] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.g_power = self.c_energy = None
        if registry is not None:
            from prometheus_client import Counter, Gauge

            self.g_power = Gauge("logscope_gpu_power_watts", "Last power.draw per GPU "
                                 "(nvidia-smi telemetry beside the log).", ["gpu"],
                                 registry=registry)
            self.c_energy = Counter("logscope_energy_joules", "GPU energy (all GPUs in the "
                                    "telemetry, summed) by what the followed server did: "
                                    "prefill, decode, idle.", ["phase"], registry=registry)
        self.rx = {v.kind: re.compile(v.regex) for v in grammar().variants}

    # -- the followed log's side ---------------------------------------------------------------
    def observe(self, ev: dict[str, Any]) -> None:
        kind, slot = ev.get("kind"), ev.get("slot")
        with self._lock:
            if kind in ("task_launch", "prompt_progress"):
                self.slots[slot] = "prefill"
            elif kind in ("decode_progress", "prompt_eval"):
                self.slots[slot] = "decode"
            elif kind in ("release", "cancel"):
                self.slots.pop(slot, None)

    def phase(self) -> str:
        with self._lock:
            states = set(self.slots.values())
        return "prefill" if "prefill" in states else "decode" if states else "idle"

    # -- the telemetry side --------------------------------------------------------------------
    def start(self) -> LivePower:
        threading.Thread(target=self._loop, name="logscope-telemetry", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def poll(self) -> int:
        """Read what was appended since the last poll; returns the samples read."""
        size = _size(self.path)
        if size < self.pos:  # truncated or replaced: start over
            self.pos, self.partial = 0, ""
        if size == self.pos:
            return 0
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read(size - self.pos)
        except OSError:
            return 0
        self.pos += len(data)
        text = self.partial + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self.partial = lines.pop()
        n = 0
        for line in lines:
            n += self.line(line.rstrip("\r"))
        return n

    def line(self, text: str) -> int:
        """One telemetry line: a header updates the columns, a row is a sample (returns 1)."""
        if self.rx["dmon_header"].match(text):
            self.header, self.dmon = text.lstrip("#").split(), True
            return 0
        if self.rx["dmon_units"].match(text):
            return 0
        if self.rx["smi_header"].match(text):
            self.header = [c.split(" [", 1)[0].strip() for c in text.split(", ")]
            self.dmon = False
            return 0
        if self.header is None:
            return 0
        cells = text.split() if self.dmon else [c.strip() for c in text.split(", ")]
        if len(cells) != len(self.header):
            return 0
        row = dict(zip(self.header, cells, strict=True))
        names = DMON_FIELDS if self.dmon else QUERY_FIELDS
        vals: dict[str, str] = {}
        for k, v in row.items():
            col = names.get(k)
            if col and col not in vals and v not in NULL_VALUES:
                vals[col] = v
        if self.dmon:
            stamp = " ".join(x for x in (row.get("Date"), row.get("Time")) if x)
            fmt = "%Y%m%d %H:%M:%S" if "Date" in row else "%H:%M:%S"
        else:
            stamp, fmt = vals.get("ts", ""), "%Y/%m/%d %H:%M:%S.%f"
        t = _parse_time(stamp, fmt)
        power = _float(vals.get("power_w"))
        gpu = int(_float(vals.get("gpu")) or 0)
        if t is None or power is None:
            return 0
        self.sample(gpu, t, power)
        return 1

    def sample(self, gpu: int, t: float, power: float) -> None:
        prev = self.last.get(gpu)
        self.last[gpu] = (t, power)
        self.power_now[gpu] = power
        if self.g_power is not None:
            self.g_power.labels(str(gpu)).set(power)
        if prev is None or t <= prev[0]:
            return
        joules = (t - prev[0]) * (power + prev[1]) / 2
        ph = self.phase()
        self.energy[ph] += joules
        if self.c_energy is not None:
            self.c_energy.labels(ph).inc(joules)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _float(v: str | None) -> float | None:
    if v is None:
        return None
    m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)", v)
    return float(m.group(1)) if m else None


def _parse_time(stamp: str, fmt: str) -> float | None:
    """Seconds of a telemetry timestamp taken as UTC (only differences are used live)."""
    try:
        d = datetime.strptime(stamp, fmt)
    except ValueError:
        return None
    if fmt == "%H:%M:%S":  # dmon -o T: no date
        d = d.replace(year=2000)
    return calendar.timegm(d.timetuple()) + d.microsecond / 1e6
