"""``memspool team init|join|leave|sync|members|grant|revoke``: team memory on PostgreSQL."""

from __future__ import annotations

import argparse
import time
from typing import Any

from memspool.cli._common import Subparsers, add_home, add_json, command, open_service, print_json

TEAM_DOC = """Share memory of chosen projects with a team through PostgreSQL (14 or newer).

Only memories of the projects you join are shared, redacted again on the way
out; the spool, slices and transcripts never leave this machine. Local memory
never waits for the server: the drainer and `memspool maintain` sync in the
background, and `memspool team sync` does it now. See docs/team.md.

Example:
    memspool team init postgresql://admin@db.example.com/memspool
    memspool team join postgresql://alice@db.example.com/memspool --project api
    memspool team sync
"""

INIT_DOC = """Create or migrate the team schema on a PostgreSQL server (as its administrator).

Creates the schema `memspool`, its tables with row-level security, and the
group role `memspool_member`; running it again migrates an older schema and
changes nothing on a current one.

Example:
    memspool team init postgresql://admin@db.example.com/memspool
"""

JOIN_DOC = """Share a project through the team server, then sync it.

The project must have a git remote: its identity is the normalised remote
URL, so every teammate's clone names it alike. A project new to the server is
created with you as its admin; otherwise you must already be a member.

Example:
    memspool team join postgresql://alice@db.example.com/memspool --project api
"""

LEAVE_DOC = """Stop sharing a project from this machine; its memories stay here.

Unsent changes of it are dropped. --revoke also removes your membership on
the server (an admin can grant it again).

Example:
    memspool team leave --project api --revoke
"""

SYNC_DOC = """Push this machine's changes of shared projects, then pull the team's.

Running it twice, or after a kill, neither loses nor doubles anything.

Example:
    memspool team sync --json
"""

MEMBERS_DOC = """List the roles that are members of a shared project.

Example:
    memspool team members --project api
"""

GRANT_DOC = """Make a PostgreSQL role a member of a project (project admins only).

The role must exist and be granted memspool_member by the server's
administrator (docs/team.md#roles-and-grants).

Example:
    memspool team grant bob --project api
    memspool team grant carol --project api --admin
"""

REVOKE_DOC = """Remove a role from a project (project admins, or the role itself).

Example:
    memspool team revoke bob --project api
"""


def _print(result: dict[str, Any], as_json: bool, line: str) -> int:
    if as_json:
        print_json(result)
    else:
        print(line)
    return 0


def _init(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        result = service.team_init(args.url).as_dict()
    return _print(result, args.json,
                  f"team schema at version {result['schema']} on {result['server']} "
                  f"(was {result['schema_before']}); grant memspool_member to each person's "
                  f"role")


def _sync_line(sync: dict[str, Any]) -> str:
    push, pull = sync["push"], sync["pull"]
    return (f"pushed {push['pushed']} memories ({push['saves']} saves, {push['conflicts']} "
            f"conflicts resolved, {push['corroborated']} corroborated), pulled "
            f"{pull['changes']} changes ({pull['created']} new, {pull['updated']} updated, "
            f"{pull['forgotten']} forgotten); {sync['pending']} waiting")


def _join(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        joined, synced = service.team_join(args.url, args.project)
    sync = synced.as_dict()
    result = {**joined.as_dict(), "sync": sync}
    made = "created on the server, you are its admin; " if result["created"] else ""
    return _print(result, args.json, f"joined {result['project']} as {result['role']} "
                  f"({made}{result['memories_to_push']} memories shared); {_sync_line(sync)}")


def _leave(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        result = service.team_leave(args.project, revoke=args.revoke).as_dict()
    return _print(result, args.json,
                  f"left {result['project']} ({result['unsent_changes_dropped']} unsent "
                  f"changes dropped" + (", membership revoked" if result["revoked_on_server"]
                                        else "") + ")")


def _sync(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        result = service.team_sync(args.project).as_dict()
    return _print(result, args.json, _sync_line(result))


def _members(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        found = service.team_members(args.project, url=args.url)
    if args.json:
        print_json([member.as_dict() for member in found])
        return 0
    for member in found:
        when = time.strftime("%Y-%m-%d", time.strptime(member.added_at[:10], "%Y-%m-%d"))
        print(f"{member.role:<24} {'admin' if member.admin else 'member':<7} "
              f"added by {member.added_by} on {when}")
    return 0


def _grant(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        result = service.team_grant(args.role, args.project, admin=args.admin,
                                    url=args.url).as_dict()
    return _print(result, args.json, f"{args.role} is {'an admin' if args.admin else 'a member'}"
                  f" of {result['project']}")


def _revoke(args: argparse.Namespace) -> int:
    with open_service(args.home) as service:
        result = service.team_revoke(args.role, args.project, url=args.url).as_dict()
    return _print(result, args.json, f"{args.role} is no member of {result['project']}"
                  + ("" if result["revoked"] else " (was not one)"))


def _project(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", metavar="P",
                        help="the project: its name, identity or folder "
                             "(default: the current folder's repository)")


def _server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the team server (default: the one the project is "
                                      "shared through)")


def register(sub: Subparsers) -> None:
    team = command(sub, "team", TEAM_DOC, None)

    def _help(args: argparse.Namespace) -> int:
        team.print_help()
        return 0

    team.set_defaults(handler=_help)
    inner = team.add_subparsers(dest="team_command", metavar="SUBCOMMAND")
    init = command(inner, "init", INIT_DOC, _init)
    init.add_argument("url", help="postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
    join = command(inner, "join", JOIN_DOC, _join)
    join.add_argument("url", help="postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
    _project(join)
    leave = command(inner, "leave", LEAVE_DOC, _leave)
    _project(leave)
    leave.add_argument("--revoke", action="store_true",
                       help="also remove your membership on the server")
    sync = command(inner, "sync", SYNC_DOC, _sync)
    sync.add_argument("--project", metavar="P", help="only this shared project")
    members = command(inner, "members", MEMBERS_DOC, _members)
    _project(members)
    _server(members)
    grant = command(inner, "grant", GRANT_DOC, _grant)
    grant.add_argument("role", help="the PostgreSQL role to make a member")
    _project(grant)
    _server(grant)
    grant.add_argument("--admin", action="store_true",
                       help="may grant and revoke membership of the project too")
    revoke = command(inner, "revoke", REVOKE_DOC, _revoke)
    revoke.add_argument("role", help="the PostgreSQL role to remove")
    _project(revoke)
    _server(revoke)
    add_home(team)
    for parser in (init, join, leave, sync, members, grant, revoke):
        add_home(parser)
        add_json(parser)
