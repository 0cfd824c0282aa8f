"""One raw line of a followed log classified, engine by engine (what ``follow`` reads per line)."""

from __future__ import annotations

from typing import Any


class _Parser:
    """parse_raw_line with a per-engine fallback: a grammar that raises on a line (a bug in
    that grammar's compiled envelope) must not take the others down."""

    def __init__(self, engines: list[str]) -> None:
        from logscope.classify.parse import classify_line, parse_raw_line

        try:  # records glued onto one physical line (vLLM under tqdm), as ingest splits them
            from logscope.input.frontend import split_records
        except ImportError:  # pragma: no cover - an older front end
            def split_records(text: str) -> list[str]:
                return [text]

        self.parse_raw_line = parse_raw_line
        self.classify_line = classify_line
        self.split_records = split_records
        self.engines = engines
        self.broken: set[str] = set()

    def records(self, raw: str) -> tuple[dict[str, Any], list[tuple | None]]:
        """(wrapper fields, one match per record of the line: usually one)."""
        wrap, text, match = self(raw)
        try:
            texts = self.split_records(text)
        except Exception:  # noqa: BLE001
            texts = [text]
        if len(texts) <= 1:
            return wrap, [match]
        out = []
        for t in texts:
            try:
                out.append(self.classify_line(t, self.engines))
            except Exception:  # noqa: BLE001
                out.append(None)
        return wrap, out

    def __call__(self, raw: str):  # noqa: ANN204
        engines = [e for e in self.engines if e not in self.broken]
        try:
            return self.parse_raw_line(raw, engines)
        except Exception:  # noqa: BLE001
            pass
        wrap, text, match = {}, raw, None
        for e in engines:
            try:
                wrap, text, match = self.parse_raw_line(raw, [e])
            except Exception:  # noqa: BLE001
                continue
            if match is not None:
                break
        return wrap, text, match
