"""Fuzz ``logscope.read`` with a million mutated lines (issue 7): no crash, no hang, counts add up.

    python bench/fuzz.py                      # 1,000,000 lines, batches of 20,000, seed 7
    python bench/fuzz.py --lines 200000 --seed 3 --batch 10000 --timeout 120
    python bench/fuzz.py --lines 200000 --chunk-bytes 65536   # + block-size independence

Lines come from the real llama-server runs (``fixtures/llama-server/corpus/*.log``) and every
other fixture log (llama-server eras, SGLang, vLLM), shuffled, and about half of them mutated
with the menu of ``tests/test_hostile_input.py`` (cut at a random point, random bytes, NUL,
invalid UTF-8, CR/CRLF, ANSI codes, long lines, numbers out of range, wrapper prefixes,
another engine's line, a flipped bit), plus random text and random byte lines, and a few
lines of 10 MB. Each batch is written to a temp file and ingested with ``logscope.read`` in a
worker process with a time limit (a batch over the limit is a hang). A batch passes when
``read`` returns or raises a documented error (``NoServerLines``, ``InputError``), the summary
has exactly as many lines as the file, and ``events + ignored + unrecognized == records``
(= ``lines``, plus the extra records of glued vLLM lines split apart).
A failing batch is kept in ``--keep`` for replay (``logscope ingest FILE``).
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_hostile_input import (  # noqa: E402 - the same mutation menu as the tests
    MUTATIONS,
    OTHER_ENGINE_LINES,
    expected_lines,
    mutate,
)

TEN_MB = 10 << 20


def source_lines() -> list[bytes]:
    logs = sorted((ROOT / "fixtures").rglob("*.log"))
    return [line for p in logs for line in p.read_bytes().splitlines() if line.strip()]


def make_batch(rnd: random.Random, pool: list[bytes], n: int, n_huge: int,
               ops: tuple[int, ...] | None = None) -> bytes:
    lines: list[bytes] = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.45:
            lines.append(rnd.choice(pool))
        elif r < 0.90:
            lines.append(mutate(rnd.choice(pool), rnd, big=rnd.choice([200, 5_000, 70_000]),
                                ops=ops))
        elif r < 0.95:
            lines.append(rnd.choice(OTHER_ENGINE_LINES))
        elif r < 0.98:  # random printable text
            k = rnd.randint(0, 120)
            lines.append(bytes(rnd.choice(b" abcdefghijklmnopqrstuvwxyz0123456789=|:,.[]()#%-")
                               for _ in range(k)))
        else:  # random bytes (a newline in them splits the line: still counted)
            lines.append(rnd.randbytes(rnd.randint(0, 200)))
    for _ in range(n_huge):  # a line of 10 MB, with or without a server anchor in front
        head = rnd.choice(pool)[:80] if rnd.random() < 0.5 else b""
        lines.insert(rnd.randrange(len(lines) + 1), head + b"z" * TEN_MB)
    if rnd.random() < 0.5:
        rnd.shuffle(lines)
    return b"\n".join(lines) + (b"\n" if rnd.random() < 0.8 else b"")


def run_batch(path: str, expect: int, chunk_bytes: int = 0) -> tuple[str, str]:
    """In the worker: ('ok' | 'fail', detail). With ``chunk_bytes``, the file is also read in
    blocks of that size (many blocks, threads), and the two summaries must be equal."""
    from logscope.ingest import NoServerLines, read
    from logscope.input.sources import InputError

    def summary(**kw: int) -> dict:
        try:
            logs = read(path, **kw)
        except NoServerLines as e:
            logs = e.args[0]
        return logs.summary()

    try:
        try:
            s = summary()
        except InputError as e:
            return "ok", f"InputError: {e}"
        if chunk_bytes:
            small = summary(chunk_bytes=chunk_bytes)
            if small != s:
                diff = {k: (s[k], small[k]) for k in s if s[k] != small.get(k)}
                return "fail", f"chunk_bytes={chunk_bytes} changes the summary: {str(diff)[:300]}"
        total = sum(s["events"].values()) + s["ignored"] + s["other"] + s["unrecognized"]
        records = s.get("records", s["lines"])  # > lines where glued vLLM records were split
        if s["lines"] != expect:
            return "fail", f"lines {s['lines']} != {expect} in the file"
        if total != records or records < s["lines"]:
            return "fail", f"events+ignored+unrecognized {total} != records {records} " \
                           f"(lines {s['lines']})"
        return "ok", f"{s['lines']} lines, {sum(s['events'].values())} events, " \
                     f"{s['unrecognized']} unrecognized, {s['requests']} requests"
    except Exception:  # a crash: anything but the documented errors
        return "fail", traceback.format_exc(limit=8)


def signature(detail: str) -> str:
    """A crash's signature: the exception type and the innermost logscope frame."""
    frames = re.findall(r'File ".*?(logscope/[\w/]+\.py)", line (\d+), in (\w+)', detail)
    excs = re.findall(r"^([\w.]*(?:Error|Exception|Exit|Interrupt)\w*):", detail, re.M)
    exc = excs[-1] if excs else "?"
    where = f"{frames[-1][0]}:{frames[-1][1]} {frames[-1][2]}" if frames else "?"
    return f"{exc} at {where}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per batch (= a hang)")
    ap.add_argument("--huge-every", type=int, default=5, help="a 10 MB line every N batches")
    ap.add_argument("--keep", default="bench/fuzz-failures", help="where failing batches go")
    ap.add_argument("--chunk-bytes", type=int, default=0,
                    help="also read each batch in blocks of this many bytes and compare")
    ap.add_argument("--without", default="", help=f"mutations left out, comma-separated, of: "
                    f"{', '.join(MUTATIONS)}")
    args = ap.parse_args()
    left_out = {w for w in args.without.split(",") if w}
    if left_out - set(MUTATIONS):
        ap.error(f"unknown mutation(s) {', '.join(sorted(left_out - set(MUTATIONS)))}")
    ops = tuple(i for i, m in enumerate(MUTATIONS) if m not in left_out) if left_out else None

    rnd = random.Random(args.seed)
    pool = source_lines()
    tmp = Path(tempfile.mkdtemp(prefix="logscope-fuzz-"))
    ctx = mp.get_context("spawn")
    worker = ctx.Pool(1, maxtasksperchild=50)
    tried = batches = crashes = hangs = mismatches = huge = 0
    slowest = 0.0
    signatures: collections.Counter[str] = collections.Counter()
    t0 = time.perf_counter()
    try:
        while tried < args.lines:
            n = min(args.batch, args.lines - tried)
            n_huge = 1 if batches % args.huge_every == 0 else 0
            data = make_batch(rnd, pool, n, n_huge, ops)
            expect = expected_lines(data)
            path = tmp / f"batch{batches:04d}.log"
            path.write_bytes(data)
            del data
            t = time.perf_counter()
            try:
                job = worker.apply_async(run_batch, (str(path), expect, args.chunk_bytes))
                status, detail = job.get(args.timeout)
            except mp.TimeoutError:
                status, detail = "hang", f"no result after {args.timeout:.0f} s"
                worker.terminate()
                worker = ctx.Pool(1, maxtasksperchild=50)
            dt = time.perf_counter() - t
            slowest = max(slowest, dt)
            tried += n
            huge += n_huge
            batches += 1
            if status != "ok":
                crashes += status == "fail" and "Traceback" in detail
                mismatches += status == "fail" and "Traceback" not in detail
                hangs += status == "hang"
                signatures[signature(detail) if "Traceback" in detail else detail[:120]] += 1
                keep = Path(args.keep)
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, keep / path.name)
                print(f"batch {batches}: {status.upper()} ({keep / path.name}): "
                      f"{signature(detail) if 'Traceback' in detail else detail}", flush=True)
            path.unlink()
            if batches % 10 == 0 or tried >= args.lines:
                print(f"{tried:>9,} lines  {batches} batches  {time.perf_counter() - t0:7.1f} s  "
                      f"crashes {crashes}  hangs {hangs}  count mismatches {mismatches}  "
                      f"(last: {detail[:90]})", flush=True)
    finally:
        worker.terminate()
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.perf_counter() - t0
    print(f"\nlines tried: {tried:,} (+{huge} lines of 10 MB) in {batches} batches of "
          f"{args.batch:,}, seed {args.seed}"
          + (f", without {', '.join(sorted(left_out))}" if left_out else ""))
    print(f"time: {elapsed:.1f} s ({tried / elapsed:,.0f} lines/s, slowest batch {slowest:.1f} s, "
          f"limit {args.timeout:.0f} s)")
    print(f"crashes: {crashes}  hangs: {hangs}  count mismatches: {mismatches}")
    for sig, n in signatures.most_common():
        print(f"  {n} batch(es): {sig}")
    return 1 if crashes or hangs or mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
