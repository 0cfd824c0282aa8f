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
