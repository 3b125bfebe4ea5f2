"""What the web page reads and the one flag it writes: a memory's pin.

Reads for browsing (counts per project, recent sessions, a filtered page of
memories, a project's saves by time) and :func:`set_pinned`. Every query
here is bounded by a ``LIMIT`` or an index, so a page costs the same on a
store of 100 memories or 100,000 (bench/web_pages.py).

A pinned memory is never archived by decay: the decay pass reads due
memories through :func:`memspool.store.memories.due`, which skips them.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any, Final

from memspool.base.terms import every_expression
from memspool.store.db import names_a_row
from memspool.store.memories import Memory, get
from memspool.store.slices import LIST_COLUMNS, SliceRow

__all__ = [
    "ProjectCounts",
    "memory_page",
    "pinned_ids",
    "project_counts",
    "project_names",
    "recent_sessions",
    "set_pinned",
    "slice_row",
    "slice_sessions",
    "successors_of",
    "timeline_rows",
]

_COLUMNS: Final = (
    "m.id, m.project, m.key, m.type, m.layer, m.summary, m.body, m.importance, m.confidence,"
    " m.corroborations, m.created_at, m.updated_at, m.sessions, m.superseded_by,"
    " m.recalled_at, m.promote_at, m.archive_at, m.pinned"
)


@dataclasses.dataclass
class ProjectCounts:
    """One project's memories counted by layer and by type, and its last change."""

    project: str
    total: int = 0
    layers: dict[str, int] = dataclasses.field(default_factory=dict)
    types: dict[str, int] = dataclasses.field(default_factory=dict)
    last_change: float = 0.0


def project_counts(conn: sqlite3.Connection) -> list[ProjectCounts]:
    """Every project with memories, most recently changed first."""
    found: dict[str, ProjectCounts] = {}
    for row in conn.execute("SELECT project, layer, type, count(*), max(updated_at)"
                            " FROM memories GROUP BY project, layer, type"):
        project, layer, kind, count, last = row
        counts = found.setdefault(project, ProjectCounts(project))
        counts.total += count
        counts.layers[layer] = counts.layers.get(layer, 0) + count
        counts.types[kind] = counts.types.get(kind, 0) + count
        counts.last_change = max(counts.last_change, float(last))
    return sorted(found.values(), key=lambda c: (-c.last_change, c.project))


#: Each distinct project by one index step, not one step per row: the
#: smallest name, then the smallest after it, and so on ("skip scan").
_DISTINCT_PROJECTS: Final = (
    "WITH RECURSIVE names(project) AS ("
    " SELECT min(project) FROM {table}"
    " UNION ALL SELECT (SELECT min(project) FROM {table} WHERE project > names.project)"
    " FROM names WHERE names.project IS NOT NULL)"
    " SELECT project FROM names WHERE project IS NOT NULL")


def project_names(conn: sqlite3.Connection) -> list[str]:
    """Every project that has memories or slices, by name."""
    names: set[str] = set()
    for table in ("memories", "slices"):  # both indexed by project first
        sql = _DISTINCT_PROJECTS.format(table=table)
        names.update(row[0] for row in conn.execute(sql))
    return sorted(names)


