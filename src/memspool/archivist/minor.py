"""The minor pass: undigested slices, oldest first, become memory.

Each slice is read back as a conversation; the claim model
(:mod:`memspool.distill.transcript`) or, when asked, an LLM picks the
durable notes; reconciliation (:mod:`memspool.archivist.reconcile`) stores
them with provenance (session, slice, project, time). Writing a slice's memories and marking it
digested is one transaction (docs/architecture.md, invariant 3): a crash in
between leaves the slice queued and no memory of it, so it is digested again,
exactly once.

The pass is bounded: batches of slices, a time budget, and a ``should_stop``
callback the drainer uses to hand the process back to draining the moment
a hook appends a frame.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Callable
from typing import Final

from memspool.archivist.reconcile import CaptureReport, Origin, save_notes
from memspool.config import Config
from memspool.distill import LlmError, LlmOptions
from memspool.distill.llm import distill_with_llm
from memspool.distill.messages import messages
from memspool.distill.note import Note
from memspool.distill.similarity import Profiles
from memspool.distill.transcript import notes_of as transcript_notes_of
from memspool.redact import redact
from memspool.store import transaction
from memspool.store.slices import mark_digested, queued, slice_text
from memspool.untrusted import printable

__all__ = ["BATCH", "SOURCE", "DigestReport", "digest", "notes_of"]

#: Slices read from the queue per query.
BATCH: Final = 50
#: The provenance source of memories the minor pass writes.
SOURCE: Final = "transcript"


@dataclasses.dataclass
class DigestReport:
    """What one minor pass did."""

    slices: int = 0
    created: int = 0
    updated: int = 0
    merged: int = 0
    superseded: int = 0
    skipped: int = 0
    dropped: int = 0
    #: Slices that gave no memory, with the reason (id, reason).
    without_memory: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    llm_fallbacks: int = 0
    #: Stopped by the budget or the caller before the queue was empty.
    stopped_early: bool = False

    def add(self, report: CaptureReport) -> None:
        self.created += report.count("created")
        self.updated += report.count("updated")
        self.merged += report.count("merged")
        self.superseded += report.superseded
        self.skipped += report.count("skipped")
        self.dropped += report.dropped

    def as_dict(self) -> dict[str, object]:
        return {
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
            "without_memory": [{"slice": i, "reason": r} for i, r in self.without_memory],
        }


def notes_of(text: str, *, subagent: bool = False) -> tuple[list[Note], str]:
    """The notes of one slice's text by the claim model (the durable ones, and those
    kept only where they replace or restate a memory), redacted again (a summary
    joins sentences), and, when none is durable, why (for the report).
    ``subagent``: the slice is a subagent's, whose prompts are its parent's task."""
    notes, reason = transcript_notes_of(printable(text), subagent=subagent)
    return [_redacted(note) for note in notes], reason


def _redacted(note: Note) -> Note:
    return dataclasses.replace(note, summary=redact(note.summary)[0], body=redact(note.body)[0])


def _conversation(text: str) -> str:
    """What an LLM is shown of a slice: the prompts and answers, not tools or thinking."""
    return "\n\n".join(f"{m.role}: {m.text}" for m in messages(text)
                       if m.role in ("user", "assistant"))


def digest(  # noqa: PLR0913 - the pass's budgets, keyword-only
    conn: sqlite3.Connection,
    config: Config,
    *,
    budget_secs: float | None = None,
    max_slices: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    llm: LlmOptions | None = None,
    profiles: Profiles | None = None,
    now: Callable[[], float] = time.time,
) -> DigestReport:
    """Digest queued slices, oldest first, until the queue is empty or a bound is hit."""
    report = DigestReport()
    deadline = None if budget_secs is None else time.monotonic() + budget_secs
    profiles = profiles if profiles is not None else Profiles()
    while True:
        batch = queued(conn, BATCH)
        if not batch:
            return report
        for row in batch:
            out_of_time = deadline is not None and time.monotonic() >= deadline
            if (out_of_time or (should_stop is not None and should_stop())
                    or (max_slices is not None and report.slices >= max_slices)):
                report.stopped_early = True
                return report
            _digest_one(conn, config, row, report, llm=llm, profiles=profiles, at=now())


def _digest_one(conn: sqlite3.Connection, config: Config, row: dict[str, object],  # noqa: PLR0913 - one pass's state, private
                report: DigestReport, *, llm: LlmOptions | None, profiles: Profiles,
                at: float) -> None:
    slice_id = int(str(row["id"]))
    try:
        text = slice_text(conn, slice_id)
        notes, reason = notes_of(text, subagent=bool(row.get("agent_id")))
    except sqlite3.Error:
        raise
    except Exception as exc:  # noqa: BLE001 - one unreadable slice must not hold up the queue
        text, notes, reason = "", [], f"unreadable: {exc}"
    if llm is not None and text:
        # Asked before the write lock is taken: a slow model must not hold it.
        try:
            notes = distill_with_llm(_conversation(text), llm, config, 20)
            reason = "" if notes else "the model found nothing durable"
        except LlmError:
            report.llm_fallbacks += 1
    capture = CaptureReport(dry_run=False)
    with transaction(conn):
        if not mark_digested(conn, slice_id, at, reason):
            return  # another process digested it meanwhile
        if notes:
            origin = Origin(project=str(row["project"]), session=str(row["session_id"]),
                            source=SOURCE, slice_id=slice_id)
            # Every note of the slice: the distiller caps each message's, and a
            # backfilled session is one slice of many messages.
            save_notes(notes, config=config, conn=conn, origin=origin, report=capture,
                       cap=len(notes), now=at, profiles=profiles)
    report.slices += 1
    report.add(capture)
    if not notes:
        report.without_memory.append((slice_id, reason))
