"""After a forget: no trace of the text left in the database file or its WAL.

Deleting rows is not enough for SQLite to forget their text:

- the full-text index (FTS5) deletes by writing delete markers beside the
  old segments, which still hold every term until the segments are merged:
  :func:`merge_search_index` merges them into one, dropping what was deleted;
- freed pages and freed space in pages keep their old bytes, unless
  ``secure_delete`` is on (every connection sets it, see
  :func:`memspool.store.db.connect`), which overwrites them with zeros;
- the WAL keeps the page images of every transaction until a checkpoint:
  :func:`clear_wal` copies them into the database and truncates the WAL to
  nothing.
"""

from __future__ import annotations

import sqlite3

__all__ = ["clear_wal", "merge_search_index"]


def merge_search_index(conn: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment (inside the caller's transaction).

    Costs a rewrite of the index (about a second per 100,000 memories, see
    docs/benchmarks.md): paid by forget only.
    """
    conn.execute("INSERT INTO memory_search (memory_search) VALUES ('optimize')")


def clear_wal(conn: sqlite3.Connection) -> bool:
    """Checkpoint the WAL into the database and truncate it; False when a reader still
    holds an older snapshot (after the busy timeout), so the WAL could not be emptied."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy
