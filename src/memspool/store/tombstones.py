"""What a forgotten memory leaves behind: keyed hashes only, never its text.

A tombstone in ``forgotten`` stops the archivist from making the same memory
again out of the same slice. It needs to recognise the text, not to hold it:
it keeps the project and an HMAC-SHA256, under a random key of this store, of
the memory's key and of each text hash it was saved with. Without the key,
nobody holding a tombstone can test a guess (an AWS key id, a password)
against it; the key lives in the store's ``state`` table and never leaves
the machine.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from collections.abc import Iterable
from typing import Final

__all__ = ["buried", "bury", "keyed", "secret"]

#: The ``state`` row holding this store's tombstone key (hex).
KEY_STATE: Final = "tombstone_key"
#: Hex characters kept of each keyed hash: 128 bits, as the text hashes have.
HASH_CHARS: Final = 32


def secret(conn: sqlite3.Connection) -> bytes:
    """This store's tombstone key, made on first use (inside the caller's transaction)."""
    row = conn.execute("SELECT value FROM state WHERE key = ?", (KEY_STATE,)).fetchone()
    if row is not None:
        return bytes.fromhex(str(row[0]))
    made = secrets.token_bytes(32)
    conn.execute("INSERT INTO state (key, value) VALUES (?, ?)", (KEY_STATE, made.hex()))
    return made


def keyed(key: bytes, value: str) -> str:
    """The keyed hash a tombstone keeps instead of ``value``."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"),
                    hashlib.sha256).hexdigest()[:HASH_CHARS]


def bury(conn: sqlite3.Connection, project: str, key: str, text_hashes: Iterable[str],
         at: float) -> None:
    """Leave one tombstone per text hash the memory was saved with (one, empty, if none)."""
    salt = secret(conn)
    hashes = set(text_hashes) or {""}
    conn.executemany(
        "INSERT OR IGNORE INTO forgotten (project, key, text_hash, at) VALUES (?, ?, ?, ?)",
        [(project, keyed(salt, key), keyed(salt, text_hash), at) for text_hash in hashes])


def buried(conn: sqlite3.Connection, project: str, text_hash: str) -> bool:
    """Was a memory saved with this text hash in ``project`` forgotten on purpose?"""
    row = conn.execute("SELECT value FROM state WHERE key = ?", (KEY_STATE,)).fetchone()
    if row is None:
        return False  # nothing was ever forgotten here
    return conn.execute(
        "SELECT 1 FROM forgotten WHERE project = ? AND text_hash = ? LIMIT 1",
        (project, keyed(bytes.fromhex(str(row[0])), text_hash)),
    ).fetchone() is not None
