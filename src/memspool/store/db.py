"""The SQLite store's connection: one file under the home, WAL mode, schema by migrations.

``slices`` is the ingest queue the drainer fills and the archivist empties;
it is never full-text indexed and never searched (docs/architecture.md,
invariant 4). ``cursors`` hold each transcript's byte position;
``seen_records`` the uuids already captured, so replayed records (resumed
sessions, compaction) stay out.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from memspool.config import FILE_MODE, Config, ensure_private_dir
from memspool.errors import StoreError

__all__ = ["MIGRATIONS", "connect", "get_state", "set_state", "transaction"]

#: Seconds a writer waits for another writer's lock before failing; the
#: drainer's transactions are short, so this is only reached when a process hangs.
BUSY_TIMEOUT_SECS: Final = 30.0

#: Pause between attempts to switch a new store to WAL (see _enter_wal).
WAL_RETRY_SECS: Final = 0.02

#: Each entry moves the schema one version up (PRAGMA user_version).
#: Append only: never edit a migration that has shipped.
MIGRATIONS: Final[list[str]] = [
    # 1: the capture path.
    """
    CREATE TABLE captures (
        id              INTEGER PRIMARY KEY,
        session_id      TEXT    NOT NULL,
        agent_id        TEXT,
        project         TEXT    NOT NULL,
        event           TEXT    NOT NULL,
        transcript_path TEXT    NOT NULL,
        byte_start      INTEGER NOT NULL,
        byte_end        INTEGER NOT NULL,
        part            INTEGER NOT NULL DEFAULT 1,
        records_kept    INTEGER NOT NULL,
        records_dropped INTEGER NOT NULL,
        records_unknown INTEGER NOT NULL DEFAULT 0,
        records_replayed INTEGER NOT NULL DEFAULT 0,
        raw_bytes       INTEGER NOT NULL,
        text_chars      INTEGER NOT NULL,
        stored_bytes    INTEGER NOT NULL,
        redactions      INTEGER NOT NULL DEFAULT 0,
        body            BLOB    NOT NULL,
        created_at      REAL    NOT NULL,
        digested_at     REAL
    );
    CREATE INDEX captures_queue ON captures (digested_at, id);
    CREATE INDEX captures_session ON captures (session_id, id);
    CREATE TABLE cursors (
        path          TEXT PRIMARY KEY,
        session_id    TEXT NOT NULL,
        agent_id      TEXT,
        project       TEXT NOT NULL,
        dev           INTEGER,
        ino           INTEGER,
        offset        INTEGER NOT NULL DEFAULT 0,
        held_since    REAL,
        force_pending INTEGER NOT NULL DEFAULT 0,
        last_event    TEXT NOT NULL DEFAULT '',
        missing_since REAL,
        updated_at    REAL NOT NULL
    );
    CREATE TABLE seen_records (uuid TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: durable memory (memspool.memory): memories, their provenance, the term
    # index near-duplicate candidates are found through, and FTS5 for recall.
    """
    CREATE TABLE memories (
        id             INTEGER PRIMARY KEY,
        project        TEXT    NOT NULL,
        key            TEXT    NOT NULL,
        type           TEXT    NOT NULL,
        layer          TEXT    NOT NULL DEFAULT 'buffer',
        summary        TEXT    NOT NULL,
        body           TEXT    NOT NULL,
        importance     REAL    NOT NULL DEFAULT 0.6,
        confidence     REAL    NOT NULL DEFAULT 0.5,
        corroborations INTEGER NOT NULL DEFAULT 0,
        created_at     REAL    NOT NULL,
        updated_at     REAL    NOT NULL,
        UNIQUE (project, key)
    );
    CREATE INDEX memories_layer ON memories (project, layer, updated_at);
    CREATE TABLE provenance (
        id         INTEGER PRIMARY KEY,
        memory_id  INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        action     TEXT    NOT NULL,
        session    TEXT    NOT NULL,
        source     TEXT    NOT NULL,
        capture_id INTEGER REFERENCES captures (id) ON DELETE SET NULL,
        text_hash  TEXT    NOT NULL,
        at         REAL    NOT NULL
    );
    CREATE INDEX provenance_memory ON provenance (memory_id, at);
    CREATE INDEX provenance_text ON provenance (text_hash, at);
    CREATE INDEX provenance_capture ON provenance (capture_id) WHERE capture_id IS NOT NULL;
    CREATE TABLE memory_terms (
        project   TEXT    NOT NULL,
        term      TEXT    NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        PRIMARY KEY (project, term, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX memory_terms_memory ON memory_terms (memory_id);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        summary, body, content = 'memories', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, summary, body) VALUES (new.id, new.summary, new.body);
    END;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, summary, body)
        VALUES ('delete', old.id, old.summary, old.body);
    END;
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, body ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, summary, body)
        VALUES ('delete', old.id, old.summary, old.body);
        INSERT INTO memories_fts (rowid, summary, body) VALUES (new.id, new.summary, new.body);
    END;
    """,
    # 3: one word per concept. The queue's item is a slice; the cursor's
    # force flag was never read (forcing lives in the drainer's memory of
    # the last hook); the full-text index waits for recall, which builds the
    # index it needs.
    """
    ALTER TABLE captures RENAME TO slices;
    DROP INDEX captures_queue;
    DROP INDEX captures_session;
    CREATE INDEX slices_queue ON slices (digested_at, id);
    CREATE INDEX slices_session ON slices (session_id, id);
    ALTER TABLE provenance RENAME COLUMN capture_id TO slice_id;
    DROP INDEX provenance_capture;
    CREATE INDEX provenance_slice ON provenance (slice_id) WHERE slice_id IS NOT NULL;
    ALTER TABLE cursors DROP COLUMN force_pending;
    DROP TRIGGER memories_fts_insert;
    DROP TRIGGER memories_fts_delete;
    DROP TRIGGER memories_fts_update;
    DROP TABLE memories_fts;
    """,
]


def _create_private_file(path: Path) -> None:
    # SQLite gives the -wal and -shm files the mode of the database file, so
    # creating the database 0600 first keeps all three private.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    os.close(fd)


def connect(config: Config) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the store of ``config.home``.

    The connection is in autocommit mode: write through :func:`transaction`.
    """
    ensure_private_dir(config.home)
    path = config.db_path
    if not path.exists():
        _create_private_file(path)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECS, isolation_level=None)
        conn.row_factory = sqlite3.Row
        _enter_wal(conn)
        # FULL: a committed capture and its cursor survive power loss, not
        # only a process crash; the drainer commits a few times per turn.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        _migrate(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"Cannot open the store {path}: {exc}. If the file is damaged, move it "
            f"aside and run `memspool drainer --resume` to start a new one."
        ) from exc
    return conn


def _enter_wal(conn: sqlite3.Connection) -> None:
    # Two processes switching a new store to WAL at once can deadlock inside
    # SQLite (each holds a shared lock and wants an exclusive one); SQLite then
    # answers "database is locked" at once, without waiting. Retry briefly.
    deadline = time.monotonic() + BUSY_TIMEOUT_SECS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_RETRY_SECS)


def _migrate(conn: sqlite3.Connection) -> None:
    while True:
        with transaction(conn):
            # Read the version inside the write transaction: two processes
            # opening a new store at once (a hook's drainer and `memspool
            # status`) must not both apply the same migration.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"The store has schema version {version}, newer than this memspool "
                    f"knows ({len(MIGRATIONS)}). Upgrade memspool."
                )
            if version == len(MIGRATIONS):
                return
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolls back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def get_state(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_state(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )

