"""Team memory: shared projects synced through PostgreSQL, local first.

    schema.py   the server's tables, row-level security and migrations
    server.py   connections to it (psycopg, the ``memspool[team]`` extra), membership
    local.py    the local side: shared projects, global ids, applying server changes
    push.py     the outbox to the server, and the rules that reconcile people's changes
    pull.py     the server's change log since the last sequence seen, into the store
    sync.py     push then pull, by hand or in the background
    ops.py      init, join, leave, members, grant, revoke, status, doctor's checks

The outbox itself is filled by triggers in the store
(``memspool.store.team_schema``), in the same transaction as each change.
Nothing here is imported unless a project is shared, and psycopg only when
the server is talked to.
"""

from __future__ import annotations
