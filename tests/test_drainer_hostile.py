"""Hostile and broken input at the drainer's boundaries: each bad part is refused alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import payload, run_cli, wait_for
from test_drainer import SESSION, fire, line, rows, texts

from memspool.drainer import Drainer
from memspool.hooks import HOOK_SCRIPT
from memspool.spool import append


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_deeply_nested_line_is_skipped_and_the_rest_captured(
        drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    deep = {"type": "user", "uuid": "deep", "toolUseResult": "NEST"}
    nested = json.dumps(deep).replace('"NEST"', "[" * 5000 + "]" * 5000).encode() + b"\n"
    transcript.write_bytes(line("user", "the question before the deep line " * 10, "u1")
                           + nested
                           + line("assistant", "the answer after the deep line " * 10, "a1"))
    fire(drainer, "Stop", transcript)
    drainer.loop()
    text = "\n".join(texts(drainer))
    assert "the question before" in text and "the answer after" in text
    assert sum(r["records_dropped"] for r in rows(drainer)) >= 1
    offset = drainer.conn.execute("SELECT offset FROM cursors").fetchone()[0]
    assert offset == transcript.stat().st_size  # the cursor moved past it


def test_a_folder_named_like_a_transcript_leaks_no_descriptor(
        drainer: Drainer, projects: Path) -> None:
    folder = projects / f"{SESSION}.jsonl"
    folder.mkdir()
    fire(drainer, "Stop", folder)
    drainer.loop(now=1000.0)
    before = _open_fds()
    for attempt in range(50):
        fire(drainer, "Stop", folder)
        drainer.loop(now=1000.0 + attempt)
    assert _open_fds() == before
    assert "is not a regular file" in drainer.config.log_path.read_text()


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_watch_daemon_whose_passes_keep_failing_exits_non_zero(home: Path) -> None:
    env = {**os.environ, "MEMSPOOL_WATCH_TICK_SECS": "0.1"}
    proc = subprocess.Popen([sys.executable, "-m", "memspool", "drainer", "--watch"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        log = home / "drainer.log"
        wait_for(lambda: log.exists() and "watching" in log.read_text())
        # The spool folder replaced by a file: every pass now fails as a whole.
        spool = home / "spool"
        for child in spool.iterdir():
            if child.is_file():
                child.unlink()
        spool.rmdir()
        spool.write_text("not a folder")
        assert proc.wait(timeout=60) == 1
        assert "giving up after 5 failed passes" in log.read_text()
        # The lock was let go: another drainer can run.
        assert not (home / "drainer.pid").exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def test_a_lone_surrogate_is_replaced_and_every_output_shows_it(
        drainer: Drainer, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    record = ('{"type": "user", "uuid": "u1", "message": {"role": "user", "content": '
              '"an emoji cut in half \\ud83d here, then a long enough question to ship"}}\n')
    transcript.write_bytes(record.encode() * 1 + line("assistant", "fine " * 100, "a1"))
    fire(drainer, "SessionEnd", transcript)
    drainer.loop()
    drainer.shutdown()
    listed = run_cli("slices", "list", "--json")
    slice_id = json.loads(listed.stdout)[0]["id"]
    shown = run_cli("slices", "show", str(slice_id))
    assert "cut in half \ufffd here" in shown.stdout.decode("utf-8")
    ascii_only = subprocess.run([sys.executable, "-m", "memspool", "slices", "show",
                                 str(slice_id)], capture_output=True, check=False,
                                env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert ascii_only.returncode == 0 and b"Traceback" not in ascii_only.stderr


def test_a_subagent_path_outside_the_roots_drops_only_the_subagent(
        drainer: Drainer, projects: Path, tmp_path: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "the main session's question " * 20, "u1"))
    outside = tmp_path / "elsewhere" / "agent-x.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(line("assistant", "text outside the roots " * 20, "x1"))
    fire(drainer, "SubagentStop", transcript, agent_id="x",
         agent_transcript_path=str(outside))
    drainer.loop()
    text = "\n".join(texts(drainer))
    assert "the main session's question" in text
    assert "outside the roots" not in text
    assert "outside the transcript roots" in drainer.config.log_path.read_text()


def test_a_symlink_planted_after_the_hook_is_not_followed(
        drainer: Drainer, projects: Path, tmp_path: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(line("user", "an ordinary first turn of the session " * 12, "u1"))
    fire(drainer, "Stop", transcript)
    drainer.loop(now=1000.0)
    secret = tmp_path / "private" / "notes.jsonl"
    secret.parent.mkdir()
    secret.write_bytes(line("user", "private text that must stay out " * 30, "p1"))
    transcript.unlink()
    transcript.symlink_to(secret)  # grown and replaced: every later open must re-check
    drainer.drain_grown(now=1001.0)
    fire(drainer, "Stop", transcript)
    drainer.loop(now=1002.0)
    drainer.loop(now=1000.0 + 90_000)  # the retry of a "missing" transcript
    assert not any("private text" in t for t in texts(drainer))


def test_the_hook_does_not_follow_a_symlink_planted_in_its_spool(
        home: Path, tmp_path: Path) -> None:
    (home / "spool").mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"the user's file\n")
    (home / "spool" / "active.seg").symlink_to(victim)
    proc = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home", str(home)],
                          input=payload("Stop", SESSION, tmp_path / "t.jsonl"),
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    assert victim.read_bytes() == b"the user's file\n"
    assert "hook failed" in (home / "hook-errors.log").read_text()


def test_an_existing_open_home_is_tightened(home: Path) -> None:
    (home / "spool").mkdir(parents=True)
    home.chmod(0o755)
    (home / "spool").chmod(0o777)
    for name in ("memspool.db", "drainer.log", "hook-errors.log"):
        (home / name).touch()
        (home / name).chmod(0o666)
    (home / "memspool.db").unlink()  # a real store is made by the command below
    run_cli("drainer", "--once")
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "spool").stat().st_mode & 0o777 == 0o700
    for name in ("memspool.db", "drainer.log", "hook-errors.log"):
        assert (home / name).stat().st_mode & 0o777 == 0o600, name


def test_a_frame_for_a_missing_session_does_not_stop_the_others(
        drainer: Drainer, projects: Path) -> None:
    good = projects / f"{SESSION}.jsonl"
    good.write_bytes(line("user", "a question from the good session " * 20, "g1"))
    append(str(drainer.config.spool_dir), b"{" * 10_000)
    append(str(drainer.config.spool_dir), b'{"session_id": "x", "transcript_path": 3}')
    fire(drainer, "Stop", good)
    drainer.loop()
    assert "a question from the good session" in "\n".join(texts(drainer))


def test_a_tool_line_is_redacted_after_joining_and_before_clipping(
        drainer: Drainer, projects: Path) -> None:
    password = "Tr0ub4dor-and-3-more-words-long"  # noqa: S105 - a test secret
    # The value straddles the 200-character clip once the whitespace is joined.
    command = "echo pad " * 20 + "\nexport DB_PASSWORD=\n    '" + password + "'\n"
    record = {"type": "assistant", "uuid": "t1", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "x", "name": "Bash", "input": {"command": command}}]}}
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(json.dumps(record).encode() + b"\n"
                           + line("assistant", "and a long enough answer " * 20, "a1"))
    fire(drainer, "SessionEnd", transcript)
    drainer.loop()
    text = "\n".join(texts(drainer))
    assert "export DB_PASSWORD=" in text
    assert password not in text and password[:8] not in text
