"""The local half of team memory: shared projects, global ids, the outbox, applying changes.

The tables and the triggers that fill the outbox are in
``memspool.store.team_schema``. Everything here runs on the SQLite store;
nothing here talks to the network. What comes from the server is applied
inside :func:`quiet` (one ``team_quiet`` row for the length of the
transaction), so the triggers do not send it back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import socket
import sqlite3
import time
from collections.abc import Iterator
from typing import Final

from memspool.base.errors import TeamError
from memspool.base.kinds import ACTIONS, NOTE_TYPES, Action, Layer, NoteType
from memspool.distill.keys import text_hash
from memspool.distill.similarity import index_terms
from memspool.store import get_state, set_state, transaction
from memspool.store import memories as memory_rows

__all__ = [
    "Joined", "RemoteMemory", "RemoteProvenance", "apply_memory", "apply_provenance",
    "apply_waiting",
    "by_origin", "joined", "machine", "origins", "pending", "quiet",
]

#: How long a key may be (``memspool.distill.keys``).
KEY_CHARS: Final = 64


@dataclasses.dataclass(frozen=True)
class Joined:
    project: str
    server: str
    pulled_seq: int
    role: str | None


@dataclasses.dataclass(frozen=True)
class RemoteMemory:
    """One memory as the server holds it."""

    gid: str
    key: str
    type: str
    summary: str
    body: str
    status: str
    superseded_by: str | None
    revision: int
    created_at: float
    changed_at: float
    created_by: str
    created_on: str
    changed_by: str
    changed_on: str

    def content(self) -> tuple[str, str, str, str, str, str | None]:
        return (self.key, self.type, self.summary, self.body, self.status, self.superseded_by)


@dataclasses.dataclass(frozen=True)
class RemoteProvenance:
    """One save of a shared memory, by whom and on which machine."""

    gid: str
    role: str
    machine: str
    session: str
    source: str
    action: str
    at: float


def machine(conn: sqlite3.Connection) -> str:
    """This home's name in team memory: the host name and a random suffix, made once
    (two homes on one host are two machines)."""
    name = get_state(conn, "team_machine")
    if name is None:
        host = "".join(c for c in socket.gethostname() if c.isalnum() or c in "-_.")[:40]
        name = f"{host or 'machine'}-{secrets.token_hex(3)}"
        with transaction(conn):
            found = get_state(conn, "team_machine")
            if found is None:
                set_state(conn, "team_machine", name)
            else:
                name = found
    return name


def joined(conn: sqlite3.Connection) -> list[Joined]:
    """The shared projects, by project."""
    return [Joined(r[0], r[1], int(r[2]), r[3]) for r in conn.execute(
        "SELECT p.project, p.server, p.pulled_seq, s.role FROM team_projects p"
        " JOIN team_servers s ON s.url = p.server ORDER BY p.project")]


def pending(conn: sqlite3.Connection, project: str | None = None) -> int:
    """Changes waiting in the outbox (of ``project``)."""
    if project is None:
        return int(conn.execute("SELECT count(*) FROM team_outbox").fetchone()[0])
    return int(conn.execute("SELECT count(*) FROM team_outbox WHERE project = ?",
                            (project,)).fetchone()[0])


@contextlib.contextmanager
def quiet(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction in which writes to memory do not enter the outbox."""
    with transaction(conn):
        conn.execute("INSERT INTO team_quiet (one) VALUES (1)")
        try:
            yield conn
        finally:
            conn.execute("DELETE FROM team_quiet")


def _mapping(conn: sqlite3.Connection, gid: str) -> sqlite3.Row | None:
    found: sqlite3.Row | None = conn.execute(
        "SELECT gid, memory_id, revision, state FROM team_memories WHERE gid = ?",
        (gid,)).fetchone()
    return found


def local_id(conn: sqlite3.Connection, gid: str | None,
             project: str | None = None) -> int | None:
    """The local memory of a shared one, if it is here (and of ``project`` when given:
    a row of one project must not reach a memory of another through its gid)."""
    if gid is None:
        return None
    row = conn.execute("SELECT memory_id, project FROM team_memories WHERE gid = ?",
                       (gid,)).fetchone()
    if row is None or row[0] is None or (project is not None and row[1] != project):
        return None
    return int(row[0])


def has_pending(conn: sqlite3.Connection, gid: str, after: int = 0) -> bool:
    return conn.execute("SELECT 1 FROM team_outbox WHERE gid = ? AND seq > ? LIMIT 1",
                        (gid, after)).fetchone() is not None


