"""Storing shipments: captures, seen record keys and the cursor, in one transaction.

Inserting the captures and advancing the cursor commit together (invariant
3), so a crash at any point either stored a slice and moved past it, or did
neither; replaying the spool afterwards reads the same bytes again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import zstandard

from memspool.drainer.transcript import Shipment
from memspool.store import transaction

__all__ = ["Cursor", "Target", "hold", "load_cursor", "mark_missing", "ship"]



@dataclass(frozen=True)
class Target:
    """A transcript file to drain, and what its captures are filed under."""

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


def _upsert_cursor(
    conn: sqlite3.Connection,
    target: Target,
    *,
    offset: int,
    dev: int | None,
    ino: int | None,
    event: str,
    now: float,
    held_since: float | None = None,
    missing_since: float | None = None,
) -> None:
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
        (str(target.path), target.session_id, target.agent_id, target.project, dev, ino,
         offset, held_since, event, missing_since, now),
    )


def ship(
    conn: sqlite3.Connection,
    target: Target,
    shipment: Shipment,
    *,
    event: str,
    file_id: tuple[int, int] | None,
    now: float,
    compressor: zstandard.ZstdCompressor,
) -> tuple[list[int], int]:
    """Store ``shipment``'s parts as captures and move the cursor to its end.

    The parts are already redacted (``slice_transcript`` redacts each entry).
    ``file_id`` is the transcript's ``(st_dev, st_ino)``; ``None`` stores the
    captures without touching the cursor (PreCompact instructions for a
    transcript that does not exist yet). Returns the capture ids and the
    bytes stored.
    """
    ids: list[int] = []
    stored = 0
    with transaction(conn):
        for number, part in enumerate(shipment.parts, start=1):
            text = part.text
            body = compressor.compress(text.encode("utf-8", "surrogatepass"))
            stored += len(body)
            first = number == 1
            cursor = conn.execute(
                """
                INSERT INTO captures (session_id, agent_id, project, event, transcript_path,
                    byte_start, byte_end, part, records_kept, records_dropped,
                    records_unknown, records_replayed, raw_bytes, text_chars, stored_bytes,
                    redactions, body, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (target.session_id, target.agent_id, target.project, event, str(target.path),
                 part.byte_start, part.byte_end, number, part.kept,
                 shipment.dropped if first else 0, shipment.unknown if first else 0,
                 shipment.replayed if first else 0, part.byte_end - part.byte_start,
                 len(text), len(body), part.redactions, body, now),
            )
            ids.append(int(cursor.lastrowid or 0))
        conn.executemany(
            "INSERT OR IGNORE INTO seen_records (uuid) VALUES (?)",
            [(key,) for key in shipment.keys],
        )
        if file_id is not None:
            _upsert_cursor(conn, target, offset=shipment.end, dev=file_id[0], ino=file_id[1],
                           event=event, now=now)
    return ids, stored


def hold(
    conn: sqlite3.Connection, target: Target, *, offset: int, dev: int, ino: int,
    event: str, now: float, held_since: float | None,
) -> None:
    """Leave the cursor at ``offset`` (the held-back slice starts there) and note since when."""
    with transaction(conn):
        _upsert_cursor(conn, target, offset=offset, dev=dev, ino=ino, event=event, now=now,
                       held_since=held_since if held_since is not None else now)


def mark_missing(
    conn: sqlite3.Connection, target: Target, cursor: Cursor | None, *, event: str, now: float
) -> None:
    """Remember a transcript that does not exist (yet), so later drains retry it."""
    with transaction(conn):
        _upsert_cursor(
            conn, target,
            offset=cursor.offset if cursor else 0,
            dev=cursor.dev if cursor else None,
            ino=cursor.ino if cursor else None,
            event=event, now=now,
            held_since=cursor.held_since if cursor else None,
            missing_since=(cursor.missing_since if cursor and cursor.missing_since else now),
        )
