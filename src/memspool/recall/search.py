"""Search over memories (never slices): safe terms, identifiers by their parts, ranked.

Ranking, documented:

1. Lexical: FTS5 ``bm25`` with column weights (summary 4, body 1,
   identifier parts 2) over the user's own terms joined by OR; memories that
   hold every term get ``ALL_TERMS_BONUS``; the concept map's words for the
   same trouble (``concepts.py``) are matched apart and weigh ``SYNONYM_WEIGHT``
   of the user's own words.
2. Standing: times the layer's weight (canonical 1.1, buffer 1.0, archived
   0.6, superseded 0.5), ``0.8 + 0.2 * confidence``, and recency
   ``0.9 + 0.1 * 0.5 ** (days since last change / 90)``.
3. Semantic recall (when on, ``vectors.py``) replaces 1.: the memories that
   hold every query word (``every_expression``: an identifier by its whole
   form or all its parts), ranked by the same bm25, and the memories whose
   vectors are nearest the query's are fused by reciprocal rank,
   ``LEXICAL_WEIGHT / (RRF_K + rank)`` plus ``SEMANTIC_WEIGHT / (RRF_K +
   rank)`` (ranks from 1), times 100; a memory found by meaning alone
   needs a cosine similarity of ``SEMANTIC_FLOOR`` at least. Standing (2.)
   then applies to the fused score. Hits holding only some words, and the concept map, stay
   out: fused with them the word matches of a paraphrase drown its meaning
   matches, and on queries written apart from the map's tuning neither
   raised recall (docs/recall.md).
4. A superseded memory never ranks above the memory that superseded it:
   when both are in the results the successor is lifted above it, and with
   ``--all`` a superseded hit brings its successor along.

Superseded and archived memories are found only with ``include_all``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from typing import Any, Final

from memspool.hooks.fts import every_expression, held, match_expression, query_terms, stem
from memspool.recall.concepts import GROUPS
from memspool.recall.vectors import Nearest, VectorIndex

__all__ = ["Hit", "search"]

#: bm25 column weights: summary, body, identifier parts.
COLUMN_WEIGHTS: Final = (4.0, 1.0, 2.0)
SYNONYM_WEIGHT: Final = 0.4
ALL_TERMS_BONUS: Final = 1.3
LAYER_WEIGHTS: Final = {"canonical": 1.1, "buffer": 1.0, "archived": 0.6, "superseded": 0.5}
RECENCY_HALF_LIFE_DAYS: Final = 90.0
#: Candidates read from each FTS query before ranking.
CANDIDATES: Final = 200
#: Candidates re-ranked by standing, beyond the ``limit`` asked for.
RERANK_WINDOW: Final = 60
#: Hits checked for holding every query term, beyond the ``limit`` asked for.
COVERAGE_CHECKED: Final = 20
_DAY: Final = 86400.0
#: Reciprocal rank fusion: the rank offset and each side's weight.
RRF_K: Final = 60
LEXICAL_WEIGHT: Final = 1.0
SEMANTIC_WEIGHT: Final = 1.0
#: Nearest memories read from the vectors, beyond the ``limit`` asked for.
SEMANTIC_WINDOW: Final = 20
#: Cosine similarity below which a memory the words did not find is left out
#: (unrelated engineering notes score 0.0-0.3 with the shipped model).
SEMANTIC_FLOOR: Final = 0.3


@dataclasses.dataclass
class Hit:
    id: int
    project: str
    type: str
    summary: str
    body: str
    layer: str
    confidence: float
    sessions: int
    superseded_by: int | None
    score: float
    #: Which side found it, joined by "+": "words" (the user's own),
    #: "concepts" (the concept map's), "meaning" (the vectors); "successor"
    #: for a memory brought in because it superseded a hit.
    found_by: str = "words"

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def _concept_index() -> dict[str, set[str]]:
    index: dict[str, set[str]] = {}
    for group in GROUPS:
        for word in group:
            index.setdefault(word, set()).update(group)
    return index


_CONCEPTS: Final = _concept_index()


def _related(terms: list[str]) -> list[str]:
    own = set(terms)
    found: dict[str, None] = {}
    for term in terms:
        for key in (term, stem(term)):
            for word in sorted(_CONCEPTS.get(key, ())):
                if word not in own:
                    found[word] = None
    return list(found)


#: Concept words added to one query, at most (a long query expands to many).
MAX_CONCEPTS: Final = 40
_RANKED: Final = ("SELECT rowid, bm25(memory_search, ?, ?, ?) AS rank FROM memory_search"
                  " WHERE memory_search MATCH ? ORDER BY rank LIMIT ?")
_COLUMNS: Final = ("id, project, type, summary, body, layer, confidence, sessions,"
                   " superseded_by, updated_at")
_FILTERED: Final = (
    "SELECT m.id, bm25(memory_search, ?, ?, ?) AS rank"
    " FROM memory_search JOIN memories m ON m.id = memory_search.rowid"
    " WHERE memory_search MATCH ?"
)


def _ranked(conn: sqlite3.Connection, expression: str, filters: str,
            params: list[object]) -> dict[int, float]:
    """rowid -> lexical score (higher is better) of the best ``CANDIDATES`` matches.

    Without filters FTS5 ranks on its own (fast: no join); with a project or
    type filter the join narrows the matches first.
    """
    if filters:
        sql = f"{_FILTERED}{filters} ORDER BY rank LIMIT ?"
        rows = conn.execute(sql, (*COLUMN_WEIGHTS, expression, *params, CANDIDATES))
    else:
        rows = conn.execute(_RANKED, (*COLUMN_WEIGHTS, expression, CANDIDATES))
    return {int(row[0]): -float(row[1]) for row in rows}


def _holding_every(conn: sqlite3.Connection, query: str, filters: str, params: list[object],
                   enough: int) -> bool:
    """Whether at least ``enough`` memories (passing ``filters``) hold every word of ``query``."""
    every = every_expression(query)
    if not every:
        return False
    source = ("memory_search JOIN memories m ON m.id = memory_search.rowid" if filters
              else "memory_search")
    sql = (f"SELECT count(*) FROM (SELECT 1 FROM {source}"  # noqa: S608 - fixed fragments
           f" WHERE memory_search MATCH ?{filters} LIMIT ?)")
    return int(conn.execute(sql, (every, *params, enough)).fetchone()[0]) >= enough


def search(conn: sqlite3.Connection, query: str, *, project: str | None = None,
           type: str | None = None, limit: int = 10, include_all: bool = False,
           now: float | None = None, vectors: VectorIndex | None = None) -> list[Hit]:
    """The memories that best answer ``query``, best first; hybrid with ``vectors``."""
    now = time.time() if now is None else now
    terms = query_terms(query)
    if not terms:
        return []
    filters = ""
    params: list[object] = []
    if project is not None:
        filters += " AND m.project = ?"
        params.append(project)
    if type is not None:
        filters += " AND m.type = ?"
        params.append(type)
    if vectors is not None:
        every = every_expression(query)
        whole = _ranked(conn, every, filters, params) if every else {}
        nearest = vectors.nearest(conn, query, limit=SEMANTIC_WINDOW + limit, project=project,
                                  type=type, live_only=not include_all)
        hits = _fused(conn, whole, nearest, type=type, limit=limit, include_all=include_all,
                      now=now)
        return _successors_first(conn, hits)[:limit] if include_all else hits[:limit]
    own = _ranked(conn, match_expression(terms), filters, params)
    # The concept map is for words that differ: when enough memories hold every
    # word of the query already, its second (and costlier) query is skipped.
    concepts = [] if _holding_every(conn, query, filters, params, limit) else \
        _related(terms)[:MAX_CONCEPTS]
    related = _ranked(conn, match_expression(concepts), filters, params) if concepts else {}
    lexical = {i: own.get(i, 0.0) + SYNONYM_WEIGHT * related.get(i, 0.0)
               for i in set(own) | set(related)}
    if not lexical:
        return []
    # Standing (layer, confidence, recency) moves a score by at most about 3x:
    # only the lexically best few can still reach the top, so only they are read.
    window = sorted(lexical, key=lambda i: (-lexical[i], i))[: RERANK_WINDOW + limit]
    hits = [_hit(row, own.get(row[0], 0.0), related.get(row[0], 0.0), now)
            for row in _rows(conn, window, include_all)]
    hits.sort(key=lambda h: (-h.score, h.id))
    if len(terms) > 1:
        # The bonus for holding every term can only reorder the front of the
        # list: look at the few that could still reach the top.
        for hit in hits[: COVERAGE_CHECKED + limit]:
            if held(terms, f"{hit.summary} {hit.body}") == len(terms):
                hit.score = round(hit.score * ALL_TERMS_BONUS, 6)
        hits.sort(key=lambda h: (-h.score, h.id))
    if include_all:
        hits = _successors_first(conn, hits)
    return hits[:limit]


def _rows(conn: sqlite3.Connection, ids: list[int], include_all: bool) -> list[Any]:
    """The candidates' rows; only memories in recall unless ``include_all``."""
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks})",  # noqa: S608
                        sorted(ids)).fetchall()
    return [row for row in rows if include_all or row[5] in ("buffer", "canonical")]


