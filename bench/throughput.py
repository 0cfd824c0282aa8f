#!/usr/bin/env python3
"""Throughput benchmark: logscope ingest beside the floor, a plain ``re`` loop and lark per line.

    python bench/throughput.py [--mb 100] [--engine llama-server|sglang|vllm|all] [--seed 1]
    python bench/throughput.py --engine llama-server --profile bench/data/profile.txt
    python bench/throughput.py --memory --mb 100,500,1000 --engine llama-server [--json OUT]

For each engine it builds (once; cached in ``bench/data/``, git-ignored) a deterministic mixed log
of at least ``--mb`` MiB by replaying the real-format lines of that engine's fixture logs
(``fixtures/<engine>/**/*.log``), then measures, in the same run (these machines are noisy, so
only the ratios are comparable across runs):

* floor       ``pl.scan_lines`` + a literal filter (``print_timing`` for llama-server) + count
* ingest      ``logscope.read(path, engine=...)`` in a child process: wall time, MB/s, lines/s,
              and its peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` read by a tiny runner
              process, so each engine's number is its own)
* re loop     a plain per-line Python ``re`` loop extracting the same main event kinds
* lark        ``load_grammar(engine).lark().parse`` per line on a seeded sample of 2,000 lines

llama-server logs are rebuilt request by request: each fixture file is cut into its server
header and its requests (slot selection .. release, with the cancel / error lines naming the
task); a run replays one file's header and then its requests, drawn with a seeded RNG, scheduled
over the file's ``n_slots`` slots (so slots interleave), with new task ids, new slots and new
``M.SS.mmm.uuu`` timestamps rendered with llama.cpp's own printf widths (``%d.%02d.%03d.%03d``,
``id %2d``, ``task %d``); the clock restarts with every run, as a server restart does. Fixture files
without that prefix (other eras), and SGLang / vLLM fixtures, are replayed whole, block after
block, with their timestamps shifted forward (and llama-server task ids renumbered).

``--memory`` measures peak memory against input size instead (the issue's "a 1 GB log needs no
more working memory than a 100 MB one"): for each size of the comma-separated ``--mb`` list it
builds (or reuses) that engine's log, then runs ``logscope.read([path], engine=...)`` once in a
fresh child process and prints a markdown table of wall s, MiB/s, peak RSS, the size of the output
the ingest must hold (``sum(df.estimated_size())`` over ``logs.tables``), the RSS after
``import polars, logscope`` (and the engine's grammar) in that child, and

    working memory = peak RSS - output size - RSS after imports,

then one line saying whether the working memory at the largest size is within ``--tolerance``
(default 1.25) times the one at the smallest. The child reports its own peak: ``VmHWM`` of
``/proc/self/status`` where there is one, else ``getrusage(RUSAGE_SELF).ru_maxrss`` (both are in
the JSON). ``ru_maxrss`` alone is not trusted: Python spawns children with vfork, and Linux then
carries the parent's high-water mark into the child's ``ru_maxrss`` at exec, whereas ``VmHWM``
belongs to the child's own address space. A child that dies (e.g. killed by the OOM killer) is
reported as a failed row, and the other sizes still run. Disk: each log stays in ``bench/data/``,
about 1.1 GB per 1000 MB of log (``--mb 100,500,1000`` needs ~1.8 GB free per engine); the
generator writes each replayed run (at most ~6 MiB of text) as it is made, so building a 1000 MB
log needs no more memory than a 100 MB one (measured: peak RSS under 60 MiB for 20 and 100 MB).

MB means MiB (2**20 bytes) throughout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
MB = 1 << 20
BUILDER_VERSION = 6  # bump when the generator changes (invalidates bench/data/ caches)

ENGINES = {
    # engine: (grammar file, fixture dir, floor literal)
    "llama-server": ("llama_server.lark", "llama-server", "print_timing"),
    "sglang": ("sglang.lark", "sglang", " batch"),
    "vllm": ("vllm.lark", "vllm", "throughput"),
}


# ------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------
def fixture_logs(engine: str) -> list[Path]:
    d = ROOT / "fixtures" / ENGINES[engine][1]
    return sorted(p for p in d.rglob("*.log") if p.is_file()) if d.is_dir() else []


def read_lines(p: Path) -> list[str]:
    text = p.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# ------------------------------------------------------------------------------------------
# llama-server: requests as templates
# ------------------------------------------------------------------------------------------
LLAMA_PREFIX = re.compile(r"^(\d+)\.(\d{2})\.(\d{3})\.(\d{3}) ([IWED]) (.*)$")
SLOT_TASK = re.compile(r"\bid(\s+)(\d+) \| task (-?\d+) \|")
TASK_REF = re.compile(r"(id_task = |task id = )(\d+)")
N_SLOTS = re.compile(r"n_slots = (\d+)")


def render_ts(us: int) -> str:
    """llama.cpp's common_log prefix: ``%d.%02d.%03d.%03d`` (minutes.seconds.ms.us)."""
    m, rest = divmod(us, 60_000_000)
    s, rest = divmod(rest, 1_000_000)
    ms, u = divmod(rest, 1000)
    return f"{m}.{s:02d}.{ms:03d}.{u:03d}"


