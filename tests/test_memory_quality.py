"""Memory worth injecting, end to end: three sessions of a Flask + Postgres project through
the real hooks, a fourth by backfill, and a second project beside it.

Facts stated among chatter, in lists, by the user and restated by the
assistant become memories, whole; chatter never does; a changed value
supersedes the old one; a rule restated in a later session is one memory of
two sessions; the context block shows whole facts of its own project only.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, wait_for

from memspool.demo import SessionWriter

#: Slow, left out of the inner loop (`-m "not slow"`): a quality floor, end to end.
pytestmark = pytest.mark.slow

CHATTER = (
    "Found it.", "Done, tests are green.", "Staging is healthy now.",
    "I'll put this in gunicorn.conf.py.", "All 48 tests pass now.",
    "Let me look at the gunicorn logs first.", "Want me to open a PR?",
)

FLASK_SESSIONS: list[list[dict[str, Any]]] = [
    [  # 1: the timeouts; gunicorn's flags; utcnow
        {"user": "the staging API times out under load, can you look?"},
        {"assistant": "Let me look at the gunicorn logs first.",
         "tools": [{"name": "Bash", "input": "kubectl logs deploy/api | tail -50",
                    "output": "[CRITICAL] WORKER TIMEOUT (pid:41)\n" * 30}]},
        {"assistant": "Found it. The root cause is that the report endpoint holds a worker for "
                      "40 s while the CSV is built, and with two workers the health check "
                      "queues behind it. Run gunicorn with `--workers 2 --threads 4` so "
                      "threads absorb the slow requests. I'll put this in gunicorn.conf.py.",
         "tools": [{"name": "Edit", "input": "gunicorn.conf.py", "output": "updated"}]},
        {"user": "ok. also the nightly export shows times an hour off"},
        {"assistant": "The export used `datetime.utcnow()`, which returns a naive datetime that "
                      "Postgres reads in the session time zone. Never call "
                      "`datetime.utcnow()` in this codebase; use `datetime.now(timezone.utc)`. "
                      "Done, tests are green.",
         "tools": [{"name": "Bash", "input": "pytest -q", "output": "48 passed in 5.2s"}]},
    ],
    [  # 2: conventions in a list; a gotcha after progress; utcnow restated; a preference
        {"user": "what conventions should new endpoints follow?"},
        {"assistant": "The endpoint conventions in this repo:\n\n"
                      "1. One blueprint per resource, registered in `api/app.py`.\n"
                      "2. Errors go through `abort()` with a JSON body, never a bare 500.\n"
                      "3. Queries use SQLAlchemy Core, not the ORM.\n\n"
                      "Want me to open a PR?"},
        {"user": "no. the first request after each deploy fails, fix that"},
        {"assistant": "All 48 tests pass now. One gotcha: PgBouncer drops idle server "
                      "connections after a deploy, so set `pool_pre_ping=True` on the engine "
                      "or the first request gets a dead connection.",
         "tools": [{"name": "Bash", "input": "pytest -q", "output": "48 passed in 5.0s"}]},
        {"user": "and the timestamps in the audit log?"},
        {"assistant": "Same trap as the export: `datetime.utcnow()` gives naive datetimes, so "
                      "never call `datetime.utcnow()` here and use "
                      "`datetime.now(timezone.utc)` instead."},
        {"user": "for the record, I prefer small focused commits, never --no-verify."},
        {"assistant": "Understood: small focused commits, and never commit with "
                      "`--no-verify`."},
    ],
    [  # 3: the worker count changes, said by the user and restated by the assistant
        {"user": "remember: production gunicorn now runs with --workers 4 --threads 4, "
                 "we moved to 4-core nodes."},
        {"assistant": "Noted: production gunicorn runs with `--workers 4 --threads 4` on the "
                      "4-core nodes. Staging is healthy now."},
    ],
    [  # 4 (by backfill): VACUUM
        {"user": "the nightly VACUUM job fails with 'cannot run inside a transaction block'"},
        {"assistant": "VACUUM cannot run inside a transaction, and SQLAlchemy opens one "
                      "implicitly. Run it through `connection.execution_options("
                      "isolation_level=\"AUTOCOMMIT\")` inside an `autocommit_block()` so "
                      "the job issues it outside any transaction."},
    ],
]
OTHER_SESSION: list[dict[str, Any]] = [
    {"user": "why does the billing worker retry forever?"},
    {"assistant": "The billing worker's retry policy has no cap: `max_attempts` defaults to 0, "
                  "which the queue library reads as unlimited. Set `max_attempts=5` on the "
                  "billing queue."},
]


class Claude:
    """Sessions driven through the installed hooks, as Claude Code runs them."""

    def __init__(self, tmp_path: Path, projects: Path) -> None:
        self.tmp_path = tmp_path
        self.projects = projects
        settings = tmp_path / "settings.json"
        run_cli("install", "--settings", str(settings))
        hooks = json.loads(settings.read_text())["hooks"]
        self.commands = {e: g[-1]["hooks"][0]["command"] for e, g in hooks.items()}
        self.env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}

    def session(self, project: str, turns: list[dict[str, Any]], *,
                hooks: bool = True) -> Path:
        cwd = self.tmp_path / "work" / project
        cwd.mkdir(parents=True, exist_ok=True)
        folder = self.projects / str(cwd).replace("/", "-")
        folder.mkdir(exist_ok=True)
        session = str(uuid.uuid4())
        writer = SessionWriter(folder / f"{session}.jsonl", session, cwd)
        base = {"session_id": session, "transcript_path": str(writer.path), "cwd": str(cwd)}
        for turn in turns:
            if "user" in turn:
                writer.user(turn["user"])
                continue
            writer.assistant(turn)
            if hooks:
                self.fire("Stop", {**base, "stop_hook_active": False})
        if hooks:
            self.fire("SessionEnd", {**base, "reason": "exit"})
            _settled()
        return writer.path

    def fire(self, event: str, payload: dict[str, Any]) -> None:
        proc = subprocess.run(["sh", "-c", self.commands[event]], env=self.env,
                              input=json.dumps({**payload, "hook_event_name": event}).encode(),
                              capture_output=True, timeout=30, check=False)
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


def _settled() -> None:
    def idle() -> bool:
        status = json.loads(run_cli("status", "--json").stdout)
        return status["pending_frames"] == 0 and not status["drainer_running"]
    wait_for(idle)


def _memories(project: str | None = None) -> list[dict[str, Any]]:
    args = ["memories", "list", "--json", "--limit", "1000"]
    found = json.loads(run_cli(*args).stdout)
    for memory in found:  # each project is its folder here: named by the folder's name
        memory["project"] = memory["project_name"]
    return [m for m in found if project is None or m["project"] == project]


def _holding(memories: list[dict[str, Any]], *anchors: str) -> list[dict[str, Any]]:
    return [m for m in memories
            if all(a.lower() in f"{m['summary']}\n{m['body']}".lower() for a in anchors)]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The scenario, played once for the tests below, in its own home."""
    mp = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("scenario")
    home, projects, user = base / "home", base / "claude" / "projects", base / "user"
    projects.mkdir(parents=True)
    user.mkdir()
    for name in list(os.environ):
        if name.startswith(("MEMSPOOL_", "XDG_")):
            mp.delenv(name)
    mp.setenv("HOME", str(user))
    mp.setenv("CLAUDE_CONFIG_DIR", str(base / "claude"))
    mp.setenv("MEMSPOOL_HOME", str(home))
    mp.setenv("MEMSPOOL_TRANSCRIPT_ROOTS", str(projects))
    mp.setenv("MEMSPOOL_IDLE_GRACE_SECS", "0.3")
    try:
        claude = Claude(base, projects)
        for turns in FLASK_SESSIONS[:3]:
            claude.session("flaskapi", turns)
        claude.session("billing", OTHER_SESSION)
        last = claude.session("flaskapi", FLASK_SESSIONS[3], hooks=False)
        backfilled = json.loads(run_cli("backfill", str(last), "--json").stdout)
        maintained = json.loads(run_cli("maintain", "--json").stdout)
        block = run_cli("context", "--project", str(base / "work" / "flaskapi")).stdout.decode()
        yield {"memories": _memories(), "block": block, "backfill": backfilled,
               "maintain": maintained}
    finally:
        mp.undo()


