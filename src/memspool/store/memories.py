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

from memspool.base.kinds import Action, Layer, NoteType
from memspool.store import tombstones
from memspool.store.db import names_a_row, transaction
from memspool.untrusted import printable

__all__ = [
    "BUFFER_LAYER",
    "CONFIDENCE_NEW",
    "EDITED",
    "IMPORTANCE_NEW",
    "LIVE_LAYERS",
    "HistoryEntry",
    "Memory",
    "Provenance",
    "absorb",
    "add_provenance",
    "candidates",
    "changed_since",
    "corroborate",
    "count_by_layer",
    "count_sessions",
    "due",
    "edited",
    "forget",
    "forgotten",
    "get",
    "get_by_key",
    "history",
    "index_terms_of",
    "insert",
    "keep_history",
    "list_filtered",
    "list_memories",
    "marks",
    "memory_ids",
    "provenance",
    "recent_save",
    "rekey",
    "replace_text",
    "same_summary",
    "sessions_of",
    "set_edited",
    "set_standing",
    "supersede",
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
    "corroborations", "created_at", "updated_at", "sessions", "superseded_by", "recalled_at",
    "promote_at", "archive_at", "clarity",
)
#: Candidate lookups use at most this many of a note's terms, the rarest first,
#: and skip a term more memories than this share (docs/distill.md).
LOOKUP_TERMS: Final = 24
COMMON_TERM_MEMORIES: Final = 1000
#: Layers a new note may land in or merge into; the others left recall.
LIVE_LAYERS: Final[tuple[Layer, ...]] = ("buffer", "canonical")
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
    #: Distinct sessions whose saves touched this memory (from its provenance).
    sessions: int = 1
    superseded_by: int | None = None
    recalled_at: float | None = None
    #: When the major pass is due to look at promoting / archiving it.
    promote_at: float | None = None
    archive_at: float | None = None
    #: How clearly its text states a durable fact (the claim model's probability;
    #: 1.0 for what was saved on purpose): the context block's bar for a fact
    #: no second session has corroborated yet.
    clarity: float = 1.0

    @property
    def live(self) -> bool:
        """In recall (buffer or canonical), not superseded or archived."""
        return self.layer in LIVE_LAYERS

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Memory:
        return cls(*(row[name] for name in _COLUMN_NAMES))


@dataclasses.dataclass(frozen=True)
class HistoryEntry:
    """The text a memory had before one change, and why it changed."""

    memory_id: int
    at: float
    reason: str
    type: NoteType
    summary: str
    body: str


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
    if not names_a_row(memory_id):
        return None
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
    conn: sqlite3.Connection, project: str, text_hash: str, since: float, session: str
) -> Memory | None:
    """The memory of ``project`` a save of the same normalized text in ``session``
    touched since ``since``."""
    row = conn.execute(
        f"SELECT {_M_COLUMNS} "  # noqa: S608 - constant columns, bound values
        "FROM provenance p JOIN memories m ON m.id = p.memory_id "
        "WHERE p.text_hash = ? AND p.at >= ? AND m.project = ? AND p.session = ? "
        "ORDER BY p.at DESC LIMIT 1",
        (text_hash, since, project, session),
    ).fetchone()
    return None if row is None else Memory.from_row(row)


