"""Fleet: many logs at once: a Parquet dataset kept up to date, parsing on Dask workers.

Enters: paths (globs, rotation chains). Leaves: a dataset directory of Parquet tables, or the
tables of :func:`logscope.ingest.read` computed on a cluster.

* :mod:`~logscope.fleet.distributed`: blocks of a log parsed by Dask tasks; the runner of
  units of work on a scheduler.
* :mod:`~logscope.fleet.dataset`: ``ingest --dataset``: the manifest, incremental ingest of
  rotated files, ``scan`` / ``load``.

May import: :mod:`logscope.input`, :mod:`logscope.classify`, :mod:`logscope.engines`,
:mod:`logscope.ingest`.
"""
