"""Pulling: every change of a shared project since the last sequence number seen.

The server's change log is the ``seq`` of memories and saves, per project
(``memspool.team.schema``). A pull reads the next batch of both in ``seq``
order from one snapshot, applies it to the local store and moves the
project's cursor to the last ``seq`` applied, in one SQLite transaction: a
pull killed at any point has applied all of a batch or none of it, and the
next one starts where the last commit left off.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from memspool.team.local import (
    RemoteMemory,
    RemoteProvenance,
    apply_memory,
    apply_provenance,
    quiet,
    recount,
    resolve_links,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PullReport", "pull_project"]

#: Changes read per batch (one local transaction each).
BATCH: Final = 2000

_CHANGES: Final = """
    (SELECT seq, 'm' AS kind, gid::text, key, type, summary, body, status,
            superseded_by::text, revision, created_at, changed_at, created_by::text AS who,
            created_on AS machine, changed_by::text, changed_on, NULL AS session,
            NULL AS source, NULL AS action
     FROM memspool.memories WHERE project_id = %(p)s AND seq > %(after)s
     ORDER BY seq LIMIT %(n)s)
    UNION ALL
    (SELECT seq, 'p', gid::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, at,
            role::text, machine, NULL, NULL, session, source, action
     FROM memspool.provenance WHERE project_id = %(p)s AND seq > %(after)s
     ORDER BY seq LIMIT %(n)s)
    ORDER BY seq LIMIT %(n)s
"""


@dataclasses.dataclass
class PullReport:
    changes: int = 0
    created: int = 0
    updated: int = 0
    forgotten: int = 0
    merged: int = 0
    saves: int = 0
    batches: int = 0

    def add(self, other: PullReport) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def fetch(pg: psycopg.Connection[Any], project: str, after: int,
          limit: int = BATCH) -> list[tuple[Any, ...]]:
    """The next ``limit`` changes of ``project`` after ``after``, from one snapshot."""
    with pg.transaction():
        pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return list(pg.execute(_CHANGES, {"p": project, "after": after, "n": limit}))


def apply_batch(conn: sqlite3.Connection, project: str, changes: list[tuple[Any, ...]],
                machine: str, *, now: float) -> PullReport:
    """Apply one fetched batch and move the cursor past it, in one local transaction."""
    report = PullReport(changes=len(changes), batches=1)
    counted: set[int] = set()
    with quiet(conn):
        for change in changes:
            if change[1] == "m":
                remote = RemoteMemory(change[2], change[3], change[4], change[5], change[6],
                                      change[7], change[8], int(change[9]), float(change[10]),
                                      float(change[11]), change[12], change[13], change[14],
                                      change[15])
                done = apply_memory(conn, project, remote, now=now)
                if done in ("created", "updated", "forgotten", "merged"):
                    setattr(report, done, getattr(report, done) + 1)
            elif change[13] != machine:  # this machine's own saves are here already
                record = RemoteProvenance(change[2], change[12], change[13], change[16],
                                          change[17], change[18], float(change[11]))
                report.saves += apply_provenance(conn, record, now=now, counted=counted)
        recount(conn, counted, now=now)
        resolve_links(conn, project)
        conn.execute("UPDATE team_projects SET pulled_seq = ? WHERE project = ?",
                     (int(changes[-1][0]), project))
    return report


def pull_project(conn: sqlite3.Connection, pg: psycopg.Connection[Any], project: str,
                 machine: str, *, batch: int = BATCH) -> PullReport:
    """Pull every change of ``project`` the server has past this machine's cursor."""
    report = PullReport()
    while True:
        row = conn.execute("SELECT pulled_seq FROM team_projects WHERE project = ?",
                           (project,)).fetchone()
        if row is None:
            return report
        changes = fetch(pg, project, int(row[0]), batch)
        if not changes:
            return report
        report.add(apply_batch(conn, project, changes, machine, now=time.time()))
        if len(changes) < batch:
            return report
