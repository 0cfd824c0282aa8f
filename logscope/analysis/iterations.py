"""vLLM's per-step lines (``--enable-logging-iteration-details``, 0.26+): decode and prefill
from each forward step, not from a 10 s window.

With the option on, vLLM's engine core prints one line per step (``EngineCore.
log_iteration_details``): ``Iteration(N): C context requests, CT context tokens, G generation
requests, GT generation tokens, iteration elapsed time: X ms``. A *context* request is one still
in its prompt (a new one, or a chunk of a chunked prefill); a *generation* request decodes. ``X``
is the time the engine core waited for the step's model output: the step's compute, without the
scheduling before it (so a rate read off it is the step's, a little above what a stream gets
over the wall clock). ``(dummy)`` marks a data-parallel rank's padding step, left out.

* :func:`iteration_steps`: one row per step, its ``phase``: ``decode`` (G > 0, C = 0),
  ``prefill`` (C > 0, G = 0) or ``mixed`` (both: chunked prefill beside decode).
* :func:`iteration_decode`: per number of streams decoding (``decoding`` = G) over the pure
  decode steps: seconds, steps, ``per_stream_tps`` = tokens each stream emits per step ÷ the
  step time (time-weighted: all steps' tokens ÷ all their seconds), ``aggregate_tps`` = that ×
  G, the median step time. Without drafts a stream emits one token a step; with drafts GT
  counts the drafted tokens too, so a stream's tokens per step are the run's mean accepted
  length (:func:`logscope.analysis.metrics.mean_accepted_length`, a window average), said in
  ``exactness``.
* :func:`iteration_prefill`: prompt tokens ÷ seconds of the prefill-only steps, and of the mixed
  steps after the decode their generation requests would take alone (the pure decode step time
  at that count, where one was seen).
"""

from __future__ import annotations

import polars as pl

from logscope.analysis._util import label_of, table

STEP = "exact per step"
STEP_SPEC = "exact per step × mean accepted length (window average)"

STEP_SCHEMA = {"file": pl.String, "run": pl.Int32, "engine_idx": pl.Int64, "line": pl.Int64,
               "t_rel": pl.Float64, "context_reqs": pl.Int64, "context_tokens": pl.Int64,
               "generation_reqs": pl.Int64, "generation_tokens": pl.Int64,
               "ms": pl.Float64, "phase": pl.String}
DECODE_SCHEMA = {"label": pl.String, "decoding": pl.Int16, "steps": pl.Int64,
                 "seconds": pl.Float64, "tokens": pl.Float64, "per_stream_tps": pl.Float64,
                 "aggregate_tps": pl.Float64, "median_step_ms": pl.Float64,
                 "exactness": pl.String}
PREFILL_SCHEMA = {"label": pl.String, "phase": pl.String, "steps": pl.Int64,
                  "prompt_tokens": pl.Int64, "seconds": pl.Float64, "tps": pl.Float64}


def iteration_steps(logs) -> pl.DataFrame:
    """One row per vLLM step line (dummy steps left out), with its ``phase``.

    Example::

        iteration_steps(logscope.read("vllm.log")).group_by("phase").len()
    """
    it = table(logs, "iteration_details")
    need = {"context_reqs", "context_tokens", "generation_reqs", "generation_tokens",
            "iteration_elapsed_ms"}
    if it is None or not need <= set(it.columns):
        return pl.DataFrame(schema=STEP_SCHEMA)
    dummy = (pl.col("iteration_tag").fill_null("") == "dummy") if "iteration_tag" in it.columns \
        else pl.lit(False)
    g, c = pl.col("generation_reqs"), pl.col("context_reqs")
    phase = (pl.when((g > 0) & (c == 0)).then(pl.lit("decode"))
             .when((c > 0) & (g == 0)).then(pl.lit("prefill"))
             .when((c > 0) & (g > 0)).then(pl.lit("mixed")))
    cols = {n: (pl.col(n) if n in it.columns else pl.lit(None)) for n in ("engine_idx", "t_rel")}
    return (it.filter(~dummy, pl.col("iteration_elapsed_ms") > 0)
            .select(pl.col("file").cast(pl.String), "run", cols["engine_idx"].alias("engine_idx"),
                    "line", cols["t_rel"].alias("t_rel"), "context_reqs", "context_tokens",
                    "generation_reqs", "generation_tokens",
                    pl.col("iteration_elapsed_ms").alias("ms"), phase.alias("phase"))
            .filter(pl.col("phase").is_not_null()).cast(STEP_SCHEMA))


def _tokens_per_step(logs, steps: pl.DataFrame) -> tuple[float, str]:
    """(tokens a decoding stream emits per step, exactness): 1 without drafts; with drafts
    (generation tokens beyond one per request) the run's mean accepted length."""
    dec = steps.filter(pl.col("phase") == "decode")
    drafts = dec.height and (dec["generation_tokens"] > dec["generation_reqs"]).any()
    if not drafts:
        return 1.0, STEP
    from logscope.analysis.metrics import mean_accepted_length

    m = mean_accepted_length(logs)["value"]
    return (float(m), STEP_SPEC) if m else (float("nan"), STEP_SPEC)