def _fused(conn: sqlite3.Connection, whole: dict[int, float], nearest: list[Nearest], *,
           type: str | None, limit: int, include_all: bool, now: float) -> list[Hit]:
    """The memories holding every query word, fused with the nearest vectors by rank."""
    lexical = sorted(whole, key=lambda i: (-whole[i], i))[: RERANK_WINDOW + limit]
    lexical_rank = {memory_id: rank for rank, memory_id in enumerate(lexical, start=1)}
    # A memory found by meaning alone must be near enough to mean something.
    kept = [n for n in nearest if n.similarity >= SEMANTIC_FLOOR or n.memory_id in lexical_rank]
    similar = {n.memory_id: rank for rank, n in enumerate(kept, start=1)}
    ids = set(lexical_rank) | set(similar)
    if not ids:
        return []
    hits = []
    for row in _rows(conn, list(ids), include_all):
        memory_id = row[0]
        if type is not None and row[2] != type:
            continue
        fused = 0.0
        if memory_id in lexical_rank:
            fused += LEXICAL_WEIGHT / (RRF_K + lexical_rank[memory_id])
        if memory_id in similar:
            fused += SEMANTIC_WEIGHT / (RRF_K + similar[memory_id])
        hit = _hit(row, 100.0 * fused, 0.0, now)
        hit.found_by = "+".join(side for side, found in (
            ("words", memory_id in lexical_rank), ("meaning", memory_id in similar)) if found)
        hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits


