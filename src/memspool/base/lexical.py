"""Ranking memories by their words, at a bounded cost, and the relevance bar (standard library).

Shared by search (``memspool.recall.search``) and the prompt-recall hook
(``recall.py``), so both rank alike and use one bar.

1. **Terms.** The query's terms (``terms.query_terms``: stop words out,
   identifiers whole and by their parts), each stemmed as the index stems it
   (``porter.py``).
2. **How common each term is.** FTS5 counts a term's memories up to
   ``DF_COUNTED``; past that the count is estimated from how far back among
   the memory ids the newest ``DF_COUNTED`` matches reach. A term whose count
   the store keeps (``concept_counts``: the concept map's words, counted after
   writes by ``memspool.recall.counts``) is read from there while the store
   has moved less than ``COUNTS_DRIFT`` since: the same number, without a
   dozen reads of the index a query.
3. **Reads, rarest term first**: each term's newest matches, at most
   ``TERM_READ`` a term and ``READ_BUDGET`` in all. A rare term's matches are
   all read; a common one's only its newest (its weight is small anyway).
   When even the rarest term is common, the memories holding the rarest few
   together are read too. So a query's cost depends neither on how common
   its words are nor on the size of the store.
4. **First stage**: each memory read weighs the idf of the terms it was
   found by; the best ``FIRST_STAGE`` are read from the store.
5. **Relevance**, in [0, 1): BM25F over the summary (weight 4), the body (1)
   and the identifier parts (2), k1 1.2, b 0.75, each term's part saturating
   below 1 and weighted by its idf, divided by the query's whole idf. It is
   the share of the query a memory holds, by weight: 0 holds nothing, a
   memory that holds every term (in its summary) comes near 1.

**The bar** (``relevant``): a memory answers a query when its relevance is
at least ``RELEVANCE_FLOOR`` and, for a query of two terms or more, it holds
at least two of them. ``memspool search`` shows nothing below the bar
("no memory matches"), and the prompt-recall hook injects nothing below it.
"""

from __future__ import annotations

import heapq
import math
import re
import sqlite3
from collections import Counter

from memspool.base.porter import porter_stem
from memspool.base.terms import folded, identifiers, quoted

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final

__all__ = [
    "COUNTS_DRIFT", "FIRST_STAGE", "RELEVANCE_FLOOR", "Query", "Term", "count", "forget",
    "kept_counts", "moved", "packed", "prepare", "rank", "relevant", "size", "span",
    "stems_column", "tokens",
]

#: bm25 column weights: summary, body, identifier parts (the index's columns).
COLUMN_WEIGHTS: Final = (4.0, 1.0, 2.0)
K1: Final = 1.2
B: Final = 0.75
#: A term's memories are counted exactly up to this many (a few hundredths of a ms).
DF_COUNTED: Final = 500
#: A kept count stands while the store has moved by at most this share of its memories
#: since it was counted (memories added or removed, and ids given out since).
COUNTS_DRIFT: Final = 0.05
#: Matches read for one term at most, and for one query in all.
TERM_READ: Final = 300
READ_BUDGET: Final = 1200
#: Memories read from the store and scored in full.
FIRST_STAGE: Final = 50
#: The bar: the least relevance of a memory that answers a query. Chosen on
#: the tune queries and the tune noise queries (docs/recall.md).
RELEVANCE_FLOOR: Final = 0.2
_TOKEN: Final = re.compile(r"[^\W_]+")
_ASCII_TOKEN: Final = re.compile(r"[a-z0-9]+")
#: A memory's words as the index stems them, kept beside it by the store
#: (``memory_stems``, written by :func:`packed`): read with the memory, its text
#: need not be split and stemmed again.
_STEMS: Final = "(SELECT t.stems FROM memory_stems t WHERE t.id = m.id)"
#: What parts the columns of :func:`packed`.
_COLUMNS_APART: Final = "\x1f"
#: A memory scored for the first time is read from its packed stems, one search
#: of its text a term, when the query has at most this many terms; else (or when
#: it is scored again) each column's stems are counted once and kept.
SEARCHED_TERMS: Final = 6


