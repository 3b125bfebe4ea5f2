"""Forget means gone, and ids never come back.

A forgotten memory's text leaves every table, every index, the database file
and its WAL (and, asked for, the slices it came from); its tombstone keeps
keyed hashes only. No id is ever handed out twice, so a retried forget gets
"not found" instead of deleting the next memory.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path

import pytest
import zstandard
from conftest import capture_with, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memspool.base.errors import NotFound, SliceNotFound
from memspool.config import Config, load_config
from memspool.service import Service
from memspool.store import MIGRATIONS, connect, transaction
from memspool.store import memories as rows
from memspool.store.db import _statements
from memspool.store.slices import NewSlice, insert_slice, slice_text

#: Not a shape redaction knows: only forget can take it out.
SECRET = "Zq7VortexQuasar9Nebula"  # noqa: S105 - a made-up word, the needle


def _raw_files(home: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(home.iterdir())
            if path.name.startswith("memspool.db") and path.is_file()}


def _traces(home: Path, *needles: str) -> list[str]:
    """Where any of ``needles`` (in any case) sits in the store's raw files."""
    found = []
    for name, data in _raw_files(home).items():
        lowered = data.lower()
        found += [f"{needle!r} in {name}" for needle in needles
                  if needle.lower().encode() in lowered]
    return found


def _slice(conn: sqlite3.Connection, text: str, session: str = "s1") -> int:
    body = zstandard.ZstdCompressor().compress(text.encode())
    with transaction(conn):
        return insert_slice(conn, NewSlice(
            session_id=session, agent_id=None, project="shop", event="Stop",
            transcript_path="/t.jsonl", byte_start=0, byte_end=len(text), part=1,
            records_kept=1, records_dropped=0, records_unknown=0, records_replayed=0,
            text_chars=len(text), redactions=0, body=body, created_at=time.time()))


def _bulk(service: Service, count: int) -> None:
    lines = [(f'{{"project": "shop", "key": "pool-{n}", "summary": "Worker pool {n} drains",'
              f' "body": "Worker pool {n} drains under load after {n * 7} requests."}}\n')
             .encode() for n in range(count)]
    service.import_lines(lines)


def test_forget_leaves_no_trace_in_the_database_or_its_wal(home: Path) -> None:
    with Service(home) as service:
        _bulk(service, 300)
        conn = service.conn
        source = (f"[user] what is the staging login?\n[assistant] Decision: the staging box "
                  f"logs in with {SECRET} from now on, set in the vault.\n")
        slice_id = _slice(conn, source)
        with transaction(conn):
            report = capture_with(f"Decision: the staging box logs in with {SECRET} from now on, "
                             f"set in the vault.", config=service.config, conn=conn,
                             project="shop", session="s1", slice_id=slice_id)
        made = report.notes[0].id
        assert made is not None
        # A second text under the same key puts the first in its history.
        saved = service.save(f"Staging login {SECRET}",
                             f"The staging box logs in with {SECRET}; rotate it monthly.",
                             key=f"staging {SECRET}", project="shop")
        _bulk(service, 600)
        assert service.search(SECRET).results
        assert _traces(home, SECRET)  # the test can see it before

        first = service.forget(made, purge_source=True)
        second = service.forget(saved.id)
        assert first.wal_cleared and second.wal_cleared
        assert first.slices_scrubbed == 1
        assert "[FORGOTTEN]" in slice_text(conn, slice_id)
        assert "what is the staging login" in slice_text(conn, slice_id)
        assert not service.search(SECRET).results
        # The key's slug is gone too: the tombstone keeps keyed hashes only.
        keys = [r[0] for r in conn.execute("SELECT key FROM forgotten")]
        assert len(keys) >= 2 and all(len(k) == 32 and "staging" not in k for k in keys)
        assert conn.execute("SELECT count(*) FROM term_counts WHERE memories <= 0"
                            ).fetchone()[0] == 0
        # Read while the store is open, as a running server keeps it: closing the
        # last connection would checkpoint the WAL by itself.
        assert _traces(home, SECRET, "quasar9nebula", "staging-zq7vortex") == []


def test_a_forgotten_transcript_note_is_not_made_again_from_its_slice(home: Path) -> None:
    """The keyed tombstone still recognises the text it stands for."""
    text = "Pitfall: the nightly export job skips rows whose updated_at is null."
    with Service(home) as service:
        conn = service.conn
        first = _slice(conn, text)
        with transaction(conn):
            made = capture_with(text, config=service.config, conn=conn, project="shop",
                           session="s1", slice_id=first).notes[0]
        assert made.id is not None
        service.forget(made.id)
        again = _slice(conn, text, session="s2")
        with transaction(conn):
            report = capture_with(text, config=service.config, conn=conn, project="shop",
                             session="s2", slice_id=again)
        assert [n.action for n in report.notes] == ["skipped"]
        assert service.memories() == []


