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
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, TypeAlias

from memspool.base.errors import HomeError, StoreError
from memspool.base.lexical import packed
from memspool.base.terms import identifiers
from memspool.config import FILE_MODE, Config, tighten_home
from memspool.store.projects import migrate_to_identities
from memspool.store.team_schema import TEAM_LEFT, TEAM_TABLES
from memspool.store.upgrades import (
    edited_column,
    ids_never_reused,
    slices_note_column,
    tombstones_keyed,
)

__all__ = [
    "MIGRATIONS", "add_functions", "connect", "connect_readonly", "damaged", "diagnose",
    "get_state", "names_a_row", "require_home", "set_state", "transaction",
]

#: Seconds a writer waits for another writer's lock before failing; the
#: drainer's transactions are short, so this is only reached when a process hangs.
BUSY_TIMEOUT_SECS: Final = 30.0

#: Pause between attempts to switch a new store to WAL (see _enter_wal).
WAL_RETRY_SECS: Final = 0.02

#: One migration: an SQL script, or a function for what SQL alone cannot write
#: (a table rebuild, reading the transcripts or the file system), called inside
#: the migration's transaction with the store's configuration.
Migration: TypeAlias = str | Callable[[sqlite3.Connection, Config], None]

PROJECTS_TABLE: Final = """
    CREATE TABLE projects (
        id      TEXT PRIMARY KEY,
        name    TEXT NOT NULL,
        root    TEXT,
        remote  TEXT,
        seen_at REAL NOT NULL
    );
    CREATE INDEX projects_name ON projects (name);
"""


def _projects_are_repositories(conn: sqlite3.Connection, config: Config) -> None:
    for statement in _statements(PROJECTS_TABLE):
        conn.execute(statement)
    migrate_to_identities(conn, config)