def test_every_planted_fact_becomes_a_current_memory(played: dict[str, Any]) -> None:
    current = [m for m in played["memories"] if m["project"] == "flaskapi"
               and m["layer"] in ("buffer", "canonical")]
    for anchors in (("--workers 4",), ("datetime.utcnow",), ("blueprint per resource",),
                    ("abort()",), ("SQLAlchemy Core",), ("pool_pre_ping",),
                    ("--no-verify",), ("autocommit_block",)):
        assert _holding(current, *anchors), f"no current memory holds {anchors}"
    assert played["backfill"]["files"] == 1


def test_no_memory_carries_chatter(played: dict[str, Any]) -> None:
    for memory in played["memories"]:
        text = f"{memory['summary']}\n{memory['body']}\n{memory['key']}"
        for chatter in CHATTER:
            assert chatter.lower() not in text.lower(), (memory["id"], chatter)
        assert not memory["key"].startswith(("found-it", "done", "all-48"))


def test_a_changed_value_supersedes_the_old_one(played: dict[str, Any]) -> None:
    flask = [m for m in played["memories"] if m["project"] == "flaskapi"]
    old = _holding(flask, "--workers 2")
    new = _holding(flask, "--workers 4")
    assert old and all(m["layer"] == "superseded" for m in old)
    assert {m["superseded_by"] for m in old} <= {m["id"] for m in new}
    assert any(m["layer"] in ("buffer", "canonical") for m in new)
    # "remember: ... 4 workers" and the assistant's restatement: one memory.
    assert len([m for m in new if m["layer"] in ("buffer", "canonical")]) == 1


def test_a_rule_restated_in_a_later_session_is_one_memory_of_two_sessions(
        played: dict[str, Any]) -> None:
    current = [m for m in played["memories"] if m["project"] == "flaskapi"
               and m["layer"] in ("buffer", "canonical")]
    utcnow = _holding(current, "datetime.utcnow")
    assert len(utcnow) == 1 and utcnow[0]["sessions"] == 2
    assert played["maintain"]["maintain"]["examined"] > 0


def test_the_context_block_is_whole_and_of_its_own_project(played: dict[str, Any]) -> None:
    block = played["block"]
    # The strict tier: the rule two sessions stated is there; the other project's
    # fact and the superseded value never are.
    assert "datetime.utcnow" in block
    assert "max_attempts" not in block  # the billing project's fact
    assert "--workers 2" not in block  # superseded
    for line in block.splitlines():
        if line.startswith("- #"):
            fact = line.rsplit(" (", 1)[0]
            assert fact.endswith((".", "...", "`", ")", "!")), line
            assert "…" not in fact
