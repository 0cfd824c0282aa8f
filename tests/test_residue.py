"""Residue of real pastes: lines that once raised a false alarm or lost a record."""

from __future__ import annotations

import logscope


def test_a_forks_checkpoint_line_is_counted_quietly(tmp_path):
    """A llama.cpp fork's `erasing old context checkpoint (…, n_tokens = …)` carries a token
    count but no benchmark figure: ignored, not an alarm."""
    log = tmp_path / "fork.log"
    log.write_text("0.10.000.000 I slot update_slots: id  0 | task 12 | erasing old context "
                   "checkpoint (pos_min = 0, pos_max = 4095, n_tokens = 4096, size = 62.813 "
                   "MiB)\n")
    s = logscope.read(str(log)).summary()
    assert (s["unrecognized"], s["ignored"]) == (0, 1)


def test_a_padded_gutter_keeps_the_vllm_record(tmp_path):
    """A line-number gutter whose paste padded the spaces inside (`Swapped: 0     reqs`)."""
    log = tmp_path / "gutter.log"
    log.write_text("  12 | INFO 10-02 09:14:03 metrics.py:351] Avg prompt throughput: 4102.7 "
                   "tokens/s, Avg generation throughput: 38.1 tokens/s, Running: 9 reqs, "
                   "Swapped: 0     reqs, Pending: 4   reqs, GPU KV cache usage: 71.6%, CPU KV "
                   "cache usage: 0.0%.\n")
    logs = logscope.read(str(log))
    assert logs.summary()["unrecognized"] == 0
    row = logs["engine_stats"].row(0, named=True)
    assert (row["running_reqs"], row["swapped_reqs"], row["waiting_reqs"]) == (9, 0, 4)
    assert row["gen_throughput"] == 38.1


def test_wrapped_record_rejoined_and_ray_suffix_counted(tmp_path):
    """A vLLM stats record cut by a terminal is one event with every figure, no alarm; Ray's
    dedup suffix is cut and its folded lines counted."""
    import logscope

    head = ("(APIServer pid=12) INFO 08-01 10:00:20 [loggers.py:123] Engine 000: Avg prompt "
            "throughput: 0.0 tokens/s, Avg generation throughpu")
    tail = "t: 843.6 tokens/s, Running: 38 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%"
    ray = ("(APIServer pid=12) INFO 08-01 10:00:30 [loggers.py:123] Engine 000: Avg prompt "
           "throughput: 0.0 tokens/s, Avg generation throughput: 80.0 tokens/s, Running: 4 reqs,"
           " Waiting: 0 reqs, GPU KV cache usage: 1.0% [repeated 3x across cluster]")
    p = tmp_path / "w.log"
    p.write_text("\n".join([head, tail, ray]) + "\n")
    logs = logscope.read(str(p))
    st = logs["engine_stats"]
    assert st["gen_throughput"].to_list() == [843.6, 80.0]
    assert st["running_reqs"].to_list() == [38, 4]
    f = logs.files[0]
    assert (f.unrecognized, f.rejoined, f.folded, f.folded_lines) == (0, [1], 3, 1)


def test_a_record_whose_first_half_alone_is_unrecognized_is_rejoined():
    """A long vLLM ``SpecDecoding metrics`` line cut anywhere by a terminal: where the cut
    leaves the first half unrecognized and the rest with no anchor (no event, no alarm of its
    own), the first half is joined to the next line. Every cut point keeps the record."""
    import polars as pl

    from logscope.ingest import parse_batch

    pre = "2026-08-01T10:00:20.123456789Z (APIServer pid=1) INFO 08-01 10:00:20 [metrics.py:101] "
    line = (pre + "SpecDecoding metrics: Mean acceptance length: 2.40, Accepted throughput: "
            "52.40 tokens/s, Drafted throughput: 112.20 tokens/s, Accepted: 524 tokens, "
            "Drafted: 1122 tokens, Per-position acceptance rate: 0.748, 0.431, 0.222, Avg Draft "
            "acceptance rate: 46.7%")
    for cut in range(len(pre) + 30, len(line) - 3, 3):
        b = parse_batch(pl.Series([line[:cut], line[cut:]]), "x.log", ["vllm"])
        sd = b.fields.get("vllm", {}).get("spec_decoding")
        assert sd is not None and sd.height == 1, line[cut:cut + 20]
        assert sum(u.height for u in b.unrecognized.values()) == 0, line[cut:cut + 20]
        assert b.rejoined == [1]