@dataclass
class Unit:
    """A prefixed line (plus its continuation lines)."""

    t_us: int
    level: str
    body: str
    cont: list[str] = field(default_factory=list)


@dataclass
class Template:
    units: list[Unit]  # times relative to the request's first unit
    duration: int
    has_release: bool


@dataclass
class Source:
    name: str
    header: list[Unit]
    footer: list[Unit]
    requests: list[Template]
    n_slots: int
    t0: int

    @property
    def request_bytes(self) -> float:
        """Mean size of a rendered request (about 20 bytes of prefix and ids per line)."""
        total = sum(len(u.body or "") + 22 + sum(len(c) + 1 for c in u.cont)
                    for t in self.requests for u in t.units)
        return max(total / max(len(self.requests), 1), 1.0)


def parse_llama(p: Path) -> list[Source]:
    lines = read_lines(p)
    if not lines:
        return []
    units: list[Unit] = []
    pre: list[str] = []
    for ln in lines:
        m = LLAMA_PREFIX.match(ln)
        if m:
            a, b, c, d = (int(x) for x in m.group(1, 2, 3, 4))
            units.append(Unit(((a * 60 + b) * 1000 + c) * 1000 + d, m.group(5), m.group(6)))
        elif units:
            units[-1].cont.append(ln)
        else:
            pre.append(ln)
    if len(units) < len(lines) / 2:  # not this era: replayed whole (see replay_opaque)
        return []
    # a file holding several server runs (the clock goes back): one source per run
    segments: list[list[Unit]] = [[]]
    for u in units:
        if segments[-1] and u.t_us < segments[-1][-1].t_us - 1_000_000:
            segments.append([])
        segments[-1].append(u)
    out = []
    for i, seg in enumerate(segments):
        src = _source(f"{p.name}#{i + 1}" if len(segments) > 1 else p.name, seg,
                      pre if i == 0 else [])
        if src.requests:
            out.append(src)
    return out


def _source(name: str, units: list[Unit], pre: list[str]) -> Source:
    reqs: dict[int, list[Unit]] = {}
    order: list[int] = []
    pending: dict[int, Unit] = {}
    header: list[Unit] = []
    footer: list[Unit] = []
    n_slots = 0
    last_task: int | None = None
    last_req_idx = -1
    between: list[tuple[int, int, Unit]] = []  # (index, last task touched, unit)
    for i, u in enumerate(units):
        m = SLOT_TASK.search(u.body)
        if m:
            slot, task = int(m.group(2)), int(m.group(3))
            n_slots = max(n_slots, slot + 1)
            if task < 0:
                pending[slot] = u
                continue
            if task not in reqs:
                reqs[task] = [pending.pop(slot)] if slot in pending else []
                order.append(task)
            reqs[task].append(u)
            last_task, last_req_idx = task, i
            continue
        r = TASK_REF.search(u.body)
        if r and int(r.group(2)) in reqs:
            reqs[int(r.group(2))].append(u)
            last_task, last_req_idx = int(r.group(2)), i
            continue
        if last_task is None:
            header.append(u)
        else:
            between.append((i, last_task, u))
    # server lines between requests (spec statistics, "done request", prompt cache) travel with
    # the request just before them; those after the last request are the run's tail
    for i, task, u in between:
        (reqs[task] if i < last_req_idx else footer).append(u)
    for task in order:
        reqs[task].sort(key=lambda u: u.t_us)
    for h in header:
        m = N_SLOTS.search(h.body)
        if m:
            n_slots = int(m.group(1))
    templates = []
    for task in order:
        us = reqs[task]
        t0 = us[0].t_us
        rel = [Unit(u.t_us - t0, u.level, u.body, u.cont) for u in us]
        templates.append(Template(rel, rel[-1].t_us if rel else 0,
                                  any("stop processing" in u.body for u in us)))
    t0 = header[0].t_us if header else (units[0].t_us if units else 0)
    if pre:
        header.insert(0, Unit(t0, "I", "", pre))  # unprefixed lines before the first one
        header[0].body = None  # type: ignore[assignment]  # emitted as raw lines
    # only complete requests are replayed (a request cut by the file's end would hold its slot)
    done = [t for t in templates if t.has_release]
    return Source(name, header, footer, done, max(n_slots, 1), t0)


def render_unit(u: Unit, t_us: int, slot: int | None, task: int | None) -> list[str]:
    if u.body is None:
        return list(u.cont)
    body = u.body
    if slot is not None:
        def sub_slot(m: re.Match[str]) -> str:
            width = len(m.group(1)) + len(m.group(2)) - 1
            t = m.group(3)
            t_new = t if t.startswith("-") else str(task)
            return f"id {slot:>{width}d} | task {t_new} |"
        body = SLOT_TASK.sub(sub_slot, body, count=1)
    if task is not None:
        body = TASK_REF.sub(lambda m: f"{m.group(1)}{task}", body, count=1)
    return [f"{render_ts(t_us)} {u.level} {body}", *u.cont]