def candidates(  # noqa: PLR0913 - the lookup's bounds, keyword-only
    conn: sqlite3.Connection,
    project: str,
    terms: Sequence[str],
    *,
    min_shared: int,
    limit: int,
    layers: Sequence[Layer] = LIVE_LAYERS,
) -> list[Memory]:
    """Memories of ``project`` in ``layers`` (live ones unless told) sharing at least
    ``min_shared`` of ``terms``, most first.

    Only the rarest terms are looked up (at most ``LOOKUP_TERMS``, each held by
    at most ``COMMON_TERM_MEMORIES`` memories): the cost is bounded postings,
    whatever the size of the project. A term that common tells memories apart
    no better than a stop word.
    """
    unique = sorted(set(terms))
    if not unique:
        return []
    marks = ", ".join("?" * len(unique))
    rare = [row[0] for row in conn.execute(
        f"SELECT term FROM term_counts WHERE project = ? AND term IN ({marks})"  # noqa: S608
        f" AND memories <= ? ORDER BY memories, term LIMIT ?",
        (project, *unique, COMMON_TERM_MEMORIES, LOOKUP_TERMS),
    )]
    if len(rare) < min_shared:
        return []
    marks = ", ".join("?" * len(rare))
    rows = conn.execute(
        # Constant columns and one "?" per term: every value is bound.
        f"SELECT {_M_COLUMNS} FROM ("  # noqa: S608
        f"  SELECT memory_terms.memory_id, count(*) AS shared FROM memory_terms"
        f"  JOIN memories l ON l.id = memory_terms.memory_id"
        f"  WHERE memory_terms.project = ? AND memory_terms.term IN ({marks})"
        f"  AND l.layer IN ({', '.join('?' * len(layers))})"
        f"  GROUP BY memory_terms.memory_id HAVING shared >= ?"
        f"  ORDER BY shared DESC, memory_terms.memory_id DESC LIMIT ?"
        f") AS c JOIN memories m ON m.id = c.memory_id"
        f" ORDER BY c.shared DESC, m.id DESC",
        (project, *rare, *layers, min_shared, limit),
    ).fetchall()
    return [Memory.from_row(row) for row in rows]


def _set_terms(
    conn: sqlite3.Connection, project: str, memory_id: int, terms: Sequence[str]
) -> None:
    old = {row[0] for row in conn.execute(
        "SELECT term FROM memory_terms WHERE memory_id = ?", (memory_id,))}
    new = set(terms)
    gone, added = sorted(old - new), sorted(new - old)
    conn.executemany("DELETE FROM memory_terms WHERE memory_id = ? AND term = ?",
                     [(memory_id, term) for term in gone])
    conn.executemany(
        "UPDATE term_counts SET memories = memories - 1 WHERE project = ? AND term = ?",
        [(project, term) for term in gone])
    # A term no memory holds any more goes: its row would keep a forgotten word.
    conn.executemany(
        "DELETE FROM term_counts WHERE project = ? AND term = ? AND memories <= 0",
        [(project, term) for term in gone])
    conn.executemany(
        "INSERT INTO memory_terms (project, term, memory_id) VALUES (?, ?, ?)",
        [(project, term, memory_id) for term in added])
    conn.executemany(
        "INSERT INTO term_counts (project, term, memories) VALUES (?, ?, 1)"
        " ON CONFLICT (project, term) DO UPDATE SET memories = memories + 1",
        [(project, term) for term in added])


def index_terms_of(conn: sqlite3.Connection, memory: Memory, terms: Sequence[str]) -> None:
    """Give ``memory`` its term index (for a writer that computes terms later, in bulk)."""
    _set_terms(conn, memory.project, memory.id, terms)


def insert(  # noqa: PLR0913 - a memory row's columns, keyword-only
    conn: sqlite3.Connection,
    *,
    project: str,
    key: str,
    type: NoteType,
    summary: str,
    body: str,
    terms: Sequence[str],
    at: float,
    layer: Layer = BUFFER_LAYER,
    importance: float = IMPORTANCE_NEW,
    confidence: float = CONFIDENCE_NEW,
    updated_at: float | None = None,
    clarity: float = 1.0,
) -> int:
    """A new memory (provisional unless an import says otherwise); returns its id.

    Text is stored :func:`~memspool.untrusted.printable` (no terminal control
    characters), here and in every other write of this module, whoever calls.
    ``project`` and ``key`` are identities the caller looks up by: it cleans them."""
    summary, body = printable(summary, one_line=True), printable(body)
    cursor = conn.execute(
        "INSERT INTO memories (project, key, type, layer, summary, body, importance, confidence,"
        " corroborations, created_at, updated_at, clarity)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        (project, key, type, layer, summary, body, importance, confidence, at,
         at if updated_at is None else updated_at, clarity),
    )
    memory_id = cursor.lastrowid
    if memory_id is None:  # pragma: no cover - sqlite3 always sets it after an INSERT
        raise sqlite3.DatabaseError("INSERT INTO memories returned no row id")
    _set_terms(conn, project, memory_id, terms)
    return memory_id


