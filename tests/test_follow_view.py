"""The live view of ``logscope follow``: true phases, depth and cached tokens, one honest prefill
column, only the columns the engine prints, acceptance to three significant digits, a decode
sparkline — rendered in memory and in a real terminal (tmux capture-pane)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from logscope.follow import _Parser, parse_line
from logscope.follow.view import SPARK, LiveView, sig3, sparkline

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "fixtures" / "llama-server" / "corpus" / "generated-spec-pilot-c32k-np2.log"
MID_DECODE = 76  # after this line slot 0 is decoding and slot 1 has been released


def view_of(path: Path, upto: int | None = None) -> LiveView:
    p = _Parser(["llama-server", "sglang", "vllm"])
    v = LiveView(str(path))
    for i, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if upto is not None and i > upto:
            break
        for ev in parse_line(p, raw, str(path), i):
            ev["run"] = 1
            v.update(ev)
    return v


def text_of(v: LiveView, width: int = 180) -> str:
    c = Console(record=True, width=width, force_terminal=False)
    c.print(v.render())
    return c.export_text()


def slot_rows(text: str) -> dict[str, list[str]]:
    """slot -> cells of the llama-server slots table (the first table)."""
    block = text.split("llama-server slots", 1)[1].split("prefill t/s: prompt", 1)[0]
    out = {}
    for line in block.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0].isdigit():
            out[cells[0]] = cells
    return out


def header_of(text: str) -> list[str]:
    block = text.split("llama-server slots", 1)[1]
    line = next(ln for ln in block.splitlines() if "slot" in ln and "phase" in ln)
    return [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]


def test_three_significant_digits():
    assert [sig3(x) for x in (0.3381, 0.5, 1.0, 2.9666, 0.04512)] == [
        "0.338", "0.500", "1.00", "2.97", "0.0451"]


def test_sparkline_is_bucketed_by_time():
    pts = [(0.0, 10.0), (150.0, 20.0), (299.0, 40.0)]
    s = sparkline(pts, now=300.0, width=10)
    assert s[0] != " " and s[-1] == SPARK[-1] and s[4] == " "
    assert sparkline([], now=1.0) == ""


def test_phases_are_true_now():
    v = view_of(SPEC, MID_DECODE)
    rows, head = slot_rows(text_of(v)), header_of(text_of(v))
    phase = head.index("phase")
    assert rows["0"][phase] == "decode"
    assert rows["1"][phase] == "idle"  # released: not the prefill it was in before
    assert "now: alone on the GPU" in text_of(v)   # the state as report's rows name it
    v = view_of(SPEC)
    text = text_of(v)
    rows, head = slot_rows(text), header_of(text)
    assert {r[head.index("phase")] for r in rows.values()} == {"idle"}
    # depth and cached tokens of the last request (release n_tokens, derived prefix)
    assert rows["0"][head.index("depth")] == "15176" and rows["0"][head.index("cached")] == "11960"
    assert rows["0"][head.index("accept")] == "0.585" and rows["0"][head.index("len")] == "3.32"
    assert any(ch in rows["0"][head.index("recent decode")] for ch in SPARK)


def test_one_prefill_column_and_only_printed_columns():
    text = text_of(view_of(SPEC))
    head = header_of(text)
    assert head.count("prefill t/s") == 1 and "pp t/s" not in head
    assert "prompt tokens computed per second, cache hits excluded" in text
    for absent in ("queued", "KV", "running", "retracts"):
        assert absent not in head
    text = text_of(view_of(ROOT / "fixtures" / "sglang" / "v0.5.9-eagle3-graph-last.log"))
    assert "KV" in text and "queued" in text and "llama-server slots" not in text


def _tmux(sock: str, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True,
                          timeout=20, **kw)


def _capture_until(sock: str, want, timeout: float = 30.0) -> str:  # noqa: ANN001
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = _tmux(sock, "capture-pane", "-p", "-t", "view").stdout
        if want(screen):
            return screen
        time.sleep(0.3)
    raise AssertionError("the terminal never showed what was expected:\n" + screen)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_view_in_a_real_terminal(tmp_path):
    lines = SPEC.read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "server.log"
    log.write_text("".join(lines[:MID_DECODE]), encoding="utf-8")
    sock = f"logscope-test-{os.getpid()}"
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"}
    env.pop("TMUX", None)
    cmd = f"{sys.executable} -m logscope follow {log} --from-start --poll; sleep 30"
    r = _tmux(sock, "-u", "new-session", "-d", "-s", "view", "-x", "200", "-y", "60", cmd,
              env=env)
    if r.returncode != 0:
        pytest.skip(f"tmux cannot start a session here: {r.stderr.strip()}")
    try:
        n = view_of(SPEC, MID_DECODE).events
        screen = _capture_until(sock, lambda s: f"events {n} " in s and "llama-server slots" in s)
        rows, head = slot_rows(screen), header_of(screen)
        assert rows["0"][head.index("phase")] == "decode"
        assert rows["1"][head.index("phase")] == "idle"
        assert head.count("prefill t/s") == 1 and "KV" not in head and "queued" not in head
        with open(log, "a", encoding="utf-8") as f:
            f.write("".join(lines[MID_DECODE:]))

        n = view_of(SPEC).events
        screen = _capture_until(sock, lambda s: f"events {n} " in s and "llama-server slots" in s)
        rows, head = slot_rows(screen), header_of(screen)
        assert {r[head.index("phase")] for r in rows.values()} == {"idle"}
        assert rows["0"][head.index("depth")] == "15176"
        assert rows["0"][head.index("cached")] == "11960"
        assert rows["0"][head.index("accept")] == "0.585"
        assert any(ch in rows["0"][head.index("recent decode")] for ch in SPARK)
    finally:
        _tmux(sock, "kill-server")
