"""Render SGLang and vLLM logs from the timeline of a real llama-server run, truth beside them.

    python scripts/render_engine_logs.py ../shared/corpus/generated-gpu-pressure-np4-ctxshift.log \
        pressure-np4      # fixtures/{sglang,vllm}/rendered/pressure-np4.{log,truth.json}

The real run gives every request's prompt interval, its decode interval and its cumulative
``n_gen`` curve (logscope's own reading of the llama-server log, which equals the client's
records). The renderer then follows SGLang's scheduler logging (0.5.5–0.5.8 layout, whole-second
timestamps):

* decode runs in forward steps; every stream decoding advances one token a step, so a step
  lasts 1 / (the streams' mean rate at that moment, read off their curves);
* every ``decode_log_interval`` (40) steps a ``Decode batch`` line: ``#running-req`` = streams
  decoding, ``gen throughput`` = tokens since the previous ``Decode batch`` line ÷ the time
  since it (prefill and idle time inside that interval included, as the server computes it);
* a prompt is prefilled in chunks of ``chunked_prefill_size`` (8192) tokens; a ``Prefill batch``
  line when a chunk ends, ``#cached-token`` = where the chunk starts.
* speculative decoding, when the real run drafted: a request's step emits its ``mean len``
  tokens (llama-server's tokens per step, the same definition as SGLang's ``accept len`` and
  vLLM's mean acceptance length) and drafts its drafted-per-step; ``accept len`` = tokens ÷
  request-steps since the previous line, ``accept rate`` = accepted ÷ drafted tokens (requests
  that printed no acceptance take the run's pooled figures).

vLLM (V1, 0.10.x layout): every ``STATS_INTERVAL`` (10 s) a stats line: ``Avg prompt`` and
``Avg generation throughput`` = the tokens counted in the interval ÷ the interval (a prompt's
whole length in the interval its prefill completes, ``vllm/v1/metrics/stats.py``
``IterationStats.update_from_output``),
``Running`` = requests scheduled at that moment (prefilling or decoding); with drafts a
``SpecDecoding metrics`` line (0.10.2+ layout) after each stats line: the interval's accepted
and drafted tokens, its drafts (request-steps), ``Mean acceptance length`` = 1 + accepted ÷
drafts, per-position rates filled from the first position on.

Prompts beside decode: SGLang's default scheduler runs a prefill batch as its own forward
pass before the decode batch (decode waits for it); vLLM's chunked prefill mixes its chunks
into the steps, the same at window scale. llama-server instead batched the prompt with the
streams' steps, which crawled meanwhile. So over a stretch of prompts beside decode the real
run's time is kept and split: the streams decode at their rate just before the stretch (else
just after it: their decode alone), the prompts take the rest of the stretch, and at least
their tokens at the run's own prefill speed on an idle server (a prompt is never free).

The truth (``<name>.truth.json``, the same beside both logs): per state (streams decoding, 1
if a prompt is being prefilled) the time-weighted median per-stream decode rate over the
steps, and per chunk its depth and rate; with drafts, ``acceptance``: tokens ÷ request-steps
and accepted ÷ drafted over every step.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logscope  # noqa: E402
from logscope.analysis.concurrency import KEY, _curve, _phases  # noqa: E402

LOG_INTERVAL = 40
STATS_INTERVAL = 10.0
ROOT = Path(__file__).resolve().parent.parent
CHUNK = 8192
START = datetime(2026, 11, 20, 9, 0, 0, tzinfo=UTC)


def _wmedian(v, w) -> float:
    o = np.argsort(v)
    v, w = np.asarray(v)[o], np.asarray(w)[o]
    c = np.cumsum(w)
    return float(v[np.searchsorted(c, c[-1] / 2)])


def render(src: str, name: str, vllm_interval: float = STATS_INTERVAL,
           engines: tuple[str, ...] = ("sglang", "vllm"), sglang_ms: bool = False,
           out_dir: Path | None = None) -> None:
    """Render ``src`` as ``<out_dir>/{sglang,vllm}/rendered/<name>.{log,truth.json}``
    (``out_dir`` defaults to the repository's ``fixtures``)."""
    base = Path(out_dir) if out_dir is not None else ROOT / "fixtures"
    logs = logscope.read(src)
    ph = _phases(logs).sort("t_start")
    dp = logs["decode_progress"]
    ticks: dict[tuple, list] = {}
    for row in dp.select(dp["file"].cast(str), "run", "slot", "task", "t_rel", "n_gen").rows():
        ticks.setdefault(tuple(row[:4]), []).append((row[4], row[5]))
    req = logs["requests"].select(*KEY, "prompt_tokens", "cached_tokens", "gen_tokens",
                                  "draft_accepted", "draft_generated", "mean_len")
    meta = {(str(f), r, s, t): (p, c) for f, r, s, t, p, c, *_ in req.rows()}
    # speculative decoding: key -> (tokens per step, drafted per step); SGLang and vLLM draft
    # a fixed number of tokens a step: the real run's pooled drafted per step, rounded
    d = req.filter(req["mean_len"] > 0, req["gen_tokens"] > 0, req["draft_generated"] > 0)
    spec, k_spec = {}, 0
    if d.height:
        st = float((d["gen_tokens"] / d["mean_len"]).sum())
        k_spec = max(1, round(float(d["draft_generated"].sum()) / st))
        pooled = (float(d["gen_tokens"].sum()) / st, k_spec)   # for requests that printed none
        for f, r, s_, t, *_x, ml in d.rows():
            spec[(str(f), r, s_, t)] = (ml, k_spec)
    streams = []   # (d0, d1, times, cum, tokens per step, drafted per step, context at d0)
    for r in ph.filter(ph["d0"].is_not_null()).iter_rows(named=True):
        key = (r["file"], r["run"], r["slot"], r["task"])
        t, n = _curve(ticks, key, r["d0"], r["d1"], r["gen_tokens"])
        if len(t) >= 2:
            ml, dps = spec.get(key, pooled) if spec else (1.0, 0.0)
            p, c = meta.get(key, (0, 0))
            streams.append((r["d0"], r["d1"], t, n, ml, dps, int(p or 0) + int(c or 0)))

    def kv_at(t: float) -> float:
        """KV tokens held by the streams decoding at real time t (their contexts)."""
        return sum(s[6] + float(np.interp(t, s[2], s[3])) for s in streams if s[0] <= t < s[1])
    cap = 1.25 * max(kv_at(float(x)) for x in np.linspace(
        min(s[0] for s in streams), max(s[1] for s in streams), 2000)) or 1.0
    prompts = []   # (p0, p1, new tokens, cached tokens, arrival)
    for r in ph.iter_rows(named=True):
        p, c = meta.get((r["file"], r["run"], r["slot"], r["task"]), (None, None))
        if r["p0"] is not None and p and r["p1"] > r["p0"]:
            prompts.append((r["p0"], r["p1"], int(p), int(c or 0), r["t_start"]))
    prompts.sort()
    arrivals = sorted(x[4] for x in prompts if x[4] is not None)

    def live_at(t: float) -> int:
        return sum(1 for s in streams if s[0] <= t < s[1])

    # a prompt computed while streams decode runs as its own forward passes (SGLang's default
    # scheduler: a prefill batch goes before the decode batch, decode waits for it; vLLM's
    # chunked prefill folds it into the steps, the same at window scale). The real run's time
    # is kept: over a stretch [A, B) of prompts beside decode, llama-server batched the prompt
    # with the streams' steps, which crawled. Rendered, the streams decode at their rate just
    # before the stretch (their decode alone) and the prompt takes the rest of the stretch;
    # at least the time the run's prompts on an idle server took per token (the run's own
    # prefill speed), so a prompt is never free.
    def rates_at(t: float, live) -> list[float]:
        out = []
        for _d0, _d1, tt, nn, *_x in live:
            i = min(max(int(np.searchsorted(tt, t, "right")) - 1, 0), len(tt) - 2)
            out.append((nn[i + 1] - nn[i]) / (tt[i + 1] - tt[i]))
        return out

    def overlaps(a: float, b: float) -> bool:
        return any(s[0] < b and a < s[1] for s in streams)

    beside = sorted((a, b, p) for a, b, p, *_ in prompts if overlaps(a, b))
    groups: list[list] = []   # [A, B, [(a, b, tokens)]]: stretches of prompts beside decode
    for a, b, p in beside:
        if groups and a < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], b)
            groups[-1][2].append((a, b, p))
        else:
            groups.append([a, b, [(a, b, p)]])
    alone = [(p, b - a) for a, b, p, *_ in prompts if not overlaps(a, b) and b > a]
    alone_tps = (sum(x[0] for x in alone) / sum(x[1] for x in alone)) if alone else None
    g_at = np.array([g[0] for g in groups])

    def group_of(t: float) -> int:
        i = int(np.searchsorted(g_at, t, "right")) - 1
        return i if i >= 0 and t < groups[i][1] else -1

    def alone_rate(s, A: float, B: float, real: float, h: float = 2.0) -> float:
        """A stream's decode alone around a stretch: its mean rate over the h seconds before
        it, else the h seconds after it (read off its n_gen curve), else (it lives only
        inside) its real rate."""
        tt, nn = s[2], s[3]
        for lo, hi in ((max(A - h, s[0]), A), (B, min(B + h, s[1]))):
            if hi - lo > 0.1 and lo >= s[0] and hi <= s[1]:
                return float(np.interp(hi, tt, nn) - np.interp(lo, tt, nn)) / (hi - lo)
        return real

    # pass 1: the steps on the real clock, each with its rendered (decode-alone) duration
    raw = []  # (k, j, dt_real, dt, rate, t0, tok, acc, dr, group)
    t = min(s[0] for s in streams)
    end = max(s[1] for s in streams)
    while t < end:
        live = [s for s in streams if s[0] <= t < s[1]]
        if not live:
            t = min((s[0] for s in streams if s[0] > t), default=end)
            continue
        rates = rates_at(t, live)
        if min(rates) <= 0:
            t += 0.01
            continue
        # one forward step: each stream emits its tokens per step, and the batch as a whole
        # decodes at the streams' summed rate (per stream: their mean rate)
        tok = sum(s[4] for s in live)
        dt_real = tok / float(np.sum(rates))
        gi = group_of(t)
        dt = dt_real
        if gi >= 0:
            A, B = groups[gi][0], groups[gi][1]
            pre = [alone_rate(s, A, B, r) for s, r in zip(live, rates, strict=True)]
            if min(pre) > 0:
                dt = min(dt_real, tok / float(np.sum(pre)))
        acc, dr = sum(s[4] - 1 for s in live), sum(s[5] for s in live)
        raw.append((len(live), int(any(a <= t < b for a, b, *_ in prompts)), dt_real, dt,
                    float(np.mean(rates)) * dt_real / dt, t, tok, acc, dr, gi))
        t += dt_real
    # each stretch's prompt time: the real stretch less its rendered steps, shared among its
    # prompts by their real duration
    share: dict[tuple, float] = {}
    for gi, (A, B, ps) in enumerate(groups):
        used = sum(x[3] for x in raw if x[9] == gi)
        floor = sum(p for _a, _b, p in ps) / alone_tps if alone_tps else 0.0
        D = max(B - A - used, floor)
        tot = sum(b - a for a, b, _p in ps)
        for a, b, _p in ps:
            share[(a, b)] = D * (b - a) / tot
    # pass 2: the rendered clock: idle gaps as they were, steps at their rendered duration, a
    # stretch's prompts before the first step that starts inside it
    steps = []  # (k, j, dt, per-stream rate, t, tokens, accepted, drafted, wall end, real)
    p_wall: dict[tuple, float] = {}
    w, acct, g_done = None, None, set()   # acct: real time accounted on the rendered clock
    for k, jj, dt_real, dt, r, t0, tok, acc, dr, gi in raw:
        w, acct = (t0, t0) if w is None else (w, acct)
        if gi >= 0 and gi not in g_done:
            g_done.add(gi)
            A, B = groups[gi][0], groups[gi][1]
            w += max(A - acct, 0.0)
            for a, b, _p in sorted(groups[gi][2]):
                p_wall[(a, b)] = w
                w += share[(a, b)]
            acct = max(acct, B)   # the stretch: its prompts' share and its steps below
        elif gi < 0:
            w += max(t0 - acct, 0.0)
        w += dt
        acct = max(acct, t0 + dt_real)
        steps.append((k, jj, dt, r, t0, tok, acc, dr, w, t0 + dt_real))
    s_acct = np.array([x[9] for x in steps])
    s_real = np.maximum.accumulate(s_acct)
    s_wall = np.array([x[8] for x in steps])

    def wall(t: float, strict: bool = True) -> float:
        """The rendered clock at real time t outside the steps (idle passes as it did)."""
        i = int(np.searchsorted(s_real, t, "right")) - 1
        return t if i < 0 else float(s_wall[i] + max(t - s_real[i], 0.0))

    def prompt_span(a: float, b: float) -> tuple[float, float]:
        """A prompt's start and duration on the rendered clock."""
        if (a, b) in p_wall:
            return p_wall[(a, b)], share[(a, b)]
        return wall(a), b - a
    inserted = [(a, share[(a, b)], live_at(a)) for a, b, *_ in prompts
                if (a, b) in share and live_at(a) > 0]

    lines: list[tuple[float, int, str]] = []
    w_last = steps[0][8] - steps[0][2]
    since = np.zeros(4)   # tokens, request-steps, accepted, drafted since the last line
    for n_steps, (k, _j, _dt, _r, _t0, tok, acc, dr, w, t_end) in enumerate(steps, 1):
        since += (tok, k, acc, dr)
        if n_steps % LOG_INTERVAL == 0:
            thr = since[0] / (w - w_last)
            sd = (f"accept len: {since[0] / since[1]:.2f}, accept rate: "
                  f"{since[2] / since[3]:.2f}, " if spec else "")
            queue = sum(1 for a in arrivals if a <= t_end) - sum(1 for x in prompts
                                                               if x[0] <= t_end)
            kv = kv_at(t_end)
            lines.append((w, 1, f"Decode batch, #running-req: {k}, #token: "
                                f"{int(kv)}, token usage: {kv / cap:.2f}, {sd}cuda graph: True, "
                                f"gen throughput (token/s): {thr:.2f}, #queue-req: "
                                f"{max(queue, 0)}, "))
            since[:], w_last = 0, w
    chunks = []
    for i, (a, b, p, c, _arr) in enumerate(prompts):
        done = 0
        w0, dur = prompt_span(a, b)
        while done < p:
            n = min(CHUNK, p - done)
            t0 = dur * done / p
            t1 = dur * (done + n) / p
            running = live_at(a)
            lines.append((w0 + t1, 0, f"Prefill batch, #new-seq: 1, #new-token: {n}, "
                                          f"#cached-token: {c + done}, token usage: 0.05, "
                                          f"#running-req: {running}, #queue-req: 0, "))
            chunks.append({"prompt": i, "start": c + done, "depth": c + done + n / 2,
                           "tokens": n, "seconds": t1 - t0, "tps": n / (t1 - t0),
                           "first": done == 0, "running": running})
            done += n
    lines.sort(key=lambda x: (x[0], x[1]))
    def stamp(tt: float) -> str:   # SGLANG_LOG_MS=1 (0.5.6+) adds .mmm
        d = START + timedelta(seconds=tt)
        return d.strftime("%Y-%m-%d %H:%M:%S") + (f".{d.microsecond // 1000:03d}"
                                                   if sglang_ms else "")
    text = [f"[{stamp(tt)}] {msg}" for tt, _o, msg in lines]
    for engine in ("sglang", "vllm"):
        (base / engine / "rendered").mkdir(parents=True, exist_ok=True)
    out = str(base / "sglang" / "rendered" / name)
    if "sglang" in engines:
        Path(out + ".log").write_text("\n".join(text) + "\n")
    vout = str(base / "vllm" / "rendered" / name)
    windowed = [(x0, x0 + d, p) for (x0, d), (_a, _b, p, _c, _x)
                in zip((prompt_span(a, b) for a, b, *_ in prompts), prompts, strict=True)]
    if "vllm" in engines:
        Path(vout + ".log").write_text(
            "\n".join(_vllm(steps, windowed, streams, k_spec, wall, arrivals, prompts,
                             lambda t: kv_at(t) / cap, vllm_interval)) + "\n")
    truth: dict = {"source": f"rendered from {Path(src).name} by scripts/render_engine_logs.py",
                   "decode_per_stream": {}, "prefill_chunks": chunks}
    if spec:
        st = np.array([x[5:8] for x in steps] + [[0, 0, 0]])
        truth["acceptance"] = {"mean_len": float(st[:, 0].sum() / sum(x[0] for x in steps)),
                               "rate": float(st[:, 1].sum() / st[:, 2].sum())}
    by: dict[tuple, list] = {}
    for k, j, dt, r, *_ in steps:
        by.setdefault((k, j), []).append((r, dt))
    for (k, j), v in sorted(by.items()):
        truth["decode_per_stream"][f"{k},{j}"] = {
            "tps": _wmedian([x[0] for x in v], [x[1] for x in v]),
            "tps_pooled": float(sum(x[0] * x[1] for x in v) / sum(x[1] for x in v)),
            "seconds": float(sum(x[1] for x in v))}
    # per state (streams decoding): clean = a stream's tokens over the decode steps alone;
    # served = over the steps and the prompts computed meanwhile (decode waited for them)
    states: dict[int, list[float]] = {}
    for k, _j, dt, _r, _t, tok, *_ in steps:
        acc_ = states.setdefault(k, [0.0, 0.0, 0.0, 0])
        acc_[0] += tok
        acc_[1] += dt
        acc_[3] += 1
    for _a, dur, k in inserted:
        states.setdefault(k, [0.0, 0.0, 0.0, 0])[2] += dur
    truth["states"] = {str(k): {
        "tokens": v[0], "decode_seconds": v[1], "prefill_seconds": v[2],
        "seconds": v[1] + v[2], "steps": v[3],
        "clean_per_stream": v[0] / k / v[1],
        "served_per_stream": v[0] / k / (v[1] + v[2]),
        "aggregate": v[0] / (v[1] + v[2])} for k, v in sorted(states.items())}
    tok_all = sum(x[5] for x in steps)
    t_first = wall(min(min(x[0] for x in prompts), steps[0][4]))
    span = steps[-1][8] - t_first
    truth["run"] = {"tokens": tok_all, "span_s": span, "throughput": tok_all / span,
                    "served_per_stream": tok_all / sum(k * v["seconds"] for k, v in (
                        (int(k), v) for k, v in truth["states"].items())),
                    "t0_s": t_first, "t1_s": steps[-1][8]}   # on the rendered clock
    for o in [x for x, e in ((out, "sglang"), (vout, "vllm")) if e in engines]:
        Path(o + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")


_VLLM_STAMP = re.compile(r"^(INFO )(\d\d-\d\d \d\d:\d\d:\d\d)( .*?Engine )000(: .*)$")
_SGLANG_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)?\](.*)$")


