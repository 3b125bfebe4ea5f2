"""What ``memspool team ...`` does: init, join, leave, members, grant, revoke, status.

Each takes the local store's connection and the configuration; the service
calls them and the CLI prints what they return: a frozen dataclass whose
``as_dict()`` is the command's ``--json`` output.
"""

from __future__ import annotations

import dataclasses
import time
from sqlite3 import Connection
from typing import Any

from memspool.base.answers import ok_fields
from memspool.base.errors import TeamError
from memspool.base.project import readable_name
from memspool.config import Config
from memspool.team import server
from memspool.team.joining import join, leave
from memspool.team.local import check_joined, joined, machine, pending

__all__ = [
    "Granted", "Initialised", "Joined", "Left", "Member", "Revoked", "grant", "init",
    "join_project", "leave_project", "members", "revoke", "status",
]


@dataclasses.dataclass(frozen=True)
class Initialised:
    """The team schema on a server: its version before and after, and who made it."""

    server: str
    role: str
    schema_before: int
    schema: int

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Joined:
    """A project shared from here; ``created``: this role made it on the server."""

    project: str
    server: str
    role: str
    created: bool
    memories_to_push: int

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Left:
    project: str
    revoked_on_server: bool
    unsent_changes_dropped: int

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Member:
    """A role in a shared project (``added_at``: ISO 8601)."""

    role: str
    admin: bool
    added_by: str
    added_at: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Granted:
    project: str
    role: str
    admin: bool

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


@dataclasses.dataclass(frozen=True)
class Revoked:
    """``revoked``: the role was a member and is no longer."""

    project: str
    role: str
    revoked: bool

    def as_dict(self) -> dict[str, Any]:
        return ok_fields(self)


def init(url: str) -> Initialised:
    """Create or migrate the schema on the server (as the team's administrator)."""
    with server.connect_server(url) as pg:
        before, after = server.init_schema(pg)
        role = server.session_role(pg)
    return Initialised(server=server.mask(url), role=role, schema_before=before, schema=after)


def join_project(conn: Connection, url: str, project: str, name: str | None) -> Joined:
    """Share ``project`` through the server at ``url``: create it there (this role its
    first admin) or check this role is a member, then opt it in here."""
    with server.connect_server(url) as pg:
        server.check_version(pg, url)
        role = server.session_role(pg)
        created = False
        if not server.membership(pg, project):
            created = server.create_project(pg, project, name or readable_name(project))
            if not created:
                raise TeamError(
                    f"The project {project} exists on the team server and the role {role} is "
                    f"not a member of it. Ask one of its admins to run `memspool team grant "
                    f"{role} --project {project}`, then join again.")
    waiting = join(conn, project, url, role)
    machine(conn)
    return Joined(project=project, server=server.mask(url), role=role, created=created,
                  memories_to_push=waiting)


def leave_project(conn: Connection, project: str, *, revoke_self: bool) -> Left:
    """Stop sharing ``project`` from here (and, with ``revoke_self``, leave it on the
    server too). Memories already here stay."""
    found = check_joined(conn, project)
    revoked = False
    if revoke_self:
        with server.connect_server(found.server) as pg:
            revoked = server.revoke(pg, project, server.session_role(pg))
    dropped = pending(conn, project)
    leave(conn, project)
    return Left(project=project, revoked_on_server=revoked, unsent_changes_dropped=dropped)


def _server_of(conn: Connection, project: str, url: str | None) -> str:
    if url:
        return url
    return check_joined(conn, project).server


def members(conn: Connection, project: str, url: str | None = None) -> list[Member]:
    url = _server_of(conn, project, url)
    with server.connect_server(url) as pg:
        found = server.members(pg, project)
    if not found:
        raise TeamError(f"The team server shows no members of {project} to this role: it is "
                        f"not a member, or there is no such project.")
    return [Member(**row) for row in found]


def grant(conn: Connection, project: str, role: str, *, admin: bool,
          url: str | None = None) -> Granted:
    url = _server_of(conn, project, url)
    with server.connect_server(url) as pg:
        server.grant(pg, project, role, admin=admin)
    return Granted(project=project, role=role, admin=admin)


def revoke(conn: Connection, project: str, role: str, url: str | None = None) -> Revoked:
    url = _server_of(conn, project, url)
    with server.connect_server(url) as pg:
        gone = server.revoke(pg, project, role)
    return Revoked(project=project, role=role, revoked=gone)


def status(conn: Connection) -> dict[str, Any] | None:
    """The team as ``memspool status`` shows it (``None`` when nothing is shared)."""
    shared = joined(conn)
    if not shared:
        return None
    servers: dict[str, dict[str, Any]] = {}
    for url, role, last_sync, last_error, failures, next_try in conn.execute(
            "SELECT url, role, last_sync, last_error, failures, next_try FROM team_servers"):
        servers[url] = {"server": server.mask(url), "role": role, "last_sync": last_sync,
                        "last_error": last_error, "failures": failures, "next_try": next_try,
                        "projects": []}
    oldest = conn.execute("SELECT min(at) FROM team_outbox").fetchone()[0]
    for one in shared:
        servers[one.server]["projects"].append(
            {"project": one.project, "pending": pending(conn, one.project),
             "pulled_seq": one.pulled_seq})
    return {"machine": machine(conn), "servers": list(servers.values()),
            "pending": pending(conn),
            "oldest_pending_secs": None if oldest is None else round(time.time() - oldest, 1)}


def configured(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM team_projects LIMIT 1").fetchone() is not None


def check(config: Config, conn: Connection) -> list[dict[str, Any]]:
    """What ``memspool doctor`` checks: connection, schema version, membership, lag; each
    problem with its fix."""
    found: list[dict[str, Any]] = []
    shared = joined(conn)
    by_server: dict[str, list[str]] = {}
    for one in shared:
        by_server.setdefault(one.server, []).append(one.project)
    for url, projects in by_server.items():
        where = server.mask(url)
        try:
            with server.connect_server(url) as pg:
                version = server.schema_version(pg)
                found.append(_check("team server", f"{where} answers as "
                                    f"{server.session_role(pg)}", None))
                try:
                    server.check_version(pg, url)
                    found.append(_check("team schema", f"version {version}", None))
                except TeamError as exc:
                    found.append(_check("team schema", str(exc), "memspool team init URL "
                                        "(as the team's administrator)"))
                    continue
                for project in projects:
                    ok = server.membership(pg, project)
                    found.append(_check(
                        f"team membership {project}", "member" if ok else "not a member",
                        None if ok else f"ask an admin: memspool team grant ROLE --project "
                                        f"{project}; or memspool team leave --project {project}"))
        except TeamError as exc:
            found.append(_check("team server", str(exc),
                                "check that the server runs and the URL, user and password "
                                "(or ~/.pgpass) are right, then memspool team sync"))
    row = conn.execute("SELECT min(at), count(*) FROM team_outbox").fetchone()
    last = conn.execute("SELECT max(last_sync) FROM team_servers").fetchone()[0]
    lag = None if row[0] is None else time.time() - float(row[0])
    late = lag is not None and lag > 4 * config.team_sync_secs
    found.append(_check(
        "team lag", f"{row[1]} change(s) waiting"
        + ("" if lag is None else f", the oldest {lag:.0f} s old")
        + (", never synced" if last is None else f", last sync {time.time() - last:.0f} s ago"),
        "memspool team sync (and keep the drainer or memspool-maintain.timer running)"
        if late or (last is None and row[1]) else None))
    return found


def _check(name: str, detail: str, fix: str | None) -> dict[str, Any]:
    return {"check": name, "ok": fix is None, "detail": detail, "fix": fix}
