#!/usr/bin/env python3
"""Render the wild corpus: ``fixtures/wild/<name>.log`` + ``<name>.expected.json`` + README.

    python bench/wild.py            # (re)write every file of fixtures/wild/
    python bench/wild.py --check    # exit 1 unless the files on disk are what this script renders
    python bench/wild.py --truth live   # take the truth from the working tree's logscope instead

Each wild log takes the bare lines of one fixture (``fixtures/<engine>/*.log``), optionally damages
or re-heads them the way a paste or a user's logging config does (``DAMAGE`` / ``REWRITERS`` of
``tests/wrappers.py``, or a small builder here that inserts lines a real log of the same build
carries), then wraps them with ``tests/wrappers.py`` (``compose``, innermost first), and last may
cut long lines the way a terminal wraps them (``SPLITTERS``). Everything is seeded by the log's
name, so the output is the same on every run.

**Expected counts are computed by construction**, never by parsing the wrapped output:
``figure_lines`` counts, per figure-bearing event kind, the *source* lines that went into the wild
log, as logscope classifies the **bare** source fixture. The classifier is logscope at commit
``TRUTH_REV`` (a snapshot taken with ``git archive`` into a temporary directory, so the parser
being rewritten in the working tree does not move the truth), and its per-kind counts are checked
against the hand-written golden ``fixtures/<engine>/<name>.expected.json`` for every kind those
goldens count; any disagreement stops the script. Lines a builder inserts carry no figure, and a
wrapper's own lines (``inserts`` in the catalogue) carry none either, so they add nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.wrappers import (  # noqa: E402
    CATALOGUE,
    DAMAGE,
    PROVENANCE_LEVELS,
    REWRITERS,
    SPLITTERS,
    compose,
)

WILD = ROOT / "fixtures" / "wild"

# a commit at which every bare fixture parses to its golden counts (checked at every run)
TRUTH_REV = "10e9174"

FIGURE_KINDS: dict[str, list[str]] = {
    "llama-server": ["prompt_progress", "decode_progress", "prompt_eval", "eval", "total",
                     "draft_acceptance", "draft_per_position", "spec_stats", "release",
                     "task_launch", "slot_select", "cancel", "context_shift"],
    "sglang": ["prefill_batch", "decode_batch", "retract"],
    "vllm": ["engine_stats", "spec_decoding", "preemption", "prefix_cache"],
    "sglang-router": [],
}

Lines = list[str]
KindMap = dict[int, list[str]]  # 0-based source line -> event kinds logscope gives it
# a builder: (source lines, kinds per source line, rng) -> (lines, 0-based source lines used),
# or (lines, used, counts): counts it knows by construction go into the expected json as they are
# (e.g. Ray's folded lines)
Builder = Callable[[Lines, KindMap, random.Random],
                   tuple[Lines, list[int]] | tuple[Lines, list[int], dict[str, int]]]


@dataclass
class Recipe:
    name: str
    engine: str
    cls: str  # the wrapper or damage class, for the README
    seen: str  # where the shape comes from in the real world
    source: str | None  # fixtures/... path of the bare source
    wrap: list[str] = field(default_factory=list)  # tests/wrappers.py WRAPPERS, innermost first
    pre: list[str] = field(default_factory=list)  # 1:1 steps: DAMAGE / REWRITERS / STRIP names
    build: Builder | None = None  # inserts or selects lines (after ``pre``, before ``wrap``)
    post: list[str] = field(default_factory=list)  # SPLITTERS names, after ``wrap`` (outermost)
    render: Callable[[random.Random], Lines] | None = None  # a log with no fixture source
    no_alarm: bool = False  # expected "unrecognized": 0 (lines that must raise no drift alarm)
    note: str = ""


# ----------------------------------------------------------------------------------- the truth

_TRUTH_SCRIPT = r"""
import json, sys
import logscope
assert logscope.__file__.startswith(sys.argv[1]), logscope.__file__
out = {}
for src in sys.argv[2:]:
    logs = logscope.read(src)
    rows = logs["lines_classified"].filter(logs["lines_classified"]["class"] == "event")
    out[src] = {"rows": [[int(a), b] for a, b in zip(rows["line"], rows["kind"], strict=True)],
                "lines": logs.lines, "engines": logs.engines}