def update_in_place(  # noqa: PLR0913 - a memory row's columns, keyword-only
    conn: sqlite3.Connection,
    memory: Memory,
    *,
    type: NoteType,
    summary: str,
    body: str,
    terms: Sequence[str],
    at: float,
) -> None:
    """The same key was captured again: its text replaces the memory's (the old text
    goes to its history). A memory that had left recall (superseded, archived) is
    current again: the newer capture wins."""
    summary, body = printable(summary, one_line=True), printable(body)
    if (type, summary, body) != (memory.type, memory.summary, memory.body):
        keep_history(conn, memory, at=at, reason="updated")
    conn.execute(
        "UPDATE memories SET type = ?, summary = ?, body = ?, updated_at = ?,"
        " layer = CASE WHEN layer IN ('buffer', 'canonical') THEN layer ELSE 'buffer' END,"
        " superseded_by = NULL, edited_at = NULL WHERE id = ?",
        (type, summary, body, at, memory.id),
    )
    _set_terms(conn, memory.project, memory.id, terms)


def corroborate(  # noqa: PLR0913 - a memory row's columns, keyword-only
    conn: sqlite3.Connection,
    memory: Memory,
    *,
    at: float,
    body: str | None = None,
    summary: str | None = None,
    terms: Sequence[str] = (),
    clarity: float = 0.0,
) -> None:
    """The same fact said again: one more corroboration. ``body`` (and ``summary``)
    replace the text when given: the new text said everything the memory said,
    and more. The memory's clarity becomes the clearer of the two statements."""
    if body is None:
        conn.execute(
            "UPDATE memories SET corroborations = corroborations + 1, updated_at = ?,"
            " clarity = max(clarity, ?) WHERE id = ?",
            (at, clarity, memory.id),
        )
        return
    body = printable(body)
    summary = memory.summary if summary is None else printable(summary, one_line=True)
    if (body, summary) != (memory.body, memory.summary):
        keep_history(conn, memory, at=at, reason="merged")
    conn.execute(
        "UPDATE memories SET corroborations = corroborations + 1, body = ?, summary = ?,"
        " updated_at = ?, clarity = max(clarity, ?), edited_at = NULL WHERE id = ?",
        (body, summary, at, clarity, memory.id),
    )
    _set_terms(conn, memory.project, memory.id, terms)


def rekey(conn: sqlite3.Connection, memory: Memory, key: str) -> None:
    """Give ``memory`` another key (its subject's key passes to a newer value)."""
    conn.execute("UPDATE memories SET key = ? WHERE id = ?", (key, memory.id))


def supersede(conn: sqlite3.Connection, memory: Memory, *, by: int, at: float) -> None:
    """``memory`` is no longer true: memory ``by`` says what is. It leaves recall,
    keeps its text and history, and points at ``by``."""
    conn.execute(
        "INSERT INTO memory_history (memory_id, at, reason, type, summary, body)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (memory.id, at, f"superseded by #{by}", memory.type, memory.summary, memory.body))
    conn.execute("UPDATE memories SET layer = 'superseded', superseded_by = ?, updated_at = ?"
                 " WHERE id = ?", (by, at, memory.id))


def add_provenance(conn: sqlite3.Connection, record: Provenance) -> None:
    """Record one save; the memory's count of distinct sessions follows."""
    conn.execute(
        "INSERT INTO provenance (memory_id, action, session, source, slice_id, text_hash, at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (record.memory_id, record.action, printable(record.session, one_line=True),
         printable(record.source, one_line=True), record.slice_id, record.text_hash, record.at),
    )
    count_sessions(conn, record.memory_id)


