"""Talking to the team's PostgreSQL server: connections, migrations, membership.

psycopg 3 is the ``memspool[team]`` extra: it is imported here, on first use,
so nothing else in memspool needs it. Every failure becomes a
:class:`~memspool.base.errors.TeamError` whose message says what to do; ``retry``
is true where waiting may be enough (the server is down or busy).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from memspool.base.errors import TeamError
from memspool.base.extras import install_hint
from memspool.team.schema import GROUP_ROLE, MIGRATE_LOCK, MIGRATIONS, SCHEMA, SCHEMA_VERSION

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = [
    "check_version", "connect_server", "create_project", "grant", "init_schema", "load",
    "mask", "members", "membership", "pool", "revoke", "schema_version", "session_role",
    "translate",
]

#: Seconds a connection attempt may take before the server counts as down.
CONNECT_TIMEOUT_SECS: Final = 5
#: No single statement of a sync may run longer (a locked row, a hung server).
STATEMENT_TIMEOUT_MS: Final = 60_000
#: A role name as PostgreSQL writes one unquoted (the only kind memspool grants to).
ROLE_SHAPE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_$.-]{0,62}")


def load() -> Any:
    """The psycopg module, or a TeamError that says how to install it."""
    try:
        import psycopg
    except ImportError:
        raise TeamError(f"Team memory needs psycopg, which is not installed here. Install "
                        f"the extra: {install_hint('team')}.") from None
    return psycopg


#: A URL's password (``://user:PASSWORD@``) and a keyword's (``password = X``, any case,
#: quoted or not, in a query string too).
_USERINFO: Final = re.compile(r"(://[^:/@\s]*:)([^@\s]*)@")
_KEYWORD: Final = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)


def mask(text: str, url: str | None = None) -> str:
    """``text`` (a URL, or a message that may quote one) with every password replaced by
    ``***``, for output and logs; the passwords ``url`` holds are replaced wherever
    they appear in ``text`` (a driver's error quotes a URL it could not parse)."""
    found = [m.group(2) for m in _USERINFO.finditer(url or "")]
    found += [m.group(2).strip("'") for m in _KEYWORD.finditer(url or "")]
    masked = _KEYWORD.sub(r"\1***", _USERINFO.sub(r"\1***@", text))
    for secret in sorted({f for f in found if f and f != "***"}, key=len, reverse=True):
        masked = masked.replace(secret, "***")
    return masked


def translate(exc: BaseException, url: str) -> TeamError:
    """A psycopg error as a sentence that says what to do."""
    psycopg = load()
    where = mask(url)
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return TeamError(f"The team server {where} refused: {_first_line(exc, url)}. Ask the "
                         f"team's administrator for the grant (docs/team.md#roles-and-grants).")
    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName):
        return TeamError(f"The team server {where} has no memspool schema yet. Run "
                         f"`memspool team init URL` there as the team's administrator.")
    if isinstance(exc, psycopg.OperationalError):
        return TeamError(f"Cannot reach the team server {where}: {_first_line(exc, url)}. Check "
                         f"that it runs and the URL, user and password are right; local "
                         f"memory keeps working and changes wait in the outbox.", retry=True)
    if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected
                  | psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable):
        return TeamError(f"The team server {where} was busy ({_first_line(exc, url)}); the next "
                         f"sync tries again.", retry=True)
    return TeamError(f"The team server {where} failed: {_first_line(exc, url)}.", retry=True)


def _first_line(exc: BaseException, url: str = "") -> str:
    text = str(exc).strip().splitlines()
    return mask(text[0], url) if text else type(exc).__name__


def _options() -> dict[str, Any]:
    return {"connect_timeout": CONNECT_TIMEOUT_SECS, "application_name": "memspool",
            "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"}


