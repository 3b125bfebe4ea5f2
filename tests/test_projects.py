"""A project is its repository: clones share memory, same-named repositories never do."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import payload, run_cli

from memspool.base.project import identify, normalise_remote, project_id
from memspool.config import load_config
from memspool.hooks import CONTEXT_SCRIPT, RECALL_SCRIPT
from memspool.store import connect
from memspool.store.db import MIGRATIONS, _statements

FACT = (b"Pitfall: the refund webhook handler double-inserts rows when Stripe retries "
        b"the event, so refunds are counted twice.")
PROMPT = "why are refunds counted twice when the webhook retries"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30,
                   env={**os.environ, **GIT_ENV})


def repo(path: Path, remote: str | None = None) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    if remote is not None:
        git("remote", "add", "origin", remote, cwd=path)
    return path


@pytest.mark.parametrize("url", [
    "https://github.com/Acme/API.git", "git@github.com:acme/api.git", "git@GitHub.com:Acme/api",
    "ssh://git@github.com/acme/api", "ssh://git@github.com:22/acme/api/",
    "https://someone:s3cret@github.com:443/acme/api.git/", "git://github.com/acme/api",
    "git+ssh://git@github.com/acme/api.git",
])
def test_every_way_of_writing_one_remote_is_one_identity(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/api"


def test_remotes_of_different_repositories_differ() -> None:
    ids = {normalise_remote(u) for u in (
        "git@github.com:acme/api", "git@github.com:other/api", "git@gitlab.com:acme/api",
        "https://github.com/acme/api-v2", "/srv/git/api.git")}
    assert len(ids) == 5
    assert normalise_remote("/srv/git/api.git") == "file:/srv/git/api"
    assert normalise_remote("../api.git", "/home/me/w") == "file:/home/me/api"
    assert normalise_remote("") is None and normalise_remote("https://host") is None


def test_the_identity_never_keeps_a_password() -> None:
    assert "s3cret" not in str(normalise_remote("https://me:s3cret@example.com/a/b.git"))


def test_same_folder_name_two_repositories_two_identities(tmp_path: Path) -> None:
    a = repo(tmp_path / "clientA" / "api", "git@github.com:clienta/api.git")
    b = repo(tmp_path / "clientB" / "api")
    plain = tmp_path / "clientC" / "api"
    plain.mkdir(parents=True)
    ids = {project_id(a), project_id(b), project_id(plain), project_id(a / "sub")}
    assert len(ids) == 3
    assert project_id(a) == "github.com/clienta/api"
    assert project_id(b) == str(b.resolve())
    assert identify(b)[1] == identify(a)[1] == "api"


def test_clones_worktrees_and_subfolders_share_one_identity(tmp_path: Path) -> None:
    first = repo(tmp_path / "one" / "api", "https://github.com/Acme/API.git")
    second = repo(tmp_path / "two" / "api-copy", "git@github.com:acme/api")
    (first / "README").write_text("x")
    git("add", "README", cwd=first)
    git("commit", "-qm", "x", cwd=first)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), cwd=first)
    (first / "src" / "deep").mkdir(parents=True)
    ids = {project_id(p) for p in (first, second, linked, first / "src" / "deep")}
    assert ids == {"github.com/acme/api"}


def test_hostile_cwds_never_fail(tmp_path: Path) -> None:
    for cwd in (None, 3, "", "relative/api", "/a\x00b", "/does/not/exist/api"):
        assert isinstance(project_id(cwd), str)
    weird = repo(tmp_path / "weird")
    (weird / ".git" / "config").write_bytes(b"\xff\xfe[remote \"origin\"\n url = \x00\n")
    assert project_id(weird) == str(weird.resolve())


def test_a_fifo_planted_as_git_files_never_holds_the_project_up(tmp_path: Path) -> None:
    # A FIFO at .git/config (or at .git itself) in the folder or any folder above it
    # would block a plain open() until something writes to it: every hook and the
    # drainer would wait on it. Identified in a child process, so a hang fails the
    # test (at its timeout) instead of holding the suite.
    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    os.mkfifo(shared / ".git" / "config")
    work = shared / "sub" / "work"
    work.mkdir(parents=True)
    piped = tmp_path / "piped"
    piped.mkdir()
    os.mkfifo(piped / ".git")
    code = ("import sys; from memspool.base.project import identify; "
            "print(identify(sys.argv[1])[0]); print(identify(sys.argv[2])[0])")
    done = subprocess.run([sys.executable, "-c", code, str(work), str(piped)],
                          capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.split() == [str(shared.resolve()), str(piped.resolve())]


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_folder_name_with_controls_is_shown_without_them(tmp_path: Path, home: Path) -> None:
    """A folder may be named with ESC, CR, LF or a bidi override, and a hook payload
    names it: the project's identity and name hold U+FFFD there instead, so the
    context block's heading is one line and nothing reaches a terminal or an agent
    as a control."""
    hostile = tmp_path / "ev\x1b[2Jil\u202eproj\r\nFAKE"
    hostile.mkdir()
    identity, name = identify(hostile)[:2]
    assert name == "ev\ufffd[2Jil\ufffdproj\ufffd\ufffdFAKE" and identity.endswith(name)
    assert identify(tmp_path / "ev[2Jilproj") [0] != identity  # still its own project
    tricky = repo(tmp_path / "tricky", "https://example.com/acme/up\u202estream\x9b2J")
    assert identify(tricky)[:2] == ("example.com/acme/up\ufffdstream\ufffd2j",
                                    "up\ufffdstream\ufffd2j")  # a remote is cleaned too
    run_cli("capture", "--project", str(hostile), input=FACT)
    for block in (_hook(CONTEXT_SCRIPT, home, hostile),
                  run_cli("context", "--project", str(hostile)).stdout.decode()):
        assert "counted twice" in block
        assert not any(c in block for c in "\x1b\r\u202e"), repr(block)
        assert not any(line.startswith("FAKE") for line in block.splitlines()), block


def _hook(script: str, home: Path, cwd: Path, **extra: object) -> str:
    data = {"session_id": "s1", "cwd": str(cwd), **extra}
    proc = subprocess.run([sys.executable, "-I", "-S", script, "--home", str(home)],
                          input=json.dumps(data).encode(), capture_output=True, timeout=30,
                          check=False)
    assert proc.returncode == 0 and proc.stderr == b""
    if not proc.stdout:
        return ""
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_two_repositories_named_api_never_see_each_others_memory(
        tmp_path: Path, home: Path) -> None:
    a = repo(tmp_path / "clientA" / "api", "git@github.com:clienta/api.git")
    b = repo(tmp_path / "clientB" / "api", "git@github.com:clientb/api.git")
    c = repo(tmp_path / "clientC" / "api")  # no remote at all
    run_cli("capture", "--project", str(a), input=FACT)
    assert "counted twice" in _hook(CONTEXT_SCRIPT, home, a)
    assert "counted twice" in _hook(RECALL_SCRIPT, home, a, prompt=PROMPT)
    for other in (b, c):
        assert _hook(CONTEXT_SCRIPT, home, other) == ""
        assert _hook(RECALL_SCRIPT, home, other, prompt=PROMPT) == ""
        found = json.loads(run_cli("search", "refunds counted twice", "--project", str(other),
                                   "--json").stdout)
        assert found["results"] == []
        assert run_cli("context", "--project", str(other)).stdout == b""
    hit = json.loads(run_cli("search", "refunds counted twice", "--json").stdout)["results"]
    assert [(h["project"], h["project_name"]) for h in hit] == [("github.com/clienta/api", "api")]


def test_two_clones_of_one_repository_share_memory(tmp_path: Path, home: Path) -> None:
    first = repo(tmp_path / "laptop" / "api", "https://github.com/acme/api.git")
    second = repo(tmp_path / "desktop" / "acme-api", "git@github.com:Acme/API")
    run_cli("capture", "--project", str(first), input=FACT)
    assert "counted twice" in _hook(CONTEXT_SCRIPT, home, second)
    recalled = _hook(RECALL_SCRIPT, home, second, prompt=PROMPT)
    assert "counted twice" in recalled
    assert "of the project api;" in recalled  # its readable name, as the context block says


def test_the_current_repositorys_name_is_that_repository_before_it_has_memory(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The README's `capture --project api` in a clone of acme/api, first thing:
    # the memory is the repository's, not a project of its own named "api".
    monkeypatch.chdir(repo(tmp_path / "work" / "api", "git@github.com:acme/api.git"))
    run_cli("capture", "--project", "api", input=FACT)
    run_cli("capture", input=b"Pitfall: requests has no default timeout; pass timeout=.")
    listed = json.loads(run_cli("memories", "list", "--json").stdout)
    assert {m["project"] for m in listed} == {"github.com/acme/api"}
    assert len(listed) == 2
    block = json.loads(run_cli("context", "--json").stdout)  # the folder's, by its name
    assert block["project"] == "api" and "counted twice" in block["text"]
    said = run_cli("memories", "forget", str(listed[0]["id"]), "--purge-source").stdout.decode()
    assert said.startswith(f"forgot #{listed[0]['id']} (api: ")  # its readable name
    monkeypatch.chdir(tmp_path)  # elsewhere, an unknown name is a project of its own
    run_cli("capture", "--project", "notes", input=FACT)
    projects = {m["project"] for m in json.loads(run_cli("memories", "list", "--json").stdout)}
    assert projects == {"github.com/acme/api", "notes"}


def test_in_a_clone_its_name_is_the_repository_though_a_bare_project_has_it(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_cli("capture", "--project", "api", input=FACT)  # a project known only as "api"
    clone = repo(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    monkeypatch.chdir(clone)
    run_cli("capture", "--project", "api", input=b"Pitfall: the webhook secret rotates daily.")
    run_cli("capture", "--project", "api", input=b"Decision: releases are cut on Mondays.")
    listed = json.loads(run_cli("memories", "list", "--project", "api", "--json").stdout)
    assert [m["project"] for m in listed] == ["github.com/acme/api"] * 2
    block = json.loads(run_cli("context", "--project", "api", "--json").stdout)
    assert "Mondays" in block["text"] and "counted twice" not in block["text"]
    monkeypatch.chdir(tmp_path)  # elsewhere, the bare project keeps its name
    elsewhere = json.loads(run_cli("memories", "list", "--project", "api", "--json").stdout)
    assert [m["project"] for m in elsewhere] == ["api"]


def test_a_project_name_the_store_never_saw_is_said_so_on_reads(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_cli("capture", "--project", "webshop", input=FACT)
    for argv in (("search", "refunds counted twice"), ("context",), ("memories", "list")):
        typo = run_cli(*argv, "--project", "webshoop")
        assert typo.returncode == 0  # an empty answer, as before, and a hint beside it
        assert ("memspool: no project is known as 'webshoop'; projects with memory here: "
                "webshop") in typo.stderr.decode()
    quiet = run_cli("search", "zebra knitting patterns", "--project", "webshop")
    assert quiet.stdout.decode().strip() == "no memory matches"
    assert quiet.stderr.decode() == ""  # a project it knows: nothing matched, nothing more
    # An export of it is an error, not an empty backup: the next step of a backup
    # is often removing the home.
    export = run_cli("memories", "export", "--project", "webshoop", check=False)
    assert export.returncode == 1 and export.stdout == b""
    assert ("No project is known as 'webshoop'; projects with memory here: webshop. Nothing "
            "was exported.") in export.stderr.decode()
    assert len(run_cli("memories", "export", "--project", "webshop").stdout.splitlines()) == 1


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_project_accepts_an_unambiguous_name_and_names_the_ambiguous(
        tmp_path: Path, home: Path) -> None:
    a = repo(tmp_path / "clientA" / "api", "git@github.com:clienta/api.git")
    b = repo(tmp_path / "clientB" / "api")
    shop = repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    for folder in (a, b, shop):
        run_cli("capture", "--project", str(folder), input=FACT)
    listed = json.loads(run_cli("memories", "list", "--project", "shop", "--json").stdout)
    assert [m["project"] for m in listed] == ["github.com/acme/shop"]
    assert listed[0]["project_name"] == "shop"
    proc = run_cli("memories", "list", "--project", "api", check=False)
    assert proc.returncode == 1
    message = proc.stderr.decode()
    assert "2 projects" in message and "github.com/clienta/api" in message
    assert str(b.resolve()) in message
    by_id = json.loads(run_cli("memories", "list", "--project", "github.com/clienta/api",
                               "--json").stdout)
    assert len(by_id) == 1
    text = run_cli("memories", "list").stdout.decode()
    assert " api: " in text and " shop: " in text  # readable names in output


def test_the_drainer_files_slices_under_the_repository(
        tmp_path: Path, home: Path, projects: Path) -> None:
    a = repo(tmp_path / "clientA" / "api", "git@github.com:clienta/api.git")
    transcript = projects / "p" / "s1.jsonl"
    transcript.parent.mkdir()
    line = {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": str(a),
            "message": {"role": "user", "content": "x" * 600}}
    transcript.write_text(json.dumps(line) + "\n")
    from memspool.drainer import Drainer
    from memspool.spool import append

    append(load_config().spool_dir, payload("Stop", "s1", transcript, a))
    drainer = Drainer(load_config())
    drainer.initialize()
    try:
        drainer.loop()
        rows = drainer.conn.execute("SELECT project FROM slices").fetchall()
        named = drainer.conn.execute("SELECT id, name, root FROM projects").fetchall()
    finally:
        drainer.shutdown()
    assert [r[0] for r in rows] == ["github.com/clienta/api"]
    assert [tuple(r) for r in named] == [("github.com/clienta/api", "api", str(a.resolve()))]


def _old_store(home: Path) -> sqlite3.Connection:
    """A store at the last schema that filed projects by their folder's basename."""
    home.mkdir(mode=0o700, exist_ok=True)
    old = sqlite3.connect(home / "memspool.db", isolation_level=None)
    from memspool.store.db import add_functions
    add_functions(old)
    last_basename = next(i for i, m in enumerate(MIGRATIONS) if not isinstance(m, str))
    for version in range(last_basename):
        migration = MIGRATIONS[version]
        assert isinstance(migration, str)
        for statement in _statements(migration):
            old.execute(statement)
    old.execute(f"PRAGMA user_version = {last_basename}")
    return old


