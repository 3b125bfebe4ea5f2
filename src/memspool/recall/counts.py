"""The concept map's words, counted: how many memories hold each, kept in the store.

A query's terms weigh by how rare they are (``memspool.base.lexical``), and
each of the concept map's words that joins a query (a dozen or more for
"connection pool exhausted") would be counted in the full-text index on
every search. They are the same few hundred words for every query, so
they are counted after writes instead (:func:`refresh`, from
:func:`memspool.recall.context.render_dirty`, which every writer calls) and
kept in ``concept_counts`` with the size of the store they were counted at. A
search reads a kept count while the store has moved less than
``COUNTS_DRIFT`` (5%) since, and counts the word itself otherwise; so the
words are counted again only when the store has grown or shrunk by that
much, and a kept count is never older than that.
"""

from __future__ import annotations

import sqlite3
from functools import cache

from memspool.base.lexical import count, kept_counts, size
from memspool.base.terms import quoted
from memspool.recall.concepts import GROUPS

__all__ = ["phrases", "refresh"]


@cache
def phrases() -> tuple[str, ...]:
    """The FTS5 phrase of every word of the concept map."""
    return tuple(sorted({quoted(word) for group in GROUPS for word in group}))


def refresh(conn: sqlite3.Connection) -> int:
    """Count again the words whose kept count no longer stands (inside the caller's
    transaction); returns how many were counted."""
    memories, ids = size(conn)
    wanted = phrases()
    standing = kept_counts(conn, wanted, memories, ids[1])
    stale = [phrase for phrase in wanted if phrase not in standing]
    if stale:
        conn.executemany(
            "INSERT INTO concept_counts (phrase, df, rows, max_id) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (phrase) DO UPDATE SET df = excluded.df, rows = excluded.rows,"
            " max_id = excluded.max_id",
            [(phrase, count(conn, phrase, ids, memories), memories, ids[1])
             for phrase in stale])
    return len(stale)
