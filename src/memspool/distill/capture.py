"""The capture verb: distil a payload into notes and reconcile them with memory.

One code path for every caller (``memspool capture`` through
``memspool.service``). A caller digesting a queued slice passes its
``slice_id`` and calls from inside its own transaction, so the slice is
marked digested in the same commit as its memories.

For each note, in payload order, up to the cap:

1. its key was already seen in this payload: ``skipped`` (the first wins);
2. its normalized text was saved in the project within 15 minutes: ``skipped``;
3. a memory of the project has its key: ``updated`` in place;
4. an indexed candidate is a near-duplicate: ``merged`` (one more
   corroboration; the body is replaced only when the new text says all the
   old one said, and more);
5. else ``created`` as provisional memory (layer buffer, importance 0.6).

A key says which memory a note revises only when the texts are one fact (a
rewording, or the old text with more said): a first line is often a generic
heading ("## Decision"), and a different fact under it must not overwrite or
be skipped for the one already there. Such a note takes a key of its own
(:func:`~memspool.distill.keys.distinct_key`) in steps 1 and 3.

Every save adds provenance (session, source, capture id, text hash). All
writes of one call commit together; a dry run does the same work inside a
transaction it rolls back, so it reports exactly the actions a real run
would take and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from pathlib import Path
from typing import Final

from memspool.config import Config
from memspool.distill.keys import distinct_key, text_hash
from memspool.distill.llm import LlmError, LlmOptions, distill_with_llm
from memspool.distill.note import Note
from memspool.distill.similarity import (
    MIN_SHARED_TERMS,
    Profiles,
    adds_detail,
    compare,
    index_terms,
    query_terms,
)
from memspool.distill.split import learnings_items, scrub, split_payload
from memspool.errors import PayloadError, StoreError
from memspool.project import project_name
from memspool.redact import redact
from memspool.store import diagnose
from memspool.store import memories as memory
from memspool.store.kinds import Action, NoteType

__all__ = [
    "DUPLICATE_WINDOW_SECS",
    "MAX_NOTES",
    "MAX_PAYLOAD_BYTES",
    "CaptureReport",
    "NoteOutcome",
    "capture",
    "save_notes",
]

#: The most one payload may hold (4 MiB); larger input is refused, not truncated.
MAX_PAYLOAD_BYTES: Final = 4 * 1024 * 1024
#: docs/distill.md, The rules: at most 20 notes per invocation; callers may only lower it.
MAX_NOTES: Final = 20
#: docs/distill.md, The rules: the same normalized text saved within 15 minutes is skipped.
DUPLICATE_WINDOW_SECS: Final = 15 * 60
#: Near-duplicate comparisons per note. The index ranks candidates by shared
#: terms, so a true duplicate, if there is one, is among the first few.
CANDIDATES_PER_NOTE: Final = 8
#: Candidates must share this many terms with the note; one fewer than the
#: comparison's own floor, since compounds ("file systems") join only when compared.
CANDIDATE_MIN_SHARED: Final = MIN_SHARED_TERMS - 1
DEFAULT_SOURCE: Final = "manual"
RULE_BASED: Final = "rule_based"
LLM: Final = "llm"

CREATED: Final[Action] = "created"
UPDATED: Final[Action] = "updated"
MERGED: Final[Action] = "merged"
SKIPPED: Final[Action] = "skipped"


@dataclasses.dataclass(frozen=True)
class NoteOutcome:
    """What happened to one note, told by the memory it landed in (for ``merged`` and
    ``skipped``, the existing memory's key, type and summary). ``id`` is None for a
    memory a dry run would create."""

    id: int | None
    key: str
    type: NoteType
    summary: str
    action: Action


@dataclasses.dataclass
class CaptureReport:
    """The result of one capture; :meth:`as_dict` is the JSON of docs/distill.md, The report."""

    dry_run: bool
    distiller: str = RULE_BASED
    llm_fallback: str | None = None
    passive: bool = False
    captured: int = 0
    dropped: int = 0
    candidates: int = 0
    notes: list[NoteOutcome] = dataclasses.field(default_factory=list)

    def count(self, action: Action) -> int:
        return sum(1 for note in self.notes if note.action == action)

    def as_dict(self) -> dict[str, object]:
        report: dict[str, object] = {
            "ok": True,
            "captured": self.captured,
            "created": self.count(CREATED),
            "updated": self.count(UPDATED),
            "merged": self.count(MERGED),
            "skipped": self.count(SKIPPED),
            "dropped": self.dropped,
            "candidates": self.candidates,
            "dry_run": self.dry_run,
            "distiller": self.distiller,
        }
        if self.llm_fallback is not None:
            report["llm_fallback"] = self.llm_fallback
        report["notes"] = [dataclasses.asdict(note) for note in self.notes]
        return report

    def passive_counts(self) -> dict[str, int]:
        """The mem_capture_passive answer: items saved (new or updated), skipped, found.

        An item merged into a memory that already held its fact added nothing,
        so it counts as skipped, like an exact re-capture; items over the cap too.
        """
        saved = self.count(CREATED) + self.count(UPDATED)
        return {"saved": saved, "skipped": self.captured - saved, "total": self.captured}

    def to_json(self) -> str:
        """The report as printed by ``memspool capture`` (the passive answer for ``--passive``)."""
        return json.dumps(self.passive_counts() if self.passive else self.as_dict(), indent=2)


@dataclasses.dataclass
class _Context:
    conn: sqlite3.Connection
    project: str
    session: str
    source: str
    slice_id: int | None
    now: float
    dry_run: bool
    report: CaptureReport
    profiles: Profiles
    #: Keys this payload's notes landed on: the memory's id and the first note's text.
    seen_keys: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)
    created_ids: set[int] = dataclasses.field(default_factory=set)

    def terms(self, body: str) -> list[str]:
        """The terms a memory with this text is indexed under."""
        return index_terms(body, profiles=self.profiles)

    def shown_id(self, memory_id: int) -> int | None:
        # A dry run rolls back what it created: such an id will not exist.
        return None if self.dry_run and memory_id in self.created_ids else memory_id


def _check_payload(text: str) -> None:
    if not isinstance(text, str):
        raise PayloadError(f"A capture payload must be text, got {type(text).__name__}.")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadError(
            f"The payload has {size} bytes, more than the {MAX_PAYLOAD_BYTES} (4 MiB) one capture "
            f"takes. Split it into smaller captures."
        )
    if not text.strip():
        raise PayloadError("The payload is empty: there is nothing to capture.")


def _note_cap(max_entities: int | None) -> int:
    if max_entities is None:
        return MAX_NOTES
    if isinstance(max_entities, bool) or not isinstance(max_entities, int) or max_entities < 1:
        raise PayloadError(
            f"max_entities must be a whole number from 1 to {MAX_NOTES}, got {max_entities!r}."
        )
    return min(max_entities, MAX_NOTES)


def _check_slice_id(conn: sqlite3.Connection, slice_id: int | None) -> None:
    if slice_id is None:
        return
    row = conn.execute("SELECT 1 FROM slices WHERE id = ?", (slice_id,)).fetchone()
    if row is None:
        raise PayloadError(
            f"Slice {slice_id} is not in the queue; provenance must name a real slice."
        )


def _save(ctx: _Context, memory_id: int, action: Action, note: Note) -> None:
    memory.add_provenance(ctx.conn, memory.Provenance(
        memory_id=memory_id, action=action, session=ctx.session, source=ctx.source,
        slice_id=ctx.slice_id, text_hash=text_hash(note.body), at=ctx.now,
    ))


def _landed(ctx: _Context, found: memory.Memory, action: Action) -> NoteOutcome:
    """The outcome of a note that landed in an existing memory: that memory's identity."""
    return NoteOutcome(id=ctx.shown_id(found.id), key=found.key, type=found.type,
                       summary=found.summary, action=action)


def _revises(ctx: _Context, old: str, new: str) -> bool:
    """True when ``new`` is the fact ``old`` holds: reworded, or all of it and more."""
    return compare(old, new, ctx.profiles).duplicate or adds_detail(old, new, ctx.profiles)


def _reconcile(ctx: _Context, note: Note) -> NoteOutcome:
    key = note.key
    seen = ctx.seen_keys.get(key)
    if seen is not None and not _revises(ctx, seen[1], note.body):
        key = distinct_key(key, note.body)  # another fact under a key used in this payload
        seen = ctx.seen_keys.get(key)
    if seen is not None:
        return NoteOutcome(id=ctx.shown_id(seen[0]), key=key, type=note.type,
                           summary=note.summary, action=SKIPPED)
    if ctx.slice_id is not None and memory.forgotten(ctx.conn, ctx.project,
                                                      text_hash(note.body)):
        # Forgotten on purpose: digesting a transcript again does not bring
        # it back (a person capturing it by hand does).
        return NoteOutcome(id=None, key=key, type=note.type, summary=note.summary,
                           action=SKIPPED)
    recent = memory.recent_save(ctx.conn, ctx.project, text_hash(note.body),
                                ctx.now - DUPLICATE_WINDOW_SECS)
    if recent is not None:
        ctx.seen_keys[key] = (recent.id, note.body)
        return _landed(ctx, recent, SKIPPED)
    existing = memory.get_by_key(ctx.conn, ctx.project, key)
    if existing is not None and not _revises(ctx, existing.body, note.body):
        # Another fact under the same key: it gets its own key, where this text
        # lands again when it is re-captured.
        key = distinct_key(key, note.body)
        existing = memory.get_by_key(ctx.conn, ctx.project, key)
    if existing is not None:
        memory.update_in_place(ctx.conn, existing, type=note.type, summary=note.summary,
                               body=note.body, terms=ctx.terms(note.body), at=ctx.now)
        _save(ctx, existing.id, UPDATED, note)
        ctx.seen_keys[key] = (existing.id, note.body)
        return NoteOutcome(id=ctx.shown_id(existing.id), key=key, type=note.type,
                           summary=note.summary, action=UPDATED)
    found = memory.candidates(ctx.conn, ctx.project, query_terms(note.body, ctx.profiles),
                              min_shared=CANDIDATE_MIN_SHARED, limit=CANDIDATES_PER_NOTE)
    ctx.report.candidates += len(found)
    for candidate in found:
        if compare(candidate.body, note.body, ctx.profiles).duplicate:
            richer = adds_detail(candidate.body, note.body, ctx.profiles)
            memory.corroborate(ctx.conn, candidate, at=ctx.now,
                               body=note.body if richer else None,
                               terms=ctx.terms(note.body) if richer else ())
            _save(ctx, candidate.id, MERGED, note)
            ctx.seen_keys[key] = (candidate.id, note.body)
            return _landed(ctx, candidate, MERGED)
    memory_id = memory.insert(ctx.conn, project=ctx.project, key=key, type=note.type,
                              summary=note.summary, body=note.body,
                              terms=ctx.terms(note.body), at=ctx.now)
    ctx.created_ids.add(memory_id)
    _save(ctx, memory_id, CREATED, note)
    ctx.seen_keys[key] = (memory_id, note.body)
    return NoteOutcome(id=ctx.shown_id(memory_id), key=key, type=note.type,
                       summary=note.summary, action=CREATED)


def _distil(
    text: str, *, config: Config, passive: bool, llm: LlmOptions | None, cap: int,
    report: CaptureReport,
) -> list[Note]:
    # Redacted again piece by piece, as the reader will see each one: a
    # secret escaped inside a JSON string ("\u0067hp_...") is only
    # recognisable once the record is decoded.
    if passive:
        return [Note.passive(_redacted(item)) for item in learnings_items(text)]
    pieces = [_redacted(piece) for piece in split_payload(text)]
    if llm is not None:
        try:
            notes = distill_with_llm("\n\n".join(pieces), llm, config, cap)
        except LlmError as exc:
            report.llm_fallback = str(exc)
        else:
            report.distiller = LLM
            return notes
    return [Note.from_text(piece) for piece in pieces]


def _redacted(text: str) -> str:
    return redact(text)[0]


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

    ``project`` defaults to the current folder's git root name, ``session``
    to ``manual-save-<project>``, ``source`` to ``manual``. ``passive`` takes
    only learnings sections' items, as ``passive`` memories. ``llm`` asks a
    model first and falls back to the rules on any failure. ``now`` (epoch
    seconds) is for tests. ``profiles`` is the caller's similarity cache (a
    warm process keeps one per store); without it the call uses its own.
    Raises :class:`~memspool.errors.PayloadError` for
    an empty or oversized payload or a bad ``max_entities`` / ``slice_id``,
    :class:`~memspool.errors.StoreError` when the store refuses the writes
    (then nothing of the call is kept).
    """
    _check_payload(text)
    cap = _note_cap(max_entities)
    project = project or project_name(Path.cwd())
    ctx_session = session or f"manual-save-{project}"
    _check_slice_id(conn, slice_id)
    redacted, _ = redact(scrub(text))
    report = CaptureReport(dry_run=dry_run, passive=passive)
    # The model is asked before any lock is taken: a slow model must not hold
    # the store's write lock against the drainer.
    notes = _distil(redacted, config=config, passive=passive, llm=llm, cap=cap, report=report)
    save_notes(notes, config=config, conn=conn, project=project, session=ctx_session,
               source=source, slice_id=slice_id, cap=cap, now=now, profiles=profiles,
               report=report)
    return report


def save_notes(
    notes: list[Note],
    *,
    config: Config,
    conn: sqlite3.Connection,
    project: str,
    session: str,
    source: str | None,
    slice_id: int | None,
    report: CaptureReport,
    cap: int = MAX_NOTES,
    now: float | None = None,
    profiles: Profiles | None = None,
) -> None:
    """Reconcile distilled ``notes`` with the project's memory; fills ``report``.

    The second half of :func:`capture`, for a caller that distilled the notes
    itself (the archivist's transcript rules). Inside the caller's open
    transaction the writes join it; otherwise they commit together.
    """
    report.captured = len(notes)
    report.dropped = max(0, len(notes) - cap)
    ctx = _Context(conn=conn, project=project, session=session, source=source or DEFAULT_SOURCE,
                   slice_id=slice_id, now=time.time() if now is None else now,
                   dry_run=report.dry_run, report=report,
                   profiles=profiles if profiles is not None else Profiles())
    try:
        with memory.unit_of_work(conn, keep=not report.dry_run):
            report.notes = [_reconcile(ctx, note) for note in notes[:cap]]
    except sqlite3.Error as exc:
        raise StoreError(f"{diagnose(config.db_path, exc)} Nothing of this capture was "
                         f"saved.") from exc
