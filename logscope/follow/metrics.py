"""Prometheus metrics from followed events (``logscope follow --serve HOST:PORT``).

Served with ``prometheus_client`` from its own registry (no process/platform collectors), so
``/metrics`` holds only ``logscope_*``:

counters (labels ``engine``, ``file``; ``kind`` for events)
  ``logscope_events_total{engine,file,kind}``  every event followed
  ``logscope_lines_total{file}``               every line read
  ``logscope_requests_total``                  llama-server ``task_launch``; SGLang ``new_seq``
                                               of prefill batches
  ``logscope_prompt_tokens_total``             llama-server ``prompt_eval`` tokens (computed,
                                               cache hits excluded); SGLang ``new_token``
  ``logscope_generated_tokens_total``          llama-server ``eval`` tokens
  ``logscope_draft_accepted_tokens_total`` / ``logscope_draft_generated_tokens_total``
                                               llama-server ``draft_acceptance``; vLLM
                                               ``spec_decoding`` per-window counts (V1) or
                                               the growth of its cumulative totals (V0)
  ``logscope_retracts_total``                  SGLang ``retract`` events
  ``logscope_preemptions_total``               vLLM ``preemption`` events
gauges (labels ``engine``, ``file``, ``slot``; ``slot`` is "" where the server has none)
  ``logscope_prefill_tokens_per_second``       last llama-server ``prompt_eval`` (exact, per
                                               request), SGLang ``input_throughput`` or vLLM
                                               ``prompt_throughput`` (window averages)
  ``logscope_decode_tokens_per_second``        last ``eval`` (exact), SGLang / vLLM
                                               ``gen_throughput`` (window averages)
  ``logscope_tg_3s_tokens_per_second``         last ``decode_progress`` ``tg_3s``
  ``logscope_draft_acceptance_ratio``          last ``draft_acceptance`` rate (0..1); SGLang
                                               ``accept_rate``; vLLM acceptance rate
  ``logscope_draft_mean_accepted_length``      tokens per step with speculative decoding:
                                               llama-server ``mean_len``, SGLang
                                               ``accept_len``, vLLM mean acceptance length
                                               (as printed: 0.8.5 printed accepted/drafts)
  ``logscope_kv_cache_usage_ratio``            SGLang ``token_usage``, vLLM KV usage (0..1)
  ``logscope_queue_requests``                  SGLang ``queue_req``, vLLM ``waiting_reqs``
  ``logscope_running_requests``                SGLang ``running_req``, vLLM ``running_reqs``
  ``logscope_last_event_timestamp_seconds``    wall clock of the last event read
with ``follow --telemetry FILE`` (an nvidia-smi CSV or dmon file; docs/energy.md)
  ``logscope_gpu_power_watts{gpu}``            last power.draw per GPU (gauge)
  ``logscope_energy_joules_total{phase}``      GPU energy by what the server did when each
                                               sample was read: prefill, decode, idle
histograms (labels ``engine``, ``file``)
  ``logscope_prefill_seconds``                 llama-server prompt processing time per request
                                               (exact; TTFT's server-side part, no queueing)
  ``logscope_decode_tokens_per_second_per_request``  llama-server decode t/s per request
"""

from __future__ import annotations

import errno
import os
from typing import Any


class PortInUse(Exception):
    exit_code = 2


