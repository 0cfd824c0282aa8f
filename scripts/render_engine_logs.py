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
``Avg generation throughput`` = the tokens computed in the interval ÷ the interval,
``Running`` = requests scheduled at that moment (prefilling or decoding); with drafts a
``SpecDecoding metrics`` line (0.10.2+ layout) after each stats line: the interval's accepted
and drafted tokens, its drafts (request-steps), ``Mean acceptance length`` = 1 + accepted ÷
drafts, per-position rates filled from the first position on.

The truth (``<name>.truth.json``, the same beside both logs): per state (streams decoding, 1
if a prompt is being prefilled) the time-weighted median per-stream decode rate over the
steps, and per chunk its depth and rate; with drafts, ``acceptance``: tokens ÷ request-steps
and accepted ÷ drafted over every step.
"""

from __future__ import annotations

import json
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


def render(src: str, name: str) -> None:
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
    streams = []   # (d0, d1, times, cum, tokens per step, drafted per step)
    for r in ph.filter(ph["d0"].is_not_null()).iter_rows(named=True):
        key = (r["file"], r["run"], r["slot"], r["task"])
        t, n = _curve(ticks, key, r["d0"], r["d1"], r["gen_tokens"])
        if len(t) >= 2:
            ml, dps = spec.get(key, pooled) if spec else (1.0, 0.0)
            streams.append((r["d0"], r["d1"], t, n, ml, dps))
    prompts = [(r["p0"], r["p1"], *meta.get((r["file"], r["run"], r["slot"], r["task"]),
                                            (None, None)))
               for r in ph.iter_rows(named=True) if r["p0"] is not None]
    prompts = [(a, b, int(p), int(c or 0)) for a, b, p, c in prompts if p and b > a]

    def prefilling(t: float) -> int:
        return int(any(a <= t < b for a, b, _, _ in prompts))

    lines: list[tuple[float, str]] = []
    steps = []  # (k, j, duration, per-stream rate, t, tokens, accepted, drafted)
    t = min(s[0] for s in streams)
    end = max(s[1] for s in streams)
    n_steps, t_last = 0, t
    since = np.zeros(4)   # tokens, request-steps, accepted, drafted since the last line
    while t < end:
        live = [s for s in streams if s[0] <= t < s[1]]
        if not live:
            t = min((s[0] for s in streams if s[0] > t), default=end)
            continue
        rates = []
        for _d0, _d1, tt, nn, _ml, _dps in live:
            i = min(max(int(np.searchsorted(tt, t, "right")) - 1, 0), len(tt) - 2)
            rates.append((nn[i + 1] - nn[i]) / (tt[i + 1] - tt[i]))
        if min(rates) <= 0:
            t += 0.01
            continue
        # one forward step: each stream emits its tokens per step, and the batch as a whole
        # decodes at the streams' summed rate (per stream: their mean rate)
        tok = sum(s[4] for s in live)
        dt = tok / float(np.sum(rates))
        acc, dr = sum(s[4] - 1 for s in live), sum(s[5] for s in live)
        steps.append((len(live), prefilling(t), dt, float(np.mean(rates)), t, tok, acc, dr))
        t += dt
        n_steps += 1
        since += (tok, len(live), acc, dr)
        if n_steps % LOG_INTERVAL == 0:
            thr = since[0] / (t - t_last)
            sd = (f"accept len: {since[0] / since[1]:.2f}, accept rate: "
                  f"{since[2] / since[3]:.2f}, " if spec else "")
            lines.append((t, f"Decode batch, #running-req: {len(live)}, #token: "
                             f"{1000 * len(live)}, token usage: 0.05, {sd}cuda graph: True, "
                             f"gen throughput (token/s): {thr:.2f}, #queue-req: 0, "))
            since[:], t_last = 0, t
    chunks = []
    for i, (a, b, p, c) in enumerate(prompts):
        done = 0
        while done < p:
            n = min(CHUNK, p - done)
            t0 = a + (b - a) * done / p
            t1 = a + (b - a) * (done + n) / p
            running = sum(1 for s in streams if s[0] < t1 - 1e-9 and t1 < s[1])
            lines.append((t1, f"Prefill batch, #new-seq: 1, #new-token: {n}, #cached-token: "
                              f"{c + done}, token usage: 0.05, #running-req: {running}, "
                              "#queue-req: 0, "))
            chunks.append({"prompt": i, "start": c + done, "depth": c + done + n / 2,
                           "tokens": n, "seconds": t1 - t0, "tps": n / (t1 - t0),
                           "first": done == 0})
            done += n
    lines.sort(key=lambda x: x[0])
    text = [f"[{(START + timedelta(seconds=tt)).strftime('%Y-%m-%d %H:%M:%S')}] {msg}"
            for tt, msg in lines]
    for engine in ("sglang", "vllm"):
        (ROOT / "fixtures" / engine / "rendered").mkdir(parents=True, exist_ok=True)
    out = str(ROOT / "fixtures" / "sglang" / "rendered" / name)
    Path(out + ".log").write_text("\n".join(text) + "\n")
    vout = str(ROOT / "fixtures" / "vllm" / "rendered" / name)
    Path(vout + ".log").write_text("\n".join(_vllm(steps, prompts, streams, k_spec)) + "\n")
    truth: dict = {"source": f"rendered from {Path(src).name} by scripts/render_engine_logs.py",
                   "decode_per_stream": {}, "prefill_chunks": chunks}
    if spec:
        st = np.array([x[5:] for x in steps] + [[0, 0, 0]])
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
    for o in (out, vout):
        Path(o + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")


def _vllm(steps, prompts, streams, k_spec: int) -> list[str]:
    """vLLM V1 stats lines every STATS_INTERVAL from the first step to the last (and its
    SpecDecoding line when the run drafted, ``k_spec`` draft positions)."""
    t_end = max(s[1] for s in streams)
    t = min(min(a for a, _, _, _ in prompts), steps[0][4])
    out = []
    while t < t_end:
        t1 = t + STATS_INTERVAL
        inside = [x for x in steps if t <= x[4] < t1]
        gen = sum(x[5] for x in inside)
        pro = 0.0
        for a, b, p, _c in prompts:   # prompt tokens computed in [t, t1), evenly over [a, b)
            lo, hi = max(a, t), min(b, t1)
            if hi > lo:
                pro += p * (hi - lo) / (b - a)
        running = sum(1 for s in streams if s[0] <= t1 < s[1]) + sum(
            1 for a, b, _p, _c in prompts if a <= t1 < b)
        stamp = (START + timedelta(seconds=t1)).strftime("%m-%d %H:%M:%S")
        out.append(f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                   f"{pro / STATS_INTERVAL:.1f} tokens/s, Avg generation throughput: "
                   f"{gen / STATS_INTERVAL:.1f} tokens/s, Running: {running} reqs, Waiting: 0 "
                   "reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%")
        if k_spec and inside:
            drafts = sum(x[0] for x in inside)   # request-steps that drafted
            acc = round(sum(x[6] for x in inside))
            a = acc / drafts
            pos = ", ".join(f"{min(1.0, max(0.0, a - i)):.3f}" for i in range(k_spec))
            out.append(f"INFO {stamp} [metrics.py:101] SpecDecoding metrics: Mean acceptance "
                       f"length: {1 + a:.2f}, Accepted throughput: {acc / STATS_INTERVAL:.2f} "
                       f"tokens/s, Drafted throughput: {drafts * k_spec / STATS_INTERVAL:.2f} "
                       f"tokens/s, Accepted: {acc} tokens, Drafted: {drafts * k_spec} tokens, "
                       f"Per-position acceptance rate: {pos}, Avg Draft acceptance rate: "
                       f"{100 * acc / (drafts * k_spec):.1f}%")
        t = t1
    return out


if __name__ == "__main__":
    render(sys.argv[1], sys.argv[2])