class Term:
    """One query term: its text, its stem, its FTS5 phrase and its weight."""

    __slots__ = ("phrase", "stem", "text", "weight")

    def __init__(self, text: str, weight: float = 1.0) -> None:
        self.text = text
        self.stem = porter_stem(text)
        self.phrase = quoted(text)
        self.weight = weight


def _words(text: str) -> list[str]:
    """``text``'s words as FTS5's ``unicode61 remove_diacritics 2`` finds them."""
    lower = text.lower()
    if lower.isascii():  # most text: the same words, found a third faster
        return _ASCII_TOKEN.findall(lower)
    return _TOKEN.findall(folded(lower))


def tokens(text: str) -> list[str]:
    """The stems of ``text``'s words, as the index's porter tokenizer makes them."""
    return [porter_stem(word) for word in _words(text)]


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian, 7 bits a byte, the ninth byte whole)."""
    out, value, count = [], 0, 0
    for byte in blob:
        count += 1
        if count == 9:
            out.append((value << 8) | byte)
            value = count = 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value = count = 0
    return out


def _index_totals(conn: sqlite3.Connection) -> tuple[int | None, tuple[float, float, float]]:
    """The memories indexed and the average tokens per column, from FTS5's averages
    record (rowid 1 of its data table: the row count, then each column's tokens)."""
    try:
        row = conn.execute("SELECT block FROM memory_search_data WHERE id = 1").fetchone()
        values = _varints(bytes(row[0])) if row else []
        if len(values) >= 4:
            n = max(1, values[0])
            return values[0], (max(1.0, values[1] / n), max(1.0, values[2] / n),
                               max(1.0, values[3] / n))
    except Exception:  # noqa: BLE001, S110 - a format we cannot read: typical lengths
        pass
    return None, (20.0, 40.0, 6.0)


class Query:
    """A query ready to rank: its terms' idf and the index's average column lengths."""

    def __init__(self, conn: sqlite3.Connection, terms: Sequence[Term]) -> None:
        self.terms = list(terms)
        rows, self.averages = _index_totals(conn)
        self._span = span(conn)
        self.memories = _indexed(rows, self._span)
        kept = kept_counts(conn, [term.phrase for term in self.terms], self.memories,
                           self._span[1])
        self.df = [kept[term.phrase] if term.phrase in kept
                   else count(conn, term.phrase, self._span, self.memories)
                   for term in self.terms]
        n = max(1, self.memories)
        # A term no memory holds weighs most: a memory holding the query's other
        # words holds little of what it asks.
        self.idf = [math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in self.df]
        #: (stem, weight times idf, the user's own?) of each distinct stem, for scoring.
        scored: dict[str, tuple[str, float, bool]] = {}
        for term, idf in zip(self.terms, self.idf, strict=True):
            scored.setdefault(term.stem, (term.stem, term.weight * idf, term.weight >= 1.0))
        self._scored = list(scored.values())
        #: The query's whole weight, and how many distinct stems it has: the
        #: user's own terms only (two words of one stem count once).
        self.whole = sum(weight for _, weight, own in self._scored if own)
        self.own = sum(1 for _, _, own in self._scored if own)

    # -- candidates -------------------------------------------------------------

    def candidates(self, conn: sqlite3.Connection, project: str | None = None,
                   want: int | None = None) -> list[int]:
        """The ids of the (up to) ``want`` (``FIRST_STAGE``) memories most worth
        scoring, best first."""
        want = FIRST_STAGE if want is None else want
        order = sorted(range(len(self.terms)),
                       key=lambda i: (self.df[i], -self.terms[i].weight))
        weight: dict[int, float] = {}
        budget = READ_BUDGET
        for i in order:
            if budget <= 0 or not self.df[i]:
                continue
            term = self.terms[i]
            read = min(TERM_READ, budget)
            for memory_id in self._read(conn, term.phrase, read, project):
                weight[memory_id] = weight.get(memory_id, 0.0) + self.idf[i] * term.weight
            budget -= min(read, self.df[i])
        rare = [i for i in order if self.df[i] and self.terms[i].weight >= 1.0][:3]
        if len(rare) > 1 and self.df[rare[0]] > TERM_READ:
            # Even the rarest term is common: the memories holding the rarest few
            # together are the likeliest answers, and only their newest were read.
            together = " AND ".join(self.terms[i].phrase for i in rare)
            bonus = sum(self.idf[i] for i in rare)
            for memory_id in self._read(conn, together, want, project):
                weight[memory_id] = max(weight.get(memory_id, 0.0), bonus)
        return heapq.nlargest(want, weight, key=lambda m: (weight[m], m))

    @staticmethod
    def _read(conn: sqlite3.Connection, expression: str, limit: int,
              project: str | None) -> list[int]:
        if project is None:
            rows = conn.execute("SELECT rowid FROM memory_search WHERE memory_search MATCH ?"
                                " ORDER BY rowid DESC LIMIT ?", (expression, limit))
        else:
            rows = conn.execute(
                "SELECT s.rowid FROM (SELECT rowid FROM memory_search WHERE memory_search"
                " MATCH ? ORDER BY rowid DESC LIMIT ?) s JOIN memories m ON m.id = s.rowid"
                " WHERE m.project = ?", (expression, limit, project))
        return [int(row[0]) for row in rows]

    # -- scoring ----------------------------------------------------------------

    def relevance(self, summary: str, body: str, memory_id: int | None = None,
                  stems: str | None = None) -> tuple[float, int, int]:
        """(relevance in [0, 1), how many of the query's terms it holds, how many of
        them are related words rather than the user's own) of one memory; ``stems``
        are its packed stems, when read with it (:func:`stems_column`)."""
        if self.whole <= 0:
            return 0.0, 0, 0
        columns, counted = _fields(summary, body, memory_id, stems,
                                   count=len(self._scored) > SEARCHED_TERMS)
        a1, a2, a3 = self.averages
        score, held, related = 0.0, 0, 0
        if counted is not None:
            (n1, c1), (n2, c2), (n3, c3) = counted
            w1 = COLUMN_WEIGHTS[0] / (1 - B + B * n1 / a1)
            w2 = COLUMN_WEIGHTS[1] / (1 - B + B * n2 / a2)
            w3 = COLUMN_WEIGHTS[2] / (1 - B + B * n3 / a3)
            for root, weight, own in self._scored:
                tf = w1 * c1.get(root, 0) + w2 * c2.get(root, 0) + w3 * c3.get(root, 0)
                if tf:
                    score += weight * tf / (tf + K1)
                    held += 1
                    related += not own
            return min(1.0, score / self.whole), held, related
        # Each stem stands between two blanks of its own (" a  b "), so a search for
        # " a " finds every one, the same stem twice in a row included.
        s1, s2, s3 = columns.split(_COLUMNS_APART)
        w1 = COLUMN_WEIGHTS[0] / (1 - B + B * s1.count(" ") / 2 / a1)
        w2 = COLUMN_WEIGHTS[1] / (1 - B + B * s2.count(" ") / 2 / a2)
        w3 = COLUMN_WEIGHTS[2] / (1 - B + B * s3.count(" ") / 2 / a3)
        for root, weight, own in self._scored:
            marked = f" {root} "
            tf = w1 * s1.count(marked) + w2 * s2.count(marked) + w3 * s3.count(marked)
            if tf:
                score += weight * tf / (tf + K1)
                held += 1
                related += not own
        return min(1.0, score / self.whole), held, related


_Fields = tuple[tuple[int, dict[str, int]], tuple[int, dict[str, int]],
                tuple[int, dict[str, int]]]
#: Memories' packed stems and, once counted, each column's stem counts, by id, as
#: last scored (a warm process scores the same memories again and again): [summary,
#: body, packed stems, counts or None]; the text is compared before one is reused.
_SEEN: dict[int, list[Any]] = {}
SEEN_MAX: Final = 5000


def forget(memory_id: int) -> None:
    """Drop a memory's text from the in-process cache (it was forgotten)."""
    _SEEN.pop(memory_id, None)


def _column(text: str) -> str:
    return "".join(f" {stem} " for stem in tokens(text))


def packed(summary: str, body: str) -> str:
    """The stems of a memory's three indexed columns (summary, body, identifier
    parts), as the index stems them: each stem between two blanks of its own
    (" a  b "), the columns parted by U+001F. The store keeps them beside each
    memory (its SQL function ``memspool_stems``), so search reads them instead of
    stemming the memory's text again."""
    return _COLUMNS_APART.join((_column(summary), _column(body),
                                _column(identifiers(f"{summary} {body}"))))


def _counts(columns: str) -> _Fields:
    """(stems, count of each stem) of each column of ``columns`` (:func:`packed`)."""
    first, second, third = (column.split() for column in columns.split(_COLUMNS_APART))
    return ((len(first), dict(Counter(first))), (len(second), dict(Counter(second))),
            (len(third), dict(Counter(third))))


def _fields(summary: str, body: str, memory_id: int | None, stems: str | None, *,
            count: bool) -> tuple[str, _Fields | None]:
    """A memory's packed stems, and their counts when this process has them or
    ``count`` asks for them; a memory scored again is counted (and kept so)."""
    if memory_id is not None:
        found = _SEEN.get(memory_id)
        if found is not None and found[0] == summary and found[1] == body:
            if found[3] is None:
                found[3] = _counts(found[2])
            return found[2], found[3]
    if stems is None:
        stems = packed(summary, body)
    counted = _counts(stems) if count else None
    if memory_id is not None:
        if len(_SEEN) >= SEEN_MAX:
            _SEEN.clear()
        _SEEN[memory_id] = [summary, body, stems, counted]
    return stems, counted


def stems_column(ids: Sequence[int]) -> tuple[str, list[int]]:
    """A column to select beside the rows of memories ``m`` of ``ids`` (and its
    parameters, which come first): the packed stems the store keeps of each memory
    this process has not scored yet (stemming its text again costs more than
    reading them), else NULL."""
    unseen = [memory_id for memory_id in ids if memory_id not in _SEEN]
    if not unseen:
        return "NULL", []
    marks = ", ".join("?" * len(unseen))
    return f"CASE WHEN m.id IN ({marks}) THEN {_STEMS} END", unseen


def rows_with_stems(conn: sqlite3.Connection, columns: str, ids: Sequence[int], where: str,
                    params: Sequence[Any]) -> list[Any]:
    """The rows of ``columns`` (``m`` the memories) of memories ``ids`` that meet
    ``where`` (ANDed, with ``params``), each with its packed stems last
    (:func:`stems_column`). A store its writers have not yet given the stems
    table (a reader of a store written by an older memspool) gives NULL, and
    the stems are found in the text."""
    marks = ", ".join("?" * len(ids))
    column, unseen = stems_column(ids)
    sql = f"SELECT {columns}, {{}} FROM memories m WHERE m.id IN ({marks}){where}"  # noqa: S608 - fixed fragments
    try:
        return conn.execute(sql.format(column), (*unseen, *ids, *params)).fetchall()
    except sqlite3.OperationalError as exc:
        if "memory_stems" not in str(exc):
            raise
        return conn.execute(sql.format("NULL"), (*ids, *params)).fetchall()


def prepare(conn: sqlite3.Connection, terms: Sequence[str],
            related: Sequence[str] = (), related_weight: float = 0.0) -> Query:
    """The query of ``terms`` (the user's own) and ``related`` words weighing less."""
    own = [Term(t) for t in terms]
    stems = {term.stem for term in own}
    extra = []
    for word in related:
        term = Term(word, related_weight)
        if term.stem not in stems:
            stems.add(term.stem)
            extra.append(term)
    return Query(conn, own + extra)


def span(conn: sqlite3.Connection) -> tuple[int, int]:
    """The lowest and highest memory id (0, 0 for none)."""
    low, high = conn.execute("SELECT (SELECT min(id) FROM memories),"
                             " (SELECT max(id) FROM memories)").fetchone()
    return int(low or 0), int(high or 0)


def _indexed(rows: int | None, ids: tuple[int, int]) -> int:
    return rows if rows is not None else max(0, ids[1] - ids[0] + 1)


def size(conn: sqlite3.Connection) -> tuple[int, tuple[int, int]]:
    """The memories the index holds and their :func:`span`, as a query reads them."""
    ids = span(conn)
    return _indexed(_index_totals(conn)[0], ids), ids


def count(conn: sqlite3.Connection, phrase: str, ids: tuple[int, int], memories: int) -> int:
    """How many memories hold ``phrase`` (an FTS5 phrase): counted up to
    DF_COUNTED, estimated past that; ``ids`` is :func:`span`, ``memories`` the
    memories indexed."""
    found, oldest = conn.execute(
        "SELECT count(*), min(rowid) FROM (SELECT rowid FROM memory_search"
        " WHERE memory_search MATCH ? ORDER BY rowid DESC LIMIT ?)",
        (phrase, DF_COUNTED)).fetchone()
    if found < DF_COUNTED:
        return int(found)
    low, high = ids
    # The newest DF_COUNTED matches reach back to ``oldest``: spread like
    # that over every id, the term has about this many.
    return min(memories, int(found * (high - low + 1) / max(1, high - int(oldest) + 1)))


def moved(memories: int, max_id: int, counted_rows: int, counted_max_id: int) -> bool:
    """Has the store moved past COUNTS_DRIFT since a count made at ``counted_rows``
    memories and ids up to ``counted_max_id``? Memories added or removed, or ids given
    out since (a memory forgotten and another saved leaves the total as it was)."""
    drift = max(abs(memories - counted_rows), max_id - counted_max_id)
    return drift > COUNTS_DRIFT * max(memories, counted_rows)


def kept_counts(conn: sqlite3.Connection, phrases: Sequence[str], memories: int,
                max_id: int) -> dict[str, int]:
    """The counts the store keeps of ``phrases`` that still stand (:func:`moved`);
    none from a store without the table (one not yet migrated)."""
    if not phrases:
        return {}
    marks = ", ".join("?" * len(phrases))
    try:
        rows = conn.execute(f"SELECT phrase, df, rows, max_id FROM concept_counts"  # noqa: S608 - fixed fragments
                            f" WHERE phrase IN ({marks})", list(phrases)).fetchall()
    except conn.OperationalError:  # a store not yet migrated: every term is counted
        return {}
    return {str(row[0]): int(row[1]) for row in rows
            if not moved(memories, max_id, int(row[2]), int(row[3]))}


def relevant(relevance: float, held: int, terms: int) -> bool:
    """The bar: does a memory of this ``relevance``, holding ``held`` of the query's
    ``terms`` own terms, answer the query?"""
    return relevance >= RELEVANCE_FLOOR and held >= min(2, terms)


def rank(conn: sqlite3.Connection, query: Query, columns: str, *, where: str = "",  # noqa: PLR0913 - the SQL's parts, keyword-only (stdlib hook path)
         params: Sequence[Any] = (), project: str | None = None,
         want: int | None = None) -> list[tuple[tuple[Any, ...], float, int, int]]:
    """(row, relevance, held, related held) of the best memories, best first.

    ``columns`` must start with ``id, summary, body``; ``where`` (ANDed, with
    ``params``) filters the rows, ``project`` the reads.
    """
    ids = query.candidates(conn, project, FIRST_STAGE if want is None else want)
    if not ids:
        return []
    scored = []
    for *row, stems in rows_with_stems(conn, columns, ids, where, params):
        scored.append((tuple(row), *query.relevance(row[1], row[2], int(row[0]), stems)))
    scored.sort(key=lambda item: (-item[1], -int(item[0][0])))
    return scored
