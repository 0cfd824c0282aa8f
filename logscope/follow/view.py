"""The live terminal view of ``logscope follow`` (rich), refreshed at most 4 times a second.

llama-server, one row per slot:

* ``phase`` — what the slot is doing *now*, from the last line about it: ``prefill 59%``
  (a progress tick), ``prefill`` (launched, no tick yet: short prompts print none), ``decode``
  (a decode tick), ``finishing`` (its timing lines are being printed), ``idle`` (released),
  ``cancelled``, ``error``. ``age`` is how long ago that line was read, so a stale figure shows
  as one.
* ``depth`` — tokens in the slot's context: the slot position printed by the progress lines
  (older builds), cached + computed + generated so far where those are known, the release's
  ``n_tokens`` once done. ``cached`` — the reused prefix: printed by older builds (``kv cache
  rm``/``memory_seq_rm``), derived at release otherwise (n_tokens − prompt − generated + 1).
* ``prefill t/s`` — prompt tokens *computed* per second (cache hits excluded): ``~`` marks the
  live tick rate while prefilling (cumulative since the prompt started), a plain number the
  server's exact per-request figure once printed.
* ``decode t/s`` — ``~`` the live ``tg_3s`` (or cumulative ``tg``) while decoding, then the
  exact per-request rate; ``accept`` — draft acceptance (three significant digits) and
  ``len`` the mean accepted length, where speculative decoding prints them; ``recent decode``
  — a sparkline of the slot's decode t/s over the last minutes (server clock where printed).

SGLang / vLLM, one row per DP group / engine: running, queued, KV usage and the window-average
throughputs and acceptance of their periodic lines. Only columns with a value in some row are
shown (llama-server prints no queue or KV figures, so there are no such columns for it).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

SPARK = "▁▂▃▄▅▆▇█"
SPARK_SECONDS = 300.0  # the sparkline spans the last 5 minutes
SPARK_WIDTH = 20


def sig3(v: float | None) -> str:
    """Three significant digits: 0.338, 0.500, 1.00, 2.97."""
    if v is None:
        return "-"
    return f"{v:#.3g}".rstrip(".")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _rel(v: Any) -> float | None:
    from logscope.follow.runs import rel_seconds

    return rel_seconds(v)


def sparkline(points: list[tuple[float, float]], now: float, width: int = SPARK_WIDTH,
              span: float = SPARK_SECONDS) -> str:
    """One character per ``span / width`` seconds up to ``now`` (blank: no figure then), the
    height the mean of the figures in it against the highest."""
    if not points:
        return ""
    cells: list[list[float]] = [[] for _ in range(width)]
    step = span / width
    for t, v in points:
        i = int((t - (now - span)) // step)
        if 0 <= i < width:
            cells[i].append(v)
        elif i == width:
            cells[-1].append(v)
    means = [sum(c) / len(c) if c else None for c in cells]
    top = max((m for m in means if m is not None), default=0.0)
    if top <= 0:
        return ""
    return "".join(" " if m is None else SPARK[min(len(SPARK) - 1,
                                                   int(m / top * (len(SPARK) - 1) + 0.5))]
                   for m in means).rstrip()


class LiveView:
    """Keeps per-slot state from events (:meth:`update`) and renders it (:meth:`render`)."""

    def __init__(self, path: str, max_requests: int = 8, clock=time.time) -> None:  # noqa: ANN001
        self.path = path
        self.clock = clock
        self.lock = threading.Lock()
        self.slots: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: deque[dict[str, Any]] = deque(maxlen=max_requests)
        self.task_slot: dict[Any, str] = {}
        self.counts: dict[str, int] = {}
        self.events = 0
        self.runs = 0
        self.last_event: float | None = None
        self.server_clock: float | None = None  # llama-server's relative clock, latest seen
        self.live = None

    # -- terminal --------------------------------------------------------------------------
    def start(self) -> None:
        from rich.live import Live

        self.live = Live(get_renderable=self.render, refresh_per_second=4, transient=False,
                         redirect_stdout=False, redirect_stderr=False, screen=False)
        self.live.start()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    # -- state -----------------------------------------------------------------------------
    def _slot(self, engine: str, slot: str) -> dict[str, Any]:
        return self.slots.setdefault((engine, slot), {"spark": deque(maxlen=2000)})

    def update(self, ev: dict[str, Any]) -> None:
        kind = ev.get("kind") or ""
        engine = ev.get("engine") or "-"
        now = _num(ev.get("t_read")) or self.clock()
        with self.lock:
            self.events += 1
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.last_event = now
            self.runs = max(self.runs, int(ev.get("run") or 0))
            if engine == "llama-server":
                self._llama(ev, kind, now)
            elif engine in ("sglang", "vllm"):
                self._window(ev, kind, engine, now)

    def _llama(self, ev: dict[str, Any], kind: str, now: float) -> None:
        slot = ev.get("slot")
        task = ev.get("task")
        if (slot is None or slot == -1) and task not in (None, -1):
            slot = self.task_slot.get(task)  # cancel lines name the task only
        if slot is None or slot == -1:
            return
        key = str(slot)
        s = self._slot("llama-server", key)
        s["seen"] = now
        clock = _rel(ev.get("ts_rel"))
        if clock is not None:
            if self.server_clock is not None and clock < self.server_clock - 1:
                for other in self.slots.values():  # a restart: the old clock's points go
                    other["spark"].clear()
            self.server_clock = clock
        s["t"] = clock if clock is not None else now
        if s.get("clock_rel") is None:
            s["clock_rel"] = clock is not None
        if kind == "task_launch" or (task not in (None, -1) and task != s.get("task")
                                      and kind in ("prompt_progress", "decode_progress")):
            for k in ("cached", "prompt_total", "n_done", "n_gen", "depth", "pp", "pp_live",
                      "tg", "tg_live", "accept", "mean_len", "prompt_tokens", "gen_tokens",
                      "progress"):
                s.pop(k, None)
            s["phase"] = "prefill"
        if task not in (None, -1):
            s["task"] = task
            self.task_slot[task] = key
            if len(self.task_slot) > 256:
                self.task_slot.pop(next(iter(self.task_slot)))
        if kind == "new_prompt":
            s["prompt_total"] = _num(ev.get("prompt_total"))
        elif kind == "cache_trim":
            if s.get("cached") is None:  # the first trim of a task: the cached prefix
                c = _num(ev.get("trim_pos"))
                s["cached"] = c if c is not None else _num(ev.get("cached_tokens"))
        elif kind == "prompt_progress":
            p = _num(ev.get("progress"))
            s["progress"] = p
            s["phase"] = f"prefill {p:.0%}" if p is not None else "prefill"
            if _num(ev.get("n_past")) is not None:  # older builds: the slot position
                s["depth"] = _num(ev["n_past"])
            elif _num(ev.get("n_processed")) is not None:
                s["n_done"] = _num(ev["n_processed"])
                if s.get("cached") is not None:
                    s["depth"] = s["cached"] + s["n_done"]
            if _num(ev.get("pp_tps")) is not None:
                s["pp"], s["pp_live"] = _num(ev["pp_tps"]), True
        elif kind == "prompt_done":
            s["phase"] = "prefill 100%"
            if _num(ev.get("n_past")) is not None:
                s["depth"] = _num(ev["n_past"])
        elif kind == "decode_progress":
            s["phase"] = "decode"
            g = _num(ev.get("n_gen"))
            if g is not None:
                s["n_gen"] = g
                base = (s["cached"] + s["n_done"] if s.get("cached") is not None
                        and s.get("n_done") is not None else None)
                if base is not None:
                    s["depth"] = base + g
            v = _num(ev.get("tg_3s"))
            v = v if v is not None else _num(ev.get("tg"))
            if v is not None:
                s["tg"], s["tg_live"] = v, True
                s["spark"].append((s["t"], v))
        elif kind in ("prompt_eval", "eval", "total", "draft_acceptance", "graphs_reused",
                      "draft_per_position", "spec_stats"):
            s["phase"] = "finishing"
            if kind == "prompt_eval":
                s["prompt_tokens"] = _num(ev.get("prompt_tokens"))
                if _num(ev.get("prompt_tps")) is not None:
                    s["pp"], s["pp_live"] = _num(ev["prompt_tps"]), False
            elif kind == "eval":
                s["gen_tokens"] = _num(ev.get("gen_tokens"))
                if _num(ev.get("eval_tps")) is not None:
                    s["tg"], s["tg_live"] = _num(ev["eval_tps"]), False
                    s["spark"].append((s["t"], s["tg"]))
            elif kind == "draft_acceptance":
                s["accept"] = _num(ev.get("draft_rate"))
                s["mean_len"] = _num(ev.get("mean_len"))
        elif kind == "release":
            s["phase"] = "idle"
            n = _num(ev.get("ctx_tokens"))
            if n is not None:
                s["depth"] = n
                p, g = s.get("prompt_tokens"), s.get("gen_tokens")
                if s.get("cached") is None and p is not None and g is not None:
                    s["cached"] = max(n - p - g + 1, 0)
            self.requests.appendleft({"slot": key, "task": s.get("task"),
                                      "prompt_tokens": s.get("prompt_tokens"),
                                      "cached": s.get("cached"), "depth": s.get("depth"),
                                      "prefill_tps": None if s.get("pp_live") else s.get("pp"),
                                      "gen_tokens": s.get("gen_tokens"),
                                      "decode_tps": None if s.get("tg_live") else s.get("tg"),
                                      "acceptance": s.get("accept")})
        elif kind == "cancel":
            s["phase"] = "cancelled"
        elif kind == "task_error":
            s["phase"] = "error"
        elif kind == "context_shift":
            s["shifts"] = s.get("shifts", 0) + 1

    def _window(self, ev: dict[str, Any], kind: str, engine: str, now: float) -> None:
        slot = ev.get("slot")
        if slot is None:
            slot = ev.get("engine_idx", ev.get("dp_rank"))
        if ev.get("tp_rank") not in (None, 0):
            return  # every TP rank prints the same batch line: rank 0 speaks for them
        if slot is None and engine == "vllm":
            slot = 0  # spec-decoding lines name no engine: vLLM's first (usually only) one
        key = "" if slot is None else str(slot)
        s = self._slot(engine, key)
        s["seen"] = now
        s["t"] = now
        for src, dst in (("queue_req", "queue"), ("waiting_reqs", "queue"),
                         ("running_req", "running"), ("running_reqs", "running"),
                         ("token_usage", "kv"), ("input_throughput", "pp"),
                         ("prompt_throughput", "pp"), ("gen_throughput", "tg"),
                         ("accept_rate", "accept"), ("draft_acceptance_rate", "accept"),
                         ("accept_len", "mean_len"), ("mean_acceptance_length", "mean_len")):
            v = _num(ev.get(src))
            if v is not None:
                s[dst] = v
        if _num(ev.get("kv_cache_usage_pct")) is not None:
            s["kv"] = _num(ev["kv_cache_usage_pct"]) / 100
        if _num(ev.get("draft_acceptance_pct")) is not None and ev.get(
                "draft_acceptance_rate") is None:
            s["accept"] = _num(ev["draft_acceptance_pct"]) / 100
        if kind in ("decode_batch", "engine_stats") and _num(ev.get("gen_throughput")):
            s["spark"].append((now, _num(ev["gen_throughput"])))
        if kind == "retract":
            s["retracts"] = s.get("retracts", 0) + 1
        if kind == "preemption":
            s["preemptions"] = s.get("preemptions", 0) + 1

    # -- rendering -------------------------------------------------------------------------
    def _spark(self, s: dict[str, Any], now: float) -> str:
        pts = list(s["spark"])
        if not pts:
            return ""
        end = max(t for t, _ in pts)
        end = max(end, self.server_clock or end) if s.get("clock_rel") else max(end, now)
        return sparkline(pts, end)

    def render(self):  # noqa: ANN201
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        now = self.clock()
        with self.lock:
            age = "-" if self.last_event is None else f"{max(now - self.last_event, 0):.1f} s"
            head = Text.assemble(("logscope follow ", "bold"), self.path,
                                 f"   events {self.events}   runs {self.runs}"
                                 f"   last event {age} ago")
            parts: list = [head]
            llama = {k: v for k, v in self.slots.items() if k[0] == "llama-server"}
            if llama:
                cols = ["slot", "phase", "task", "depth", "cached", "prefill t/s",
                        "decode t/s", "accept", "len", "shifts", "recent decode", "age"]
                rows = []
                for (_e, slot), s in sorted(llama.items(), key=lambda kv: int(kv[0][1])):
                    rows.append([
                        slot, s.get("phase", "-"), _int(s.get("task")), _int(s.get("depth")),
                        _int(s.get("cached")), _rate(s.get("pp"), s.get("pp_live")),
                        _rate(s.get("tg"), s.get("tg_live")),
                        sig3(s["accept"]) if s.get("accept") is not None else None,
                        sig3(s["mean_len"]) if s.get("mean_len") is not None else None,
                        str(s["shifts"]) if s.get("shifts") else None,
                        self._spark(s, now) or None, f"{max(now - s['seen'], 0):.0f} s"])
                parts.append(_table(Table, "llama-server slots", cols, rows))
                from logscope.analysis.concurrency import state_label
                phases = [str(s.get("phase", "")) for s in llama.values()]
                k = sum(ph == "decode" for ph in phases)
                j = sum(ph.startswith("prefill") for ph in phases)
                parts.append(Text(f"now: {state_label(k, j)} (requests decoding and "
                                  "prefilling at once, as report's concurrency rows count "
                                  "them)"))
                parts.append(Text("prefill t/s: prompt tokens computed per second, cache hits "
                                  "excluded; decode t/s: generated per second; ~ = live "
                                  "progress rate, else the server's exact per-request figure",
                                  style="dim"))
            other = {k: v for k, v in self.slots.items() if k[0] != "llama-server"}
            if other:
                cols = ["engine", "group", "running", "queued", "KV", "prefill t/s",
                        "decode t/s", "accept", "len", "retracts", "preemptions",
                        "recent decode", "age"]
                rows = []
                for (engine, slot), s in sorted(other.items()):
                    rows.append([
                        engine, slot or "-", _int(s.get("running")), _int(s.get("queue")),
                        f"{s['kv']:.0%}" if s.get("kv") is not None else None,
                        _rate(s.get("pp"), False), _rate(s.get("tg"), False),
                        sig3(s["accept"]) if s.get("accept") is not None else None,
                        sig3(s["mean_len"]) if s.get("mean_len") is not None else None,
                        _int(s.get("retracts")), _int(s.get("preemptions")),
                        self._spark(s, now) or None, f"{max(now - s['seen'], 0):.0f} s"])
                parts.append(_table(Table, "SGLang / vLLM (window averages over each stats "
                                           "line)", cols, rows))
            if self.requests:
                cols = ["slot", "task", "prompt tok", "cached", "depth", "prefill t/s",
                        "gen tok", "decode t/s", "accept"]
                rows = [[r["slot"], _int(r.get("task")), _int(r.get("prompt_tokens")),
                         _int(r.get("cached")), _int(r.get("depth")),
                         _rate(r.get("prefill_tps"), False), _int(r.get("gen_tokens")),
                         _rate(r.get("decode_tps"), False),
                         sig3(r["acceptance"]) if r.get("acceptance") is not None else None]
                        for r in self.requests]
                parts.append(_table(Table, "last requests (exact per request)", cols, rows))
            parts.append(Text("  ".join(f"{k} {v}" for k, v in sorted(self.counts.items())),
                              style="dim"))
        return Group(*parts)


def _int(v: Any) -> str | None:
    return None if v is None else f"{int(v)}"


def _rate(v: float | None, live: bool | None) -> str | None:
    if v is None:
        return None
    return ("~" if live else "") + f"{v:,.1f}"


def _table(table_cls, title: str, cols: list[str], rows: list[list]):  # noqa: ANN001, ANN202
    """A table with only the columns some row has a value in."""
    keep = [i for i, _ in enumerate(cols) if any(r[i] is not None for r in rows)]
    t = table_cls(title=title, title_justify="left", expand=False)
    for i in keep:
        t.add_column(cols[i], justify="left" if cols[i] in ("phase", "engine", "recent decode")
                     else "right", no_wrap=True)
    for r in rows:
        t.add_row(*["-" if r[i] is None else str(r[i]) for i in keep])
    return t
