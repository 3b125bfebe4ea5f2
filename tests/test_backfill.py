"""Backfill: existing transcripts through the drainer's own cursors, exactly once, then digested."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CCVIEWER, SPOTTER, SPOTTER_AGENT, payload, run_cli, wait_for

from memspool.archivist import digest
from memspool.base.errors import DrainerBusy, MemspoolError, TranscriptError
from memspool.cli.backfill import register
from memspool.config import Config
from memspool.drainer import run_once
from memspool.drainer.backfill import backfill
from memspool.drainer.lock import acquire_lock
from memspool.spool import Spool, append

SESSION = "11111111-2222-3333-4444-555555555555"
OTHER = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
DAY = 86400


#: The cwd the spotter transcripts recorded, which is its project's identity here.
SPOTTER_PROJECT = "/home/marco/projects/spotter"


def place(projects: Path) -> tuple[Path, Path, Path]:
    """The fixtures where Claude Code keeps them: a session with a subagent, and another."""
    main = projects / "-home-marco-projects-spotter" / f"{SESSION}.jsonl"
    agent = main.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"
    other = projects / "-path-to-Demo" / f"{OTHER}.jsonl"
    for path, source in ((main, SPOTTER), (agent, SPOTTER_AGENT), (other, CCVIEWER)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source.read_bytes())
    return main, agent, other


def store(config: Config) -> sqlite3.Connection:
    conn = sqlite3.connect(config.db_path)
    conn.row_factory = sqlite3.Row
    return conn


def counts(config: Config) -> tuple[int, ...]:
    """Slices, memories and memory history rows."""
    with store(config) as conn:
        return tuple(conn.execute(
            "SELECT (SELECT count(*) FROM slices), (SELECT count(*) FROM memories),"
            " (SELECT count(*) FROM memory_history)").fetchone())


def slices(config: Config) -> list[dict[str, Any]]:
    with store(config) as conn:
        return [dict(r) for r in conn.execute(
            "SELECT session_id, agent_id, project, event, transcript_path, byte_start, byte_end,"
            " digested_at FROM slices ORDER BY id")]


def assert_no_overlap(config: Config) -> None:
    """No byte of any transcript went into two slices."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for s in slices(config):
        ranges.setdefault(s["transcript_path"], []).append((s["byte_start"], s["byte_end"]))
    for spans in ranges.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, spans


def line(text: str, uuid: str, kind: str = "user", **extra: object) -> bytes:
    content: object = text if kind == "user" else [{"type": "text", "text": text}]
    record = {"type": kind, "uuid": uuid, "message": {"role": kind, "content": content}, **extra}
    return json.dumps(record).encode() + b"\n"


# -- exactly once -------------------------------------------------------------------------


#: An answer the transcript rules keep (the bundled transcripts hold no such answer
#: outside a session summary).
LEARNED = ("Root cause: the nightly export failed because the reporting replica rejects "
           "connections from outside 10.8.0.0/16; run it from the VPN host.")