def recent_sessions(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """The sessions whose slices were captured last: session, project, slices, first
    and last capture time, newest first."""
    # Grouped over the (session_id, id) index alone: a slice's later columns sit
    # behind its compressed body, so rows are read only for the sessions shown.
    sessions = conn.execute(
        "SELECT session_id, count(*), min(id), max(id) FROM slices GROUP BY session_id"
        " ORDER BY max(id) DESC LIMIT ?", (limit,)).fetchall()
    found = []
    for session, slices, first_id, last_id in sessions:
        first = conn.execute("SELECT created_at FROM slices WHERE id = ?", (first_id,)).fetchone()
        last = conn.execute("SELECT project, created_at, digested_at FROM slices WHERE id = ?",
                            (last_id,)).fetchone()
        found.append({"session": session, "project": last[0], "slices": slices,
                      "first_at": float(first[0]), "last_at": float(last[1]),
                      "digested": last[2] is not None})
    return found


def _text_filter(text: str) -> tuple[str, list[object]]:
    """A clause keeping the memories that hold every word of ``text``: by the search
    index when it has words, else (punctuation only) by a plain substring."""
    expression = every_expression(text)
    if expression:
        return (" AND m.id IN (SELECT rowid FROM memory_search WHERE memory_search MATCH ?)",
                [expression])
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return (" AND (m.summary LIKE ? ESCAPE '\\' OR m.body LIKE ? ESCAPE '\\')",
            [pattern, pattern])


def memory_page(conn: sqlite3.Connection, *, project: str | None, type: str | None,  # noqa: PLR0913 - the page's filters, keyword-only
                layer: str | None, text: str | None, offset: int,
                limit: int) -> list[dict[str, Any]]:
    """Memories passing every filter given, newest change first, ``limit`` from
    ``offset``; each a memory's fields and ``pinned``."""
    where = ""
    params: list[object] = []
    for column, value in (("project", project), ("type", type), ("layer", layer)):
        if value is not None:
            where += f" AND m.{column} = ?"
            params.append(value)
    if text and text.strip():
        clause, values = _text_filter(text.strip())
        where += clause
        params.extend(values)
    # Newest change first, read in index order so a page costs its 50 rows:
    # (project, layer, updated_at) with a layer, (updated_at) without a
    # project. For a project alone SQLite, without statistics, would pick the
    # layer index and sort the whole project: name the index that is in order.
    source = "memories m"
    if project is not None and layer is None:
        source += " INDEXED BY memories_project_changed"
    sql = (f"SELECT {_COLUMNS} FROM {source} WHERE 1{where}"  # noqa: S608 - fixed fragments
           " ORDER BY m.updated_at DESC, m.id DESC LIMIT ? OFFSET ?")
    return [_with_pin(row) for row in conn.execute(sql, (*params, limit, offset))]


def _with_pin(row: sqlite3.Row) -> dict[str, Any]:
    fields = dict(row)
    fields["pinned"] = bool(fields["pinned"])
    return fields


def pinned_ids(conn: sqlite3.Connection) -> set[int]:
    """The ids of every pinned memory (a person pins a few; a listing marks them)."""
    return {int(row[0]) for row in conn.execute("SELECT id FROM memories WHERE pinned = 1")}


def set_pinned(conn: sqlite3.Connection, memory: Memory, on: bool) -> None:
    """Pin (or unpin) ``memory``, inside the caller's transaction.

    Pinning an archived memory brings it back into recall as ``canonical``:
    a person vouched for it. Its text and change time stay as they are.
    """
    conn.execute("UPDATE memories SET pinned = ? WHERE id = ?", (int(on), memory.id))
    if on and memory.layer == "archived":
        conn.execute("UPDATE memories SET layer = 'canonical' WHERE id = ?", (memory.id,))


def successors_of(conn: sqlite3.Connection, memory_id: int) -> list[Memory]:
    """The memories that ``memory_id`` superseded (they point at it), oldest first."""
    ids = [row[0] for row in conn.execute(
        "SELECT id FROM memories WHERE superseded_by = ? ORDER BY id", (memory_id,))]
    return [found for found in (get(conn, i) for i in ids) if found is not None]


def timeline_rows(conn: sqlite3.Connection, project: str, before: float,
                  limit: int) -> list[dict[str, Any]]:
    """The saves into ``project``'s memories before ``before``, newest first: session,
    action, time, and the memory's id, type, layer and summary (by the provenance
    time index, so the cost is ``limit`` rows, not the project's size)."""
    rows = conn.execute(
        "SELECT p.session, p.action, p.source, p.slice_id, p.at, m.id, m.type, m.layer,"
        " m.summary FROM provenance p JOIN memories m ON m.id = p.memory_id"
        " WHERE p.at < ? AND m.project = ? ORDER BY p.at DESC, p.id DESC LIMIT ?",
        (before, project, limit)).fetchall()
    return [dict(row) for row in rows]


def slice_sessions(conn: sqlite3.Connection, project: str, since: float,
                   before: float) -> list[dict[str, Any]]:
    """``project``'s sessions with slices captured in [``since``, ``before``): session,
    slices, first and last capture time."""
    rows = conn.execute(
        "SELECT session_id, count(*), min(created_at), max(created_at) FROM slices"
        " WHERE project = ? AND created_at >= ? AND created_at < ? GROUP BY session_id",
        (project, since, before)).fetchall()
    return [{"session": r[0], "slices": r[1], "first_at": float(r[2]), "last_at": float(r[3])}
            for r in rows]


def slice_row(conn: sqlite3.Connection, slice_id: int) -> SliceRow | None:
    """One slice's listed columns (not its text), or ``None``."""
    if not names_a_row(slice_id):
        return None
    row = conn.execute(f"SELECT {', '.join(LIST_COLUMNS)} FROM slices WHERE id = ?",  # noqa: S608
                       (slice_id,)).fetchone()
    return None if row is None else SliceRow.from_row(row)
