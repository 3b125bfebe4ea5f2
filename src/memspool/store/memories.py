"""Durable memory: the ``memories`` table and what keeps it honest.

A memory is one fact in one project, identified by its key (a slug of its
summary line). New memories are provisional: layer ``buffer``, importance
0.6, confidence 0.5, no corroborations. Each save that touched a memory
(created, updated in place, merged as a near-duplicate) leaves a
``provenance`` row saying which session, source and queued slice it came
from, and a hash of the saved text so exact re-captures can be skipped.

``memory_terms`` indexes each memory under its distilled terms so the
distiller finds near-duplicate candidates without scanning a project.
Write memories only through this module, which keeps the term index in
step; the terms themselves are computed by the caller
(``memspool.distill.similarity``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Final

from memspool.store.db import transaction
from memspool.store.kinds import Action, Layer, NoteType

__all__ = [
    "BUFFER_LAYER",
    "CONFIDENCE_NEW",
    "IMPORTANCE_NEW",
    "Memory",
    "Provenance",
    "add_provenance",
    "candidates",
    "corroborate",
    "get",
    "get_by_key",
    "insert",
    "list_memories",
    "provenance",
    "recent_save",
    "unit_of_work",
    "update_in_place",
]

#: Where new memories land until the major pass promotes them (the design's "provisional").
BUFFER_LAYER: Final[Layer] = "buffer"
#: A new memory's importance: above the archive floor, below what corroboration earns.
IMPORTANCE_NEW: Final = 0.6
#: Neither confirmed nor contradicted yet; corroboration raises it in the major pass.
CONFIDENCE_NEW: Final = 0.5

_COLUMN_NAMES: Final = (
    "id", "project", "key", "type", "layer", "summary", "body", "importance", "confidence",
    "corroborations", "created_at", "updated_at",
)
# The queries below are built from these constants only; every value is a
# bound parameter, hence the S608 exemptions.
_COLUMNS: Final = ", ".join(_COLUMN_NAMES)
_M_COLUMNS: Final = ", ".join(f"m.{name}" for name in _COLUMN_NAMES)


@dataclasses.dataclass(frozen=True)
class Memory:
    id: int
    project: str
    key: str
    type: NoteType
    layer: Layer
    summary: str
    body: str
    importance: float
    confidence: float
    corroborations: int
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Memory:
        return cls(*(row[name] for name in _COLUMN_NAMES))


@dataclasses.dataclass(frozen=True)
class Provenance:
    memory_id: int
    action: Action
    session: str
    source: str
    slice_id: int | None
    text_hash: str
    at: float


@contextlib.contextmanager
def unit_of_work(conn: sqlite3.Connection, *, keep: bool = True) -> Iterator[sqlite3.Connection]:
    """All writes inside commit together, or (``keep=False``, a dry run) not at all.

    Inside a caller's open transaction (the archivist marks the slice
    digested in the same one) this is a savepoint, so the caller's commit
    decides; otherwise it is its own ``BEGIN IMMEDIATE`` transaction.
    """
    if not conn.in_transaction:
        if keep:
            with transaction(conn):
                yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")
        return
    conn.execute("SAVEPOINT memspool_capture")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK TO memspool_capture")
        conn.execute("RELEASE memspool_capture")
        raise
    if not keep:
        conn.execute("ROLLBACK TO memspool_capture")
    conn.execute("RELEASE memspool_capture")


def get(conn: sqlite3.Connection, memory_id: int) -> Memory | None:
    sql = f"SELECT {_COLUMNS} FROM memories WHERE id = ?"  # noqa: S608 - constant columns
    row = conn.execute(sql, (memory_id,)).fetchone()
    return None if row is None else Memory.from_row(row)


def get_by_key(conn: sqlite3.Connection, project: str, key: str) -> Memory | None:
    sql = f"SELECT {_COLUMNS} FROM memories WHERE project = ? AND key = ?"  # noqa: S608 - see above
    row = conn.execute(sql, (project, key)).fetchone()
    return None if row is None else Memory.from_row(row)


def list_memories(conn: sqlite3.Connection, project: str | None = None) -> list[Memory]:
    """Memories, oldest first; all projects when ``project`` is None."""
    if project is None:
        sql = f"SELECT {_COLUMNS} FROM memories ORDER BY id"  # noqa: S608 - constant columns
        rows = conn.execute(sql).fetchall()
    else:
        sql = f"SELECT {_COLUMNS} FROM memories WHERE project = ? ORDER BY id"  # noqa: S608
        rows = conn.execute(sql, (project,)).fetchall()
    return [Memory.from_row(row) for row in rows]


def recent_save(
    conn: sqlite3.Connection, project: str, text_hash: str, since: float
) -> Memory | None:
    """The memory of ``project`` a save of the same normalized text touched since ``since``."""
    row = conn.execute(
        f"SELECT {_M_COLUMNS} "  # noqa: S608 - constant columns, bound values
        "FROM provenance p JOIN memories m ON m.id = p.memory_id "
        "WHERE p.text_hash = ? AND p.at >= ? AND m.project = ? "
        "ORDER BY p.at DESC LIMIT 1",
        (text_hash, since, project),
    ).fetchone()
    return None if row is None else Memory.from_row(row)


def candidates(
    conn: sqlite3.Connection,
    project: str,
    terms: Sequence[str],
    *,
    min_shared: int,
    limit: int,
) -> list[Memory]:
    """Memories of ``project`` sharing at least ``min_shared`` of ``terms``, most shared first.

    Served by the ``memory_terms`` primary key (project, term): the cost is
    the postings of these terms, not the size of the project.
    """
    unique = sorted(set(terms))
    if not unique:
        return []
    marks = ", ".join("?" * len(unique))
    rows = conn.execute(
        # Constant columns and one "?" per term: every value is bound.
        f"SELECT {_M_COLUMNS} FROM ("  # noqa: S608
        f"  SELECT memory_id, count(*) AS shared FROM memory_terms"
        f"  WHERE project = ? AND term IN ({marks})"
        f"  GROUP BY memory_id HAVING shared >= ?"
        f"  ORDER BY shared DESC, memory_id DESC LIMIT ?"
        f") AS c JOIN memories m ON m.id = c.memory_id ORDER BY c.shared DESC, m.id DESC",
        (project, *unique, min_shared, limit),
    ).fetchall()
    return [Memory.from_row(row) for row in rows]


def _set_terms(
    conn: sqlite3.Connection, project: str, memory_id: int, terms: Sequence[str]
) -> None:
    conn.execute("DELETE FROM memory_terms WHERE memory_id = ?", (memory_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO memory_terms (project, term, memory_id) VALUES (?, ?, ?)",
        [(project, term, memory_id) for term in terms],
    )


def insert(
    conn: sqlite3.Connection,
    *,
    project: str,
    key: str,
    type: NoteType,
    summary: str,
    body: str,
    terms: Sequence[str],
    at: float,
) -> int:
    """A new provisional memory; returns its id."""
    cursor = conn.execute(
        "INSERT INTO memories (project, key, type, layer, summary, body, importance, confidence,"
        " corroborations, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
        (project, key, type, BUFFER_LAYER, summary, body, IMPORTANCE_NEW, CONFIDENCE_NEW, at, at),
    )
    memory_id = cursor.lastrowid
    if memory_id is None:  # pragma: no cover - sqlite3 always sets it after an INSERT
        raise sqlite3.DatabaseError("INSERT INTO memories returned no row id")
    _set_terms(conn, project, memory_id, terms)
    return memory_id


def update_in_place(
    conn: sqlite3.Connection,
    memory: Memory,
    *,
    type: NoteType,
    summary: str,
    body: str,
    terms: Sequence[str],
    at: float,
) -> None:
    """The same key was captured again: its text replaces the memory's."""
    conn.execute(
        "UPDATE memories SET type = ?, summary = ?, body = ?, updated_at = ? WHERE id = ?",
        (type, summary, body, at, memory.id),
    )
    _set_terms(conn, memory.project, memory.id, terms)