def iteration_decode(logs, label: str | None = None) -> pl.DataFrame:
    """Per number of streams decoding, the pure decode steps' per-stream and aggregate rates
    (module docstring); empty where the log has no step lines.

    Example::

        iteration_decode(logscope.read("vllm.log")).select("decoding", "per_stream_tps")
    """
    lab = label_of(logs, label)
    st = iteration_steps(logs)
    dec = st.filter(pl.col("phase") == "decode")
    if dec.height == 0:
        return pl.DataFrame(schema=DECODE_SCHEMA)
    per_step, how = _tokens_per_step(logs, st)
    if per_step != per_step:   # drafts, but no acceptance line to say what a step emits
        return pl.DataFrame(schema=DECODE_SCHEMA)
    return (dec.group_by(pl.col("generation_reqs").alias("decoding"))
            .agg(pl.len().alias("steps"), (pl.col("ms").sum() / 1000).alias("seconds"),
                 (pl.col("generation_reqs").sum() * per_step).alias("tokens"),
                 pl.col("ms").median().alias("median_step_ms"))
            .with_columns((pl.col("tokens") / pl.col("seconds")).alias("aggregate_tps"))
            .with_columns((pl.col("aggregate_tps") / pl.col("decoding")).alias("per_stream_tps"),
                          pl.lit(lab).alias("label"), pl.lit(how).alias("exactness"))
            .select(list(DECODE_SCHEMA)).cast(DECODE_SCHEMA).sort("decoding"))


def iteration_prefill(logs, label: str | None = None) -> pl.DataFrame:
    """Prompt tokens per second of the prefill-only steps (``prefill``), and of the mixed steps
    less the decode their streams would take alone (``mixed``: only counts with a pure decode
    step time seen; a step whose decode share leaves no time is left out).

    Example::

        iteration_prefill(logscope.read("vllm.log"))
    """
    lab = label_of(logs, label)
    st = iteration_steps(logs)
    out = []
    pre = st.filter(pl.col("phase") == "prefill")
    if pre.height:
        out.append(pre.select(pl.lit("prefill").alias("phase"), pl.len().alias("steps"),
                              pl.col("context_tokens").sum().alias("prompt_tokens"),
                              (pl.col("ms").sum() / 1000).alias("seconds")))
    dec = (st.filter(pl.col("phase") == "decode").group_by("generation_reqs")
           .agg(pl.col("ms").median().alias("_dec_ms")))
    mix = st.filter(pl.col("phase") == "mixed").join(dec, on="generation_reqs", how="inner")
    mix = mix.with_columns((pl.col("ms") - pl.col("_dec_ms")).alias("_pre_ms")).filter(
        pl.col("_pre_ms") > 0)
    if mix.height:
        out.append(mix.select(pl.lit("mixed").alias("phase"), pl.len().alias("steps"),
                              pl.col("context_tokens").sum().alias("prompt_tokens"),
                              (pl.col("_pre_ms").sum() / 1000).alias("seconds")))
    if not out:
        return pl.DataFrame(schema=PREFILL_SCHEMA)
    return (pl.concat(out).with_columns(
        pl.lit(lab).alias("label"), (pl.col("prompt_tokens") / pl.col("seconds")).alias("tps"))
        .select(list(PREFILL_SCHEMA)).cast(PREFILL_SCHEMA))


__all__ = ["iteration_steps", "iteration_decode", "iteration_prefill"]


def iteration_figures(logs) -> dict | None:
    """What the report says of the step lines: the decode table's rows and the prefill rows as
    dicts; None without step lines.

    Example: ``iteration_figures(logscope.read("vllm.log"))["decode"][0]["per_stream_tps"]``
    """
    n = iteration_steps(logs).height
    if n == 0:    # nearly every log: no step lines
        return None
    dec, pre = iteration_decode(logs), iteration_prefill(logs)
    if dec.height == 0 and pre.height == 0:
        return None
    return {"decode": dec.to_dicts(), "prefill": pre.to_dicts(), "steps": n}


def iteration_lines(fig: dict | None) -> list[str]:
    """The report's lines for :func:`iteration_figures` (none when it is None).

    Example: ``iteration_lines(fig)[0]`` → ``"- decode per stream from vLLM's step lines …"``
    """
    if not fig:
        return []
    out = []
    if fig["decode"]:
        how = fig["decode"][0]["exactness"]
        parts = [f"{r['decoding']} decoding {r['per_stream_tps']:,.2f} t/s per stream, "
                 f"{r['aggregate_tps']:,.2f} t/s aggregate ({r['steps']:,} steps, median "
                 f"{r['median_step_ms']:,.2f} ms)" for r in fig["decode"]]
        out.append(f"- decode from vLLM's step lines ({how}; the step's compute, scheduling "
                   "excluded): " + "; ".join(parts))
    for r in fig["prefill"]:
        what = ("prefill-only steps" if r["phase"] == "prefill"
                else "steps beside decode, less their decode alone")
        out.append(f"- prefill from vLLM's step lines ({what}): {r['tps']:,.2f} t/s "
                   f"({r['prompt_tokens']:,} prompt tokens over {r['steps']:,} steps; "
                   "no depth in these lines)")
    return out


def step_units(logs) -> pl.DataFrame:
    """The pure decode steps as comparison units: ``stratum`` (streams decoding), ``value``
    (one stream's t/s in that step) and ``weight`` (the step's seconds); empty without step
    lines (or with drafts but no acceptance line).

    Example::

        step_units(logscope.read("vllm.log")).group_by("stratum").len()
    """
    st = iteration_steps(logs)
    dec = st.filter(pl.col("phase") == "decode")
    schema = {"stratum": pl.Int64, "value": pl.Float64, "weight": pl.Float64}
    if dec.height == 0:
        return pl.DataFrame(schema=schema)
    per_step, _ = _tokens_per_step(logs, st)
    if per_step != per_step:
        return pl.DataFrame(schema=schema)
    return dec.select(pl.col("generation_reqs").alias("stratum"),
                      (per_step * 1000 / pl.col("ms")).alias("value"),
                      (pl.col("ms") / 1000).alias("weight")).cast(schema)
