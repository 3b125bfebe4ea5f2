"""The capture verb: a payload distilled into notes, reconciled with memory.

One code path for every caller (``memspool capture``, MCP ``capture``,
``POST /capture`` through :mod:`memspool.service`): the payload is checked
and distilled (:mod:`memspool.distill.payload`), then its notes are
reconciled (:mod:`memspool.archivist.reconcile`) in one transaction, with a
JSON report. A dry run does the same work and keeps nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memspool.archivist.reconcile import DEFAULT_SOURCE, LLM, CaptureReport, Origin, save_notes
from memspool.base.errors import PayloadError
from memspool.base.project import project_name
from memspool.config import Config
from memspool.distill.llm import LlmOptions
from memspool.distill.payload import check_payload, distil, note_cap
from memspool.distill.similarity import Profiles

__all__ = ["capture"]


def _check_slice_id(conn: sqlite3.Connection, slice_id: int | None) -> None:
    if slice_id is None:
        return
    row = conn.execute("SELECT 1 FROM slices WHERE id = ?", (slice_id,)).fetchone()
    if row is None:
        raise PayloadError(
            f"Slice {slice_id} is not in the queue; provenance must name a real slice."
        )


def capture(
    text: str,
    *,
    config: Config,
    conn: sqlite3.Connection,
    project: str | None = None,
    session: str | None = None,
    source: str | None = None,
    slice_id: int | None = None,
    dry_run: bool = False,
    max_entities: int | None = None,
    passive: bool = False,
    llm: LlmOptions | None = None,
    now: float | None = None,
    profiles: Profiles | None = None,
) -> CaptureReport:
    """Distil ``text`` into notes and reconcile them with the project's memory.

    ``project`` defaults to the current folder's project, ``session`` to
    ``manual-save-<project>``, ``source`` to ``manual``. ``passive`` takes
    only learnings sections' items, as ``passive`` memories. ``llm`` asks a
    model first and falls back to the rules on any failure. ``now`` (epoch
    seconds) is for tests. ``profiles`` is the caller's similarity cache.
    Raises :class:`~memspool.base.errors.PayloadError` for an empty or oversized
    payload or a bad ``max_entities`` / ``slice_id``,
    :class:`~memspool.base.errors.StoreError` when the store refuses the writes
    (then nothing of the call is kept).
    """
    check_payload(text)
    cap = note_cap(max_entities)
    project = project or project_name(Path.cwd())
    _check_slice_id(conn, slice_id)
    report = CaptureReport(dry_run=dry_run, passive=passive)
    # The model is asked before any lock is taken: a slow model must not hold
    # the store's write lock against the drainer.
    distilled = distil(text, config=config, passive=passive, llm=llm, cap=cap)
    if distilled.llm:
        report.distiller = LLM
    report.llm_fallback = distilled.llm_fallback
    origin = Origin(project=project, session=session or f"manual-save-{project}",
                    source=source or DEFAULT_SOURCE, slice_id=slice_id)
    save_notes(distilled.notes, config=config, conn=conn, origin=origin, report=report,
               cap=cap, now=now, profiles=profiles)
    return report
