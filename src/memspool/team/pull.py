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
import math
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from memspool.distill.keys import SUMMARY_CHARS, note_key, whole_summary
from memspool.redact import kept
from memspool.team.local import (
    RemoteMemory,
    RemoteProvenance,
    apply_memory,
    apply_provenance,
    apply_waiting,
    quiet,
    recount,
    resolve_links,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PullReport", "pull_project"]

#: Changes read per batch (one local transaction each).
BATCH: Final = 2000
#: A one-line field of a teammate's row (a name, a session, a type) at most.
LINE_CHARS: Final = 200
#: How far past this machine's clock a teammate's may run before its times are not
#: believed.
CLOCK_SKEW_SECS: Final = 86400.0
#: A teammate's memory text at most: memories are notes, not transcripts.
BODY_CHARS: Final = 100_000

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
    #: Rows left out: nothing of their text was left once cleaned.
    skipped: int = 0

    def add(self, other: PullReport) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def fetch(pg: psycopg.Connection[Any], project: str, after: int,
          limit: int = BATCH) -> list[tuple[Any, ...]]:
    """The next ``limit`` changes of ``project`` after ``after``, from one snapshot."""
    with pg.transaction():
        pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return list(pg.execute(_CHANGES, {"p": project, "after": after, "n": limit}))


def _line(value: object, most: int = LINE_CHARS) -> str:
    """One line of a teammate's row as memory keeps it: printable, redacted, cut."""
    return kept(str(value or ""), one_line=True)[:most]


def _time(value: object, now: float) -> float:
    """A time from the server, in seconds: one that is no number, NaN, or later than
    a day past now (a member may write any; a memory from the future would sort
    first for ever) is now."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return now
    if not math.isfinite(seconds) or seconds > now + CLOCK_SKEW_SECS:
        return now
    return max(0.0, seconds)


def _memory(change: tuple[Any, ...], now: float) -> RemoteMemory | None:
    """A teammate's memory as memory keeps text from outside (printable, redacted, its
    key a slug, its summary at most SUMMARY_CHARS, sane times), or ``None`` when
    nothing of its summary or body is left (unless it says it was forgotten)."""
    summary = whole_summary(kept(str(change[5] or ""), one_line=True), SUMMARY_CHARS)
    body = kept(str(change[6] or "")).strip()[:BODY_CHARS]
    if (not summary.strip() or not body) and change[7] != "forgotten":
        return None  # (a forgotten one has no text left: it still forgets it here)
    return RemoteMemory(change[2], note_key(_line(change[3])), _line(change[4]), summary, body,
                        change[7], change[8], int(change[9]), _time(change[10], now),
                        _time(change[11], now), _line(change[12]), _line(change[13]),
                        _line(change[14]), _line(change[15]))


def apply_batch(conn: sqlite3.Connection, project: str, changes: list[tuple[Any, ...]],
                machine: str, *, now: float) -> PullReport:
    """Apply one fetched batch and move the cursor past it, in one local transaction.
    A teammate's row is text from outside, cleaned as a capture is (:func:`_memory`);
    one that cannot be kept is skipped, and the cursor still moves past it, so a bad
    row never stops the team's sync."""
    report = PullReport(changes=len(changes), batches=1)
    counted: set[int] = set()
    with quiet(conn):
        for change in changes:
            if change[1] == "m":
                remote = _memory(change, now)
                if remote is None:
                    report.skipped += 1
                    continue
                done = apply_memory(conn, project, remote, now=now)
                if done in ("created", "updated", "forgotten", "merged"):
                    setattr(report, done, getattr(report, done) + 1)
            elif change[13] != machine:  # this machine's own saves are here already
                record = RemoteProvenance(change[2], _line(change[12]), _line(change[13]),
                                          _line(change[16]), _line(change[17]), change[18],
                                          _time(change[11], now))
                report.saves += apply_provenance(conn, record, now=now, counted=counted,
                                                 project=project)
        report.saves += apply_waiting(conn, project, now=now, counted=counted)
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
