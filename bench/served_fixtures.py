#!/usr/bin/env python3
"""Served throughput, span, rate per busy second, mean accepted length and acceptance of every
SGLang and vLLM fixture, as JSON, for a before/after across two trees.

    python bench/served_fixtures.py TREE > out.json     # TREE: the checkout to import from
"""
import glob
import json
import sys

sys.path.insert(0, sys.argv[1])
import logscope
from logscope.analysis.metrics import acceptance_rate, mean_accepted_length
from logscope.analysis.served import served

out = {}
for f in sorted(glob.glob("fixtures/vllm/*.log") + glob.glob("fixtures/sglang/*.log")
                + glob.glob("fixtures/*/rendered/*.log")):
    try:
        logs = logscope.read(f)
    except Exception:  # noqa: BLE001 (a fixture without server lines)
        continue
    s = served(logs)
    out[f] = [s.get("throughput_tps"), s.get("span_s"), s.get("busy_tps"),
              mean_accepted_length(logs)["value"], acceptance_rate(logs)["value"]]
print(json.dumps(out))
