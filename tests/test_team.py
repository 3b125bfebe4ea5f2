"""Team memory against a real PostgreSQL server: two (or five) homes, one server.

The server is started from the installed binaries (tests/postgres.py); these
tests skip, saying why, only where there are none.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_SECS, run_cli
from postgres import PostgresServer, find_binaries, running

BINARIES = find_binaries()
pytestmark = [pytest.mark.skipif(
    BINARIES is None, reason="no PostgreSQL server binaries (initdb and postgres) under "
    "/usr/lib/postgresql/*/bin: install the postgresql package to run the team memory tests"),
    # Slow: a PostgreSQL server per test and several machines syncing through it.
    pytest.mark.slow]

PROJECT = "github.com/acme/api"
PASSWORD = "pw-for-tests"  # noqa: S105 - throwaway roles of a throwaway server
PEOPLE = ("alice", "bob", "carol", "dave", "erin")
_numbers = itertools.count()

FACT = "Pitfall: the refund webhook double-inserts rows when Stripe retries the event."
PORT_OLD = "Decision: the billing service listens on port 8080 behind the proxy."
PORT_NEW = "Decision: the billing service listens on port 9090 behind the proxy."


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    assert BINARIES is not None
    with running(BINARIES) as server:
        yield server


class Team:
    """One database with its owner and people's roles, each a PostgreSQL role of its own."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.prefix = f"t{os.getpid()}x{next(_numbers)}"
        self.database = self.prefix
        su = server.superuser()
        try:
            su.execute(f"CREATE ROLE {self.role('owner')} LOGIN CREATEROLE "
                       f"PASSWORD '{PASSWORD}'")
            su.execute(f"CREATE DATABASE {self.database} OWNER {self.role('owner')}")
            for who in (*PEOPLE, "eve", "mallory"):
                su.execute(f"CREATE ROLE {self.role(who)} LOGIN PASSWORD '{PASSWORD}'")
        finally:
            su.close()

    def role(self, who: str) -> str:
        return f"{self.prefix}_{who}"

    def url(self, who: str) -> str:
        return self.server.url(self.role(who), PASSWORD, self.database)

    def sql(self, who: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url(who), autocommit=True, connect_timeout=5) as conn:
            return list(conn.execute(query, args or None))

    def owner_sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        return self.sql("owner", query, *args)


@pytest.fixture
def team(pg_server: PostgresServer, tmp_path: Path) -> Team:
    made = Team(pg_server)
    run_cli("team", "init", made.url("owner"), env={"MEMSPOOL_HOME": str(tmp_path / "admin")})
    su = pg_server.superuser()
    try:
        people = ", ".join(made.role(who) for who in (*PEOPLE, "eve"))
        su.execute(f"GRANT memspool_member TO {people}")
    finally:
        su.close()
    return made


class Machine:
    """One person's machine: a memspool home of its own."""

    def __init__(self, home: Path, team: Team, who: str) -> None:
        self.home, self.team, self.who = home, team, who

    def cli(self, *args: str, input: bytes | None = None, check: bool = True,
            timeout: float = WAIT_SECS) -> subprocess.CompletedProcess[bytes]:
        return run_cli(*args, input=input, check=check, timeout=timeout,
                       env={"MEMSPOOL_HOME": str(self.home)})

    def capture(self, text: str, project: str = PROJECT) -> None:
        self.cli("capture", "--project", project, input=text.encode())

    def join(self, project: str = PROJECT) -> dict[str, Any]:
        return dict(json.loads(self.cli("team", "join", self.team.url(self.who), "--project",
                                        project, "--json").stdout))

    def sync(self) -> dict[str, Any]:
        return dict(json.loads(self.cli("team", "sync", "--json").stdout))

    def memories(self, *flags: str) -> list[dict[str, Any]]:
        return list(json.loads(self.cli("memories", "list", "--project", PROJECT, "--json",
                                        *flags).stdout))

    def context(self) -> str:
        return self.cli("context", "--project", PROJECT).stdout.decode()

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.home / "memspool.db", timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def texts(self) -> dict[str, str]:
        """Live shared memories by global id."""
        with contextlib_closing(self.db()) as conn:
            return {r[0]: r[1] for r in conn.execute(
                "SELECT t.gid, m.body FROM team_memories t JOIN memories m ON m.id = t.memory_id"
                " WHERE m.layer IN ('buffer', 'canonical')")}


