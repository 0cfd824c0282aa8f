"""Write contrib/grafana/logscope.json, the Grafana dashboard over ``logscope follow --serve``.

Run from the repository root: python contrib/grafana/build_dashboard.py (tests/test_grafana.py
checks that the file is current and that every metric its queries use is exported).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "logscope.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'engine=~"$engine", file=~"$file"'
BY_SLOT = "{{engine}} slot {{slot}}"


def panel(title: str, targets: list[tuple[str, str]], unit: str = "short", *,
          description: str = "", kind: str = "timeseries", w: int = 12, h: int = 8,
          minimum: float | None = 0, maximum: float | None = None,
          draw: str = "line") -> dict:
    defaults: dict = {"unit": unit, "custom": {"drawStyle": draw, "lineWidth": 1,
                                               "fillOpacity": 10, "spanNulls": True,
                                               "showPoints": "auto"}}
    if kind != "timeseries":
        defaults = {"unit": unit}
    if minimum is not None:
        defaults["min"] = minimum
    if maximum is not None:
        defaults["max"] = maximum
    return {"type": kind, "title": title, "description": description, "datasource": DS,
            "gridPos": {"w": w, "h": h},
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"},
                        "tooltip": {"mode": "multi"}} if kind == "timeseries" else {},
            "targets": [{"datasource": DS, "expr": expr, "legendFormat": legend,
                         "refId": chr(ord("A") + i)}
                        for i, (expr, legend) in enumerate(targets)]}


def row(title: str) -> dict:
    return {"type": "row", "title": title, "collapsed": False, "gridPos": {"w": 24, "h": 1},
            "panels": []}


def panels() -> list[dict]:
    return [
        row("Speed"),
        panel("Prefill t/s by slot", [(f"logscope_prefill_tokens_per_second{{{SEL}}}",
                                       BY_SLOT)], "none",
              description="Last prefill speed: llama-server exact per request (computed "
                          "prompt tokens, cache hits excluded); SGLang / vLLM window averages.",
              draw="points"),
        panel("Decode t/s by slot", [(f"logscope_decode_tokens_per_second{{{SEL}}}", BY_SLOT)],
              "none", description="Last decode speed: llama-server exact per request; "
                                  "SGLang / vLLM window averages.", draw="points"),
        panel("tg_3s (llama-server decode, ~3 s windows)",
              [(f"logscope_tg_3s_tokens_per_second{{{SEL}}}", BY_SLOT)], "none",
              description="llama-server's own decode progress rate over its last ~3 s."),
        panel("Tokens/s, all requests", [
            (f"sum by (engine, file) (rate(logscope_prompt_tokens_total{{{SEL}}}[1m]))",
             "prompt (computed) {{engine}}"),
            (f"sum by (engine, file) (rate(logscope_generated_tokens_total{{{SEL}}}[1m]))",
             "generated {{engine}}")], "none",
              description="Rates of the token counters (llama-server counts a request's "
                          "tokens when its timing lines are printed, at its end)."),
        panel("Requests/s", [(f"sum by (engine, file) (rate(logscope_requests_total{{{SEL}}}"
                              "[5m]))", "{{engine}} {{file}}")], "reqps"),
        panel("Prefill time per request (p50, p95)", [
            ("histogram_quantile(0.5, sum by (le, engine) (rate(logscope_prefill_seconds_bucket"
             f"{{{SEL}}}[5m])))", "p50 {{engine}}"),
            ("histogram_quantile(0.95, sum by (le, engine) (rate(logscope_prefill_seconds_bucket"
             f"{{{SEL}}}[5m])))", "p95 {{engine}}")], "s",
              description="llama-server prompt processing time: the server-side part of the "
                          "time to first token, without queueing."),
        row("Speculative decoding"),
        panel("Draft acceptance", [
            (f"logscope_draft_acceptance_ratio{{{SEL}}}", "last " + BY_SLOT),
            (f"sum by (engine) (rate(logscope_draft_accepted_tokens_total{{{SEL}}}[5m])) / "
             f"sum by (engine) (rate(logscope_draft_generated_tokens_total{{{SEL}}}[5m]))",
             "5 m {{engine}}")], "percentunit", maximum=1),
        panel("Mean accepted length (tokens per step)",
              [(f"logscope_draft_mean_accepted_length{{{SEL}}}", BY_SLOT)], "none"),
        row("Memory pressure (SGLang, vLLM)"),
        panel("KV cache usage", [(f"logscope_kv_cache_usage_ratio{{{SEL}}}", BY_SLOT)],
              "percentunit", maximum=1, w=8),
        panel("Running / queued requests", [
            (f"logscope_running_requests{{{SEL}}}", "running {{engine}} {{slot}}"),
            (f"logscope_queue_requests{{{SEL}}}", "queued {{engine}} {{slot}}")], "short",
              w=8),
        panel("Retracts / preemptions (per 5 m)", [
            (f"sum by (engine, file) (increase(logscope_retracts_total{{{SEL}}}[5m]))",
             "retracts {{engine}}"),
            (f"sum by (engine, file) (increase(logscope_preemptions_total{{{SEL}}}[5m]))",
             "preemptions {{engine}}")], "short", w=8, draw="bars"),
        row("The follower"),
        panel("Seconds since the last event",
              [("time() - logscope_last_event_timestamp_seconds{file=~\"$file\"}",
                "{{file}}")], "s", kind="stat", w=8, h=5),
        panel("Lines read/s", [("sum by (file) (rate(logscope_lines_total{file=~\"$file\"}"
                                "[1m]))", "{{file}}")], "short", w=8, h=5),
        panel("Events/s by kind", [(f"sum by (kind) (rate(logscope_events_total{{{SEL}}}[1m]))",
                                    "{{kind}}")], "short", w=8, h=5),
    ]


def layout(ps: list[dict]) -> list[dict]:
    x = y = 0
    line_h = 0
    for i, p in enumerate(ps, 1):
        p["id"] = i
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if x + w > 24 or p["type"] == "row":
            x, y = 0, y + line_h
            line_h = 0
        p["gridPos"].update(x=x, y=y)
        x += w
        line_h = max(line_h, h)
        if p["type"] == "row":
            x, y, line_h = 0, y + h, 0
    return ps


def variable(name: str, label: str, query: str) -> dict:
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": name}, "definition": query,
            "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2,
            "current": {"text": "All", "value": "$__all"}, "sort": 1}


def dashboard() -> dict:
    return {
        "uid": "logscope", "title": "logscope: a passive benchmark from server logs",
        "description": "logscope follow --serve: prefill and decode speed, speculative "
                       "acceptance and memory pressure from the logs of llama-server, SGLang "
                       "and vLLM.",
        "tags": ["logscope", "llama.cpp", "sglang", "vllm"], "timezone": "browser",
        "schemaVersion": 39, "version": 1, "editable": True, "graphTooltip": 1,
        "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource",
             "query": "prometheus", "current": {"text": "Prometheus", "value": "prometheus"}},
            variable("engine", "engine", "label_values(logscope_events_total, engine)"),
            variable("file", "file", 'label_values(logscope_events_total{engine=~"$engine"}, '
                                     "file)")]},
        "annotations": {"list": []},
        "panels": layout(panels()),
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")
