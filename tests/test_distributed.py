"""The Dask integration: byte ranges parsed as tasks give the frames of ``logscope.read``; and
the streamed ingest gives the same frames whatever its block size."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import logscope
from logscope import ingest
from logscope.fleet.distributed import _range_bytes, plan, read_dask
from tests.conftest import CORPUS, FIXTURES

dask = pytest.importorskip("dask")

MIXED = [
    CORPUS / "generated-spec-pilot-c32k-np2.log",  # llama-server, continuation-free era
    FIXTURES / "llama-server" / "d-b4326-b6722-multiline-summary.log",  # continuation lines
    FIXTURES / "llama-server" / "b-b1413-b2258-llama-log-file.log",  # era B: slot from release
    FIXTURES / "sglang" / "v0.4.10-dp-attention.log",
    FIXTURES / "vllm" / "v0.5.0-offline-tqdm-glued.log",  # glued records: several rows per line
]


def _same(a: logscope.Logs, b: logscope.Logs) -> None:
    assert a.summary() == b.summary()
    assert set(a.tables) == set(b.tables)
    for name in a.tables:
        assert_frame_equal(a[name], b[name], check_exact=True), name


@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    out = []
    for p in MIXED:
        assert p.exists(), p
        dst = d / p.name
        shutil.copy2(p, dst)
        out.append(str(dst))
    return out


@pytest.mark.parametrize("scheduler", ["synchronous", "threads", "processes"])
def test_read_dask_equals_read(logs_dir, scheduler):
    # small blocks: every file is cut into many ranges, most starting inside a line
    got = read_dask(logs_dir, scheduler=scheduler, block_bytes=3_000)
    _same(logscope.read(logs_dir), got)


def test_ranges_cover_each_line_once(tmp_path):
    log = tmp_path / "x.log"
    lines = [f"line {i} " + "x" * (i % 37) for i in range(500)]
    log.write_text("\n".join(lines) + "\n")
    for size in (1, 7, 64, 1000):
        blocks, _ = plan([str(log)], size)
        assert len(blocks) > 1 or size >= log.stat().st_size
        text = b"".join(_range_bytes(b) for b in blocks).decode()
        assert text.splitlines() == lines, size


def test_gzip_and_duplicates(tmp_path, logs_dir):
    gz = tmp_path / "spec.log.gz"
    gz.write_bytes(gzip.compress(Path(logs_dir[0]).read_bytes()))
    paths = [str(gz), logs_dir[1], logs_dir[1]]  # the same file twice is kept twice
    got = read_dask(paths, scheduler="synchronous", block_bytes=2_000)
    _same(logscope.read(paths), got)
    assert [f.file for f in got.files] == [str(gz), logs_dir[1], logs_dir[1] + "#1"]


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(logscope.input.sources.InputError, match="no such file"):
        read_dask([str(tmp_path / "nope.log")], scheduler="synchronous")


@pytest.mark.parametrize("chunk_bytes", [1, 333, 40_000])
def test_streamed_ingest_is_block_size_independent(logs_dir, chunk_bytes):
    # logscope.read streams files in blocks; requests, continuations and runs straddle them
    _same(logscope.read(logs_dir), ingest.read(logs_dir, chunk_bytes=chunk_bytes))