def test_an_export_made_before_a_forget_does_not_bring_the_memory_back(
        home: Path, tmp_path: Path) -> None:
    """Re-importing yesterday's export (trusted or not) leaves the forgotten memory out
    and says so; the others come back as they were; a capture by hand still may."""
    with Service(home) as service:
        kept = service.save("Deploy window", "Deploys run Tuesdays.", project="shop")
        gone = service.save("Staging password", "The staging DB password is in 1Password.",
                            project="shop")
        dump = tmp_path / "before.jsonl"
        dump.write_bytes(b"".join(service.export()))
        service.forget(gone.id)
        for trust in (False, True):
            report = service.import_lines(dump.read_bytes().splitlines(), trust=trust)
            assert (report.lines, report.unchanged, report.forgotten, report.created) == \
                (2, 1, 1, 0)
        assert [row.memory.id for row in service.memories()] == [kept.id]
    said = run_cli("memories", "import", str(dump), "--home", str(home)).stdout.decode()
    assert "1 left out (forgotten here on purpose" in said
    with Service(home) as service:
        back = service.save("Staging password", "The staging DB password is in 1Password.",
                            project="shop")
        assert back.action == "created" and len(service.memories()) == 2


def test_a_retried_forget_is_not_found_not_the_next_memory(home: Path) -> None:
    with Service(home) as service:
        low = service.save("Deploy window", "Deploys run Tuesdays.", project="shop")
        high = service.save("Cache size", "The cache holds 512 entries.", project="shop")
        service.forget(high.id)
        newer = service.save("Queue depth", "The queue holds 64 jobs.", project="other")
        assert newer.id > high.id
        with pytest.raises(NotFound, match="never reused"):
            service.forget(high.id)
        assert {row.memory.id for row in service.memories()} == {low.id, newer.id}


#: More than SQLite's 64-bit integers hold: a person typed an id too long.
TOO_LONG_ID = 10**22 + 7


def test_an_id_too_large_for_sqlite_names_no_memory_at_every_door(home: Path) -> None:
    with Service(home) as service:
        service.save("Deploy window", "Deploys run Tuesdays.", project="shop")
        for call in (service.get, service.forget, service.pin,
                     lambda i: service.edit(i, summary="s", body="b", type="takeaway")):
            with pytest.raises(NotFound, match=f"No memory with id {TOO_LONG_ID}"):
                call(TOO_LONG_ID)
        for call in (service.slice_page, service.slice_text):
            with pytest.raises(SliceNotFound):
                call(TOO_LONG_ID)
        assert len(service.memories()) == 1
    for command in (("memories", "show"), ("memories", "forget"), ("slices", "show")):
        shown = run_cli(*command, str(TOO_LONG_ID), "--home", str(home), check=False)
        assert shown.returncode == 1 and b"Traceback" not in shown.stderr
        assert f"with id {TOO_LONG_ID}".encode() in shown.stderr


def _insert(conn: sqlite3.Connection, n: int) -> int:
    return rows.insert(conn, project="p", key=f"k-{uuid.uuid4().hex}", type="takeaway",
                       summary=f"Fact {n}", body=f"Fact number {n} holds.", terms=[f"fact{n}"],
                       at=1.0)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("create"), st.just("forget-highest"),
                          st.integers(min_value=0, max_value=30)), max_size=40))
def test_no_id_is_ever_handed_out_twice(conn: sqlite3.Connection, steps: list[object]) -> None:
    """Any sequence of creates and forgets (of the newest memory above all, which
    SQLite would otherwise reuse): every new id is above every id ever issued."""
    # The highest id issued so far, over every example run on this store.
    highest = max((int(r[0]) for r in conn.execute(
        "SELECT value FROM state WHERE key = 'test_ids'")), default=0)
    for n, step in enumerate(steps):
        with transaction(conn):
            live = rows.memory_ids(conn)
            if step == "create" or not live:
                made = _insert(conn, n)
                assert made > highest, (made, highest)
                highest = made
                continue
            target = live[-1] if step == "forget-highest" else live[int(str(step)) % len(live)]
            memory = rows.get(conn, target)
            assert memory is not None
            rows.forget(conn, memory, at=2.0)
    with transaction(conn):
        conn.execute("INSERT OR REPLACE INTO state (key, value) VALUES ('test_ids', ?)",
                     (str(highest),))


def _old_store(config: Config) -> None:
    """A store at schema 7 (before ids were never reused), with three memories, the
    newest deleted, as an older memspool left it."""
    config.home.mkdir(mode=0o700)
    old = sqlite3.connect(config.db_path, isolation_level=None)
    from memspool.store.db import add_functions

    add_functions(old)
    for version in range(7):
        script = MIGRATIONS[version]
        assert isinstance(script, str)
        for statement in _statements(script):
            old.execute(statement)
    old.execute("PRAGMA user_version = 7")
    for n in (1, 2, 3):
        old.execute("INSERT INTO memories (project, key, type, summary, body, created_at,"
                    " updated_at) VALUES ('api', ?, 'pitfall', ?, ?, 1.0, 1.0)",
                    (f"k{n}", f"Pool {n} drains", f"Worker pool {n} drains under load."))
        old.execute("INSERT INTO provenance (memory_id, action, session, source, text_hash, at)"
                    " VALUES (?, 'created', 's1', 'manual', ?, 1.0)", (n, f"h{n}"))
    old.execute("INSERT INTO forgotten (project, key, text_hash, at)"
                " VALUES ('api', 'leaked-key-slug', 'abc', 1.0)")
    old.close()


