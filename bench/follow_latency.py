"""logscope follow: latency from an append to the event, and CPU while idle (issue 5).

Runs ``logscope follow PATH --jsonl --serve 127.0.0.1:<free port>`` as a subprocess on a fresh
file, then:

* ``--jsonl`` latency: appends one real llama-server line (a ``decode_progress`` line from the
  corpus, carrying a unique id in its timestamp) at random intervals of 20-300 ms (random, so
  that appends do not fall into step with the 0.25 s poll of ``--poll``); latency = the time
  the JSON line is read from the follower's stdout minus the time the append returned (both
  ``time.perf_counter`` in this process);
* ``/metrics`` latency: appends a line, then scrapes ``/metrics`` every 5 ms until
  ``logscope_events_total`` has grown (so the figure includes up to 5 ms of scrape interval
  plus the HTTP round trip);
* idle CPU: the follower's user+system CPU time (``/proc/PID/stat``) over 10 s without writes.

Both wake-up paths are measured: watchfiles/inotify (default) and ``--poll`` (stat polling,
0.25 s). Usage: ``python bench/follow_latency.py [--n 200] [--idle 10] [--append-results]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = None


def template() -> str:
    src = ROOT / "fixtures" / "llama-server" / "corpus" / "generated-spec-pilot-c32k-np2.log"
    for raw in src.read_text().splitlines():
        if "tg_3s" in raw:
            return raw
    raise SystemExit("no decode_progress line in the corpus")


def line(i: int) -> str:
    t = template_line
    return f"{i // 60000}.{(i // 1000) % 60:02d}.{i % 1000:03d}.000" + t[12:] + "\n"


def uid(ts_rel: str) -> int:
    m, s, ms, _ = (int(x) for x in ts_rel.split("."))
    return m * 60000 + s * 1000 + ms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def events_total(port: int) -> float:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    return sum(float(x.rsplit(" ", 1)[1]) for x in body.splitlines()
               if x.startswith("logscope_events_total{"))


def run(mode: str, n: int, idle: float) -> dict:
    d = Path(tempfile.mkdtemp(prefix="logscope-follow-bench-"))
    p = d / "server.log"
    p.write_text("")
    port = free_port()
    cmd = [sys.executable, "-m", "logscope", "follow", str(p), "--jsonl",
           "--serve", f"127.0.0.1:{port}"] + (["--poll"] if mode == "poll" else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    got: dict[int, float] = {}
    cond = threading.Condition()

    def reader() -> None:
        assert proc.stdout is not None
        for out in proc.stdout:
            t = time.perf_counter()
            ev = json.loads(out)
            with cond:
                got[uid(ev["ts_rel"])] = t
                cond.notify_all()

    threading.Thread(target=reader, daemon=True).start()
    i = 0

    def append() -> tuple[int, float]:
        nonlocal i
        i += 1
        with open(p, "a") as f:
            f.write(line(i))
        return i, time.perf_counter()

    def wait_for(k: int, timeout: float = 5.0) -> float | None:
        end = time.monotonic() + timeout
        with cond:
            while k not in got:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                cond.wait(left)
            return got[k]

    try:
        # warm-up: the follower is up when a line comes back
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            k, _ = append()
            if wait_for(k, 1.0) is not None:
                break
        time.sleep(0.5)
        lat = []
        for _ in range(n):
            k, t0 = append()
            t1 = wait_for(k)
            if t1 is not None:
                lat.append((t1 - t0) * 1000)
            time.sleep(random.uniform(0.02, 0.3))
        mlat = []
        for _ in range(max(20, n // 4)):
            before = events_total(port)
            k, t0 = append()
            while time.perf_counter() - t0 < 5:
                if events_total(port) > before:
                    mlat.append((time.perf_counter() - t0) * 1000)
                    break
                time.sleep(0.005)
            wait_for(k)
            time.sleep(random.uniform(0.02, 0.06))
        time.sleep(1.0)
        c0, w0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(idle)
        c1, w1 = cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(10)
    return {"mode": mode, "n": len(lat), "lost": n - len(lat),
            "jsonl_median_ms": statistics.median(lat), "jsonl_p90_ms": pct(lat, 0.9),
            "jsonl_max_ms": max(lat),
            "metrics_median_ms": statistics.median(mlat), "metrics_p90_ms": pct(mlat, 0.9),
            "idle_cpu_pct": 100 * (c1 - c0) / (w1 - w0), "idle_s": w1 - w0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="appends per mode (default 200)")
    ap.add_argument("--idle", type=float, default=10.0, help="idle seconds for CPU (default 10)")
    ap.add_argument("--append-results", action="store_true",
                    help="append a table to bench/RESULTS.md")
    args = ap.parse_args()
    global template_line
    template_line = template()
    rows = [run(mode, args.n, args.idle) for mode in ("inotify", "poll")]
    hdr = ("| wake-up | appends | --jsonl median | --jsonl p90 | --jsonl max | /metrics median "
           "| /metrics p90 | idle CPU (10 s) |\n|---|---|---|---|---|---|---|---|")
    body = "\n".join(
        f"| {r['mode']} | {r['n']} (lost {r['lost']}) | {r['jsonl_median_ms']:.1f} ms "
        f"| {r['jsonl_p90_ms']:.1f} ms | {r['jsonl_max_ms']:.1f} ms "
        f"| {r['metrics_median_ms']:.1f} ms | {r['metrics_p90_ms']:.1f} ms "
        f"| {r['idle_cpu_pct']:.2f} % |" for r in rows)
    print(hdr)
    print(body)
    if args.append_results:
        import platform

        cpu = "?"
        try:
            for x in Path("/proc/cpuinfo").read_text().splitlines():
                if x.startswith("model name"):
                    cpu = x.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        text = f"""
## Follow (issue 5)

`python bench/follow_latency.py` ({time.strftime('%Y-%m-%d', time.gmtime())}, {cpu},
{os.cpu_count()} CPUs, Python {platform.python_version()}). One `logscope follow FILE --jsonl
--serve 127.0.0.1:PORT` process on a fresh file; one real llama-server `decode_progress` line
appended at random intervals of 20-300 ms (20-60 ms for the /metrics part). `--jsonl`: from
the append returning to the JSON line read from the follower's stdout. `/metrics`: from the
append to a scrape (every 5 ms, so up to 5 ms of scrape interval are included) showing
`logscope_events_total` grown. Idle CPU: the follower's user+system time over 10 s without
writes (`/proc/PID/stat`). Goals (issue 5): median ≤ 250 ms, idle CPU < 1 %.

{hdr}
{body}

inotify: watchfiles watches the file's directory (debounce 50 ms, step 10 ms), with a 1 s stat
safety poll; `--poll`: a stat every 0.25 s, so its latency is about half the poll interval.
"""
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(text)


template_line = ""

if __name__ == "__main__":
    main()
