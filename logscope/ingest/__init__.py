"""Batch ingest: log files in, one Polars frame per event kind (plus ``requests``) out.

    >>> import logscope
    >>> logs = logscope.read(["fixtures/llama-server/corpus/generated-ngram-c4k-np1.log"])
    >>> logs["requests"].height
    6

Enters: paths, globs, stdin, or blocks of lines (:mod:`logscope.input.sources`). Leaves:
:class:`~logscope.ingest.logs.Logs`, the tables of the ingest (in memory, or Parquet files with
``out=DIR``), and the per-file counts.

* :mod:`~logscope.ingest.batch`: the parsing core, ``parse_batch`` (a pure function from a
  batch of raw lines to each engine's classified rows and fields).
* :mod:`~logscope.ingest.read`: ``read`` / ``read_inputs`` (blocks parsed in threads, assembled
  in order as they come) and ``assemble`` (batches parsed elsewhere).
* :mod:`~logscope.ingest.assembler`: the engine models run over each batch; the tables, one
  module each: :mod:`~logscope.ingest.kind_tables` (one per event kind),
  :mod:`~logscope.ingest.lines_table` (``lines_classified`` and the counts per class),
  :mod:`~logscope.ingest.unrecognized` (``unrecognized``, with lark's diagnostics).
* :mod:`~logscope.ingest.logs`: ``Logs``, ``FileStats``, ``NoServerLines``.

May import: :mod:`logscope.input`, :mod:`logscope.classify` and :mod:`logscope.engines` (the
stages before it).
"""

from logscope.classify.grammar import available_engines
from logscope.ingest.assembler import ROUTERS, Assembler
from logscope.ingest.batch import Batch, lines_frame, parse_batch
from logscope.ingest.kind_tables import COMMON_COLUMNS, MODEL_COLUMNS
from logscope.ingest.logs import FileStats, Logs, NoServerLines
from logscope.ingest.read import Input, assemble, read, read_inputs
from logscope.ingest.unrecognized import (
    DIAGNOSTIC_BUDGET_CHARS,
    MAX_DIAGNOSTIC_CHARS,
    MAX_DIAGNOSTICS,
)

__all__ = ["COMMON_COLUMNS", "DIAGNOSTIC_BUDGET_CHARS", "MAX_DIAGNOSTICS",
           "MAX_DIAGNOSTIC_CHARS", "MODEL_COLUMNS", "ROUTERS", "Assembler", "Batch", "FileStats",
           "Input", "Logs", "NoServerLines", "assemble", "available_engines", "lines_frame",
           "parse_batch", "read", "read_inputs"]
