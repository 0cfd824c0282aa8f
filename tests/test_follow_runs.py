"""follow numbers server runs as ingest does: from the start, after a resume with --state,
and from the end of a file that already holds runs; a missing file is waited for, said once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import logscope
from logscope.follow import EventStream

ROOT = Path(__file__).resolve().parent.parent
TWO_RUNS = ROOT / "fixtures" / "llama-server" / "two-runs-d-b10178-b10405.log"
MULTI_RUN = [TWO_RUNS,
             ROOT / "fixtures" / "sglang" / "v0.4.9-token-swa.log",
             ROOT / "fixtures" / "sglang" / "v0.5.11-pending-token-occupancy.log",
             ROOT / "fixtures" / "vllm" / "dev-builds-spec.log",
             ROOT / "fixtures" / "vllm" / "v0.7.3-v0.8.2-upgrade-compose.log",
             ROOT / "fixtures" / "llama-server" / "router-d-b9151-b9229-two-children.log",
             *sorted((ROOT / "fixtures" / "llama-server" / "corpus").glob("*.log"))]


def follow_until(path: Path, lines: int, **kw) -> list[dict]:
    """Events of ``path`` until ``lines`` lines were read (then a clean stop)."""
    s = EventStream(str(path), watch=False, poll_interval=0.01,
                    on_line=lambda _f: s.stop() if s.lines_read >= lines else None, **kw)
    t = threading.Timer(20.0, s.stop)
    t.start()
    try:
        return list(s)
    finally:
        t.cancel()


def ingest_runs(path: Path) -> dict[int, int]:
    lc = logscope.read(str(path))["lines_classified"]
    return dict(zip(lc["line"].to_list(), lc["run"].to_list(), strict=True))


@pytest.mark.parametrize("path", MULTI_RUN, ids=lambda p: p.name)
def test_runs_equal_ingest(path):
    n = path.read_bytes().count(b"\n")
    evs = follow_until(path, n, from_start=True)
    want = ingest_runs(path)
    assert evs
    got = {(e["line"], e["run"]) for e in evs}
    assert {(line, want[line]) for line, _ in got if line in want} == got
    assert max(e["run"] for e in evs) == max(want.values())


def test_restart_after_a_resume_is_a_new_run(tmp_path):
    lines = TWO_RUNS.read_text(encoding="utf-8").splitlines(keepends=True)
    want = ingest_runs(TWO_RUNS)
    first_of_2 = min(line for line, run in want.items() if run == 2)
    log, state = tmp_path / "server.log", tmp_path / "server.state"
    log.write_text("".join(lines[:first_of_2 - 1]), encoding="utf-8")
    before = follow_until(log, first_of_2 - 1, from_start=True, state=str(state))
    assert {e["run"] for e in before} == {1}
    assert json.loads(state.read_text())["runs"]["llama"]
    with open(log, "a", encoding="utf-8") as f:  # the server restarts, writing to the same log
        f.write("".join(lines[first_of_2 - 1:]))
    after = follow_until(log, len(lines) - first_of_2 + 1, state=str(state))
    assert after and after[0]["line"] >= first_of_2
    assert all(e["run"] == want[e["line"]] == 2 for e in after)


def test_from_the_end_counts_the_runs_already_there(tmp_path):
    log = tmp_path / "server.log"
    text = TWO_RUNS.read_text(encoding="utf-8")
    log.write_text(text, encoding="utf-8")
    last = text.splitlines()[-1]
    got: list[dict] = []
    s = EventStream(str(log), watch=False, poll_interval=0.01)

    def run() -> None:
        for ev in s:
            got.append(ev)
            s.stop()

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    with open(log, "a", encoding="utf-8") as f:
        f.write(last + "\n")
    t.join(20)
    s.stop()
    assert got and got[0]["line"] == text.count("\n") + 1
    assert got[0]["run"] == 2


def test_a_missing_file_is_waited_for_in_one_line(tmp_path):
    import selectors

    log = tmp_path / "later.log"
    proc = subprocess.Popen([sys.executable, "-m", "logscope", "follow", str(log), "--jsonl",
                             "--poll"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)

    def line_of(stream, timeout: float) -> str:  # noqa: ANN001
        sel = selectors.DefaultSelector()
        sel.register(stream, selectors.EVENT_READ)
        ready = sel.select(timeout)
        sel.close()
        return stream.readline() if ready else ""

    try:
        first = line_of(proc.stderr, 60)  # the follower says it waits before the file exists
        assert "does not exist yet; waiting for it to be created" in first and str(log) in first
        lines = TWO_RUNS.read_text(encoding="utf-8").splitlines(keepends=True)[:12]
        log.write_text("".join(lines), encoding="utf-8")
        out = line_of(proc.stdout, 60)
        assert out and json.loads(out)["run"] == 1
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert not [ln for ln in err.splitlines() if "waiting" in ln], err  # said once


def test_the_rules_are_the_engine_models():
    from logscope.engines import llama_server, sglang, vllm
    from logscope.follow import runs

    assert runs.CLOCK_BACKSTEP_S == llama_server.CLOCK_BACKSTEP_S
    assert tuple(runs.REQUEST_KINDS) == tuple(llama_server.REQUEST_KINDS)
    assert tuple(runs.RUN_START_VARIANTS) == tuple(llama_server.RUN_START_VARIANTS)
    import inspect

    for mod, eng in ((sglang, "sglang"), (vllm, "vllm")):
        src = inspect.getsource(mod)
        assert f"ConfigRuns({list(runs.TRAFFIC[eng])!r})".replace("'", '"') in src, eng
