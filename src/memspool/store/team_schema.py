"""The local half of team memory: which projects are shared, and the outbox.

Triggers on ``memories`` and ``provenance`` put every change to a memory of
a shared project in ``team_outbox`` in the same transaction as the change,
whoever writes it (the archivist, capture, save, import, forget, a merge):
nothing has to remember to. A memory of a shared project gets its global id
(a time-ordered UUID, version 7) in ``team_memories`` when it is written.

``team_terms_pending`` lists pulled memories whose term index (for
near-duplicate lookups) is still to be computed: a pull stores and indexes
them for search at once and leaves that slower step to the background.
``team_quiet`` holds one row while ``team sync`` applies what it pulled, in
that same transaction, so changes that came from the server do not go back
to it. ``memory_merges`` says, for the moment between a merge and the
delete that ends it, which memory survived, so a merge travels as a merge
and not as a forget (``memspool.store.memories.absorb`` writes it).
"""

from __future__ import annotations

from typing import Final

__all__ = ["NOW_SQL", "TEAM_LEFT", "TEAM_TABLES", "UUID7_SQL"]

#: Seconds since the epoch, in SQL (julianday has millisecond precision).
NOW_SQL: Final = "((julianday('now') - 2440587.5) * 86400.0)"

#: A UUID version 7 in SQL: 48 bits of milliseconds since the epoch, the
#: version, the variant, and 72 random bits, so ids sort by creation time on
#: every machine and never collide between them. A plain expression, not a
#: subquery: SQLite works an uncorrelated subquery out once per statement, so
#: ``INSERT ... SELECT`` of many rows would give them all one id.
_MILLIS: Final = "printf('%012x', CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))"
UUID7_SQL: Final = (
    f"(substr({_MILLIS}, 1, 8) || '-' || substr({_MILLIS}, 9, 4) || '-7'"
    " || substr(lower(hex(randomblob(2))), 1, 3) || '-'"
    " || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 1, 3)"
    " || '-' || lower(hex(randomblob(6))))"
)
#: The same, as migration 13 shipped it in its trigger (one row per run there, so
#: one id per memory); a shipped migration is never edited.
_UUID7_IN_TRIGGER: Final = (
    "(SELECT substr(ms, 1, 8) || '-' || substr(ms, 9, 4) || '-7' || substr(r, 1, 3) || '-'"
    " || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(r, 4, 3) || '-'"
    " || substr(r, 7, 12)"
    " FROM (SELECT printf('%012x', CAST((julianday('now') - 2440587.5) * 86400000.0"
    " AS INTEGER)) AS ms, lower(hex(randomblob(9))) AS r))"
)

#: Only a memory whose shared fields changed goes out: its text, key, type,
#: or whether (and by what) it is superseded. Recall times, importance,
#: promotion and archiving stay local judgements.
_SHARED_CHANGE: Final = (
    "old.summary IS NOT new.summary OR old.body IS NOT new.body OR old.type IS NOT new.type"
    " OR old.key IS NOT new.key OR old.superseded_by IS NOT new.superseded_by"
    " OR (old.layer = 'superseded') IS NOT (new.layer = 'superseded')"
)

