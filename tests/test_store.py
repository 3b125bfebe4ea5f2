"""The store: migrations under concurrency, privacy, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memspool.config import load_config
from memspool.errors import StoreError
from memspool.store import MIGRATIONS, connect


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


def test_a_damaged_store_is_a_clear_error(home: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "memspool.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="move it aside"):
        connect(load_config())