def sessions_of(conn: sqlite3.Connection, memory_id: int) -> set[str]:
    """The sessions whose saves touched ``memory_id``."""
    return {row[0] for row in conn.execute(
        "SELECT DISTINCT session FROM provenance WHERE memory_id = ?", (memory_id,))}


def said_at(conn: sqlite3.Connection, memory: Memory, *, unsaid: str) -> float:
    """When the latest words of ``memory`` were said: the last save that touched it (a
    memory folded into it brings its saves along) or a person's correction of it,
    else its creation. Saves of the
    session ``unsaid`` (an import's own, made when the file was read) say nothing of
    when: the memory's creation stands for them."""
    (latest,) = conn.execute("SELECT max(at) FROM provenance WHERE memory_id = ?"
                             " AND session != ?", (memory.id, unsaid)).fetchone()
    edited_at = marks(conn, memory.id)[1]  # a person's correction is a saying too
    return max(memory.created_at, float(latest or 0.0), float(edited_at or 0.0))


def count_sessions(conn: sqlite3.Connection, memory_id: int) -> int:
    """Bring ``sessions`` up to date with the provenance of ``memory_id``; returns it."""
    row = conn.execute(
        "SELECT count(DISTINCT session) FROM provenance WHERE memory_id = ?", (memory_id,)
    ).fetchone()
    sessions = max(1, int(row[0]))
    conn.execute("UPDATE memories SET sessions = ? WHERE id = ?", (sessions, memory_id))
    return sessions


def keep_history(conn: sqlite3.Connection, memory: Memory, *, at: float, reason: str) -> None:
    """Write ``memory``'s current text to its history, before that text changes."""
    conn.execute(
        "INSERT INTO memory_history (memory_id, at, reason, type, summary, body)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (memory.id, at, reason, memory.type, memory.summary, memory.body),
    )


def history(conn: sqlite3.Connection, memory_id: int) -> list[HistoryEntry]:
    """Earlier texts of ``memory_id``, oldest first."""
    rows = conn.execute(
        "SELECT memory_id, at, reason, type, summary, body FROM memory_history"
        " WHERE memory_id = ? ORDER BY at, id",
        (memory_id,),
    ).fetchall()
    return [HistoryEntry(*row) for row in rows]


def provenance(conn: sqlite3.Connection, memory_id: int) -> list[Provenance]:
    """Every save that touched ``memory_id``, oldest first."""
    rows = conn.execute(
        "SELECT memory_id, action, session, source, slice_id, text_hash, at FROM provenance"
        " WHERE memory_id = ? ORDER BY at, id",
        (memory_id,),
    ).fetchall()
    return [Provenance(*row) for row in rows]


