"""Hostile input (issue 7): random and mutated lines never crash ``logscope.read`` and every line
is accounted for.

Whatever the bytes, ``logscope.read`` returns frames or raises one of the documented errors
(``NoServerLines``, ``InputError``), and the summary's ``events + ignored + unrecognized`` equals
``lines``, which is the number of physical lines of the input (``\\n``-separated, the last one
possibly unterminated). ``bench/fuzz.py`` runs the same mutations over a million lines.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logscope
from logscope.ingest import NoServerLines
from logscope.input.sources import MAX_LINE, InputError
from tests.conftest import CORPUS

CORPUS_LINES: list[bytes] = [
    line for p in sorted(CORPUS.glob("*.log")) for line in p.read_bytes().splitlines() if line
]
# lines of the other engines (hand-written in their documented shapes)
OTHER_ENGINE_LINES: list[bytes] = [
    b"[2024-07-01 10:00:00 DP1 TP0] Decode batch. #running-req: 1, #token: 5, token usage: 0.01, "
    b"gen throughput (token/s): 3.2, #queue-req: 0",
    b"[2025-01-02 03:04:05] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, "
    b"token usage: 0.00, #running-req: 0, #queue-req: 0",
    b"[2025-01-02 03:04:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, "
    b"#new_token_ratio: 0.5000 -> 0.7000",
    b"INFO 05-06 07:08:09 metrics.py:341] Avg prompt throughput: 12.3 tokens/s, Avg generation "
    b"throughput: 45.6 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
    b"usage: 1.2%, CPU KV cache usage: 0.0%.",
    b"INFO 05-06 07:08:09 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
    b"generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: "
    b"0.1%, Prefix cache hit rate: 0.0%",
    b"WARNING 05-06 07:08:09 scheduler.py:1057] Sequence group 7 is preempted by "
    b"PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
]
ANSI = [b"\x1b[0m", b"\x1b[1;36m", b"\x1b[K", b"^[[32m", b"[0m"]
WRAPPERS = [b"2024-05-01T10:00:00.123456789Z ", b"llama-1  | ", b"[8081] ",
            b"2026-03-11T07:52:18.204913+01:00 gpu-box llama-server[2214]: ",
            b"Mar 04 09:15:27 gpu-node7 llama-server[48213]: "]


MUTATIONS = ("cut", "bytes", "nul", "utf8", "cr", "ansi", "long", "numbers", "wrapper", "engine",
             "bitflip", "none")


def mutate(line: bytes, rnd: random.Random, big: int = 1 << 20,
           ops: tuple[int, ...] | None = None) -> bytes:
    """One random mutation of a line (the same menu as bench/fuzz.py); ``ops`` picks from a
    subset of ``MUTATIONS`` (by index)."""
    op = rnd.choice(ops) if ops else rnd.randrange(len(MUTATIONS))
    n = len(line)
    at = rnd.randint(0, n)
    if op == 0:  # cut at a random point
        return line[:at]
    if op == 1:  # random bytes inserted
        return line[:at] + rnd.randbytes(rnd.randint(1, 16)) + line[at:]
    if op == 2:  # NUL
        return line[:at] + b"\x00" * rnd.randint(1, 3) + line[at:]
    if op == 3:  # invalid UTF-8
        bad = rnd.choice([b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80"])
        return line[:at] + bad + line[at:]
    if op == 4:  # CRLF / lone CR
        return line + b"\r" if rnd.random() < 0.7 else line[:at] + b"\r" + line[at:]
    if op == 5:  # ANSI codes
        return line[:at] + rnd.choice(ANSI) + line[at:]
    if op == 6:  # a very long line
        return line + b" " + b"9" * big if rnd.random() < 0.5 else line[:at] + b"x" * big
    if op == 7:  # numbers out of range
        return bytes(line).replace(b"0", b"99999999999999999999999", 1).replace(b"1", b"-1e999", 1)
    if op == 8:  # a wrapper prefix
        return rnd.choice(WRAPPERS) + line
    if op == 9:  # another engine's line
        return rnd.choice(OTHER_ENGINE_LINES)
    if op == 10:  # a byte flipped
        if not n:
            return line
        i = rnd.randrange(n)
        return line[:i] + bytes([line[i] ^ (1 << rnd.randrange(8))]) + line[i + 1:]
    return line  # unchanged


def expected_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def check(data: bytes, tmp: Path) -> dict:
    """Ingest ``data`` from a file; the documented outcome, with every line accounted for."""
    p = tmp / "hostile.log"
    p.write_bytes(data)
    try:
        logs = logscope.read(str(p))
    except NoServerLines as e:
        logs = e.args[0]
    except InputError:
        assert data[:2] == b"\x1f\x8b"  # only a (corrupt) gzip header makes bytes unreadable
        return {}
    s = logs.summary()
    assert s["lines"] == expected_lines(data)
    # every line is accounted for: one record per line, or more where glued vLLM records were
    # split (``records``); each record is an event, an ignored line or an unrecognized one
    records = s.get("records", s["lines"])
    assert records >= s["lines"]
    assert sum(s["events"].values()) + s["ignored"] + s["other"] + s["unrecognized"] == records, s
    un = logs["unrecognized"]
    assert un.height == s["unrecognized"]
    if un.height:
        assert un["text"].str.len_chars().max() <= MAX_LINE
    return s


FAST = settings(max_examples=50, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

text_lines = st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=200),
                      max_size=30)


@FAST
@given(lines=text_lines, crlf=st.booleans(), final_newline=st.booleans())
def test_random_text_lines(tmp_path, lines, crlf, final_newline):
    sep = "\r\n" if crlf else "\n"
    data = (sep.join(lines) + (sep if final_newline and lines else "")).encode()
    check(data, tmp_path)


@FAST
@given(data=st.binary(max_size=4000))
def test_random_bytes(tmp_path, data):
    check(data, tmp_path)


@FAST
@given(picks=st.lists(st.integers(0, len(CORPUS_LINES) - 1), min_size=1, max_size=60),
       seed=st.integers(0, 2**32 - 1), rate=st.floats(0, 1), shuffle=st.booleans())
def test_mutated_corpus_lines(tmp_path, picks, seed, rate, shuffle):
    rnd = random.Random(seed)
    lines = [CORPUS_LINES[i] for i in picks]
    if shuffle:
        rnd.shuffle(lines)
    lines = [mutate(x, rnd, big=rnd.choice([100, 70_000])) if rnd.random() < rate else x
             for x in lines]
    check(b"\n".join(lines) + b"\n", tmp_path)


@FAST
@given(seed=st.integers(0, 2**32 - 1))
def test_whole_corpus_file_shuffled_and_mutated(tmp_path, seed):
    rnd = random.Random(seed)
    logs = sorted(CORPUS.glob("*.log"))
    lines = rnd.choice(logs).read_bytes().split(b"\n")
    rnd.shuffle(lines)
    for _ in range(rnd.randint(0, 20)):
        i = rnd.randrange(len(lines))
        lines[i] = mutate(lines[i], rnd, big=5000)
    check(b"\n".join(lines), tmp_path)


@pytest.mark.parametrize("case", ["mb_line", "nul_only", "newline_only", "deep_json", "cr_only",
                                  "utf8_bom", "huge_numbers", "nul_last_line"])
def test_edge_cases(tmp_path, case):
    good = (CORPUS / "generated-ngram-c4k-np1.log").read_bytes()
    data = {
        "mb_line": b"0.01.000.000 I slot launch_slot_: id  0 | task 7 | " + b"x" * (1 << 20)
                   + b"\n" + good,
        "nul_only": b"\x00\x00\x00",
        "newline_only": b"\n",
        "nul_last_line": b"a\n\x00",  # 2 lines (the last one only NUL) once counted as 1
        # json.loads raises RecursionError (not ValueError) on this: it used to crash ingest
        "deep_json": b'{"level":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n" + good,
        "cr_only": good.replace(b"\n", b"\r"),
        "utf8_bom": b"\xef\xbb\xbf" + good,
        "huge_numbers": good.replace(b"task 0 |", b"task 99999999999999999999999 |")
                            .replace(b"17.53 ms", b"1e999 ms"),
    }[case]
    s = check(data, tmp_path)
    if case == "mb_line":
        assert s["files"][0]["capped"] == 1 and s["other"] >= 1  # a slot line, no figure
    if case in ("deep_json", "mb_line"):
        assert s["requests"] >= 6


def test_relative_clock_out_of_range(tmp_path):
    """A relative clock of 1e23 minutes used to overflow anchor_clock's Int64 cast (found by
    bench/fuzz.py; fixed in engines/llama_server.py)."""
    good = (CORPUS / "generated-ngram-c4k-np1.log").read_bytes()
    bad = (b"99999999999999999999999.03.102.628 I slot print_timing: id  0 | task 0 | prompt eval "
           b"time =      17.53 ms /    11 tokens (    1.59 ms per token,   627.42 tokens per "
           b"second)\n")
    check(good + bad, tmp_path)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_per_line_path_agrees_with_batch(tmp_path, seed):
    """The per-line path (follow, explain) classifies every mutated line as ingest does."""
    from logscope.classify.grammar import available_engines
    from logscope.classify.parse import classify_line
    from logscope.input.frontend import split_records, strip_line

    rnd = random.Random(seed)
    ops = tuple(i for i, m in enumerate(MUTATIONS) if m not in ("numbers", "long"))
    lines = [mutate(rnd.choice(CORPUS_LINES + OTHER_ENGINE_LINES), rnd, ops=ops)
             .replace(b"\n", b" ").replace(b"\r", b"") for _ in range(200)]
    data = b"\n".join(lines) + b"\n"
    p = tmp_path / "agree.log"
    p.write_bytes(data)
    try:
        logs = logscope.read(str(p))
    except NoServerLines as e:
        logs = e.args[0]
    batch: dict[int, list[tuple[str, str | None]]] = {}
    for line, cls, kind in logs["lines_classified"].select("line", "class", "kind").iter_rows():
        batch.setdefault(line, []).append((cls, kind))
    texts = data.decode("utf-8", "replace").replace("\x00", "").split("\n")[:-1]
    engines = available_engines()
    for i, raw in enumerate(texts, 1):
        _, text = strip_line(raw)
        per = []
        for record in split_records(text):  # glued vLLM records: one row each in the batch
            hit = classify_line(record, engines)
            if hit is not None:
                kind = hit[1]
                per.append((kind if kind in ("ignored", "other", "unrecognized") else "event",
                            kind))
        # a line no engine takes has no row in lines_classified (counted as ignored)
        assert sorted(per) == sorted(batch.get(i, [])), (i, raw)


def test_long_unrecognized_lines_do_not_hang_the_diagnostics(tmp_path):
    """lark is superlinear on long lines (an 8 KB SGLang batch line took seconds, 200 of them
    most of an hour): it reads a capped prefix of each, within a budget per ingest."""
    from logscope.ingest import DIAGNOSTIC_BUDGET_CHARS, MAX_DIAGNOSTIC_CHARS

    line = ("[2025-01-02 03:04:05] Decode batch (v9) #running-req: 1, "
            + ", ".join(f"k{i}: {i}" for i in range(800)) + ", garbage")
    p = tmp_path / "long.log"
    p.write_text((line + "\n") * 60)
    un = logscope.read(str(p))["unrecognized"]
    assert un.height == 60
    diags = un["diagnostic"].drop_nulls()
    assert diags.len() == DIAGNOSTIC_BUDGET_CHARS // MAX_DIAGNOSTIC_CHARS
    assert diags.str.contains(f"lark read the first {MAX_DIAGNOSTIC_CHARS} of {len(line)}").all()


def test_out_of_range_integer_is_null_on_both_paths(tmp_path):
    from logscope.classify.parse import classify_line

    line = "slot launch_slot_: id  99999999999999999999999 | task 7 | processing task"
    p = tmp_path / "big.log"
    p.write_text(line + "\n")
    batch = logscope.read(str(p))["task_launch"].row(0, named=True)
    per = classify_line(line, ["llama-server"])[3]
    assert batch["slot"] is None and per["slot"] is None
    assert batch["task"] == per["task"] == 7


def test_message_offsets_are_bytes_whatever_polars_counts():
    """Where a message starts is a byte offset (the prefix is cut from the line's bytes): after
    a non-ASCII prefix, at the line's start, in a null row and in a row with no message, the
    same on Polars releases whose ``str.find`` counts bytes and on those that count
    characters; rows with the message at their start and rows with a prefix mixed in one call."""
    import polars as pl

    from logscope.classify.parse import _find_bytes

    text = pl.Series("text", ["déc. 08 gpu-box: Decode x", "Decode y", "\ufeffDecode z", None,
                              "nothing here"])
    assert _find_bytes(text, "Decode [a-z]$").to_list() == [18, 0, 3, None, None]
    assert _find_bytes(text.slice(1, 1), "Decode [a-z]$").to_list() == [0]
    assert _find_bytes(text.slice(2, 1), "Decode [a-z]$").to_list() == [3]