class TaskIds:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.next = 0

    def take(self) -> int:
        t = self.next
        self.next += self.rng.randint(1, 120)
        return t


def build_llama_run(src: Source, rng: random.Random, tasks: TaskIds, n_requests: int) -> list[str]:
    """One server run: the header, then ``n_requests`` requests interleaved over the slots."""
    out: list[tuple[int, int, list[str]]] = []  # (t_us, seq, lines)
    seq = 0
    for u in src.header:
        out.append((u.t_us, seq, render_unit(u, u.t_us, None, None)))
        seq += 1
    if src.header:
        now = src.header[-1].t_us + rng.randint(200_000, 2_000_000)
    else:  # an excerpt without its startup: the restarted clock begins a few seconds in
        now = rng.randint(1_000_000, 30_000_000)
    free_at = [now] * src.n_slots
    for _ in range(n_requests):
        tpl = rng.choice(src.requests)
        now += int(rng.expovariate(1 / 400_000))  # arrivals: mean 0.4 s apart
        slot = min(range(src.n_slots), key=lambda s: (free_at[s], s))
        start = max(now, free_at[slot]) + rng.randint(50, 30_000)
        task = tasks.take()
        for u in tpl.units:
            t = start + u.t_us
            out.append((t, seq, render_unit(u, t, slot, task)))
            seq += 1
        free_at[slot] = start + tpl.duration + rng.randint(10, 5_000)
    end = max(free_at) + rng.randint(1_000, 500_000)
    for i, u in enumerate(src.footer):
        out.append((end + i * 17, seq, render_unit(u, end + i * 17, None, None)))
        seq += 1
    out.sort(key=lambda x: (x[0], x[1]))
    return [ln for _, _, lines in out for ln in lines]


# ------------------------------------------------------------------------------------------
# whole-file replay: other llama-server eras, SGLang, vLLM
# ------------------------------------------------------------------------------------------
TS_FORMS = [
    # SGLang / Python logging: 2025-06-02 17:48:03[.123]
    (re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})"), "%Y-%m-%d{sep}%H:%M:%S"),
    # vLLM: INFO 07-14 20:11:48 (no year)
    (re.compile(r"(?<![\d-])(\d{2}-\d{2} \d{2}:\d{2}:\d{2})"), "%m-%d %H:%M:%S"),
]
UNIX_TS = re.compile(r"^\[(\d{9,11})\]")
UNIX_KV = re.compile(r"((?:\"timestamp\":\s*|\btimestamp=))(\d{9,11})")
ANY_TASK = re.compile(
    r"(task |id_task = |task id = |task id: |id_task=|\"id_task\":\s*|\"task_id\":\s*"
    r"|task_id=)(\d+)")


def shift_ts(line: str, off: int) -> str:
    """Shift every timestamp of a line by ``off`` seconds, in its own format."""
    if not off:
        return line
    m = UNIX_TS.match(line)
    if m:
        line = f"[{int(m.group(1)) + off}]{line[m.end():]}"
    if "timestamp" in line:
        line = UNIX_KV.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + off}", line)
    for rx, fmt in TS_FORMS:
        def sub(m: re.Match[str], fmt: str = fmt) -> str:
            s = m.group(1)
            if "%Y" in fmt:
                sep = s[10]
                t = dt.datetime.strptime(s, fmt.format(sep=sep)) + dt.timedelta(seconds=off)
                return t.strftime(fmt.format(sep=sep))
            t = dt.datetime.strptime("2025-" + s, "%Y-" + fmt) + dt.timedelta(seconds=off)
            return t.strftime(fmt)
        line = rx.sub(sub, line)
    return line


def span_seconds(lines: list[str]) -> int:
    first = last = None
    for ln in lines:
        m = UNIX_TS.match(ln) or UNIX_KV.search(ln)
        if m:
            v = int(m.group(m.lastindex or 1))
        else:
            v = None
            for rx, fmt in TS_FORMS:
                mm = rx.search(ln)
                if mm:
                    s = mm.group(1)
                    v = int((dt.datetime.strptime(s.replace("T", " "), "%Y-%m-%d %H:%M:%S")
                             if "%Y" in fmt else
                             dt.datetime.strptime("2025-" + s, "%Y-%m-%d %H:%M:%S")).timestamp())
                    break
        if v is not None:
            first = v if first is None else first
            last = v
    return 0 if first is None else max(last - first, 0)


def replay_opaque(lines: list[str], off: int, tasks: TaskIds | None) -> list[str]:
    out = []
    remap: dict[str, int] = {}
    for ln in lines:
        ln = shift_ts(ln, off)
        if tasks is not None:
            def sub(m: re.Match[str]) -> str:
                if m.group(2) not in remap:
                    remap[m.group(2)] = tasks.take()
                return f"{m.group(1)}{remap[m.group(2)]}"
            ln = ANY_TASK.sub(sub, ln)
        out.append(ln)
    return out


