"""Classify: each line matched to one message format of the grammars, its fields captured.

Enters: line frames from :mod:`logscope.input`. Leaves: per engine and kind, the matched rows
with typed fields; the lines no format matched (unrecognized: an alarm only when they carry a
figure; :mod:`~logscope.classify.drift`) and the ones counted quietly.

* :mod:`~logscope.classify.grammar`: the lark grammars in ``grammars/`` compiled into the fast
  path (anchors, regexes, field types); the single source of truth for every format.
* :mod:`~logscope.classify.parse`: classification of a frame of lines (and of one line, for
  ``follow``).
* :mod:`~logscope.classify.wrapped`: records a terminal wrapped, rejoined.
* :mod:`~logscope.classify.catalog`: the format catalogue (``logscope formats``, ``explain``).
* :mod:`~logscope.classify.drift`: which unrecognized lines raise an alarm.

May import: :mod:`logscope.input`.
"""