def with_a_learning(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(line("why did the export fail?", "u-learned-1"))
        handle.write(line(LEARNED, "a-learned-1", kind="assistant"))


def test_backfill_twice_stores_nothing_the_second_time(config: Config, projects: Path) -> None:
    main, agent, other = place(projects)
    with_a_learning(other)
    first = backfill(config)
    assert first.files == 3 and first.skipped == []
    assert first.slices >= 3
    assert first.raw_bytes == sum(p.stat().st_size for p in (main, agent, other))
    assert first.memories_created > 0
    assert all(s["digested_at"] is not None for s in slices(config))
    before = counts(config)
    assert before[1] == first.memories_created
    second = backfill(config)
    assert (second.slices, second.raw_bytes, second.memories_created) == (0, 0, 0)
    assert second.files == 3
    assert counts(config) == before
    assert_no_overlap(config)


def test_subagent_files_are_filed_under_their_session(config: Config, projects: Path) -> None:
    place(projects)
    backfill(config)
    by_agent = {s["agent_id"]: s for s in slices(config) if s["session_id"] == SESSION}
    assert set(by_agent) == {None, "aac57f5"}
    assert by_agent["aac57f5"]["byte_end"] == SPOTTER_AGENT.stat().st_size
    # Both under the project the main transcript's recorded cwd names (a folder
    # not on this machine: its path is its identity).
    assert by_agent[None]["project"] == by_agent["aac57f5"]["project"] == SPOTTER_PROJECT
    assert {s["event"] for s in slices(config)} == {"backfill"}


def test_after_the_hooks_captured_a_session_nothing_is_stored_twice(
    config: Config, projects: Path
) -> None:
    main, _, _ = place(projects)
    append(str(config.spool_dir), payload("Stop", SESSION, main, cwd="/work/spotter"))
    run_once(config)
    hooked = slices(config)
    assert {s["agent_id"] for s in hooked} == {None, "aac57f5"}
    report = backfill(config)
    after = slices(config)
    # Only the session no hook ever named is new.
    assert [s for s in after if s["session_id"] == SESSION] == hooked
    assert {s["session_id"] for s in after[len(hooked):]} == {OTHER}
    assert report.slices == len(after) - len(hooked)
    # The hook's filing (project from its payload's cwd) is kept.
    assert {s["project"] for s in after if s["session_id"] == SESSION} == {"/work/spotter"}
    assert_no_overlap(config)


def test_backfill_takes_only_the_lines_the_hooks_left(config: Config, projects: Path) -> None:
    main, _, _ = place(projects)
    lines = SPOTTER.read_bytes().splitlines(keepends=True)
    head = b"".join(lines[:60])
    main.write_bytes(head)
    append(str(config.spool_dir), payload("Stop", SESSION, main))
    run_once(config)
    hooked = [s for s in slices(config) if s["agent_id"] is None]
    assert hooked and max(s["byte_end"] for s in hooked) <= len(head)
    main.write_bytes(SPOTTER.read_bytes())
    backfill(config)
    mine = [s for s in slices(config) if s["session_id"] == SESSION and s["agent_id"] is None]
    assert mine[-1]["byte_end"] == SPOTTER.stat().st_size
    assert mine[len(hooked)]["byte_start"] == hooked[-1]["byte_end"]
    assert_no_overlap(config)


def test_a_short_last_turn_is_not_held_back(config: Config, projects: Path) -> None:
    short = projects / "p" / f"{SESSION}.jsonl"
    short.parent.mkdir()
    short.write_bytes(line("why does the lock file stay?", "u1"))
    report = backfill(config)
    assert report.slices == 1  # below the size floor, but no hook will ever come for it
    with store(config) as conn:
        assert conn.execute("SELECT held_since FROM cursors").fetchone()[0] is None


# -- which files --------------------------------------------------------------------------


def test_since_leaves_out_files_not_changed_lately(config: Config, projects: Path) -> None:
    main, agent, _ = place(projects)
    old = time.time() - 40 * DAY
    for path in (main, agent):
        os.utime(path, (old, old))
    report = backfill(config, since_days=30)
    assert (report.files, report.older) == (1, 2)
    assert {s["session_id"] for s in slices(config)} == {OTHER}
    # Without --since the old session is still there to take, once.
    assert backfill(config).files == 3
    assert {s["session_id"] for s in slices(config)} == {OTHER, SESSION}


def test_named_paths_take_only_those(config: Config, projects: Path) -> None:
    main, _, other = place(projects)
    report = backfill(config, [other])
    assert report.files == 1 and {s["session_id"] for s in slices(config)} == {OTHER}
    report = backfill(config, [main.parent])  # a folder: the session and its subagent
    assert report.files == 2
    assert {s["agent_id"] for s in slices(config) if s["session_id"] == SESSION} == {
        None, "aac57f5"}


def test_a_path_outside_the_roots_is_refused(
    config: Config, projects: Path, tmp_path: Path
) -> None:
    place(projects)
    backfill(config)
    before = counts(config)
    outside = tmp_path / "elsewhere" / f"{SESSION}.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(SPOTTER.read_bytes())
    for path in (outside, outside.parent):
        with pytest.raises(TranscriptError) as caught:
            backfill(config, [projects, path])
        message = str(caught.value)
        assert str(path) in message and "transcript_roots in config.toml" in message
    with pytest.raises(TranscriptError, match="does not exist"):
        backfill(config, [tmp_path / "nothing.jsonl"])
    assert counts(config) == before
    with store(config) as conn:
        paths = [r[0] for r in conn.execute("SELECT path FROM cursors")]
    assert paths and not any("elsewhere" in p for p in paths)


def test_a_symlink_out_of_the_roots_is_skipped_and_the_rest_captured(
    config: Config, projects: Path, tmp_path: Path
) -> None:
    place(projects)
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_bytes(line("a private file outside the roots " * 20, "x1"))
    link = projects / "-home-marco-projects-spotter" / f"{OTHER[::-1]}.jsonl"
    link.symlink_to(secret)
    report = backfill(config)
    assert report.files == 3
    [skipped] = report.skipped
    assert skipped.path == str(link) and "outside the transcript roots" in skipped.reason
    assert all("elsewhere" not in str(s["transcript_path"]) for s in slices(config))


def test_a_file_that_is_no_session_is_skipped(config: Config, projects: Path) -> None:
    odd = projects / "p" / "not a session.jsonl"
    odd.parent.mkdir()
    odd.write_bytes(line("some other tool's data " * 30, "n1"))
    report = backfill(config)
    assert report.files == 0 and "not a Claude Code session id" in report.skipped[0].reason


def test_a_missing_root_is_fine(
    projects: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memspool.config import load_config

    place(projects)
    monkeypatch.setenv("MEMSPOOL_TRANSCRIPT_ROOTS",
                       f"{tmp_path / 'gone'}{os.pathsep}{projects}")
    assert backfill(load_config()).files == 3
    monkeypatch.setenv("MEMSPOOL_TRANSCRIPT_ROOTS", str(tmp_path / "gone"))
    report = backfill(load_config())
    assert (report.files, report.slices, report.skipped) == (0, 0, [])


def test_project_falls_back_to_the_folder_name(config: Config, projects: Path) -> None:
    bare = projects / "-home-me-api" / f"{SESSION}.jsonl"
    bare.parent.mkdir()
    bare.write_bytes(line("a question with no cwd recorded anywhere " * 20, "b1"))
    backfill(config)
    assert slices(config)[0]["project"] == "-home-me-api"


# -- the lock, the spool, progress ----------------------------------------------------------


def _holder(config: Config, let_go_when_frames_wait: bool) -> subprocess.Popen[bytes]:
    """A process that holds the drainer lock as a drainer would and drains nothing; it
    lets go once frames wait in the spool when asked to, else never."""
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from memspool.config import load_config
        from memspool.drainer.lock import acquire_lock
        from memspool.spool import Spool
        config = load_config(Path({str(config.home)!r}), env={{}})
        lock = acquire_lock(config, 10)
        print("held", flush=True)
        while not ({let_go_when_frames_wait} and Spool(config.spool_dir).has_pending()):
            time.sleep(0.05)
        lock.release()
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_lock_holder_that_takes_nothing_is_reported(config: Config, projects: Path) -> None:
    place(projects)
    holder = _holder(config, let_go_when_frames_wait=False)
    try:
        started = time.monotonic()
        with pytest.raises(DrainerBusy, match=rf"pid {holder.pid}\) took none of the 2 "
                                              r"backfill frame\(s\)"):
            backfill(config, lock_wait=0.1)
        # The stall window, not a hand-over deadline: well within a test's patience.
        assert time.monotonic() - started < 30
        assert Spool(config.spool_dir).has_pending()  # the frames wait, safe
    finally:
        _stop(holder)
    run_once(config)  # what the message advises, once the holder is gone
    report = backfill(config)
    assert report.files == 3 and report.slices == 0  # the spool's frames took them all
    assert len({s["session_id"] for s in slices(config)}) == 2


def test_backfill_drains_itself_once_a_holder_lets_go(config: Config, projects: Path) -> None:
    place(projects)
    holder = _holder(config, let_go_when_frames_wait=True)
    try:
        report = backfill(config, lock_wait=0.1)
    finally:
        _stop(holder)
    assert report.files == 3 and report.slices >= 3
    assert not Spool(config.spool_dir).has_pending()
    assert {s["event"] for s in slices(config)} == {"backfill"}
    assert_no_overlap(config)


def test_frames_appended_meanwhile_are_drained_on_the_way_out(
    config: Config, projects: Path
) -> None:
    place(projects)
    late = projects / "-home-me-late" / f"{SESSION[::-1]}.jsonl"
    late.parent.mkdir()

    def progress(phase: str, total: int) -> Callable[[int], None]:
        if phase == "files":
            # A session ends while backfill holds the lock: its hook appends
            # a frame and, finding the lock taken, starts no drainer.
            late.write_bytes(line("the late session's question " * 20, "late1"))
            append(str(config.spool_dir), payload("SessionEnd", SESSION[::-1], late))
        return lambda n: None

    report = backfill(config, progress=progress)
    assert report.files == 3  # listed before the late session was written
    assert not Spool(config.spool_dir).has_pending()
    late_slices = [s for s in slices(config) if s["session_id"] == SESSION[::-1]]
    assert [s["event"] for s in late_slices] == ["SessionEnd"]
    assert_no_overlap(config)


def test_a_failed_digest_keeps_the_slices_queued_and_lets_go_of_the_lock(
    config: Config, projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memspool.drainer.backfill as module

    place(projects)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the word model is missing")

    with_a_learning(projects / "-path-to-Demo" / f"{OTHER}.jsonl")
    monkeypatch.setattr(module, "digest", broken)
    with pytest.raises(MemspoolError, match="stay queued; `memspool maintain` digests them"):
        backfill(config)
    assert len(slices(config)) >= 3
    assert all(s["digested_at"] is None for s in slices(config))
    lock = acquire_lock(config, 0)
    assert lock is not None
    lock.release()
    monkeypatch.setattr(module, "digest", digest)
    report = backfill(config)  # nothing new to read; the queue is digested now
    assert report.slices == 0 and report.memories_created > 0


def test_progress_counts_files_then_slices(config: Config, projects: Path) -> None:
    place(projects)
    seen: dict[str, list[int]] = {}

    def progress(phase: str, total: int) -> Callable[[int], None]:
        seen[phase] = [total, 0]
        return lambda n: seen[phase].__setitem__(1, seen[phase][1] + n)

    report = backfill(config, progress=progress)
    assert seen["files"] == [3, 3]
    assert seen["slices"][0] == seen["slices"][1] == report.slices


# -- the command ------------------------------------------------------------------------------


def _command(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["backfill", *argv])
    code: int = args.handler(args)
    return code


def test_the_command_prints_a_report(
    projects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    place(projects)
    assert _command("--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["files"] == 3 and report["skipped"] == []
    assert set(report) >= {"files", "slices", "raw_bytes", "memories_created", "skipped"}
    assert _command() == 0
    out = capsys.readouterr().out
    assert "read 3 transcript(s) (0 bytes new): 0 slice(s) stored, 0 new memories" in out


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_memspool_backfill_end_to_end(projects: Path, tmp_path: Path) -> None:
    place(projects)
    assert json.loads(run_cli("status", "--json").stdout)["last_drain"] is None
    report = json.loads(run_cli("backfill", "--json", "--since", "30").stdout)
    assert report["files"] == 3 and report["slices"] >= 3
    # The transcripts were drained by the backfill: status says when.
    assert json.loads(run_cli("status", "--json").stdout)["last_drain"] is not None
    assert json.loads(run_cli("backfill", "--json").stdout)["slices"] == 0
    outside = tmp_path / "x.jsonl"
    outside.write_bytes(SPOTTER.read_bytes())
    refused = run_cli("backfill", str(outside), check=False)
    assert refused.returncode == 1
    assert f"memspool: error: transcript path {outside} is outside" in refused.stderr.decode()
    as_json = json.loads(run_cli("backfill", str(outside), "--json", check=False).stdout)
    assert as_json["ok"] is False and "transcript_roots" in as_json["error"]
    bad = run_cli("backfill", "--since", "0", check=False)
    assert bad.returncode == 1 and "days above 0" in bad.stderr.decode()


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_with_a_watch_daemon_running_backfill_hands_it_the_transcripts(
    config: Config, projects: Path
) -> None:
    main, agent, other = place(projects)
    with_a_learning(other)
    daemon = subprocess.Popen([sys.executable, "-m", "memspool", "drainer", "--watch"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_for(lambda: json.loads(run_cli("status", "--json").stdout)["drainer_running"])
        first = backfill(config, lock_wait=0.2)
        assert first.files == 3 and first.skipped == []
        assert first.slices >= 3 and first.memories_created > 0
        assert first.raw_bytes == sum(p.stat().st_size for p in (main, agent, other))
        assert {s["event"] for s in slices(config)} == {"backfill"}
        assert {s["agent_id"] for s in slices(config) if s["session_id"] == SESSION} == {
            None, "aac57f5"}
        assert all(s["digested_at"] is not None for s in slices(config))
        before = counts(config)
        second = backfill(config, lock_wait=0.2)
        assert (second.slices, second.raw_bytes, second.memories_created) == (0, 0, 0)
        assert counts(config) == before
        assert_no_overlap(config)
        # The daemon kept the lock throughout.
        assert int((config.home / "drainer.pid").read_text()) == daemon.pid
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