def corroborate(
    conn: sqlite3.Connection,
    memory: Memory,
    *,
    at: float,
    body: str | None = None,
    terms: Sequence[str] = (),
) -> None:
    """A near-duplicate re-capture: one more corroboration; ``body`` replaces the text when given
    (the re-capture said everything the memory said, and more)."""
    if body is None:
        conn.execute(
            "UPDATE memories SET corroborations = corroborations + 1, updated_at = ? WHERE id = ?",
            (at, memory.id),
        )
        return
    conn.execute(
        "UPDATE memories SET corroborations = corroborations + 1, body = ?, updated_at = ?"
        " WHERE id = ?",
        (body, at, memory.id),
    )
    _set_terms(conn, memory.project, memory.id, terms)


def add_provenance(conn: sqlite3.Connection, record: Provenance) -> None:
    conn.execute(
        "INSERT INTO provenance (memory_id, action, session, source, slice_id, text_hash, at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (record.memory_id, record.action, record.session, record.source, record.slice_id,
         record.text_hash, record.at),
    )


def provenance(conn: sqlite3.Connection, memory_id: int) -> list[Provenance]:
    """Every save that touched ``memory_id``, oldest first."""
    rows = conn.execute(
        "SELECT memory_id, action, session, source, slice_id, text_hash, at FROM provenance"
        " WHERE memory_id = ? ORDER BY at, id",
        (memory_id,),
    ).fetchall()
    return [Provenance(*row) for row in rows]
