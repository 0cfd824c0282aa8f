"""Wrapper renderers: the envelopes real logs arrive in, applied to bare server lines.

Every entry of :data:`WRAPPERS` is ``wrap(lines, rng) -> lines``: it takes the bare lines of a
server log (no trailing newline) and returns the same lines as a wrapper would have written them.

Rules every wrapper keeps (``check_wrapper`` verifies them):

* every bare line appears exactly once in the output, whole (never split, never dropped), in the
  same order; it may be escaped (docker json-file, LocalAI ``line="..."``, Go slog ``msg="..."``)
  when the wrapper's own syntax quotes it, colour codes may be put around or inside it
  (``ansi_*``), and text may stand after it (padding, ``\r``, ``**``, a ``file.py:42`` column);
* a wrapper may insert lines of its own application (a launcher's ``[DEBUG]`` lines, another
  compose service); those carry no server message and no benchmark-figure anchor;
* output is a function of ``(lines, rng)`` only: same Random state, same output. Wrapper clocks
  follow the server's own timestamps where a line prints one (and stay monotonic).

:data:`CATALOGUE` holds the same functions with data about them: ``source`` (where the shape was
seen), ``provenance`` (how well it is known, :data:`PROVENANCE_LEVELS`), ``layer`` (``app``,
``container``, ``host``, ``paste``, inside out), and the flags ``inserts`` (adds lines: the record
count changes), ``escapes`` (the line is quoted in the wrapper's syntax), ``suffix`` (text
after the line) and ``separates`` (its own lines stand between the physical lines of a multi-line
record, e.g. a header line before every line; other inserting wrappers never insert before a
continuation line). :func:`compose` applies several in a row (innermost first), :func:`random_stack`
draws a plausible stack (one wrapper per layer at most). Write wrapped lines joined by ``"\n"``:
the CRLF wrappers leave their ``"\r"`` at the end of each line.

:data:`DAMAGE` (collapsed spaces, a block cut out of long lines, padded counts) and
:data:`REWRITERS` (SGLang under a user's logging config) change the server line itself, and
:data:`SPLITTERS` (a terminal's line wrap) cut one line into several, so they are not wrappers; the
wild corpus (``bench/wild.py``) uses them. No text was copied from the threads named in ``source``:
every shape is rendered here with invented values.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

Wrapper = Callable[[list[str], random.Random], list[str]]


@dataclass(frozen=True)
class WrapperInfo:
    name: str
    fn: Wrapper
    source: str
    inserts: bool = False  # adds lines of its own app (no server message in them)
    escapes: bool = False  # the server line is quoted / escaped in the wrapper's own syntax
    suffix: bool = False  # text stands after the server line (padding, "\r", "**", file:line)
    provenance: str = ""  # how well the shape is known: see PROVENANCE_LEVELS
    layer: str = ""  # where it sits, inside out: "app", "container", "host", "paste"
    separates: bool = False  # its own lines stand between the physical lines of one record

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()

    @property
    def title(self) -> str:
        """The docstring's first paragraph, on one line."""
        first = self.doc.split("\n\n")[0] if self.doc else self.name
        return " ".join(part.strip() for part in first.splitlines())


CATALOGUE: dict[str, WrapperInfo] = {}
WRAPPERS: dict[str, Wrapper] = {}


def _register(name: str, source: str, *, inserts: bool = False, escapes: bool = False,
              suffix: bool = False) -> Callable[[Wrapper], Wrapper]:
    def deco(fn: Wrapper) -> Wrapper:
        if name in CATALOGUE:
            raise ValueError(f"duplicate wrapper {name!r}")
        CATALOGUE[name] = WrapperInfo(name, fn, source, inserts, escapes, suffix)
        WRAPPERS[name] = fn
        return fn
    return deco


def compose(names: list[str] | tuple[str, ...], lines: list[str],
            rng: random.Random) -> list[str]:
    """Apply the wrappers ``names`` in a row, the first innermost.

    ``compose(["ansi_level", "docker_compose", "kubectl"], lines, rng)``: colour codes from the app,
    then the docker compose service column, then ``kubectl logs --timestamps`` in front of it all.
    """
    out = list(lines)
    for name in names:
        out = WRAPPERS[name](out, rng)
    return out


# --------------------------------------------------------------------------- clocks and helpers

_ZONES: list[tuple[int, str]] = [(0, "UTC"), (60, "CET"), (120, "CEST"), (-300, "EST"),
                                 (-420, "PDT"), (330, "IST"), (480, "CST"), (540, "JST")]


# colour codes, raw or as pasted (ESC shown as ^[ or ESC, or lost)
_ANSI_ANY = re.compile(r"(?:\x1b|\^\[|ESC)?\[[0-9;]*m")
_INNER_ABS = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
_INNER_MD = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) "
                       r"(\d\d):(\d\d):(\d\d)\b")
_INNER_REL = re.compile(r"(?:^|[\s|\]:>])(?:\x1b\[[\d;]*m)*(\d+)\.(\d\d)\.(\d{3})\.(\d{3})"
                        r"(?:\x1b\[[\d;]*m)* ")


class _Clock:
    """The wrapper's wall clock: monotonic, and consistent with the server's own timestamps.

    ``tick(line)`` stamps a bare line a few milliseconds after the time the line itself prints
    (SGLang / vLLM / Python ``YYYY-mm-dd HH:MM:SS``, vLLM's year-less ``MM-DD HH:MM:SS`` in the
    clock's year, llama-server's ``M.SS.mmm.uuu`` since start added to a random start); a line
    without a timestamp (or ``follow=False``) gets a small random step. The random start is in
    2025/2026 (in one of ``months`` if given); local times are in ``zone``.
    """

    def __init__(self, rng: random.Random, months: list[int] | None = None,
                 zone: tuple[int, str] | None = None, follow: bool = True) -> None:
        self.rng = rng
        self.follow = follow
        month = rng.choice(months) if months else rng.randint(1, 12)
        start = datetime(rng.choice([2025, 2026]), month, rng.randint(1, 28), rng.randint(0, 23),
                         rng.randint(0, 59), rng.randint(0, 59))
        self.zone = zone or rng.choice(_ZONES)
        self.tz = timezone(timedelta(minutes=self.zone[0]))
        self.ns = int(start.replace(tzinfo=self.tz).timestamp()) * 10**9 + rng.randint(0, 10**9 - 1)
        self.base = self.ns  # llama-server's relative clock starts here
        self.last_rel = -1
        self.started = False

    def _local_ns(self, y: int, mo: int, d: int, h: int, mi: int, sec: int, us: int) -> int | None:
        try:
            dt = datetime(y, mo, d, h, mi, sec, us, tzinfo=self.tz)
        except ValueError:
            return None
        return int(dt.timestamp()) * 10**9 + us * 1000

    def _inner(self, line: str) -> int | None:
        head = _ANSI_ANY.sub("", line[:160])[:120]
        if m := _INNER_REL.search(head):
            mins, secs, ms, us = (int(g) for g in m.groups())
            rel = ((mins * 60 + secs) * 10**6 + ms * 1000 + us) * 1000
            if rel < self.last_rel:  # a new server run: its clock restarts at 0
                self.base = self.ns - rel
            self.last_rel = rel
            return self.base + rel
        if m := _INNER_ABS.search(head):
            y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
            frac = (m.group(7) or "").ljust(6, "0")
            return self._local_ns(y, mo, d, h, mi, sec, int(frac))
        if m := _INNER_MD.search(head):
            mo, d, h, mi, sec = (int(g) for g in m.groups())
            return self._local_ns(self.now().year, mo, d, h, mi, sec, 0)
        return None

    def tick(self, line: str | None = None) -> datetime:
        inner = self._inner(line) if line is not None and self.follow else None
        if inner is not None and self.started and inner < self.ns - 86_400 * 10**9:
            inner = None  # a day back: another clock (an app's own lines), not the server's
        if inner is None:
            target = self.ns + self.rng.randint(0, 350_000_000)
        else:
            target = inner + self.rng.randint(20_000, 40_000_000)  # written a little later
        self.ns = max(self.ns + 1000, target) if self.started else target
        self.started = True
        return self.now()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ns // 10**9, UTC).astimezone(self.tz).replace(
            microsecond=(self.ns % 10**9) // 1000)

    @property
    def nanos(self) -> int:
        return self.ns % 10**9


def _offset(dt: datetime, colon: bool = True) -> str:
    off = dt.utcoffset() or timedelta(0)
    mins = int(off.total_seconds() // 60)
    sign = "+" if mins >= 0 else "-"
    h, m = divmod(abs(mins), 60)
    return f"{sign}{h:02d}:{m:02d}" if colon else f"{sign}{h:02d}{m:02d}"


def _rfc3339nano(clock: _Clock, utc: bool = True) -> str:
    """Go's ``time.RFC3339Nano``: trailing zeros of the fraction trimmed, dot dropped if none."""
    dt = clock.now()
    if utc:
        dt = dt.astimezone(UTC)
    frac = f"{clock.nanos:09d}".rstrip("0")
    base = dt.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "")
    return base + ("Z" if utc else _offset(dt))