print(json.dumps(out))
"""


def _run_truth(pkg_root: Path, sources: list[str], cache: Path | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(pkg_root), PYTHONDONTWRITEBYTECODE="1")
    if cache is not None:  # keep the snapshot's compiled grammars out of the user's cache
        env["LOGSCOPE_CACHE_DIR"] = str(cache)
    p = subprocess.run([sys.executable, "-c", _TRUTH_SCRIPT, str(pkg_root),
                        *[str(ROOT / s) for s in sources]],
                       cwd=pkg_root, env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"truth: logscope failed on the bare sources:\n{p.stderr}")
    raw = json.loads(p.stdout.strip().splitlines()[-1])
    return {s: raw[str(ROOT / s)] for s in sources}


def truth(sources: list[str], mode: str) -> dict[str, KindMap]:
    """Per bare source: 0-based line -> event kinds, from logscope at TRUTH_REV (or ``live``)."""
    if mode == "live":
        raw = _run_truth(ROOT, sources)
    else:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", mode, "logscope", "grammars"],
                              capture_output=True, check=True).stdout
        with tempfile.TemporaryDirectory(prefix="wild-truth-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(arch)) as tar:
                tar.extractall(tmp, filter="data")
            raw = _run_truth(Path(tmp), sources, cache=Path(tmp) / "grammar-cache")
    out: dict[str, KindMap] = {}
    for src, r in raw.items():
        km: KindMap = {}
        for line, kind in r["rows"]:
            km.setdefault(line - 1, []).append(kind)
        out[src] = km
        _check_golden(src, km)
    return out


def _golden_kinds(engine: str) -> set[str]:
    kinds: set[str] = set()
    for g in (ROOT / "fixtures" / engine).glob("*.expected.json"):
        kinds |= set(json.loads(g.read_text()).get("events", {}))
    return kinds & set(FIGURE_KINDS[engine])


def _check_golden(src: str, km: KindMap) -> None:
    path = ROOT / src
    golden = path.with_name(path.name[: -len(".log")] + ".expected.json")
    if not golden.exists():
        return
    g = json.loads(golden.read_text())
    engine = g.get("engine", path.parent.name)
    if engine not in FIGURE_KINDS:
        return
    counts = Counter(k for kinds in km.values() for k in kinds)
    for kind in _golden_kinds(engine):
        want = g.get("events", {}).get(kind, 0)
        if counts.get(kind, 0) != want:
            raise SystemExit(f"truth: {src}: logscope counts {counts.get(kind, 0)} {kind}, the "
                             f"golden {golden.name} says {want}; refusing to write goldens")


# ------------------------------------------------------------------------------- 1:1 steps

def _strip(pattern: str) -> Callable[[Lines, random.Random], Lines]:
    """Remove a wrapper a fixture already carries (every line must have it)."""
    rx = re.compile(pattern)

    def strip(lines: Lines, rng: random.Random) -> Lines:
        out = []
        for ln in lines:
            m = rx.match(ln)
            if not m:
                raise SystemExit(f"strip {pattern!r}: a line without it: {ln[:80]!r}")
            out.append(ln[m.end():])
        return out
    return strip


# wrappers some fixtures already carry, removed to get their bare lines back
STRIP: dict[str, Callable[[Lines, random.Random], Lines]] = {
    "strip_compose": _strip(r"[\w.-]+ +\| "),
    "strip_docker_ts": _strip(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z "),
    "strip_journald": _strip(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+\[\d+\]: "),
}
PRE = {**DAMAGE, **REWRITERS, **STRIP}


# ---------------------------------------------------------------------------------- builders

_LLAMA_TS = re.compile(r"^(\d+\.\d\d\.\d{3}\.\d{3}) ")


def build_llama_no_alarm(src: Lines, km: KindMap, rng: random.Random) -> tuple[Lines, list[int]]:
    """Insert the ordinary lines of recent builds that carry no figure.

    ``srv  params_from_: Chat format: peg-native`` before every task launch (printed for every
    chat request), ``srv         alloc:  - prompt state size … exceeds cache size limit …,
    skipping`` after some releases (the host prompt cache refusing a large prompt).
    """
    out: Lines = []
    for i, ln in enumerate(src):
        m = _LLAMA_TS.match(ln)
        kinds = km.get(i, [])
        if m and "task_launch" in kinds:
            out.append(f"{m.group(1)} I srv  params_from_: Chat format: peg-native")
        out.append(ln)
        if m and "release" in kinds and rng.random() < 0.6:
            size = rng.randint(8300, 14000) + rng.randint(0, 999) / 1000
            out.append(f"{m.group(1)} W srv         alloc:  - prompt state size {size:.3f} MiB "
                       f"exceeds cache size limit 8192.000 MiB, skipping")
    return out, list(range(len(src)))


_PROGRESS = re.compile(r"slot print_timing: id +(\d+) \| task (\d+) \| prompt processing, "
                       r"n_tokens = +(\d+)")


def build_llama_checkpoint(src: Lines, km: KindMap,
                           rng: random.Random) -> tuple[Lines, list[int]]:
    """Insert a llama.cpp fork's context-checkpoint line after prompt-progress lines.

    ``slot update_slots: id  0 | task 12 | erasing old context checkpoint (pos_min = 0, pos_max =
    4095, n_tokens = 4096, size = 62.813 MiB)``: while a long prompt is processed the slot keeps
    a few checkpoints of ``span`` tokens and drops the oldest (one per progress line, as long as
    it lies wholly before the prompt position). The line carries a token count, no benchmark
    figure.
    """
    span = rng.choice([1024, 2048, 4096])
    mib_per_token = rng.randint(9000, 16000) / 1_000_000
    erased: dict[str, int] = {}  # task -> checkpoints erased so far
    out: Lines = []
    for i, ln in enumerate(src):
        out.append(ln)
        m = _LLAMA_TS.match(ln)
        p = _PROGRESS.search(ln)
        if not (m and p and "prompt_progress" in km.get(i, [])):
            continue
        slot, task, n = int(p.group(1)), p.group(2), int(p.group(3))
        k = erased.get(task, 0)
        if (k + 1) * span > n:
            continue
        erased[task] = k + 1
        out.append(f"{m.group(1)} W slot update_slots: id {slot:2d} | task {task} | erasing old "
                   f"context checkpoint (pos_min = {k * span}, pos_max = {(k + 1) * span - 1}, "
                   f"n_tokens = {span}, size = {span * mib_per_token:.3f} MiB)")
    return out, list(range(len(src)))


_VLLM_HEAD = re.compile(r"^(?P<proc>(?:\x1b\[[\d;]*m)?\([\w ]+ pid=\d+\)(?:\x1b\[[\d;]*m)? )?"
                        r"(?:INFO|WARNING|DEBUG) (?P<md>\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d) ")


def build_lmcache(src: Lines, km: KindMap, rng: random.Random) -> tuple[Lines, list[int]]:
    """Mix LMCache connector lines (store / retrieve / hit) into a vLLM V1 log.

    They come from the EngineCore process, so they carry its ``(EngineCore_0 pid=N)`` prefix, and
    LMCache's own ``[YYYY-mm-dd HH:MM:SS,mmm] LMCache INFO: … (file:line:module)`` layout.
    """
    core = next((m.group("proc") for ln in src if (m := _VLLM_HEAD.match(ln))
                 and m.group("proc") and "EngineCore" in m.group("proc")), "")
    year = 2025
    out: Lines = []
    n_req = 0
    for i, ln in enumerate(src):
        out.append(ln)
        m = _VLLM_HEAD.match(ln)
        if not m or "engine_stats" not in km.get(i, []):
            continue
        stamp = f"[{year}-{m.group('md')} {m.group('hms')},{rng.randint(0, 999):03d}]"
        total = rng.randint(60, 9000)
        stored = rng.randint(total // 2, total)
        hit = rng.randint(0, stored)
        n_req += 1
        size = stored * 0.000122
        cost = rng.randint(50, 3000) / 100
        out.append(f"{core}{stamp} LMCache INFO: Reqid: chatcmpl-{rng.getrandbits(64):016x}, "
                   f"Total tokens {total}, LMCache hit tokens: {hit}, need to load: "
                   f"{max(hit - 1, 0)} (vllm_v1_adapter.py:1104:lmcache.integration.vllm."
                   f"vllm_v1_adapter)")
        out.append(f"{core}{stamp} LMCache INFO: Stored {stored} out of total {total} tokens. "
                   f"size: {size:.4f} gb, cost {cost:.4f} ms, throughput: "
                   f"{size / cost * 1000:.4f} GB/s; offload_time: {cost * 0.97:.4f} ms, "
                   f"put_time: {cost * 0.03:.4f} ms (cache_engine.py:301:lmcache.v1.cache_engine)")
        if hit:
            out.append(f"{core}{stamp} LMCache INFO: Retrieved {hit} out of {hit} required "
                       f"tokens (from {total} total tokens). size: {hit * 0.000122:.4f} gb, cost "
                       f"{cost / 2:.4f} ms, throughput: {hit * 0.000122 / cost * 2000:.4f} GB/s; "
                       f"(cache_engine.py:540:lmcache.v1.cache_engine)")
    return out, list(range(len(src)))


def build_iteration(src: Lines, km: KindMap, rng: random.Random) -> tuple[Lines, list[int]]:
    """Insert vLLM 0.26+ opt-in ``Iteration(N): …`` detail lines (EngineCore process) between
    the stats lines of a single-engine log."""
    core = next((m.group("proc") for ln in src if (m := _VLLM_HEAD.match(ln))
                 and m.group("proc") and "EngineCore" in m.group("proc")), "")
    it = rng.randint(100, 900)
    out: Lines = []
    for i, ln in enumerate(src):
        m = _VLLM_HEAD.match(ln)
        if m and "engine_stats" in km.get(i, []):
            for _ in range(rng.randint(1, 3)):
                it += rng.randint(1, 40)
                ctx = rng.choice([0, 0, 1])
                gen = rng.randint(0, 4)
                out.append(f"{core}INFO {m.group('md')} {m.group('hms')} [core.py:433] Engine 000: "
                           f"Iteration({it}): {ctx} context requests, {ctx * rng.randint(9, 2048)} "
                           f"context tokens, {gen} generation requests, {gen} generation tokens, "
                           f"iteration elapsed time: {rng.randint(300, 9000) / 100:.2f} ms, CPU KV "
                           f"cache usage: {rng.randint(0, 40) / 10:.1f}%")
        out.append(ln)
    return out, list(range(len(src)))


_PREEMPT_AT = re.compile(r"Sequence group \S+ is preempted by ")


def _preempt_lines(src: Lines, km: KindMap) -> list[int]:
    return [i for i, ln in enumerate(src) if "preemption" in km.get(i, [])
            and _PREEMPT_AT.search(ln)]


def build_preempt_headerless(src: Lines, km: KindMap,
                             rng: random.Random) -> tuple[Lines, list[int]]:
    """Only the V0 preemption warnings, pasted without any header (message text only)."""
    used = _preempt_lines(src, km)
    return [src[i][_PREEMPT_AT.search(src[i]).start():] for i in used], used  # type: ignore[union-attr]


def build_preempt_bold(src: Lines, km: KindMap, rng: random.Random) -> tuple[Lines, list[int]]:
    """The V0 preemption warnings in bold inside a short issue text, with and without header."""
    used = _preempt_lines(src, km)
    out = ["After a few minutes under load the server slows down and prints:", ""]
    for n, i in enumerate(used):
        ln = src[i]
        body = ln if n % 2 else ln[_PREEMPT_AT.search(ln).start():]  # type: ignore[union-attr]
        out.append(f"**{body}**")
        out.append("")
    out.append("Is this expected with gpu_memory_utilization=0.9?")
    return out, used


_RANK = re.compile(r"\b(?:DP\d+ )?TP\d+\b")


def _ray_pattern(line: str) -> str:
    """Ray's dedup key: the words of the line that hold no digit."""
    return " ".join(w for w in line.split() if not any(ch.isdigit() for ch in w))


