"""Reading the capture queue: listing captures and showing one's text."""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import zstandard

from memspool.errors import MemspoolError

__all__ = ["CaptureNotFound", "capture_text", "list_captures"]

#: Columns shown by `memspool captures list`.
LIST_COLUMNS: Final = (
    "id", "session_id", "agent_id", "project", "event", "byte_start", "byte_end", "part",
    "records_kept", "records_dropped", "records_unknown", "records_replayed", "raw_bytes",
    "text_chars", "stored_bytes", "redactions", "created_at", "digested_at",
)


class CaptureNotFound(MemspoolError, LookupError):
    def __init__(self, capture_id: int) -> None:
        super().__init__(
            f"No capture with id {capture_id}; `memspool captures list` shows the ids."
        )
        self.capture_id = capture_id


def list_captures(
    conn: sqlite3.Connection,
    *,
    session: str | None = None,
    limit: int = 50,
    queued_only: bool = False,
) -> list[dict[str, Any]]:
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
        f"SELECT {', '.join(LIST_COLUMNS)} FROM captures {clause} ORDER BY id DESC LIMIT ?",  # noqa: S608 - fixed column list
        (*params, limit),
    ).fetchall()
    return [dict(row) for row in rows]


def capture_text(conn: sqlite3.Connection, capture_id: int) -> str:
    """The stored (already redacted) text of one capture."""
    row = conn.execute("SELECT body FROM captures WHERE id = ?", (capture_id,)).fetchone()
    if row is None:
        raise CaptureNotFound(capture_id)
    return zstandard.ZstdDecompressor().decompress(row[0]).decode("utf-8", "surrogatepass")
