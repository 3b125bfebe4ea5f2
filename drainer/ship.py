"""Storing shipments: slices, seen record keys and the cursor, in one transaction.

Inserting the slices and advancing the cursor commit together
(docs/architecture.md, invariant 3), so a crash at any point either stored
a slice and moved past it, or did neither; replaying the spool afterwards
reads the same bytes again.
"""

from __future__ import annotations

import sqlite3

import zstandard

from memspool.drainer.transcript import Shipment
from memspool.store.cursors import Cursor, CursorOwner, load_cursor, upsert_cursor
from memspool.store.db import transaction
from memspool.store.slices import NewSlice, insert_slice

__all__ = ["Cursor", "Target", "hold", "load_cursor", "mark_missing", "ship"]



#: A transcript file to drain, and what its slices are filed under.
Target = CursorOwner


def ship(  # noqa: PLR0913 - the columns of one transaction, keyword-only
    conn: sqlite3.Connection,
    target: Target,
    shipment: Shipment,
    *,
    event: str,
    file_id: tuple[int, int] | None,
    now: float,
    compressor: zstandard.ZstdCompressor,
) -> tuple[list[int], int]:
    """Store ``shipment``'s parts as slices and move the cursor to its end.

    The parts are already redacted (``slice_transcript`` redacts each entry).
    ``file_id`` is the transcript's ``(st_dev, st_ino)``; ``None`` stores the
    slices without touching the cursor (PreCompact instructions for a
    transcript that does not exist yet). Returns the slice ids and the
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
            ids.append(insert_slice(conn, NewSlice(
                session_id=target.session_id, agent_id=target.agent_id,
                project=target.project, event=event, transcript_path=str(target.path),
                byte_start=part.byte_start, byte_end=part.byte_end, part=number,
                records_kept=part.kept,
                records_dropped=shipment.dropped if first else 0,
                records_unknown=shipment.unknown if first else 0,
                records_replayed=shipment.replayed if first else 0,
                text_chars=len(text), redactions=part.redactions, body=body, created_at=now,
            )))
        conn.executemany(
            "INSERT OR IGNORE INTO seen_records (uuid) VALUES (?)",
            [(key,) for key in shipment.keys],
        )
        if file_id is not None:
            upsert_cursor(conn, target, offset=shipment.end, dev=file_id[0], ino=file_id[1],
                           event=event, now=now)
    return ids, stored


def hold(  # noqa: PLR0913 - a cursor row's columns, keyword-only
    conn: sqlite3.Connection, target: Target, *, offset: int, dev: int, ino: int,
    event: str, now: float, held_since: float | None,
) -> None:
    """Leave the cursor at ``offset`` (the held-back slice starts there) and note since when."""
    with transaction(conn):
        upsert_cursor(conn, target, offset=offset, dev=dev, ino=ino, event=event, now=now,
                       held_since=held_since if held_since is not None else now)


def mark_missing(
    conn: sqlite3.Connection, target: Target, cursor: Cursor | None, *, event: str, now: float
) -> None:
    """Remember a transcript that does not exist (yet), so later drains retry it."""
    with transaction(conn):
        upsert_cursor(
            conn, target,
            offset=cursor.offset if cursor else 0,
            dev=cursor.dev if cursor else None,
            ino=cursor.ino if cursor else None,
            event=event, now=now,
            held_since=cursor.held_since if cursor else None,
            missing_since=(cursor.missing_since if cursor and cursor.missing_since else now),
        )