def render_dp(srcs: list[str], name: str, shift_s: float = 1.0,
              vllm_interval: float = STATS_INTERVAL, engines: tuple[str, ...] = ("sglang", "vllm"),
              out_dir: Path | None = None) -> None:
    """One server with data parallelism: each of ``srcs`` rendered as one DP rank (vLLM
    ``Engine 00i``, each rank its own stats lines; SGLang ``[... DPi TPi]``, each rank its own
    scheduler's batch lines), rank i's clock ``i × shift_s`` later, the lines of all ranks
    merged in time order as the one process prints them. The truth adds the ranks': a state is
    the streams decoding on one rank, the run's span is the union of theirs."""
    _render_merged(srcs, name, shift_s, vllm_interval, engines, out_dir, None,
                   lambda truths: _merge_truths(truths, shift_s))


def render_services(srcs: list[str], name: str, services: list[str], shift_s: float = 1.0,
                    vllm_interval: float = STATS_INTERVAL,
                    engines: tuple[str, ...] = ("sglang", "vllm"), wrapper: str = "compose",
                    out_dir: Path | None = None) -> None:
    """Several servers in one log, as a wrapper interleaves them: each of ``srcs`` rendered
    as its own server, server i's clock ``i × shift_s`` later, every line behind its
    ``services[i]`` mark (``wrapper``: ``compose`` as ``docker compose logs`` prints
    ``name  | line``; ``kubectl`` as ``kubectl logs --prefix`` prints
    ``[pod/name/server] line``), merged in time order. The truth lists each server's own, in
    the order of ``srcs`` (``runs``)."""
    width = max(len(s) for s in services)

    def mark(i: int, line: str) -> str:
        if wrapper == "kubectl":
            return f"[pod/{services[i]}/server] {line}"
        return f"{services[i]:<{width}}  | {line}"

    def truth(truths: list[dict]) -> dict:
        runs = []
        for i, t in enumerate(truths):
            t = json.loads(json.dumps(t))
            t["run"]["t0_s"] += i * shift_s
            t["run"]["t1_s"] += i * shift_s
            runs.append({"service": services[i], **t})
        return {"source": " | ".join(t["source"] for t in truths)
                + f", servers {shift_s:g} s apart", "runs": runs}

    _render_merged(srcs, name, shift_s, vllm_interval, engines, out_dir, mark, truth)


