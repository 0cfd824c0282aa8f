"""Wrapper invariance, as a property: every fixture log re-rendered through every wrapper class
(and random compositions of them) parses to the same events with the same fields as the bare log,
and the same requests; only what the wrapper adds (``prefix``, a wall clock, a level or pid read
from the prefix) may differ.

The wrappers are tests/wrappers.py's catalogue: the shapes real users' logs arrive in (GUI
launchers, journald variants, Ray actors, logging configs, kubectl/CRI, gutters, padding, ...).
Classification is per record, so one parse of all the fixture logs at once per wrapper checks
every log; requests are checked by full ingests on the corpus logs.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

import logscope
from logscope.ingest import parse_batch
from tests.conftest import FIXTURES
from tests.wrappers import CATALOGUE, WRAPPERS, compose

LOGS = sorted(p for e in ("llama-server", "sglang", "vllm") for p in (FIXTURES / e).rglob("*.log"))
# what a wrapper may add to an event: its own marks, read from the prefix
ADDED = {"prefix", "wrap_ts", "level", "pid", "proc", "src_file", "src_line", "host", "dp_rank",
         "tp_rank", "ep_rank", "pp_rank", "attn_cp_rank", "moe_dp_rank", "_row", "line", "file"}


def _lines(p: Path) -> list[str]:
    text = p.read_text(errors="replace")
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _events(lines: list[str]) -> list[tuple]:
    """(engine, kind, variant, body fields) of every event record, in order."""
    b = parse_batch(pl.Series(lines, dtype=pl.String), "x.log")
    out: list[tuple[int, tuple]] = []
    for eng, rows in b.rows.items():
        ev = rows.filter(~pl.col("kind").is_in(["ignored", "other", "unrecognized"]))
        for (kind,), sub in ev.partition_by("kind", as_dict=True).items():
            own = b.fields.get(eng, {}).get(kind)
            if own is not None:
                sub = sub.join(own, on="_row", how="left", maintain_order="left")
            for r in sub.iter_rows(named=True):
                out.append((r["_row"], (eng, kind, r["variant"], r)))
    out.sort(key=lambda x: x[0])
    return [e for _, e in out]


def _same(bare: list[tuple], wrapped: list[tuple], name: str) -> None:
    assert len(bare) == len(wrapped), (name, len(bare), len(wrapped))
    for a, b in zip(bare, wrapped, strict=True):
        assert a[:3] == b[:3], (name, a[:3], b[:3], b[3].get("prefix"))
        for k, v in a[3].items():
            if k in ADDED or v is None or v != v:  # NaN: printed as nan, equal as text
                continue
            assert b[3].get(k) == v, (name, a[:3], k, v, b[3].get(k))


@pytest.fixture(scope="module")
def bare() -> tuple[list[str], list[tuple]]:
    lines = [ln for p in LOGS for ln in _lines(p)]
    return lines, _events(lines)


def _wrap(names: list[str], seed: int) -> list[str]:
    out: list[str] = []
    for i, p in enumerate(LOGS):
        out += compose(names, _lines(p), random.Random(seed * 1000 + i))
    return out


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_every_fixture_log_under_every_wrapper(bare, name):
    _lines_, want = bare
    got = _events(_wrap([name], 1))
    _same(want, got, name)


@pytest.mark.parametrize("seed", range(6))
def test_random_compositions(bare, seed):
    rng = random.Random(seed)
    inner = [n for n, w in CATALOGUE.items() if not w.inserts]
    names = rng.sample(sorted(inner), 2) + [rng.choice(sorted(WRAPPERS))]
    got = _events(_wrap(names, seed))
    _same(bare[1], got, "+".join(names))


REQUEST_KEYS = ["run", "slot", "task", "status", "prompt_tokens", "cached_tokens", "gen_tokens",
                "prompt_ms", "eval_ms", "draft_accepted", "draft_generated"]


@pytest.mark.parametrize("name", ["gui_launcher", "journald_odd_ident", "kubectl", "ray_actor",
                                  "gutter_cat_n", "trailing_spaces_200", "pylog_brackets",
                                  "docker_json" if "docker_json" in WRAPPERS else "cri"])
def test_requests_survive_wrappers(tmp_path, name):
    for p in sorted((FIXTURES / "llama-server" / "corpus").glob("generated-*.log")):
        wrapped = tmp_path / p.name
        wrapped.write_text("\n".join(compose([name], _lines(p), random.Random(7))) + "\n")
        a = logscope.read(str(p))["requests"]
        b = logscope.read(str(wrapped))["requests"]
        keys = [k for k in REQUEST_KEYS if k in a.columns]
        assert a.select(keys).equals(b.select(keys)), (name, p.name)