def _ray_dedup(src: Lines, prefixed: list[str]) -> tuple[Lines, list[int], dict[str, int]]:
    """``src`` through Ray's log deduplication, each line printed by the actor ``prefixed[i]``.

    A line whose digit-free words repeat a line of another actor seen in the last 6 lines (Ray:
    5 seconds) is buffered; at the end of the window the buffer is printed as its last line +
    `` [repeated Nx across cluster]`` (N: the copies buffered; so the copy moves down and earlier
    buffered copies are dropped). Dropped lines are not "used", so ``figure_lines`` counts only
    what the log still shows; ``folded`` (the sum of the N) and ``folded_lines`` (the lines with
    the suffix) are counted as they are printed.
    """
    out: Lines = []
    used: list[int] = []
    seen: dict[str, tuple[int, str]] = {}  # pattern -> (line index, prefix) of the printed one
    buf: dict[str, list[int]] = {}  # pattern -> buffered copies
    due: dict[str, int] = {}  # pattern -> line index at which the buffer is flushed
    counts = {"folded": 0, "folded_lines": 0}

    def flush(pattern: str) -> None:
        copies = buf.pop(pattern)
        due.pop(pattern)
        last = copies[-1]
        out.append(f"{prefixed[last]}{src[last]} [repeated {len(copies)}x across cluster]")
        used.append(last)
        counts["folded"] += len(copies)
        counts["folded_lines"] += 1

    for i, ln in enumerate(src):
        for pattern in [p for p, at in due.items() if at <= i]:
            flush(pattern)
        pat = _ray_pattern(ln)
        first = seen.get(pat)
        if pat and first and first[1] != prefixed[i] and i - first[0] <= 6:
            buf.setdefault(pat, []).append(i)
            due.setdefault(pat, i + 6)
            continue
        seen[pat] = (i, prefixed[i])
        out.append(prefixed[i] + ln)
        used.append(i)
    for pattern in sorted(due, key=due.__getitem__):
        flush(pattern)
    return out, used, counts


def build_ray_dedup(src: Lines, km: KindMap,
                    rng: random.Random) -> tuple[Lines, list[int], dict[str, int]]:
    """SGLang schedulers as Ray actors (one per TP rank), through Ray's log deduplication.

    Every line gets its rank's ``(SchedulerActor pid=N) `` prefix, then goes through
    :func:`_ray_dedup`.
    """
    pids: dict[str, int] = {}
    prefixed: list[str] = []
    for ln in src:
        m = _RANK.search(ln[:60])
        rank = m.group(0) if m else "main"
        pid = pids.setdefault(rank, rng.randint(1000, 99999))
        prefixed.append(f"(SchedulerActor pid={pid}) ")
    return _ray_dedup(src, prefixed)


def build_ray_dedup_vllm(src: Lines, km: KindMap,
                         rng: random.Random) -> tuple[Lines, list[int], dict[str, int]]:
    """Four vLLM servers as Ray actors (replicas of one deployment), through Ray's log
    deduplication.

    Each replica prints under its actor's prefix, ``(LLMServer pid=N) `` or
    ``(ServeReplica:default:LLMServer pid=N) ``. The source's startup lines are the first
    replica's; from the first stats line on, each stats interval (a stats line and the lines up to
    the next one) is dealt to the next replica in turn, as if the replicas reported one after the
    other. Then :func:`_ray_dedup`: a replica's stats line a few lines after another's alike one
    is folded into ``[repeated Nx across cluster]``.
    """
    actor = rng.choice(["LLMServer", "ServeReplica:default:LLMServer"])
    pids = [rng.randint(1000, 99999) for _ in range(4)]
    prefixed: list[str] = []
    replica = -1
    for i in range(len(src)):
        if "engine_stats" in km.get(i, []):
            replica = (replica + 1) % len(pids)
        prefixed.append(f"({actor} pid={pids[max(replica, 0)]}) ")
    return _ray_dedup(src, prefixed)


# ---------------------------------------------------------------------- rendered (no source)