def _render_merged(srcs, name, shift_s, vllm_interval, engines, out_dir, mark, truth) -> None:  # noqa: ANN001
    """Render each of ``srcs`` on its own, shift source i's clock by ``i × shift_s``, merge
    the lines in time order. ``mark`` None: source i is DP rank i of one server; else
    ``mark(i, line)`` is the line as a wrapper prints source i's. ``truth(truths)``: the
    merged log's truth from the sources'."""
    import heapq
    import tempfile
    base = Path(out_dir) if out_dir is not None else ROOT / "fixtures"
    with tempfile.TemporaryDirectory() as tmp:
        for i, src in enumerate(srcs):
            render(src, f"rank{i}", vllm_interval, engines, out_dir=Path(tmp))
        for engine in engines:
            ranks, truths = [], []
            for i in range(len(srcs)):
                stem = Path(tmp) / engine / "rendered" / f"rank{i}"
                truths.append(json.loads(stem.with_suffix(".truth.json").read_text()))
                lines = []
                for ln in stem.with_suffix(".log").read_text().splitlines():
                    if engine == "vllm":
                        m = _VLLM_STAMP.match(ln) or re.match(
                            r"^(INFO )(\d\d-\d\d \d\d:\d\d:\d\d)( .*)()$", ln)
                        t = datetime.strptime(f"2026-{m[2]}", "%Y-%m-%d %H:%M:%S").replace(
                            tzinfo=UTC) + timedelta(seconds=i * shift_s)
                        if mark is None:
                            idx = f"{i:03d}" if m[4] else ""
                            ln = f"{m[1]}{t:%m-%d %H:%M:%S}{m[3]}{idx}{m[4]}"
                        else:
                            ln = f"{m[1]}{t:%m-%d %H:%M:%S}{m[3]}{'000' if m[4] else ''}{m[4]}"
                    else:
                        m = _SGLANG_STAMP.match(ln)
                        t = datetime.fromisoformat(m[1] + (m[2] or "")).replace(
                            tzinfo=UTC) + timedelta(seconds=i * shift_s)
                        frac = f".{t.microsecond // 1000:03d}" if m[2] else ""
                        tags = f" DP{i} TP{i}" if mark is None else ""
                        ln = f"[{t:%Y-%m-%d %H:%M:%S}{frac}{tags}]{m[3]}"
                    lines.append((t, ln if mark is None else mark(i, ln)))
                ranks.append(lines)
            merged = [ln for _t, ln in heapq.merge(*ranks, key=lambda x: x[0])]
            out = base / engine / "rendered"
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.log").write_text("\n".join(merged) + "\n")
            (out / f"{name}.truth.json").write_text(json.dumps(truth(truths), indent=1) + "\n")


