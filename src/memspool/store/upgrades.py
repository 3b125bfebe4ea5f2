"""Schema migrations that SQL alone cannot write: each is a function of the connection.

:data:`memspool.store.db.MIGRATIONS` runs them in order, inside the migration's
transaction, with foreign keys off (a table rebuild must not cascade).

``ids_never_reused`` gives ``memories.id`` AUTOINCREMENT. Without it SQLite
hands a forgotten memory's id to the next memory when it was the highest, so
a retried ``DELETE /memories/48`` (or ``forget(48)``, or a ``#48`` an agent
saw in its context block) would delete another memory. SQLite cannot add
AUTOINCREMENT to a column, so the table is rebuilt: its own ``CREATE TABLE``
statement is read back from the schema (whatever columns later migrations
added), the rows are copied with their ids, and every index and trigger on
the table is re-created from its stored SQL. The full-text and vector tables
are keyed by memory id, so they stay in step without being touched.

``slices_note_column`` mends stores that reached version 4 before migration 4
gained ``slices.digest_note`` and the ``memories_summary`` index (a build of
2026-12-01 between the two): without the column no slice is ever digested.

``edited_column`` adds ``memories.edited_at`` (when a person last corrected the
memory's text) where the store lacks it: safe to run again on a store whose
version was set back.

``tombstones_keyed`` replaces what a forget tombstone kept in clear (the
memory's key, which may be a slug of a secret, and an unkeyed hash of its
text) with keyed hashes (see :mod:`memspool.store.tombstones`).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Final

from memspool.store import tombstones

__all__ = ["edited_column", "ids_never_reused", "slices_note_column", "tombstones_keyed"]

_TABLE: Final = "memories"
_REBUILT: Final = "memories_rebuilt"
_CREATE: Final = re.compile(r"^\s*CREATE\s+TABLE\s+\"?memories\"?", re.IGNORECASE)
_ID_COLUMN: Final = re.compile(r"\bid\s+INTEGER\s+PRIMARY\s+KEY\b(?!\s+AUTOINCREMENT)",
                               re.IGNORECASE)


def ids_never_reused(conn: sqlite3.Connection, config: object = None) -> None:
    """Rebuild ``memories`` with ``id INTEGER PRIMARY KEY AUTOINCREMENT``."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                       (_TABLE,)).fetchone()
    if row is None or "AUTOINCREMENT" in str(row[0]).upper():
        return
    create, found = _ID_COLUMN.subn("id INTEGER PRIMARY KEY AUTOINCREMENT", str(row[0]), count=1)
    create, named = _CREATE.subn(f"CREATE TABLE {_REBUILT}", create, count=1)
    if not (found and named):
        raise sqlite3.DatabaseError(f"cannot read the memories table's definition: {row[0]}")
    # Indexes and triggers go with the old table: keep their SQL to make them again.
    # (An index SQLite made for a UNIQUE constraint has no SQL: the new table makes it.)
    dependents = [str(sql) for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger')"
        " AND sql IS NOT NULL ORDER BY type, name", (_TABLE,))]
    highest = int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {_TABLE}").fetchone()[0])  # noqa: S608 - constant name
    conn.execute(create)
    conn.execute(f"INSERT INTO {_REBUILT} SELECT * FROM {_TABLE}")  # noqa: S608 - constant names
    conn.execute(f"DROP TABLE {_TABLE}")
    conn.execute(f"ALTER TABLE {_REBUILT} RENAME TO {_TABLE}")
    for sql in dependents:
        conn.execute(sql)
    # The copy set the sequence to the highest id there is; no lower value will do.
    conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (highest, _TABLE))
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise sqlite3.IntegrityError(f"rebuilding memories broke references: {broken[:3]}")


def tombstones_keyed(conn: sqlite3.Connection, config: object = None) -> None:
    """Every tombstone's key and text hash replaced by keyed hashes."""
    rows = conn.execute("SELECT project, key, text_hash, at FROM forgotten").fetchall()
    conn.execute("DELETE FROM forgotten")
    secret = tombstones.secret(conn)
    conn.executemany(
        "INSERT OR IGNORE INTO forgotten (project, key, text_hash, at) VALUES (?, ?, ?, ?)",
        [(project, tombstones.keyed(secret, key), tombstones.keyed(secret, text_hash), at)
         for project, key, text_hash, at in rows])


def slices_note_column(conn: sqlite3.Connection, config: object = None) -> None:
    """Add ``slices.digest_note`` and ``memories_summary`` where the store lacks them."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(slices)")}
    if "digest_note" not in columns:
        conn.execute("ALTER TABLE slices ADD COLUMN digest_note TEXT")
    conn.execute("CREATE INDEX IF NOT EXISTS memories_summary ON memories (project, summary)")


def edited_column(conn: sqlite3.Connection, config: object = None) -> None:
    """Add ``memories.edited_at`` where the store lacks it."""
    columns = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({_TABLE})")}
    if "edited_at" not in columns:
        conn.execute(f"ALTER TABLE {_TABLE} ADD COLUMN edited_at REAL")