def _note_type(value: str) -> NoteType:
    return next((t for t in NOTE_TYPES if t == value), "takeaway")


def _free_key(conn: sqlite3.Connection, project: str, key: str, gid: str,
              memory_id: int | None = None) -> str:
    """``key``, or a key of its own when another memory of the project holds it."""
    taken = conn.execute("SELECT id FROM memories WHERE project = ? AND key = ?",
                         (project, key)).fetchone()
    if taken is None or taken[0] == memory_id:
        return key
    suffix = f"-{gid[:8]}"
    return key[: KEY_CHARS - len(suffix)] + suffix


def _standing(conn: sqlite3.Connection, memory_id: int, remote: RemoteMemory,
              project: str) -> None:
    """Superseded (pointing at the newer memory where it is here) or back in recall."""
    if remote.status in ("superseded", "merged"):
        target = local_id(conn, remote.superseded_by, project)
        conn.execute("UPDATE memories SET layer = 'superseded', superseded_by = ? WHERE id = ?",
                     (target, memory_id))
        link = remote.superseded_by if target is None else None
        conn.execute("UPDATE team_memories SET link = ? WHERE memory_id = ?", (link, memory_id))
    else:
        conn.execute("UPDATE memories SET layer = 'buffer', superseded_by = NULL"
                     " WHERE id = ? AND layer = 'superseded'", (memory_id,))
        conn.execute("UPDATE team_memories SET link = NULL WHERE memory_id = ?", (memory_id,))


def resolve_links(conn: sqlite3.Connection, project: str) -> None:
    """Point superseded memories at newer ones that arrived after them."""
    for gid, memory_id, link in conn.execute(
            "SELECT gid, memory_id, link FROM team_memories WHERE project = ?"
            " AND link IS NOT NULL AND memory_id IS NOT NULL", (project,)).fetchall():
        target = local_id(conn, link, project)
        if target is not None:
            conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?",
                         (target, memory_id))
            conn.execute("UPDATE team_memories SET link = NULL WHERE gid = ?", (gid,))


def apply_memory(conn: sqlite3.Connection, project: str, remote: RemoteMemory, *,  # noqa: PLR0911 - one return per outcome
                 now: float, force: bool = False) -> str:
    """Bring the local copy of a shared memory to the server's state (inside :func:`quiet`).

    Returns what happened: ``skipped`` (already here, or a local change of it
    waits to be pushed, which the push resolves), ``forgotten``, ``merged``,
    ``created`` or ``updated``. ``force``: apply even over a waiting local
    change (the push just resolved it).
    """
    mapped = _mapping(conn, remote.gid)
    if mapped is not None and not force and mapped["revision"] >= remote.revision:
        return "skipped"
    # Only a gid mapped here can have changes waiting in the outbox.
    if not force and mapped is not None and has_pending(conn, remote.gid):
        return "skipped"
    memory = None
    if mapped is not None and mapped["memory_id"] is not None:
        memory = memory_rows.get(conn, int(mapped["memory_id"]))
    origin = (remote.created_by, remote.created_on)
    if remote.status == "forgotten":
        if memory is not None:
            memory_rows.forget(conn, memory, at=now)
        conn.execute(
            "INSERT INTO team_memories (gid, memory_id, project, revision, state, origin_user,"
            " origin_machine) VALUES (?, NULL, ?, ?, 'forgotten', ?, ?)"
            " ON CONFLICT (gid) DO UPDATE SET memory_id = NULL, revision = excluded.revision,"
            " state = 'forgotten'", (remote.gid, project, remote.revision, *origin))
        return "forgotten"
    if mapped is not None and memory is None:
        # Forgotten or merged here, and that already went to the server:
        # whatever the server says next about it comes from before.
        conn.execute("UPDATE team_memories SET revision = ? WHERE gid = ?",
                     (remote.revision, remote.gid))
        return "skipped"
    survivor = local_id(conn, remote.superseded_by, project)
    if remote.status == "merged" and memory is not None and survivor is not None:
        target = memory_rows.get(conn, survivor)
        if target is not None and target.id != memory.id:
            memory_rows.absorb(conn, target, memory, at=now, reason="merged")
            conn.execute("UPDATE team_memories SET revision = ? WHERE gid = ?",
                         (remote.revision, remote.gid))
            return "merged"
    kind = _note_type(remote.type)
    if memory is None:
        layer: Layer = "superseded" if remote.status in ("superseded", "merged") else "buffer"
        fields = {"project": project, "type": kind, "summary": remote.summary,
                  "body": remote.body, "terms": (), "at": remote.created_at,
                  "updated_at": max(remote.changed_at, now), "layer": layer}
        try:
            memory_id = memory_rows.insert(conn, key=remote.key, **fields)  # type: ignore[arg-type]
        except sqlite3.IntegrityError:
            # Another memory here holds the key: this one gets a key of its own.
            key = _free_key(conn, project, remote.key, remote.gid)
            memory_id = memory_rows.insert(conn, key=key, **fields)  # type: ignore[arg-type]
        conn.execute("INSERT OR IGNORE INTO team_terms_pending (memory_id) VALUES (?)",
                     (memory_id,))
        conn.execute(
            "INSERT INTO team_memories (gid, memory_id, project, revision, state, origin_user,"
            " origin_machine) VALUES (?, ?, ?, ?, 'live', ?, ?)"
            " ON CONFLICT (gid) DO UPDATE SET memory_id = excluded.memory_id,"
            " revision = excluded.revision, state = 'live'",
            (remote.gid, memory_id, project, remote.revision, *origin))
        if layer == "superseded":
            _standing(conn, memory_id, remote, project)
        return "created"
    if (kind, remote.summary, remote.body) != (memory.type, memory.summary, memory.body):
        memory_rows.replace_text(conn, memory, type=kind, summary=remote.summary, body=remote.body,
                                 terms=(), at=now,
                                 reason=f"changed by {remote.changed_by} on {remote.changed_on}")
        conn.execute("INSERT OR IGNORE INTO team_terms_pending (memory_id) VALUES (?)",
                     (memory.id,))
    key = _free_key(conn, project, remote.key, remote.gid, memory.id)
    conn.execute("UPDATE memories SET key = ?, updated_at = ? WHERE id = ?",
                 (key, now, memory.id))
    conn.execute("UPDATE team_memories SET revision = ?, origin_user = coalesce(origin_user, ?),"
                 " origin_machine = coalesce(origin_machine, ?) WHERE gid = ?",
                 (remote.revision, *origin, remote.gid))
    _standing(conn, memory.id, remote, project)
    return "updated"


