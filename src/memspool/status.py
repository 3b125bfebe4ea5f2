"""What the capture path is doing: spool backlog, queue, sessions, last drain and error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memspool.config import Config
from memspool.install import default_settings_path, installed_events
from memspool.spool import Spool
from memspool.spool.segments import QUARANTINE_DIR
from memspool.store import connect, get_state

__all__ = ["collect_status", "drainer_pid", "drainer_running"]


def drainer_pid(config: Config) -> int | None:
    """The pid of the drainer holding the lock right now, or ``None``.

    Read from the pid file a drainer keeps only while it holds the lock, and
    checked against the process table (a pid reused by something else does
    not count). Taking the lock to probe it would be wrong: a hook that came
    at that moment would think a drainer runs and spawn none.
    """
    try:
        pid = int(config.pid_path.read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    if not Path("/proc/self").exists():  # no procfs: is the process there at all?
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # someone else's process holds that pid: still alive
        return pid
    try:
        return pid if b"memspool" in Path(f"/proc/{pid}/cmdline").read_bytes() else None
    except OSError:
        return None


def drainer_running(config: Config) -> bool:
    """Does a drainer hold the lock right now? (See :func:`drainer_pid`.)"""
    return drainer_pid(config) is not None


def collect_status(config: Config) -> dict[str, Any]:
    frames, pending_bytes = Spool(config.spool_dir).pending()
    quarantine = config.spool_dir / QUARANTINE_DIR
    status: dict[str, Any] = {
        "home": str(config.home),
        "pending_frames": frames,
        "pending_bytes": pending_bytes,
        "quarantined_files": len(list(quarantine.iterdir())) if quarantine.is_dir() else 0,
        "drainer_running": drainer_running(config),
    }
    settings = default_settings_path("user")
    status["hooks_settings"] = str(settings)
    status["hooks_installed"] = installed_events(settings, config.home)
    conn = connect(config)
    try:
        def one(sql: str) -> int:
            """The single number a ``SELECT count(...)`` returns."""
            return int(conn.execute(sql).fetchone()[0])

        status["captures_queued"] = one("SELECT count(*) FROM captures WHERE digested_at IS NULL")
        status["captures_total"] = one("SELECT count(*) FROM captures")
        status["sessions_tracked"] = one("SELECT count(DISTINCT session_id) FROM cursors")
        status["slices_held_back"] = one(
            "SELECT count(*) FROM cursors WHERE held_since IS NOT NULL")
        status["transcripts_missing"] = one(
            "SELECT count(*) FROM cursors WHERE missing_since IS NOT NULL")
        last = get_state(conn, "last_drain")
        status["last_drain"] = float(last) if last else None
        status["last_error"] = get_state(conn, "last_error")
    finally:
        conn.close()
    hook_log = config.hook_log_path
    status["hook_errors"] = 0
    if hook_log.exists():
        with hook_log.open("rb") as lines:
            status["hook_errors"] = sum(1 for _ in lines)
    return status