def _merge_truths(truths: list[dict], shift_s: float) -> dict:
    """The truth of ranks that ran side by side, rank i ``i × shift_s`` later."""
    states: dict[str, dict] = {}
    for t in truths:
        for k, v in t["states"].items():
            acc = states.setdefault(k, dict.fromkeys(
                ("tokens", "decode_seconds", "prefill_seconds", "seconds", "steps"), 0.0))
            for f in acc:
                acc[f] += v[f]
    for k, v in states.items():
        n = int(k)
        v.update(clean_per_stream=v["tokens"] / n / v["decode_seconds"],
                 served_per_stream=v["tokens"] / n / v["seconds"],
                 aggregate=v["tokens"] / v["seconds"])
    tok = sum(t["run"]["tokens"] for t in truths)
    t0 = min(t["run"]["t0_s"] + i * shift_s for i, t in enumerate(truths))
    t1 = max(t["run"]["t1_s"] + i * shift_s for i, t in enumerate(truths))
    out = {"source": " + ".join(t["source"] for t in truths) + f", ranks {shift_s:g} s apart",
           "decode_per_stream": {}, "prefill_chunks": [c for t in truths for c in
                                                     t["prefill_chunks"]],
           "states": dict(sorted(states.items(), key=lambda x: int(x[0]))),
           "run": {"tokens": tok, "span_s": t1 - t0, "throughput": tok / (t1 - t0),
                   "served_per_stream": tok / sum(int(k) * v["seconds"]
                                                  for k, v in states.items()),
                   "t0_s": t0, "t1_s": t1}}
    acc = [t["acceptance"] for t in truths if "acceptance" in t]
    if acc and len(acc) == len(truths):
        steps = [t["run"]["tokens"] / t["acceptance"]["mean_len"] for t in truths]
        out["acceptance"] = {"mean_len": tok / sum(steps),
                             "rate": float(np.average([a["rate"] for a in acc], weights=steps))}
    return out


