"""Server runs of a followed file, numbered as ``logscope ingest`` numbers them.

The rules are the engine models' (:mod:`logscope.engines.llama_server`,
:class:`logscope.engines.windows.ConfigRuns`), applied one record at a time:

* llama-server (per router port): a new run where the relative clock goes back by more than
  ``CLOCK_BACKSTEP_S``, or at a startup line when requests were seen since the previous
  candidate start (a backstep or a startup line).
* SGLang, vLLM: a new run at a ``server_config`` line that follows traffic lines, the first
  of a block of them.

Runs count from 1 in each file behind the followed name (a rotation or truncation starts
again at 1, as its line numbers do). The state is a small dict saved in ``--state`` files so a
resumed follower carries on counting, and :func:`prime` rebuilds it from the part of a file
that was there before following started.

>>> Runs().observe("llama-server", "server_info", "info_build_info", {"ts_rel": "0.00.001.000"})
1
"""

from __future__ import annotations

from typing import Any

# the engine models' own rules (logscope.engines.llama_server; a test keeps them equal), copied
# so that following does not import the batch engine models
CLOCK_BACKSTEP_S = 1.0
REQUEST_KINDS = ("task_launch", "release", "prompt_eval", "slot_select")
RUN_START_VARIANTS = ("info_log_start_b9151", "info_build_b3761", "info_build_info")
TRAFFIC = {"sglang": ("prefill_batch", "decode_batch"),
           "vllm": ("engine_stats", "spec_decoding", "prefix_cache")}


def rel_seconds(v: Any) -> float | None:
    """llama-server's ``M.SS.mmm.uuu`` relative clock in seconds (to the microsecond)."""
    if not isinstance(v, str):
        return None
    parts = v.split(".")
    if len(parts) != 4:
        return None
    try:
        m, s, ms, us = (int(p) for p in parts)
    except ValueError:
        return None
    if m >= 1_000_000_000:
        return None
    return round(((m * 60 + s) * 1_000_000 + ms * 1000 + us) * 1e-6, 6)


class Runs:
    """Run numbers, record by record; :meth:`state` / ``Runs(state)`` carry them over."""

    def __init__(self, state: dict | None = None) -> None:
        # llama-server, per router port: [last t_rel, requests since the last candidate, run]
        self.llama: dict[str, list] = {}
        # SGLang / vLLM, per engine: [traffic seen, previous record a startup line, run]
        self.config: dict[str, list] = {}
        # llama-server: "port:run on that port's clock" → the file's run number, in the order
        # they first appear (a router's children are runs of their own, as in ingest)
        self.ids: dict[str, int] = {}
        if state:
            self.llama = {k: list(v) for k, v in (state.get("llama") or {}).items()}
            self.config = {k: list(v) for k, v in (state.get("config") or {}).items()}
            self.ids = dict(state.get("ids") or {})

    def state(self) -> dict:
        return {"llama": {k: list(v) for k, v in self.llama.items()},
                "config": {k: list(v) for k, v in self.config.items()},
                "ids": dict(self.ids)}

    def reset(self) -> None:
        """A new file behind the followed name: its runs count from 1."""
        self.llama.clear()
        self.config.clear()
        self.ids.clear()

    def _file_run(self, port: str, run: int) -> int:
        key = f"{port}:{run}"
        if key not in self.ids:
            self.ids[key] = max(self.ids.values(), default=0) + 1
        return self.ids[key]

    def current(self, engine: str | None, port: Any = None) -> int:
        if engine == "llama-server":
            key = str(port or 0)
            s = self.llama.get(key)
            return self.ids.get(f"{key}:{s[2]}", s[2]) if s else 1
        s = self.config.get(engine or "")
        return s[2] if s else 1

    def observe(self, engine: str | None, kind: str, variant: str | None,
                fields: dict[str, Any]) -> int:
        """The run of one record (an event, an ignored or an unrecognized line)."""
        if engine == "llama-server":
            key = str(fields.get("router_port") or 0)
            s = self.llama.setdefault(key, [None, 0, 1])
            t = rel_seconds(fields.get("ts_rel"))
            backstep = t is not None and s[0] is not None and t < s[0] - CLOCK_BACKSTEP_S
            is_start = variant in RUN_START_VARIANTS
            if backstep or (is_start and s[1] > 0):
                s[2] += 1
            if backstep or is_start:
                s[1] = 0
            if kind in REQUEST_KINDS:
                s[1] += 1
            if t is not None:
                s[0] = t
            return self._file_run(key, s[2])
        if engine in TRAFFIC:
            s = self.config.setdefault(engine, [0, False, 1])
            is_start = kind == "server_config"
            if is_start and s[0] > 0 and not s[1]:
                s[2] += 1
            if kind in TRAFFIC[engine]:
                s[0] += 1
            s[1] = is_start
            return s[2]
        return 1


PRIME_MAX_BYTES = 256 << 20  # larger prefixes are not read again (their runs are not counted)


def prime(path: str, lines: int, offset: int) -> Runs:
    """The run state after the first ``lines`` lines of ``path`` (what was there before a
    follower started at its end; ``offset`` is the byte just after them), from a batch ingest
    (``lines_classified``) and the relative clock of the last llama-server lines before
    ``offset``. Router ports are not told apart here.

    Example: prime("server.log", 1200, 183_422).current("llama-server")
    """
    import polars as pl

    from logscope import read
    from logscope.ingest import NoServerLines

    runs = Runs()
    if lines <= 0:
        return runs
    try:
        logs = read(path)
    except NoServerLines:
        return runs
    lc = logs.get("lines_classified")
    if lc is None or lc.height == 0:
        return runs
    lc = lc.filter(pl.col("line") <= lines)
    for engine in lc["engine"].unique().drop_nulls().to_list():
        sub = lc.filter(pl.col("engine") == engine).sort("line", maintain_order=True)
        if sub.height == 0:
            continue
        run = int(sub["run"].drop_nulls().max() or 1)
        if engine == "llama-server":
            cur = sub.filter(pl.col("run") == run)
            starts = cur.filter(pl.col("variant").is_in(list(RUN_START_VARIANTS)))["line"]
            cand = max([int(cur["line"].min()), *starts.to_list()])
            since = cur.filter((pl.col("line") >= cand)
                               & pl.col("kind").is_in(list(REQUEST_KINDS))).height
            runs.llama["0"] = [_last_rel(path, offset), since, run]
            runs.ids.update({f"0:{r}": r for r in range(1, run + 1)})
        elif engine in TRAFFIC:
            traffic = sub.filter(pl.col("kind").is_in(list(TRAFFIC[engine]))).height
            last_start = sub["kind"][-1] == "server_config"
            runs.config[engine] = [traffic, bool(last_start), run]
    return runs


def _last_rel(path: str, offset: int, window: int = 1 << 16) -> float | None:
    """The relative clock of the last llama-server line before byte ``offset``."""
    from logscope.follow.parser import _Parser

    parser = _Parser(["llama-server"])
    with open(path, "rb") as f:
        f.seek(max(0, offset - window))
        data = f.read(min(offset, window))
    for raw in reversed(data.split(b"\n")):
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        try:
            _wrap, matches = parser.records(text)
        except Exception:  # noqa: BLE001
            continue
        for m in matches:
            if m is not None:
                t = rel_seconds(m[3].get("ts_rel"))
                if t is not None:
                    return t
    return None
