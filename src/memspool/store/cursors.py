"""Per-transcript byte cursors: where the next slice of each transcript starts.

A cursor row also remembers the transcript's identity (device and inode, so
a replaced file is noticed), since when a short tail is held back, and
since when a named transcript has been missing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cursor", "CursorOwner", "load_cursor", "upsert_cursor"]


@dataclass(frozen=True)
class CursorOwner:
    """Whose transcript a cursor follows."""

    path: Path
    session_id: str
    agent_id: str | None
    project: str


@dataclass(frozen=True)
class Cursor:
    offset: int
    dev: int | None
    ino: int | None
    held_since: float | None
    missing_since: float | None


def load_cursor(conn: sqlite3.Connection, path: Path) -> Cursor | None:
    row = conn.execute(
        "SELECT offset, dev, ino, held_since, missing_since FROM cursors WHERE path = ?",
        (str(path),),
    ).fetchone()
    return None if row is None else Cursor(*row)


def upsert_cursor(  # noqa: PLR0913 - a cursor row's columns, keyword-only
    conn: sqlite3.Connection,
    owner: CursorOwner,
    *,
    offset: int,
    dev: int | None,
    ino: int | None,
    event: str,
    now: float,
    held_since: float | None = None,
    missing_since: float | None = None,
) -> None:
    """Write the cursor of ``owner.path`` (inside the caller's transaction)."""
    conn.execute(
        """
        INSERT INTO cursors (path, session_id, agent_id, project, dev, ino, offset,
                             held_since, last_event, missing_since, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (path) DO UPDATE SET
            session_id = excluded.session_id, agent_id = excluded.agent_id,
            project = excluded.project, dev = excluded.dev, ino = excluded.ino,
            offset = excluded.offset, held_since = excluded.held_since,
            last_event = excluded.last_event, missing_since = excluded.missing_since,
            updated_at = excluded.updated_at
        """,
        (str(owner.path), owner.session_id, owner.agent_id, owner.project, dev, ino,
         offset, held_since, event, missing_since, now),
    )
