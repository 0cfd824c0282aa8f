"""logscope follow: tail -F semantics, --state resume, the torture test, /metrics, bad input.

Every test is bounded in time (followers run with short poll intervals; waits have timeouts).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from logscope.classify.parse import parse_raw_line
from logscope.follow.state import StateStore
from logscope.follow.tail import Follower, FollowError, Vanished

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "fixtures" / "llama-server" / "corpus").glob("*.log"))


def corpus_lines() -> list[str]:
    """Real llama-server lines (from the corpus) that the grammar classifies, each starting
    with the ``M.SS.mmm.uuu L`` prefix (so a unique id can be put into the prefix)."""
    out = []
    for f in CORPUS:
        for raw in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if len(raw) < 14 or raw[1] != "." or raw[12] != " ":
                continue
            if parse_raw_line(raw, ["llama-server"])[2] is not None:
                out.append(raw)
    assert len(out) > 100
    return out


def uid_line(template: str, i: int) -> str:
    """The corpus line with its relative timestamp replaced by one that encodes ``i``."""
    ts = f"{i // 60000}.{(i // 1000) % 60:02d}.{i % 1000:03d}.{i % 997:03d}"
    return ts + template[12:]


def uid_of(ts_rel: str) -> int:
    m, s, ms, _ = (int(x) for x in ts_rel.split("."))
    return m * 60000 + s * 1000 + ms


class Collector:
    """Runs a Follower in a thread and collects (line_no, raw)."""

    def __init__(self, path: Path, **kw) -> None:
        kw.setdefault("poll_interval", 0.02)
        kw.setdefault("watch", False)
        self.f = Follower(str(path), **kw)
        self.got: list[tuple[int, str]] = []
        self.error: BaseException | None = None
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        try:
            for item in self.f.lines():
                self.got.append(item)
        except BaseException as e:  # noqa: BLE001
            self.error = e

    def wait_for(self, n: int, timeout: float = 5.0) -> list[tuple[int, str]]:
        end = time.monotonic() + timeout
        while len(self.got) < n and time.monotonic() < end and self.t.is_alive():
            time.sleep(0.01)
        return list(self.got)

    def stop(self) -> None:
        self.f.stop()
        self.t.join(5)
        assert not self.t.is_alive()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# -- tail -F semantics (in process) ------------------------------------------------------------

def test_partial_line_is_held_and_crlf_stripped(tmp_path):
    p = tmp_path / "a.log"
    append(p, b"one\r\ntw")
    c = Collector(p, from_start=True)
    try:
        assert c.wait_for(1) == [(1, "one")]
        time.sleep(0.1)
        assert len(c.got) == 1  # "tw" is held
        append(p, b"o\r\nthr\xffee\n")
        assert c.wait_for(3) == [(1, "one"), (2, "two"), (3, "thr\ufffdee")]
    finally:
        c.stop()


def test_from_end_starts_after_last_complete_line(tmp_path):
    p = tmp_path / "a.log"
    append(p, b"old1\nold2\npart")
    c = Collector(p)  # default: from the end
    try:
        time.sleep(0.1)
        append(p, b"ial\nnew\n")
        assert c.wait_for(2) == [(3, "partial"), (4, "new")]
    finally:
        c.stop()


def test_file_created_later_rename_rotation_and_recreation(tmp_path):
    p = tmp_path / "a.log"
    c = Collector(p)
    try:
        time.sleep(0.1)
        append(p, b"a1\na2\n")
        assert c.wait_for(2) == [(1, "a1"), (2, "a2")]
        append(p, b"a3\na4-unterminated")
        os.rename(p, tmp_path / "a.log.1")
        append(tmp_path / "a.log.1", b"\na5-after-rename\n")  # a writer that has not reopened
        time.sleep(0.05)
        append(p, b"b1\n")
        got = c.wait_for(6)
        assert [x for _, x in got] == ["a1", "a2", "a3", "a4-unterminated", "a5-after-rename",
                                       "b1"]
        os.unlink(p)
        time.sleep(0.1)
        append(p, b"c1\n")
        got = c.wait_for(7)
        assert got[-1] == (1, "c1")
    finally:
        c.stop()


def test_truncation_and_copytruncate_grown_past_offset(tmp_path):
    p = tmp_path / "a.log"
    append(p, b"x" * 50 + b"\n" + b"y" * 50 + b"\n")
    c = Collector(p, from_start=True)
    try:
        assert len(c.wait_for(2)) == 2
        os.truncate(p, 0)  # plain truncation: size < offset
        append(p, b"t1\n")
        assert c.wait_for(3)[-1] == (1, "t1")
        # copytruncate, then a burst that makes the file larger than the old offset before the
        # follower looks again: detected by the changed first bytes
        c.f.poll_interval = 0.5
        shutil.copy(p, tmp_path / "a.log.1")
        with open(p, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(b"n%03d\n" % i for i in range(40)))
        c.f.waker.wake()
        got = c.wait_for(43)
        assert [x for _, x in got[3:]] == [f"n{i:03d}" for i in range(40)]
        assert got[3][0] == 1
    finally:
        c.stop()


def test_inotify_wakeups(tmp_path):
    pytest.importorskip("watchfiles")
    p = tmp_path / "a.log"
    append(p, b"")
    c = Collector(p, watch=True, poll_interval=5.0)
    try:
        deadline = time.monotonic() + 3
        while not (c.f.watcher and c.f.watcher.active) and time.monotonic() < deadline:
            time.sleep(0.01)
        if not (c.f.watcher and c.f.watcher.active):
            pytest.skip("no working inotify watcher here (the follower polls)")
        time.sleep(0.2)
        t0 = time.monotonic()
        append(p, b"hello\n")
        assert c.wait_for(1, timeout=3) == [(1, "hello")]
        assert time.monotonic() - t0 < 1.0  # woken by inotify, not the (5 s) safety poll
        os.rename(p, tmp_path / "a.log.1")
        append(p, b"again\n")
        assert c.wait_for(2, timeout=3)[-1] == (1, "again")
    finally:
        c.stop()


def test_state_resume_after_rotation_while_stopped(tmp_path):
    p = tmp_path / "a.log"
    st = tmp_path / "state.json"
    append(p, b"l1\nl2\n")
    store = StateStore(str(st), every_lines=1)
    c = Collector(p, from_start=True, store=store)
    assert len(c.wait_for(2)) == 2
    c.stop()
    saved = json.loads(st.read_text())
    assert saved["offset"] == 6 and saved["line"] == 2
    # while nobody follows: more lines, rename rotation, a new file
    append(p, b"l3\nl4\n")
    os.rename(p, tmp_path / "a.log-20260101")
    append(p, b"m1\n")
    store = StateStore(str(st))
    c = Collector(p, store=store, resume=store.load(str(p)))
    try:
        assert c.wait_for(3) == [(3, "l3"), (4, "l4"), (1, "m1")]
    finally:
        c.stop()
    # copytruncate while nobody follows: the copy is found by its fingerprint
    append(p, b"m2\n")
    shutil.copy(p, tmp_path / "a.log.1")
    os.truncate(p, 0)
    append(p, b"k1\n")
    c = Collector(p, store=store, resume=store.load(str(p)))
    try:
        assert c.wait_for(2) == [(2, "m2"), (1, "k1")]
    finally:
        c.stop()


def test_chains_of_rotations(tmp_path):
    p = tmp_path / "a.log"
    st = tmp_path / "state.json"
    append(p, b"l1\nl2\n")
    store = StateStore(str(st))
    c = Collector(p, from_start=True, store=store)
    assert len(c.wait_for(2)) == 2
    c.stop()
    # stopped: the name is rotated twice
    append(p, b"l3\n")
    os.rename(p, tmp_path / "a.log.1")
    time.sleep(0.01)
    append(p, b"m1\n")
    os.rename(p, tmp_path / "a.log.2")
    time.sleep(0.01)
    append(p, b"n1\n")
    c = Collector(p, store=store, resume=store.load(str(p)))
    assert c.wait_for(3) == [(3, "l3"), (1, "m1"), (1, "n1")]
    c.stop()
    # stopped: the file is deleted, a new one written and rotated away
    os.unlink(p)
    time.sleep(0.01)
    append(p, b"o1\n")
    os.rename(p, tmp_path / "a.log.3")
    time.sleep(0.01)
    append(p, b"p1\n")
    c = Collector(p, store=store, resume=store.load(str(p)))
    assert c.wait_for(2) == [(1, "o1"), (1, "p1")]
    # running, but slow to look: two rotations (and a copytruncate copy of a file already
    # read, which must not be read again) before it wakes up
    c.f.poll_interval = 5.0
    time.sleep(0.1)
    append(p, b"p2\n")
    shutil.copy(p, tmp_path / "a.log.copy")
    os.rename(p, tmp_path / "a.log.4")
    time.sleep(0.01)
    append(p, b"q1\n")
    os.rename(p, tmp_path / "a.log.5")
    time.sleep(0.01)
    append(p, b"r1\n")
    c.f.waker.wake()
    try:
        assert c.wait_for(5) == [(1, "o1"), (1, "p1"), (2, "p2"), (1, "q1"), (1, "r1")]
    finally:
        c.stop()


def test_directory_and_vanishing(tmp_path):
    with pytest.raises(FollowError, match="directory"):
        list(Follower(str(tmp_path), watch=False).lines())
    d = tmp_path / "logs"
    d.mkdir()
    p = d / "a.log"
    append(p, b"x\n")
    c = Collector(p, vanish_timeout=0.3, from_start=True)
    assert c.wait_for(1) == [(1, "x")]
    os.unlink(p)
    c.t.join(5)
    assert isinstance(c.error, Vanished) and "vanished" in str(c.error)
    append(p, b"y\n")
    c = Collector(p, from_start=True)
    assert c.wait_for(1) == [(1, "y")]
    shutil.rmtree(d)
    c.t.join(5)
    assert isinstance(c.error, Vanished) and "directory" in str(c.error)


# -- the CLI -----------------------------------------------------------------------------------

def follow_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "logscope", "follow", *args]


def test_cli_bad_input(tmp_path):
    r = subprocess.run(follow_cmd(str(tmp_path), "--jsonl"), capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "is a directory" in r.stderr
    r = subprocess.run(follow_cmd(str(tmp_path / "nodir" / "a.log")), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "no such directory" in r.stderr
    (tmp_path / "state").write_text("{}")
    r = subprocess.run(follow_cmd(str(tmp_path / "a.log"), "--state", str(tmp_path / "state")),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "not a logscope follow state file" in r.stderr
    r = subprocess.run(follow_cmd(str(tmp_path / "a.log"), "--serve", "localhost:http"),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def test_cli_vanish_and_port_in_use(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("x\n")
    proc = subprocess.Popen(follow_cmd(str(p), "--jsonl", "--vanish-timeout", "0.3", "--poll"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)  # the follower must have opened the file (slow starts on a loaded machine)
    p.unlink()
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and "vanished" in err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run(follow_cmd(str(p), "--serve", f"127.0.0.1:{port}"),
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "port is in use" in r.stderr


def test_cli_stops_when_its_reader_goes_away(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("")
    r, w = os.pipe()
    proc = subprocess.Popen(follow_cmd(str(p), "--jsonl", "--state", str(tmp_path / "st")),
                            stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    time.sleep(1.0)
    os.close(r)  # like `| head` exiting while the log is quiet
    assert proc.wait(10) == 0
    assert json.loads((tmp_path / "st").read_text())["offset"] == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_metrics_over_http(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    src = ROOT / "fixtures" / "llama-server" / "corpus" / "generated-spec-pilot-c32k-np2.log"
    p = tmp_path / "server.log"
    shutil.copy(src, p)
    expected = {"prompt": 0, "gen": 0, "launch": 0, "acc": 0, "events": 0, "prefill_count": 0}
    for raw in src.read_text().splitlines():
        m = parse_raw_line(raw, ["llama-server"])[2]
        if m is None or m[1] == "ignored":
            continue
        expected["events"] += 1
        f = m[3]
        expected["prompt"] += f.get("prompt_tokens") or 0 if m[1] == "prompt_eval" else 0
        expected["gen"] += f.get("gen_tokens") or 0 if m[1] == "eval" else 0
        expected["launch"] += m[1] == "task_launch"
        expected["prefill_count"] += m[1] == "prompt_eval"
        expected["acc"] += f.get("draft_accepted") or 0 if m[1] == "draft_acceptance" else 0
    port = free_port()
    proc = subprocess.Popen(follow_cmd(str(p), "--from-start", "--engine", "llama-server",
                                       "--serve", f"127.0.0.1:{port}", "--jsonl"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        fams = {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
            except OSError:
                continue
            fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
            ev = fams.get("logscope_events")
            if ev and sum(s.value for s in ev.samples if s.name.endswith("_total")) \
                    >= expected["events"]:
                break

        def total(name: str) -> float:
            return sum(s.value for s in fams[name].samples if s.name == name + "_total")

        assert total("logscope_events") == expected["events"]
        assert total("logscope_prompt_tokens") == expected["prompt"]
        assert total("logscope_generated_tokens") == expected["gen"]
        assert total("logscope_requests") == expected["launch"]
        assert total("logscope_draft_accepted_tokens") == expected["acc"]
        tg = fams["logscope_tg_3s_tokens_per_second"].samples
        assert tg and all(s.labels["engine"] == "llama-server" and s.labels["slot"] in ("0", "1")
                          for s in tg)
        assert fams["logscope_draft_acceptance_ratio"].samples
        assert total("logscope_lines") == len(src.read_text().splitlines())
        count = [s.value for s in fams["logscope_prefill_seconds"].samples
                 if s.name == "logscope_prefill_seconds_count"]
        assert count == [expected["prefill_count"]]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert proc.returncode == 0


def follow_to_end(path: Path) -> list[dict]:
    """The events of an existing file, followed from its start until its last line."""
    from logscope.follow import EventStream

    n = path.read_bytes().count(b"\n")
    s = EventStream(str(path), from_start=True, watch=False, poll_interval=0.01,
                    on_line=lambda _f: s.stop() if s.lines_read >= n else None)
    t = threading.Timer(10.0, s.stop)  # a bound, in case
    t.start()
    try:
        return list(s)
    finally:
        t.cancel()


def _metrics_of(path: Path) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    from logscope.follow.metrics import Metrics

    m = Metrics()
    for ev in follow_to_end(path):
        m.observe(ev)
    fams = text_string_to_metric_families(m.render().decode())
    return {f.name: {s.name: s.value for s in f.samples if not s.name.endswith("_created")}
            for f in fams}


def test_metrics_sglang_and_vllm():
    got = _metrics_of(ROOT / "fixtures" / "sglang" / "v0.4.4-retract-pressure.log")
    assert got["logscope_retracts"]["logscope_retracts_total"] > 0
    assert 0 < got["logscope_kv_cache_usage_ratio"]["logscope_kv_cache_usage_ratio"] <= 1
    assert "logscope_queue_requests" in got["logscope_queue_requests"]
    got = _metrics_of(ROOT / "fixtures" / "vllm" / "dev-builds-spec.log")
    acc = got["logscope_draft_accepted_tokens"]["logscope_draft_accepted_tokens_total"]
    gen = got["logscope_draft_generated_tokens"]["logscope_draft_generated_tokens_total"]
    assert 0 < acc <= gen
    assert 0 < got["logscope_draft_acceptance_ratio"]["logscope_draft_acceptance_ratio"] <= 1
    # V0 prints cumulative totals (228, 601, 992, 1101 accepted): the counter ends at the last
    got = _metrics_of(ROOT / "fixtures" / "vllm" / "v0.4.2-spec-draft-model.log")
    assert got["logscope_draft_accepted_tokens"] == {"logscope_draft_accepted_tokens_total": 1101}
    assert got["logscope_draft_generated_tokens"] == {
        "logscope_draft_generated_tokens_total": 2155}


def _terminal_wrapped(f: Path) -> bool:
    """A wild log whose golden counts records a terminal wrapped onto two lines (``rejoined``):
    ingest joins them again (logscope/classify/wrapped.py), follow does not (yet)."""
    exp = f.with_name(f.name[: -len(".log")] + ".expected.json")
    return ("wild" in f.parts and exp.exists()
            and json.loads(exp.read_text()).get("rejoined", 0) > 0)


def _follow_agrees(files: list[Path]) -> None:
    import collections

    import logscope

    summary = logscope.read([str(f) for f in files]).summary()
    counts: collections.Counter = collections.Counter()
    for f in files:
        counts.update(ev["kind"] for ev in follow_to_end(f))
    unrecognized = counts.pop("unrecognized", 0)
    assert dict(counts) == summary["events"]
    assert unrecognized == summary["unrecognized"]


def test_follow_events_agree_with_ingest():
    """Every fixture log followed from its start gives, together, the event counts of one batch
    ingest of them all (the same compiled patterns; glued vLLM records split the same way). A
    file ending without a newline differs by design: follow holds the partial last line until
    it is completed. Logs a terminal wrapped are the xfail test below."""
    files = [f for f in sorted((ROOT / "fixtures").rglob("*.log"))
             if f.read_bytes().endswith(b"\n") and not _terminal_wrapped(f)]
    assert len(files) > 20
    _follow_agrees(files)


@pytest.mark.xfail(strict=True, reason="follow does not rejoin a record a terminal wrapped onto "
                   "two lines (ingest does): each second line is an alarm, the record partial")
def test_follow_rejoins_terminal_wrapped_records():
    files = [f for f in sorted((ROOT / "fixtures").rglob("*.log")) if _terminal_wrapped(f)]
    assert files
    _follow_agrees(files)


# -- the torture test --------------------------------------------------------------------------

def test_torture_rotate_truncate_recreate_restart(tmp_path, restart_every=0.9):
    """A writer appends 10 000 real-format lines, each carrying a unique id in its timestamp,
    while rotating by rename (unique rotated names), copytruncating, truncating, deleting and
    re-creating, and writing half lines; meanwhile the follower process is stopped (SIGTERM /
    SIGINT) and restarted with --state. The ids received must equal the ids written, in order.

    Inherent tail -F races are kept out of the test by design: before a copytruncate, a plain
    truncation or a deletion the writer waits until the follower has caught up (lines written
    after the follower's last read but before a copytruncate exist only in the copy; lines of a
    file deleted while no follower holds it open are gone). Everything else happens at any
    time: appends, half lines, rename rotations (by the writer, and by the killer while no
    follower runs, so that a restarted follower meets chains such as rename + rename or
    delete + re-create + rename). A restarted follower is given time to start (it has read a
    line written after its start) before it may be stopped again: killed before it installed
    its signal handlers it would exit by SIGTERM's default action (having emitted nothing).
    """
    n_lines = 10_000
    templates = corpus_lines()
    lines = [uid_line(templates[i % len(templates)], i) for i in range(n_lines)]
    p = tmp_path / "server.log"
    st = tmp_path / "follow.state"
    received: list[int] = []
    written = [0]
    lock = threading.Lock()  # the killer does not restart during a catch-up + destructive op
    stop_all = threading.Event()
    errors: list[str] = []
    procs: list[subprocess.Popen] = []
    per_proc: list[list[int]] = []

    def start() -> tuple[subprocess.Popen, threading.Thread]:
        proc = subprocess.Popen(
            follow_cmd(str(p), "--jsonl", "--from-start", "--all", "--engine", "llama-server",
                       "--state", str(st), "--vanish-timeout", "inf"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        mine: list[int] = []
        per_proc.append(mine)

        def read() -> None:
            assert proc.stdout is not None
            for out in proc.stdout:
                try:
                    received.append(uid_of(json.loads(out)["ts_rel"]))
                    mine.append(received[-1])
                except (ValueError, KeyError, TypeError, AttributeError):
                    errors.append(f"not a line that was written: {out!r}")

        t = threading.Thread(target=read, daemon=True)
        t.start()
        procs.append(proc)
        return proc, t

    def caught_up(timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while len(received) < written[0] and time.monotonic() < end:
            time.sleep(0.005)
        if len(received) < written[0]:
            errors.append(f"follower did not catch up: {len(received)} < {written[0]}")

    ops = ["rename", "half", "copytruncate", "rename", "truncate", "delete", "rename", "half"]
    counts: dict[str, int] = {}

    rot = [0]

    def rotate() -> None:
        if p.exists():
            rot[0] += 1
            os.rename(p, tmp_path / f"server.log.{rot[0]}")

    nxt = [0]  # the next line to write

    wlock = threading.Lock()

    def put(count: int, half: bool) -> None:
        with wlock:
            _put(count, half)

    def _put(count: int, half: bool) -> None:
        i = nxt[0]
        chunk = lines[i:i + count]
        data = "".join(x + ("\r\n" if (i + j) % 7 == 0 else "\n")
                       for j, x in enumerate(chunk)).encode()
        with open(p, "ab") as f:
            if half:  # a half line: its first part, a pause, the rest
                cut = len(data) - len(chunk[-1]) // 2
                f.write(data[:cut])
                f.flush()
                time.sleep(0.004)
                f.write(data[cut:])
            else:
                f.write(data)
        nxt[0] = written[0] = i + len(chunk)

    def writer() -> None:
        k = 0
        while nxt[0] < n_lines and not stop_all.is_set():
            put(40, half=k % 3 == 0)
            k += 1
            time.sleep(0.02)
            if k % 12 or nxt[0] >= n_lines:
                continue
            op = ops[(k // 12) % len(ops)]
            counts[op] = counts.get(op, 0) + 1
            if op == "rename":
                with lock:
                    rotate()
            elif op == "half":
                with wlock, open(p, "ab") as f:  # a half line left hanging for a while
                    line = (lines[nxt[0]] + "\n").encode()
                    f.write(line[:20])
                    f.flush()
                    time.sleep(0.05)
                    f.write(line[20:])
                    nxt[0] = written[0] = nxt[0] + 1
            else:
                with lock:
                    caught_up()
                    if not p.exists():  # the killer has just rotated it away
                        continue
                    if op == "copytruncate":
                        rot[0] += 1
                        shutil.copy(p, tmp_path / f"server.log.{rot[0]}")
                        with open(p, "r+b") as f:
                            f.truncate(0)
                    elif op == "truncate":
                        with open(p, "r+b") as f:
                            f.truncate(0)
                    elif op == "delete":
                        os.unlink(p)
                        time.sleep(0.03)

    def up() -> None:
        """Hold the lock until the new follower is up and has caught up (so that it does not
        meet a chain of several rotations while it starts): write a line, wait for it."""
        if nxt[0] < n_lines:
            put(1, half=False)
        caught_up()

    t0 = time.monotonic()
    proc, reader = start()
    with lock:
        up()
    wt = threading.Thread(target=writer, daemon=True)
    wt.start()
    restarts = 0
    try:
        sig = [signal.SIGTERM, signal.SIGINT]
        while wt.is_alive() and time.monotonic() - t0 < 40:
            time.sleep(restart_every)
            if not wt.is_alive():
                break
            with lock:
                proc.send_signal(sig[restarts % 2])
                proc.wait(10)
                reader.join(10)
                if restarts % 2 == 0:
                    rotate()  # a rename rotation while no follower runs
                restarts += 1
                proc, reader = start()
                up()
        wt.join(30)
        caught_up(15)
    finally:
        stop_all.set()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        reader.join(10)
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
    stderr = [pr.stderr.read() if pr.stderr else "" for pr in procs]
    gaps = [(a, b) for a, b in zip(received, received[1:], strict=False) if b != a + 1][:5]
    info = [(pr.returncode, len(m), m[:1], m[-1:]) for pr, m in zip(procs, per_proc, strict=True)]
    assert not errors, (errors, gaps, stderr, info)
    assert restarts >= 3, f"only {restarts} restarts"
    assert all(pr.returncode == 0 for pr in procs), [(pr.returncode, e)
                                                     for pr, e in zip(procs, stderr, strict=True)]
    assert set(counts) >= {"rename", "half", "copytruncate", "truncate", "delete"}, counts
    dup = len(received) - len(set(received))
    lost = sorted(set(range(n_lines)) - set(received))
    assert dup == 0 and not lost, f"{dup} duplicated, {len(lost)} lost (first {lost[:5]})"
    assert received == list(range(n_lines)), "out of order"
    assert time.monotonic() - t0 < 60, "too slow"