def _go_json_string(s: str) -> str:
    """A string as Go's ``encoding/json`` writes it (HTML-safe escaping, raw non-ASCII)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (what slog's text handler does to a value with spaces)."""
    esc = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
           "\v": "\\v", '"': '\\"', "\\": "\\\\"}
    out = ['"']
    for ch in s:
        if ch in esc:
            out.append(esc[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable() and ch != " ":
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _interleave(lines: list[str], rng: random.Random, make: Callable[[], str],
                rate: float) -> list[str]:
    """Insert ``make()`` lines between the bare ones, about ``rate`` per bare line.

    Never before a continuation line (one that starts with a space, a tab or ``\r``, like the
    lines of llama-server's multi-line summary): a record written at once stays together.
    """
    out: list[str] = []
    for ln in lines:
        body = ln[1:] if ln[:1] in ("\0", "\1") else ln
        if body[:1] not in (" ", "\t", "\r"):
            while rng.random() < rate:
                out.append(make())
        out.append(ln)
    return out


_MODELS = ["Qwen3-30B-A3B-Q4_K_M.gguf", "gemma-3-27b-it-Q5_K_S.gguf",
           "Mistral-Small-3.2-24B-Instruct-Q6_K.gguf", "GLM-4.5-Air-IQ4_XS-00001-of-00002.gguf",
           "Llama-3.3-70B-Instruct-Q3_K_L.gguf"]
_HOSTS = ["gpu-box", "tower", "ml01", "rig-3090", "nuc", "homelab", "dgx-a7", "srv-ai"]

_ENGINE_WORDS = (("sglang", ("sglang", "Prefill batch", "Decode batch", "TP0]", "new fill batch")),
                 ("vllm", ("vllm", "vLLM", "Avg prompt throughput", "llm_engine.py")),
                 ("llama", ("llama", "print_timing", "slot ", "ggml_")))


def _engine(lines: list[str]) -> str:
    """Which server the lines look like (to name services and units plausibly)."""
    head = "\n".join(lines[:400])
    counts = {e: sum(head.count(w) for w in words) for e, words in _ENGINE_WORDS}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else "llm"


_NAMES = {  # unit / service / container names per engine
    "llama": ["llama-server", "llama-server@qwen", "llama", "llama-cpp"],
    "vllm": ["vllm", "vllm-openai", "vllm@qwen", "vllm-serve"],
    "sglang": ["sglang", "sglang-server", "sglang@dsv3"],
    "llm": ["inference", "llm", "python3", "start.sh"],
}


def _unit_name(lines: list[str], rng: random.Random) -> str:
    return rng.choice(_NAMES[_engine(lines)] + ["python3", "start.sh", "docker"])


# lines of a wrapper's own app: benign (no figure anchor), so an inserted line is never "drift"
_APP_MESSAGES = [
    "Checking server health", "Health check OK", "Polling /health", "UI state saved",
    "Model status: ready", "Watching config file for changes", "Settings loaded from profile",
    "Request forwarded to backend", "Connection pool: 2 idle", "Heartbeat",
]


# ------------------------------------------------------------------------------ GUI launchers


@_register("gui_launcher", "issue 12 (a desktop launcher that logs the server's stderr)")
def gui_launcher(lines: list[str], rng: random.Random) -> list[str]:
    """GUI launcher: ``YYYY-mm-dd HH:MM:SS.mmm [Info] (Process) `` before every line.

    ``2026-06-10 20:02:40.771 [Info] (Process) 2.16.615.729 I slot print_timing: id  0 | ...``
    """
    c = _Clock(rng)
    out = []
    for ln in lines:
        t = c.tick(ln)
        out.append(f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} [Info] (Process) {ln}")
    return out


@_register("leading_space_app", "issue 12 (a launcher printing child lines with one leading "
           "space between its own DEBUG lines)", inserts=True)
def leading_space_app(lines: list[str], rng: random.Random) -> list[str]:
    """Leading single space + interleaved app lines ``YYYY-mm-dd HH:MM:SS [DEBUG] ...``.

    `` 0.43.150.974 I slot print_timing: id  0 | ...`` between
    ``2026-06-05 10:33:08 [DEBUG] Checking server health``
    """
    c = _Clock(rng)

    def app() -> str:
        return f"{c.tick():%Y-%m-%d %H:%M:%S} [DEBUG] {rng.choice(_APP_MESSAGES)}"

    marked = _interleave(["\0" + ln for ln in lines], rng, app, 0.3)
    return [" " + ln[1:] if ln.startswith("\0") else ln for ln in marked]


@_register("lmstudio", "LM Studio bug-tracker threads (developer log, verbose: a header line "
           "before every engine line, the line itself with a leading space)", inserts=True)
def lmstudio(lines: list[str], rng: random.Random) -> list[str]:
    """LM Studio developer log: ``YYYY-mm-dd HH:MM:SS [DEBUG]`` on a line of its own before every
    engine line, which follows with one leading space; LM Studio's own messages look the same.

    ``2026-06-04 13:20:06 [DEBUG]`` then `` 81.57.876.593 I slot print_timing: id  0 | ...``
    """
    c = _Clock(rng)
    out: list[str] = []
    for ln in lines:
        if ln[:1] not in (" ", "\t", "\r") and rng.random() < 0.04:
            t = c.tick()
            out += [f"{t:%Y-%m-%d %H:%M:%S} [DEBUG]",
                    f" LlamaV4: {rng.choice(_APP_MESSAGES).lower()}"]
        out += [f"{c.tick(ln):%Y-%m-%d %H:%M:%S} [DEBUG]", f" {ln}"]
    return out


@_register("launcher_brackets", "a launcher's `[time][DEBUG] ` prefix with its own INFO lines "
           "(approximated)", inserts=True)
def launcher_brackets(lines: list[str], rng: random.Random) -> list[str]:
    """Launcher with ``[YYYY-mm-dd HH:MM:SS][DEBUG] `` on engine lines, its own INFO lines.

    ``[2026-02-11 18:04:51][DEBUG] slot print_timing: id  0 | task 12 | ...``
    """
    c = _Clock(rng)

    def app() -> str:
        return (f"[{c.tick():%Y-%m-%d %H:%M:%S}][INFO][LAUNCHER] "
                f"{rng.choice(_APP_MESSAGES)}")

    marked = _interleave(["\0" + ln for ln in lines], rng, app, 0.1)
    return [f"[{c.tick(ln[1:]):%Y-%m-%d %H:%M:%S}][DEBUG] {ln[1:]}" if ln.startswith("\0") else ln
            for ln in marked]


@_register("textgen_webui", "text-generation-webui console (its `HH:MM:SS-ffffff LEVEL` logger)")
def textgen_webui(lines: list[str], rng: random.Random) -> list[str]:
    """text-generation-webui logger: ``HH:MM:SS-ffffff INFO     `` before the child line.

    ``18:25:21-590285 INFO     0.43.150.974 I slot print_timing: id  0 | ...``
    """
    c = _Clock(rng)
    return [f"{(t := c.tick(ln)):%H:%M:%S}-{t.microsecond:06d} INFO     {ln}" for ln in lines]


@_register("jan", "Jan desktop app log (tauri llamacpp plugin; shape approximated)")
def jan(lines: list[str], rng: random.Random) -> list[str]:
    """Jan app log: ``[YYYY-mm-dd][HH:MM:SS][tauri_plugin_llamacpp::commands][INFO] [llamacpp] ``.

    ``[2026-04-02][09:14:03][tauri_plugin_llamacpp::commands][INFO] [llamacpp] srv  ...``
    """
    c = _Clock(rng)
    return [f"[{(t := c.tick(ln)):%Y-%m-%d}][{t:%H:%M:%S}][tauri_plugin_llamacpp::commands][INFO] "
            f"[llamacpp] {ln}" for ln in lines]


# ----------------------------------------------------------------------------- journald family

_MONTHS = {
    "en": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
    "de": ["Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"],
    "es": ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sep", "oct", "nov", "dic"],
    "it": ["gen", "feb", "mar", "apr", "mag", "giu", "lug", "ago", "set", "ott", "nov", "dic"],
    "fr": ["janv.", "févr.", "mars", "avril", "mai", "juin", "juil.", "août", "sept.", "oct.",
           "nov.", "déc."],
    "nl": ["jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"],
    "pt": ["jan", "fev", "mar", "abr", "mai", "jun", "jul", "ago", "set", "out", "nov", "dez"],
}
# months whose abbreviation differs from English, per locale (the ones a parser can trip on)
_ODD_MONTHS = {"de": [3, 5, 10, 12], "es": [1, 4, 8, 12], "it": [1, 5, 6, 8, 12],
               "fr": [2, 7, 8, 12], "nl": [3, 5, 10], "pt": [2, 5, 9, 10, 12]}
_WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def _journal(lines: list[str], rng: random.Random, stamp: Callable[[_Clock], str],
             host: str | None = None, ident: str | None = None,
             months: list[int] | None = None) -> list[str]:
    # a localised journal keeps its own (odd-month) clock instead of following the server's
    c = _Clock(rng, months=months, follow=months is None)
    host = rng.choice(_HOSTS) if host is None else host
    ident = ident or _unit_name(lines, rng)
    pid = rng.randint(300, 99999)
    sep = " " if host else ""
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"{stamp(c)} {host}{sep}{ident}[{pid}]: {ln}")
    return out


def _short(c: _Clock, loc: str = "en") -> str:
    t = c.now()
    return f"{_MONTHS[loc][t.month - 1]} {t:%d %H:%M:%S}"


@_register("journald_short", "`journalctl` default output; the vLLM format notes quote one")
def journald_short(lines: list[str], rng: random.Random) -> list[str]:
    """journald short: ``Mon DD HH:MM:SS host ident[pid]: ``.

    ``Jun 18 08:57:40 gpu-box llama-server[1351]: 0.43.150.974 I slot print_timing: ...``
    """
    return _journal(lines, rng, _short)


@_register("journald_odd_ident", "issue 12 (empty hostname, identifier ending in a colon)")
def journald_odd_ident(lines: list[str], rng: random.Random) -> list[str]:
    """journald short with an empty host field (double space) and an odd identifier.

    ``Jun 18 08:57:40  llama-Qwen:[1351]: 0.43.150.974 I slot print_timing: ...``
    """
    ident = rng.choice(["llama-Qwen:", "llama.cpp-gemma", "run_llm.sh", "llama-swap:",
                        "vllm-serve@0", "sglang.launch_server"])
    return _journal(lines, rng, _short, host="", ident=ident)


def _journald_locale(loc: str) -> Wrapper:
    def wrap(lines: list[str], rng: random.Random) -> list[str]:
        return _journal(lines, rng, lambda c: _short(c, loc), months=_ODD_MONTHS[loc])
    return wrap


_LOCALE_EXAMPLES = {"de": "Okt 03", "es": "ago 05", "it": "dic 12", "fr": "déc. 09",
                    "nl": "mei 21", "pt": "out 14"}
for _loc, _ex in _LOCALE_EXAMPLES.items():
    _fn = _journald_locale(_loc)
    _fn.__name__ = f"journald_{_loc}"
    _fn.__doc__ = (f"journald short with {_loc} month names ({', '.join(_MONTHS[_loc])}).\n\n"
                   f"``{_ex} 08:57:40 gpu-box llama-server[1351]: 0.43.150.974 I slot ...``")
    _register(f"journald_{_loc}", f"journalctl under LANG={_loc}_* (glibc month "
              "abbreviations); issue 12 names `Mai`, `ago`, `déc.`")(_fn)


@_register("journald_short_iso", "`journalctl -o short-iso` (the llama-server journald fixture "
           "has its precise form)")
def journald_short_iso(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-iso: ``YYYY-mm-ddTHH:MM:SS+hh:mm host ident[pid]: ``.

    ``2026-03-11T07:52:18+01:00 gpu-box vllm[2214]: INFO 03-11 07:52:18 [loggers.py:118] ...``
    """
    colon = rng.random() < 0.5  # systemd < 250 prints +0100
    return _journal(lines, rng,
                    lambda c: f"{c.now():%Y-%m-%dT%H:%M:%S}{_offset(c.now(), colon)}")


@_register("journald_short_precise", "`journalctl -o short-precise`")
def journald_short_precise(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-precise: ``Mon DD HH:MM:SS.ffffff host ident[pid]: ``.

    ``Jun 18 08:57:40.123456 gpu-box llama-server[12]: 0.43.150.974 I slot ...``
    """
    return _journal(lines, rng, lambda c: f"{_short(c)}.{c.now().microsecond:06d}")


@_register("journald_short_iso_precise", "`journalctl -o short-iso-precise`")
def journald_short_iso_precise(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-iso-precise: ``YYYY-mm-ddTHH:MM:SS.ffffff+hh:mm host ident[pid]: ``.

    ``2026-03-11T07:52:18.204913+01:00 gpu-box sglang[2214]: [2026-03-11 07:52:18] Decode ...``
    """
    return _journal(lines, rng, lambda c: f"{c.now():%Y-%m-%dT%H:%M:%S.%f}{_offset(c.now())}")


@_register("journald_short_full", "`journalctl -o short-full`")
def journald_short_full(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-full: ``Www YYYY-mm-dd HH:MM:SS TZ host ident[pid]: ``.

    ``Thu 2026-06-18 08:57:40 CEST gpu-box llama-server[1351]: 0.43.150.974 I slot ...``
    """
    def stamp(c: _Clock) -> str:
        t = c.now()
        return f"{_WEEKDAYS[t.weekday()]} {t:%Y-%m-%d %H:%M:%S} {c.zone[1]}"
    return _journal(lines, rng, stamp)


@_register("journald_short_monotonic", "`journalctl -o short-monotonic`")
def journald_short_monotonic(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-monotonic: ``[ secs.ffffff] host ident[pid]: `` (time since boot).

    ``[ 8123.456789] gpu-box llama-server[1351]: 0.43.150.974 I slot ...``
    """
    c = _Clock(rng)
    start = c.ns // 1000 - rng.randint(30, 900000) * 10**6  # boot time, in microseconds
    host, ident, pid = rng.choice(_HOSTS), _unit_name(lines, rng), rng.randint(300, 99999)
    out = []
    for ln in lines:
        c.tick(ln)
        us = c.ns // 1000 - start
        out.append(f"[{us // 10**6:5d}.{us % 10**6:06d}] {host} {ident}[{pid}]: {ln}")
    return out


@_register("journald_short_unix", "`journalctl -o short-unix`")
def journald_short_unix(lines: list[str], rng: random.Random) -> list[str]:
    """journalctl -o short-unix: ``secs.ffffff host ident[pid]: ``.

    ``1781772660.123456 gpu-box vllm[12]: INFO 06-18 08:57:40 [loggers.py:118] Engine 000: ...``
    """
    return _journal(lines, rng, lambda c: f"{c.ns // 10**9}.{c.now().microsecond:06d}")


@_register("rsyslog_traditional", "/var/log/syslog (rsyslog traditional file format)")
def rsyslog_traditional(lines: list[str], rng: random.Random) -> list[str]:
    """rsyslog traditional: ``Mon _D HH:MM:SS host ident[pid]: `` (day padded with a space).

    ``Jun  8 08:57:40 gpu-box llama-server[1351]: 0.43.150.974 I slot ...``
    """
    def stamp(c: _Clock) -> str:
        t = c.now()
        return f"{_MONTHS['en'][t.month - 1]} {t.day:2d} {t:%H:%M:%S}"
    return _journal(lines, rng, stamp)


@_register("syslog_rfc5424", "syslog over the network / rsyslog RFC5424 templates")
def syslog_rfc5424(lines: list[str], rng: random.Random) -> list[str]:
    """syslog RFC 5424: ``<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG``.

    ``<14>1 2026-01-02T03:04:05.123456+00:00 gpu-box llama-server 1351 - - 0.43.150.974 I ...``
    """
    c = _Clock(rng)
    host, app, pid = rng.choice(_HOSTS), _unit_name(lines, rng), rng.randint(300, 99999)
    sd = rng.choice(["-", '[meta sequenceId="1"]'])
    out = []
    for i, ln in enumerate(lines):
        t = c.tick(ln)
        pri = rng.choice([14, 11, 30, 134])
        sdi = sd.replace('"1"', f'"{i + 1}"')
        out.append(f"<{pri}>1 {t:%Y-%m-%dT%H:%M:%S.%f}{_offset(t)} {host} {app} {pid} - {sdi} {ln}")
    return out


@_register("syslog_rfc3164", "syslog received on the network (BSD syslog with PRI)")
def syslog_rfc3164(lines: list[str], rng: random.Random) -> list[str]:
    """BSD syslog RFC 3164 with PRI: ``<PRI>Mon DD HH:MM:SS host ident[pid]: ``.

    ``<30>Jun 18 08:57:40 gpu-box llama-server[1351]: 0.43.150.974 I slot ...``
    """
    return _journal(lines, rng, lambda c: f"<{rng.choice([30, 27, 134])}>{_short(c)}")


# ------------------------------------------------------------------------------------- LocalAI


@_register("localai_grpc_quoted", "LocalAI issue threads (logger quoting the backend's stderr)",
           inserts=True, escapes=True, suffix=True)
def localai_grpc_quoted(lines: list[str], rng: random.Random) -> list[str]:
    """LocalAI quoting the backend line: ``DEBUG GRPC stderr id="..." line="<\\" escaped>" ...``.

    ``Aug 05 15:27:04 DEBUG GRPC stderr id="model.gguf-127.0.0.1:42043" line="3.28.844.467 I slot
    print_timing: ..." caller={caller.file="/build/pkg/model/process.go"  caller.L=219 } ``
    """
    c = _Clock(rng)
    model = rng.choice(_MODELS)
    port = rng.randint(30000, 60000)
    lno = rng.randint(150, 260)

    def app() -> str:
        return (f"{_short(c)} DEBUG [WatchDog] Watchdog checks for idle connections "
                f'caller={{caller.file="/build/pkg/model/watchdog.go"  caller.L={lno + 300} }} ')

    def quote(s: str) -> str:
        return s.replace("\\", "\\\\").replace('"', '\\"')

    out = []
    for ln in _interleave(["\0" + ln for ln in lines], rng, app, 0.15):
        if ln.startswith("\0"):
            c.tick(ln[1:])
            out.append(f'{_short(c)} DEBUG GRPC stderr id="{model}-127.0.0.1:{port}" '
                       f'line="{quote(ln[1:])}" caller={{caller.file="/build/pkg/model/process.go"'
                       f"  caller.L={lno} }} ")
        else:
            out.append(ln)
    return out


@_register("localai_grpc_legacy",
           "LocalAI issue threads (zerolog console, 2023-2024, also under compose)")
def localai_grpc_legacy(lines: list[str], rng: random.Random) -> list[str]:
    """LocalAI zerolog console: ``H:MMPM DBG GRPC(<model>-127.0.0.1:<port>): stderr ``.

    ``12:47AM DBG GRPC(Qwen3-30B-A3B-Q4_K_M.gguf-127.0.0.1:38219): stderr slot print_timing: ...``
    """
    c = _Clock(rng)
    model = rng.choice(_MODELS)
    port = rng.randint(30000, 60000)
    out = []
    for ln in lines:
        t = c.tick(ln)
        h = t.hour % 12 or 12
        out.append(f"{h}:{t:%M}{'AM' if t.hour < 12 else 'PM'} DBG GRPC({model}-127.0.0.1:"
                   f"{port}): stderr {ln}")
    return out


@_register("docker_desktop",
           "Docker Desktop log view copy (local timestamp column; LocalAI threads)")
def docker_desktop(lines: list[str], rng: random.Random) -> list[str]:
    """Docker Desktop log pane: ``YYYY-mm-dd HH:MM:SS `` (local time) before each line.

    ``2026-09-27 07:04:23 INFO 09-27 07:04:23 [loggers.py:118] Engine 000: ...``
    """
    c = _Clock(rng)
    return [f"{c.tick(ln):%Y-%m-%d %H:%M:%S} {ln}" for ln in lines]


# --------------------------------------------------------------------------- paste and terminal


@_register("indent2", "GitHub / forum pastes indented as a code block or list item")
def indent2(lines: list[str], rng: random.Random) -> list[str]:
    """Two-space indentation on every line.

    ``  [2025-03-19 14:10:08 TP0] Prefill batch. #new-seq: 3, ...``
    """
    return ["  " + ln for ln in lines]


@_register("indent_tab", "pastes indented with a tab (mail clients, markdown code blocks)")
def indent_tab(lines: list[str], rng: random.Random) -> list[str]:
    """A tab before every line.

    ``\\tINFO 04-22 14:12:05 [loggers.py:87] Engine 000: ...``
    """
    return ["\t" + ln for ln in lines]


@_register("markdown_quote", "forum / GitHub quote blocks (`> ` on each line)")
def markdown_quote(lines: list[str], rng: random.Random) -> list[str]:
    """Markdown quote: ``> `` before every line.

    ``> INFO 04-22 14:12:05 [loggers.py:87] Engine 000: Avg prompt throughput: ...``
    """
    return ["> " + ln for ln in lines]


@_register("markdown_bold", "issue threads pasting one warning in bold (`**...**`)", suffix=True)
def markdown_bold(lines: list[str], rng: random.Random) -> list[str]:
    """Markdown bold around the whole line: ``**<line>**``.

    ``**WARNING 10-02 09:14:20 scheduler.py:1089] Sequence group 12 is preempted by ...**``
    """
    return [f"**{_body(ln)}**{_cr(ln)}" if _body(ln).strip() else ln for ln in lines]


@_register("gutter_cat_n", "`cat -n` output pasted")
def gutter_cat_n(lines: list[str], rng: random.Random) -> list[str]:
    """cat -n gutter: ``%6d\\t`` before every line, numbered from 1.

    ``   683\\tINFO 09-07 16:35:54 [metrics.py:433] Avg prompt throughput: ...``
    """
    return [f"{i:6d}\t{ln}" for i, ln in enumerate(lines, 1)]


@_register("gutter_editor", "issue 12 (an editor / viewer copy with line numbers)")
def gutter_editor(lines: list[str], rng: random.Random) -> list[str]:
    """Editor gutter: ``N `` (no padding) from a line in the middle of the file.

    ``683 INFO 09-07 16:35:54 [metrics.py:433] Avg prompt throughput: ...``
    """
    start = rng.randint(1, 5000)
    return [f"{i} {ln}" for i, ln in enumerate(lines, start)]


@_register("gutter_less_n", "`less -N` screen copy")
def gutter_less_n(lines: list[str], rng: random.Random) -> list[str]:
    """less -N gutter: ``%7d `` before every line.

    ``    683 INFO 09-07 16:35:54 [metrics.py:433] Avg prompt throughput: ...``
    """
    start = rng.randint(1, 900)
    return [f"{i:7d} {ln}" for i, ln in enumerate(lines, start)]


@_register("gutter_pipe", "issue 27 residue / public vLLM threads (a log viewer's numbered copy)")
def gutter_pipe(lines: list[str], rng: random.Random) -> list[str]:
    """Log viewer gutter: the line number right-aligned in a column, then `` | ``.

    ``  12 | INFO 10-02 09:14:03 metrics.py:351] Avg prompt throughput: 4102.7 tokens/s, ...``
    """
    start = rng.randint(1, 400)
    width = max(4, len(str(start + len(lines))))
    return [f"{i:{width}d} | {ln}" for i, ln in enumerate(lines, start)]


def _body(ln: str) -> str:
    """The line without the ``\r`` of a CRLF source (a suffix goes before it)."""
    return ln[:-1] if ln.endswith("\r") else ln


def _cr(ln: str) -> str:
    return "\r" if ln.endswith("\r") else ""


def _pad(ln: str, width: int) -> str:
    body = _body(ln)
    n = len(body)
    target = width if n <= width else -(-n // width) * width
    return body + " " * (target - n) + _cr(ln)


@_register("trailing_spaces_120", "issue 12 (terminal copy padding to the window width)",
           suffix=True)
def trailing_spaces_120(lines: list[str], rng: random.Random) -> list[str]:
    """Trailing spaces to 120 columns (or the next multiple of 120 for longer lines).

    ``0.47.000.000 I slot get_availabl: id  1 | task -1 | selected slot by LRU, t_last = -1    ``
    """
    return [_pad(ln, 120) for ln in lines]


@_register("trailing_spaces_200", "terminal copy from a wide window", suffix=True)
def trailing_spaces_200(lines: list[str], rng: random.Random) -> list[str]:
    """Trailing spaces to 200 columns (or the next multiple of 200).

    ``[2025-03-19 14:10:19 TP0] Decode batch. #running-req: 12, ...                     ``
    """
    return [_pad(ln, 200) for ln in lines]


@_register("tmux_capture", "`tmux capture-pane -J` / GNU screen hardcopy", inserts=True,
           suffix=True)
def tmux_capture(lines: list[str], rng: random.Random) -> list[str]:
    """tmux/screen capture: lines padded to the pane width (kept whole), shell prompt around.

    ``user@gpu-box:~$ ./llama-server -m model.gguf`` then padded server lines
    """
    width = rng.choice([159, 191, 211, 238])
    host = rng.choice(_HOSTS)
    prompt = f"user@{host}:~$ "
    head = [_pad(prompt + rng.choice(["./run.sh", "docker compose up", "tail -f server.log"]),
                 width)]
    return head + [_pad(ln, width) for ln in lines] + [_pad(prompt, width)]


@_register("crlf", "Windows consoles and Notepad saves (CRLF line ends)", suffix=True)
def crlf(lines: list[str], rng: random.Random) -> list[str]:
    """CRLF: a ``\\r`` at the end of every line (the ``\\n`` is added by the writer).

    ``INFO 04-22 14:12:05 [loggers.py:87] Engine 000: Avg prompt throughput: ...\\r``
    """
    return [ln if ln.endswith("\r") else ln + "\r" for ln in lines]


@_register("windows_service", "NSSM / Windows service wrappers (bracketed local time, CRLF)",
           suffix=True)
def windows_service(lines: list[str], rng: random.Random) -> list[str]:
    """Windows service / NSSM-style: ``[YYYY-mm-dd HH:MM:SS] `` and CRLF.

    ``[2026-01-02 03:04:05] 0.43.150.974 I slot print_timing: id  0 | ...\\r``
    """
    c = _Clock(rng)
    return [f"[{c.tick(ln):%Y-%m-%d %H:%M:%S}] {_body(ln)}\r" for ln in lines]


# -------------------------------------------------------------------------------- ANSI colours

_LEVEL_RE = re.compile(r"(?<![\w.])(INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|[IWEDT])(?=[\s:])")
_ANSI_LEVEL = {"INFO": "32", "WARNING": "33", "WARN": "33", "ERROR": "31", "DEBUG": "37",
               "CRITICAL": "35", "I": "32", "W": "35", "E": "31", "D": "33", "T": "37"}


@_register("ansi_line", "coloured terminals (`--log-colors`, rich consoles) pasted raw")
def ansi_line(lines: list[str], rng: random.Random) -> list[str]:
    """ANSI colour around the whole line: ``\\x1b[32m<line>\\x1b[0m``.

    ``\\x1b[32mINFO 04-22 14:12:05 [loggers.py:87] Engine 000: ...\\x1b[0m``
    """
    colour = rng.choice(["32", "36", "1;37", "0;33"])
    return [f"\x1b[{colour}m{ln}\x1b[0m" if ln else ln for ln in lines]


@_register("ansi_level", "vLLM ColoredFormatter / llama.cpp --log-colors (colour on the level)")
def ansi_level(lines: list[str], rng: random.Random) -> list[str]:
    """ANSI colour around the level word (or the first token when there is none).

    ``\\x1b[32mINFO\\x1b[0m 04-22 14:12:05 [loggers.py:87] Engine 000: ...``
    """
    out = []
    for ln in lines:
        m = _LEVEL_RE.search(ln, 0, 80)
        if m:
            code = _ANSI_LEVEL[m.group(1)]
            out.append(f"{ln[:m.start()]}\x1b[{code}m{m.group(1)}\x1b[0m{ln[m.end():]}")
        elif ln.startswith("[") and "] " in ln[:80]:
            end = ln.index("] ") + 1
            out.append(f"\x1b[90m{ln[:end]}\x1b[0m{ln[end:]}")
        elif ln:
            head, sep, rest = ln.partition(" ")
            out.append(f"\x1b[90m{head}\x1b[0m{sep}{rest}")
        else:
            out.append(ln)
    return out


@_register("ansi_caret", "pastes where ESC became visible (`less`/`cat -v` `^[[...m`, lost ESC)")
def ansi_caret(lines: list[str], rng: random.Random) -> list[str]:
    """Colour codes with a visible or lost ESC: ``^[[32m`` or ``[32m`` around the line.

    ``^[[1;36m(APIServer pid=9)^[[0;0m INFO 06-30 ...`` style, here around the whole line
    """
    esc = rng.choice(["^[", "", "ESC"])
    return [f"{esc}[1;36m{ln}{esc}[0;0m" if ln else ln for ln in lines]


# --------------------------------------------------------------------------- Ray / distributed

_RAY_ACTORS = ["RayWorkerWrapper", "WorkerDict", "LLMServer", "RolloutWorker",
               "ServeReplica:default:LLMDeployment", "AsyncActorRollout"]


@_register("ray_actor", "issue 12 / Ray actor stdout prefix (verl, OpenRLHF, Ray Serve)")
def ray_actor(lines: list[str], rng: random.Random) -> list[str]:
    """Ray actor prefix: ``(Actor pid=N) `` or ``(Actor pid=N, ip=10.x.x.x) ``.

    ``(WorkerDict pid=41820, ip=10.0.3.7) [2026-03-22 13:53:37 TP0] Decode batch, ...``
    """
    actor = rng.choice(_RAY_ACTORS)
    pid = rng.randint(1000, 99999)
    ip = f", ip=10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    tag = f"({actor} pid={pid}{ip if rng.random() < 0.5 else ''}) "
    return [tag + ln for ln in lines]


@_register("ray_nested", "Ray Data / vLLM batch inference threads (nested actor names, the "
           "stage's own `[vLLM] Elapsed time for batch` lines between)", inserts=True)
def ray_nested(lines: list[str], rng: random.Random) -> list[str]:
    """Ray Data actor with nested parentheses in its name, its own batch-timing lines between.

    ``(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=20874) INFO 07-27 22:30:35 [loggers.py:118]``
    and ``(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=20874) [vLLM] Elapsed time for batch
    4c1d... with size 16: 20.36``
    """
    name = rng.choice(["MapWorker(MapBatches(vLLMEngineStageUDF))",
                       "MapWorker(MapBatches(SGLangEngineStageUDF))",
                       "_MapWorker(MapBatches(LLMPredictor))"])
    pid = rng.randint(1000, 99999)
    stage = "SGLang" if "SGLang" in name else "vLLM"

    def app() -> str:
        return (f"[{stage}] Elapsed time for batch {rng.getrandbits(128):032x} with size "
                f"{rng.choice([8, 10, 16, 32])}: {rng.uniform(1, 40)!r}")

    return [f"({name} pid={pid}) {ln}" for ln in _interleave(lines, rng, app, 0.15)]


@_register("ray_worker_chain", "vLLM on a Ray cluster (worker output re-emitted through the "
           "engine process: two actor prefixes)")
def ray_worker_chain(lines: list[str], rng: random.Random) -> list[str]:
    """Two process prefixes in a row: ``(EngineCore pid=N) (RayWorkerProc pid=M) ``.

    ``(EngineCore pid=925) (RayWorkerProc pid=8272) INFO 06-05 14:58:46 [gpu_worker.py:88] ...``
    """
    outer = rng.choice(["EngineCore", "EngineCore_DP0", "APIServer"])
    inner = rng.choice(["RayWorkerProc", "RayWorkerWrapper", "Worker_TP1"])
    p1, p2 = rng.randint(100, 9999), rng.randint(100, 99999)
    node = rng.random() < 0.5
    ip = f", ip=10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}" if node else ""
    return [f"({outer} pid={p1}) ({inner} pid={p2}{ip}) {ln}" for ln in lines]


@_register("skypilot", "SkyPilot `sky logs` (task prefix)")
def skypilot(lines: list[str], rng: random.Random) -> list[str]:
    """SkyPilot task log: ``(task, pid=N) ``.

    ``(task, pid=2041) INFO 04-22 14:12:05 [loggers.py:87] Engine 000: ...``
    """
    name = rng.choice(["task", "run", "serve-replica", "setup"])
    pid = rng.randint(1000, 99999)
    return [f"({name}, pid={pid}) {ln}" for ln in lines]


@_register("slurm_label", "`srun --label` multi-node launches")
def slurm_label(lines: list[str], rng: random.Random) -> list[str]:
    """srun --label: ``<task>: `` before each line.

    ``0: INFO 04-22 14:12:05 [loggers.py:87] Engine 000: ...``
    """
    task = rng.choice([0, 0, 1, 3])
    return [f"{task}: {ln}" for ln in lines]


@_register("mpirun_tag", "`mpirun --tag-output` (Open MPI)")
def mpirun_tag(lines: list[str], rng: random.Random) -> list[str]:
    """Open MPI --tag-output: ``[job,rank]<stream>:`` glued to the line (no space).

    ``[1,0]<stderr>:[2025-03-19 14:10:08 TP0] Prefill batch. ...``
    """
    job, rank = rng.randint(1, 9), rng.choice([0, 0, 1])
    stream = rng.choice(["stdout", "stderr"])
    return [f"[{job},{rank}]<{stream}>:{ln}" for ln in lines]


@_register("torchrun_tee", "torchrun `--tee` / `--local-ranks-filter` output")
def torchrun_tee(lines: list[str], rng: random.Random) -> list[str]:
    """torchrun rank prefix glued to the line: ``[default0]:`` or ``[rank0]:``.

    ``[default0]:INFO 04-22 14:12:05 [loggers.py:87] Engine 000: ...``
    """
    tag = rng.choice(["[default0]:", "[rank0]:", "[default1]:"])
    return [tag + ln for ln in lines]


# ------------------------------------------------------------------------------ Python logging


@_register("pylog_comma_pid", "issue 12 (SGLang under a user's logging config, verl launchers)")
def pylog_comma_pid(lines: list[str], rng: random.Random) -> list[str]:
    """Python logging ``%(asctime)s %(levelname)s %(process)d [%(filename)s:%(lineno)d] ``.

    ``2025-10-20 03:02:22,512 INFO 31223 [server_proc.py:222] [2025-10-20 03:02:22 TP0] Decode ...``
    """
    c = _Clock(rng)
    pid = rng.randint(1000, 99999)
    src = rng.choice(["server_proc.py:222", "launcher.py:88", "rollout.py:415"])
    return [f"{(t := c.tick(ln)):%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} INFO {pid} "
            f"[{src}] {ln}" for ln in lines]


@_register("pylog_brackets", "issue 12 (`[asctime][file:line][LEVEL]: ` logging configs)")
def pylog_brackets(lines: list[str], rng: random.Random) -> list[str]:
    """Python logging ``[%(asctime)s][%(filename)s:%(lineno)d][%(levelname)s]: ``.

    ``[2026-04-15 17:13:10][engine_runner.py:424][INFO]: [2026-04-15 17:13:10] Prefill batch ...``
    """
    c = _Clock(rng)
    src = rng.choice(["engine_runner.py:424", "proc.py:61", "serve.py:133"])
    return [f"[{c.tick(ln):%Y-%m-%d %H:%M:%S}][{src}][INFO]: {ln}" for ln in lines]


@_register("pylog_basic", "Python `logging` classic `asctime - name - LEVEL - ` format")
def pylog_basic(lines: list[str], rng: random.Random) -> list[str]:
    """Python logging ``%(asctime)s - %(name)s - %(levelname)s - ``.

    ``2026-01-02 03:04:05,123 - llm_runner - INFO - INFO 01-02 03:04:05 [loggers.py:118] ...``
    """
    c = _Clock(rng)
    name = rng.choice(["llm_runner", "__main__", "bench.server", "root"])
    return [f"{(t := c.tick(ln)):%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} - {name} - INFO - "
            f"{ln}" for ln in lines]


@_register("pylog_default", "Python `logging.basicConfig()` default `LEVEL:name:` format")
def pylog_default(lines: list[str], rng: random.Random) -> list[str]:
    """Python logging default format ``%(levelname)s:%(name)s:%(message)s``.

    ``INFO:root:0.43.150.974 I slot print_timing: id  0 | ...``
    """
    name = rng.choice(["root", "server", "subprocess"])
    return [f"INFO:{name}:{ln}" for ln in lines]


@_register("loguru", "loguru default format (RL frameworks, custom launchers)")
def loguru(lines: list[str], rng: random.Random) -> list[str]:
    """loguru: ``YYYY-mm-dd HH:MM:SS.mmm | INFO     | module:function:line - ``.

    ``2026-01-02 03:04:05.123 | INFO     | runner:_pump:88 - [2026-01-02 03:04:05] Decode ...``
    """
    c = _Clock(rng)
    where = rng.choice(["runner:_pump:88", "__main__:stream_output:41", "server:_reader:120"])
    return [f"{(t := c.tick(ln)):%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} | INFO     | "
            f"{where} - {ln}" for ln in lines]


@_register("rich_handler", "rich.logging.RichHandler consoles (file:line column on the right)",
           suffix=True)
def rich_handler(lines: list[str], rng: random.Random) -> list[str]:
    """rich RichHandler: ``[mm/dd/yy HH:MM:SS] INFO     <line>   file.py:42``.

    ``[01/02/26 03:04:05] INFO     INFO 01-02 03:04:05 [loggers.py:118] Engine 000: ...  run.py:42``
    """
    c = _Clock(rng)
    src = rng.choice(["run.py:42", "serve.py:118", "proc.py:7"])
    return [f"[{c.tick(ln):%m/%d/%y %H:%M:%S}] INFO     {_body(ln)}   {src}{_cr(ln)}"
            for ln in lines]


# ---------------------------------------------------------------------------- containers / k8s


@_register("kubectl", "`kubectl logs --timestamps` / `docker logs -t` (vLLM format notes)")
def kubectl(lines: list[str], rng: random.Random) -> list[str]:
    """kubectl logs --timestamps: RFC 3339 nanoseconds in UTC (trailing zeros trimmed) + space.

    ``2026-01-02T03:04:05.123456789Z INFO 01-02 03:04:05 [loggers.py:118] Engine 000: ...``
    """
    c = _Clock(rng)
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"{_rfc3339nano(c)} {ln}")
    return out


@_register("cri", "containerd / CRI-O container log files under /var/log/pods")
def cri(lines: list[str], rng: random.Random) -> list[str]:
    """CRI log file: ``RFC3339Nano+zone stream F `` (full lines only, never ``P``).

    ``2026-01-02T03:04:05.123456789+00:00 stderr F INFO 01-02 03:04:05 [loggers.py:118] ...``
    """
    c = _Clock(rng, zone=rng.choice([(0, "UTC"), (60, "CET"), (480, "CST")]))
    main = rng.choice(["stderr", "stdout"])
    other = "stdout" if main == "stderr" else "stderr"
    out = []
    for ln in lines:
        c.tick(ln)
        stream = other if rng.random() < 0.1 else main
        out.append(f"{_rfc3339nano(c, utc=False)} {stream} F {ln}")
    return out


@_register("docker_json", "docker json-file driver (`/var/lib/docker/containers/*-json.log`)",
           escapes=True)
def docker_json(lines: list[str], rng: random.Random) -> list[str]:
    """docker json-file: ``{"log":"<line>\\n","stream":"stderr","time":"..."}`` (Go-escaped).

    ``{"log":"INFO 01-02 03:04:05 [loggers.py:118] Engine 000: ...\\n","stream":"stdout",
    "time":"2026-01-02T03:04:05.12345678Z"}``
    """
    c = _Clock(rng)
    main = rng.choice(["stderr", "stdout"])
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f'{{"log":{_go_json_string(ln + chr(10))},"stream":"{main}",'
                   f'"time":"{_rfc3339nano(c)}"}}')
    return out


_SERVICES = {"llama": ["llama-1", "llama-server-1", "llm-server", "localai-api-1"],
             "vllm": ["vllm-qwen", "vllm-1", "llm-server", "worker-2"],
             "sglang": ["sglang-1", "sglang-router-worker-1", "llm-server", "worker-2"],
             "llm": ["inference", "backend-llm-1", "llm-server"]}
_OTHER_SERVICES = {
    "redis-1": "1:M * DB saved on disk",
    "nginx-1": '10.0.0.1 - - "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.31"',
    "webui-1": "DEBUG:watchfiles.main:1 change detected",
    "postgres-1": "LOG:  checkpoint starting: time",
}


@_register("docker_compose", "docker compose up / logs (LocalAI threads, vLLM format notes)",
           inserts=True)
def docker_compose(lines: list[str], rng: random.Random) -> list[str]:
    """docker compose: ``name  | `` padded to the longest service name, other services between.

    ``vllm-qwen  | INFO 10-02 09:14:13 metrics.py:351] Avg prompt throughput: ...``
    """
    name = rng.choice(_SERVICES[_engine(lines)])
    others = rng.sample(sorted(_OTHER_SERVICES), rng.randint(0, 2))
    width = max(len(n) for n in [name, *others])
    marked = _interleave(["\0" + ln for ln in lines], rng,
                         lambda: "\1" + rng.choice(others), 0.08 if others else 0.0)
    out = []
    for ln in marked:
        if ln.startswith("\0"):
            out.append(f"{name:<{width}}  | {ln[1:]}")
        else:
            other = ln[1:]
            out.append(f"{other:<{width}}  | {_OTHER_SERVICES[other]}")
    return out


@_register("podman_ts", "`podman logs -t` (RFC 3339 ns with the local offset)")
def podman_ts(lines: list[str], rng: random.Random) -> list[str]:
    """podman logs -t: RFC 3339 nanoseconds with the local zone offset + space.

    ``2026-01-02T04:04:05.123456789+01:00 INFO 01-02 03:04:05 [loggers.py:118] Engine 000: ...``
    """
    c = _Clock(rng, zone=rng.choice([(60, "CET"), (120, "CEST"), (-300, "EST"), (540, "JST")]))
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"{_rfc3339nano(c, utc=False)} {ln}")
    return out


@_register("loki_logcli", "Grafana Loki `logcli query` output (timestamp, label set, line)")
def loki_logcli(lines: list[str], rng: random.Random) -> list[str]:
    """Loki logcli: ``RFC3339 {label="value", ...} <line>``.

    ``2026-01-02T03:04:05Z {app="vllm", pod="vllm-0"} INFO 01-02 03:04:05 [loggers.py:118] ...``
    """
    c = _Clock(rng, zone=(0, "UTC"))
    app = _NAMES[_engine(lines)][0]
    labels = f'{{app="{app}", namespace="inference", pod="{app}-{rng.randint(0, 3)}"}}'
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"{c.now():%Y-%m-%dT%H:%M:%S}Z {labels} {ln}")
    return out


@_register("fluentbit_json", "Fluent Bit `stdout` output / file sink in json_lines format",
           escapes=True)
def fluentbit_json(lines: list[str], rng: random.Random) -> list[str]:
    """Fluent Bit json_lines: ``{"date":<unix float>,"log":"<line>","stream":"stderr",...}``.

    ``{"date":1735787045.123456,"log":"[2026-01-02 03:04:05 TP0] Decode batch. ...",...}``
    """
    c = _Clock(rng)
    stream = rng.choice(["stderr", "stdout"])
    pod = f"{_NAMES[_engine(lines)][0]}-{rng.randint(0, 3)}"
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f'{{"date":{c.ns // 1000 / 10**6:.6f},"log":{_go_json_string(ln)},'
                   f'"stream":"{stream}","kubernetes":{{"pod_name":"{pod}"}}}}')
    return out


@_register("compose_color", "docker compose on a TTY (coloured service column)")
def compose_color(lines: list[str], rng: random.Random) -> list[str]:
    """docker compose with the service column coloured: ``\\x1b[36mname  |\\x1b[0m ``.

    ``\\x1b[36mllama-1  |\\x1b[0m 0.43.150.974 I slot print_timing: ...``
    """
    name = rng.choice(_SERVICES[_engine(lines)])
    colour = rng.choice(["36", "33", "32", "35", "1;34"])
    return [f"\x1b[{colour}m{name}  |\x1b[0m {ln}" for ln in lines]


@_register("stern", "`stern` multi-pod log tailing")
def stern(lines: list[str], rng: random.Random) -> list[str]:
    """stern: ``pod container `` before each line.

    ``vllm-7c9d8f6b5-x2k4q vllm INFO 01-02 03:04:05 [loggers.py:118] Engine 000: ...``
    """
    base = _NAMES[_engine(lines)][0]
    suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    pod = f"{base}-{rng.randint(5, 9)}{rng.choice('abcdef')}9d8f6b5-{suffix}"
    return [f"{pod} {base} {ln}" for ln in lines]


@_register("aws_logs_tail", "`aws logs tail` (CloudWatch; SageMaker / ECS deployments)")
def aws_logs_tail(lines: list[str], rng: random.Random) -> list[str]:
    """aws logs tail: ``ISO8601+00:00 stream/name `` before each line.

    ``2026-01-02T03:04:05.123000+00:00 ecs/vllm/4f3c INFO 01-02 03:04:05 [loggers.py:118] ...``
    """
    c = _Clock(rng, zone=(0, "UTC"))
    stream = f"ecs/llm/{rng.getrandbits(48):012x}"
    out = []
    for ln in lines:
        t = c.tick(ln)
        out.append(f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}000+00:00 {stream} {ln}")
    return out


@_register("github_actions", "GitHub Actions raw job logs (7-digit fraction)")
def github_actions(lines: list[str], rng: random.Random) -> list[str]:
    """GitHub Actions raw log: ``YYYY-mm-ddTHH:MM:SS.fffffffZ `` before each line.

    ``2026-01-02T03:04:05.1234567Z [2026-01-02 03:04:05 TP0] Decode batch. ...``
    """
    c = _Clock(rng, zone=(0, "UTC"))
    out = []
    for ln in lines:
        t = c.tick(ln)
        out.append(f"{t:%Y-%m-%dT%H:%M:%S}.{c.nanos // 100:07d}Z {ln}")
    return out


@_register("pm2", "pm2 logs (process manager for node / shell launchers)")
def pm2(lines: list[str], rng: random.Random) -> list[str]:
    """pm2 logs with --time: ``id|name  | YYYY-mm-ddTHH:MM:SS: ``.

    ``0|llama    | 2026-01-02T03:04:05: 0.43.150.974 I slot print_timing: ...``
    """
    c = _Clock(rng)
    name = _NAMES[_engine(lines)][0].split("-")[0]
    pid = rng.randint(0, 5)
    return [f"{pid}|{name:<8} | {c.tick(ln):%Y-%m-%dT%H:%M:%S}: {ln}" for ln in lines]


# ------------------------------------------------------------------------- launchers / proxies


@_register("llama_swap", "llama-swap (model-name upstream prefix, its own proxy lines)",
           inserts=True)
def llama_swap(lines: list[str], rng: random.Random) -> list[str]:
    """llama-swap: ``[modelname] `` before upstream lines, ``[INFO] ...`` proxy lines between.

    ``[qwen3-30b] 0.43.150.974 I slot print_timing: id  0 | ...`` and
    ``[INFO] <qwen3-30b> Health check passed on http://localhost:5801/health``
    """
    model = rng.choice(["qwen3-30b", "gemma3", "coder", "glm-air", "qwen-think_gpu"])
    port = rng.randint(5800, 5900)

    def app() -> str:
        return rng.choice([
            f"[INFO] <{model}> Health check passed on http://localhost:{port}/health",
            f'[INFO] Request 127.0.0.1 "POST /v1/chat/completions HTTP/1.1" 200 '
            f'{rng.randint(200, 90000)} "python-httpx/0.28.1" {rng.randint(1, 900) / 10}s',
            f"[DEBUG] <{model}> swapState() State transitioned from starting to ready",
        ])

    marked = _interleave(["\0" + ln for ln in lines], rng, app, 0.1)
    return [f"[{model}] {ln[1:]}" if ln.startswith("\0") else ln for ln in marked]


@_register("llama_swap_legacy", "llama-swap issue threads (2025: raw upstream output, "
           "`[llama-swap]` access lines, `!!!` health lines)", inserts=True)
def llama_swap_legacy(lines: list[str], rng: random.Random) -> list[str]:
    """llama-swap (early 2025): upstream lines raw, proxy access and health lines between.

    ``[llama-swap] 127.0.0.1 [2026-03-20 11:27:15] "POST /v1/chat/completions HTTP/1.1" 200 5120
    "python-httpx/0.28.1" 3.2s`` between unchanged server lines
    """
    c = _Clock(rng)
    port = rng.randint(9000, 9999)

    def app() -> str:
        if rng.random() < 0.2:
            return f"!!! Health check error: status code: 503 on http://127.0.0.1:{port}/health"
        return (f'[llama-swap] 127.0.0.1 [{c.tick():%Y-%m-%d %H:%M:%S}] "POST /v1/chat/completions '
                f'HTTP/1.1" 200 {rng.randint(200, 90000)} "python-httpx/0.28.1" '
                f"{rng.randint(1, 900) / 10}s")

    return _interleave(lines, rng, app, 0.1)


@_register("go_slog_quoted", "Go launchers logging a child's line through slog "
           "(approximated; LocalAI's newer logger quotes the same way)", escapes=True,
           inserts=True)
def go_slog_quoted(lines: list[str], rng: random.Random) -> list[str]:
    """Go slog text quoting the line: ``time=RFC3339 level=INFO source=f.go:N msg="<line>"``.

    ``time=2026-01-02T03:04:05.123+01:00 level=INFO source=runner.go:634 msg="slot ..."``
    """
    c = _Clock(rng)
    src = f"runner.go:{rng.randint(400, 900)}"

    def stamp(line: str | None = None) -> str:
        t = c.tick(line)
        return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}{_offset(t)}"

    def app() -> str:
        return (f"time={stamp()} level=INFO source=sched.go:{rng.randint(400, 800)} "
                f'msg="loaded runners" count=1')

    marked = _interleave(["\0" + ln for ln in lines], rng, app, 0.05)
    return [f"time={stamp(ln[1:])} level=INFO source={src} msg={_go_quote(ln[1:])}"
            if ln.startswith("\0") else ln for ln in marked]


_OLLAMA_MSGS = ['msg="llama runner started in {secs:.2f} seconds"',
                'msg="waiting for server to become available" status="llm server loading model"',
                'msg="loaded runners" count=1',
                'msg="model load progress {frac:.2f}"']


@_register("ollama", "Ollama threads (the runner's llama-server lines raw, Ollama's own slog "
           "`time=… level=INFO source=server.go:N msg=…` lines between)", inserts=True)
def ollama(lines: list[str], rng: random.Random) -> list[str]:
    """Ollama: server lines unchanged, its own Go slog lines interleaved.

    ``time=2026-02-02T12:29:02.735Z level=INFO source=server.go:1339 msg="llama runner started
    in 29.96 seconds"`` between unchanged server lines
    """
    c = _Clock(rng, zone=(0, "UTC"))

    def app() -> str:
        t = c.tick()
        msg = rng.choice(_OLLAMA_MSGS).format(secs=rng.uniform(2, 60), frac=rng.random())
        return (f"time={t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z level=INFO "
                f"source={rng.choice(['server.go', 'sched.go', 'routes.go'])}:"
                f"{rng.randint(100, 1400)} {msg}")

    out: list[str] = []
    for ln in lines:
        c.tick(ln)
        while ln[:1] not in (" ", "\t", "\r") and rng.random() < 0.08:
            out.append(app())
        out.append(ln)
    return out


@_register("grafana_panel_copy", "a Grafana / log-panel copy of Ollama pod logs (each record "
           "as three lines: local time, level, the line)", inserts=True)
def grafana_panel_copy(lines: list[str], rng: random.Random) -> list[str]:
    """Log panel copy: ``YYYY-mm-dd HH:MM:SS.mmm`` line, level word line, the line, a blank line.

    ``2026-02-02 17:59:02.735`` / ``info`` / ``<line>`` / ````
    """
    c = _Clock(rng)
    out: list[str] = []
    for ln in lines:
        t = c.tick(ln)
        level = "error" if " E " in ln[:40] or "ERROR" in ln[:60] else (
            "warning" if " W " in ln[:40] or "WARN" in ln[:60] else "info")
        out += [f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d}", level, ln, ""]
    return out


@_register("unix_seconds", "`journalctl -o short-unix`-like / `ts %.s` prefixes")
def unix_seconds(lines: list[str], rng: random.Random) -> list[str]:
    """Unix seconds with a fraction: ``1781772660.123456 ``.

    ``1781772660.123456 [2026-06-18 08:57:40 TP0] Decode batch. ...``
    """
    c = _Clock(rng)
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"{c.ns // 10**9}.{(c.ns // 1000) % 10**6:06d} {ln}")
    return out


@_register("unix_bracket", "llama.cpp `llama.log` era / shell loggers: `[unix seconds] `")
def unix_bracket(lines: list[str], rng: random.Random) -> list[str]:
    """Integer unix seconds in brackets: ``[1781772660] ``.

    ``[1781772660] INFO 06-18 08:57:40 [loggers.py:118] Engine 000: ...``
    """
    c = _Clock(rng)
    out = []
    for ln in lines:
        c.tick(ln)
        out.append(f"[{c.ns // 10**9}] {ln}")
    return out


@_register("moreutils_ts", "`... | ts` (moreutils) default and `%.T` formats")
def moreutils_ts(lines: list[str], rng: random.Random) -> list[str]:
    """moreutils ts: ``Mon DD HH:MM:SS `` or ``Mon DD HH:MM:SS.ffffff `` before each line.

    ``Jun 18 08:57:40 [2026-06-18 08:57:40] Prefill batch. ...``
    """
    c = _Clock(rng)
    precise = rng.random() < 0.5
    out = []
    for ln in lines:
        c.tick(ln)
        frac = f".{c.now().microsecond:06d}" if precise else ""
        out.append(f"{_short(c)}{frac} {ln}")
    return out


@_register("ray_sglang_engine", "SGLang RL integrations (verl / slime / OpenRLHF) on Ray")
def ray_sglang_engine(lines: list[str], rng: random.Random) -> list[str]:
    """Ray actor prefix of an SGLang engine actor: ``(SGLangEngine pid=N) ``.

    ``(SGLangEngine pid=41820) [2026-03-22 13:53:37 TP0] Decode batch, #running-req: 4, ...``
    """
    pid = rng.randint(1000, 99999)
    return [f"(SGLangEngine pid={pid}) {ln}" for ln in lines]


@_register("log_ui_pipe", "log viewer UIs (vLLM format notes: `2026-03-09 14:02:11.905 | `)")
def log_ui_pipe(lines: list[str], rng: random.Random) -> list[str]:
    """Log viewer UI export: ``YYYY-mm-dd HH:MM:SS.mmm | `` before each line.

    ``2026-03-09 14:02:11.905 | (APIServer pid=9) INFO 03-09 14:02:11 [loggers.py:118] ...``
    """
    c = _Clock(rng)
    return [f"{(t := c.tick(ln)):%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} | {ln}"
            for ln in lines]


# how well each shape is known (the README of fixtures/wild shows it)
PROVENANCE_LEVELS = {
    "issue": "quoted in issue 12 (values changed)",
    "thread": "seen in public issue threads read for this corpus (rendered anew, values changed)",
    "notes": "listed in ../shared/formats/*.md (seen in real logs by its authors)",
    "tool": "the tool's documented output format (not checked against a pasted log)",
    "approx": "approximated: the application exists, its exact layout was not verified",
}
_PROVENANCE = {
    "gui_launcher": "issue", "leading_space_app": "issue", "lmstudio": "thread",
    "launcher_brackets": "approx",
    "textgen_webui": "approx", "jan": "approx", "journald_short": "notes",
    "journald_odd_ident": "issue", "journald_de": "issue", "journald_es": "thread",
    "journald_it": "issue", "journald_fr": "issue", "journald_nl": "tool", "journald_pt": "tool",
    "journald_short_iso": "tool", "journald_short_precise": "issue",
    "journald_short_iso_precise": "tool", "journald_short_full": "tool",
    "journald_short_monotonic": "tool", "journald_short_unix": "tool",
    "rsyslog_traditional": "tool", "syslog_rfc5424": "tool", "syslog_rfc3164": "tool",
    "localai_grpc_quoted": "thread", "localai_grpc_legacy": "thread", "docker_desktop": "thread",
    "indent2": "issue", "indent_tab": "tool", "markdown_quote": "tool", "markdown_bold": "issue",
    "gutter_cat_n": "issue", "gutter_editor": "issue", "gutter_less_n": "tool",
    "gutter_pipe": "thread",
    "trailing_spaces_120": "issue", "trailing_spaces_200": "issue", "tmux_capture": "issue",
    "crlf": "notes", "windows_service": "approx", "ansi_line": "notes", "ansi_level": "notes",
    "ansi_caret": "notes", "ray_actor": "issue", "ray_nested": "thread",
    "ray_worker_chain": "thread", "skypilot": "approx", "slurm_label": "tool",
    "mpirun_tag": "tool", "torchrun_tee": "notes", "pylog_comma_pid": "issue",
    "pylog_brackets": "issue", "pylog_basic": "tool", "pylog_default": "tool", "loguru": "tool",
    "rich_handler": "tool", "kubectl": "notes", "cri": "tool", "docker_json": "tool",
    "docker_compose": "thread", "podman_ts": "tool", "loki_logcli": "tool",
    "fluentbit_json": "approx", "compose_color": "tool", "stern": "thread",
    "aws_logs_tail": "approx", "github_actions": "tool", "pm2": "approx", "llama_swap": "approx",
    "llama_swap_legacy": "thread", "go_slog_quoted": "approx", "ollama": "thread",
    "grafana_panel_copy": "thread", "unix_seconds": "tool",
    "unix_bracket": "notes", "moreutils_ts": "tool", "ray_sglang_engine": "issue",
    "log_ui_pipe": "notes",
}
# a header line of their own before every physical line, continuation lines included
_SEPARATES = {"lmstudio", "grafana_panel_copy"}
_CONTAINERS = {"docker_compose", "compose_color", "docker_json", "cri", "podman_ts",
               "docker_desktop"}
_HOSTS_LAYER = {"grafana_panel_copy", "journald_short", "journald_odd_ident", "journald_de",
                "journald_es", "journald_it", "journald_fr", "journald_nl", "journald_pt",
                "journald_short_iso",
                "journald_short_precise", "journald_short_iso_precise", "journald_short_full",
                "journald_short_monotonic", "journald_short_unix", "rsyslog_traditional",
                "syslog_rfc5424", "syslog_rfc3164", "kubectl", "loki_logcli", "fluentbit_json",
                "stern", "aws_logs_tail", "github_actions", "log_ui_pipe"}
_PASTES = {"indent2", "indent_tab", "markdown_quote", "markdown_bold", "gutter_cat_n",
           "gutter_editor", "gutter_less_n", "gutter_pipe", "trailing_spaces_120",
           "trailing_spaces_200", "tmux_capture", "crlf", "ansi_caret"}
for _name, _info in list(CATALOGUE.items()):
    _layer = ("container" if _name in _CONTAINERS else "host" if _name in _HOSTS_LAYER
              else "paste" if _name in _PASTES else "app")
    CATALOGUE[_name] = WrapperInfo(_info.name, _info.fn, _info.source, _info.inserts,
                                   _info.escapes, _info.suffix, _PROVENANCE[_name], _layer,
                                   _name in _SEPARATES)


def random_stack(rng: random.Random) -> list[str]:
    """A plausible stack of wrappers, innermost first: at most one of each layer (app, container,
    host, paste), never empty; use as ``compose(random_stack(rng), lines, rng)``.

    E.g. ``["ansi_level", "docker_compose", "kubectl"]`` or ``["ray_actor", "journald_de",
    "gutter_cat_n"]``.
    """
    layers = ("app", "container", "host", "paste")
    by_layer = {k: sorted(n for n, i in CATALOGUE.items() if i.layer == k) for k in layers}
    odds = {"app": 0.6, "container": 0.4, "host": 0.6, "paste": 0.4}
    while True:
        stack = [rng.choice(by_layer[k]) for k in layers if rng.random() < odds[k]]
        if stack:
            return stack


# -------------------------------------------------------------- paste damage and header rewrites
#
# Not wrappers: these change the server line itself, so they are kept out of WRAPPERS (the
# invariance property does not hold for them). bench/wild.py uses them for the wild corpus.

_RUNS = re.compile(r" {2,}")


def collapse_spaces(lines: list[str], rng: random.Random) -> list[str]:
    """Paste damage: every run of spaces collapsed to one (forum / chat renderers).

    ``... | task 0 | prompt eval time = 892.35 ms / 2210 tokens ( 0.40 ms per token, ...``
    """
    return [_RUNS.sub(" ", ln) for ln in lines]


def cut_middle(lines: list[str], rng: random.Random) -> list[str]:
    """Paste damage: a terminal copy that lost a block out of the middle of every long line.

    Every line longer than 140 characters loses 15 to 45 characters starting somewhere in its
    middle third, so one or two fields are cut mid-word and the rest stay intact:
    ``..., #token: 44672, token usaccept rate: 0.32, npu graph: False, ...``
    """
    out = []
    for ln in lines:
        n = len(ln)
        if n <= 140:
            out.append(ln)
            continue
        start = rng.randint(n // 3, 2 * n // 3)
        out.append(ln[:start] + ln[start + rng.randint(15, 45):])
    return out


_REQS = re.compile(r"(?<=: )(\d+) reqs\b")


def pad_reqs(lines: list[str], rng: random.Random) -> list[str]:
    """Paste damage: the count before ``reqs`` left-aligned in a fixed-width column, as a log
    viewer's aligned columns print it (width 4 to 6, one per log; a wider count is not cut).

    ``... Running: 12   reqs, Swapped: 0    reqs, Pending: 2    reqs, GPU KV cache usage: ...``
    """
    width = rng.randint(4, 6)
    return [_REQS.sub(lambda m: f"{m.group(1):<{width}} reqs", ln) for ln in lines]


DAMAGE: dict[str, Wrapper] = {"collapse_spaces": collapse_spaces, "cut_middle": cut_middle,
                              "pad_reqs": pad_reqs}

_ANSI_OR_CHAR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|.", re.S)


def terminal_wrap(line: str, width: int) -> list[str]:
    """A line as a terminal of ``width`` columns shows it: cut into physical lines of ``width``
    columns each (colour codes take no column, a wide character two), the pieces after the first
    with no prefix of their own. A line that fits is returned whole.

    ``2026-01-02T03:04:05.123456789Z (APIServer pid=1) INFO ... Avg generation throughpu`` then
    ``t: 843.6 tokens/s, Running: 38 reqs, ...``
    """
    import unicodedata

    pieces: list[str] = []
    cur: list[str] = []
    cols = 0
    for m in _ANSI_OR_CHAR.finditer(line):
        t = m.group(0)
        w = 0 if len(t) > 1 else 2 if unicodedata.east_asian_width(t) in "WF" else 1
        if cols + w > width:
            pieces.append("".join(cur))
            cur, cols = [], 0
        cur.append(t)
        cols += w
    pieces.append("".join(cur))
    return pieces


# outermost steps that cut one line into several physical lines (not wrappers, not 1:1)
SPLITTERS: dict[str, Callable[[str], list[str]]] = {
    "terminal_wrap_157": lambda ln: terminal_wrap(ln, 157),
}

_SG_HEADER = re.compile(r"^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] "
                        r"(.*)$")


def _sg_source(msg: str) -> str:
    if msg.startswith(("Prefill batch", "Prefil batch")):
        return "scheduler_metrics_mixin.py:172"
    if msg.startswith("Decode batch"):
        return "scheduler_metrics_mixin.py:238"
    if "retract" in msg.lower() or "out of memory" in msg:
        return "scheduler.py:1802"
    return "scheduler.py:611"


def sglang_header_pylog(lines: list[str], rng: random.Random) -> list[str]:
    """SGLang under a user's logging config (header replaced, not wrapped): rank tags + file:line.

    ``2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 scheduler_metrics_mixin.py:238] Decode batch.``
    """
    pid = rng.randint(1000, 99999)
    out = []
    for ln in lines:
        m = _SG_HEADER.match(ln)
        if not m:
            out.append(ln)
            continue
        date, time, _ms, tags, msg = m.groups()
        tags = tags.strip()
        where = f"{tags} {_sg_source(msg)}" if tags else _sg_source(msg)
        out.append(f"{date} {time} INFO {pid} [{where}] {msg}")
    return out


def sglang_header_brackets(lines: list[str], rng: random.Random) -> list[str]:
    """SGLang under a ``[asctime][file:line][LEVEL]: `` logging config (rank tags lost).

    ``[2026-04-15 17:13:10][scheduler_metrics_mixin.py:172][INFO]: Prefill batch, #new-seq: 1, ...``
    """
    out = []
    for ln in lines:
        m = _SG_HEADER.match(ln)
        if not m:
            out.append(ln)
            continue
        date, time, _ms, _tags, msg = m.groups()
        out.append(f"[{date} {time}][{_sg_source(msg)}][INFO]: {msg}")
    return out


_VLLM_HEADER = re.compile(r"^(?:(?:\x1b\[[\d;]*m)?\((?P<proc>[\w ]+?) pid=(?P<pid>\d+)\)"
                          r"(?:\x1b\[[\d;]*m)? )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                          r"(?P<md>\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d) \[?(?P<file>[\w./-]+?)\.py:"
                          r"(?P<lineno>\d+)\] (?P<msg>.*)$")
_VLLM_LOGGERS = {"loggers": "vllm.v1.metrics.loggers", "metrics": "vllm.v1.spec_decode.metrics",
                 "scheduler": "vllm.core.scheduler", "core": "vllm.v1.engine.core",
                 "api_server": "vllm.entrypoints.openai.api_server"}


def vllm_json_formatter(lines: list[str], rng: random.Random) -> list[str]:
    """vLLM 0.31+ under the JSON log formatter (pythonjsonlogger): the header becomes JSON keys
    (the process prefix is part of the record since 0.31, so it goes into ``processName``).

    ``{"asctime": "2026-05-12 07:41:10,118", "levelname": "INFO", "name": "vllm.v1.metrics.loggers",
    "processName": "APIServer", "process": 2201, "message": "Engine 000: Avg prompt ..."}``
    (lines of other loggers, e.g. uvicorn's access lines, are left as they are)
    """
    year = rng.choice([2025, 2026])
    out = []
    for ln in lines:
        m = _VLLM_HEADER.match(ln)
        if not m:
            out.append(ln)
            continue
        stem = m.group("file").rsplit("/", 1)[-1]
        rec = {"asctime": f"{year}-{m.group('md')} {m.group('hms')},{rng.randint(0, 999):03d}",
               "levelname": m.group("level"),
               "name": _VLLM_LOGGERS.get(stem, f"vllm.{stem}"),
               "processName": m.group("proc") or "MainProcess",
               "process": int(m.group("pid") or rng.randint(100, 9999)),
               "message": m.group("msg")}
        out.append(json.dumps(rec))
    return out


REWRITERS: dict[str, Wrapper] = {"sglang_header_pylog": sglang_header_pylog,
                                 "sglang_header_brackets": sglang_header_brackets,
                                 "vllm_json_formatter": vllm_json_formatter}


# ------------------------------------------------------------------------------------ checking



def check_wrapper(name: str, lines: list[str], seed: int = 0) -> list[str]:
    """Wrap ``lines`` and assert the rules of this module; return the wrapped lines.

    Each bare line must be found, in order, in its own output line (escaped for the escaping
    wrappers; colour codes removed from both sides), and two runs from the same seed must agree.
    """
    fn = WRAPPERS[name]
    raw = fn(list(lines), random.Random(seed))
    if raw != fn(list(lines), random.Random(seed)):
        raise AssertionError(f"{name}: not deterministic")
    out = [_ANSI_ANY.sub("", o) for o in raw]
    info = CATALOGUE[name]
    if not info.inserts and len(out) != len(lines):
        raise AssertionError(f"{name}: {len(lines)} lines in, {len(out)} out")

    def found(ln: str, k: int) -> bool:
        bare = _ANSI_ANY.sub("", ln)
        if bare in out[k] or (info.suffix and _body(bare) in out[k]):
            return True
        return info.escapes and any(e in raw[k] for e in (
            _go_json_string(ln)[1:-1], _go_quote(ln)[1:-1],
            ln.replace("\\", "\\\\").replace('"', '\\"')))

    j = 0
    for ln in lines:
        while j < len(out) and not found(ln, j):
            if not info.inserts:
                raise AssertionError(f"{name}: line {ln!r} not in {raw[j]!r}")
            j += 1
        if j == len(out):
            raise AssertionError(f"{name}: line {ln!r} missing")
        j += 1
    if any("\n" in o for o in raw):
        raise AssertionError(f"{name}: an output line holds a newline")
    return raw


__all__ = ["CATALOGUE", "DAMAGE", "PROVENANCE_LEVELS", "REWRITERS", "SPLITTERS", "WRAPPERS",
           "Wrapper", "WrapperInfo", "check_wrapper", "compose", "random_stack", "terminal_wrap"]

if any(not i.layer or not i.provenance for i in CATALOGUE.values()):  # registered too late
    raise RuntimeError("a wrapper was registered after the provenance / layer table")
