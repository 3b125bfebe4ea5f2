"""The store when something is wrong: a corrupt page, a deleted WAL, a full disk.

Each says what happened and what to do, in one sentence, and none blames
another process for it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import WAIT_SECS, run_cli
from test_broken_home import _drained_home, _mounted

from memspool.service import Service


def _one_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, (proc.returncode, lines)
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_full_disk_during_maintain_is_named_as_such(
        tmp_path: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _mounted(tmp_path, "size=8m,mode=0700") as point:
        monkeypatch.setenv("MEMSPOOL_HOME", str(point / "home"))
        monkeypatch.setenv("MEMSPOOL_DIGEST_BUDGET_SECS", "0")  # the slices stay queued
        _drained_home(projects)
        assert json.loads(run_cli("status", "--json").stdout)["slices_queued"] > 0
        with (point / "filler").open("wb", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 65536)
        line = _one_line(run_cli("maintain", check=False))
        assert "disk is full" in line and "another memspool process" not in line, line


_HOLDER = """
import sys
from memspool.config import load_config
from memspool.service import Service
service = Service()
service.save("Cache size", "The cache holds 512 entries.", project="shop")
print("saved", flush=True)
sys.stdin.readline()
service.save("Queue depth", "The queue holds 64 jobs.", project="shop")
service.close()
"""


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_a_deleted_wal_says_what_happened_and_loses_nothing(home: Path) -> None:
    with Service() as service:
        service.save("Deploy window", "Deploys run Tuesdays.", project="shop")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == b"saved\n"
        (home / "memspool.db-wal").unlink()
        line = _one_line(run_cli("memories", "list", check=False))
        assert "write-ahead log" in line and "was deleted" in line and "Stop it" in line, line
        assert "cannot rollback" not in line
        holder.stdin.write(b"go\n")
        holder.stdin.close()
        assert holder.wait(timeout=WAIT_SECS) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
    listed = run_cli("memories", "list").stdout.decode()
    assert all(word in listed for word in ("Deploy window", "Cache size", "Queue depth"))


@pytest.mark.slow  # real processes, several seconds (--durations)
def test_status_says_what_doctor_says_about_a_corrupt_page(home: Path) -> None:
    lines = [json.dumps({"project": "p", "key": f"k{n}", "summary": f"Pool {n} drains",
                         "body": f"Worker pool {n} drains under load after {n * 7} requests."}
                        ).encode() for n in range(1500)]
    with Service() as service:
        service.import_lines(lines)
    db = home / "memspool.db"
    conn = sqlite3.connect(db)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        # A leaf of an index the status counts never read.
        page = conn.execute("SELECT pageno FROM dbstat WHERE name = 'memory_terms_memory'"
                            " AND pagetype = 'leaf' ORDER BY pageno DESC LIMIT 1"
                            ).fetchone()[0]
    finally:
        conn.close()
    with db.open("r+b") as out:
        out.seek((page - 1) * page_size + 8)
        out.write(b"\xff" * 64)
    doctor = json.loads(run_cli("doctor", "--json", check=False).stdout)
    [store] = [f for f in doctor["findings"] if f["check"] == "store"]
    assert store["level"] == "problem" and "damaged" in store["message"]
    status = json.loads(run_cli("status", "--json").stdout)
    assert status["store"].startswith("damaged:"), status["store"]
    assert "memspool doctor" in status["store"] and status["memories"] == 1500
    shown = run_cli("status").stdout.decode()
    assert "store:             damaged:" in shown