def changed_since(conn: sqlite3.Connection, since: float, after_id: int, until: float,
                  limit: int) -> list[Memory]:
    """Memories whose row changed after ``since`` and before ``until``, in
    (updated_at, id) order, resuming after ``after_id`` among those sharing the
    boundary time; served by the ``memories_changed`` index."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories"  # noqa: S608 - constant columns, bound values
        " WHERE (updated_at > ? OR (updated_at = ? AND id > ?)) AND updated_at < ?"
        " ORDER BY updated_at, id LIMIT ?",
        (since, since, after_id, until, limit),
    ).fetchall()
    return [Memory.from_row(row) for row in rows]


def due(conn: sqlite3.Connection, column: str, now: float, limit: int) -> list[Memory]:
    """Memories whose ``promote_at`` or ``archive_at`` has come, oldest first (indexed)."""
    # A pinned memory is never archived by decay (see memspool.store.browse.set_pinned).
    layers = {"promote_at": "layer = 'buffer'",
              "archive_at": "layer IN ('buffer', 'canonical') AND pinned = 0"}[column]
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories"  # noqa: S608 - constant columns and clauses
        f" WHERE {layers} AND {column} <= ? ORDER BY {column} LIMIT ?",
        (now, limit),
    ).fetchall()
    return [Memory.from_row(row) for row in rows]


def set_standing(conn: sqlite3.Connection, memory_id: int, *, layer: Layer | None = None,  # noqa: PLR0913 - a memory row's columns, keyword-only
              superseded_by: int | None = None, confidence: float | None = None,
              importance: float | None = None, promote_at: float | None = None,
              archive_at: float | None = None, recalled_at: float | None = None) -> None:
    """Change a memory's standing (never its text): only the fields given are written."""
    fields: dict[str, object] = {
        "layer": layer, "superseded_by": superseded_by, "confidence": confidence,
        "importance": importance, "promote_at": promote_at, "archive_at": archive_at,
        "recalled_at": recalled_at}
    chosen = {name: value for name, value in fields.items() if value is not None}
    if layer is not None and layer != "superseded":
        chosen["superseded_by"] = None
    if not chosen:
        return
    assignments = ", ".join(f"{name} = ?" for name in chosen)
    conn.execute(f"UPDATE memories SET {assignments} WHERE id = ?",  # noqa: S608 - fixed names
                 (*chosen.values(), memory_id))


def absorb(conn: sqlite3.Connection, survivor: Memory, other: Memory, *, at: float,
           reason: str) -> None:
    """Fold ``other`` into ``survivor``: one memory remains.

    ``other``'s text becomes an entry of the survivor's history, its own history
    and provenance move over, and the survivor's session count follows.
    """
    conn.execute(
        "INSERT INTO memory_history (memory_id, at, reason, type, summary, body)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (survivor.id, at, f"{reason} #{other.id}", other.type, other.summary, other.body),
    )
    conn.execute("UPDATE memory_history SET memory_id = ? WHERE memory_id = ?",
                 (survivor.id, other.id))
    conn.execute("UPDATE provenance SET memory_id = ? WHERE memory_id = ?",
                 (survivor.id, other.id))
    conn.execute("UPDATE memories SET superseded_by = ? WHERE superseded_by = ?",
                 (survivor.id, other.id))
    _set_terms(conn, other.project, other.id, ())
    # The delete that ends a merge says which memory survived, so team memory
    # shares it as a merge, not as a forget (memspool.store.team_schema).
    conn.execute("INSERT OR REPLACE INTO memory_merges (memory_id, survivor) VALUES (?, ?)",
                 (other.id, survivor.id))
    # A pin is a person's: the memory that remains keeps it.
    conn.execute("UPDATE memories SET pinned = max(pinned, (SELECT pinned FROM memories"
                 " WHERE id = ?)) WHERE id = ?", (other.id, survivor.id))
    conn.execute("DELETE FROM memories WHERE id = ?", (other.id,))
    conn.execute(
        "UPDATE memories SET corroborations = corroborations + ? + 1, updated_at = ?"
        " WHERE id = ?", (other.corroborations, at, survivor.id))
    count_sessions(conn, survivor.id)


#: The history reason of a person's correction (:func:`replace_text`).
EDITED: Final = "edited"


def replace_text(conn: sqlite3.Connection, memory: Memory, *, type: NoteType, summary: str,  # noqa: PLR0913 - a memory row's columns, keyword-only
                 body: str, terms: Sequence[str], at: float, reason: str,
                 person: float | None = None) -> None:
    """Give ``memory`` another text, keeping the current one in its history. A
    person's correction (``reason`` EDITED) marks the memory as a person's
    (:func:`edited`), and so does a fold that carries over a text a person corrected
    at ``person``; any other text clears the mark (it is no longer theirs)."""
    summary, body = printable(summary, one_line=True), printable(body)
    keep_history(conn, memory, at=at, reason=reason)
    conn.execute("UPDATE memories SET type = ?, summary = ?, body = ?, updated_at = ?,"
                 " edited_at = ? WHERE id = ?",
                 (type, summary, body, at, at if reason == EDITED else person, memory.id))
    _set_terms(conn, memory.project, memory.id, terms)


