"""The SessionStart and UserPromptSubmit hooks, run exactly as Claude Code runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from memspool.hooks import CONTEXT_SCRIPT, RECALL_SCRIPT

FACTS = [
    b"Pitfall: the SparklineChart component re-renders on every tick because its data "
    b"prop is a new array each render.",
    b"Root cause: refunds were counted twice because the webhook handler double-inserts "
    b"rows when Stripe retries the event.",
    b"Decision: get_user_by_id in src/db/users.py caches rows for 30 seconds.",
]


@pytest.fixture
def installed(tmp_path: Path, home: Path) -> dict[str, str]:
    settings = tmp_path / "settings.json"
    run_cli("install", "--settings", str(settings), "--recall-on-prompt")
    hooks = json.loads(settings.read_text())["hooks"]
    return {event: groups[-1]["hooks"][0]["command"] for event, groups in hooks.items()}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    return folder


def _remember(folder: Path) -> None:
    """Capture the facts into the project of ``folder`` (named by its path)."""
    for fact in FACTS:
        run_cli("capture", "--project", str(folder), input=fact)


def _run(command: str, payload: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}
    return subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=30, check=False)


def _context(proc: subprocess.CompletedProcess[bytes], event: str) -> str:
    assert proc.returncode == 0 and proc.stderr == b""
    if not proc.stdout:
        return ""
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
@pytest.mark.parametrize("source", ["startup", "resume", "compact", "clear"])
def test_session_start_prints_the_projects_block(
        installed: dict[str, str], shop: Path, source: str) -> None:
    _remember(shop)
    text = _context(_run(installed["SessionStart"], {
        "session_id": "s1", "cwd": str(shop), "hook_event_name": "SessionStart",
        "source": source}), "SessionStart")
    assert "SparklineChart" in text and "counted twice" in text and "#1" in text
    assert len(text) <= 8000


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_session_start_of_another_project_prints_nothing(
        installed: dict[str, str], shop: Path, tmp_path: Path) -> None:
    _remember(shop)
    other = tmp_path / "other"
    other.mkdir()
    proc = _run(installed["SessionStart"], {"session_id": "s1", "cwd": str(other),
                                            "source": "startup"})
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


@pytest.mark.slow  # real processes, several seconds (--durations)
@pytest.mark.parametrize("payload", [b"", b"not json", b"[]", b'{"cwd": 3}', b"{" * 100_000])
def test_broken_payloads_print_nothing(installed: dict[str, str], shop: Path,
                                       payload: bytes) -> None:
    _remember(shop)
    for event in ("SessionStart", "UserPromptSubmit"):
        env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}
        proc = subprocess.run(["sh", "-c", installed[event]], input=payload, env=env,
                              capture_output=True, timeout=30, check=False)
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


def test_a_missing_store_prints_nothing(installed: dict[str, str], shop: Path) -> None:
    for event in ("SessionStart", "UserPromptSubmit"):
        proc = _run(installed[event], {"session_id": "s1", "cwd": str(shop),
                                       "prompt": "refunds counted twice webhook"})
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_corrupt_store_prints_nothing(installed: dict[str, str], shop: Path,
                                        home: Path) -> None:
    _remember(shop)
    for name in ("memspool.db-wal", "memspool.db-shm"):
        (home / name).unlink(missing_ok=True)
    (home / "memspool.db").write_bytes(b"\x00garbage" * 4096)
    for event in ("SessionStart", "UserPromptSubmit"):
        proc = _run(installed[event], {"session_id": "s1", "cwd": str(shop),
                                       "prompt": "refunds counted twice webhook"})
        assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_locked_store_never_holds_the_session_up(installed: dict[str, str], shop: Path,
                                                   home: Path) -> None:
    _remember(shop)
    writer = sqlite3.connect(home / "memspool.db", isolation_level=None)
    writer.execute("PRAGMA journal_mode=DELETE")  # readers must wait for this writer
    writer.execute("BEGIN EXCLUSIVE")
    try:
        for event in ("SessionStart", "UserPromptSubmit"):
            proc = _run(installed[event], {"session_id": "s2", "cwd": str(shop),
                                           "prompt": "refunds counted twice webhook"})
            _context(proc, event)  # exit 0 and either nothing or valid output
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_recall_on_prompt_injects_few_relevant_memories_once(
        installed: dict[str, str], shop: Path) -> None:
    _remember(shop)
    ask = {"session_id": "s1", "cwd": str(shop), "hook_event_name": "UserPromptSubmit"}
    text = _context(_run(installed["UserPromptSubmit"], {
        **ask, "prompt": "the refunds webhook counts twice again after Stripe retries"}),
        "UserPromptSubmit")
    assert "counted twice" in text and "SparklineChart" not in text
    assert text.count("\n- #") <= 3 and len(text) <= 1500 + 200
    again = _run(installed["UserPromptSubmit"], {
        **ask, "prompt": "the refunds webhook counts twice again after Stripe retries"})
    assert again.stdout == b""  # never the same memory twice in a session
    unrelated = _run(installed["UserPromptSubmit"], {
        **ask, "session_id": "s3", "prompt": "please rename the button label to Save"})
    assert unrelated.stdout == b""  # nothing passes the bar: nothing is printed
    hostile = _run(installed["UserPromptSubmit"], {
        **ask, "session_id": "s4", "prompt": '"db_pool.py" NOT ( refunds) OR *'})
    assert hostile.returncode == 0 and hostile.stderr == b""


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_an_injected_memory_is_dated_as_recalled(installed: dict[str, str], shop: Path,
                                                 home: Path) -> None:
    _remember(shop)
    _run(installed["UserPromptSubmit"], {"session_id": "s1", "cwd": str(shop),
                                         "prompt": "refunds counted twice webhook retries"})
    report = json.loads(run_cli("maintain", "--json").stdout)["maintain"]
    assert report["recalled"] == 1


@pytest.mark.slow  # real processes, several seconds (--durations)
@pytest.mark.parametrize("script", [CONTEXT_SCRIPT, RECALL_SCRIPT])
def test_the_hooks_import_nothing_heavy(script: str, shop: Path, home: Path) -> None:
    _remember(shop)
    payload = json.dumps({"session_id": "s1", "cwd": str(shop), "prompt": "refunds twice"})
    proc = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", script,
                           "--home", str(home)], input=payload.encode(),
                          capture_output=True, timeout=30, check=False)
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()}
    for heavy in ("orjson", "zstandard", "watchdog", "memspool.store", "memspool.config",
                  "memspool.recall", "pathlib", "typing"):
        assert heavy not in imported, heavy
