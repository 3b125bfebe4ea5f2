"""Search over memories (never slices): safe terms, identifiers by their parts, ranked.

Ranking, documented (docs/recall.md has the reasons and the measurements):

1. Words (``memspool.base.lexical``, shared with the prompt-recall hook):
   each memory's *relevance*, in [0, 1), is the share of the query it
   holds by weight (BM25F over summary, body and identifier parts, each
   term weighted by its idf), read at a bounded cost, rarest terms first.
   The concept map's words for the same trouble (``concepts.py``) join the
   query at ``SYNONYM_WEIGHT`` of the user's own words, outside its whole
   weight.
2. Meaning (when semantic recall is on, ``vectors.py``, its costly half
   worked out on a worker thread while the words are ranked): the nearest
   memories by vector join the best ``LEXICAL_WINDOW`` by words, and every
   memory of that pool is scored both ways (its relevance from its text,
   its cosine similarity from its stored vector), so neither side's finds
   are lost. The two are blended, ``(1 - w) * relevance + w * similarity``:
   ``w`` is ``MEANING_WEIGHT``, or ``MEANING_WEIGHT_UNSURE`` when no memory
   of the pool holds ``UNSURE_BELOW`` of the query by its words. A memory
   that holds every query word and was in the top ``KEPT_TOP`` by words
   stays there.
3. The bar (``memspool.base.lexical.relevant``): a query returns nothing
   unless some memory of its ranking passes it (with meaning, a similarity
   of ``SEMANTIC_FLOOR`` passes too); when one does, the ranking comes
   along.
4. Standing: the score is then multiplied by the layer's weight (canonical
   1.0, buffer 0.95, archived 0.6, superseded 0.5), ``0.8 + 0.2 *
   confidence`` and recency ``0.9 + 0.1 * 0.5 ** (days since last change /
   90)``, so it stays in [0, 1]: the score a user reads.
5. A superseded memory never ranks above the memory that superseded it:
   when both are in the results the successor is lifted above it, and with
   ``--all`` a superseded hit brings its successor along.

Superseded and archived memories are found only with ``include_all``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from typing import Any, Final

from memspool.base.lexical import Query, prepare, rank, relevant, rows_with_stems
from memspool.base.terms import query_terms, stem
from memspool.recall.concepts import GROUPS
from memspool.recall.vectors import Probe, VectorIndex

__all__ = ["Hit", "search"]

SYNONYM_WEIGHT: Final = 0.4
#: Concept words added to one query, at most (a long query expands to many).
MAX_CONCEPTS: Final = 24
LAYER_WEIGHTS: Final = {"canonical": 1.0, "buffer": 0.95, "archived": 0.6, "superseded": 0.5}
RECENCY_HALF_LIFE_DAYS: Final = 90.0
_DAY: Final = 86400.0
#: The best memories by words that are also scored by meaning, beyond ``limit``.
LEXICAL_WINDOW: Final = 30
#: Nearest memories read from the vectors, beyond the ``limit`` asked for.
SEMANTIC_WINDOW: Final = 20
#: How much meaning weighs in the blend (chosen on the tune splits: docs/recall.md).
MEANING_WEIGHT: Final = 0.35
#: Below this best relevance the words are unsure, and meaning weighs this much.
UNSURE_BELOW: Final = 0.3
MEANING_WEIGHT_UNSURE: Final = 0.6
#: Cosine similarity from which a memory answers a query by meaning alone (the
#: bar); a query about nothing stored still reaches 0.4-0.6 with the shipped
#: model (tests/data/recall_noise.jsonl).
SEMANTIC_FLOOR: Final = 0.45
#: The least similarity of a memory that holds none of the query's words.
MEANING_ALONE: Final = 0.3
#: Memories holding every query word kept in the top this many of hybrid search.
KEPT_TOP: Final = 3
_COLUMNS: Final = ("m.id, m.summary, m.body, m.project, m.type, m.layer, m.confidence,"
                   " m.sessions, m.superseded_by, m.updated_at")


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
    #: How well it answers the query, in [0, 1] (see the module's docstring).
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


@dataclasses.dataclass
class _Scored:
    row: tuple[Any, ...]
    relevance: float
    held: int
    related: int
    similarity: float | None = None


def _filters(project: str | None, type: str | None, include_all: bool,
             ) -> tuple[str, list[object]]:
    where = ""
    params: list[object] = []
    if project is not None:
        where += " AND m.project = ?"
        params.append(project)
    if type is not None:
        where += " AND m.type = ?"
        params.append(type)
    if not include_all:
        where += " AND m.layer IN ('buffer', 'canonical')"
    return where, params


def _by_words(conn: sqlite3.Connection, terms: list[str], *, where: str, params: list[object],
              project: str | None) -> tuple[Query, list[_Scored]]:
    """The query by words, the concept map's words for the same trouble joining it at
    ``SYNONYM_WEIGHT``, and its best memories."""
    related = _related(terms)[:MAX_CONCEPTS]
    query = prepare(conn, terms, related, SYNONYM_WEIGHT)
    return query, [_Scored(*item) for item in rank(conn, query, _COLUMNS, where=where,
                                                   params=params, project=project)]


def search(conn: sqlite3.Connection, query: str, *, project: str | None = None,  # noqa: PLR0913 - the filters, keyword-only
           type: str | None = None, limit: int = 10, include_all: bool = False,
           now: float | None = None, vectors: VectorIndex | None = None) -> list[Hit]:
    """The memories that answer ``query``, best first; hybrid with ``vectors``."""
    now = time.time() if now is None else now
    terms = query_terms(query)
    if not terms:
        return []
    where, params = _filters(project, type, include_all)
    # Meaning's costly half (the query's vector, a set's nearest rows) runs on
    # a worker thread while the words are ranked here.
    probe = (vectors.probe(conn, query, limit=SEMANTIC_WINDOW + limit, project=project)
             if vectors is not None else None)
    words, found = _by_words(conn, terms, where=where, params=params, project=project)
    if vectors is not None and probe is not None:
        hits = _fused(conn, probe.result(), words, found, vectors, where=where, params=params,
                      project=project, type=type, include_all=include_all, limit=limit,
                      now=now)
    else:
        # The bar is the query's: when some memory answers it well, the rest
        # of the ranking comes along (a weaker match may still be the one).
        if not any(relevant(s.relevance, s.held, words.own) for s in found):
            return []
        ranked = sorted((s for s in found if s.relevance > 0),
                        key=lambda s: (-s.relevance * _standing(s.row, now), -int(s.row[0])))
        hits = [_hit(s, _score(s.row, s.relevance, now)) for s in ranked[:limit]]
    if include_all:
        hits = _successors_first(conn, hits)
    return hits[:limit]


def _fused(conn: sqlite3.Connection, probe: Probe, words: Query, found: list[_Scored],  # noqa: PLR0913 - the ranking's state, private
           vectors: VectorIndex, *, where: str, params: list[object], project: str | None,
           type: str | None, include_all: bool, limit: int, now: float) -> list[Hit]:
    """The best by words and the nearest by meaning, each scored both ways, blended."""
    by_id = {int(s.row[0]): s for s in found[: LEXICAL_WINDOW + limit]}
    nearest, similar = vectors.nearest_and(conn, probe, limit=SEMANTIC_WINDOW + limit,
                                           project=project, type=type,
                                           live_only=not include_all, also=tuple(by_id))
    by_words = [memory_id for memory_id, s in by_id.items() if s.relevance > 0]
    missing = [n.memory_id for n in nearest if n.memory_id not in by_id]
    if missing:
        for *row, stems in rows_with_stems(conn, _COLUMNS, missing, where, params):
            by_id[int(row[0])] = _Scored(tuple(row), *words.relevance(row[1], row[2],
                                                                       int(row[0]), stems))
    for memory_id, similarity in similar.items():
        by_id[memory_id].similarity = similarity
    for n in nearest:
        if n.memory_id in by_id:
            by_id[n.memory_id].similarity = n.similarity
    # The bar is the query's: some memory must answer it well, by its words
    # or by a meaning near enough; then the blended ranking comes along.
    if not any(relevant(s.relevance, s.held, words.own)
               or (s.similarity or 0.0) >= SEMANTIC_FLOOR for s in by_id.values()):
        return []
    # How sure the words are: when no memory holds much of the query (a
    # paraphrase), meaning weighs more.
    best = max((s.relevance for s in by_id.values()), default=0.0)
    weight = MEANING_WEIGHT if best >= UNSURE_BELOW else MEANING_WEIGHT_UNSURE
    blended: list[tuple[float, int, float, _Scored]] = []
    for s in by_id.values():
        similarity = max(0.0, s.similarity or 0.0)
        if s.relevance <= 0 and similarity < MEANING_ALONE:
            continue
        blend = (1 - weight) * s.relevance + weight * similarity
        blended.append((_score(s.row, blend, now), int(s.row[0]), similarity, s))
    blended.sort(key=lambda b: (-b[0], -b[1]))
    # What the words alone put in the top 3 holding every query word stays there.
    lexical_top = sorted((by_id[i] for i in by_words), key=lambda s: -s.relevance * _standing(
        s.row, now))[:KEPT_TOP]
    kept = [int(s.row[0]) for s in lexical_top if s.held - s.related >= words.own
            and relevant(s.relevance, s.held, words.own)]
    hits = []
    for place, (score, memory_id, similarity, s) in enumerate(blended):
        if place >= limit and memory_id not in kept and not include_all:
            continue  # never returned (with --all a successor may come from below)
        hit = _hit(s, score)
        if similarity >= MEANING_ALONE:
            hit.found_by = f"{hit.found_by}+meaning" if s.relevance > 0 else "meaning"
        hits.append(hit)
    return _keep_in_top(hits, kept, KEPT_TOP)


def _keep_in_top(hits: list[Hit], kept: list[int], top: int) -> list[Hit]:
    """``hits`` with every id of ``kept`` among the first ``top``, displacing the lowest
    of the others there; the order is otherwise kept."""
    head = hits[:top]
    wanted = [h for h in hits if h.id in kept and h not in head]
    for hit in wanted:
        others = [h for h in head if h.id not in kept]
        if not others:
            break
        head.remove(others[-1])
        head.append(hit)
    order = {id(h): i for i, h in enumerate(hits)}
    head.sort(key=lambda h: order[id(h)])
    rest = [h for h in hits if h not in head]
    for i in range(len(head) - 2, -1, -1):  # scores never rise down the list
        head[i].score = max(head[i].score, head[i + 1].score)
    return head + rest


def _standing(row: tuple[Any, ...], now: float) -> float:
    layer, confidence, updated_at = row[5], row[6], row[9]
    days = max(0.0, now - float(updated_at)) / _DAY
    recency = 0.9 + 0.1 * 0.5 ** (days / RECENCY_HALF_LIFE_DAYS)
    return float(LAYER_WEIGHTS.get(str(layer), 1.0) * (0.8 + 0.2 * float(confidence)) * recency)


def _score(row: tuple[Any, ...], match: float, now: float) -> float:
    """The score a user reads: how well it matches, times its standing."""
    return round(min(1.0, match * _standing(row, now)), 3)


def _hit(scored: _Scored, score: float) -> Hit:
    (memory_id, summary, body, project, kind, layer, confidence, sessions, superseded_by,
     _updated_at) = scored.row
    return Hit(id=memory_id, project=project, type=kind, summary=summary, body=body,
               layer=layer, confidence=confidence, sessions=sessions,
               superseded_by=superseded_by, score=score,
               found_by="+".join(side for side, found in (
                   ("words", scored.held > scored.related), ("concepts", scored.related > 0))
                   if found) or "words")


def _successors_first(conn: sqlite3.Connection, hits: list[Hit]) -> list[Hit]:
    """Lift (or bring in) the successor of every superseded hit just above it."""
    order = list(hits)
    for hit in hits:
        if hit.superseded_by is None:
            continue
        successor = next((h for h in order if h.id == hit.superseded_by), None)
        if successor is None:
            row = conn.execute(
                "SELECT id, project, type, summary, body, layer, confidence, sessions,"
                " superseded_by FROM memories WHERE id = ?", (hit.superseded_by,)).fetchone()
            if row is None:
                continue
            successor = Hit(**dict(row), score=0.0, found_by="successor")
        elif order.index(successor) < order.index(hit):
            continue
        else:
            order.remove(successor)
        successor.score = max(successor.score, min(1.0, round(hit.score + 0.001, 3)))
        if successor.score <= hit.score:  # both at 1.0: the superseded one steps down
            hit.score = round(successor.score - 0.001, 3)
        order.insert(order.index(hit), successor)
    return order
