#!/usr/bin/env python3
"""Fleet ingest benchmark: many rotated logs into a Parquet dataset, serial, a local process pool
and a Dask LocalCluster, with the driver's peak RSS, for two fleet sizes.

    python bench/fleet.py [--hosts 6,12] [--days 4] [--mb-per-file 1.5] [--repeat 2] [--json OUT]

The fleet (built once; cached in ``bench/data/fleet-*``, git-ignored) is 3 engines × HOSTS hosts
× DAYS days: ``<host>/<engine>.log`` (the last day), ``<engine>.log.1`` (the day before) and
``<engine>.log.N.gz`` (older days, gzipped, as logrotate's ``compress`` leaves them), each a
distinct ``--mb-per-file`` MiB slice (cut at a line boundary) of the deterministic mixed log that
``bench/throughput.py``'s ``build()`` makes per engine from the real-format fixture lines (100
MiB, seed 1: a slice is never reused within a fleet up to 12 hosts × 4 days at 1.5 MiB), its
modification time set to noon UTC of its day. For each fleet size and each mode it ingests the
fleet into a fresh dataset in a child process:

* ``--workers 1``   ``ingest_to_dataset(..., workers=1)``: every file in the driver
* ``--workers 2``   a spawned process pool of 2 (each task reads, models, writes its parts)
* ``local:2``       ``scheduler="local:2"``: a ``dask.distributed.LocalCluster`` of 2 worker
                    processes, started and closed inside the measured time

``--repeat`` times (the modes taking turns, each round starting with another), and prints a
markdown table: the best wall s (and every run's), MiB/s of log (uncompressed), the driver's
peak RSS (``VmHWM`` of the child's own ``/proc/self/status``: not its workers) and the largest
worker's peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the child after its workers
exited; an upper bound, as a spawned child's ``ru_maxrss`` starts from the parent's at exec),
the CPU seconds of the driver and its workers together (user + system, the least over the
rounds: on a shared machine the wall time says how busy the others were, the CPU time what
the ingest itself cost), plus the time to start and close an empty LocalCluster alone. Every
mode's dataset must hold the same number of lines and Parquet parts (checked: the run fails
otherwise).

MB means MiB (2**20 bytes).
"""

from __future__ import annotations

import argparse
import calendar
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import throughput  # noqa: E402 - the log builder (bench/throughput.py)

DATA = ROOT / "bench" / "data"
MB = 1 << 20
ENGINES = ("llama-server", "sglang", "vllm")
SOURCE_MB = 100
FLEET_VERSION = 1
DAY0 = "2026-11-01"

CHILD = r"""
import json, resource, sys, time

def peak_kb():
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith("VmHWM:"):
                return int(ln.split()[1])

if __name__ == "__main__":
    pattern, ds, mode = sys.argv[1:4]
    from logscope.fleet.dataset import ingest_to_dataset
    kw = {"workers": int(mode.split("=")[1])} if mode.startswith("workers=") else {
        "scheduler": mode}
    t = time.perf_counter()
    if mode == "cluster-only":
        from logscope.fleet.distributed import runner
        with runner("local:2"):
            pass
        r = {"lines": 0, "parts": 0, "ingested": 0}
    else:
        r = ingest_to_dataset(pattern, ds, **kw)
    wall = time.perf_counter() - t
    import logscope
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(json.dumps({"wall": wall, "lines": r["lines"], "parts": r["parts"],
                      "module": logscope.__file__,
                      "cpu_driver": me.ru_utime + me.ru_stime,
                      "cpu_workers": kids.ru_utime + kids.ru_stime,
                      "files": r["ingested"], "driver_kb": peak_kb(),
                      "worker_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def build_fleet(hosts: int, days: int, mb_per_file: float, seed: int) -> tuple[Path, dict]:
    """The fleet's directory (built once per parameters and source logs) and its description."""
    sources = {e: throughput.build(e, SOURCE_MB, seed)[0] for e in ENGINES}
    key = json.dumps({"v": FLEET_VERSION, "hosts": hosts, "days": days, "mb": mb_per_file,
                      "seed": seed, "src": {e: p.stat().st_size for e, p in sources.items()}})
    root = DATA / f"fleet-{hosts}h-{days}d-{mb_per_file:g}mb-seed{seed}"
    meta_path = root / "fleet.json"
    if meta_path.exists() and json.loads(meta_path.read_text()).get("key") == key:
        return root, json.loads(meta_path.read_text())
    if root.exists():
        shutil.rmtree(root)
    t0 = time.perf_counter()
    size = int(mb_per_file * MB)
    n_files = disk = raw = 0
    day0 = calendar.timegm(time.strptime(DAY0, "%Y-%m-%d"))
    for engine, src in sources.items():
        total = src.stat().st_size
        with src.open("rb") as f:
            for h in range(hosts):
                d = root / "logs" / f"gpu{h + 1:02d}"
                d.mkdir(parents=True, exist_ok=True)
                for day in range(days):
                    slot = h * days + day  # a distinct slice of the source per (host, day)
                    f.seek((slot * size) % max(total - 2 * size, 1))
                    f.readline()  # to a line boundary
                    data = f.read(size)
                    data = data[:data.rfind(b"\n") + 1]
                    age = days - 1 - day  # 0 = the last day, the live file
                    name = d / (f"{engine}.log" if age == 0 else f"{engine}.log.{age}"
                                if age == 1 else f"{engine}.log.{age}.gz")
                    name.write_bytes(gzip.compress(data, 6, mtime=0) if age >= 2 else data)
                    noon = day0 + day * 86400 + 12 * 3600
                    os.utime(name, (noon, noon))
                    n_files += 1
                    disk += name.stat().st_size
                    raw += len(data)
    meta = {"key": key, "hosts": hosts, "days": days, "files": n_files, "disk_bytes": disk,
            "log_bytes": raw, "build_s": round(time.perf_counter() - t0, 1)}
    meta_path.write_text(json.dumps(meta, indent=1))
    return root, meta


