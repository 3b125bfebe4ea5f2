"""Upkeep: what a drainer does while the spool is empty: digest, render, embed, sync.

The ingest stage (``memspool.drainer.daemon``) turns frames into slices and
imports nothing from the rooms after it; the process modes
(``memspool.drainer.modes``, ``memspool.drainer.backfill``) hand it an
:class:`Upkeep` (its ``IdleWork``), which runs the archivist's minor pass over queued slices,
renders the context blocks that changed, embeds memories for semantic recall
and syncs shared projects with the team server. Draining always comes first:
every pass stops as soon as a hook appends a frame or the drainer is told to
stop. A failure is logged, never fatal: the work waits for the next pass or
``memspool maintain``.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from memspool.archivist import digest
from memspool.base.errors import ConfigError, TeamError
from memspool.distill.similarity import Profiles
from memspool.drainer.daemon import Drainer, log
from memspool.recall import render_dirty
from memspool.recall.embed import semantic_state
from memspool.recall.vectors import VectorIndex
from memspool.redact import redact
from memspool.store import vectors as vector_rows
from memspool.team.sync import due as team_sync_due
from memspool.team.sync import index_waiting as team_index_waiting
from memspool.team.sync import sync as team_sync

__all__ = ["Upkeep"]


class Upkeep:
    """Digest, render, embed and sync for one drainer; what it keeps between passes
    (word profiles, the vector index, team connection pools) lives here."""

    def __init__(self) -> None:
        self._profiles = Profiles()
        self._vectors: VectorIndex | None = None
        self._semantic_broken = False
        #: Connection pools to team servers, kept while the drainer runs.
        self._team_pools: dict[str, Any] = {}

    def __call__(self, drainer: Drainer) -> int:
        """Turn queued slices into memory for at most ``digest_budget_secs``.

        Runs only when the spool is empty. What is left of the budget embeds
        the memories waiting for a vector (:meth:`embed`), then shared
        projects sync (:meth:`sync_team`). Returns the slices digested.
        """
        config = drainer.config
        budget = config.digest_budget_secs
        if budget <= 0 or drainer.spool.has_pending():
            return 0
        started = time.monotonic()
        try:
            report = digest(drainer.conn, config, budget_secs=budget, profiles=self._profiles,
                            should_stop=lambda: drainer.stopping or drainer.spool.has_pending())
        except Exception:
            log.exception("digesting queued slices failed; they stay queued")
            return 0
        if report.slices:
            log.info("digested %d slice(s): %d new memories, %d updated, %d merged",
                     report.slices, report.created, report.updated, report.merged)
            try:
                render_dirty(drainer.conn, config.context_max_chars)
            except Exception:
                log.exception("rendering the context blocks failed; the next write retries")
        self.embed(drainer, budget - (time.monotonic() - started))
        self.sync_team(drainer)
        return report.slices

    def sync_team(self, drainer: Drainer, now: float | None = None) -> bool:
        """Sync shared projects with the team server when a sync is due and the spool
        is empty. A server that is down costs one connect time-out, then a longer wait
        before the next try; local work never waits for it. Returns whether it synced."""
        now = time.time() if now is None else now
        try:
            if drainer.stopping or drainer.spool.has_pending():
                return False
            team_index_waiting(drainer.conn, budget_secs=drainer.config.digest_budget_secs)
            if not team_sync_due(drainer.conn, drainer.config, now=now):
                return False
            report = team_sync(drainer.conn, drainer.config, pools=self._team_pools)
        except TeamError as exc:
            log.warning("team sync failed (local memory is unaffected; changes wait in the "
                        "outbox): %s", redact(str(exc))[0])
            return False
        except Exception:
            log.exception("team sync failed; changes wait in the outbox")
            return False
        if report.push.pushed or report.pull.changes:
            log.info("team sync: pushed %d, pulled %d changes, %d waiting",
                     report.push.pushed, report.pull.changes, report.pending)
        return True

    def embed(self, drainer: Drainer, budget: float) -> int:
        """With semantic recall on, embed the memories waiting for a vector (within
        ``budget`` seconds, stopped by a new frame) and write a new vector set when
        the last one fell behind and the spool is still empty.

        The model loads only when something waits. A failure is logged: the
        memories stay queued for the next pass or ``memspool maintain``.
        """
        config, conn = drainer.config, drainer.conn
        try:
            if (budget <= 0 or not semantic_state(config, load=False).on
                    or vector_rows.pending_count(conn) == 0):
                return 0
            if self._semantic_broken:
                return 0
            try:
                encoder = semantic_state(config).encoder
            except ConfigError as exc:
                # Said once per drainer: `memspool status` and `doctor` say it too.
                self._semantic_broken = True
                log.warning("semantic recall is off for this drainer: %s", exc)
                return 0
            if encoder is None:
                return 0
            if self._vectors is None or self._vectors.encoder is not encoder:
                self._vectors = VectorIndex(config.home, encoder)
            done = self._vectors.embed(conn, budget_secs=budget,
                                       should_stop=lambda: drainer.stopping
                                       or drainer.spool.has_pending())
            if not (drainer.stopping or drainer.spool.has_pending()):
                self._vectors.refresh(conn)
        except Exception:
            log.exception("embedding memories failed; they wait for the next pass")
            return 0
        if done:
            log.info("embedded %d memories for semantic recall", done)
        return done

    def close(self) -> None:
        """Close the team connection pools (the drainer's ``shutdown`` calls it)."""
        for pool in self._team_pools.values():
            with contextlib.suppress(Exception):
                pool.close()
        self._team_pools.clear()