def apply_provenance(conn: sqlite3.Connection, record: RemoteProvenance, *,
                     now: float, counted: set[int] | None = None,
                     project: str | None = None) -> bool:
    """Record another machine's save of a shared memory here; its sessions count towards
    corroboration as sessions of their own (``role@machine:session``). ``counted``: the
    caller recounts the sessions of these memories once, after a batch."""
    found = conn.execute(
        "SELECT m.id, m.body, t.project FROM team_memories t JOIN memories m"
        " ON m.id = t.memory_id WHERE t.gid = ?", (record.gid,)).fetchone()
    if found is None and project is not None and _mapping(conn, record.gid) is None:
        # The memory changed after this save, so it comes later in the change log:
        # the save waits for it (:func:`apply_waiting`).
        conn.execute("INSERT INTO team_saves_waiting (gid, project, role, machine, session,"
                     " source, action, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (record.gid, project, record.role, record.machine, record.session,
                      record.source, record.action, record.at))
        return False
    if found is None or (project is not None and found[2] != project):
        return False
    memory_id = int(found[0])
    action: Action = next((a for a in ACTIONS if a == record.action), "merged")
    saved = memory_rows.Provenance(
        memory_id=memory_id, action=action,
        session=f"{record.role}@{record.machine}:{record.session}",
        source=f"team:{record.source}", slice_id=None, text_hash=text_hash(found[1]),
        at=record.at)
    if conn.execute("SELECT 1 FROM provenance WHERE memory_id = ? AND session = ?"
                    " AND source = ? AND at = ?",
                    (memory_id, saved.session, saved.source, saved.at)).fetchone():
        return False  # pulled again (a cursor set back): recorded already
    if counted is None:
        memory_rows.add_provenance(conn, saved)
        recount(conn, {memory_id}, now=now)
    else:
        conn.execute(
            "INSERT INTO provenance (memory_id, action, session, source, slice_id, text_hash,"
            " at) VALUES (?, ?, ?, ?, NULL, ?, ?)",
            (memory_id, saved.action, saved.session, saved.source, saved.text_hash, saved.at))
        counted.add(memory_id)
    return True