def run_child(pattern: str, ds: Path, mode: str) -> dict:
    if ds.exists():
        shutil.rmtree(ds)
    env = {**os.environ, "LOGSCOPE_NO_PROGRESS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, pattern, str(ds), mode], cwd=ROOT,
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="6,12", help="fleet sizes: hosts per engine (6,12)")
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--mb-per-file", type=float, default=1.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2,
                    help="rounds; the modes take turns within a round (default 2)")
    ap.add_argument("--modes", default="workers=1,workers=2,local:2")
    ap.add_argument("--json", dest="json_out", default=None)
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    label = {"workers=1": "`--workers 1`", "workers=2": "`--workers 2`",
             "local:2": "`--scheduler local:2`"}
    rows, results = [], []
    for hosts in (int(h) for h in a.hosts.split(",")):
        root, meta = build_fleet(hosts, a.days, a.mb_per_file, a.seed)
        pattern = str(root / "logs" / "**" / "*.log*")
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        for rnd in range(a.repeat):
            # the modes take turns, starting with another one each round (a shared machine's
            # load drifts: no mode always runs first or last)
            for mode in modes[rnd % len(modes):] + modes[:rnd % len(modes)]:
                ds = root / f"ds-{mode.replace(':', '').replace('=', '')}"
                r = run_child(pattern, ds, mode)
                r["load"] = os.getloadavg()[0]
                runs[mode].append(r)
                results.append({"hosts": hosts, "mode": mode, "round": rnd, **meta, **r})
                print(f"{hosts} hosts, {mode}, round {rnd}: {r['wall']:.1f} s, load "
                      f"{r['load']:.1f}", file=sys.stderr, flush=True)
        if len({(r["lines"], r["parts"]) for rs in runs.values() for r in rs}) != 1:
            raise SystemExit(f"the modes disagree on (lines, parts): {runs}")
        for mode in modes:
            walls = sorted(r["wall"] for r in runs[mode])
            best = walls[0]
            every = ", ".join(f"{w:.1f}" for w in walls)
            driver = max(r["driver_kb"] for r in runs[mode]) / 1024
            worker_kb = max(r["worker_kb"] for r in runs[mode])
            worker = f"{worker_kb / 1024:.0f}" if worker_kb else "—"
            cpu = min(r["cpu_driver"] + r["cpu_workers"] for r in runs[mode])
            rows.append(f"| {3 * hosts} × {a.days} | {meta['files']} | "
                        f"{meta['log_bytes'] / MB:.0f} ({meta['disk_bytes'] / MB:.0f}) | "
                        f"{label.get(mode, mode)} | {best:.1f} ({every}) | "
                        f"{meta['log_bytes'] / MB / best:.1f} | {cpu:.1f} | {driver:.0f} | "
                        f"{worker} |")
    start = run_child("", DATA / "ds-none", "cluster-only")
    print("| logs (engine·host × days) | files | MiB of log (on disk) | mode | wall s, best "
          "(all) | MiB/s of log | CPU s | driver peak RSS MiB | largest worker peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nLocalCluster(n_workers=2) start + close alone: {start['wall']:.1f} s")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"runs": results, "cluster_start_s":
                                                start["wall"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