def test_the_upgrade_rebuilds_memories_keeping_rows_indexes_triggers_and_references(
        home: Path) -> None:
    config = load_config()
    _old_store(config)
    before = sqlite3.connect(config.db_path)
    schema = {(r[0], r[1]) for r in before.execute(
        "SELECT type, name FROM sqlite_master WHERE tbl_name = 'memories'")}
    before.close()

    conn = connect(config)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
        assert "AUTOINCREMENT" in sql
        # Every index and trigger of old is there (later migrations add their own).
        assert schema <= {(r[0], r[1]) for r in conn.execute(
            "SELECT type, name FROM sqlite_master WHERE tbl_name = 'memories'")}
        assert rows.memory_ids(conn) == [1, 2, 3]
        # The search index still answers for the old rows, and its triggers run.
        assert [r[0] for r in conn.execute(
            "SELECT rowid FROM memory_search WHERE memory_search MATCH 'pool' ORDER BY rowid"
        )] == [1, 2, 3]
        memory = rows.get(conn, 3)
        assert memory is not None
        with transaction(conn):
            rows.forget(conn, memory, at=2.0)
            made = _insert(conn, 9)
        assert made == 4
        assert conn.execute("SELECT count(*) FROM memory_search WHERE rowid = 3"
                            ).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memory_search WHERE rowid = 4"
                            ).fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM vectors_pending WHERE memory_id = 4"
                            ).fetchone()[0] == 1
        # Foreign keys still point at memories: deleting one takes its provenance.
        assert conn.execute("SELECT count(*) FROM provenance WHERE memory_id = 3"
                            ).fetchone()[0] == 0
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        # The old tombstone (and the new one) hold keyed hashes only.
        tombs = conn.execute("SELECT key, text_hash FROM forgotten").fetchall()
        assert len(tombs) == 2
        assert all(len(key) == len(text) == 32 and "leaked" not in key and text != "abc"
                   for key, text in tombs)
    finally:
        conn.close()


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_retried_delete_over_http_is_a_404(home: Path, tmp_path: Path) -> None:
    from test_http import Server

    server = Server(home, tmp_path / "server.log", 8 * 1024 * 1024)
    try:
        status, _ = server.request("POST", "/memories", {
            "title": "Deploy window", "content": "Deploys run Tuesdays.", "project": "shop"})
        assert status == 200
        _, second = server.request("POST", "/memories", {
            "title": "Cache size", "content": "The cache holds 512 entries.", "project": "shop"})
        assert server.request("DELETE", f"/memories/{second['id']}")[0] == 200
        _, third = server.request("POST", "/memories", {
            "title": "Queue depth", "content": "The queue holds 64 jobs.", "project": "other"})
        assert third["id"] > second["id"]
        status, again = server.request("DELETE", f"/memories/{second['id']}")
        assert status == 404 and "never reused" in again["error"]
        assert server.request("GET", f"/memories/{third['id']}")[0] == 200
        status, huge = server.request("GET", f"/memories/{TOO_LONG_ID}")
        assert status == 404 and f"No memory with id {TOO_LONG_ID}" in huge["error"]
    finally:
        log = server.stop()
    assert "Traceback" not in log


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_repeated_mcp_forget_is_not_found(home: Path) -> None:
    from mcp.client.session import ClientSession
    from test_mcp import _data, _session

    async def body(session: ClientSession) -> None:
        kept = _data(await session.call_tool("save", {
            "title": "Deploy window", "content": "Deploys run Tuesdays.", "project": "shop"}))
        gone = _data(await session.call_tool("save", {
            "title": "Cache size", "content": "The cache holds 512 entries.", "project": "shop"}))
        _data(await session.call_tool("forget", {"id": gone["id"]}))
        newer = _data(await session.call_tool("save", {
            "title": "Queue depth", "content": "The queue holds 64 jobs.", "project": "x"}))
        assert newer["id"] > gone["id"]
        again = await session.call_tool("forget", {"id": gone["id"]})
        assert again.is_error and "No memory with id" in again.content[0].text
        ids = {m["id"] for m in _data(await session.call_tool(
            "get", {"ids": [kept["id"], newer["id"]]}))["memories"]}
        assert ids == {kept["id"], newer["id"]}

    _session(home, body)


def test_every_connection_overwrites_what_it_deletes(conn: sqlite3.Connection) -> None:
    """Some SQLite builds turn secure_delete on by default; memspool does not rely on it."""
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
