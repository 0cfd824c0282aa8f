from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "llama-server" / "corpus"


def client_records(log: Path) -> list[dict]:
    path = log.with_name(log.name.replace(".log", ".client.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def client_timings(rec: dict) -> dict | None:
    for holder in (rec.get("response"), rec.get("final_chunk"), rec.get("last_chunk")):
        if isinstance(holder, dict) and isinstance(holder.get("timings"), dict):
            return holder["timings"]
    return None


@pytest.fixture(scope="session")
def corpus_logs() -> list[Path]:
    return sorted(CORPUS.glob("generated-*.log"))
