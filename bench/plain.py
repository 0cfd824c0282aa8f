#!/usr/bin/env python3
"""The script a doubting user writes instead of logscope: a loop over the lines, a literal test
and one regex per figure-bearing kind, the figures into lists, one Polars frame per kind at the end.

    python bench/plain.py llama-server bench/data/llama-server-100mb-seed1.log

It prints the rows per kind as JSON. ``bench/throughput.py`` times it beside ``logscope ingest``
(same kinds, same main fields); it is kept deliberately plain and fair: compiled regexes, a cheap
``in`` test before each one, the first kind that matches takes the line.
"""

from __future__ import annotations

import json
import re
import sys

import polars as pl

TS = r"^(?:(\d+)\.(\d{2})\.(\d{3})\.(\d{3}) [IWED] )?"  # llama.cpp's M.SS.mmm.uuu clock
ST = r".*?id\s+(\d+) \| task (-?\d+) \|\s*"  # slot and task
CLOCK = ["t_m", "t_s", "t_ms", "t_us"]
SLOT = [*CLOCK, "slot", "task"]
# engine: [(kind, literal, regex, [(field, type)])]; type i = int, f = float, s = string
KINDS: dict[str, list[tuple[str, str, str, list[str]]]] = {
    "llama-server": [
        ("prompt_eval", "prompt eval time =",
         TS + ST + r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", [*SLOT, "ms:f", "n"]),
        ("eval", "eval time =", TS + ST + r"eval time =\s*([\d.]+) ms /\s*(\d+) tokens",
         [*SLOT, "ms:f", "n"]),
        ("total", "total time =", TS + ST + r"total time =\s*([\d.]+) ms /\s*(\d+) tokens",
         [*SLOT, "ms:f", "n"]),
        ("graphs", "graphs reused =", TS + ST + r"graphs reused =\s*(\d+)", [*SLOT, "n"]),
        ("draft", "draft acceptance",
         TS + ST + r"draft acceptance = ([\d.]+) \(\s*(\d+) accepted /\s*(\d+) generated\)",
         [*SLOT, "rate:f", "accepted", "generated"]),
        ("release", "stop processing:",
         TS + ST + r"stop processing: n_\w+ = (\d+), truncated = (\d)", [*SLOT, "n", "trunc"]),
        ("launch", "processing task", TS + ST + r"processing task", SLOT),
        ("progress", "prompt processing",
         TS + ST + r"prompt processing(?: progress)?, n_\w+ =\s*(\d+).*?progress = ([\d.]+)",
         [*SLOT, "n", "progress:f"]),
        ("tg", "tg =", TS + ST + r"n_(?:gen|decoded) =\s*(\d+), tg =\s*([\d.]+) t/s",
         [*SLOT, "n", "tps:f"]),
        ("select", "selected slot by", TS + ST + r"selected slot by (\w+)", [*SLOT, "by:s"]),
        ("cancel", "cancel task", TS + r".*?cancel task, id_task = (\d+)", [*CLOCK, "task"]),
        ("shift", "context shift",
         TS + ST + r"slot context shift, n_keep = (\d+), n_left = (\d+), n_discard = (\d+)",
         [*SLOT, "keep", "left", "discard"]),
        ("error", "error:", TS + r".*?task id = (\d+), error: (.*)", [*CLOCK, "task", "msg:s"]),
    ],
    "sglang": [
        ("prefill", "Prefill batch",
         r".*?Prefill batch.*?#new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+)",
         ["seqs", "new", "cached"]),
        ("decode", "Decode batch",
         r".*?Decode batch.*?#running-req: (\d+), #token: (\d+).*?gen throughput \(token/s\): "
         r"([\d.]+)", ["running", "tokens", "tps:f"]),
        ("retract", "Retract", r".*?(Retract requests)", ["text:s"]),
        ("oom", "Decode out of memory", r".*?(Decode out of memory)", ["text:s"]),
    ],
    "vllm": [
        ("throughput", "Avg prompt throughput",
         r".*?Avg prompt throughput: ([\d.]+) tokens/s, "
         r"Avg generation throughput: ([\d.]+) tokens/s", ["prompt:f", "gen:f"]),
        ("cache", "Prefix cache hit rate: GPU", r".*?Prefix cache hit rate: GPU: ([\d.]+)%",
         ["rate:f"]),
        ("spec", "acceptance", r".*?[Aa]cceptance (?:rate|length): ([\d.]+)", ["value:f"]),
        ("preempted", "preempted", r".*?(preempted)", ["text:s"]),
    ],
}
TYPES = {"i": (int, pl.Int64), "f": (float, pl.Float64), "s": (str, pl.String)}


def main(engine: str, path: str) -> dict[str, pl.DataFrame]:
    kinds = []
    for kind, lit, rx, fields in KINDS[engine]:
        names = [f.split(":")[0] for f in fields]
        types = [TYPES[(f.split(":") + ["i"])[1]] for f in fields]
        kinds.append((kind, lit, re.compile(rx), names, [t[0] for t in types],
                      [t[1] for t in types]))
    rows: dict[str, list[tuple]] = {k[0]: [] for k in kinds}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for kind, lit, rx, _names, conv, _dtypes in kinds:
                if lit in line:
                    m = rx.match(line)
                    if m:
                        rows[kind].append(tuple(None if v is None else c(v)
                                                for c, v in zip(conv, m.groups(), strict=True)))
                        break
    return {k[0]: pl.DataFrame(rows[k[0]], schema=dict(zip(k[3], k[5], strict=True)),
                               orient="row") for k in kinds}


if __name__ == "__main__":
    frames = main(sys.argv[1], sys.argv[2])
    print(json.dumps({k: df.height for k, df in frames.items()}))
