"""The live terminal view of ``logscope follow`` (rich), refreshed at most 4 times a second.

Per (engine, slot): the last event kind (the phase), the task, prefill progress and rate,
the last exact prefill / decode t/s of llama-server's timing lines, ``tg_3s``, draft
acceptance; for SGLang / vLLM (no slots): queue, running requests, KV usage and window
throughputs. Below: the last requests (llama-server, one row per ``eval`` timing block).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

PHASE = {"slot_select": "selected", "task_launch": "launched", "prompt_progress": "prefill",
         "prompt_eval": "prefill done", "decode_progress": "decoding", "eval": "decode done",
         "total": "done", "draft_acceptance": "done", "graphs_reused": "done",
         "release": "idle", "cancel": "cancelled", "task_error": "error",
         "context_shift": "context shift", "prefill_batch": "prefill", "decode_batch": "decode",
         "retract": "retract", "engine_stats": "stats", "preemption": "preemption"}


def _f(v: Any, fmt: str = "{:.1f}") -> str:
    if v is None:
        return "-"
    try:
        return fmt.format(v)
    except (ValueError, TypeError):
        return str(v)


class LiveView:
    def __init__(self, path: str, max_requests: int = 8) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.slots: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: deque[dict[str, Any]] = deque(maxlen=max_requests)
        self.pending: dict[tuple[str, Any], dict[str, Any]] = {}
        self.counts: dict[str, int] = {}
        self.events = 0
        self.started = time.monotonic()
        self.last_event: float | None = None
        self.live = None

    def start(self) -> None:
        from rich.live import Live

        self.live = Live(get_renderable=self.render, refresh_per_second=4, transient=False,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.start()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def update(self, ev: dict[str, Any]) -> None:
        kind = ev.get("kind") or ""
        engine = ev.get("engine") or "-"
        slot = ev.get("slot")
        key = (engine, "" if slot is None or slot == -1 else str(slot))
        with self.lock:
            self.events += 1
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.last_event = time.monotonic()
            if key[1] == "" and engine == "llama-server":
                return  # slot-less llama-server lines (server info, cancel by task)
            s = self.slots.setdefault(key, {})
            s["phase"] = PHASE.get(kind, kind)
            if kind == "task_launch":  # a new request in this slot
                for k in ("progress", "pp_rate", "tg_3s"):
                    s.pop(k, None)
            if ev.get("task") is not None and ev.get("task") != -1:
                s["task"] = ev["task"]
            for src, dst in (("progress", "progress"), ("pp_tps", "pp_rate"),
                             ("prompt_tps", "prefill_tps"), ("eval_tps", "decode_tps"),
                             ("tg_3s", "tg_3s"), ("draft_rate", "acceptance"),
                             ("queue_req", "queue"), ("waiting_reqs", "queue"),
                             ("running_req", "running"), ("running_reqs", "running"),
                             ("token_usage", "kv"), ("prompt_throughput", "prefill_tps"),
                             ("gen_throughput", "decode_tps"),
                             ("draft_acceptance_rate", "acceptance")):
                if ev.get(src) is not None:
                    s[dst] = ev[src]
            if ev.get("kv_cache_usage_pct") is not None:
                s["kv"] = ev["kv_cache_usage_pct"] / 100
            if engine == "llama-server" and ev.get("task") is not None:
                rk = (key[1], ev["task"])
                if kind == "prompt_eval":
                    self.pending[rk] = {"slot": key[1], "task": ev["task"],
                                        "prompt_tokens": ev.get("prompt_tokens"),
                                        "prefill_tps": ev.get("prompt_tps")}
                elif kind == "eval":
                    r = self.pending.setdefault(rk, {"slot": key[1], "task": ev["task"]})
                    r.update(gen_tokens=ev.get("gen_tokens"), decode_tps=ev.get("eval_tps"))
                elif kind == "draft_acceptance" and rk in self.pending:
                    self.pending[rk]["acceptance"] = ev.get("draft_rate")
                elif kind == "release" and rk in self.pending:
                    self.requests.appendleft(self.pending.pop(rk))
                if len(self.pending) > 64:
                    self.pending.pop(next(iter(self.pending)))

    def render(self):  # noqa: ANN201
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        with self.lock:
            age = "-" if self.last_event is None else f"{time.monotonic() - self.last_event:.1f} s"
            head = Text.assemble(("logscope follow ", "bold"), self.path,
                                 f"   events {self.events}   last event {age} ago")
            slots = Table(title="slots", title_justify="left", expand=False)
            for c in ("engine", "slot", "phase", "task", "prefill", "pp t/s", "prefill t/s",
                      "decode t/s", "tg_3s", "accept", "queue", "running", "KV"):
                slots.add_column(c, justify="right" if c not in ("engine", "phase") else "left")
            for (engine, slot), s in sorted(self.slots.items()):
                slots.add_row(engine, slot or "-", s.get("phase", "-"), _f(s.get("task"), "{}"),
                              _f(s.get("progress"), "{:.0%}"), _f(s.get("pp_rate")),
                              _f(s.get("prefill_tps")), _f(s.get("decode_tps")),
                              _f(s.get("tg_3s")), _f(s.get("acceptance"), "{:.2f}"),
                              _f(s.get("queue"), "{}"), _f(s.get("running"), "{}"),
                              _f(s.get("kv"), "{:.0%}"))
            reqs = Table(title="last requests", title_justify="left", expand=False)
            for c in ("slot", "task", "prompt tok", "prefill t/s", "gen tok", "decode t/s",
                      "accept"):
                reqs.add_column(c, justify="right")
            for r in self.requests:
                reqs.add_row(r.get("slot") or "-", _f(r.get("task"), "{}"),
                             _f(r.get("prompt_tokens"), "{}"), _f(r.get("prefill_tps")),
                             _f(r.get("gen_tokens"), "{}"), _f(r.get("decode_tps")),
                             _f(r.get("acceptance"), "{:.2f}"))
            kinds = Text("  ".join(f"{k} {v}" for k, v in sorted(self.counts.items())),
                         style="dim")
        return Group(head, slots, reqs, kinds)
