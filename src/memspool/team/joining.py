"""Joining and leaving a shared project on this machine (the SQLite side only).

A join gives every memory of the project a global id and puts it in the
outbox with its saves. A leave drops the outbox but keeps each memory's
global id aside (``team_left``) with a hash of its shared fields, and the
project's cursor and last save pushed (``team_left_projects``). Joining the
same project through the same server again then

- gives each memory back the id the team knows it by, so a teammate's
  forget made meanwhile reaches it and nothing is on the server twice;
- pushes only what changed here while away (a memory whose shared fields
  hash as they did, and the saves already pushed, stay put), so an old copy
  never overwrites a teammate's newer text;
- pulls on from where it left off, so no save arrives twice.

A memory forgotten (or merged away) here while away keeps its id marked
forgotten: a pull does not bring it back, and the team's copy stays theirs.
Through another server, a join is a first join.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final

from memspool.base.errors import PayloadError
from memspool.base.project import is_path_identity
from memspool.distill.keys import text_hash
from memspool.store import memories as memory_rows
from memspool.store import transaction
from memspool.store.team_schema import NOW_SQL, UUID7_SQL

__all__ = ["join", "leave"]

_KEPT_COLUMNS: Final = "gid, memory_id, revision, state, origin_user, origin_machine, link"


def _shared_hash(memory: memory_rows.Memory) -> str:
    """A hash of the fields a change of which goes to the team (``team_schema``)."""
    return text_hash("\x1f".join((memory.key, memory.type, memory.summary, memory.body,
                                  str(memory.layer == "superseded"),
                                  str(memory.superseded_by))))


def join(conn: sqlite3.Connection, project: str, server: str, role: str) -> int:
    """Share ``project`` through ``server``: every memory it has gets a global id (the
    one it had, after a leave) and goes to the outbox with its saves, unless it is
    as it was when this machine left. Returns how many memories wait."""
    if is_path_identity(project) or "/" not in project:
        raise PayloadError(
            f"The project {project} has no git remote, so no teammate's clone can name it. "
            f"Add a remote (`git remote add origin URL`) and join from the repository.")
    with transaction(conn):
        conn.execute("INSERT INTO team_servers (url, role) VALUES (?, ?)"
                     " ON CONFLICT (url) DO UPDATE SET role = excluded.role", (server, role))
        other = conn.execute("SELECT server FROM team_projects WHERE project = ?",
                             (project,)).fetchone()
        if other is not None and other[0] != server:
            raise PayloadError(f"The project {project} is shared through another server "
                               f"already; `memspool team leave --project {project}` first.")
        if other is not None:  # joined already: nothing to do again
            return _waiting(conn, project)
        conn.execute("INSERT INTO team_projects (project, server, joined_at) VALUES (?, ?, ?)",
                     (project, server, time.time()))
        unchanged, seen = _rejoin(conn, project, server)
        conn.execute(
            f"INSERT INTO team_memories (gid, memory_id, project)"  # noqa: S608 - constants
            f" SELECT {UUID7_SQL}, m.id, m.project FROM memories m WHERE m.project = ?"
            f" AND NOT EXISTS (SELECT 1 FROM team_memories t WHERE t.memory_id = m.id)",
            (project,))
        shared = conn.execute("SELECT gid, memory_id FROM team_memories WHERE project = ?"
                              " AND memory_id IS NOT NULL ORDER BY memory_id",
                              (project,)).fetchall()
        conn.executemany(
            f"INSERT INTO team_outbox (project, gid, kind, at)"  # noqa: S608 - constants
            f" VALUES (?, ?, 'memory', {NOW_SQL})",
            [(project, gid) for gid, memory_id in shared if memory_id not in unchanged])
        conn.execute(
            f"INSERT INTO team_outbox (project, gid, kind, ref, at)"  # noqa: S608 - constants
            f" SELECT t.project, t.gid, 'provenance', p.id, {NOW_SQL} FROM provenance p"
            f" JOIN team_memories t ON t.memory_id = p.memory_id"
            f" WHERE t.project = ? AND p.id > ? ORDER BY p.id", (project, seen))
    return _waiting(conn, project)


def _waiting(conn: sqlite3.Connection, project: str) -> int:
    return int(conn.execute("SELECT count(DISTINCT gid) FROM team_outbox WHERE project = ?"
                            " AND kind = 'memory'", (project,)).fetchone()[0])


def _rejoin(conn: sqlite3.Connection, project: str, server: str) -> tuple[set[int], int]:
    """Give the memories of ``project`` back the global ids they had when this machine
    left it. Returns the memories as they were then (nothing to push) and the last
    save pushed then; through another server, none and 0 (everything goes out)."""
    left = conn.execute("SELECT server, pulled_seq, provenance_seen FROM team_left_projects"
                        " WHERE project = ?", (project,)).fetchone()
    same_server = left is not None and left[0] == server
    unchanged: set[int] = set()
    for row in conn.execute(f"SELECT {_KEPT_COLUMNS}, shared_hash FROM team_left"  # noqa: S608 - constants
                            f" WHERE project = ?", (project,)).fetchall():
        gid, memory_id, revision, state, user, machine, link, then = row
        memory = memory_rows.get(conn, int(memory_id)) if memory_id is not None else None
        here = memory is not None and memory.project == project
        if memory is not None and here and same_server and _shared_hash(memory) == then:
            unchanged.add(int(memory_id))
        conn.execute(
            "INSERT OR IGNORE INTO team_memories (gid, memory_id, project, revision, state,"
            " origin_user, origin_machine, link) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (gid, memory_id if here else None, project, revision,
             state if here or memory_id is None else "forgotten", user, machine, link))
    conn.execute("DELETE FROM team_left WHERE project = ?", (project,))
    conn.execute("DELETE FROM team_left_projects WHERE project = ?", (project,))
    if not same_server:
        conn.execute("DELETE FROM team_saves_waiting WHERE project = ?", (project,))
        return set(), 0
    conn.execute("UPDATE team_projects SET pulled_seq = ? WHERE project = ?", (left[1], project))
    return unchanged, int(left[2])


def leave(conn: sqlite3.Connection, project: str) -> bool:
    """Stop sharing ``project`` here: its outbox goes and its memories stay; their global
    ids, how each was, the cursor and the last save pushed are kept for a later join
    (what had not gone out yet goes out then)."""
    with transaction(conn):
        joined = conn.execute("SELECT server, pulled_seq FROM team_projects WHERE project = ?",
                              (project,)).fetchone()
        if joined is not None:
            unsent = {str(r[0]) for r in conn.execute(
                "SELECT DISTINCT gid FROM team_outbox WHERE project = ?", (project,))}
            first_unsent_save = conn.execute(
                "SELECT min(ref) FROM team_outbox WHERE project = ? AND kind = 'provenance'",
                (project,)).fetchone()[0]
            last_save = conn.execute(
                "SELECT max(p.id) FROM provenance p JOIN team_memories t"
                " ON t.memory_id = p.memory_id WHERE t.project = ?", (project,)).fetchone()[0]
            seen = (int(first_unsent_save) - 1 if first_unsent_save is not None
                    else int(last_save or 0))
            conn.execute("INSERT OR REPLACE INTO team_left_projects (project, server,"
                         " pulled_seq, provenance_seen) VALUES (?, ?, ?, ?)",
                         (project, joined[0], joined[1], seen))
            for row in conn.execute(f"SELECT {_KEPT_COLUMNS} FROM team_memories"  # noqa: S608 - constants
                                    f" WHERE project = ?", (project,)).fetchall():
                memory = memory_rows.get(conn, int(row[1])) if row[1] is not None else None
                then = (_shared_hash(memory) if memory is not None and row[0] not in unsent
                        else None)
                conn.execute(
                    "INSERT OR REPLACE INTO team_left (gid, memory_id, revision, state,"
                    " origin_user, origin_machine, link, project, shared_hash)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*row, project, then))
        conn.execute("DELETE FROM team_projects WHERE project = ?", (project,))
        conn.execute("DELETE FROM team_outbox WHERE project = ?", (project,))
        conn.execute("DELETE FROM team_memories WHERE project = ?", (project,))
        conn.execute("DELETE FROM team_servers WHERE url NOT IN"
                     " (SELECT server FROM team_projects)")
    return joined is not None
