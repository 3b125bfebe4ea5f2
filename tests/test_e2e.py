"""End to end through real processes: installed hook command -> detached drainer -> store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SPOTTER, payload, run_cli, wait_for

SESSION = "491e126e-1e71-469c-ade2-fcc8af567c74"


def _captures(home: Path) -> list[dict[str, object]]:
    db = home / "memspool.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM slices ORDER BY id")]
    except sqlite3.OperationalError:
        return []  # schema not created yet
    finally:
        conn.close()


def _installed_command(tmp_path: Path, event: str) -> str:
    settings = tmp_path / "settings.json"
    run_cli("install", "--settings", str(settings))
    groups = json.loads(settings.read_text())["hooks"][event]
    return str(groups[-1]["hooks"][0]["command"])


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_installed_stop_hook_to_stored_capture(tmp_path: Path, home: Path, projects: Path) -> None:
    command = _installed_command(tmp_path, "Stop")
    transcript = projects / "-home-marco-projects-spotter" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes(SPOTTER.read_bytes())
    # Claude Code's environment knows nothing of memspool: the command carries the home.
    env = {k: v for k, v in os.environ.items() if k != "MEMSPOOL_HOME"}
    proc = subprocess.run(["sh", "-c", command],
                          input=payload("Stop", SESSION, transcript, tmp_path),
                          capture_output=True, env=env, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    rows = wait_for(lambda: _captures(home))
    assert isinstance(rows, list) and len(rows) == 1
    row = rows[0]
    assert row["session_id"] == SESSION and row["event"] == "Stop"
    assert row["byte_end"] == SPOTTER.stat().st_size
    assert row["records_kept"] == 30 and row["records_dropped"] == 66
    assert row["project"] == str(tmp_path.resolve())  # the folder's identity: its path
    text = run_cli("slices", "show", str(row["id"])).stdout.decode()
    assert "[thinking] Let me research the fastest way" in text
    assert "[tool WebSearch]" in text
    assert '"toolUseResult"' not in text and "hook_progress" not in text
    # the detached drainer exits once idle
    wait_for(lambda: not json.loads(run_cli("status", "--json").stdout)["drainer_running"])
    status = json.loads(run_cli("status", "--json").stdout)
    # ... after digesting the slice into memory while the spool was idle
    assert status["pending_frames"] == 0 and status["slices_queued"] == 0
    assert status["slices_total"] == 1
    assert status["sessions_tracked"] == 1 and status["last_drain"] is not None


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_watch_daemon_drains_on_spool_events(tmp_path: Path, home: Path, projects: Path) -> None:
    command = _installed_command(tmp_path, "PreCompact")
    daemon = subprocess.Popen([sys.executable, "-m", "memspool", "drainer", "--watch"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        wait_for(lambda: json.loads(run_cli("status", "--json").stdout)["drainer_running"])
        transcript = projects / f"{SESSION}.jsonl"
        for turn in range(3):
            with transcript.open("ab") as handle:
                handle.write(json.dumps({"type": "user", "uuid": f"u{turn}", "message": {
                    "content": f"turn {turn}: what does the watch daemon do?"}}).encode() + b"\n")
            subprocess.run(["sh", "-c", command], check=True, timeout=30,
                           input=payload("PreCompact", SESSION, transcript))
            wait_for(lambda turn=turn: len(_captures(home)) == turn + 1)
        # the watch daemon held the lock, so no hook spawned a drainer of its own
        assert int((home / "drainer.pid").read_text()) == daemon.pid

        # idle, it does not wake itself up (its own reads of the spool are no news)
        def last_drain() -> object:
            return json.loads(run_cli("status", "--json").stdout)["last_drain"]

        def drained_and_still() -> object:
            # The third capture is stored before its pass ends (digest, vectors, the
            # drain's time): wait for that time to stay the same for a second (a pass
            # of its own takes a fraction of one here), then watch it stay.
            first = last_drain()
            time.sleep(1.0)
            return first if first is not None and last_drain() == first else None

        settled = wait_for(drained_and_still)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert last_drain() == settled
            time.sleep(0.5)
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0
    finally:
        if daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
        daemon.stderr.close()  # type: ignore[union-attr]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_drainer_once_and_status_text(home: Path, projects: Path) -> None:
    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    from memspool.spool import append

    (home / "spool").mkdir(parents=True, mode=0o700)
    append(str(home / "spool"), payload("Stop", SESSION, transcript))
    out = run_cli("drainer", "--once").stdout.decode()
    assert "drained 1 frame(s) into 1 slice(s)" in out
    listing = run_cli("slices", "list").stdout.decode()
    assert "Stop" in listing and SESSION[:14] in listing
    status = run_cli("status").stdout.decode()
    assert "slices queued:     0 (of 1)" in status  # digested by the same drainer
    assert "1 slice(s) digested into memory" in out
    missing = run_cli("slices", "show", "99", check=False)
    assert missing.returncode == 1 and b"No slice with id 99" in missing.stderr
    # a drainer that exits cleanly leaves no pid file, and everything it made is private
    assert not (home / "drainer.pid").exists()
    for path in [home, *home.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_any_drainer_tidies_up_after_one_that_died(home: Path, projects: Path) -> None:
    """No --resume needed: a pid file left behind tells the next drainer to recover."""
    from memspool.spool import append

    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    (home / "spool").mkdir(parents=True, mode=0o700)
    append(str(home / "spool"), payload("Stop", SESSION, transcript))
    (home / "spool" / "checkpoint.tmp").write_text("v1 half")
    (home / "drainer.pid").write_text("999999\n")
    result = json.loads(run_cli("drainer", "--once", "--json").stdout)
    assert result["recovered"][0].startswith("drainer 999999 had died")
    assert any("half-written" in note for note in result["recovered"])
    assert result["slices"] == 1 and not (home / "spool" / "checkpoint.tmp").exists()
    fresh = json.loads(run_cli("drainer", "--once", "--json").stdout)
    assert fresh["recovered"] == []  # a clean exit leaves nothing to recover from


@pytest.mark.slow  # the whole demo, as a user runs it
def test_demo_runs_from_the_bundled_samples(tmp_path: Path) -> None:
    proc = run_cli("demo", "--home", str(tmp_path / "demo"), "--json")
    for path in [tmp_path / "demo", *(tmp_path / "demo").rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path
    result = json.loads(proc.stdout)
    assert result["drained"] and result["slices"] >= 3
    assert result["covered"] == result["raw_bytes"]
    assert result["text_chars"] < 0.1 * result["raw_bytes"]


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_resume_after_a_crash_mid_rotation(home: Path, projects: Path) -> None:
    """A stale pid file, a half-written checkpoint, a consumed segment and a torn tail."""
    from memspool.spool import encode

    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    spool = home / "spool"
    spool.mkdir(parents=True, mode=0o700)
    frame = encode(payload("Stop", SESSION, transcript))
    (spool / "seg-00000000000000000001.seg").write_bytes(frame)  # consumed already
    (spool / "checkpoint").write_text(f"v1 seg-00000000000000000001.seg {len(frame)}\n")
    (spool / "checkpoint.tmp").write_text("v1 seg-0000")  # the crash hit mid-write
    (spool / "seg-00000000000000000002.seg").write_bytes(frame + frame[:30])  # torn tail
    (spool / "active.seg").write_bytes(encode(payload("PreCompact", SESSION, transcript)))
    (home / "drainer.pid").write_text("999999\n")
    result = json.loads(run_cli("drainer", "--resume", "--json").stdout)
    assert any("half-written" in note for note in result["recovered"])
    died = "drainer 999999 had died holding the lock (its flock ended with it)"
    assert died in result["recovered"]
    assert any("consumed" in note for note in result["recovered"])
    assert result["frames"] == 2 and result["slices"] == 1 and result["quarantined"] == 1
    assert sorted(p.name for p in spool.iterdir()) == ["checkpoint", "quarantine"]
    assert len(list((spool / "quarantine").iterdir())) == 1
    assert "quarantined 30 bytes" in (home / "drainer.log").read_text()


def test_a_frame_appended_while_a_drainer_lets_go_is_not_stranded(home: Path,
                                                                   projects: Path) -> None:
    """The hand-off: a hook that found the lock held spawned nobody; the holder re-checks."""
    from memspool.config import load_config
    from memspool.drainer.lock import acquire_lock
    from memspool.drainer.modes import _start, drain_until_empty, hand_off
    from memspool.spool import append

    config = load_config()
    lock = acquire_lock(config, 5)
    assert lock is not None
    drainer, _ = _start(config, lock, recover=False)
    try:
        transcript = projects / f"{SESSION}.jsonl"
        transcript.write_bytes(SPOTTER.read_bytes())
        # the hook's side while the lock is held: append, find the lock taken, leave
        append(str(config.spool_dir), payload("Stop", SESSION, transcript))
        hand_off(config, lock, drainer, drain_until_empty)
        assert not drainer.spool.has_pending()
        assert drainer.conn.execute("SELECT count(*) FROM slices").fetchone()[0] == 1
    finally:
        drainer.shutdown()
    assert not (home / "drainer.pid").exists()


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_errors_that_quote_a_payload_are_redacted(home: Path) -> None:
    from memspool.spool import append

    (home / "spool").mkdir(parents=True, mode=0o700)
    secret = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    append(str(home / "spool"), f"not json {secret}".encode())
    result = json.loads(run_cli("drainer", "--once", "--json").stdout)
    assert result["frames"] == 1
    status = json.loads(run_cli("status", "--json").stdout)
    assert "not JSON" in status["last_error"] and secret not in status["last_error"]
    assert secret not in (home / "drainer.log").read_text()
    # a secret across the 80 characters an error quotes: redacted before the cut
    append(str(home / "spool"), b"x" * 62 + f" here: {secret}".encode())
    run_cli("drainer", "--once")
    log = (home / "drainer.log").read_text()
    assert secret[:10] not in log and "[REDACTED" in log


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_drainer_json_reports_stored_bytes(home: Path, projects: Path) -> None:
    from memspool.spool import append

    transcript = projects / f"{SESSION}.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    (home / "spool").mkdir(parents=True, mode=0o700)
    append(str(home / "spool"), payload("Stop", SESSION, transcript))
    result = json.loads(run_cli("drainer", "--once", "--json").stdout)
    rows = _captures(home)
    assert result["stored_bytes"] == sum(r["stored_bytes"] for r in rows) > 0  # type: ignore[misc]
