"""Analyses over ingested logs: the passive benchmark.

Enters: the tables of an ingest, with telemetry's energy columns when joined. Leaves: figures,
one definition each, for :mod:`logscope.outputs`, :mod:`logscope.follow` and the commands.

Every function takes a :class:`logscope.ingest.Logs` (or a frame derived from one) and returns a
Polars frame or a plain dict, so a notebook can do what the CLI does.

* :mod:`.prefill`  prefill speed against context depth, and the fit rate(d) = 1 / (a + b·d)
* :mod:`.decode`   decode speed per request, ``tg_3s`` windows, aggregate across requests
* :mod:`.spec`     speculative decoding acceptance
* :mod:`.pressure` retracts, preemptions, KV usage and queue length
* :mod:`.report`   the llama-bench-shaped table, prefill-by-depth table and config card
* :mod:`.concurrency` and :mod:`.windows`  how many requests decode and prefill at each moment
* :mod:`.depth`, :mod:`.metrics`, :mod:`.verdict`, :mod:`.findings`, :mod:`.energy`  prefill at a
  depth, the headline figures, B against A, why it was slow, energy per token

Exactness is a column everywhere (``exactness``): ``exact per request`` for figures llama-server
prints per request, ``tick interval`` for rates between two progress lines of one request,
``server window average`` for SGLang's and vLLM's periodic throughput lines.

May import: every stage before it (:mod:`logscope.input` … :mod:`logscope.telemetry`); today
the analyses read only the tables they are given and import nothing outside this folder.
"""

from logscope.analysis.prefill import fit_prefill, prefill_curve  # noqa: F401
