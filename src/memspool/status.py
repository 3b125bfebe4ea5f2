"""What the capture path is doing: spool backlog, queue, sessions, last drain and error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memspool.config import Config
from memspool.install import default_settings_path, installed_events
from memspool.spool import Spool
from memspool.store import connect, get_state

__all__ = ["collect_status", "drainer_running"]


def drainer_running(config: Config) -> bool:
    """Does a drainer hold the lock right now?

    Read from the pid file a drainer keeps only while it holds the lock, and
    that process being alive. Taking the lock to probe it would be wrong: a
    hook that came at that moment would think a drainer runs and spawn none.
    """
    try:
        pid = int((config.home / "drainer.pid").read_text(encoding="ascii"))
    except (OSError, ValueError):
        return False
    if not Path("/proc/self").exists():  # no procfs: is the process there at all?
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        return b"memspool" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def collect_status(config: Config) -> dict[str, Any]:
    frames, pending_bytes = Spool(config.spool_dir).pending()
    quarantine = config.spool_dir / "quarantine"
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
    hook_log = config.home / "hook-errors.log"
    status["hook_errors"] = 0
    if hook_log.exists():
        with hook_log.open("rb") as lines:
            status["hook_errors"] = sum(1 for _ in lines)
    return status