def _hit(row: tuple[Any, ...], own: float, related: float, now: float) -> Hit:
    (memory_id, project, kind, summary, body, layer, confidence, sessions, superseded_by,
     updated_at) = row
    lexical = own + SYNONYM_WEIGHT * related
    days = max(0.0, now - float(updated_at)) / _DAY
    recency = 0.9 + 0.1 * 0.5 ** (days / RECENCY_HALF_LIFE_DAYS)
    score = (lexical * LAYER_WEIGHTS.get(layer, 1.0) * (0.8 + 0.2 * float(confidence))
             * recency)
    found_by = "+".join(side for side, found in (("words", own), ("concepts", related)) if found)
    return Hit(id=memory_id, project=project, type=kind, summary=summary, body=body,
               layer=layer, confidence=confidence, sessions=sessions,
               superseded_by=superseded_by, score=round(score, 6), found_by=found_by)


def _successors_first(conn: sqlite3.Connection, hits: list[Hit]) -> list[Hit]:
    """Lift (or bring in) the successor of every superseded hit just above it."""
    by_id = {hit.id: hit for hit in hits}
    for hit in list(hits):
        successor_id = hit.superseded_by
        if successor_id is None:
            continue
        successor = by_id.get(successor_id)
        if successor is None:
            row = conn.execute(
                "SELECT id, project, type, summary, body, layer, confidence, sessions,"
                " superseded_by FROM memories WHERE id = ?", (successor_id,)).fetchone()
            if row is None:
                continue
            successor = Hit(**dict(row), score=0.0, found_by="successor")
            by_id[successor.id] = successor
        if successor.score <= hit.score:
            successor.score = round(hit.score * 1.01 + 1e-6, 6)
    return sorted(by_id.values(), key=lambda h: (-h.score, h.id))
