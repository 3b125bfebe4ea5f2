"""What docs/durability.md promises, held against real processes, files and syscalls.

A power loss cannot be staged in a test; what can be checked is that each
layer asks the kernel for what the table says it does: the store commits with
SQLite's ``synchronous=FULL`` in WAL mode (so every commit syncs the WAL), the
spool checkpoint is synced before it is renamed into place, and the hook
syncs nothing (its frame survives a process crash, and a lost frame costs no
transcript text: the session's next frame, or backfill, reads from the cursor).
The process-crash rows are proved by SIGKILL tests elsewhere (test_crash.py,
test_archivist_crash.py, test_spool.py).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SPOTTER, WAIT_SECS, payload, run_cli

from memspool.config import load_config
from memspool.drainer import Drainer
from memspool.hooks import HOOK_SCRIPT
from memspool.service import Service
from memspool.spool import Spool
from memspool.store import connect
from memspool.store.slices import slice_text

#: SQLite's numbers for PRAGMA synchronous.
SYNCHRONOUS_FULL = 2
SYNC_CALLS = "fsync,fdatasync,rename,renameat,renameat2"


def _strace(argv: list[str], log: Path) -> list[str]:
    """The sync and rename calls of ``argv`` and its children, with each descriptor's path."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run(["strace", "-qq", "-e", "trace=none", "true"], capture_output=True,
                           timeout=WAIT_SECS, check=False)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode()[:200]}")
    subprocess.run(["strace", "-f", "-qq", "-y", "-e", f"trace={SYNC_CALLS}", "-o", str(log),
                    *argv], capture_output=True, timeout=WAIT_SECS, check=True)
    return [line for line in log.read_text().splitlines() if "(" in line]


def _index(calls: list[str], pattern: str) -> int:
    for number, line in enumerate(calls):
        if re.search(pattern, line):
            return number
    pytest.fail(f"no call matching {pattern!r} in:\n" + "\n".join(calls))


def test_every_store_connection_commits_with_full_sync_in_wal(home: Path) -> None:
    config = load_config()
    direct = connect(config)
    drainer = Drainer(config)
    drainer.initialize()
    with Service(home) as service:
        for conn in (direct, service.conn, drainer.conn):
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == SYNCHRONOUS_FULL
    drainer.shutdown()
    direct.close()


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_drain_syncs_the_store_before_the_checkpoint_and_the_checkpoint_before_rename(
    home: Path, projects: Path, tmp_path: Path
) -> None:
    transcript = projects / "durable.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    Spool(home / "spool").ensure()
    run_cli("drainer", "--once")  # creates the store; the traced drain only adds to it
    from memspool.spool.writer import append

    append(str(home / "spool"), payload("PreCompact", "durable", transcript))
    calls = _strace([sys.executable, "-m", "memspool", "drainer", "--once"],
                    tmp_path / "strace.log")
    wal = _index(calls, r"f(data)?sync\(\d+<[^>]*memspool\.db-wal>")
    checkpoint = _index(calls, r"fsync\(\d+<[^>]*checkpoint\.tmp>")
    rename = _index(calls, r"rename.*checkpoint\.tmp.*checkpoint\"")
    spool_dir = _index(calls[rename:], rf"fsync\(\d+<{re.escape(str(home / 'spool'))}>\)")
    # The slice and its cursor are on disk before the spool says the frame was consumed;
    # the new checkpoint is on disk before it replaces the old one, and its name after.
    assert wal < checkpoint < rename
    assert spool_dir >= 0
    with contextlib.closing(connect(load_config())) as conn:
        assert conn.execute("SELECT count(*) FROM slices").fetchone()[0] > 0


def test_the_hook_syncs_nothing(home: Path, projects: Path, tmp_path: Path) -> None:
    """The measured choice (bench/spool_fsync.py): a frame is written, not synced."""
    transcript = projects / "quiet.jsonl"
    transcript.write_bytes(SPOTTER.read_bytes())
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    log = tmp_path / "hook.log"
    home.mkdir(mode=0o700, exist_ok=True)
    with subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(home / 'drainer.lock')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE) as hold:
        try:
            assert hold.stdout is not None
            assert hold.stdout.readline() == b"held\n"
            subprocess.run(["strace", "-f", "-qq", "-y", "-e", f"trace={SYNC_CALLS}", "-o",
                            str(log), sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home",
                            str(home)], input=payload("Stop", "quiet", transcript),
                           capture_output=True, timeout=WAIT_SECS, check=True)
        finally:
            hold.kill()
            hold.wait(timeout=WAIT_SECS)
    assert [line for line in log.read_text().splitlines() if "sync(" in line] == []
    assert Spool(home / "spool").pending()[0] == 1


@pytest.mark.slow  # over 0.75 s in the inner loop (--durations)
def test_a_lost_frame_loses_no_transcript_text(home: Path, projects: Path) -> None:
    """An OS crash may take the last frames with it; the session's next frame reads from
    the cursor, so everything the lost frame pointed at is still captured."""
    lines = SPOTTER.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    transcript = projects / "lost.jsonl"
    transcript.write_bytes(b"".join(lines[:half]))
    spool = Spool(home / "spool")
    spool.ensure()
    from memspool.spool.writer import append

    append(str(spool.directory), payload("PreCompact", "lost", transcript))
    run_cli("drainer", "--once")
    # The second turn's frame never reaches the disk (no append); the third turn's does.
    transcript.write_bytes(b"".join(lines))
    with contextlib.closing(connect(load_config())) as conn:
        before = conn.execute("SELECT count(*) FROM slices").fetchone()[0]
    append(str(spool.directory), payload("PreCompact", "lost", transcript))
    run_cli("drainer", "--once")
    with contextlib.closing(connect(load_config())) as conn:
        ends = conn.execute("SELECT max(byte_end) FROM slices WHERE session_id = 'lost' "
                            "AND agent_id IS NULL").fetchone()[0]
        after = conn.execute("SELECT count(*) FROM slices").fetchone()[0]
        assert after > before
        assert ends == transcript.stat().st_size
        assert all(slice_text(conn, row[0]) for row in conn.execute("SELECT id FROM slices"))