def marks(conn: sqlite3.Connection, memory_id: int) -> tuple[bool, float | None]:
    """What a person set on the memory: whether it is pinned, and when they last
    corrected its text (``None``: never)."""
    row = conn.execute("SELECT pinned, edited_at FROM memories WHERE id = ?",
                       (memory_id,)).fetchone()
    return (False, None) if row is None else (bool(row[0]), row[1])


def set_edited(conn: sqlite3.Connection, memory_id: int, edited_at: float | None) -> None:
    """Set when a person last corrected the memory, as a trusted import carries it."""
    conn.execute("UPDATE memories SET edited_at = ? WHERE id = ?", (edited_at, memory_id))


def edited(conn: sqlite3.Connection, memory_id: int) -> bool:
    """Is the memory's text a person's correction? The archivist then corroborates
    it without rewriting its text or type: a person's word stands over a session's."""
    return marks(conn, memory_id)[1] is not None


def forget(conn: sqlite3.Connection, memory: Memory, *, at: float) -> list[int]:
    """Delete ``memory`` with its history, provenance and terms, leaving a tombstone of keyed
    hashes per text it was saved with, so the same note is not created again (see
    :func:`forgotten`); returns the ids of the slices it was saved from."""
    saves = conn.execute("SELECT text_hash, slice_id FROM provenance WHERE memory_id = ?",
                         (memory.id,)).fetchall()
    tombstones.bury(conn, memory.project, memory.key, {row[0] for row in saves}, at)
    conn.execute("UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?",
                 (memory.id,))
    _set_terms(conn, memory.project, memory.id, ())
    conn.execute("DELETE FROM memories WHERE id = ?", (memory.id,))
    return sorted({int(row[1]) for row in saves if row[1] is not None})


def forgotten(conn: sqlite3.Connection, project: str, text_hash: str) -> bool:
    """Was a memory saved with this text in ``project`` forgotten on purpose?"""
    return tombstones.buried(conn, project, text_hash)


def count_by_layer(conn: sqlite3.Connection) -> dict[str, int]:
    return {row[0]: int(row[1]) for row in conn.execute(
        "SELECT layer, count(*) FROM memories GROUP BY layer")}


def memory_ids(conn: sqlite3.Connection, project: str | None = None) -> list[int]:
    """Every memory's id (of ``project`` when given), oldest first."""
    if project is None:
        return [row[0] for row in conn.execute("SELECT id FROM memories ORDER BY id")]
    return [row[0] for row in conn.execute(
        "SELECT id FROM memories WHERE project = ? ORDER BY id", (project,))]


def list_filtered(conn: sqlite3.Connection, *, project: str | None = None,
                  type: str | None = None, layer: str | None = None,
                  limit: int = 100) -> list[Memory]:
    """Memories matching every filter given, newest change first."""
    clauses, params = [], []
    for column, value in (("project", project), ("type", type), ("layer", layer)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = (f"SELECT {_COLUMNS} FROM memories{where}"  # noqa: S608 - fixed names, bound values
           " ORDER BY updated_at DESC, id DESC LIMIT ?")
    return [Memory.from_row(row) for row in conn.execute(sql, (*params, limit))]


def same_summary(conn: sqlite3.Connection, memory: Memory) -> list[Memory]:
    """Other live memories of the project under the same headline (indexed)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories"  # noqa: S608 - constant columns, bound values
        " WHERE project = ? AND summary = ? AND id != ? AND layer IN ('buffer', 'canonical')"
        " ORDER BY id",
        (memory.project, memory.summary, memory.id),
    ).fetchall()
    return [Memory.from_row(row) for row in rows]
