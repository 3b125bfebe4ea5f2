"""The store: one SQLite file under the home, and every table's reads and writes.

    db.py        connection, WAL, migrations, transactions, the small state table
    cursors.py   per-transcript byte cursors
    slices.py    the queue the drainer fills (never searched)
    memories.py  memory rows, their provenance and the term index
    tombstones.py  what a forgotten memory leaves: keyed hashes, never text
    erase.py     after a forget: the search index merged, the WAL emptied
    upgrades.py  migrations SQL alone cannot write (the memories rebuild)
    browse.py    what the web page reads, and a memory's pin

Every other room reaches SQLite through here.
"""

from __future__ import annotations

from memspool.store.db import (
    MIGRATIONS,
    connect,
    connect_readonly,
    damaged,
    diagnose,
    get_state,
    require_home,
    set_state,
    transaction,
)

__all__ = [
    "MIGRATIONS",
    "connect",
    "connect_readonly",
    "damaged",
    "diagnose",
    "get_state",
    "require_home",
    "set_state",
    "transaction",
]