def test_a_store_filed_by_basename_moves_to_identities(
        tmp_path: Path, home: Path, projects: Path) -> None:
    a = repo(tmp_path / "clientA" / "api", "git@github.com:clienta/api.git")
    b = repo(tmp_path / "clientB" / "api")
    shop = repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    old = _old_store(home)
    for number, folder in enumerate((a, b, shop), start=1):
        transcript = projects / f"p{number}" / f"s{number}.jsonl"
        transcript.parent.mkdir()
        transcript.write_text(json.dumps({"type": "user", "cwd": str(folder)}) + "\n")
        name = folder.name
        old.execute("INSERT INTO cursors (path, session_id, project, offset, updated_at)"
                    " VALUES (?, ?, ?, 0, 1.0)", (str(transcript), f"s{number}", name))
        old.execute(
            "INSERT INTO slices (id, session_id, project, event, transcript_path, byte_start,"
            " byte_end, records_kept, records_dropped, raw_bytes, text_chars, stored_bytes,"
            " body, created_at) VALUES (?, ?, ?, 'Stop', ?, 0, 1, 1, 0, 1, 1, 1, x'00', 1.0)",
            (number, f"s{number}", name, str(transcript)))
        old.execute("INSERT INTO memories (id, project, key, type, summary, body, created_at,"
                    " updated_at) VALUES (?, ?, ?, 'pitfall', 'S', 'B', 1.0, 1.0)",
                    (number, name, f"refunds-{number}"))
        old.execute("INSERT INTO provenance (memory_id, action, session, source, slice_id,"
                    " text_hash, at) VALUES (?, 'created', ?, 'archivist', ?, 'h', 1.0)",
                    (number, f"s{number}", number))
    # A second clone of acme/shop in a folder of its own name: one project now.
    clone = repo(tmp_path / "shop-clone", "git@github.com:acme/shop.git")
    transcript = projects / "p6" / "s6.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(json.dumps({"type": "user", "cwd": str(clone)}) + "\n")
    old.execute("INSERT INTO cursors (path, session_id, project, offset, updated_at)"
                " VALUES (?, 's6', 'shop-clone', 0, 1.0)", (str(transcript),))
    old.execute(
        "INSERT INTO slices (id, session_id, project, event, transcript_path, byte_start,"
        " byte_end, records_kept, records_dropped, raw_bytes, text_chars, stored_bytes,"
        " body, created_at) VALUES (6, 's6', 'shop-clone', 'Stop', ?, 0, 1, 1, 0, 1, 1, 1,"
        " x'00', 1.0)", (str(transcript),))
    old.execute("INSERT INTO memories (id, project, key, type, summary, body, created_at,"
                " updated_at) VALUES (6, 'shop-clone', 'refunds-3', 'pitfall', 'S', 'B', 1.0,"
                " 1.0)")
    old.execute("INSERT INTO provenance (memory_id, action, session, source, slice_id,"
                " text_hash, at) VALUES (6, 'created', 's6', 'archivist', 6, 'h', 1.0)")
    # Captured by hand, no slice: its name maps to one repository only.
    old.execute("INSERT INTO memories (id, project, key, type, summary, body, created_at,"
                " updated_at) VALUES (4, 'shop', 'by-hand', 'decision', 'S', 'B', 1.0, 1.0)")
    # A name whose transcripts are gone stays as it was.
    old.execute("INSERT INTO memories (id, project, key, type, summary, body, created_at,"
                " updated_at) VALUES (5, 'gone', 'k', 'decision', 'S', 'B', 1.0, 1.0)")
    old.execute("INSERT INTO forgotten VALUES ('shop', 'k', 'h', 1.0)")
    old.close()

    conn = connect(load_config())
    try:
        placed = dict(conn.execute("SELECT id, project FROM memories").fetchall())
        assert placed == {1: "github.com/clienta/api", 2: str(b.resolve()),
                          3: "github.com/acme/shop", 4: "github.com/acme/shop", 5: "gone",
                          6: "github.com/acme/shop"}
        slices = dict(conn.execute("SELECT id, project FROM slices").fetchall())
        assert slices == {1: placed[1], 2: placed[2], 3: placed[3], 6: placed[6]}
        # The two clones' memories may say one fact twice: the next major pass looks.
        changed = dict(conn.execute("SELECT id, updated_at > 1.0 FROM memories").fetchall())
        assert changed == {1: 0, 2: 0, 3: 1, 4: 1, 5: 0, 6: 1}
        assert conn.execute("SELECT count(*) FROM forgotten WHERE project = ?",
                            ("github.com/acme/shop",)).fetchone()[0] == 1
        names = dict(conn.execute("SELECT id, name FROM projects").fetchall())
        assert names[placed[1]] == names[placed[2]] == "api" and names["gone"] == "gone"
    finally:
        conn.close()
    ambiguous = run_cli("search", "S", "--project", "api", check=False)
    assert ambiguous.returncode == 1 and "2 projects" in ambiguous.stderr.decode()