@contextlib.contextmanager
def connect_server(url: str) -> Iterator[psycopg.Connection[Any]]:
    """One connection to the team server (closed after); errors become TeamError."""
    psycopg = load()
    try:
        conn = psycopg.connect(url, autocommit=True, **_options())
    except psycopg.Error as exc:
        raise translate(exc, url) from None
    try:
        yield conn
    except psycopg.Error as exc:
        raise translate(exc, url) from None
    finally:
        conn.close()


def pool(url: str) -> psycopg_pool.ConnectionPool[Any]:
    """A small pool for a long-lived process (the drainer's background sync)."""
    load()
    try:
        from psycopg_pool import ConnectionPool
    except ImportError:
        raise TeamError("Team memory needs psycopg_pool, which is not installed here. "
                        "Install the extra: pip install 'memspool[team]'.") from None
    return ConnectionPool(url, min_size=0, max_size=2, open=True, timeout=CONNECT_TIMEOUT_SECS,
                          kwargs={"autocommit": True, **_options()})


def session_role(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT session_user::text").fetchone()
    return str(row[0]) if row else ""


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The server's schema version, or ``None`` when it has no memspool schema."""
    found = conn.execute("SELECT to_regclass('memspool.schema_version') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return None
    row = conn.execute("SELECT version FROM memspool.schema_version").fetchone()
    return int(row[0]) if row else 0


def check_version(conn: psycopg.Connection[Any], url: str) -> None:
    version = schema_version(conn)
    if version is None:
        raise TeamError(f"The team server {mask(url)} has no memspool schema yet. Run "
                        f"`memspool team init URL` there as the team's administrator.")
    if version < SCHEMA_VERSION:
        raise TeamError(f"The team server {mask(url)} is at schema version {version}; this "
                        f"memspool needs {SCHEMA_VERSION}. Run `memspool team init URL` as "
                        f"the team's administrator to migrate it.")
    if version > SCHEMA_VERSION:
        raise TeamError(f"The team server {mask(url)} is at schema version {version}, newer "
                        f"than this memspool knows ({SCHEMA_VERSION}). Upgrade memspool.")


def init_schema(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """Create or migrate the schema; returns (version before, version after)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        exists = conn.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (GROUP_ROLE,)).fetchone()
        if not exists:
            conn.execute(f"CREATE ROLE {GROUP_ROLE} NOLOGIN")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        before = schema_version(conn) or 0
        for version in range(before, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[version].encode())
            conn.execute("UPDATE memspool.schema_version SET version = %s", (version + 1,))
    return before, SCHEMA_VERSION


def membership(conn: psycopg.Connection[Any], project: str) -> bool:
    row = conn.execute("SELECT %s = ANY (memspool.my_projects())", (project,)).fetchone()
    return bool(row and row[0])


def create_project(conn: psycopg.Connection[Any], project: str, name: str) -> bool:
    row = conn.execute("SELECT memspool.create_project(%s, %s)", (project, name)).fetchone()
    return bool(row and row[0])


def members(conn: psycopg.Connection[Any], project: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT role::text, admin, added_by::text, added_at FROM memspool.members"
        " WHERE project_id = %s ORDER BY role", (project,)).fetchall()
    return [{"role": r[0], "admin": r[1], "added_by": r[2], "added_at": r[3].isoformat()}
            for r in rows]


def _role(role: str) -> str:
    if not ROLE_SHAPE.fullmatch(role):
        raise TeamError(f"{role!r} is not a PostgreSQL role name memspool grants to (letters, "
                        f"digits, _ . - $, at most 63).")
    return role


def grant(conn: psycopg.Connection[Any], project: str, role: str, *, admin: bool) -> None:
    conn.execute("SELECT memspool.grant_member(%s, %s, %s)", (project, _role(role), admin))


def revoke(conn: psycopg.Connection[Any], project: str, role: str) -> bool:
    row = conn.execute("SELECT memspool.revoke_member(%s, %s)",
                       (project, _role(role))).fetchone()
    return bool(row and row[0])
