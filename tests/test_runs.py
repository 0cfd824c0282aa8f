# ruff: noqa: E501  (log lines are as long as the server prints them)
"""Server runs: a file holding several llama-server processes is split where one restarts."""

from __future__ import annotations

import logscope

REQUEST = """slot launch_slot_: id  0 | task {t} | processing task
slot print_timing: id  0 | task {t} | prompt eval time =      10.00 ms /    10 tokens (    1.00 ms per token,  1000.00 tokens per second)
slot print_timing: id  0 | task {t} |        eval time =     100.00 ms /    10 tokens (   10.00 ms per token,   100.00 tokens per second)
slot print_timing: id  0 | task {t} |       total time =     110.00 ms /    20 tokens
slot      release: id  0 | task {t} | stop processing: n_tokens = 19, truncated = 0
"""
STARTUP = """build: 6500 (1a2b3c4d) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu
llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from m.gguf (version GGUF V3 (latest))
build_info: b6500-1a2b3c4d
srv          init: initializing slots, n_slots = 1
"""


def test_startup_block_without_timestamps_is_one_restart(tmp_path):
    # prefix off (no clock): runs are told apart by startup lines that follow requests; a
    # block of several startup lines is one restart
    text = STARTUP + REQUEST.format(t=0) + REQUEST.format(t=5) + STARTUP + REQUEST.format(t=0)
    p = tmp_path / "two.log"
    p.write_text(text)
    logs = logscope.read(str(p))
    assert logs.summary()["runs"] == 2
    req = logs["requests"]
    assert req.select("run", "task").rows() == [(1, 0), (1, 5), (2, 0)]


def test_startup_lines_before_any_request_do_not_split(tmp_path):
    p = tmp_path / "one.log"
    p.write_text(STARTUP + STARTUP + REQUEST.format(t=3))
    assert logscope.read(str(p)).summary()["runs"] == 1