# Built from the constants above only: no value is interpolated.
TEAM_TABLES: Final = f"""
    CREATE TABLE team_servers (
        url        TEXT PRIMARY KEY,
        role       TEXT,
        last_sync  REAL,
        last_error TEXT,
        failures   INTEGER NOT NULL DEFAULT 0,
        next_try   REAL
    );
    CREATE TABLE team_projects (
        project    TEXT PRIMARY KEY,
        server     TEXT NOT NULL REFERENCES team_servers (url),
        pulled_seq INTEGER NOT NULL DEFAULT 0,
        joined_at  REAL NOT NULL
    );
    CREATE TABLE team_memories (
        gid            TEXT PRIMARY KEY,
        memory_id      INTEGER UNIQUE,
        project        TEXT NOT NULL,
        revision       INTEGER NOT NULL DEFAULT 0,
        state          TEXT NOT NULL DEFAULT 'live',
        origin_user    TEXT,
        origin_machine TEXT,
        link           TEXT
    );
    CREATE INDEX team_memories_project ON team_memories (project);
    CREATE INDEX team_memories_link ON team_memories (link) WHERE link IS NOT NULL;
    CREATE TABLE team_outbox (
        seq     INTEGER PRIMARY KEY AUTOINCREMENT,
        project TEXT    NOT NULL,
        gid     TEXT    NOT NULL,
        kind    TEXT    NOT NULL,
        ref     INTEGER,
        target  TEXT,
        at      REAL    NOT NULL
    );
    CREATE INDEX team_outbox_project ON team_outbox (project, seq);
    CREATE INDEX team_outbox_gid ON team_outbox (gid, seq);
    CREATE TABLE team_quiet (one INTEGER PRIMARY KEY CHECK (one = 1));
    CREATE TABLE team_terms_pending (memory_id INTEGER PRIMARY KEY);
    CREATE TABLE memory_merges (
        memory_id INTEGER PRIMARY KEY,
        survivor  INTEGER NOT NULL
    );
    CREATE TRIGGER team_memory_insert AFTER INSERT ON memories
    WHEN new.project IN (SELECT project FROM team_projects)
         AND NOT EXISTS (SELECT 1 FROM team_quiet)
    BEGIN
        INSERT INTO team_memories (gid, memory_id, project) VALUES ({_UUID7_IN_TRIGGER}, new.id,
                                                                    new.project);
        INSERT INTO team_outbox (project, gid, kind, at)
            SELECT project, gid, 'memory', {NOW_SQL} FROM team_memories
            WHERE memory_id = new.id;
    END;
    CREATE TRIGGER team_memory_update AFTER UPDATE ON memories
    WHEN ({_SHARED_CHANGE}) AND NOT EXISTS (SELECT 1 FROM team_quiet)
    BEGIN
        INSERT INTO team_outbox (project, gid, kind, at)
            SELECT project, gid, 'memory', {NOW_SQL} FROM team_memories
            WHERE memory_id = new.id;
    END;
    CREATE TRIGGER team_provenance_insert AFTER INSERT ON provenance
    WHEN NOT EXISTS (SELECT 1 FROM team_quiet)
    BEGIN
        INSERT INTO team_outbox (project, gid, kind, ref, at)
            SELECT project, gid, 'provenance', new.id, {NOW_SQL} FROM team_memories
            WHERE memory_id = new.memory_id;
    END;
    CREATE TRIGGER team_memory_delete AFTER DELETE ON memories
    BEGIN
        INSERT INTO team_outbox (project, gid, kind, target, at)
            SELECT t.project, t.gid, CASE WHEN m.survivor IS NULL THEN 'forget' ELSE 'merge' END,
                   s.gid, {NOW_SQL}
            FROM team_memories t
            LEFT JOIN memory_merges m ON m.memory_id = old.id
            LEFT JOIN team_memories s ON s.memory_id = m.survivor
            WHERE t.memory_id = old.id AND NOT EXISTS (SELECT 1 FROM team_quiet);
        UPDATE team_memories SET memory_id = NULL,
            state = CASE WHEN EXISTS (SELECT 1 FROM memory_merges WHERE memory_id = old.id)
                         THEN 'merged' ELSE 'forgotten' END
            WHERE memory_id = old.id;
        DELETE FROM memory_merges WHERE memory_id = old.id;
    END;
"""  # noqa: S608

#: Migration 14. ``team_left``: the global ids of a project this machine left,
#: each with a hash of its shared fields then, and ``team_left_projects``: the
#: server, cursor and last save pushed of each such project. Joining it again
#: gives every memory the id the team knows it by and pushes only what changed
#: while away (a forget made meanwhile then reaches it, and nothing comes back
#: twice). ``team_saves_waiting``: a teammate's save pulled before the memory
#: it is a save of (the memory changed after it, so its ``seq`` is later),
#: recorded once the memory arrives.
TEAM_LEFT: Final = """
    CREATE TABLE team_left (
        gid            TEXT PRIMARY KEY,
        memory_id      INTEGER,
        project        TEXT NOT NULL,
        revision       INTEGER NOT NULL DEFAULT 0,
        state          TEXT NOT NULL DEFAULT 'live',
        origin_user    TEXT,
        origin_machine TEXT,
        link           TEXT,
        shared_hash    TEXT
    );
    CREATE INDEX team_left_project ON team_left (project);
    CREATE TABLE team_left_projects (
        project         TEXT PRIMARY KEY,
        server          TEXT NOT NULL,
        pulled_seq      INTEGER NOT NULL,
        provenance_seen INTEGER NOT NULL
    );
    CREATE TABLE team_saves_waiting (
        id      INTEGER PRIMARY KEY,
        gid     TEXT NOT NULL,
        project TEXT NOT NULL,
        role    TEXT NOT NULL,
        machine TEXT NOT NULL,
        session TEXT NOT NULL,
        source  TEXT NOT NULL,
        action  TEXT NOT NULL,
        at      REAL NOT NULL
    );
    CREATE INDEX team_saves_waiting_gid ON team_saves_waiting (gid);
"""