class _Clock:
    def __init__(self, rng: random.Random, start: int) -> None:
        self.rng, self.t = rng, start

    def tick(self, lo: int = 0, hi: int = 4) -> str:
        import datetime as _dt
        self.t += self.rng.randint(lo, hi)
        return _dt.datetime.fromtimestamp(self.t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def render_router_legacy(rng: random.Random) -> Lines:
    """sglang-router 2024-25: Python launcher lines then the Rust router's env_logger lines."""
    c = _Clock(rng, 1_741_000_000 + rng.randint(0, 10**7))
    dp = rng.choice([2, 4])
    base = rng.choice([31000, 32000])
    out = [f"[Router (Python)] {c.tick()} - INFO - Launching router with {dp} DP workers",
           f"[Router (Python)] {c.tick()} - INFO - Router args: host=0.0.0.0, port=30000, "
           f"policy=cache_aware"]
    out += [f"[Router (Python)] {c.tick(0, 1)} - INFO - Launching DP server process {i} on port "
            f"{base + i}" for i in range(dp)]
    for _ in range(rng.randint(3, 6)):
        t = c.tick(5, 12)
        for i in range(dp):
            out.append(f"[Router (Rust)] {t} - INFO - Worker http://127.0.0.1:{base + i} health "
                       f"check is pending with error: error sending request for url "
                       f"(http://127.0.0.1:{base + i}/health)")
    out.append(f"[Router (Rust)] {c.tick()} - INFO - All workers are healthy")
    out.append(f"[Router (Rust)] {c.tick()} - INFO - ✅ Serving router on 0.0.0.0:30000")
    for _ in range(rng.randint(8, 14)):
        t = c.tick(20, 60)
        for i in range(dp):
            out.append(f"[Router (Rust)] {t} - INFO - Tenant: http://127.0.0.1:{base + i}, "
                       f"Size: {rng.randint(0, 90000)}")
    out.append(f"[Router (Rust)] {c.tick()} - WARN - Worker http://127.0.0.1:{base} is slow to "
               f"respond, retrying")
    return out


def _tracing_lines(rng: random.Random, target: str, ms: bool) -> Lines:
    c = _Clock(rng, 1_762_000_000 + rng.randint(0, 10**7))

    def ts() -> str:
        t = c.tick(0, 3)
        return f"{t}.{rng.randint(0, 999):03d}" if ms else t

    out = [f"{ts()}  INFO {target}::server: src/server.rs:{rng.randint(240, 290)}: Starting "
           f"router on 0.0.0.0:8080 | mode: PrefillDecode {{ prefill_urls: [(\"http://10.0.0.5:"
           f"30000\", Some(8998))], decode_urls: [\"http://10.0.0.6:30001\"] }} | policy: "
           f"CacheAware {{ cache_threshold: 0.5, balance_abs_threshold: 32 }}",
           f"{ts()}  INFO {target}::server: src/server.rs:{rng.randint(300, 340)}: All workers "
           f"healthy, serving"]
    for _ in range(rng.randint(10, 18)):
        rid = f"chatcmpl-{rng.getrandbits(96):024x}"
        span = (f"http_request{{method=POST uri=/v1/chat/completions version=HTTP/1.1 "
                f"request_id=\"{rid}\"")
        out.append(f"{ts()}  INFO {span}}}: {target}::request: src/middleware.rs:"
                   f"{rng.randint(380, 400)}: started processing request")
        status = rng.choice([200] * 8 + [400, 503])
        lat = rng.randint(80, 40000) / 1000
        level, what = (" INFO", "finished processing request") if status == 200 else (
            " WARN", "request failed with client error") if status < 500 else (
            "ERROR", "request failed with server error")
        out.append(f"{ts()} {level} {span} status_code={status} latency={lat}s}}: {target}::"
                   f"response: src/middleware.rs:{rng.randint(410, 440)}: {what}")
    out.append(f"{ts()} ERROR http_request{{method=POST uri=/generate version=HTTP/1.1 "
               f"request_id=\"gnt-{rng.getrandbits(64):016x}\"}}: {target}::routers::http::"
               f"pd_router: src/routers/http/pd_router.rs:{rng.randint(130, 160)}: Failed to "
               f"select PD pair error=No available prefill workers")
    return out


def render_router_tracing(rng: random.Random) -> Lines:
    return _tracing_lines(rng, "sglang_router_rs", ms=False)


def render_gateway_ms(rng: random.Random) -> Lines:
    return _tracing_lines(rng, "smg", ms=True)


def render_readme(rng: random.Random) -> Lines:
    """A README-like text about serving LLMs: prose, headings, shell and JSON blocks, no log."""
    return """# local-llm-stack

Scripts to run a local OpenAI-compatible server with llama.cpp, vLLM or SGLang on one or two GPUs.

## Quick start

```bash
./llama-server -m models/qwen3-30b-a3b-q4_k_m.gguf -c 32768 -np 2 --port 8080 -fa on
vllm serve Qwen/Qwen2.5-14B-Instruct-AWQ --max-model-len 12288 --gpu-memory-utilization 0.90
python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --port 30000
```

## Tuning notes

- More parallel slots (`-np`) share the context: each slot gets `c / np` tokens.
- Prompt processing speed depends on the batch size (`-b`, `-ub`); generation speed on memory
  bandwidth. Expect roughly 100 t/s on a 3090 for a 3B-active MoE at Q4.
- With speculative decoding the draft model must share the tokenizer of the main model.
- If the KV cache fills up, vLLM preempts requests and SGLang retracts them; lower
  `--max-num-seqs` or raise the memory fraction.

## Measuring

Run `logscope ingest server.log` on the server's log, or use the `timings` object of a response:

```json
{"timings": {"prompt_n": 2210, "prompt_ms": 892.35, "predicted_n": 1213, "predicted_ms": 11022.4}}
```

## License

MIT
""".splitlines()


# ------------------------------------------------------------------------------------ recipes

L_TS = "fixtures/llama-server/d-b9151-b9705-default-timestamps.log"  # b9400, draft (3), cancel
L_TG3 = "fixtures/llama-server/d-b9706-b9828-tg3s-draft4.log"  # tg_3s, ctx shift, draft (4)
L_GEN = "fixtures/llama-server/d-b10406-n-gen-trace.log"  # n_gen, per-position, -lv 4
L_ML = "fixtures/llama-server/d-b4326-b6722-multiline-summary.log"  # multi-line summary, cancel
L_TEE = "fixtures/llama-server/b-b1413-b2258-log-tee.log"  # era B
L_TXT = "fixtures/llama-server/c-b3087-b3760-text.log"  # era C text
L_COL = "fixtures/llama-server/d-b6890-b9150-prefix-timestamps-colors.log"  # colours, ctx shift
L_2RUN = "fixtures/llama-server/two-runs-d-b10178-b10405.log"
L_JSON = "fixtures/llama-server/a-b1412-json-stdout.log"  # era A JSON + llama_print_timings

S = "fixtures/sglang/"
V = "fixtures/vllm/"

RECIPES: list[Recipe] = [
    # ---------------------------------------------------------------- llama-server
    Recipe("llama-gui-launcher", "llama-server", "GUI launcher `[Info] (Process)` prefix",
           "issue 12 (desktop launcher log)", L_TS, ["gui_launcher"]),
    Recipe("llama-journald-odd-ident", "llama-server", "journald, empty host + odd identifier",
           "issue 12 / llama.cpp threads (systemd units)", L_TG3, ["journald_odd_ident"]),
    Recipe("llama-journald-de", "llama-server", "journald short, German month names",
           "issue 12 names `Mai`; glibc de_DE abbreviations", L_GEN, ["journald_de"]),
    Recipe("llama-localai-journald-es", "llama-server",
           "LocalAI `GRPC stderr line=\"...\"` inside journald with Spanish months",
           "LocalAI issue threads (systemd + es_ES)", L_TS, ["localai_grpc_quoted", "journald_es"]),
    Recipe("llama-journald-fr", "llama-server", "journald short, French month names (`déc.`)",
           "issue 12 names `déc.`; glibc fr_FR abbreviations", L_ML, ["journald_fr"]),
    Recipe("llama-journald-it", "llama-server", "journald short, Italian month names (`ago`)",
           "issue 12 names `ago`; glibc it_IT abbreviations", L_2RUN, ["journald_it"]),
    Recipe("llama-localai-legacy-compose", "llama-server",
           "LocalAI zerolog `DBG GRPC(...): stderr` under docker compose",
           "LocalAI issue threads (2023-24, docker compose)", L_TXT,
           ["localai_grpc_legacy", "docker_compose"]),
    Recipe("llama-leading-space-app", "llama-server",
           "leading space + interleaved launcher `[DEBUG]` lines", "issue 12", L_TG3,
           ["leading_space_app"]),
    Recipe("llama-gutter-cat-n", "llama-server", "`cat -n` line-number gutter",
           "issue 12 (line-number gutters)", L_GEN, ["gutter_cat_n"]),
    Recipe("llama-trailing-spaces", "llama-server", "trailing spaces to 120 columns",
           "issue 12 (terminal copy)", L_TS, ["trailing_spaces_120"]),
    Recipe("llama-tmux-capture", "llama-server", "tmux capture-pane: padded lines, shell prompt",
           "issue 12 (tmux / screen captures)", L_2RUN, ["tmux_capture"]),
    Recipe("llama-swap", "llama-server", "llama-swap `[model]` upstream prefix + proxy lines",
           "llama-swap, newer `[model]` prefix (approximated)", L_TS, ["llama_swap"]),
    Recipe("llama-go-slog-quoted", "llama-server", "Go slog `msg=\"<line>\"` embedding",
           "Go launchers quoting a child's line (approximated)", L_ML, ["go_slog_quoted"]),
    Recipe("llama-ollama-journald", "llama-server",
           "Ollama: raw runner lines + Ollama slog lines, under journald",
           "Ollama issue threads (`journalctl -u ollama`)", L_TS, ["ollama", "journald_short"]),
    Recipe("llama-grafana-panel", "llama-server",
           "log-panel copy: time line, level line, the line, blank line",
           "an Ollama thread (pod logs copied from a log panel)", L_TG3,
           ["ollama", "grafana_panel_copy"]),
    Recipe("llama-windows-service", "llama-server", "NSSM-style `[time] ` prefix + CRLF",
           "NSSM-style service wrapper (approximated)", L_TG3, ["windows_service"]),
    Recipe("llama-collapsed-spaces", "llama-server", "paste damage: runs of spaces collapsed",
           "forum pastes (cf. ../shared/corpus/seed000-*.log)", L_TS, pre=["collapse_spaces"]),
    Recipe("llama-noalarm-chat-format", "llama-server",
           "no false alarm: `params_from_: Chat format` and `alloc: - prompt state size` lines",
           "issue 12 (recent builds print these on every chat request / cache refusal)", L_GEN,
           build=build_llama_no_alarm, no_alarm=True),
    Recipe("llama-noalarm-chat-format-compose", "llama-server",
           "no false alarm lines under docker compose", "issue 12", L_TG3,
           ["docker_compose"], build=build_llama_no_alarm, no_alarm=True),
    Recipe("llama-textgen-webui", "llama-server", "text-generation-webui `HH:MM:SS-ffffff INFO`",
           "text-generation-webui console (approximated)", L_TXT, ["textgen_webui"]),
    Recipe("llama-lmstudio", "llama-server",
           "LM Studio developer log: `[DEBUG]` header line + the line with a leading space",
           "LM Studio bug-tracker threads", L_TG3, ["lmstudio"]),
    Recipe("llama-launcher-brackets", "llama-server", "launcher `[time][DEBUG] ` + own lines",
           "a launcher prefix (approximated)", L_GEN, ["launcher_brackets"]),
    Recipe("llama-docker-json", "llama-server", "docker json-file lines (Go JSON escaping)",
           "docker json-file driver format", L_COL, ["docker_json"]),
    Recipe("llama-syslog-rfc5424", "llama-server", "syslog RFC 5424", "RFC 5424",
           L_GEN, ["syslog_rfc5424"]),
    Recipe("llama-markdown-quote", "llama-server", "markdown quote `> ` on every line",
           "forum / GitHub quote blocks", L_ML, ["markdown_quote"]),
    Recipe("llama-unix-bracket", "llama-server", "`[unix seconds] ` prefix", "shell loggers",
           L_TG3, ["unix_bracket"]),
    Recipe("llama-pm2", "llama-server", "pm2 logs `id|name | time: `", "pm2 process manager",
           L_2RUN, ["pm2"]),
    Recipe("llama-jan", "llama-server", "Jan app log prefix", "Jan desktop (shape approximated)",
           L_TS, ["jan"]),
    Recipe("llama-era-b-journald-precise", "llama-server", "journalctl -o short-precise, era B",
           "systemd units running old builds", L_TEE, ["journald_short_precise"]),
    Recipe("llama-era-a-kubectl", "llama-server", "kubectl logs --timestamps, era A JSON lines",
           "Kubernetes deployments", L_JSON, ["kubectl"]),
    Recipe("llama-colors-indent-tab", "llama-server", "tab-indented paste of a coloured log",
           "mail / markdown code blocks", L_COL, ["indent_tab"]),
    Recipe("llama-journald-nl", "llama-server", "journald short, Dutch months (`mei`)",
           "glibc nl_NL abbreviations (not seen in a thread)", L_TS, ["journald_nl"]),
    Recipe("llama-swap-legacy", "llama-server",
           "llama-swap 2025: raw upstream, `[llama-swap]` access lines, `!!!` health lines",
           "llama-swap issue threads", L_ML, ["llama_swap_legacy"]),
    Recipe("llama-compose-color", "llama-server", "docker compose on a TTY (coloured column)",
           "compose pastes with colour codes", L_TS, ["compose_color"]),
    Recipe("llama-docker-desktop", "llama-server", "Docker Desktop log pane timestamp column",
           "LocalAI / llama.cpp threads (Docker Desktop copy)", L_GEN, ["docker_desktop"]),
    Recipe("llama-journald-short-full", "llama-server", "journalctl -o short-full",
           "systemd units", L_TG3, ["journald_short_full"]),
    Recipe("llama-rsyslog-traditional", "llama-server",
           "/var/log/syslog traditional (space-padded day)", "rsyslog files", L_2RUN,
           ["rsyslog_traditional"]),
    Recipe("llama-moreutils-ts", "llama-server", "`| ts` (moreutils) prefix",
           "shell pipelines", L_TEE, ["moreutils_ts"]),
    Recipe("llama-pylog-default", "llama-server", "Python `INFO:root:` default logging format",
           "Python wrappers of llama-server (subprocess readers)", L_TS, ["pylog_default"]),
    Recipe("llama-noalarm-fork-checkpoint", "llama-server",
           "no false alarm: a fork's `erasing old context checkpoint (..., n_tokens = ...)` "
           "lines after prompt progress", "issue 27 residue / public llama.cpp threads (shape)",
           L_TS, build=build_llama_checkpoint, no_alarm=True),
    Recipe("llama-ansi-line-journald-monotonic", "llama-server",
           "coloured whole lines under journalctl -o short-monotonic",
           "systemd units with colour forced on", L_GEN, ["ansi_line", "journald_short_monotonic"],
           note="as `journalctl -a` shows it (without -a, lines with ESC print as blob data)"),
    # --------------------------------------------------------------------- SGLang
    Recipe("sglang-ray-actor", "sglang", "Ray actor `(SGLangEngine pid=N) `",
           "issue 12 (`(SGLangEngine pid=…)`)", S + "v0.4.4-retract-pressure.log",
           ["ray_sglang_engine"]),
    Recipe("sglang-pylog-wrap", "sglang", "Python logging wrapper `asctime,ms LEVEL pid [f:l] `",
           "RL launchers logging the server's stdout", S + "v0.4.10-dp-attention.log",
           ["pylog_comma_pid"]),
    Recipe("sglang-pylog-brackets-wrap", "sglang", "Python logging `[time][file:line][LEVEL]: `",
           "issue 12", S + "v0.5.8-pp-forward-iters.log", ["pylog_brackets"]),
    Recipe("sglang-header-logging-config", "sglang",
           "header replaced by a user's logging config (`INFO pid [DP TP EP file:line]`)",
           "issue 12 (SGLang embedded with its own logging config)",
           S + "v0.4.10-dp-attention.log", pre=["sglang_header_pylog"],
           note="the SGLang header is rewritten, not wrapped: rank tags move inside the "
                "brackets, the date keeps no milliseconds"),
    Recipe("sglang-header-brackets-config", "sglang",
           "header replaced by `[time][file:line][LEVEL]: ` (rank tags lost)", "issue 12",
           S + "v0.5.11-pending-token-occupancy.log", pre=["sglang_header_brackets"]),
    Recipe("sglang-cut-middle-npu", "sglang", "paste damage: a block cut out of long lines",
           "issue 12 (terminal copy of Ascend NPU decode lines)",
           S + "v0.5.6-ascend-npu-ms.log", pre=["cut_middle"]),
    Recipe("sglang-cut-middle-kubectl", "sglang", "cut long lines, then kubectl timestamps",
           "issue 12", S + "v0.5.11-pending-token-occupancy.log", ["kubectl"],
           pre=["cut_middle"]),
    Recipe("sglang-kubectl-compose-ansi", "sglang", "ANSI level + compose column + kubectl",
           "Kubernetes / compose deployments", S + "v0.5.3.post2-eagle3-accept-rate.log",
           ["ansi_level", "docker_compose", "kubectl"]),
    Recipe("sglang-cri", "sglang", "CRI log file `time stream F `", "/var/log/pods on nodes",
           S + "v0.5.4-forward-ct-mamba.log", ["cri"]),
    Recipe("sglang-docker-json", "sglang", "docker json-file lines",
           "docker json-file logs", S + "v0.4.9-token-swa.log", ["docker_json"]),
    Recipe("sglang-journald-precise", "sglang", "journalctl -o short-precise",
           "systemd units", S + "v0.4.5-eagle-trailing.log", ["journald_short_precise"]),
    Recipe("sglang-indent2", "sglang", "two-space indentation", "issue 12 (markdown list paste)",
           S + "v0.2.12-gpu.log", ["indent2"]),
    Recipe("sglang-loguru", "sglang", "loguru `time | LEVEL | where - `",
           "custom launchers using loguru", S + "v0.5.9-eagle3-graph-last.log", ["loguru"]),
    Recipe("sglang-torchrun-tee", "sglang", "torchrun `[default0]:` glued prefix",
           "torchrun --tee launches", S + "v0.5.7-pd-prefill-tp-pp.log", ["torchrun_tee"]),
    Recipe("sglang-collapsed-spaces", "sglang", "paste damage: runs of spaces collapsed",
           "forum pastes", S + "v0.4.4-retract-pressure.log", pre=["collapse_spaces"]),
    Recipe("sglang-journald-pt", "sglang", "journald short, Portuguese months (`out`, `dez`)",
           "glibc pt_BR abbreviations (not seen in a thread)", S + "v0.3.0-hms-tp.log",
           ["journald_pt"]),
    Recipe("sglang-github-actions", "sglang", "GitHub Actions raw log (7-digit fraction)",
           "CI benchmark jobs", S + "v0.1.14-new-fill-batch.log", ["github_actions"]),
    Recipe("sglang-ray-actor-generic", "sglang", "Ray actor prefix with `ip=` (any actor name)",
           "Ray-launched SGLang (verl WorkerDict etc.)", S + "v0.5.9-eagle3-graph-last.log",
           ["ray_actor"]),
    Recipe("sglang-ray-dedup", "sglang",
           "Ray actors per TP rank + Ray log dedup (`[repeated Nx across cluster]`, moved copies)",
           "vLLM / SGLang on Ray threads (`[repeated 32x across cluster]`)",
           S + "v0.4.4-retract-pressure.log", build=build_ray_dedup,
           note="Ray folds another rank's copy of a line into one later line with a suffix "
                "(order changes; folded copies are gone and not counted)"),
    Recipe("sglang-ray-dedup-kubectl", "sglang", "Ray dedup, then kubectl timestamps",
           "Ray on Kubernetes (KubeRay)", S + "v0.4.7-retract-oom-crash.log", ["kubectl"],
           build=build_ray_dedup),
    Recipe("sglang-fluentbit-json", "sglang", "Fluent Bit json_lines (`date`, `log`, k8s meta)",
           "cluster log pipelines", S + "v0.4.10-dp-attention.log", ["fluentbit_json"]),
    Recipe("sglang-unix-seconds", "sglang", "unix seconds with fraction prefix",
           "`ts %.s` / short-unix style prefixes", S + "v0.5.8-pp-forward-iters.log",
           ["unix_seconds"]),
    Recipe("sglang-markdown-bold", "sglang", "every line in `**` (markdown bold paste)",
           "issue threads", S + "v0.4.4-retract-pressure.log", ["markdown_bold"]),
    # ------------------------------------------------------------------------ vLLM
    Recipe("vllm-ray-nested", "vllm", "Ray Data actor with nested parentheses",
           "Ray Data / vLLM batch inference threads", V + "v0.10.1-eagle3-apiserver.log",
           ["ray_nested"]),
    Recipe("vllm-kubectl", "vllm", "kubectl logs --timestamps (RFC 3339 ns, zeros trimmed)",
           "vLLM format notes (`docker logs -t` / kubectl)", V + "v0.11.0-dp2-ngram.log",
           ["kubectl"]),
    Recipe("vllm-gutter-editor", "vllm", "editor line-number gutter `683 `",
           "issue 12 (editor copy)", V + "v0.9.2-v0-engine-bracketed.log", ["gutter_editor"]),
    Recipe("vllm-compose", "vllm", "docker compose column + other services",
           "vLLM format notes (compose column)", V + "v0.12.0-dp2-aggregated-tty.log",
           ["docker_compose"], pre=["strip_docker_ts"]),
    Recipe("vllm-cri", "vllm", "CRI log file", "/var/log/pods", V + "v0.14.0-vl-mm-corrupted.log",
           ["cri"]),
    Recipe("vllm-journald-short-iso", "vllm", "journalctl -o short-iso",
           "systemd units", V + "v0.4.2-spec-draft-model.log", ["journald_short_iso"]),
    Recipe("vllm-journald-iso-precise", "vllm", "journalctl -o short-iso-precise",
           "systemd units", V + "v0.8.5-eagle-mal-no-plus-one.log",
           ["journald_short_iso_precise"]),
    Recipe("vllm-crlf", "vllm", "CRLF line ends", "Windows copies",
           V + "v0.30.0-cpu-backend.log", ["crlf"]),
    Recipe("vllm-ansi-caret", "vllm", "visible / lost ESC colour codes around lines",
           "pastes through `less` / web UIs", V + "v0.8.4-eagle.log", ["ansi_caret"]),
    Recipe("vllm-slurm-label", "vllm", "`srun --label` task prefix", "multi-node Slurm runs",
           V + "v0.11.0-dp2-ngram.log", ["slurm_label"]),
    Recipe("vllm-mpirun-tag", "vllm", "Open MPI `[1,0]<stdout>:` glued prefix",
           "MPI launches", V + "v0.3.0-fork-extra-fields.log", ["mpirun_tag"],
           pre=["strip_docker_ts"]),
    Recipe("vllm-trailing-200", "vllm", "trailing spaces to 200 columns", "wide terminal copies",
           V + "v0.2.7-v0a.log", ["trailing_spaces_200"]),
    Recipe("vllm-rich-handler", "vllm", "rich console: `[time] INFO` + `file:line` column",
           "Python apps using RichHandler", V + "v0.10.2-debug-fileinfo-nested.log",
           ["rich_handler"]),
    Recipe("vllm-stern", "vllm", "stern `pod container ` prefix",
           "a vLLM PR thread tailing pods with stern",
           V + "v0.26.0-iteration-details.log", ["stern"], no_alarm=True,
           note="Iteration(N) detail lines must raise no alarm"),
    Recipe("vllm-aws-logs-tail", "vllm", "`aws logs tail` prefix", "CloudWatch (ECS/SageMaker)",
           V + "v0.7.0-v1-opt-in.log", ["aws_logs_tail"]),
    Recipe("vllm-skypilot", "vllm", "SkyPilot `(task, pid=N) `", "SkyPilot jobs",
           V + "v0.22.0-mtp-deferred-journald.log", ["skypilot"], pre=["strip_journald"],
           note="the fixture's journald prefix is removed first"),
    Recipe("vllm-noalarm-lmcache", "vllm", "no false alarm: LMCache store / retrieve lines",
           "LMCache issue threads", V + "v0.10.1-eagle3-apiserver.log", build=build_lmcache,
           no_alarm=True),
    Recipe("vllm-noalarm-lmcache-docker-json", "vllm", "LMCache lines, docker json-file",
           "LMCache + docker", V + "v0.11.0-dp2-ngram.log", ["docker_json"],
           build=build_lmcache, no_alarm=True),
    Recipe("vllm-noalarm-iteration", "vllm", "no false alarm: `Iteration(N): ...` lines",
           "issue 12 (vLLM 0.26+ opt-in iteration details)", V + "v0.30.0-cpu-backend.log",
           build=build_iteration, no_alarm=True),
    Recipe("vllm-preempt-v0-journald", "vllm", "V0 preemption warnings, journald short",
           "vLLM V0 threads", V + "v0.6.2-preemption-compose.log", ["journald_short"],
           pre=["strip_compose"], note="the fixture's compose column is removed first"),
    Recipe("vllm-preempt-v0-headerless", "vllm", "V0 preemption warning text without header",
           "issue 12 (message pasted alone)", V + "v0.6.2-preemption-compose.log",
           pre=["strip_compose"], build=build_preempt_headerless),
    Recipe("vllm-preempt-v0-bold", "vllm", "V0 preemption warnings in `**` inside issue prose",
           "issue 12 (markdown bold paste)", V + "v0.9.2-v0-engine-bracketed.log",
           build=build_preempt_bold),
    Recipe("vllm-preempt-v0-bold-compose", "vllm", "the same with the 0.6.2 RECOMPUTE lines",
           "issue 12", V + "v0.6.2-preemption-compose.log", pre=["strip_compose"],
           build=build_preempt_bold),
    Recipe("vllm-collapsed-spaces", "vllm", "paste damage: runs of spaces collapsed",
           "forum pastes", V + "v0.9.2-v0-engine-bracketed.log", pre=["collapse_spaces"]),
    Recipe("vllm-syslog-rfc3164", "vllm", "BSD syslog with PRI", "network syslog",
           V + "v0.8.4-eagle.log", ["syslog_rfc3164"]),
    Recipe("vllm-log-ui-pipe", "vllm", "log viewer export `YYYY-mm-dd HH:MM:SS.mmm | `",
           "vLLM format notes (log UIs)", V + "v0.10.2-debug-fileinfo-nested.log",
           ["log_ui_pipe"]),
    Recipe("vllm-json-formatter", "vllm",
           "vLLM's JSON log formatter (header as JSON keys; uvicorn lines plain)",
           "vLLM format notes (pythonjsonlogger option)", V + "v0.32.0-kv-fetch-formatter.log",
           pre=["vllm_json_formatter"], note="a re-heading, not a wrapper: the message is intact"),
    Recipe("vllm-json-formatter-kubectl", "vllm", "vLLM JSON formatter under kubectl",
           "vLLM format notes", V + "v0.33.0-diffusion.log", ["kubectl"],
           pre=["vllm_json_formatter"]),
    Recipe("vllm-ray-worker-chain", "vllm",
           "two process prefixes `(EngineCore pid) (RayWorkerProc pid)`",
           "vLLM on Ray clusters (threads with NCCL lines)", V + "v0.11.0-dp2-ngram.log",
           ["ray_worker_chain"]),
    Recipe("vllm-loki-logcli", "vllm", "Grafana Loki logcli output (label set before the line)",
           "Loki / Grafana exports", V + "v0.12.0-dp2-aggregated-tty.log", ["loki_logcli"],
           pre=["strip_docker_ts"]),
    Recipe("vllm-podman", "vllm", "podman logs -t (local zone offset)", "podman deployments",
           V + "v0.8.5-eagle-mal-no-plus-one.log", ["podman_ts"]),
    Recipe("vllm-pylog-basic", "vllm", "Python `asctime - name - LEVEL - ` wrapper",
           "Python apps logging vLLM's stdout", V + "v0.4.2-spec-draft-model.log",
           ["pylog_basic"]),
    Recipe("vllm-gutter-less-n", "vllm", "`less -N` gutter", "screen copies from less",
           V + "v0.9.2-v0-engine-bracketed.log", ["gutter_less_n"]),
    Recipe("vllm-journald-short-unix", "vllm", "journalctl -o short-unix",
           "systemd units", V + "v0.14.0-vl-mm-corrupted.log", ["journald_short_unix"]),
    Recipe("vllm-kubectl-compose-ansi", "vllm", "ANSI level + compose column + kubectl",
           "Kubernetes / compose deployments", V + "v0.10.1-eagle3-apiserver.log",
           ["ansi_level", "docker_compose", "kubectl"]),
    Recipe("vllm-docker-t-wrapped-157", "vllm",
           "`docker logs -t` in a 157-column terminal: long records wrapped onto a second, "
           "unprefixed line", "issue 27 residue / public vLLM threads (shape)",
           V + "v0.26.0-iteration-details.log", ["kubectl"], post=["terminal_wrap_157"],
           no_alarm=True, note="each cut record must be joined again (`rejoined`): its figure "
           "line counted once, no alarm"),
    Recipe("vllm-ray-dedup", "vllm",
           "Ray Serve replicas + Ray log dedup: stats lines folded (`[repeated Nx across "
           "cluster]`)", "issue 27 residue / public vLLM threads (shape)",
           V + "v0.6.6-logging-prefix.log", build=build_ray_dedup_vllm, no_alarm=True,
           note="the source's stats intervals are dealt to the replicas in turn; folded copies "
                "are gone and not counted"),
    Recipe("vllm-gutter-padded-reqs", "vllm",
           "log viewer gutter `  12 | ` + counts padded before `reqs` (`Swapped: 0     reqs`)",
           "issue 27 residue / public vLLM threads (shape)",
           V + "v0.6.2-preemption-compose.log", ["gutter_pipe"],
           pre=["strip_compose", "pad_reqs"], no_alarm=True,
           note="the fixture's compose column is removed first"),
    # ------------------------------------------------------------- router / no server
    Recipe("router-sglang-legacy", "sglang-router",
           "sglang-router: Python launcher + Rust env_logger lines",
           "SGLang router threads (2024-25); ../shared/formats/sglang.md §9", None,
           render=render_router_legacy, no_alarm=True),
    Recipe("router-sglang-tracing", "sglang-router",
           "sglang-router tracing layout with request spans",
           "SGLang router threads (2025); ../shared/formats/sglang.md §9", None,
           render=render_router_tracing, no_alarm=True),
    Recipe("router-gateway-ms-kubectl", "sglang-router",
           "sgl-model-gateway (`smg` target, ms timestamps) under kubectl",
           "sgl-model-gateway deployments; ../shared/formats/sglang.md §9", None, ["kubectl"],
           render=render_gateway_ms, no_alarm=True),
    Recipe("text-readme", "none", "a README given as input (no server line at all)",
           "issue 12", None, render=render_readme, no_alarm=True,
           note="logscope must exit 1 with its 'no server lines found' message, no alarm"),
]


# ------------------------------------------------------------------------------------ render

def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def _read_lines(path: Path) -> Lines:
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _split(r: Recipe, out: Lines, used: list[int], km: KindMap) -> tuple[Lines, dict[str, int]]:
    """Apply the ``post`` splitters (a terminal's line wrap) to the wrapped lines.

    Only over a 1:1 stack (line j of the output is source line ``used[j]``), so it is known by
    construction which event lines were cut: ``rejoined`` counts the event lines (any kind the
    truth gives them) cut into exactly two physical lines, the records logscope should join
    again; ``continuation_lines`` counts every physical line a cut added.
    """
    if len(r.post) != 1 or len(out) != len(used):
        raise SystemExit(f"{r.name}: one post step, over a 1:1 stack ({len(out)} lines, "
                         f"{len(used)} source lines used)")
    pieces = [SPLITTERS[r.post[0]](ln) for ln in out]
    rejoined = sum(1 for j, ps in enumerate(pieces) if len(ps) == 2 and km.get(used[j]))
    continuation = sum(len(ps) - 1 for ps in pieces)
    return [p for ps in pieces for p in ps], {"rejoined": rejoined,
                                              "continuation_lines": continuation}


def render(r: Recipe, kinds: dict[str, KindMap]) -> tuple[bytes, dict]:
    rng = random.Random(_seed(r.name))
    partial: Counter[str] = Counter()
    built: dict[str, int] = {}
    if r.render is not None:
        lines, used, km = r.render(rng), [], {}
        src_n = 0
    else:
        assert r.source is not None
        src = _read_lines(ROOT / r.source)
        km = kinds[r.source]
        src_n = len(src)
        lines = src
        for step in r.pre:
            new = PRE[step](lines, rng)
            if len(new) != len(lines):
                raise SystemExit(f"{r.name}: step {step} is not 1:1")
            if step == "cut_middle":
                for i, (a, b) in enumerate(zip(lines, new, strict=True)):
                    if a != b:
                        partial.update(k for k in km.get(i, [])
                                       if k in FIGURE_KINDS[r.engine])
            lines = new
        if r.build is not None:
            res = r.build(lines, km, rng)
            lines, used = res[0], res[1]
            built = res[2] if len(res) > 2 else {}  # type: ignore[misc]
        else:
            used = list(range(len(lines)))
    bare_n = len(lines)
    out = compose(r.wrap, lines, rng)
    split: dict[str, int] = {}
    if r.post:
        out, split = _split(r, out, used, km)
    figs = Counter(k for i in used for k in km.get(i, []) if k in FIGURE_KINDS.get(r.engine, []))
    exp: dict = {
        "engine": None if r.engine == "none" else r.engine,
        "wrapper": [*r.pre, *([r.build.__name__] if r.build else []), *r.wrap, *r.post],
        "source": r.source,
        "lines": len(out),
        "figure_lines": {k: figs[k] for k in FIGURE_KINDS.get(r.engine, []) if figs[k]},
        "class": r.cls,
        "seen_in": r.seen,
        "seed": _seed(r.name),
        "source_lines_used": len(used),
        "source_lines": src_n,
        "inserted_lines": len(out) - len(used) if r.source else len(out),
    }
    if r.render is not None:
        exp["rendered_by"] = f"bench/wild.py {r.render.__name__}"
    if partial:
        exp["partial"] = True
        exp["partial_lines"] = dict(sorted(partial.items()))
    exp.update(built)
    exp.update(split)
    if r.no_alarm:
        exp["unrecognized"] = 0
    if r.engine == "sglang-router":
        exp["no_figures"] = True
    if r.engine == "none":
        exp["no_server_lines"] = True
    if r.note:
        exp["note"] = r.note
    assert bare_n >= len(used)
    text = "\n".join(out) + "\n"
    return text.encode("utf-8"), exp


def readme(recipes: list[Recipe], exps: dict[str, dict]) -> str:
    rows = []
    for r in recipes:
        e = exps[r.name]
        figs = ", ".join(f"{k} {v}" for k, v in e["figure_lines"].items()) or "none"
        src = f"`{r.source.removeprefix('fixtures/')}`" if r.source else "rendered here"
        steps = " → ".join(f"`{w}`" for w in e["wrapper"]) or "–"
        flags = []
        if e.get("partial"):
            flags.append("partial")
        if r.no_alarm:
            flags.append("no alarm")
        cells = [f"`{r.name}.log`", r.engine, r.cls, r.seen, src, steps, figs, ", ".join(flags)]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    def flags(i: Any) -> str:
        on = [f for f in ("inserts", "escapes", "suffix", "separates") if getattr(i, f)]
        return ", ".join([i.layer, *on])

    wrappers = "\n".join(f"- `{n}` [{i.provenance}; {flags(i)}]: {i.title} Source: {i.source}."
                         for n, i in CATALOGUE.items())
    levels = "\n".join(f"- `{k}`: {v}" for k, v in PROVENANCE_LEVELS.items())
    return f"""# Wild corpus: server logs as they arrive through wrappers and pastes

Rendered by `python bench/wild.py` (deterministic, seeded by each log's name; `--check` verifies the
files are up to date). Every log but the four `router-*` / `text-*` ones takes the **bare** lines of
one fixture of this repository (a `strip_*` step first removes a wrapper the fixture already
carries), damages, re-heads or extends them where the class says so, and wraps them with the
renderers of `tests/wrappers.py` (innermost first). The router logs are rendered from
`../shared/formats/sglang.md` §9, the README-like text is written here. No line was copied from the
public threads named below: the *shapes* were read there, every line here is rendered with
invented values.

## Expected counts (`<name>.expected.json`)

- `engine`, `source` (the bare fixture), `wrapper` (every step, innermost first), `lines` (physical
  lines of the wild log, i.e. `\\n` count).
- `figure_lines`: per figure-bearing event kind, the number of source lines of that kind that went
  into the log. It is computed **by construction**: logscope classifies the bare source fixture (at
  the pinned commit `TRUTH_REV` = `{TRUTH_REV}` of `bench/wild.py`, via `git archive`, so the parser
  rewrite in the working tree does not move the truth), the counts are checked against the
  hand-written goldens of `fixtures/<engine>/`, and only the source lines used are counted. The
  wrapped output is never parsed. Lines a wrapper or builder inserts (launcher lines, other compose
  services, LMCache, `params_from_`, `Iteration(N)`, prose) carry no figure.
- `partial: true` + `partial_lines` (kind → count): lines a paste cut in the middle; they still
  count in `figure_lines` (the intact key/value fields should be kept, the row flagged partial).
- `unrecognized: 0`: logs whose extra lines must raise no drift alarm.
- `rejoined` (a `SPLITTERS` step, a terminal's line wrap): the event lines cut into exactly two
  physical lines, each to be joined again into one record; `continuation_lines` counts every
  physical line the cuts added (they are in `lines` and `inserted_lines`).
- `folded`, `folded_lines` (Ray's log deduplication): the sum of the N of every
  `[repeated Nx across cluster]` suffix, and the lines that carry one.
- `no_figures` (router logs: recognised as `sglang-router`, no benchmark figures) and
  `no_server_lines` (the README: exit 1 with the usual message).
- `inserted_lines` = `lines` − `source_lines_used`; `source_lines` is the size of the bare source.
- `python bench/wild.py --truth live --check` derives the truth from the working tree's logscope
  instead of `TRUTH_REV`: a file reported out of date then means the new parser classifies a bare
  fixture differently from the pinned one (or from its golden, which stops the script).

## Logs

| log | engine | class | real-world source of the shape | bare source | steps | figure lines \
| flags |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Notes:
- vLLM's V0 preemption warning is rendered as `../shared/formats/vllm.md` §2.5 gives it
  (`Sequence group … is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV
  cache space. …`); issue 12 quotes it with `in`, the released format says `by`.
- `text-readme.log` deliberately holds no literal log line: a README that quotes real server lines
  is a log excerpt, not a false-alarm case.

## Wrapper classes of `tests/wrappers.py`

How well each shape is known (first tag), then the layer (`app`, `container`, `host`, `paste`,
inside out) and the flags of `tests/wrappers.py` (`inserts` own lines, `escapes` the server line,
puts a `suffix` after it, `separates` the lines of one multi-line record):

{levels}

{wrappers}

Paste damage and header rewrites (not wrappers: they change the server line): `collapse_spaces`,
`cut_middle`, `pad_reqs` (`DAMAGE`), `sglang_header_pylog`, `sglang_header_brackets`,
`vllm_json_formatter` (`REWRITERS`). A terminal's line wrap cuts one line into several (not a
wrapper either): `terminal_wrap_157` (`SPLITTERS`), applied last.
"""


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="verify instead of writing")
    ap.add_argument("--truth", default=TRUTH_REV,
                    help=f"git revision whose logscope classifies the bare sources "
                         f"(default {TRUTH_REV}), or 'live' for the working tree")
    args = ap.parse_args(argv)
    names = [r.name for r in RECIPES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate recipe names")
    unused = sorted(set(CATALOGUE) - {w for r in RECIPES for w in r.wrap})
    if unused:
        raise SystemExit(f"wrapper classes with no wild log: {', '.join(unused)}")
    sources = sorted({r.source for r in RECIPES if r.source})
    kinds = truth(sources, args.truth)
    files: dict[str, bytes] = {}
    exps: dict[str, dict] = {}
    for r in RECIPES:
        data, exp = render(r, kinds)
        files[f"{r.name}.log"] = data
        files[f"{r.name}.expected.json"] = (json.dumps(exp, indent=1, ensure_ascii=False)
                                            + "\n").encode()
        exps[r.name] = exp
    files["README.md"] = readme(RECIPES, exps).encode()
    if args.check:
        bad = [n for n, d in files.items()
               if not (WILD / n).exists() or (WILD / n).read_bytes() != d]
        extra = sorted(p.name for p in WILD.glob("*") if p.name not in files) \
            if WILD.exists() else []
        for n in bad:
            print(f"out of date: fixtures/wild/{n}")
        for n in extra:
            print(f"not rendered by bench/wild.py: fixtures/wild/{n}")
        if bad or extra:
            print("run: python bench/wild.py", file=sys.stderr)
            return 1
        print(f"fixtures/wild: {len(RECIPES)} logs up to date")
        return 0
    WILD.mkdir(parents=True, exist_ok=True)
    for p in WILD.glob("*"):
        if p.name not in files:
            p.unlink()
    for n, d in files.items():
        (WILD / n).write_bytes(d)
    per_engine = Counter(r.engine for r in RECIPES)
    print(f"fixtures/wild: wrote {len(RECIPES)} logs ({dict(per_engine)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
