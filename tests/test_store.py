"""The store: migrations under concurrency, privacy, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memspool.base.errors import StoreError
from memspool.config import load_config
from memspool.store import MIGRATIONS, connect


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_many_processes_opening_a_new_store_at_once(home: Path) -> None:
    """Each migration is applied once even when every process finds the store new."""
    script = ("from memspool.config import load_config; from memspool.store import connect; "
              "connect(load_config()).close()")
    procs = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
             for _ in range(12)]
    errors = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        if proc.returncode:
            errors.append(err.decode())
    assert not errors, errors[0]
    conn = connect(load_config())
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    assert (home / "memspool.db").stat().st_mode & 0o777 == 0o600


def test_a_newer_store_is_refused_with_advice(home: Path) -> None:
    conn = connect(load_config())
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    with pytest.raises(StoreError, match="Upgrade memspool"):
        connect(load_config())


def test_a_store_that_reached_version_4_before_its_last_column_is_mended(home: Path) -> None:
    conn = connect(load_config())
    # As a build of 2026-12-01 left it: migration 4 without digest_note and its index.
    conn.execute("DROP INDEX memories_summary")
    conn.execute("ALTER TABLE slices DROP COLUMN digest_note")
    conn.execute("PRAGMA user_version = 14")
    conn.close()
    conn = connect(load_config())
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(slices)")}
        assert "digest_note" in columns
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_summary'"
                            ).fetchone() is not None
    finally:
        conn.close()


def test_a_damaged_store_is_a_clear_error(home: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "memspool.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"is damaged .* Move it aside"):
        connect(load_config())


def test_a_store_from_before_the_rename_upgrades_in_place(home: Path) -> None:
    """Schema 2 called the queue `captures`; upgrading keeps every row and reference."""
    import sqlite3

    from memspool.store.db import _statements

    home.mkdir(mode=0o700)
    old = sqlite3.connect(home / "memspool.db", isolation_level=None)
    for version in (0, 1):
        for statement in _statements(MIGRATIONS[version]):
            old.execute(statement)
    old.execute("PRAGMA user_version = 2")
    old.execute(
        "INSERT INTO captures (session_id, project, event, transcript_path, byte_start, byte_end,"
        " records_kept, records_dropped, raw_bytes, text_chars, stored_bytes, body, created_at)"
        " VALUES ('s1', 'api', 'Stop', '/t.jsonl', 0, 10, 1, 0, 10, 10, 10, x'00', 1.0)")
    old.execute(
        "INSERT INTO memories (project, key, type, summary, body, created_at, updated_at)"
        " VALUES ('api', 'k', 'pitfall', 'S', 'B', 1.0, 1.0)")
    old.execute(
        "INSERT INTO provenance (memory_id, action, session, source, capture_id, text_hash, at)"
        " VALUES (1, 'created', 's1', 'archivist', 1, 'h', 1.0)")
    old.execute(
        "INSERT INTO cursors (path, session_id, project, offset, force_pending, updated_at)"
        " VALUES ('/t.jsonl', 's1', 'api', 10, 1, 1.0)")
    old.close()

    conn = connect(load_config())
    conn.row_factory = None
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("SELECT session_id, byte_end FROM slices").fetchall() == [("s1", 10)]
        assert conn.execute("SELECT slice_id FROM provenance").fetchall() == [(1,)]
        assert conn.execute("SELECT offset FROM cursors").fetchall() == [(10,)]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "captures" not in tables and "memories_fts" not in tables
        assert "force_pending" not in {
            r[1] for r in conn.execute("PRAGMA table_info(cursors)")}
        # The foreign key followed the rename: deleting the slice clears the reference.
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("DELETE FROM slices")
        assert conn.execute("SELECT slice_id FROM provenance").fetchall() == [(None,)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
