"""Input: bytes become lines, and a line's wrapper is taken off.

Enters: paths, URLs, compressed files, stdin. Leaves: line frames (``file``, ``line``,
``text``) with the wrapper's fields (timestamps, container, pid) decoded.

* :mod:`~logscope.input.sources`: open and block the inputs (gzip, zstd, URLs, stdin).
* :mod:`~logscope.input.frontend`: the wrappers around a server's line (journald, docker,
  kubectl, Ray, gutters, colours) taken off, records glued onto one line split.
* :mod:`~logscope.input.envelope`: the envelope decoder (timestamps and levels of the wrappers).

May import: nothing of logscope's (the first stage).
"""