# ------------------------------------------------------------------------------------------
# building the big file
# ------------------------------------------------------------------------------------------
def build(engine: str, mb: float, seed: int, *, name: str | None = None,
          logs: list[Path] | None = None) -> tuple[Path, dict]:
    """The deterministic log of ``engine`` (module docstring), from ``logs`` (default: every
    fixture log of the engine) into ``bench/data/<name>-<mb>mb-seed<seed>.log``."""
    logs = fixture_logs(engine) if logs is None else logs
    name = name or engine
    digest = hashlib.sha256()
    for p in logs:
        digest.update(p.relative_to(ROOT).as_posix().encode())
        digest.update(p.read_bytes())
    key = f"v{BUILDER_VERSION}-{name}-{mb:g}-{seed}-{digest.hexdigest()[:12]}"
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"{name}-{mb:g}mb-seed{seed}.log"
    meta_path = path.with_suffix(".meta.json")
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("key") == key and path.stat().st_size == meta.get("bytes"):
            meta["cached"] = True
            return path, meta
    rng = random.Random(f"{seed}:{engine}")
    structured: list[Source] = []
    opaque: list[tuple[str, list[str], int]] = []
    for p in logs:
        srcs = parse_llama(p) if engine == "llama-server" else []
        if srcs:
            structured.extend(srcs)
        else:
            lines = read_lines(p)
            if lines:
                opaque.append((p.name, lines, span_seconds(lines)))
    target = int(mb * MB)
    written = n_lines = runs = blocks = 0
    by_source: dict[str, int] = {}
    clock = 0  # seconds added to opaque blocks' timestamps
    t_start = time.perf_counter()
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as f:
        while written < target:
            pool: list[object] = [*structured, *opaque]
            if not pool:
                break
            item = rng.choice(pool)
            if isinstance(item, Source):
                # every source weighs the same in expectation: a run of 0.5 to 6 MiB
                n_req = max(20, int(rng.uniform(0.5, 6) * MB / item.request_bytes))
                chunk = build_llama_run(item, rng, TaskIds(rng), n_req)  # ids restart per run
                runs += 1
                name = item.name
            else:
                # a whole-file block is repeated to 0.2 to 2 MiB (a third of a run)
                name, lines, span = item
                size = sum(len(ln) + 1 for ln in lines)
                chunk = []
                for _ in range(max(1, int(rng.uniform(0.2, 2) * MB) // max(size, 1))):
                    chunk += replay_opaque(lines, clock,
                                           TaskIds(rng) if engine == "llama-server" else None)
                    clock += span + rng.randint(1, 120)
                    blocks += 1
            text = "\n".join(chunk) + "\n"
            f.write(text)
            nbytes = len(text.encode("utf-8"))
            written += nbytes
            by_source[name] = by_source.get(name, 0) + nbytes
            n_lines += len(chunk)
    tmp.replace(path)
    meta = {"key": key, "bytes": path.stat().st_size, "lines": n_lines, "runs": runs,
            "opaque_blocks": blocks, "sources": [p.relative_to(ROOT).as_posix() for p in logs],
            "structured_sources": [s.name for s in structured],
            "requests_per_source": {s.name: len(s.requests) for s in structured},
            "mib_by_source": {k: round(v / MB, 1) for k, v in sorted(by_source.items())},
            "build_s": round(time.perf_counter() - t_start, 2), "cached": False}
    meta_path.write_text(json.dumps(meta, indent=1))
    return path, meta


def build_modern(mb: float, seed: int) -> tuple[Path, dict]:
    """A modern llama-server log (one server, no router, this year's line formats): the real
    runs under ``fixtures/llama-server/corpus/`` (H200 and CPU, with and without a draft model,
    and two excerpts of a long agent task) replayed request by request as :func:`build` does."""
    logs = sorted((ROOT / "fixtures" / "llama-server" / "corpus").glob("*.log"))
    return build("llama-server", mb, seed, name="llama-server-modern", logs=logs)


# ------------------------------------------------------------------------------------------
# measurements
# ------------------------------------------------------------------------------------------
def floor(path: Path, literal: str, repeat: int = 3) -> tuple[float, int]:
    import polars as pl

    best, n = float("inf"), 0
    for _ in range(repeat):
        t = time.perf_counter()
        n = (pl.scan_lines(str(path)).filter(pl.col("line").str.contains(literal, literal=True))
             .select(pl.len()).collect().item())
        best = min(best, time.perf_counter() - t)
    return best, n


CHILD = r"""
import json, resource, sys, time
path, engine = sys.argv[1], sys.argv[2]
import polars as pl, logscope
from logscope.classify.grammar import load_grammar
load_grammar(engine)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
logs = logscope.read(path, engine=engine)
wall = time.perf_counter() - t
s = logs.summary()
print(json.dumps({"wall": wall, "rss_before_kb": rss0, "lines": s["lines"], "events": s["events"],
                  "requests": s["requests"], "ignored": s["ignored"],
                  "unrecognized": s["unrecognized"], "runs": s["runs"]}))
"""

RUNNER = r"""
import resource, subprocess, sys
p = subprocess.run([sys.executable, "-c", sys.argv[1], *sys.argv[2:]],
                   capture_output=True, text=True)
sys.stderr.write(p.stderr)
print(p.stdout.strip())
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(p.returncode)
"""


def ingest_child(path: Path, engine: str) -> dict:
    """logscope.read in a grandchild; the runner between us reports its RUSAGE_CHILDREN peak."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", RUNNER, CHILD, str(path), engine],
                       capture_output=True, text=True, cwd=ROOT)
    total = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"ingest child failed ({p.returncode}):\n{p.stderr[-3000:]}")
    out_lines = p.stdout.strip().splitlines()
    res = json.loads(out_lines[-2])
    res["peak_rss_kb"] = int(out_lines[-1])
    res["process_s"] = total
    return res


MEM_CHILD = r"""
import json, resource, sys, time


def _status_kb(key):
    try:
        with open("/proc/self/status") as f:
            for ln in f:
                if ln.startswith(key + ":"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return None


def _ru_maxrss_kb():
    v = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return v // 1024 if sys.platform == "darwin" else v  # bytes on macOS, KiB on Linux


def _peak_kb():
    v = _status_kb("VmHWM")
    return _ru_maxrss_kb() if v is None else v


path, engine = sys.argv[1], sys.argv[2]
import polars as pl, logscope
try:
    from logscope.classify.grammar import load_grammar
    load_grammar(engine)
except ImportError:
    pass
after_imports = {"peak_kb": _peak_kb(), "rss_kb": _status_kb("VmRSS"),
                 "ru_maxrss_kb": _ru_maxrss_kb()}
t = time.perf_counter()
logs = logscope.read([path], engine=engine)
wall = time.perf_counter() - t
after_read = {"peak_kb": _peak_kb(), "rss_kb": _status_kb("VmRSS"),
              "ru_maxrss_kb": _ru_maxrss_kb()}
tables = {k: {"rows": df.height, "bytes": df.estimated_size()} for k, df in logs.tables.items()}
out_bytes = sum(v["bytes"] for v in tables.values())
print(json.dumps({"wall": wall, "lines": getattr(logs, "lines", None),
                  "after_imports": after_imports, "after_read": after_read,
                  "output_bytes": out_bytes, "tables": tables}))
"""


def memory_child(path: Path, engine: str) -> dict:
    """One ``logscope.read`` in a fresh child that reports its own memory (see ``MEM_CHILD``)."""
    p = subprocess.run([sys.executable, "-c", MEM_CHILD, str(path), engine],
                       capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        how = (f"killed by signal {-p.returncode}" + (" (out of memory?)" if p.returncode == -9
                                                      else "")
               if p.returncode < 0 else f"exit {p.returncode}")
        tail = p.stderr.strip().splitlines()[-1:] or [""]
        return {"error": f"{how} {tail[0]}".strip(), "stderr": p.stderr[-3000:]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["peak_mib"] = r["after_read"]["peak_kb"] / 1024
    r["imports_mib"] = r["after_imports"]["peak_kb"] / 1024
    r["output_mib"] = r["output_bytes"] / MB
    r["working_mib"] = r["peak_mib"] - r["output_mib"] - r["imports_mib"]
    return r


def meminfo() -> str:
    try:
        kv = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
        gib = lambda k: int(kv[k].split()[0]) / (1 << 20)  # noqa: E731
        return f"{gib('MemTotal'):.1f} GiB RAM, {gib('MemAvailable'):.1f} GiB available"
    except (OSError, KeyError, ValueError):
        return "RAM unknown"


def memory_engine(engine: str, sizes: list[float], seed: int, tolerance: float) -> dict | None:
    gfile, fdir, _literal = ENGINES[engine]
    if not (ROOT / "grammars" / gfile).exists():
        print(f"## {engine}: skipped (no grammars/{gfile})\n")
        return None
    if not fixture_logs(engine):
        print(f"## {engine}: skipped (no fixture logs under fixtures/{fdir}/)\n")
        return None
    print(f"## {engine}: peak memory against input size\n", flush=True)
    rows = []
    for mb in sizes:
        path, meta = build(engine, mb, seed)
        size = path.stat().st_size
        how = "cached" if meta["cached"] else f"built in {meta['build_s']} s"
        print(f"- {path.relative_to(ROOT)}: {size / MB:.1f} MiB, {meta['lines']:,} lines ({how}); "
              f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        r = memory_child(path, engine)
        r.update({"mb": mb, "file": str(path.relative_to(ROOT)), "file_mib": size / MB})
        rows.append(r)
    print()
    print("| log MiB | lines | wall s | MiB/s | peak RSS MiB | after imports MiB | output MiB "
          "| working MiB | working / log |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['file_mib']:,.1f} | | | | | | | | failed: {r['error']} |")
            continue
        lines = f"{r['lines']:,}" if r["lines"] is not None else "?"
        print(f"| {r['file_mib']:,.1f} | {lines} | {r['wall']:.2f} | "
              f"{r['file_mib'] / r['wall']:,.1f} | {r['peak_mib']:,.0f} | "
              f"{r['imports_mib']:,.0f} | "
              f"{r['output_mib']:,.0f} | {r['working_mib']:,.0f} | "
              f"{r['working_mib'] / r['file_mib']:.2f}× |")
    print()
    ok = [r for r in rows if "error" not in r]
    verdict: dict = {"tolerance": tolerance, "bounded": None}
    if len(rows) < 2:
        print("(one size only: give --mb a comma-separated list to compare working memory)")
    elif len(ok) < len(rows):
        print(f"working memory: not established, {len(rows) - len(ok)} of {len(rows)} sizes "
              f"failed (see the table)")
        verdict["bounded"] = False
    else:
        small = min(ok, key=lambda r: r["file_mib"])
        big = max(ok, key=lambda r: r["file_mib"])
        w_small, w_big = small["working_mib"], big["working_mib"]
        head = (f"working memory at {big['file_mib']:,.0f} MiB of log: {w_big:,.0f} MiB, at "
                f"{small['file_mib']:,.0f} MiB: {w_small:,.0f} MiB")
        if w_small <= 0:  # nothing to scale by (the output estimate swallowed the peak)
            print(f"{head}: ratio undefined (working memory at the smallest size is not positive)")
        else:
            ratio = w_big / w_small
            bounded = ratio <= tolerance
            verdict.update({"bounded": bounded, "ratio": ratio})
            print(f"{head}: {ratio:.2f}×, "
                  + (f"within {tolerance:g}× (bounded)" if bounded
                     else f"NOT within {tolerance:g}× (working memory grows with input size)"))
    print(flush=True)
    return {"engine": engine, "rows": rows, **verdict}


def memory(engines: list[str], sizes: list[float], seed: int, tolerance: float,
           json_out: str | None) -> int:
    import platform

    import polars as pl

    import logscope
    print(f"# logscope {logscope.__version__} memory against input size, polars {pl.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {meminfo()}, seed {seed}, "
          f"code {code_version()}\n", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    missing = [mb for eng in engines for mb in sizes
               if not (DATA / f"{eng}-{mb:g}mb-seed{seed}.log").exists()]
    need = sum(int(mb * MB * 1.1) for mb in missing)
    free = shutil.disk_usage(DATA).free
    if need > free:
        raise SystemExit(f"--memory: building {', '.join(f'{mb:g}' for mb in missing)} MiB of logs "
                         f"needs about {need / (1 << 30):.1f} GiB in {DATA}, "
                         f"{free / (1 << 30):.1f} GiB free")
    results = [r for eng in engines if (r := memory_engine(eng, sizes, seed, tolerance))]
    if json_out:
        Path(json_out).write_text(json.dumps(results, indent=1))
    return 0


# The plain per-line baseline: a literal test, then one hand-written regex per kind, typed.
TS = r"^(?:(\d+)\.(\d{2})\.(\d{3})\.(\d{3}) [IWED] )?"
ST = r".*?id\s+(\d+) \| task (-?\d+) \|\s*"
RE_KINDS: dict[str, list[tuple[str, str, str]]] = {
    # kind: [(literal, regex, field types)]
    "llama-server": [
        ("prompt eval time =",
         TS + ST + r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", "iiiiiifi"),
        ("eval time =", TS + ST + r"eval time =\s*([\d.]+) ms /\s*(\d+) tokens", "iiiiiifi"),
        ("total time =", TS + ST + r"total time =\s*([\d.]+) ms /\s*(\d+) tokens", "iiiiiifi"),
        ("graphs reused =", TS + ST + r"graphs reused =\s*(\d+)", "iiiiiii"),
        ("draft acceptance",
         TS + ST + r"draft acceptance = ([\d.]+) \(\s*(\d+) accepted /\s*(\d+) generated\)",
         "iiiiiifii"),
        ("stop processing:",
         TS + ST + r"stop processing: n_\w+ = (\d+), truncated = (\d)", "iiiiiiii"),
        ("processing task", TS + ST + r"processing task", "iiiiii"),
        ("prompt processing",
         TS + ST + r"prompt processing(?: progress)?, n_\w+ =\s*(\d+).*?progress = ([\d.]+)",
         "iiiiiiif"),
        ("tg =", TS + ST + r"n_(?:gen|decoded) =\s*(\d+), tg =\s*([\d.]+) t/s", "iiiiiiif"),
        ("selected slot by", TS + ST + r"selected slot by (\w+)", "iiiiiis"),
        ("cancel task", TS + r".*?cancel task, id_task = (\d+)", "iiiii"),
        ("context shift",
         TS + ST + r"slot context shift, n_keep = (\d+), n_left = (\d+), n_discard = (\d+)",
         "iiiiiiiii"),
        ("error:", TS + r".*?task id = (\d+), error: (.*)", "iiiiis"),
    ],
    "sglang": [
        ("Prefill batch",
         r".*?Prefill batch.*?#new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+)", "iii"),
        ("Decode batch",
         r".*?Decode batch.*?#running-req: (\d+), #token: (\d+).*?gen throughput \(token/s\): "
         r"([\d.]+)", "iif"),
        ("Retract", r".*?(Retract requests)", "s"),
        ("Decode out of memory", r".*?(Decode out of memory)", "s"),
    ],
    "vllm": [
        ("Avg prompt throughput",
         r".*?Avg prompt throughput: ([\d.]+) tokens/s, "
         r"Avg generation throughput: ([\d.]+) tokens/s", "ff"),
        ("Prefix cache hit rate: GPU", r".*?Prefix cache hit rate: GPU: ([\d.]+)%", "f"),
        ("acceptance", r".*?[Aa]cceptance (?:rate|length): ([\d.]+)", "f"),
        ("preempted", r".*?(preempted)", "s"),
    ],
}
CONV = {"i": lambda x: None if x is None else int(x),
        "f": lambda x: None if x is None else float(x), "s": lambda x: x}


def re_loop(path: Path, engine: str) -> tuple[float, int, int]:
    kinds = [(lit, re.compile(rx), [CONV[c] for c in types]) for lit, rx, types in RE_KINDS[engine]]
    t = time.perf_counter()
    n_lines = n_events = 0
    rows: list[tuple] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            n_lines += 1
            for lit, rx, conv in kinds:
                if lit in line:
                    m = rx.match(line)
                    if m:
                        rows.append(tuple(c(v) for c, v in zip(conv, m.groups(), strict=False)))
                        n_events += 1
                        break
    return time.perf_counter() - t, n_lines, n_events


def lark_sample(path: Path, engine: str, n: int, seed: int) -> tuple[float, int, int]:
    from lark.exceptions import UnexpectedInput

    from logscope.classify.grammar import load_grammar
    from logscope.input.frontend import strip_line

    with path.open(encoding="utf-8", errors="replace") as f:
        lines = [ln.rstrip("\n") for ln in f]
    rng = random.Random(f"{seed}:lark:{engine}")
    picks = sorted(rng.sample(range(len(lines)), min(n, len(lines))))
    sample = [strip_line(lines[i])[1] for i in picks]
    del lines
    parser = load_grammar(engine).lark()
    failed = 0
    t = time.perf_counter()
    for text in sample:
        try:
            parser.parse(text)
        except UnexpectedInput:
            failed += 1
    return time.perf_counter() - t, len(sample), failed


def bench_engine(engine: str, mb: float, seed: int, lark_n: int) -> dict | None:
    gfile, _fdir, literal = ENGINES[engine]
    if not (ROOT / "grammars" / gfile).exists():
        print(f"## {engine}: skipped (no grammars/{gfile})\n")
        return None
    if not fixture_logs(engine):
        print(f"## {engine}: skipped (no fixture logs under fixtures/{ENGINES[engine][1]}/)\n")
        return None
    path, meta = build(engine, mb, seed)
    size = path.stat().st_size
    how = "cached" if meta["cached"] else f"built in {meta['build_s']} s"
    print(f"## {engine}: {path.relative_to(ROOT)}  {size / MB:.1f} MiB, {meta['lines']:,} lines, "
          f"{meta['runs']} runs + {meta['opaque_blocks']} whole-file blocks from "
          f"{len(meta['sources'])} fixture logs ({how})",
          flush=True)
    print(f"load average before measuring: {' / '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"(1/5/15 min; {os.cpu_count()} CPUs)")
    print("mix (MiB by source): " + ", ".join(f"{k} {v}" for k, v in meta["mib_by_source"].items()),
          flush=True)
    ing = ingest_child(path, engine)  # first: nothing else in this process has warmed the cache
    fl_s, fl_n = floor(path, literal)
    ing2 = ingest_child(path, engine)  # and again after the floor ran, take the best
    best = min(ing, ing2, key=lambda r: r["wall"])
    rl_s, rl_lines, rl_events = re_loop(path, engine)
    lk_s, lk_n, lk_fail = lark_sample(path, engine, lark_n, seed)
    lines = best["lines"]
    lark_lps = lk_n / lk_s
    res = {
        "engine": engine, "file": str(path.relative_to(ROOT)), "mib": size / MB, "lines": lines,
        "floor_s": fl_s, "floor_hits": fl_n, "floor_literal": literal,
        "ingest_s": best["wall"], "ingest_s_runs": [ing["wall"], ing2["wall"]],
        "ingest_process_s": best["process_s"],
        "peak_rss_mib": max(ing["peak_rss_kb"], ing2["peak_rss_kb"]) / 1024,
        "rss_before_read_mib": ing["rss_before_kb"] / 1024,
        "events": sum(best["events"].values()), "ignored": best["ignored"],
        "unrecognized": best["unrecognized"], "requests": best["requests"], "runs": best["runs"],
        "re_s": rl_s, "re_events": rl_events,
        "lark_s": lk_s, "lark_n": lk_n, "lark_failed": lk_fail,
        "lark_est_full_s": lines / lark_lps,
    }
    mbps = lambda s: size / MB / s  # noqa: E731
    print()
    print("| measurement | wall s | MiB/s | lines/s | notes |")
    print("|---|---:|---:|---:|---|")
    print(f"| floor: `pl.scan_lines` + literal `{literal}` + count | {fl_s:.3f} | "
          f"{mbps(fl_s):,.0f} | "
          f"{lines / fl_s:,.0f} | {fl_n:,} hits, best of 3 |")
    print(f"| `logscope.read(engine={engine!r})` | {best['wall']:.2f} | "
          f"{mbps(best['wall']):,.1f} | "
          f"{lines / best['wall']:,.0f} | best of 2 ({ing['wall']:.2f} / {ing2['wall']:.2f}); "
          f"{res['events']:,} events, {res['ignored']:,} ignored, "
          f"{res['unrecognized']:,} unrecognized, "
          f"{res['requests']:,} requests, {res['runs']} runs |")
    print(f"| plain per-line Python `re` loop | {rl_s:.2f} | {mbps(rl_s):,.1f} | "
          f"{rl_lines / rl_s:,.0f} | "
          f"{rl_events:,} events of the main kinds |")
    print(f"| lark per line (sample of {lk_n:,}) | {lk_s:.2f} | "
          f"{mbps(res['lark_est_full_s']):,.2f} | "
          f"{lark_lps:,.0f} | {lk_fail} sample lines lark rejects; whole file would take ≈ "
          f"{res['lark_est_full_s'] / 60:,.0f} min |")
    print()
    print("| ratio | value |")
    print("|---|---:|")
    print(f"| ingest / floor (wall) | {best['wall'] / fl_s:.1f}× |")
    print(f"| re loop / ingest (wall) | {rl_s / best['wall']:.2f}× |")
    print(f"| ingest speed-up over lark per line (lines/s) | "
          f"{(lines / best['wall']) / lark_lps:,.0f}× |")
    print(f"| peak RSS of the ingest (child, `RUSAGE_CHILDREN`) | {res['peak_rss_mib']:,.0f} MiB "
          f"({res['peak_rss_mib'] / (size / MB):.1f}× the file; "
          f"{res['rss_before_read_mib']:.0f} MiB after imports) |")
    print(flush=True)
    return res


def profile(engine: str, mb: float, seed: int, out: str) -> int:
    """Profile one ``logscope.read`` of the generated log (in this process, grammar preloaded)."""
    import logscope
    from logscope.classify.grammar import load_grammar

    path, _meta = build(engine, mb, seed)
    load_grammar(engine)
    try:
        from pyinstrument import Profiler
    except ImportError:
        Profiler = None  # noqa: N806
    t = time.perf_counter()
    if Profiler is not None:
        prof = Profiler(interval=0.005)
        prof.start()
        logscope.read(str(path), engine=engine)
        prof.stop()
        text = prof.output_text(unicode=True, color=False)
    else:
        import cProfile
        import io
        import pstats

        cp = cProfile.Profile()
        cp.enable()
        logscope.read(str(path), engine=engine)
        cp.disable()
        buf = io.StringIO()
        pstats.Stats(cp, stream=buf).sort_stats("cumulative").print_stats(40)
        text = buf.getvalue()
    Path(out).write_text(text)
    print(f"profiled logscope.read({path.relative_to(ROOT)}) in {time.perf_counter() - t:.1f} s "
          f"-> {out} (code {code_version()})")
    return 0


def code_version() -> str:
    """The commit measured, and whether the package or grammars had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=ROOT, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "logscope", "grammars"],
                               capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    n = len(dirty.splitlines())
    return f"{head}" + (f" + {n} uncommitted changes in logscope/ grammars/" if n else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", default="100",
                    help="size of each generated log, MiB (default 100); with --memory a "
                         "comma-separated list of sizes, e.g. 100,500,1000")
    ap.add_argument("--engine", default="all", choices=["all", *ENGINES],
                    help="which engine(s) to benchmark (default: all with a grammar and fixtures)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lark-lines", type=int, default=2000)
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results here")
    ap.add_argument("--profile", metavar="OUT", default=None,
                    help="instead of benchmarking, profile logscope.read on the (built) log of "
                         "--engine with pyinstrument (cProfile if it is not installed) into OUT")
    ap.add_argument("--memory", action="store_true",
                    help="instead of benchmarking, measure peak RSS and working memory of "
                         "logscope.read for each size of --mb (see the module docstring)")
    ap.add_argument("--tolerance", type=float, default=1.25,
                    help="with --memory: largest-size working memory may be this many times the "
                         "smallest-size one (default 1.25)")
    a = ap.parse_args(argv)
    try:
        sizes = [float(x) for x in str(a.mb).split(",") if x.strip()]
    except ValueError:
        ap.error(f"--mb: expected a number or a comma-separated list of numbers, got {a.mb!r}")
    if not sizes or any(x <= 0 for x in sizes):
        ap.error("--mb: sizes must be positive")
    engines = list(ENGINES) if a.engine == "all" else [a.engine]
    if a.memory:
        return memory(engines, sorted(set(sizes)), a.seed, a.tolerance, a.json_out)
    if len(sizes) != 1:
        ap.error("--mb takes a list of sizes only with --memory")
    a.mb = sizes[0]
    if a.profile:
        return profile(a.engine if a.engine != "all" else "llama-server", a.mb, a.seed, a.profile)
    import platform

    import polars as pl

    import logscope
    print(f"# logscope {logscope.__version__} throughput, polars {pl.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, seed {a.seed}, "
          f"code {code_version()}\n", flush=True)
    results = []
    for eng in engines:
        r = bench_engine(eng, a.mb, a.seed, a.lark_lines)
        if r:
            results.append(r)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
