"""The ``unrecognized`` table: the lines that carry a benchmark figure's anchor and match no known
format, each with lark's diagnostic (within a budget: lark is slow on long lines)."""

from __future__ import annotations

import polars as pl

from logscope.classify.grammar import load_grammar
from logscope.classify.parse import header_prefix

MAX_DIAGNOSTICS = 200  # lark explains at most this many unrecognized lines per ingest
# lark's Earley parser is superlinear on long lines (an 8 KB SGLang batch line takes seconds):
# it reads at most this much of one line, and this much in all per ingest (no hang on hostile input)
MAX_DIAGNOSTIC_CHARS = 1_000
DIAGNOSTIC_BUDGET_CHARS = 40_000


def unrecognized_table(parts: list[pl.DataFrame]) -> pl.DataFrame:
    out = (pl.concat(parts).sort("_row") if parts else
           pl.DataFrame(schema={"_row": pl.UInt32, "text": pl.String, "file": pl.String,
                                "line": pl.Int64, "engine": pl.String}))
    diags: list[str | None] = []
    budget = DIAGNOSTIC_BUDGET_CHARS
    for i, (eng, text) in enumerate(zip(out["engine"], out["text"], strict=True)):
        if i >= MAX_DIAGNOSTICS or budget <= 0:
            diags.append(None)
            continue
        g = load_grammar(eng)
        head = text[:MAX_DIAGNOSTIC_CHARS]
        head = head[len(header_prefix(g, head)):]  # lark reads from the engine's own header
        budget -= len(head)
        diag = g.explain(head)
        if len(text) > len(head):
            diag += f" (lark read the first {len(head)} of {len(text)} characters)"
        diags.append(diag)
    return out.select("file", "line", "text", pl.col("engine").alias("engine_guess")).with_columns(
        pl.Series("diagnostic", diags, dtype=pl.String))
