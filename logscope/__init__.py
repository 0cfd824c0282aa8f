"""logscope: a passive benchmark from the logs LLM inference servers already print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .ingest import Logs


def read(paths: Any, engine: str = "auto") -> Logs:
    """Ingest log files into Polars frames; see :func:`logscope.ingest.read`."""
    from .ingest import read as _read

    return _read(paths, engine=engine)


__all__ = ["read", "__version__"]