def _vllm(steps, prompts, streams, k_spec: int, wall, arrivals, real_prompts,
          usage, interval: float = STATS_INTERVAL) -> list[str]:
    """vLLM V1 stats lines every STATS_INTERVAL of the rendered clock (and its SpecDecoding
    line when the run drafted, ``k_spec`` draft positions). ``prompts``: (start, end, tokens)
    on that clock. An interval with no token after one with none prints nothing (vLLM sends
    it to DEBUG)."""
    w_end = steps[-1][8]
    t = min(min(a for a, _, _ in prompts), wall(steps[0][4]))
    out, last_zero = [], True
    sw = np.array([x[8] for x in steps])
    while t < w_end:
        t1 = t + interval
        inside = [x for x, w in zip(steps, sw, strict=True) if t <= w < t1]
        gen = sum(x[5] for x in inside)
        pro = 0.0
        # a prompt's tokens count in the interval its prefill completes: V1's
        # IterationStats.update_from_output adds prompt_len when a request still prefilling
        # gets its first output, and EngineCore sends none for a partial prefill
        for _a, b, p in prompts:
            if t <= b < t1:
                pro += p
        i = int(np.searchsorted(sw, t1, "right")) - 1
        # the real time at the end of the last step before t1
        real = steps[i][9] if i >= 0 else 0.0
        decoding = sum(1 for s in streams if s[0] <= real < s[1]) if i >= 0 else 0
        prefilling = sum(1 for a, b, _p in prompts if a <= t1 < b)
        waiting = (sum(1 for a in arrivals if a <= real)
                   - sum(1 for x in real_prompts if x[0] <= real) - prefilling)
        zero = gen == 0 and pro == 0
        if not (zero and last_zero):
            stamp = (START + timedelta(seconds=t1)).strftime("%m-%d %H:%M:%S")
            out.append(f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                       f"{pro / interval:.1f} tokens/s, Avg generation throughput: "
                       f"{gen / interval:.1f} tokens/s, Running: {decoding + prefilling} "
                       f"reqs, Waiting: {max(waiting, 0)} reqs, GPU KV cache usage: "
                       f"{100 * usage(real) if decoding else 0.0:.1f}%, "
                       "Prefix cache hit rate: 0.0%")
            if k_spec and inside:
                drafts = sum(x[0] for x in inside)   # request-steps that drafted
                acc = round(sum(x[6] for x in inside))
                a = acc / drafts
                pos = ", ".join(f"{min(1.0, max(0.0, a - i)):.3f}" for i in range(k_spec))
                out.append(f"INFO {stamp} [metrics.py:101] SpecDecoding metrics: Mean "
                           f"acceptance length: {1 + a:.2f}, Accepted throughput: "
                           f"{acc / interval:.2f} tokens/s, Drafted throughput: "
                           f"{drafts * k_spec / interval:.2f} tokens/s, Accepted: {acc} "
                           f"tokens, Drafted: {drafts * k_spec} tokens, Per-position "
                           f"acceptance rate: {pos}, Avg Draft acceptance rate: "
                           f"{100 * acc / (drafts * k_spec):.1f}%")
        last_zero = zero
        t = t1
    return out


if __name__ == "__main__":
    # a third argument: "ms", the SGLang log alone with millisecond stamps (SGLANG_LOG_MS=1);
    # a number, the vLLM log alone at that stats interval (VLLM_LOG_STATS_INTERVAL)
    if len(sys.argv) > 3 and sys.argv[3] == "ms":
        render(sys.argv[1], sys.argv[2], engines=("sglang",), sglang_ms=True)
    elif len(sys.argv) > 3:
        render(sys.argv[1], sys.argv[2], float(sys.argv[3]), ("vllm",))
    else:
        render(sys.argv[1], sys.argv[2])
