"""The slices queue: what the drainer stores, and what ``memspool slices`` reads.

A slice is a redacted, zstd-compressed piece of one transcript between two
cursor positions. The drainer inserts slices (with the cursor, in one
transaction: see ``memspool.drainer.ship``); the archivist marks them
digested. Slices are never searched.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from typing import Any, Final

import zstandard

from memspool.base.errors import SliceNotFound
from memspool.store.db import names_a_row

__all__ = [
    "FORGOTTEN_MARK", "LIST_COLUMNS", "NewSlice", "SliceRow", "insert_slice", "list_slices",
    "mark_digested", "queued", "scrub", "slice_text",
]

#: What a scrubbed piece of a slice becomes (``memspool memories forget --purge-source``).
FORGOTTEN_MARK: Final = "[FORGOTTEN]"
#: A shorter piece of a forgotten memory is not looked for in its slices: a
#: word that short is not the secret, and would blank out ordinary text.
SCRUB_MIN_CHARS: Final = 8


@dataclass(frozen=True)
class SliceRow:
    """A stored slice as ``memspool slices list`` shows it (its text is read apart)."""

    id: int
    session_id: str
    agent_id: str | None
    project: str
    event: str
    byte_start: int
    byte_end: int
    part: int
    records_kept: int
    records_dropped: int
    records_unknown: int
    records_replayed: int
    raw_bytes: int
    text_chars: int
    stored_bytes: int
    redactions: int
    created_at: float
    digested_at: float | None
    #: Why the minor pass took nothing from it, when it took nothing.
    digest_note: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SliceRow:
        return cls(*(row[name] for name in LIST_COLUMNS))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: Columns shown by `memspool slices list`: the slice row's fields, in order.
LIST_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(SliceRow))


@dataclass(frozen=True)
class NewSlice:
    """One row for the queue; ``body`` is the zstd-compressed, redacted text."""

    session_id: str
    agent_id: str | None
    project: str
    event: str
    transcript_path: str
    byte_start: int
    byte_end: int
    part: int
    records_kept: int
    records_dropped: int
    records_unknown: int
    records_replayed: int
    text_chars: int
    redactions: int
    body: bytes
    created_at: float


def insert_slice(conn: sqlite3.Connection, row: NewSlice) -> int:
    """Queue one slice (inside the caller's transaction); returns its id."""
    cursor = conn.execute(
        """
        INSERT INTO slices (session_id, agent_id, project, event, transcript_path,
            byte_start, byte_end, part, records_kept, records_dropped,
            records_unknown, records_replayed, raw_bytes, text_chars, stored_bytes,
            redactions, body, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (row.session_id, row.agent_id, row.project, row.event, row.transcript_path,
         row.byte_start, row.byte_end, row.part, row.records_kept, row.records_dropped,
         row.records_unknown, row.records_replayed, row.byte_end - row.byte_start,
         row.text_chars, len(row.body), row.redactions, row.body, row.created_at),
    )
    return int(cursor.lastrowid or 0)


def list_slices(
    conn: sqlite3.Connection,
    *,
    session: str | None = None,
    limit: int = 50,
    queued_only: bool = False,
) -> list[SliceRow]:
    """Newest first; ``session`` filters, ``queued_only`` hides digested ones."""
    where: list[str] = []
    params: list[str] = []
    if session:
        where.append("session_id = ?")
        params.append(session)
    if queued_only:
        where.append("digested_at IS NULL")
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT {', '.join(LIST_COLUMNS)} FROM slices {clause} ORDER BY id DESC LIMIT ?",  # noqa: S608 - fixed column list
        (*params, limit),
    ).fetchall()
    return [SliceRow.from_row(row) for row in rows]


def slice_text(conn: sqlite3.Connection, slice_id: int) -> str:
    """The stored (already redacted) text of one slice."""
    if not names_a_row(slice_id):
        raise SliceNotFound(slice_id)
    row = conn.execute("SELECT body FROM slices WHERE id = ?", (slice_id,)).fetchone()
    if row is None:
        raise SliceNotFound(slice_id)
    return zstandard.ZstdDecompressor().decompress(row[0]).decode("utf-8", "surrogatepass")


def queued(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """Undigested slices, oldest first (served by the ``slices_queue`` index)."""
    rows = conn.execute(
        "SELECT id, session_id, agent_id, project, event, created_at FROM slices"
        " WHERE digested_at IS NULL ORDER BY id LIMIT ?",
        (limit,),
    ).fetchall()
    return [dict(row) for row in rows]


def mark_digested(conn: sqlite3.Connection, slice_id: int, at: float, note: str = "") -> bool:
    """Mark one slice digested (inside the caller's transaction), with why it gave no
    memory when it gave none; False if it already was digested."""
    cursor = conn.execute(
        "UPDATE slices SET digested_at = ?, digest_note = ? WHERE id = ? AND digested_at IS NULL",
        (at, note or None, slice_id))
    return cursor.rowcount == 1


def _pieces(texts: list[str]) -> list[str]:
    """The texts and each of their lines, longest first (a line inside a text
    that is also found whole is replaced with it)."""
    found = {piece.strip() for text in texts for piece in (text, *text.splitlines())}
    return sorted((p for p in found if len(p) >= SCRUB_MIN_CHARS), key=lambda p: (-len(p), p))


def scrub(conn: sqlite3.Connection, slice_ids: list[int], texts: list[str]) -> int:
    """Replace every occurrence of ``texts`` (whole, and line by line) in the given slices
    with :data:`FORGOTTEN_MARK` (inside the caller's transaction); returns how many
    slices changed."""
    pieces = _pieces(texts)
    changed = 0
    for slice_id in slice_ids:
        try:
            text = slice_text(conn, slice_id)
        except SliceNotFound:
            continue
        scrubbed = text
        for piece in pieces:
            scrubbed = scrubbed.replace(piece, FORGOTTEN_MARK)
        if scrubbed == text:
            continue
        body = zstandard.ZstdCompressor().compress(scrubbed.encode("utf-8", "surrogatepass"))
        conn.execute("UPDATE slices SET body = ?, text_chars = ?, stored_bytes = ? WHERE id = ?",
                     (body, len(scrubbed), len(body), slice_id))
        changed += 1
    return changed
