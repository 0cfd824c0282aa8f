"""Golden tests, as mtail checks its example programs: every fixture log with an
``<name>.expected.json`` beside it (written by hand from the rendered lines) is ingested and
compared: line and event counts, unrecognized lines, sample rows, and llama-server requests."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import logscope
from logscope.classify.parse import classify_line
from logscope.input.frontend import split_records, strip_line
from tests.conftest import FIXTURES

# fixtures/wild has its own golden form (figure lines by kind): tests/test_wild.py
CASES = sorted(p for p in FIXTURES.rglob("*.expected.json") if "wild" not in p.parts)


def _log_for(expected: Path) -> Path:
    return expected.with_name(expected.name.replace(".expected.json", ".log"))


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("expected", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_counts(expected):
    exp = json.loads(expected.read_text())
    logs = logscope.read(str(_log_for(expected)))
    s = logs.summary()
    assert s["lines"] == exp["lines"]
    assert s["unrecognized"] == exp.get("unrecognized", 0), logs["unrecognized"].to_dicts()[:5]
    got = {k: v for k, v in s["events"].items() if k in exp["events"]}
    assert got == {k: v for k, v in exp["events"].items() if v}
    if "runs" in exp:
        assert s["runs"] == exp["runs"]


@pytest.mark.parametrize("expected", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_samples(expected):
    exp = json.loads(expected.read_text())
    if not exp.get("samples"):
        pytest.skip("no samples")
    lines = _log_for(expected).read_text(errors="replace").replace("\r\n", "\n").split("\n")
    engines = [exp["engine"]]
    for sample in exp["samples"]:
        raw = lines[sample["line"] - 1]
        _w, text = strip_line(raw)
        hits = [h for h in (classify_line(t, engines) for t in split_records(text)) if h]
        # a glued line holds several records: the sample names one of them by kind/variant
        hits.sort(key=lambda h: (h[1] != sample["kind"], h[2] != sample.get("variant", h[2]),
                                 sum(not _same(h[3].get(k), v)
                                     for k, v in sample["fields"].items())))
        hit = hits[0] if hits else None
        assert hit is not None, (sample["line"], raw)
        _e, kind, variant, fields = hit
        assert kind == sample["kind"], (sample["line"], raw)
        if "variant" in sample:
            assert variant == sample["variant"], (sample["line"], raw)
        for k, v in sample["fields"].items():
            assert _same(fields.get(k), v), (sample["line"], k, fields.get(k), v)


@pytest.mark.parametrize("expected", [c for c in CASES if "llama-server" in c.parts],
                         ids=lambda p: p.stem)
def test_golden_requests(expected):
    exp = json.loads(expected.read_text())
    if "requests" not in exp:
        pytest.skip("no requests")
    req = logscope.read(str(_log_for(expected)))["requests"]
    assert req.height == len(exp["requests"])
    for i, want in enumerate(exp["requests"]):
        if want.get("slot") is None and want.get("task") is None:  # era A: by order
            row = req.row(i, named=True)
            _check_request(want, row)
            continue
        cond = pl.lit(True)
        if want.get("task") is not None:
            cond = cond & (pl.col("task") == want["task"])
        if want.get("slot") is not None:
            cond = cond & (pl.col("slot") == want["slot"])
        if want.get("port") is not None:
            cond = cond & (pl.col("router_port") == want["port"])
        if want.get("run") is not None:
            cond = cond & (pl.col("run") == want["run"])
        rows = req.filter(cond)
        assert rows.height >= 1, want
        _check_request(want, rows.row(0, named=True))


def _check_request(want: dict, row: dict) -> None:
    if True:
        mapping = {"prompt_tokens": "prompt_tokens", "generated_tokens": "gen_tokens",
                   "prompt_ms": "prompt_ms", "decode_ms": "decode_ms",
                   "draft_accepted": "draft_accepted", "draft_generated": "draft_generated",
                   "truncated": "truncated", "cancelled": "cancelled"}
        for k, col in mapping.items():
            if k == "truncated" and row[col] is None:
                continue  # the build's release line does not print it: unknown, not false
            if k in want and want[k] is not None:
                assert _same(row[col], want[k]), (want, k, row[col])
        if want.get("cached_tokens") is not None:
            assert row["cached_tokens"] == want["cached_tokens"], (want, row["cached_source"])
