"""SIGKILL during the minor pass: every slice is digested exactly once, no memory is doubled."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard
from conftest import REPO

from memspool.config import load_config
from memspool.store import connect, transaction
from memspool.store.slices import NewSlice, insert_slice

#: Slow, left out of the inner loop (`-m "not slow"`): random SIGKILLs over whole digests.
pytestmark = pytest.mark.slow

DIGEST = "from memspool.service import Service; Service().digest()"


def _fill(home: Path) -> int:
    """Queue one slice per labelled message (durable and ephemeral mixed)."""
    messages = [json.loads(line) for line in
                (REPO / "tests" / "data" / "archivist_messages.jsonl").read_text().splitlines()]
    compressor = zstandard.ZstdCompressor()
    conn = connect(load_config(home, env={}))
    try:
        with transaction(conn):
            for n, message in enumerate(messages * 2):
                text = (f"[user] {message.get('context') or 'go on'}\n\n"
                        f"[assistant] {message['text']}")
                insert_slice(conn, NewSlice(
                    session_id=f"s{n % 7}", agent_id=None, project=f"p{n % 3}", event="Stop",
                    transcript_path=f"/t{n}.jsonl", byte_start=0, byte_end=len(text), part=1,
                    records_kept=2, records_dropped=0, records_unknown=0, records_replayed=0,
                    text_chars=len(text), redactions=0, body=compressor.compress(text.encode()),
                    created_at=float(n)))
    finally:
        conn.close()
    return 2 * len(messages)


def _outcome(home: Path) -> tuple[int, list[tuple[int, str]], int]:
    conn = connect(load_config(home, env={}))
    try:
        queued = conn.execute("SELECT count(*) FROM slices WHERE digested_at IS NULL").fetchone()
        saves = conn.execute(
            "SELECT p.slice_id, m.key FROM provenance p JOIN memories m ON m.id = p.memory_id"
            " ORDER BY p.slice_id, m.key").fetchall()
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()
    finally:
        conn.close()
    return queued[0], [tuple(row) for row in saves], memories[0]


def _run(home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEMSPOOL_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", DIGEST], env=env, start_new_session=True,
                            stderr=subprocess.PIPE)


@pytest.mark.timeout(600)
def test_sigkill_at_random_points_digests_each_slice_exactly_once(tmp_path: Path) -> None:
    reference, victim = tmp_path / "reference", tmp_path / "victim"
    slices = _fill(reference)
    shutil.copytree(reference, victim)
    done = _run(reference)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err.decode()
    expected = _outcome(reference)
    assert expected[0] == 0 and expected[2] > 10

    rng = random.Random(20261201)
    kills = 0
    for _ in range(200):
        proc = _run(victim)
        time.sleep(rng.uniform(0.1, 0.5))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.communicate()
        if _outcome(victim)[0] == 0:
            break
    assert kills >= 3, "the pass finished before it could be killed often enough"
    final = _run(victim)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err.decode()
    got = _outcome(victim)
    assert got == expected, (f"{slices} slices, {kills} kills: "
                             f"{len(got[1])} saves vs {len(expected[1])}")