class contextlib_closing:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


@pytest.fixture
def machines(team: Team, tmp_path: Path) -> dict[str, Machine]:
    return {who: Machine(tmp_path / f"home-{who}", team, who) for who in PEOPLE}


def _grant_all(machines: dict[str, Machine], *people: str) -> None:
    for who in people:
        machines["alice"].cli("team", "grant", machines[who].team.role(who), "--project",
                              PROJECT)


def _both_joined(machines: dict[str, Machine]) -> tuple[Machine, Machine]:
    """Alice and Bob, both sharing the project (Alice joined first, then granted Bob)."""
    a, b = machines["alice"], machines["bob"]
    a.join()
    _grant_all(machines, "bob")
    b.join()
    return a, b


def _server_rows(team: Team) -> list[tuple[Any, ...]]:
    return team.owner_sql("SELECT gid::text, key, summary, body, status FROM memspool.memories"
                          " ORDER BY gid")


def test_a_fact_learned_on_a_is_in_bs_context_block_after_a_sync(
        machines: dict[str, Machine], tmp_path: Path) -> None:
    a, b = machines["alice"], machines["bob"]
    a.capture(FACT)
    joined = a.join()
    assert joined["created"] and joined["memories_to_push"] == 1
    _grant_all(machines, "bob")
    b.join()
    assert "double-inserts rows" in b.context()
    # The SessionStart hook in B's clone prints it too: the clone names the project alike.
    clone = tmp_path / "bob-clone" / "api"
    clone.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    subprocess.run(["git", "remote", "add", "origin", "https://github.com/Acme/API.git"],
                   cwd=clone, check=True)
    from memspool.hooks import CONTEXT_SCRIPT

    proc = subprocess.run([sys.executable, "-I", "-S", CONTEXT_SCRIPT, "--home", str(b.home)],
                          input=json.dumps({"session_id": "s", "cwd": str(clone)}).encode(),
                          capture_output=True, timeout=30, check=True)
    assert "double-inserts rows" in proc.stdout.decode()
    shared = b.memories("--team")
    assert [m["origin"]["user"] for m in shared] == [a.team.role("alice")]
    assert b.memories("--mine") == []
    assert [m["summary"] for m in a.memories("--mine")] == [FACT]
    status = json.loads(b.cli("status", "--json").stdout)["team"]
    assert status["pending"] == 0 and status["servers"][0]["last_sync"] is not None