def apply_waiting(conn: sqlite3.Connection, project: str, *, now: float,
                  counted: set[int]) -> int:
    """Record the saves of ``project`` that waited for a memory that has now arrived;
    how many."""
    done = 0
    for row in conn.execute(
            "SELECT w.id, w.gid, w.role, w.machine, w.session, w.source, w.action, w.at"
            " FROM team_saves_waiting w JOIN team_memories t ON t.gid = w.gid"
            " WHERE w.project = ? AND t.memory_id IS NOT NULL", (project,)).fetchall():
        done += apply_provenance(conn, RemoteProvenance(*row[1:]), now=now, counted=counted,
                                 project=project)
        conn.execute("DELETE FROM team_saves_waiting WHERE id = ?", (row[0],))
    return done


def recount(conn: sqlite3.Connection, memory_ids: set[int], *, now: float) -> None:
    """Sessions of these memories, counted again after saves from the team arrived; each
    is a change the major pass looks at (another session may make it canonical)."""
    for memory_id in memory_ids:
        memory_rows.count_sessions(conn, memory_id)
    conn.executemany("UPDATE memories SET updated_at = ? WHERE id = ?",
                     [(now, memory_id) for memory_id in memory_ids])


def check_joined(conn: sqlite3.Connection, project: str) -> Joined:
    for one in joined(conn):
        if one.project == project:
            return one
    raise TeamError(f"The project {project} is not shared from here; `memspool team join URL "
                    f"--project {project}` shares it.")


def by_origin(conn: sqlite3.Connection, *, mine: bool, project: str | None = None,  # noqa: PLR0913 - the list's filters, keyword-only
              type: str | None = None, layer: str | None = None,
              limit: int = 100) -> list[memory_rows.Memory]:
    """Memories learned here or by this team role (``mine``), or shared by teammates,
    newest change first."""
    others = ("EXISTS (SELECT 1 FROM team_memories t WHERE t.memory_id = m.id"
              " AND t.origin_user IS NOT NULL AND t.origin_user NOT IN"
              " (SELECT role FROM team_servers WHERE role IS NOT NULL))")
    clauses = [f"NOT {others}" if mine else others]
    params: list[object] = []
    for column, value in (("project", project), ("type", type), ("layer", layer)):
        if value is not None:
            clauses.append(f"m.{column} = ?")
            params.append(value)
    sql = (f"SELECT m.* FROM memories m WHERE {' AND '.join(clauses)}"  # noqa: S608 - fixed
           " ORDER BY m.updated_at DESC, m.id DESC LIMIT ?")
    return [memory_rows.Memory.from_row(row) for row in conn.execute(sql, (*params, limit))]


def origins(conn: sqlite3.Connection, memory_ids: list[int]) -> dict[int, dict[str, str]]:
    """``{memory id: {"user", "machine"}}`` of the shared memories among ``memory_ids``
    that someone else (or this role on another machine) stated first."""
    found: dict[int, dict[str, str]] = {}
    for start in range(0, len(memory_ids), 500):
        chunk = memory_ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for memory_id, user, host in conn.execute(
                f"SELECT memory_id, origin_user, origin_machine FROM team_memories"  # noqa: S608
                f" WHERE memory_id IN ({marks}) AND origin_user IS NOT NULL", chunk):
            found[int(memory_id)] = {"user": user, "machine": host}
    return found


#: Pulled memories indexed per transaction.
TERMS_CHUNK: Final = 200


def index_pending_terms(conn: sqlite3.Connection, *, budget_secs: float | None = None) -> int:
    """Compute the term index of pulled memories still waiting for one (within
    ``budget_secs``, or all); returns how many were indexed."""
    started = time.monotonic()
    done = 0
    while budget_secs is None or time.monotonic() - started < budget_secs:
        if conn.execute("SELECT 1 FROM team_terms_pending LIMIT 1").fetchone() is None:
            break  # nothing waits: no write lock taken
        with transaction(conn):
            ids = [r[0] for r in conn.execute(
                "SELECT memory_id FROM team_terms_pending ORDER BY memory_id LIMIT ?",
                (TERMS_CHUNK,))]
            for memory_id in ids:
                memory = memory_rows.get(conn, memory_id)
                if memory is not None:
                    memory_rows.index_terms_of(conn, memory, index_terms(memory.body))
            conn.executemany("DELETE FROM team_terms_pending WHERE memory_id = ?",
                             [(i,) for i in ids])
        done += len(ids)
        if len(ids) < TERMS_CHUNK:
            break
    return done

