"""The operations every front end calls: the CLI today, the MCP server and HTTP API later.

One :class:`Service` per home. It opens the store on first use and keeps the
connection (a warm server reuses it; a CLI command closes it on exit), so
every front end gives the same answer for the same call. Search, context
and forget arrive with recall and the archivist; until then only the
operations below exist.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from memspool.config import Config, load_config
from memspool.distill import CaptureReport, LlmOptions, capture
from memspool.distill.similarity import Profiles
from memspool.drainer.lock import drainer_running
from memspool.errors import NotFound
from memspool.install import default_settings_path, installed_events
from memspool.spool import Spool
from memspool.spool.segments import QUARANTINE_DIR
from memspool.store import connect, get_state
from memspool.store import memories as memory_rows
from memspool.store.slices import list_slices, slice_text

__all__ = ["Service"]


class Service:
    """memspool's operations on one home."""

    def __init__(self, home: Path | None = None, *, env: Mapping[str, str] | None = None) -> None:
        self.config: Config = load_config(home, env)
        self._conn: sqlite3.Connection | None = None
        #: Near-duplicate profiles of this store's texts, bounded (see Profiles).
        self.profiles = Profiles()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.config)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Service:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- memory ---------------------------------------------------------------

    def capture(
        self,
        text: str,
        *,
        project: str | None = None,
        session: str | None = None,
        source: str | None = None,
        dry_run: bool = False,
        max_entities: int | None = None,
        passive: bool = False,
        llm: LlmOptions | None = None,
    ) -> CaptureReport:
        """The capture verb: distil ``text`` into notes and reconcile them with memory."""
        return capture(text, config=self.config, conn=self.conn, project=project,
                       session=session, source=source, dry_run=dry_run,
                       max_entities=max_entities, passive=passive, llm=llm,
                       profiles=self.profiles)

    def get(self, memory_id: int) -> dict[str, Any]:
        """One memory with its provenance; :class:`~memspool.errors.NotFound` if absent."""
        found = memory_rows.get(self.conn, memory_id)
        if found is None:
            raise NotFound(f"No memory with id {memory_id}.")
        return {
            **found.__dict__,
            "provenance": [p.__dict__ for p in memory_rows.provenance(self.conn, memory_id)],
        }

    # -- the queue --------------------------------------------------------------

    def slices(self, *, session: str | None = None, limit: int = 50,
               queued_only: bool = False) -> list[dict[str, Any]]:
        """Slices, newest first."""
        return list_slices(self.conn, session=session, limit=limit, queued_only=queued_only)

    def slice_text(self, slice_id: int) -> str:
        """The stored, redacted text of one slice."""
        return slice_text(self.conn, slice_id)

    # -- status -----------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Spool backlog, drainer, hooks, queue, sessions, last drain and error."""
        config = self.config
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
        conn = self.conn

        def one(sql: str) -> int:
            """The single number a ``SELECT count(...)`` returns."""
            return int(conn.execute(sql).fetchone()[0])

        status["slices_queued"] = one("SELECT count(*) FROM slices WHERE digested_at IS NULL")
        status["slices_total"] = one("SELECT count(*) FROM slices")
        status["sessions_tracked"] = one("SELECT count(DISTINCT session_id) FROM cursors")
        status["slices_held_back"] = one(
            "SELECT count(*) FROM cursors WHERE held_since IS NOT NULL")
        status["transcripts_missing"] = one(
            "SELECT count(*) FROM cursors WHERE missing_since IS NOT NULL")
        status["memories"] = one("SELECT count(*) FROM memories")
        last = get_state(conn, "last_drain")
        status["last_drain"] = float(last) if last else None
        status["last_error"] = get_state(conn, "last_error")
        hook_log = config.hook_log_path
        status["hook_errors"] = 0
        if hook_log.exists():
            with hook_log.open("rb") as lines:
                status["hook_errors"] = sum(1 for _ in lines)
        return status
