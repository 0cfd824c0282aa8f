"""Active beside passive: read llama-bench / llama-sweep-bench results and put them beside the
same tests measured from a server log.

Formats read (the field names are llama-bench's own):

* ``llama-bench -o json`` (a list of objects) and ``-o jsonl`` (one object per line): one test
  per object, ``n_prompt``, ``n_gen``, ``n_depth`` (absent before ``-d`` existed: 0),
  ``avg_ts``, ``stddev_ts``, ``samples_ts`` (the repetitions), and the configuration
  (``model_type``, ``backends``, ``n_gpu_layers``, ``n_batch``, ``n_ubatch``, ``type_k``,
  ``type_v``, ``flash_attn``, ``n_threads``, ``build_commit``, ...).
* ``-o csv``: the same fields as a header line and quoted rows (no samples).
* ``-o md`` (the default, what users paste): a Markdown table whose ``test`` column is
  ``pp512``, ``tg128``, ``pp512 @ d4096`` (``-d``), ``pp 512`` (older builds) or
  ``pp512+tg128`` (``-pg``), and whose ``t/s`` column is ``mean ± std``; the other columns
  (model, size, backend, ngl, ...) are the configuration. A ``build: <commit> (<number>)``
  line may follow.
* llama-sweep-bench's table (``PP | TG | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s``): each
  row is a ``pp<PP> @ d<N_KV>`` and a ``tg<TG> @ d<N_KV>`` test measured once.

Matching: an active test ``pp<N> @ d<D>`` meets the passive bucket of
:func:`logscope.analysis.report.bench_table` with the same power-of-two buckets (``pp512``
holds requests of 363..724 computed tokens, ``d4096`` 2897..5792 cached); ``tg<N> @ d<D>``
likewise (the passive depth of a decode is cached + prompt tokens). Δ % = (passive − active) /
active. ``pg`` tests (prompt and generation timed together) have no passive counterpart.

>>> bench = read_bench("fixtures/llama-bench/bench.json")            # doctest: +SKIP
>>> side_by_side(logscope.read("server.log"), bench)                  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import polars as pl

__all__ = ["read_bench", "bench_header", "sniff", "side_by_side", "render", "BENCH_SCHEMA",
           "BenchFormatError"]

BENCH_SCHEMA = {"test": pl.String, "kind": pl.String, "n_prompt": pl.Int64, "n_gen": pl.Int64,
                "n_depth": pl.Int64, "tps_mean": pl.Float64, "tps_std": pl.Float64,
                "reps": pl.Int64, "config": pl.String, "format": pl.String}

# llama-bench's configuration fields: the ones that vary between rows label the test
CONFIG_KEYS = ("model_type", "model_filename", "backends", "n_gpu_layers", "n_batch",
               "n_ubatch", "n_threads", "type_k", "type_v", "flash_attn", "split_mode",
               "tensor_split", "no_kv_offload", "use_mmap", "n_cpu_moe", "devices",
               "build_commit")
SHORT = {"model_type": "model", "model_filename": "file", "backends": "backend",
         "n_gpu_layers": "ngl", "n_batch": "n_batch", "n_ubatch": "n_ubatch",
         "n_threads": "threads", "flash_attn": "fa", "no_kv_offload": "nkvo",
         "use_mmap": "mmap", "split_mode": "sm", "tensor_split": "ts", "n_cpu_moe": "ncmoe",
         "build_commit": "build", "gpu_info": "gpu"}
HEADER_KEYS = ("model_type", "backends", "gpu_info", "cpu_info", "build_commit", "build_number")
# md column -> the json field it shows
MD_KEYS = {"model": "model_type", "backend": "backends", "ngl": "n_gpu_layers",
           "threads": "n_threads", "fa": "flash_attn", "sm": "split_mode", "ts": "tensor_split",
           "mmap": "use_mmap", "nkvo": "no_kv_offload", "dev": "devices"}
# md columns that are not configuration
_MD_MEASURES = {"test", "t/s", "size", "params"}


class BenchFormatError(ValueError):
    """The file is not a llama-bench / llama-sweep-bench result logscope can read."""


def _test_name(kind: str, n: int, depth: int) -> str:
    return f"{kind}{n} @ d{depth}"


def _row(kind: str, n_prompt: int, n_gen: int, depth: int, mean: float | None,
         std: float | None, reps: int | None, cfg: dict, fmt: str) -> dict:
    if kind == "pg":
        test = f"pp{n_prompt}+tg{n_gen} @ d{depth}"
    else:
        test = _test_name(kind, n_prompt if kind == "pp" else n_gen, depth)
    return {"test": test, "kind": kind, "n_prompt": n_prompt, "n_gen": n_gen,
            "n_depth": depth, "tps_mean": mean, "tps_std": std, "reps": reps,
            "_cfg": cfg, "format": fmt}


def _int(v) -> int:  # noqa: ANN001
    if v is None or v == "":
        return 0
    return int(float(v))


def _float(v) -> float | None:  # noqa: ANN001
    if v is None or v == "":
        return None
    return float(v)


def _from_records(records: list[dict], fmt: str) -> list[dict]:
    rows = []
    for r in records:
        if not isinstance(r, dict) or "avg_ts" not in r:
            raise BenchFormatError(f"a {fmt} record without avg_ts: not llama-bench output")
        p, g, d = _int(r.get("n_prompt")), _int(r.get("n_gen")), _int(r.get("n_depth"))
        kind = "pg" if p and g else "pp" if p else "tg"
        samples = r.get("samples_ts")
        reps = len(samples) if isinstance(samples, list) and samples else None
        cfg = {k: int(v) if isinstance(v, bool) else v
               for k in (*CONFIG_KEYS, *HEADER_KEYS) if (v := r.get(k)) is not None}
        rows.append(_row(kind, p, g, d, _float(r.get("avg_ts")), _float(r.get("stddev_ts")),
                         reps, cfg, fmt))
    return rows


_TEST_RE = re.compile(r"^\s*(pp|tg)\s*(\d+)(?:\s*\+\s*tg\s*(\d+))?(?:\s*@\s*d\s*(\d+))?\s*$")
_TPS_RE = re.compile(r"^\s*([0-9][0-9,]*\.?[0-9]*)\s*(?:(?:±|\+/-|\+-)\s*([0-9][0-9,]*\.?[0-9]*))?")


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def _from_markdown(text: str) -> list[dict]:
    lines = [ln for ln in text.splitlines()]
    rows: list[dict] = []
    build = re.search(r"build:\s*([0-9a-f]+)\s*\((\d+)\)", text)
    i = 0
    found_table = False
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            i += 1
            continue
        header = [c.lower() for c in _cells(lines[i])]
        sep = lines[i + 1] if i + 1 < len(lines) else ""
        if not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", sep or "x"):
            i += 1
            continue
        body = []
        j = i + 2
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            body.append(_cells(lines[j]))
            j += 1
        if "test" in header and "t/s" in header:
            found_table = True
            rows += _md_bench(header, body, build)
        elif {"pp", "tg", "n_kv"} <= set(header):
            found_table = True
            rows += _md_sweep(header, body)
        i = j
    if not found_table:
        raise BenchFormatError("no llama-bench table (columns test and t/s) and no "
                               "llama-sweep-bench table (PP, TG, N_KV) found")
    return rows


def _md_bench(header: list[str], body: list[list[str]], build) -> list[dict]:  # noqa: ANN001
    ti, si = header.index("test"), header.index("t/s")
    rows = []
    for cells in body:
        if len(cells) != len(header):
            continue
        m = _TEST_RE.match(cells[ti])
        t = _TPS_RE.match(cells[si])
        if not m or not t:
            continue
        kind, n, n2, d = m.group(1), int(m.group(2)), m.group(3), int(m.group(4) or 0)
        if n2 is not None:
            p, g, kind = n, int(n2), "pg"
        else:
            p, g = (n, 0) if kind == "pp" else (0, n)
        cfg = {MD_KEYS.get(h, h): c for h, c in zip(header, cells, strict=True)
               if h not in _MD_MEASURES and c != ""}
        if build:
            cfg["build_commit"], cfg["build_number"] = build.group(1), build.group(2)
        rows.append(_row(kind, p, g, d, _num(t.group(1)),
                         _num(t.group(2)) if t.group(2) else None, None, cfg, "md"))
    return rows


def _md_sweep(header: list[str], body: list[list[str]]) -> list[dict]:
    def idx(*names: str) -> int | None:
        for n in names:
            if n in header:
                return header.index(n)
        return None

    ip, ig, ik = idx("pp"), idx("tg"), idx("n_kv")
    isp, isg = idx("s_pp t/s", "s_pp"), idx("s_tg t/s", "s_tg")
    rows = []
    for cells in body:
        try:
            pp, tg, nkv = int(_num(cells[ip])), int(_num(cells[ig])), int(_num(cells[ik]))
        except (ValueError, IndexError, TypeError):
            continue
        if isp is not None and pp:
            rows.append(_row("pp", pp, 0, nkv, _num(cells[isp]), None, 1, {}, "sweep-bench"))
        if isg is not None and tg:
            rows.append(_row("tg", 0, tg, nkv, _num(cells[isg]), None, 1, {}, "sweep-bench"))
    return rows


def _parse(text: str, name: str) -> list[dict]:
    s = text.lstrip("\ufeff").strip()
    if not s:
        raise BenchFormatError(f"{name} is empty")
    if s.startswith("["):
        try:
            data = json.loads(s)
        except ValueError as e:
            raise BenchFormatError(f"{name}: not valid JSON ({e})") from e
        return _from_records(data, "json")
    if s.startswith("{"):
        try:
            recs = [json.loads(ln) for ln in s.splitlines() if ln.strip()]
        except ValueError as e:
            raise BenchFormatError(f"{name}: not valid JSON lines ({e})") from e
        return _from_records(recs, "jsonl")
    first = s.splitlines()[0]
    if "avg_ts" in first and "," in first:
        recs = list(csv.DictReader(io.StringIO(s)))
        return _from_records(recs, "csv")
    return _from_markdown(s)


def read_bench(path: str | Path) -> pl.DataFrame:
    """One row per test of a llama-bench (json, jsonl, csv, md) or llama-sweep-bench result.

    Columns: ``test`` (``pp512 @ d4096``; configuration that varies between tests appended in
    brackets by :func:`side_by_side`), ``kind`` (pp, tg, pg), ``n_prompt``, ``n_gen``,
    ``n_depth``, ``tps_mean``, ``tps_std``, ``reps`` (repetitions, where the format says),
    ``config`` (the configuration that varies between the file's tests, ``ngl=10``),
    ``format``. The file-wide configuration is in ``df.config_header`` (not a column).

    Example: read_bench("fixtures/llama-bench/bench.json").select("test", "tps_mean")
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError as e:
        raise BenchFormatError(f"{path}: no such file") from e
    except OSError as e:
        raise BenchFormatError(f"cannot read {path}: {e.strerror or e}") from e
    rows = _parse(text, str(path))
    if not rows:
        raise BenchFormatError(f"{path}: no llama-bench tests found")
    keys = dict.fromkeys(k for r in rows for k in r["_cfg"]
                         if k not in ("gpu_info", "cpu_info", "build_number"))
    varying = [k for k in keys if len({str(r["_cfg"].get(k)) for r in rows}) > 1]
    for r in rows:
        cfg = r.pop("_cfg")
        r["config"] = ", ".join(f"{SHORT.get(k, k)}={cfg.get(k)}" for k in varying) or None
    return pl.DataFrame(rows, schema=BENCH_SCHEMA)


def bench_header(path: str | Path) -> dict:
    """The configuration common to every test of a bench file (model, backend, build, ...)."""
    rows = _parse(Path(path).read_text(encoding="utf-8", errors="replace"), str(path))
    if not rows:
        return {}
    common = dict(rows[0]["_cfg"])
    for r in rows[1:]:
        for k in list(common):
            if str(r["_cfg"].get(k)) != str(common[k]):
                del common[k]
    common["format"] = rows[0]["format"]
    return common


def sniff(path: str | Path) -> bool:
    """Is ``path`` a llama-bench / llama-sweep-bench result (not a server log)?"""
    try:
        with open(path, "rb") as f:
            head = f.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return False
    s = head.lstrip("\ufeff").lstrip()
    if s.startswith(("[", "{")):
        return '"avg_ts"' in s
    if "avg_ts" in (s.splitlines() or [""])[0]:
        return True
    for line in s.splitlines():
        if line.lstrip().startswith("|"):
            cells = [c.lower() for c in _cells(line)]
            if ("test" in cells and "t/s" in cells) or {"pp", "tg", "n_kv"} <= set(cells):
                return True
    return False


def _passive(logs, label: str | None) -> pl.DataFrame:
    from logscope.analysis.report import bench_table

    return bench_table(logs, label)


def side_by_side(logs, bench: pl.DataFrame, label: str | None = None) -> pl.DataFrame:
    """Per active test of ``bench`` (from :func:`read_bench`): the active t/s, the passive t/s
    of the same test bucket in ``logs`` (a :func:`logscope.read` result), Δ % and n.

    Columns: ``test`` (with the varying configuration in brackets), ``active_tps``,
    ``active_std``, ``active_n`` (repetitions, where the format says), ``passive_tps``,
    ``passive_std``, ``passive_n`` (requests), ``passive_shared`` (of them, ran alongside
    another request), ``delta_pct`` (None without a passive counterpart).

    Example: side_by_side(logscope.read("server.log"), read_bench("bench.json"))
    """
    from logscope.analysis._util import bucket, depth_bucket

    passive = _passive(logs, label)
    by_key = {(r["kind"], r["tokens_bucket"], r["depth_bucket"]): r
              for r in passive.iter_rows(named=True)}
    out = []
    for r in bench.iter_rows(named=True):
        n = r["n_prompt"] if r["kind"] == "pp" else r["n_gen"]
        key = (r["kind"], bucket(n), depth_bucket(r["n_depth"]))
        pr = by_key.get(key) if r["kind"] in ("pp", "tg") else None
        test = r["test"] + (f" [{r['config']}]" if r["config"] else "")
        a = r["tps_mean"]
        p = pr["tps_mean"] if pr else None
        out.append({"test": test, "passive_test": pr["test"] if pr else None,
                    "active_tps": a, "active_std": r["tps_std"],
                    "active_n": r["reps"], "passive_tps": p,
                    "passive_std": pr["tps_std"] if pr else None,
                    "passive_n": pr["n"] if pr else None,
                    "passive_shared": pr["shared"] if pr else None,
                    "delta_pct": (p - a) / a * 100 if p is not None and a else None})
    return pl.DataFrame(out, schema={"test": pl.String, "passive_test": pl.String,
                                     "active_tps": pl.Float64,
                                     "active_std": pl.Float64, "active_n": pl.Int64,
                                     "passive_tps": pl.Float64, "passive_std": pl.Float64,
                                     "passive_n": pl.Int64, "passive_shared": pl.Int64,
                                     "delta_pct": pl.Float64})


def _pm(mean: float | None, std: float | None) -> str:
    if mean is None:
        return "—"
    return f"{mean:,.2f}" + (f" ± {std:,.2f}" if std else "")


def render(df: pl.DataFrame, fmt: str = "md", *, log_name: str = "log",
           bench_name: str = "bench", header: dict | None = None) -> str:
    """The :func:`side_by_side` table as ``md`` (what ``logscope compare`` prints), ``csv`` or
    ``json``.

    Example: print(render(side_by_side(logs, bench), log_name="server.log"))
    """
    if fmt == "csv":
        return df.write_csv()
    if fmt == "json":
        return json.dumps(df.to_dicts(), indent=2) + "\n"
    header = header or {}
    about = ", ".join(f"{SHORT.get(k, k)} {header[k]}" for k in
                      ("model_type", "backends", "gpu_info", "n_gpu_layers", "n_ubatch",
                       "flash_attn", "build_commit") if header.get(k) not in (None, ""))
    out = [f"## active ({bench_name}{', ' + header['format'] if header.get('format') else ''}) "
           f"beside passive ({log_name})", ""]
    if about:
        out += [f"active: {about}", ""]
    out += ["| test | active t/s | passive t/s | Δ % | n active | n passive |",
            "|---|---|---|---|---|---|"]
    for r in df.iter_rows(named=True):
        n_p = "—"
        if r["passive_n"] is not None:
            n_p = f"{r['passive_n']}{'*' if r['passive_n'] < 3 else ''}"
            if r["passive_shared"]:
                n_p += f" ({r['passive_shared']} shared)"
        d = "—" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}%"
        ptps = _pm(r["passive_tps"], r["passive_std"])
        if r["passive_test"] and r["test"].split(" [")[0] != r["passive_test"]:
            ptps += f" ({r['passive_test']})"  # the bucket it fell in, when not the same name
        out.append(f"| {r['test']} | {_pm(r['active_tps'], r['active_std'])} | {ptps} | {d} | "
                   f"{'—' if r['active_n'] is None else r['active_n']} | {n_p} |")
    matched = df.filter(pl.col("passive_tps").is_not_null()).height
    out += ["", f"{matched} of {df.height} active test(s) met in the log. Δ % = (passive − "
            "active) / active. Passive t/s: the mean over the log's real requests in the "
            "test's power-of-two buckets; in brackets what those requests were when that is "
            "not the active test (~ = their median size, pp~40k; or the bucket a size falls "
            "in, d6144 in d8192); n* = fewer than 3 requests; shared = ran alongside another "
            "request (the GPU was shared). Active: mean ± std over the benchmark's "
            "repetitions."]
    return "\n".join(out) + "\n"
