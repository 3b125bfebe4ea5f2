"""The capture verb: a payload distilled into notes, reconciled with memory.

One code path for every caller (``memspool capture``, MCP ``capture``,
``POST /capture`` through :mod:`memspool.service`): the payload is checked
and distilled (:mod:`memspool.distill.payload`), then its notes are
reconciled (:mod:`memspool.archivist.reconcile`) in one transaction, with a
JSON report. A dry run does the same work and keeps nothing.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from memspool.archivist.reconcile import DEFAULT_SOURCE, LLM, CaptureReport, Origin, save_notes
from memspool.base.errors import PayloadError
from memspool.base.project import project_name
from memspool.config import Config
from memspool.distill.llm import LlmOptions
from memspool.distill.payload import check_payload, distil, note_cap
from memspool.distill.similarity import Profiles
from memspool.untrusted import printable

__all__ = ["CaptureOptions", "capture", "manual_origin"]


def _check_slice_id(conn: sqlite3.Connection, slice_id: int | None) -> None:
    if slice_id is None:
        return
    row = conn.execute("SELECT 1 FROM slices WHERE id = ?", (slice_id,)).fetchone()
    if row is None:
        raise PayloadError(
            f"Slice {slice_id} is not in the queue; provenance must name a real slice."
        )


@dataclasses.dataclass(frozen=True)
class CaptureOptions:
    """How one capture runs, apart from what it captures and where it lands.

    ``dry_run``: do the work, keep nothing. ``max_entities``: lower the cap
    on notes (never raise it). ``passive``: only learnings sections' items,
    as ``passive`` memories. ``llm``: ask a model first, fall back to the
    rules on any failure. ``now`` (epoch seconds) is for tests;
    ``profiles`` is the caller's similarity cache.
    """

    dry_run: bool = False
    #: Checked by the capture (distill.payload.note_cap), whatever a front end passed.
    max_entities: object = None
    passive: bool = False
    llm: LlmOptions | None = None
    now: float | None = None
    profiles: Profiles | None = None


def capture(
    text: str,
    *,
    config: Config,
    conn: sqlite3.Connection,
    origin: Origin | None = None,
    options: CaptureOptions | None = None,
) -> CaptureReport:
    """Distil ``text`` into notes and reconcile them with the project's memory.

    ``origin`` says where the notes belong and come from; without one they
    go to the current folder's project, session ``manual-save-<project>``,
    source ``manual`` (see :func:`manual_origin`). ``options``: see
    :class:`CaptureOptions`.
    Raises :class:`~memspool.base.errors.PayloadError` for an empty or oversized
    payload or a bad ``max_entities`` / ``origin.slice_id``,
    :class:`~memspool.base.errors.StoreError` when the store refuses the writes
    (then nothing of the call is kept).
    """
    options = options or CaptureOptions()
    check_payload(text)
    # As memory will keep it: escape sequences out before notes, keys and the
    # report are made of it ("[31m" would split a word and name a key); a payload
    # of nothing else is empty.
    text = printable(text)
    check_payload(text)
    cap = note_cap(options.max_entities)
    origin = origin or manual_origin()
    _check_slice_id(conn, origin.slice_id)
    report = CaptureReport(dry_run=options.dry_run, passive=options.passive)
    # The model is asked before any lock is taken: a slow model must not hold
    # the store's write lock against the drainer.
    distilled = distil(text, config=config, passive=options.passive, llm=options.llm, cap=cap)
    if distilled.llm:
        report.distiller = LLM
    report.llm_fallback = distilled.llm_fallback
    save_notes(distilled.notes, config=config, conn=conn, origin=origin, report=report,
               cap=cap, now=options.now, profiles=options.profiles)
    return report


def manual_origin(project: str | None = None, session: str | None = None,
                  source: str | None = None, slice_id: int | None = None) -> Origin:
    """Where a capture's notes go when the caller names only some of it: the
    current folder's project, session ``manual-save-<project>``, source ``manual``."""
    project = project or project_name(Path.cwd())
    return Origin(project=project, session=session or f"manual-save-{project}",
                  source=source or DEFAULT_SOURCE, slice_id=slice_id)