class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = r = CollectorRegistry(auto_describe=True)
        ef = ["engine", "file"]
        efs = ["engine", "file", "slot"]
        self.events = Counter("logscope_events", "Events followed, by kind.",
                              ["engine", "file", "kind"], registry=r)
        self.lines = Counter("logscope_lines", "Lines read from the followed file.", ["file"],
                             registry=r)
        self.requests = Counter("logscope_requests", "Requests started (llama-server "
                                "task_launch, SGLang new_seq).", ef, registry=r)
        self.prompt_tokens = Counter("logscope_prompt_tokens", "Prompt tokens computed "
                                     "(cache hits excluded).", ef, registry=r)
        self.gen_tokens = Counter("logscope_generated_tokens", "Generated tokens.", ef,
                                  registry=r)
        self.draft_acc = Counter("logscope_draft_accepted_tokens",
                                 "Speculative draft tokens accepted.", ef, registry=r)
        self.draft_gen = Counter("logscope_draft_generated_tokens",
                                 "Speculative draft tokens generated.", ef, registry=r)
        self.retracts = Counter("logscope_retracts", "SGLang retract events.", ef, registry=r)
        self.preemptions = Counter("logscope_preemptions", "vLLM preemption events.", ef,
                                   registry=r)
        self.prefill_tps = Gauge("logscope_prefill_tokens_per_second",
                                 "Last prefill speed (llama-server exact per request; vLLM "
                                 "window average).", efs, registry=r)
        self.decode_tps = Gauge("logscope_decode_tokens_per_second",
                                "Last decode speed (llama-server exact per request; vLLM "
                                "window average).", efs, registry=r)
        self.tg_3s = Gauge("logscope_tg_3s_tokens_per_second",
                           "Last llama-server decode progress tg_3s.", efs, registry=r)
        self.acceptance = Gauge("logscope_draft_acceptance_ratio",
                                "Last speculative draft acceptance rate (0..1).", efs,
                                registry=r)
        self.mean_len = Gauge("logscope_draft_mean_accepted_length",
                              "Last mean accepted length (tokens per step) with speculative "
                              "decoding.", efs, registry=r)
        self.kv = Gauge("logscope_kv_cache_usage_ratio", "Last KV cache usage (0..1).", efs,
                        registry=r)
        self.queue = Gauge("logscope_queue_requests", "Last queued (waiting) requests.", efs,
                           registry=r)
        self.running = Gauge("logscope_running_requests", "Last running requests.", efs,
                             registry=r)
        self.prefill_seconds = Histogram(
            "logscope_prefill_seconds", "llama-server prompt processing time per request (exact; "
            "the server-side part of the time to first token, without queueing).", ef,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=r)
        self.decode_tps_hist = Histogram(
            "logscope_decode_tokens_per_second_per_request",
            "llama-server decode speed per request (exact).", ef,
            buckets=(1, 2.5, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500), registry=r)
        self._totals: dict[tuple, float] = {}  # last cumulative value per (labels, field)
        self.last_ts = Gauge("logscope_last_event_timestamp_seconds",
                             "Wall clock when the last event was read.", ["file"], registry=r)

    def line(self, file: str) -> None:
        self.lines.labels(file).inc()

    def observe(self, ev: dict[str, Any]) -> None:
        engine = ev.get("engine") or ""
        file = ev.get("file") or ""
        kind = ev.get("kind") or ""
        slot = ev.get("slot")
        slot = "" if slot is None or slot == -1 else str(slot)
        ef = (engine, file)
        efs = (engine, file, slot)
        self.events.labels(engine, file, kind).inc()
        if "t_read" in ev:
            self.last_ts.labels(file).set(ev["t_read"])

        def num(k: str) -> float | None:
            v = ev.get(k)
            return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        def add(counter, k: str) -> None:  # noqa: ANN001
            v = num(k)
            if v is not None and v >= 0:
                counter.labels(*ef).inc(v)

        def put(gauge, k: str, scale: float = 1.0) -> None:  # noqa: ANN001
            v = num(k)
            if v is not None:
                gauge.labels(*efs).set(v * scale)

        if kind == "task_launch":
            self.requests.labels(*ef).inc()
        elif kind == "prompt_eval":
            add(self.prompt_tokens, "prompt_tokens")
            put(self.prefill_tps, "prompt_tps")
            if num("prompt_ms") is not None:
                self.prefill_seconds.labels(*ef).observe(num("prompt_ms") / 1000)
        elif kind == "eval":
            add(self.gen_tokens, "gen_tokens")
            put(self.decode_tps, "eval_tps")
            if num("eval_tps") is not None:
                self.decode_tps_hist.labels(*ef).observe(num("eval_tps"))
        elif kind == "decode_progress":
            put(self.tg_3s, "tg_3s")
        elif kind == "draft_acceptance":
            add(self.draft_acc, "draft_accepted")
            add(self.draft_gen, "draft_generated")
            put(self.acceptance, "draft_rate")
            put(self.mean_len, "mean_len")
        elif kind == "prefill_batch":
            add(self.requests, "new_seq")
            add(self.prompt_tokens, "new_token")
            put(self.prefill_tps, "input_throughput")
            put(self.kv, "token_usage")
            put(self.queue, "queue_req")
            put(self.running, "running_req")
        elif kind == "decode_batch":
            put(self.decode_tps, "gen_throughput")
            put(self.kv, "token_usage")
            put(self.queue, "queue_req")
            put(self.running, "running_req")
            put(self.acceptance, "accept_rate")
            put(self.mean_len, "accept_len")
        elif kind == "retract":
            self.retracts.labels(*ef).inc()
        elif kind == "preemption":
            self.preemptions.labels(*ef).inc()
        elif kind == "engine_stats":
            put(self.prefill_tps, "prompt_throughput")
            put(self.decode_tps, "gen_throughput")
            put(self.kv, "kv_cache_usage_pct", 0.01)
            put(self.queue, "waiting_reqs")
            put(self.running, "running_reqs")
        elif kind == "spec_decoding":
            # V1: per-window counts; V0: cumulative totals since the server started
            add(self.draft_acc, "num_accepted_tokens")
            add(self.draft_gen, "num_draft_tokens")
            for k, counter in (("total_accepted_tokens", self.draft_acc),
                               ("total_draft_tokens", self.draft_gen)):
                v = num(k)
                if v is None:
                    continue
                last = self._totals.get((ef, k))
                self._totals[(ef, k)] = v
                delta = v if last is None or v < last else v - last  # v < last: a restart
                if delta > 0:
                    counter.labels(*ef).inc(delta)
            put(self.mean_len, "mean_acceptance_length")
            if num("draft_acceptance_rate") is not None:
                put(self.acceptance, "draft_acceptance_rate")
            else:
                put(self.acceptance, "draft_acceptance_pct", 0.01)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def serve(self, host: str, port: int):  # noqa: ANN201
        """Start the HTTP server in a daemon thread; returns the server (``.server_port``)."""
        from prometheus_client import start_http_server

        try:
            got = start_http_server(port, addr=host, registry=self.registry)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise PortInUse(f"cannot serve metrics on {host}:{port}: the port is in use "
                                "(pick another with --serve HOST:PORT)") from e
            raise PortInUse(f"cannot serve metrics on {host}:{port}: "
                            f"{e.strerror or os.strerror(e.errno or 0) or e}") from e
        return got[0] if isinstance(got, tuple) else got


def parse_hostport(s: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (loopback by default); ``[::1]:PORT`` for IPv6."""
    host, port = "127.0.0.1", s
    if s.startswith("["):
        host, _, port = s[1:].partition("]:")
    elif ":" in s:
        host, _, port = s.rpartition(":")
        host = host or "127.0.0.1"
    try:
        p = int(port)
    except ValueError as e:
        raise ValueError(f"bad --serve {s!r}: expected HOST:PORT, e.g. 127.0.0.1:9464") from e
    if not 0 <= p <= 65535:
        raise ValueError(f"bad --serve {s!r}: port out of range")
    return host, p
