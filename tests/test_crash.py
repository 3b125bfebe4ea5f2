"""SIGKILL drainers at random points while hooks keep firing; --resume; count every record once."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import CCVIEWER, SPOTTER, payload, run_cli

from memspool.config import load_config
from memspool.drainer.keep import keep_record, record_key
from memspool.drainer.lock import drainer_pid
from memspool.hooks import HOOK_SCRIPT
from memspool.redact import redact
from memspool.spool import Spool
from memspool.store.slices import slice_text

#: Slow, left out of the inner loop (`-m "not slow"`): SIGKILLs over whole drains.
pytestmark = pytest.mark.slow

SESSIONS = {"crash-ccviewer": CCVIEWER, "crash-spotter": SPOTTER}


def _expected(source: Path) -> list[str]:
    seen: set[str] = set()
    entries = []
    for line in source.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        kept = keep_record(record)
        key = record_key(record, line)
        if kept.text is None or key in seen:
            continue
        seen.add(key)
        entries.append(kept.text)
    return entries


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", redact(text)[0])


def _fire(home: Path, event: str, session: str, transcript: Path) -> None:
    subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--home", str(home)],
                   input=payload(event, session, transcript), check=True, timeout=30)


def _kill_current_drainer(home: Path) -> bool:
    pid = drainer_pid(load_config(home, env={}))
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(600)
def test_sigkill_at_random_points_loses_and_duplicates_nothing(
    home: Path, projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int(os.environ.get("MEMSPOOL_TEST_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    # Small captures: many transactions per drain, so kills land between and inside them.
    monkeypatch.setenv("MEMSPOOL_MAX_CAPTURE_CHARS", "2500")
    monkeypatch.setenv("MEMSPOOL_IDLE_GRACE_SECS", "0.5")
    transcripts = {s: projects / f"{s}.jsonl" for s in SESSIONS}
    pending = {s: src.read_bytes().splitlines(keepends=True) for s, src in SESSIONS.items()}
    kills = 0
    stop = threading.Event()

    def killer() -> None:
        nonlocal kills
        while not stop.wait(rng.uniform(0.02, 0.25)):
            kills += _kill_current_drainer(home)

    thread = threading.Thread(target=killer)
    thread.start()
    foreground: subprocess.Popen[bytes] | None = None
    try:
        while any(pending.values()):
            session = rng.choice([s for s, lines in pending.items() if lines])
            take = rng.randint(1, 25)
            chunk, pending[session] = pending[session][:take], pending[session][take:]
            with transcripts[session].open("ab") as handle:
                handle.write(b"".join(chunk))
            _fire(home, rng.choice(["Stop", "Stop", "SubagentStop", "PreCompact"]), session,
                  transcripts[session])
            if foreground is None and rng.random() < 0.3:
                # A foreground drainer too, killed at a random moment of its own.
                foreground = subprocess.Popen(
                    [sys.executable, "-m", "memspool", "drainer", "--once"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0, 0.3))
                if foreground.poll() is None:
                    foreground.send_signal(signal.SIGKILL)
                    kills += 1
                foreground.wait()
                foreground = None
    finally:
        stop.set()
        thread.join()
    for session, transcript in transcripts.items():
        _fire(home, "SessionEnd", session, transcript)  # ship held-back tails
    _kill_current_drainer(home)
    result = json.loads(run_cli("drainer", "--resume", "--json").stdout)
    assert isinstance(result["recovered"], list)
    assert not Spool(home / "spool").has_pending()

    conn = sqlite3.connect(home / "memspool.db")
    try:
        for session, source in SESSIONS.items():
            rows = conn.execute(
                "SELECT id, records_kept FROM slices WHERE session_id = ? ORDER BY id", (session,)
            ).fetchall()
            expected = _expected(source)
            got = "".join(_squash(slice_text(conn, i)) for i, _ in rows)
            want = "".join(_squash(e) for e in expected)
            assert got == want, (
                f"seed {seed}: {session} lost or duplicated text after {kills} kills"
            )
        cursors = dict(conn.execute("SELECT path, offset FROM cursors").fetchall())
        for session, source in SESSIONS.items():
            assert cursors[str(transcripts[session])] == source.stat().st_size
    finally:
        conn.close()
    print(f"seed {seed}: {kills} drainers killed")
    assert kills >= 3, f"only {kills} drainers were killed; the test proved little (seed {seed})"
