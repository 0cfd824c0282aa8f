"""Outputs: what a user reads: the ingest summary, plots, SQL over the tables.

Enters: an ingest (:class:`logscope.ingest.Logs`) and the analyses' frames and figures.
Leaves: text, JSON, images, query results.

* :mod:`~logscope.outputs.summary`: the summary ``logscope ingest`` prints.
* :mod:`~logscope.outputs.plots` and :mod:`~logscope.outputs.plot_states`: the figures.
* :mod:`~logscope.outputs.sql`: ``logscope sql`` (DuckDB-style SQL over the tables).

May import: every stage before it (input … analysis).
"""