def test_the_same_fact_from_a_and_b_corroborates(machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    a.capture(FACT)
    b.capture(FACT)  # learned independently, before either synced
    a.sync()
    report = b.sync()
    assert report["push"]["corroborated"] == 1
    a.sync()
    rows = _server_rows(a.team)
    assert len(rows) == 1  # one shared memory, not two
    for machine in (a, b):
        found = machine.memories()
        assert len(found) == 1 and found[0]["sessions"] == 2  # two people's sessions
    saves = a.team.owner_sql("SELECT role::text FROM memspool.provenance ORDER BY role")
    assert [r[0] for r in saves] == [a.team.role("alice"), a.team.role("bob")]


def test_a_changed_value_on_b_supersedes_as(machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    _save(a, PORT_OLD, PORT_OLD)
    a.sync()
    b.sync()
    time.sleep(0.05)
    _save(b, PORT_NEW, PORT_NEW)
    b.sync()
    a.sync()
    for machine in (a, b):
        live = [m["body"] for m in machine.memories()]
        assert live == [PORT_NEW]
        context = machine.context()
        assert "9090" in context and "8080" not in context
    shown = json.loads(a.cli("memories", "show", str(a.memories()[0]["id"]), "--json").stdout)
    assert any("8080" in h["body"] for h in shown["history"])  # the old value is kept
    history = a.team.owner_sql("SELECT body, by_role::text FROM memspool.history")
    assert (PORT_OLD, a.team.role("bob")) in history  # who changed it, on the server too


def _save(machine: Machine, title: str, content: str) -> None:
    """An explicit memory under a topic key (MCP save / POST /memories), through the service."""
    _through_service(machine, "s.save(sys.argv[1], sys.argv[2], type='decision', "
                     "key='billing-port', project=sys.argv[3])", title, content, PROJECT)


def _through_service(machine: Machine, call: str, *args: str) -> None:
    """``call`` on the machine's Service (``s``) in a process of its own, ``args`` as
    ``sys.argv[1:]``."""
    code = f"import sys\nfrom memspool.service import Service\nwith Service() as s:\n    {call}\n"
    subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                   timeout=WAIT_SECS, env={**os.environ, "MEMSPOOL_HOME": str(machine.home)})


def test_concurrent_edits_are_resolved_newest_first_and_the_loser_is_kept(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    _save(a, "Billing port", PORT_OLD)
    a.sync()
    b.sync()
    _save(a, "Billing port", "Decision: the billing service listens on port 7070.")
    time.sleep(0.05)
    _save(b, "Billing port", PORT_NEW)  # both edited revision 1
    a.sync()
    report = b.sync()
    assert report["push"]["conflicts"] == 1
    a.sync()
    assert [m["body"] for m in a.memories()] == [PORT_NEW] == [m["body"] for m in b.memories()]
    kept = [r[0] for r in a.team.owner_sql("SELECT body FROM memspool.history")]
    assert any("7070" in body for body in kept)  # never silently dropped


def test_forget_on_a_removes_it_from_b_and_leaves_no_text_on_the_server(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    a.capture(FACT)
    a.sync()
    b.sync()
    assert len(b.memories()) == 1
    a.cli("memories", "forget", str(a.memories()[0]["id"]))
    a.sync()
    b.sync()
    assert b.memories() == [] and "double-inserts" not in b.context()
    rows = _server_rows(a.team)
    assert [r[4] for r in rows] == ["forgotten"]
    dump = json.dumps(a.team.owner_sql(
        "SELECT m.*, h.* FROM memspool.memories m LEFT JOIN memspool.history h USING (gid)"),
        default=str)
    assert "double-inserts" not in dump and "refund" not in dump


def test_joining_with_many_memories_gives_each_its_own_id(machines: dict[str, Machine]) -> None:
    a = machines["alice"]
    for text in (FACT, PORT_OLD, "Pitfall: the cron job runs twice when the clock jumps back."):
        a.capture(text)
    assert a.join()["memories_to_push"] == 3
    a.sync()
    rows = _server_rows(a.team)
    assert len({r[0] for r in rows}) == 3 and {r[3] for r in rows} >= {FACT, PORT_OLD}


def test_a_forget_made_while_away_reaches_the_machine_that_joins_again(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    a.capture(FACT)
    _save(a, PORT_OLD, PORT_OLD)
    a.sync()
    b.sync()
    assert len(b.memories()) == 2
    b.cli("team", "leave", "--project", PROJECT)
    forgotten = next(m for m in a.memories() if m["body"] == FACT)
    a.cli("memories", "forget", str(forgotten["id"]))
    a.sync()
    # Bob, away, gives the port its new value and forgets nothing; then joins again.
    time.sleep(0.05)
    _save(b, PORT_NEW, PORT_NEW)
    assert b.join()["memories_to_push"] == 1  # only what changed while away
    b.sync()
    # The forget wins: the memory is gone from Bob's machine and stays a tombstone.
    assert [m["body"] for m in b.memories()] == [PORT_NEW]
    rows = _server_rows(a.team)
    assert sorted(r[4] for r in rows) == ["forgotten", "live"]
    assert "double-inserts" not in json.dumps(a.team.owner_sql(
        "SELECT * FROM memspool.memories"), default=str)
    # What changed while away went out under the memories' own ids.
    a.sync()
    assert [m["body"] for m in a.memories()] == [PORT_NEW]


def test_an_unchanged_copy_never_overwrites_a_newer_text_after_a_rejoin(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    _save(a, PORT_OLD, PORT_OLD)
    a.sync()
    b.sync()
    b.cli("team", "leave", "--project", PROJECT)
    time.sleep(0.05)
    _save(a, PORT_NEW, PORT_NEW)
    a.sync()
    time.sleep(0.05)
    _save(b, PORT_OLD, PORT_OLD)  # Bob's agent saves what it already had: nothing changes
    before = _saves(b)
    assert b.join()["memories_to_push"] == 0
    report = b.sync()
    assert report["push"]["conflicts"] == 0
    for machine in (a, b):
        assert [m["body"] for m in machine.memories()] == [PORT_NEW]
    assert _saves(b) == before  # no save of the team's arrives a second time
    b.cli("team", "leave", "--project", PROJECT)
    b.join()
    b.sync()
    assert _saves(b) == before


def test_a_late_copy_of_a_replaced_value_stays_replaced(machines: dict[str, Machine]) -> None:
    a, c = machines["alice"], machines["carol"]
    a.cli("capture", "--project", PROJECT, "--session", "a1", input=PORT_OLD.encode())
    c.cli("capture", "--project", PROJECT, "--session", "c1", input=PORT_OLD.encode())
    a.join()
    time.sleep(0.05)
    # A later session's new value supersedes the old, here and then on the server.
    a.cli("capture", "--project", PROJECT, "--session", "a2", input=PORT_NEW.encode())
    a.sync()
    assert sorted(r[4] for r in _server_rows(a.team)) == ["live", "superseded"]
    _grant_all(machines, "carol")  # Carol learned the old value before she joined
    c.join()
    c.sync()
    a.sync()
    for machine in (a, c):
        current = [m["body"] for m in machine.memories() if m["layer"] != "superseded"]
        assert current == [PORT_NEW] and "8080" not in machine.context()
    assert sorted(r[4] for r in _server_rows(a.team)) == ["live", "superseded"]


def test_a_late_joiner_gets_the_saves_of_a_memory_edited_since(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    c = machines["carol"]
    a.capture(FACT)
    b.capture(FACT)
    a.sync()
    b.sync()
    a.sync()
    memory = a.memories()[0]
    assert memory["sessions"] == 2
    # An edit after both saves puts the memory after them in the change log.
    _edit(a, memory["id"], FACT, FACT + " Dedupe on the event id.")
    a.sync()
    _grant_all(machines, "carol")
    c.join()
    c.sync()
    (copy,) = c.memories()
    assert copy["sessions"] == 2 and copy["body"].endswith("Dedupe on the event id.")


def _saves(machine: Machine) -> int:
    with contextlib_closing(machine.db()) as conn:
        return int(conn.execute("SELECT count(*) FROM provenance").fetchone()[0])


def _edit(machine: Machine, memory_id: int, summary: str, body: str) -> None:
    """A person's edit of a memory (the web page's form), through the service."""
    _through_service(machine, "s.edit(int(sys.argv[1]), summary=sys.argv[2], "
                     "body=sys.argv[3], type='pitfall')", str(memory_id), summary, body)


def test_a_memory_forgotten_here_while_away_is_not_pulled_back(
        machines: dict[str, Machine]) -> None:
    a, b = _both_joined(machines)
    a.capture(FACT)
    a.sync()
    b.sync()
    b.cli("team", "leave", "--project", PROJECT)
    b.cli("memories", "forget", str(b.memories()[0]["id"]))
    b.join()
    b.sync()
    assert b.memories() == []
    assert [r[4] for r in _server_rows(a.team)] == ["live"]  # the team's copy is theirs


def test_the_server_stopped_mid_sync_and_started_again(tmp_path: Path) -> None:
    assert BINARIES is not None
    with running(BINARIES) as server:
        team = Team(server)
        run_cli("team", "init", team.url("owner"), env={"MEMSPOOL_HOME": str(tmp_path / "x")})
        su = server.superuser()
        su.execute(f"GRANT memspool_member TO {team.role('alice')}, {team.role('bob')}")
        su.close()
        a = Machine(tmp_path / "a", team, "alice")
        b = Machine(tmp_path / "b", team, "bob")
        a.join()
        a.cli("team", "grant", team.role("bob"), "--project", PROJECT)
        b.join()
        _bulk(a, 400)
        env = {**os.environ, "MEMSPOOL_HOME": str(a.home), "MEMSPOOL_TEAM_BATCH": "20"}
        proc = subprocess.Popen([sys.executable, "-m", "memspool", "team", "sync"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _wait_pushed_some(team)
        server.stop(immediate=True)
        _, err = proc.communicate(timeout=WAIT_SECS)
        assert proc.returncode == 1 and b"team server" in err
        # Server down: local work goes on, the outbox keeps what is not pushed.
        a.capture("Pitfall: the cron job runs twice when the host clock jumps back an hour.")
        status = json.loads(a.cli("status", "--json").stdout)["team"]
        assert status["pending"] > 0 and status["servers"][0]["last_error"]
        failed = a.cli("team", "sync", check=False)
        assert failed.returncode == 1 and b"Cannot reach" in failed.stderr
        doctor = a.cli("doctor", "--json", check=False)
        assert "team server" in doctor.stdout.decode()
        server.start()
        a.sync()
        b.sync()
        assert len(team.owner_sql("SELECT gid FROM memspool.memories")) == 401
        assert len(b.texts()) == 401 == len(a.texts())


def _bulk(machine: Machine, count: int) -> None:
    lines = [json.dumps({"project": PROJECT, "type": "pitfall", "key": f"fact-{i}",
                         "summary": f"Fact number {i} about the billing pipeline.",
                         "body": f"Fact number {i} about the billing pipeline, stated once."})
             for i in range(count)]
    machine.cli("memories", "import", "-", input="\n".join(lines).encode(), timeout=120)


def _wait_pushed_some(team: Team) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while time.monotonic() < deadline:
        if team.owner_sql("SELECT count(*) FROM memspool.memories")[0][0] > 0:
            return
        time.sleep(0.01)
    pytest.fail("waited 30 s for the first pushed batch on the server")


@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_during_push_and_pull_loses_and_doubles_nothing(
        machines: dict[str, Machine], seed: int) -> None:
    a, b = _both_joined(machines)
    _bulk(a, 600)
    chance = random.Random(seed)
    for home in (a.home, b.home, a.home, b.home, a.home, b.home):
        env = {**os.environ, "MEMSPOOL_HOME": str(home), "MEMSPOOL_TEAM_BATCH": "25"}
        proc = subprocess.Popen([sys.executable, "-m", "memspool", "team", "sync"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(chance.uniform(0.3, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=WAIT_SECS)
    a.sync()
    b.sync()
    a.sync()
    server = a.team.owner_sql("SELECT key FROM memspool.memories")
    assert len(server) == 600 and len({r[0] for r in server}) == 600
    saves = a.team.owner_sql("SELECT count(*), count(DISTINCT ref) FROM memspool.provenance")
    assert saves[0][0] == saves[0][1] == 600
    assert a.texts().keys() == b.texts().keys() and len(b.texts()) == 600
    with contextlib_closing(b.db()) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 600
        assert conn.execute("SELECT count(*) FROM provenance").fetchone()[0] == 600
        assert conn.execute("SELECT count(*) FROM team_outbox").fetchone()[0] == 0


@pytest.mark.timeout(300)
def test_five_machines_syncing_concurrently(machines: dict[str, Machine]) -> None:
    first = machines["alice"]
    first.join()
    _grant_all(machines, *PEOPLE[1:])
    for who in PEOPLE[1:]:
        machines[who].join()
    for number, who in enumerate(PEOPLE):
        lines = [json.dumps({"project": PROJECT, "type": "pitfall", "key": f"pool-{who}-{i}",
                             "summary": f"Service {who}-{i} drops requests.",
                             "body": f"Service {who}-{i} drops requests when worker pool "
                                     f"{number * 100 + i} is exhausted."}) for i in range(12)]
        # One fact all five learned, each in a session of their own.
        lines.append(json.dumps({"project": PROJECT, "type": "pitfall", "key": "refunds",
                                 "summary": FACT, "body": FACT,
                                 "provenance": [{"session": f"session-{who}",
                                                 "source": "import", "action": "created",
                                                 "at": 1.0}]}))
        machines[who].cli("memories", "import", "-", input="\n".join(lines).encode())
    for _ in range(2):
        procs = [subprocess.Popen([sys.executable, "-m", "memspool", "team", "sync"],
                                  env={**os.environ, "MEMSPOOL_HOME": str(m.home)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for m in machines.values()]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
    for machine in machines.values():
        machine.sync()
    server = first.team.owner_sql(
        "SELECT count(*) FROM memspool.memories WHERE status = 'live'")[0][0]
    assert server == 5 * 12 + 1
    texts = [m.texts() for m in machines.values()]
    assert all(t == texts[0] for t in texts) and len(texts[0]) == 61
    shared = [m for m in first.memories() if m["summary"] == FACT]
    assert len(shared) == 1 and shared[0]["sessions"] == 5


def test_a_non_member_reads_nothing_even_with_plain_sql(
        machines: dict[str, Machine], team: Team) -> None:
    a = machines["alice"]
    a.capture(FACT)
    a.join()
    for table in ("projects", "members", "memories", "provenance", "history", "aliases"):
        assert team.sql("eve", f"SELECT * FROM memspool.{table}") == []  # noqa: S608
        assert len(team.sql("alice", f"SELECT * FROM memspool.{table}")) >= (  # noqa: S608
            0 if table in ("history", "aliases") else 1)
    import psycopg

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.sql("mallory", "SELECT * FROM memspool.memories")  # not even memspool_member
    with pytest.raises(psycopg.Error):
        team.sql("eve", "INSERT INTO memspool.memories (gid, project_id, key, type, summary,"
                 " body, status, created_at, changed_at, created_on, changed_on) VALUES"
                 " (gen_random_uuid(), %s, 'k', 'pitfall', 's', 'b', 'live', 0, 0, 'x', 'x')",
                 PROJECT)
    with pytest.raises(psycopg.Error):
        team.sql("eve", "SELECT memspool.grant_member(%s, %s, true)", PROJECT, team.role("eve"))
    eve = Machine(a.home.parent / "home-eve", team, "eve")
    refused = eve.cli("team", "join", team.url("eve"), "--project", PROJECT, check=False)
    assert refused.returncode == 1 and b"not a member" in refused.stderr
    a.cli("team", "grant", team.role("eve"), "--project", PROJECT)
    assert len(team.sql("eve", "SELECT * FROM memspool.memories")) == 1
    eve.join()
    a.cli("team", "revoke", team.role("eve"), "--project", PROJECT)
    assert team.sql("eve", "SELECT * FROM memspool.memories") == []
    # Revoked, a sync says so: it does not report success having pulled nothing.
    stopped = eve.cli("team", "sync", check=False)
    assert stopped.returncode == 1 and b"not a member" in stopped.stderr
    assert "not a member" in json.loads(eve.cli("status", "--json").stdout)["team"][
        "servers"][0]["last_error"]
    members = json.loads(a.cli("team", "members", "--project", PROJECT, "--json").stdout)
    assert [m["role"] for m in members] == [team.role("alice")] and members[0]["admin"]


SECRET = "AKIAIOSFODNN7EXAMPL3"  # noqa: S105 - a planted fake, redaction must catch it
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_planted_secret_never_reaches_the_server(machines: dict[str, Machine]) -> None:
    a = machines["alice"]
    a.join()
    a.capture(f"Pitfall: the deploy key {SECRET} must be rotated before the release.")
    _save(a, f"Token {GITHUB}", f"Decision: use the token {GITHUB} for the mirror.")
    line = json.dumps({"project": PROJECT, "type": "pitfall", "key": f"key-{GITHUB}",
                       "summary": f"Imported with {SECRET}", "body": f"password={SECRET}x"})
    a.cli("memories", "import", "-", input=line.encode())
    # Planted past every entry point, straight into the store: the push redacts again.
    with contextlib_closing(a.db()) as conn:
        from memspool.store.db import add_functions

        add_functions(conn)
        conn.execute("UPDATE memories SET body = body || ?, key = ? WHERE id = (SELECT min(id)"
                     " FROM memories)", (f" see {GITHUB} and {SECRET}", f"raw-{SECRET}"))
        conn.execute("UPDATE provenance SET session = ? WHERE id = (SELECT min(id) FROM"
                     " provenance)", (f"s-{SECRET}",))
        conn.commit()
    a.sync()
    import psycopg

    with psycopg.connect(a.team.url("owner"), autocommit=True) as conn:
        tables = ("memories", "provenance", "history", "aliases", "projects", "members")
        dump = json.dumps([list(conn.execute(f"SELECT * FROM memspool.{t}"))  # noqa: S608
                           for t in tables], default=str)
    assert len(a.team.owner_sql("SELECT gid FROM memspool.memories")) >= 3
    for secret in (SECRET, GITHUB, SECRET.lower(), GITHUB[4:]):
        assert secret not in dump
    assert "REDACTED" in dump


@pytest.mark.slow  # real processes and a PostgreSQL server
def test_rows_written_past_memspool_are_cleaned_or_skipped_never_a_stuck_sync(
        machines: dict[str, Machine]) -> None:
    """A row the server holds is text from outside: a NaN or far-future time, a secret,
    an escape sequence in a key, a text of nothing are cleaned or left out, the sync
    goes on, and nothing of them fails later."""
    a, b = machines["alice"], machines["bob"]
    a.join()
    for n in range(4):
        a.capture(f"Pitfall: worker pool {n} drains when the queue holds {n + 8} jobs.")
    a.sync()
    gids = [row[0] for row in a.team.owner_sql(
        "SELECT gid::text FROM memspool.memories ORDER BY seq")]
    assert len(gids) == 4
    changes = (("changed_at = 'NaN'", ()), ("changed_at = 1e300", ()),
               ("summary = %s, body = %s, key = %s",
                (f"Pitfall: the key {SECRET} \x1b[2Jleaks", f"Use {GITHUB} \x1b]0;t\x07here.",
                 "ctl-\x1b[2J")),
               ("summary = %s, body = %s", ("\x1b[2J", "\x1b[0m")))
    for gid, (assignment, values) in zip(gids, changes, strict=True):
        a.team.owner_sql(f"UPDATE memspool.memories SET {assignment},"  # noqa: S608 - fixed
                         f" revision = revision + 1 WHERE gid = %s::uuid RETURNING seq",
                         *values, gid)
    _grant_all(machines, "bob")
    b.join()
    b.sync()
    with contextlib_closing(b.db()) as conn:
        rows = conn.execute("SELECT id, key, summary, body, created_at, updated_at FROM memories"
                            " ORDER BY id").fetchall()
    dump = json.dumps([list(r) for r in rows])
    assert len(rows) == 3  # the row of nothing but escape sequences is left out
    assert SECRET not in dump and GITHUB not in dump and "\\u001b" not in dump
    assert all(0 < r["updated_at"] < time.time() + 60 for r in rows)
    for row in rows:
        assert b.cli("memories", "show", str(row["id"])).returncode == 0


def test_status_and_doctor_show_the_team(machines: dict[str, Machine]) -> None:
    a = machines["alice"]
    a.capture(FACT)
    text = a.cli("doctor", check=False).stdout.decode()
    assert "Team memory is off" in text
    a.join()
    a.capture("Pitfall: the cron job runs twice when the host clock jumps back an hour.")
    status = json.loads(a.cli("status", "--json").stdout)["team"]
    assert status["pending"] == 2 and "***" in status["servers"][0]["server"]
    assert PASSWORD not in json.dumps(status)
    plain = a.cli("status").stdout.decode()  # the plain output shows the team too
    assert f"project:         {PROJECT}: 2 waiting" in plain and PASSWORD not in plain
    found = json.loads(a.cli("doctor", "--json", check=False).stdout)
    team = [f for f in found["findings"] if f["check"] == "team"]
    assert any("membership" in f["message"] and f["level"] == "ok" for f in team)
    assert any("schema: version 1" in f["message"] for f in team)
    a.cli("team", "leave", "--project", PROJECT, "--revoke")
    assert json.loads(a.cli("status", "--json").stdout)["team"] is None
    assert "team memory:       off" in a.cli("status").stdout.decode()
    assert len(a.memories()) == 2  # leaving keeps what is here


def test_a_project_without_a_remote_cannot_be_shared(machines: dict[str, Machine],
                                                     tmp_path: Path) -> None:
    a = machines["alice"]
    folder = tmp_path / "local-only"
    folder.mkdir()
    refused = a.cli("team", "join", a.team.url("alice"), "--project", str(folder),
                    check=False)
    assert refused.returncode == 1 and b"no git remote" in refused.stderr


def test_the_drainer_and_maintain_sync_in_the_background(machines: dict[str, Machine]) -> None:
    a = machines["alice"]
    a.join()
    a.capture(FACT)
    # A drainer that finds the spool empty syncs when a sync is due.
    run_cli("drainer", "--once", env={"MEMSPOOL_HOME": str(a.home),
                                      "MEMSPOOL_TEAM_SYNC_SECS": "0"})
    assert [r[2] for r in _server_rows(a.team)] == [FACT]
    a.capture("Pitfall: the cron job runs twice when the host clock jumps back an hour.")
    report = json.loads(a.cli("maintain", "--json").stdout)
    assert report["team"]["push"]["pushed"] == 1 and report["team"]["pending"] == 0


def test_with_the_server_unreachable_everything_local_keeps_working(
        machines: dict[str, Machine]) -> None:
    a = machines["alice"]
    a.join()
    with contextlib_closing(a.db()) as conn:  # the server moved away
        conn.execute("UPDATE team_servers SET url = 'postgresql://x:y@127.0.0.1:1/none'")
        conn.execute("UPDATE team_projects SET server = 'postgresql://x:y@127.0.0.1:1/none'")
        conn.commit()
    a.capture(FACT)
    env = {"MEMSPOOL_HOME": str(a.home), "MEMSPOOL_TEAM_SYNC_SECS": "0"}
    run_cli("drainer", "--once", env=env)  # exits 0: the failure is logged, not fatal
    report = json.loads(a.cli("maintain", "--json").stdout)
    assert report["ok"] and report["team"]["ok"] is False
    assert "Cannot reach" in report["team"]["error"]
    assert "double-inserts" in a.context()
    found = json.loads(a.cli("search", "refund webhook", "--json").stdout)["results"]
    assert len(found) == 1
    status = json.loads(a.cli("status", "--json").stdout)["team"]
    assert status["pending"] == 2 and status["servers"][0]["failures"] >= 1
    assert "***" in status["servers"][0]["server"]


@pytest.mark.parametrize("url", [
    "postgresql://alice:Secr3t-pw@[bad/memspool",
    "host=db user=carol password = Secr3t-pw dbname=team",
    "host=db user=carol PASSWORD=Secr3t-pw dbname=team",
    "postgresql://carol@db/team?PassWord=Secr3t-pw&sslmode=disable",
    "host=db password='Secr3t-pw with blanks' dbname=team",
])
def test_a_password_is_masked_in_every_form_libpq_takes(url: str) -> None:
    """Output and logs show a server's URL masked, and so is a driver's error quoting
    the URL it could not parse."""
    from memspool.team.server import mask

    said = f'invalid connection option in URI: "{url}"'
    for text in (mask(url), mask(said, url)):
        assert "Secr3t" not in text and "***" in text, text
