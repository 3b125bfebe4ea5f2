"""``memspool team sync`` and its background form: push the outbox, then pull.

Local memory never waits for the network: hooks, search and context read
the SQLite store only. A sync holds the store's write lock only while it
applies a batch it already has in hand, never while it waits on the server.
With the server down a sync fails fast (a connect time-out), says so in
``memspool status``, and the outbox keeps growing until the next one.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from memspool.base.errors import TeamError
from memspool.config import Config
from memspool.recall import render_dirty
from memspool.redact import redact
from memspool.team import server
from memspool.team.local import index_pending_terms, joined, machine, pending
from memspool.team.pull import PullReport, pull_project
from memspool.team.push import PushReport, push_project

if TYPE_CHECKING:
    import psycopg_pool

__all__ = ["SyncReport", "due", "record_failure", "sync"]

#: A failing server is tried again after ``team_sync_secs`` times this, doubled
#: per failure up to this factor.
MAX_BACKOFF: Final = 16
#: Seconds a sync spends on the term index of what it pulled; the rest waits.
TERMS_BUDGET_SECS: Final = 0.5
#: The file one sync of a home holds while it runs (beside the store).
SYNC_LOCK: Final = "team-sync.lock"


def _index(conn: sqlite3.Connection, budget: float | None) -> int:
    """Index pulled memories' terms within ``budget``; returns how many still wait."""
    index_pending_terms(conn, budget_secs=budget)
    return int(conn.execute("SELECT count(*) FROM team_terms_pending").fetchone()[0])


def index_waiting(conn: sqlite3.Connection, *, budget_secs: float | None = None) -> int:
    """The background's share: index pulled memories' terms; returns how many still wait."""
    return _index(conn, budget_secs)


@dataclasses.dataclass
class SyncReport:
    projects: list[str] = dataclasses.field(default_factory=list)
    push: PushReport = dataclasses.field(default_factory=PushReport)
    pull: PullReport = dataclasses.field(default_factory=PullReport)
    pending: int = 0
    terms_waiting: int = 0
    secs: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "projects": self.projects, "push": dataclasses.asdict(self.push),
                "pull": dataclasses.asdict(self.pull), "pending": self.pending,
                "terms_waiting": self.terms_waiting,
                "secs": round(self.secs, 3)}


def _servers(conn: sqlite3.Connection, only: str | None) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for one in joined(conn):
        if only is None or one.project == only:
            found.setdefault(one.server, []).append(one.project)
    return found


def record_failure(conn: sqlite3.Connection, url: str, error: TeamError, config: Config,
                   *, now: float) -> None:
    row = conn.execute("SELECT failures FROM team_servers WHERE url = ?", (url,)).fetchone()
    failures = (int(row[0]) if row else 0) + 1
    wait = config.team_sync_secs * min(MAX_BACKOFF, 2 ** (failures - 1))
    conn.execute("UPDATE team_servers SET last_error = ?, failures = ?, next_try = ?"
                 " WHERE url = ?",
                 (f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {redact(str(error))[0]}", failures,
                  now + wait, url))


def sync(conn: sqlite3.Connection, config: Config, *, project: str | None = None,
         pools: dict[str, psycopg_pool.ConnectionPool[Any]] | None = None) -> SyncReport:
    """Push, then pull, every shared project (or ``project``); render what changed.

    ``pools``: a long-lived caller's connection pools by server URL (filled
    here as needed); without it each server gets one connection for the call.
    Raises :class:`~memspool.base.errors.TeamError` for the first server that
    fails, after recording it; servers before it are synced.
    """
    import filelock  # here: only a sync needs it, and it is slow to load

    # One sync of a home at a time (the drainer's, `maintain`'s, a person's): two
    # at once each applied the same pulled saves, and kept both.
    with filelock.FileLock(config.home / SYNC_LOCK, mode=0o600):
        return _sync(conn, config, project=project, pools=pools)


def _sync(conn: sqlite3.Connection, config: Config, *, project: str | None,
          pools: dict[str, psycopg_pool.ConnectionPool[Any]] | None) -> SyncReport:
    started = time.monotonic()
    report = SyncReport()
    servers = _servers(conn, project)
    if project is not None and not servers:
        raise TeamError(f"The project {project} is not shared from here; `memspool team join "
                        f"URL --project {project}` shares it.")
    name = machine(conn)
    failure: TeamError | None = None
    for url, projects in servers.items():
        try:
            _sync_server(conn, config, url, projects=projects, name=name, report=report,
                         pools=pools)
        except TeamError as exc:
            record_failure(conn, url, exc, config, now=time.time())
            failure = failure or exc
            continue
        conn.execute("UPDATE team_servers SET last_sync = ?, last_error = NULL, failures = 0,"
                     " next_try = NULL WHERE url = ?", (time.time(), url))
    render_dirty(conn, config.context_max_chars)
    # A small pull is indexed for near-duplicate lookups at once; a big one
    # finishes in the background (the drainer, `memspool maintain`).
    report.terms_waiting = _index(conn, TERMS_BUDGET_SECS)
    report.pending = pending(conn)
    report.secs = time.monotonic() - started
    if failure is not None:
        raise failure
    return report


def _sync_server(conn: sqlite3.Connection, config: Config, url: str, *, projects: list[str],  # noqa: PLR0913 - one sync's state, private
                 name: str, report: SyncReport,
                 pools: dict[str, psycopg_pool.ConnectionPool[Any]] | None) -> None:
    psycopg = server.load()
    if pools is not None:
        if url not in pools:
            pools[url] = server.pool(url)
        try:
            with pools[url].connection() as pg:
                _with_connection(conn, config, pg, url, projects=projects, name=name,
                                 report=report)
        except psycopg.Error as exc:
            raise server.translate(exc, url) from None
        except TimeoutError as exc:
            raise TeamError(f"Cannot reach the team server {server.mask(url)}: "
                            f"{server.mask(str(exc), url)}. Local "
                            f"memory keeps working; changes wait in the outbox.",
                            retry=True) from None
        return
    with server.connect_server(url) as pg:
        _with_connection(conn, config, pg, url, projects=projects, name=name, report=report)


def _with_connection(conn: sqlite3.Connection, config: Config, pg: Any, url: str, *,  # noqa: PLR0913 - one sync's state, private
                     projects: list[str], name: str, report: SyncReport) -> None:
    server.check_version(pg, url)
    role = server.session_role(pg)
    for project in projects:
        if not server.membership(pg, project):
            # The server's row security shows a non-member nothing: without this a
            # revoked member's sync would report success, having pulled nothing.
            raise TeamError(f"{role} is not a member of {project} on {server.mask(url)}: "
                            f"nothing was pushed or pulled. Ask an admin (`memspool team "
                            f"grant {role} --project {project}`), or stop sharing it here "
                            f"(`memspool team leave --project {project}`).")
        report.push.add(push_project(conn, pg, project, name, role, batch=config.team_batch))
        # Pulled changes are applied locally, where a bigger batch means fewer
        # commits (each one flushed to disk).
        report.pull.add(pull_project(conn, pg, project, name, batch=2 * config.team_batch))
        report.projects.append(project)


def due(conn: sqlite3.Connection, config: Config, *, now: float) -> bool:
    """Is a background sync due: a shared project, and no sync (or failed try) lately?"""
    row = conn.execute(
        "SELECT count(*), min(coalesce(next_try, coalesce(last_sync, 0) + ?)) FROM team_servers"
        " WHERE url IN (SELECT server FROM team_projects)", (config.team_sync_secs,)).fetchone()
    return bool(row[0]) and now >= float(row[1])