#: Each entry moves the schema one version up (PRAGMA user_version).
#: Append only: never edit a migration that has shipped.
MIGRATIONS: Final[list[Migration]] = [
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
    # 2: durable memory (memspool.store.memories): memories, their provenance, the term
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
    # 4: the memory model. Each memory counts the distinct sessions behind
    # it, may point at the memory that superseded it, and carries the times
    # at which the major pass is due to promote or archive it (indexed, so a
    # pass reads only what is due). Every text change keeps the old text in
    # memory_history; a forgotten memory leaves a tombstone so the same slice
    # does not bring it back. term_counts says how many memories share a term,
    # so candidate lookups skip terms too common to tell memories apart.
    """
    ALTER TABLE slices ADD COLUMN digest_note TEXT;
    ALTER TABLE memories ADD COLUMN sessions INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE memories ADD COLUMN superseded_by INTEGER
        REFERENCES memories (id) ON DELETE SET NULL;
    ALTER TABLE memories ADD COLUMN recalled_at REAL;
    ALTER TABLE memories ADD COLUMN promote_at REAL;
    ALTER TABLE memories ADD COLUMN archive_at REAL;
    UPDATE memories SET sessions = max(1, (
        SELECT count(DISTINCT session) FROM provenance WHERE memory_id = memories.id));
    CREATE INDEX memories_changed ON memories (updated_at);
    CREATE INDEX memories_summary ON memories (project, summary);
    CREATE INDEX memories_promote ON memories (promote_at) WHERE layer = 'buffer';
    CREATE INDEX memories_archive ON memories (archive_at)
        WHERE layer IN ('buffer', 'canonical');
    CREATE INDEX memories_superseded_by ON memories (superseded_by)
        WHERE superseded_by IS NOT NULL;
    CREATE TABLE memory_history (
        id        INTEGER PRIMARY KEY,
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        at        REAL    NOT NULL,
        reason    TEXT    NOT NULL,
        type      TEXT    NOT NULL,
        summary   TEXT    NOT NULL,
        body      TEXT    NOT NULL
    );
    CREATE INDEX memory_history_memory ON memory_history (memory_id, at);
    CREATE TABLE forgotten (
        project   TEXT NOT NULL,
        key       TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        at        REAL NOT NULL,
        PRIMARY KEY (project, key, text_hash)
    ) WITHOUT ROWID;
    CREATE INDEX forgotten_text ON forgotten (project, text_hash);
    CREATE TABLE term_counts (
        project  TEXT    NOT NULL,
        term     TEXT    NOT NULL,
        memories INTEGER NOT NULL,
        PRIMARY KEY (project, term)
    ) WITHOUT ROWID;
    INSERT INTO term_counts (project, term, memories)
        SELECT project, term, count(*) FROM memory_terms GROUP BY project, term;
    """,
    # 5: recall. memory_search indexes each memory's summary, body and the
    # parts of its identifiers (memspool_identifiers, registered on every
    # connection, see memspool.base.terms), kept in step by triggers. A
    # project's context block is rendered when its memory changes (the
    # triggers mark it in context_dirty) and read by the SessionStart hook.
    """
    CREATE VIRTUAL TABLE memory_search USING fts5 (
        summary, body, idents, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO memory_search (rowid, summary, body, idents)
        SELECT id, summary, body, memspool_identifiers(summary || ' ' || body) FROM memories;
    CREATE TRIGGER memory_search_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memory_search (rowid, summary, body, idents) VALUES
            (new.id, new.summary, new.body, memspool_identifiers(new.summary || ' ' || new.body));
    END;
    CREATE TRIGGER memory_search_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_search WHERE rowid = old.id;
    END;
    CREATE TRIGGER memory_search_update AFTER UPDATE OF summary, body ON memories BEGIN
        DELETE FROM memory_search WHERE rowid = old.id;
        INSERT INTO memory_search (rowid, summary, body, idents) VALUES
            (new.id, new.summary, new.body, memspool_identifiers(new.summary || ' ' || new.body));
    END;
    CREATE TABLE context_blocks (
        project     TEXT PRIMARY KEY,
        text        TEXT    NOT NULL,
        memories    INTEGER NOT NULL,
        rendered_at REAL    NOT NULL
    );
    CREATE TABLE context_dirty (project TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TRIGGER context_dirty_insert AFTER INSERT ON memories BEGIN
        INSERT OR IGNORE INTO context_dirty (project) VALUES (new.project);
    END;
    CREATE TRIGGER context_dirty_update AFTER UPDATE ON memories BEGIN
        INSERT OR IGNORE INTO context_dirty (project) VALUES (old.project), (new.project);
    END;
    CREATE TRIGGER context_dirty_delete AFTER DELETE ON memories BEGIN
        INSERT OR IGNORE INTO context_dirty (project) VALUES (old.project);
    END;
    INSERT OR IGNORE INTO context_dirty (project) SELECT DISTINCT project FROM memories;
    """,
    # 6: semantic recall. Each memory's embedding, with the hash of the model
    # that made it. Triggers keep vectors_pending: a memory written, or whose
    # text changed, waits there (its old vector gone) until a process with the
    # model embeds it, so no writer needs the model and a crash loses nothing.
    # seq only grows (AUTOINCREMENT): a reader's cached matrix covers the rows
    # up to some seq and reads only the rows after it.
    """
    CREATE TABLE memory_vectors (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id INTEGER NOT NULL UNIQUE REFERENCES memories (id) ON DELETE CASCADE,
        project   TEXT    NOT NULL,
        model     TEXT    NOT NULL,
        vector    BLOB    NOT NULL
    );
    CREATE TABLE vectors_pending (memory_id INTEGER PRIMARY KEY);
    CREATE TRIGGER vectors_pending_insert AFTER INSERT ON memories BEGIN
        INSERT OR IGNORE INTO vectors_pending (memory_id) VALUES (new.id);
    END;
    CREATE TRIGGER vectors_pending_update AFTER UPDATE OF summary, body ON memories BEGIN
        DELETE FROM memory_vectors WHERE memory_id = new.id;
        INSERT OR IGNORE INTO vectors_pending (memory_id) VALUES (new.id);
    END;
    CREATE TRIGGER vectors_pending_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE memory_id = old.id;
        DELETE FROM vectors_pending WHERE memory_id = old.id;
    END;
    INSERT INTO vectors_pending (memory_id) SELECT id FROM memories;
    """,
    # 7: a memory saved again with the same text keeps its vector.
    """
    DROP TRIGGER vectors_pending_update;
    CREATE TRIGGER vectors_pending_update AFTER UPDATE OF summary, body ON memories
    WHEN old.summary IS NOT new.summary OR old.body IS NOT new.body BEGIN
        DELETE FROM memory_vectors WHERE memory_id = new.id;
        INSERT OR IGNORE INTO vectors_pending (memory_id) VALUES (new.id);
    END;
    """,
    # 8: how clearly a memory's text states a durable fact (the claim model's
    # probability; 1.0 for what was saved on purpose, and for every memory
    # stored before the model judged them).
    """
    ALTER TABLE memories ADD COLUMN clarity REAL NOT NULL DEFAULT 1.0;
    """,
    # 9: ids are never reused: memories.id becomes AUTOINCREMENT, by a rebuild
    # of the table that keeps every row, index and trigger, so a retried forget
    # of a memory that is gone finds nothing instead of the next memory
    # (memspool.store.upgrades).
    ids_never_reused,
    # 10: a forget tombstone keeps keyed hashes only, never the key of the
    # memory it stands for (memspool.store.tombstones).
    tombstones_keyed,
    # 11 (the web page, memspool.http.web): a person can pin a memory so the
    # decay pass never archives it. Indexes for the pages: a project's
    # memories newest change first (a page reads 50 rows, not the project),
    # its saves by time (the timeline), and its slices (the project list,
    # the timeline's sessions).
    """
    ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_project_changed ON memories (project, updated_at);
    CREATE INDEX provenance_at ON provenance (at);
    CREATE INDEX slices_project ON slices (project, created_at);
    """,
    # 12: a project is its repository: the projects table keeps each identity's
    # readable name, and every row filed under a folder's basename moves to
    # its repository's identity where the transcripts tell which it is
    # (memspool.store.projects.migrate_to_identities).
    _projects_are_repositories,
    # 13: team memory: the projects shared through PostgreSQL, each shared
    # memory's global id, and the outbox the triggers fill in the same
    # transaction as every change (memspool.store.team_schema).
    TEAM_TABLES,
    # 14: the global ids of a project this machine left, for when it joins again.
    TEAM_LEFT,
    # 15: a store that reached version 4 before migration 4 had its last column.
    slices_note_column,
    # 16: how many memories hold each word of the concept map, counted when the
    # store was as big as ``memories`` with ids up to ``max_id`` (memspool.recall.counts):
    # a search reads them instead of counting a dozen words each time.
    """
    CREATE TABLE IF NOT EXISTS concept_counts (
        phrase  TEXT    PRIMARY KEY,
        df      INTEGER NOT NULL,
        rows    INTEGER NOT NULL,
        max_id  INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 17: the context block shows memory as quoted data (tags and unseen characters
    # made plain, memspool.base.quoting): every stored block is rendered again by
    # the next writer.
    """
    INSERT OR IGNORE INTO context_dirty (project) SELECT DISTINCT project FROM memories;
    """,
    # 18: a memory's vector is made from its whole text (memspool.recall.embed): every
    # vector is made again by whoever embeds next, since which texts were cut depends
    # on the model (a word of Korean is several tokens; a model's own max_length may
    # be under 512); each keeps answering meanwhile.
    """
    INSERT OR IGNORE INTO vectors_pending (memory_id) SELECT id FROM memories;
    """,
    # 19: search scores a memory's identifier parts as the index holds them
    # (memspool.base.lexical): parts written by an older reading of identifiers
    # (accented and non-Latin words before 4235aa5) are written again as it reads them now.
    """
    UPDATE memory_search SET idents = memspool_identifiers(summary || ' ' || body)
        WHERE idents IS NOT memspool_identifiers(summary || ' ' || body);
    """,
    # 20: each memory's words as the index stems them (memspool_stems, registered on
    # every connection, see memspool.base.lexical.packed), kept in step by triggers:
    # search reads them with a memory it has not scored yet instead of stemming its
    # text again. Safe to run again (a store whose version was set back).
    """
    CREATE TABLE IF NOT EXISTS memory_stems (
        id    INTEGER PRIMARY KEY,
        stems TEXT    NOT NULL
    );
    INSERT OR REPLACE INTO memory_stems (id, stems)
        SELECT id, memspool_stems(summary, body) FROM memories;
    CREATE TRIGGER IF NOT EXISTS memory_stems_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memory_stems (id, stems) VALUES (new.id, memspool_stems(new.summary, new.body));
    END;
    CREATE TRIGGER IF NOT EXISTS memory_stems_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_stems WHERE id = old.id;
    END;
    CREATE TRIGGER IF NOT EXISTS memory_stems_update AFTER UPDATE OF summary, body ON memories BEGIN
        UPDATE memory_stems SET stems = memspool_stems(new.summary, new.body) WHERE id = new.id;
    END;
    """,
    # 21: a person's correction stands. edited_at is when a person last gave the
    # memory its text or type (memspool memories edit, the web page, PATCH
    # /memories/ID); the archivist corroborates such a memory without rewriting it
    # (memspool.archivist.reconcile, memspool.archivist.major). Safe to run again.
    edited_column,
]


def _create_private_file(path: Path) -> None:
    # SQLite gives the -wal and -shm files the mode of the database file, so
    # creating the database 0600 first keeps all three private. O_NOFOLLOW:
    # a symlink planted as the store must not make memspool write elsewhere.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise StoreError(
            f"{path} is a symlink; memspool opens its store only as a plain file in its "
            f"home. Replace the link with the file it points at.")


#: SQLite's words for a file that is not (or no longer) a sound database.
_DAMAGE_WORDS: Final = ("malformed", "not a database", "corrupt")
#: The WAL file's header, and each frame's header before its page (walformat.html).
WAL_HEADER_BYTES: Final = 32
WAL_FRAME_HEADER_BYTES: Final = 24
#: Less free space than this on the store's file system reads as a full disk:
#: SQLite needs room for a page, its journal and the WAL index.
LOW_SPACE_BYTES: Final = 1024 * 1024


def damaged(path: Path) -> str | None:
    """What ``PRAGMA quick_check`` says is wrong with the store at ``path``, or ``None``.

    Read-only. Only SQLite's own verdict counts: a store that cannot be
    written (full disk, read-only folder) or read right now (an I/O error,
    a lock) is not called damaged, since moving a good store aside would
    orphan it.
    """
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECS)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc) if any(word in str(exc) for word in _DAMAGE_WORDS) else None
    verdict = "; ".join(str(row[0]) for row in rows[:5])
    return None if verdict == "ok" else verdict


def _disk_full(path: Path) -> bool:
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < LOW_SPACE_BYTES


def _wal_lost(path: Path) -> bool:
    """Whether the WAL index (-shm) counts frames that the -wal file no longer holds: the
    WAL was deleted (or cut short) while a process had the store open."""
    shm, wal = path.with_name(f"{path.name}-shm"), path.with_name(f"{path.name}-wal")
    try:
        with shm.open("rb") as index:
            header = index.read(20)
        size = wal.stat().st_size if wal.exists() else 0
    except OSError:
        return False
    if len(header) < 20:
        return False
    # The WAL-index header (sqlite.org/walformat.html), in the machine's byte order:
    # the page size at byte 14 (1 meaning 65536), the last valid frame at byte 16.
    page = int.from_bytes(header[14:16], sys.byteorder) or 1
    frames = int.from_bytes(header[16:20], sys.byteorder)
    page = 65536 if page == 1 else page
    return frames > 0 and size < WAL_HEADER_BYTES + frames * (WAL_FRAME_HEADER_BYTES + page)


def diagnose(path: Path, exc: sqlite3.Error) -> StoreError:
    """A store error that says what is wrong and what to do; moving the store aside
    is advised only when SQLite itself finds it damaged."""
    reason = str(exc)
    if "disk I/O error" in reason and _wal_lost(path):
        wal = path.with_name(f"{path.name}-wal")
        return StoreError(
            f"The store's write-ahead log {wal} was deleted while a memspool process (a "
            f"drainer, `memspool serve` or `memspool mcp`) had the store open; that process "
            f"still holds the log. Stop it the usual way (Ctrl-C, or `kill` without -9): as "
            f"it closes it writes the log into the store. Then run the command again; never "
            f"delete the -wal file by hand.")
    if "full" in reason or _disk_full(path):
        return StoreError(f"Cannot write the store {path}: the disk is full ({reason}). Free "
                          f"some space; the store is intact and nothing stored was lost.")
    if "readonly" in reason or "read-only" in reason or "unable to open" in reason:
        return StoreError(f"The store {path} is read-only here ({reason}). Check that its "
                          f"folder and file are writable by you and the file system is not "
                          f"mounted read-only; the store itself is intact.")
    broken = damaged(path) if path.exists() else None
    if broken is not None:
        return StoreError(
            f"The store {path} is damaged ({broken}). Move it aside (keep the copy) and run "
            f"`memspool drainer --resume` to start a new one; transcripts still on disk are "
            f"read again from their start.")
    return StoreError(f"Cannot use the store {path}: {reason}. If another memspool process "
                      f"holds it, try again; `memspool status` says whether it is damaged.")


def connect(config: Config) -> sqlite3.Connection:
    """Open (creating and migrating if needed) the store of ``config.home``.

    The connection is in autocommit mode: write through :func:`transaction`.
    """
    tighten_home(config)
    path = config.db_path
    _refuse_symlink(path)
    try:
        if not path.exists():
            _create_private_file(path)
    except OSError as exc:
        raise StoreError(f"Cannot create the store {path}: {exc.strerror or exc}. Check that "
                         f"{config.home} is writable and the disk has room.") from None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECS, isolation_level=None)
        conn.row_factory = sqlite3.Row
        _enter_wal(conn)
        # FULL: a committed slice and its cursor survive power loss, not
        # only a process crash; the drainer commits a few times per turn.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        # What is deleted (a forgotten memory above all) is overwritten with
        # zeros, not left in free pages for anyone reading the file.
        conn.execute("PRAGMA secure_delete=ON")
        add_functions(conn)
        _migrate(conn, config)
    except sqlite3.Error as exc:
        raise diagnose(path, exc) from exc
    return conn


def add_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the store's triggers call on every write of a memory (the
    search index's identifier parts and the stems kept beside it): a connection
    that writes memories needs them."""
    conn.create_function("memspool_identifiers", 1, identifiers, deterministic=True)
    conn.create_function("memspool_stems", 2, packed, deterministic=True)


def _open_for_reading(path: Path) -> sqlite3.Connection:
    uri = f"{path.as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECS, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        # Reading a WAL store needs its -shm index, which a full disk or a
        # read-only folder may not let SQLite create. With no WAL content
        # waiting, the database file alone is the whole store: read it as an
        # immutable file, without the index or locks.
        conn.close()
        wal = path.with_name(f"{path.name}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise
        conn = sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
    return conn


def require_home(config: Config) -> None:
    """Raise a :class:`HomeError` that says so unless ``config.home`` is a folder: a
    command that only makes sense on memory that exists must not make a home (a
    mistyped ``--home`` would get an empty one)."""
    if config.home.exists() and not config.home.is_dir():
        raise HomeError(f"{config.home} is not a folder. Move that file aside, or point "
                        f"MEMSPOOL_HOME (or --home) at a folder.", str(config.home))
    if not config.home.is_dir():
        raise HomeError(
            f"There is no memspool home at {config.home}. Check --home or MEMSPOOL_HOME; "
            f"`memspool install` creates it.", str(config.home))


def connect_readonly(config: Config) -> sqlite3.Connection | None:
    """The store opened for reading only, or ``None`` when there is none yet.

    Never creates or tightens anything, so a read-only home (or a mistyped
    ``--home``) works for reading. A store whose schema is older than this
    memspool is opened for writing once to bring it up to date.
    """
    path = config.db_path
    require_home(config)
    if not path.exists():
        return None
    _refuse_symlink(path)
    try:
        conn = _open_for_reading(path)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as exc:
        raise diagnose(path, exc) from exc
    if version == len(MIGRATIONS):
        return conn
    conn.close()
    if version > len(MIGRATIONS):
        raise StoreError(f"The store has schema version {version}, newer than this memspool "
                         f"knows ({len(MIGRATIONS)}). Upgrade memspool.")
    return connect(config)


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


def _migrate(conn: sqlite3.Connection, config: Config) -> None:
    # A table rebuild (memspool.store.upgrades) drops the old table: with
    # foreign keys on, that would cascade into every table referring to it.
    # The pragma is a no-op inside a transaction, so it is set around them.
    conn.execute("PRAGMA foreign_keys=OFF")
    try:
        _migrate_all(conn, config)
    finally:
        conn.execute("PRAGMA foreign_keys=ON")


def _migrate_all(conn: sqlite3.Connection, config: Config) -> None:
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
            migration = MIGRATIONS[version]
            if isinstance(migration, str):
                for statement in _statements(migration):
                    conn.execute(statement)
            else:
                migration(conn, config)
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
        # SQLite rolls back by itself after some errors (I/O, full disk): a second
        # ROLLBACK would fail and hide the error that says what happened.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def names_a_row(row_id: int) -> bool:
    """Can ``row_id`` be any row's id? SQLite's integers are 64-bit, and binding a
    larger number fails: an id a person typed too long names no row."""
    return -(2**63) <= row_id < 2**63


def get_state(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_state(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )

