"""The ingest progress bar (logscope/cli/progress.py): shown on a terminal after about a
second, silent (and rich not imported) when stderr is not a TTY or LOGSCOPE_NO_PROGRESS is set."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from rich.console import Console

import logscope
import logscope.cli.progress as progress_mod
from logscope.cli import cli
from logscope.cli.progress import IngestProgress
from logscope.outputs import summary as summary_mod
from tests.conftest import CORPUS

LOG = CORPUS / "generated-ngram-c4k-np1.log"
MIB = 1024 * 1024
# what any frame of the bar contains: escape codes, carriage returns, bar or spinner glyphs
PROGRESS_MARKS = re.compile(r"\x1b\[|\r|[━╸╺\u2800-\u28ff]|MiB|ETA|reading|finishing")


@pytest.fixture(autouse=True)
def _progress_env(monkeypatch):
    monkeypatch.delenv(progress_mod.ENV_OFF, raising=False)


class Clock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def fake_tty() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)


def bar(clock: Clock, console: Console | None = None) -> IngestProgress:
    return IngestProgress(console=console or fake_tty(), clock=clock, auto_refresh=False)


# (b) the helper with a fake terminal and a fake clock


def test_bar_appears_after_the_delay_with_byte_counts():
    clock, console = Clock(), fake_tty()
    with bar(clock, console) as p:
        clock.t = 0.5
        p(8 * MIB, 32 * MIB)
        assert console.file.getvalue() == "" and not p.shown
        clock.t = 2.0
        p(16 * MIB, 32 * MIB)
        assert p.shown
        out = console.file.getvalue()
    assert "16.0/32.0 MiB" in out
    assert "8.0 MiB/s" in out  # 16 MiB in the 2 s since the ingest began
    assert "ETA 0:00:02" in out  # 16 MiB left at 8 MiB/s
    assert "━" in out and "reading" in out
    # transient: erased when the ingest ends
    assert console.file.getvalue()[len(out):].endswith("\x1b[2K")
    assert not p.shown


def test_no_bar_when_the_ingest_ends_within_the_delay():
    clock, console = Clock(), fake_tty()
    with bar(clock, console) as p:
        for i in range(1, 5):
            clock.t = 0.2 * i
            p(i * MIB, 4 * MIB)
    assert console.file.getvalue() == ""


def test_last_block_says_finishing():
    clock, console = Clock(), fake_tty()
    with bar(clock, console) as p:
        clock.t = 3.0
        p(6 * MIB, 6 * MIB)
        out = console.file.getvalue()
    assert "finishing" in out and "6.0/6.0 MiB" in out


def test_unknown_total_shows_a_spinner_and_bytes_done():
    clock, console = Clock(), fake_tty()
    with bar(clock, console) as p:
        clock.t = 1.5
        p(5 * MIB, None)
        out = console.file.getvalue()
    assert "5.0 MiB" in out and "/" not in out.split("MiB/s")[0]
    assert re.search(r"[\u2800-\u28ff]", out), out  # the dots spinner
    assert "ETA" not in out and "0:00:01" in out  # elapsed instead


@pytest.mark.parametrize(("value", "shown"), [("1", False), ("yes", False), ("0", True),
                                              ("", True)])
def test_env_var_turns_it_off(monkeypatch, value, shown):
    monkeypatch.setenv(progress_mod.ENV_OFF, value)
    clock, console = Clock(), fake_tty()
    with bar(clock, console) as p:
        clock.t = 5.0
        p(MIB, 2 * MIB)
    assert bool(console.file.getvalue()) is shown


def test_not_a_terminal_console_stays_silent():
    console = Console(file=io.StringIO(), force_terminal=False)
    clock = Clock()
    with IngestProgress(console=console, clock=clock, auto_refresh=False) as p:
        clock.t = 5.0
        p(MIB, 2 * MIB)
    assert console.file.getvalue() == "" and not p.active


def test_silent_helper_does_not_import_rich():
    code = ("import sys; from logscope.cli.progress import IngestProgress\n"
            "with IngestProgress(delay=0) as p:\n    p(1, 2); p(2, 2)\n"
            "print('rich' in sys.modules, p.active)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != progress_mod.ENV_OFF})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"] and r.stderr == ""


# (a) the CLI under CliRunner (stderr is not a TTY)


def _summary(path) -> str:  # noqa: ANN001
    """What ``logscope ingest`` prints: the summary, then what it says about the clock."""
    from logscope.engines.clock import clock_notes

    logs = logscope.read(str(path))
    return "".join(line + "\n" for line in [summary_mod.render(logs), *clock_notes(logs)])


def test_cli_ingest_not_a_tty_output_unchanged(monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)  # a bar would show at once if it could
    r = CliRunner().invoke(cli, ["ingest", str(LOG)])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert r.stdout == _summary(LOG)
    j = CliRunner().invoke(cli, ["ingest", "--json", str(LOG)])
    assert j.stderr == ""
    got = json.loads(j.stdout)
    assert got.pop("clock")[0]["sources"]  # where each file's wall clock came from
    assert got == logscope.read(str(LOG)).summary()


def test_cli_ingest_feeds_the_bar(monkeypatch):
    calls = []

    class Recording(IngestProgress):
        def __call__(self, done, total):
            calls.append((done, total))
            super().__call__(done, total)

    monkeypatch.setattr(progress_mod, "IngestProgress", Recording)
    r = CliRunner().invoke(cli, ["ingest", "--json", str(LOG)])
    assert r.exit_code == 0, r.output
    size = LOG.stat().st_size
    assert calls and calls[-1] == (size, size)


# (c) a real process whose stderr is a pipe (and, as a control, a terminal)

RUN_NO_DELAY = ("import sys, logscope.cli.progress as p; p.DELAY_S = 0.0\n"
                "from logscope.cli import main; sys.argv = ['logscope'] + sys.argv[1:]; main()")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != progress_mod.ENV_OFF}
    env.update(extra)
    return env


def test_subprocess_ingest_stderr_not_a_tty_is_silent():
    r = subprocess.run([sys.executable, "-m", "logscope", "ingest", str(LOG)],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout == _summary(LOG)
    # the same with no delay: still nothing, because stderr is a pipe
    r = subprocess.run([sys.executable, "-c", RUN_NO_DELAY, "ingest", str(LOG)],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    assert not PROGRESS_MARKS.search(r.stderr), repr(r.stderr)
    assert r.stderr == ""


def _stderr_on_a_terminal(args: list[str], **env: str) -> tuple[int, str]:
    pty = pytest.importorskip("pty")
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave,
                            env=_env(TERM="xterm", **env))
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            out += data
    finally:
        os.close(master)
        rc = proc.wait(timeout=60)
    return rc, out.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_subprocess_ingest_on_a_terminal_shows_the_bar():
    """The control for the test above: the same run with stderr a terminal draws the bar,
    and LOGSCOPE_NO_PROGRESS=1 hides it."""
    args = [sys.executable, "-c", RUN_NO_DELAY, "ingest", str(LOG)]
    rc, err = _stderr_on_a_terminal(args)
    assert rc == 0, err
    assert "finishing" in err and "MiB" in err and "━" in err
    rc, err = _stderr_on_a_terminal(args, LOGSCOPE_NO_PROGRESS="1")
    assert rc == 0 and err == "", repr(err)
