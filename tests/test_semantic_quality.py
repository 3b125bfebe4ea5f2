"""The shipped model on the labelled notes and queries (tests/data/recall_*.jsonl).

Hybrid search must find paraphrases lexical search misses, without falling
below the recall targets on the queries that share words or name an
identifier. ``python bench/recall_quality.py`` prints the same figures per
split; docs/benchmarks.md has them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from memspool.recall import search
from memspool.service import Service

#: Slow, left out of the inner loop (`-m "not slow"`): a quality floor over the labelled sets.
pytestmark = pytest.mark.slow

DATA = REPO / "tests" / "data"


def _background(n: int) -> list[dict[str, str]]:
    """Notes that share the vocabulary of the labelled ones and answer no query."""
    topics = ("cache", "queue", "deploy", "schema", "token", "worker", "proxy", "replica")
    return [{"id": f"bg{i}", "project": "bg", "type": "takeaway",
             "summary": f"Note {i}: the {topics[i % 8]} step calls the {topics[(i * 3 + 1) % 8]} "
                        f"helper before the {topics[(i * 5 + 2) % 8]} job.",
             "body": f"keep {topics[i % 8]}_limit at {i % 90}."} for i in range(n)]


def test_hybrid_search_finds_paraphrases_and_keeps_the_rest(home: Path) -> None:
    notes = [json.loads(line) for line in (DATA / "recall_notes.jsonl").read_text().splitlines()]
    notes += _background(500)
    queries = [json.loads(line) for line in
               (DATA / "recall_queries.jsonl").read_text().splitlines()]
    with Service(home, env={}) as service:
        assert service.vectors() is not None, service.semantic.reason
        service.import_lines([json.dumps({
            "project": n["project"], "key": n["id"], "type": n["type"], "summary": n["summary"],
            "body": n["body"], "layer": "buffer"}).encode() for n in notes])
        key_of = {r[0]: r[1] for r in service.conn.execute("SELECT id, key FROM memories")}
        found: dict[tuple[str, str], list[bool]] = {}
        for q in queries:
            for way, index in (("lexical", None), ("hybrid", service.vectors())):
                top = [key_of[h.id] for h in search(service.conn, q["query"], limit=5,
                                                     vectors=index)]
                found.setdefault((way, q["kind"]), []).append(q["note"] in top)
                if q["split"] != "tune":
                    found.setdefault((way, "untuned"), []).append(q["note"] in top)
                    found.setdefault((way, f"untuned {q['kind']}"), []).append(q["note"] in top)

    def rate(way: str, kind: str) -> float:
        return sum(found[way, kind]) / len(found[way, kind])

    assert rate("hybrid", "paraphrase") >= 0.4
    assert rate("hybrid", "shared") >= 0.95
    assert rate("hybrid", "identifier") >= 0.9
    # On the queries nothing was tuned on, hybrid finds at least what lexical finds,
    # and clearly more paraphrases (lexical: 0.38, hybrid: 0.48 when this was written).
    assert rate("hybrid", "untuned") >= rate("lexical", "untuned")
    assert rate("hybrid", "untuned paraphrase") >= rate("lexical", "untuned paraphrase") + 0.05
