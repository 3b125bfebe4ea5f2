"""The major pass (``memspool maintain``): keep memory true, looking only at what changed.

Scoped to the delta: the memories changed since the last pass (by the
``memories_changed`` index, resuming where the last pass stopped) and the
ones whose promotion or archiving fell due (by their own indexes). For each
changed memory still in recall, its candidates (memories of the project
sharing its rarer terms) are compared with it:

- the same headline with other text (siblings): one memory remains, with
  the newer text; the other text goes to its history;
- the same fact (:func:`~memspool.distill.similarity.relate` says ``same``
  or ``more``): folded into the older memory, which takes the newer text
  when it says all the older says and more, or gains it after its own when
  it says the fact with more besides; its history and provenance move along;
- a new value or a contradiction (the same subject with another number,
  flag or name, the opposite polarity, an antonym, a preference reversed):
  the newer wins, the older is ``superseded`` and points at it; both keep
  their history. The newer is the one said last when that differs from the
  row made last and reads as the new value that way round too: a memory that
  took in a later session's words is that session's.

Then the rules of :mod:`memspool.archivist.lifecycle` set its confidence,
promote it when two sessions agree, and schedule its promotion and decay.
The report says what each step did.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
import time
from typing import Final

from memspool.archivist import lifecycle
from memspool.archivist.recalls import SEARCHES, recalled
from memspool.archivist.reconcile import (
    CANDIDATE_MIN_SHARED,
    joined,
    memory_lines,
    with_the_rest,
)
from memspool.archivist.transfer import IMPORT_SESSION
from memspool.config import Config
from memspool.distill.similarity import Profiles, Verdict, index_terms, lookup_terms, relate
from memspool.store import get_state, set_state, transaction
from memspool.store import memories as memory_rows
from memspool.store.memories import Memory

__all__ = ["MaintainReport", "last_report", "maintain"]

#: Memories looked at per transaction; each batch commits on its own.
BATCH: Final = 200
#: Candidates compared with each changed memory (the minor pass compares
#: CANDIDATES_PER_NOTE with each note).
CANDIDATES_PER_MEMORY: Final = 20
_STATE_AT: Final = "maintain_at"
_STATE_ID: Final = "maintain_id"
_STATE_REPORT: Final = "maintain_report"


@dataclasses.dataclass
class MaintainReport:
    """What one major pass did, step by step."""

    #: Memories whose recall (search, show, the recall hook) moved their decay clock.
    recalled: int = 0
    examined: int = 0
    siblings: int = 0
    merged: int = 0
    superseded: int = 0
    corroborated: int = 0
    promoted: int = 0
    archived: int = 0
    started_at: float = 0.0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


def maintain(conn: sqlite3.Connection, config: Config, *, now: float | None = None,
             profiles: Profiles | None = None) -> MaintainReport:
    """Run one major pass over what changed or fell due since the last one."""
    started = time.monotonic()
    now = time.time() if now is None else now
    profiles = profiles if profiles is not None else Profiles()
    report = MaintainReport(started_at=now)
    report.recalled = _apply_recalls(conn, config)
    since = float(get_state(conn, _STATE_AT) or "-1")
    after_id = int(get_state(conn, _STATE_ID) or "0")
    while True:
        # Rows this pass changes carry a later time and wait for the next pass.
        batch = memory_rows.changed_since(conn, since, after_id, now, BATCH)
        if not batch:
            break
        with transaction(conn):
            for changed in batch:
                _consolidate(conn, config, changed.id, report, now=now, profiles=profiles)
            since, after_id = batch[-1].updated_at, batch[-1].id
            set_state(conn, _STATE_AT, repr(since))
            set_state(conn, _STATE_ID, str(after_id))
    with transaction(conn):
        for due in memory_rows.due(conn, "promote_at", now, 10_000):
            memory_rows.set_standing(conn, due.id, layer="canonical")
            report.promoted += 1
        for due in memory_rows.due(conn, "archive_at", now, 10_000):
            if lifecycle.importance_now(due, config, now) < config.archive_floor:
                memory_rows.set_standing(conn, due.id, layer="archived")
                report.archived += 1
            else:  # recalled since it was scheduled: look again later
                memory_rows.set_standing(conn, due.id, archive_at=lifecycle.archive_at(due, config))
        report.seconds = round(time.monotonic() - started, 6)
        set_state(conn, _STATE_REPORT, json.dumps(report.as_dict()))
    return report


def last_report(conn: sqlite3.Connection) -> dict[str, float | int] | None:
    """The report of the last pass, as stored, or ``None`` before the first."""
    raw = get_state(conn, _STATE_REPORT)
    if raw is None:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None


def _consolidate(conn: sqlite3.Connection, config: Config, memory_id: int,  # noqa: PLR0913 - one pass's state, private
                 report: MaintainReport, *, now: float, profiles: Profiles) -> None:
    # One changed memory against the rest of its project (the minor pass's
    # reconciliation, memspool.archivist.reconcile, meets notes instead).
    memory = memory_rows.get(conn, memory_id)
    if memory is None or not memory.live:
        return  # folded into another, or left recall, earlier in this pass
    report.examined += 1
    for sibling in memory_rows.same_summary(conn, memory):
        # The same headline captured twice with other text: one memory remains,
        # with the newer text (a person's correction over any session's); the older
        # text is kept in its history.
        older, newer = sorted((memory, sibling), key=lambda m: (
            memory_rows.edited(conn, m.id), m.updated_at, m.id))
        keep = min(memory.id, sibling.id)
        survivor = memory_rows.get(conn, keep)
        other = memory_rows.get(conn, sibling.id if keep == memory.id else memory.id)
        if survivor is None or other is None:
            continue
        if newer.id != keep:
            memory_rows.replace_text(conn, survivor, type=newer.type, summary=newer.summary,
                                     body=newer.body,
                                     terms=index_terms(newer.body, profiles=profiles),
                                     at=now, reason="sibling",
                                     person=memory_rows.marks(conn, newer.id)[1])
            survivor = memory_rows.get(conn, keep) or survivor
        memory_rows.absorb(conn, survivor, other, at=now, reason="sibling")
        report.siblings += 1
        memory = memory_rows.get(conn, keep) or survivor
    found = memory_rows.candidates(conn, memory.project, lookup_terms(memory.body, profiles),
                            min_shared=CANDIDATE_MIN_SHARED, limit=CANDIDATES_PER_MEMORY)
    for other in found:
        if other.id == memory.id:
            continue
        older, newer = sorted((memory, other), key=lambda m: (m.created_at, m.id))
        verdict = relate(older.body, newer.body, profiles)
        if verdict.agrees:
            _fold(conn, older, newer, now, profiles, reason="merged",
                  take_newer=verdict.relation == "more")
            report.merged += 1
        elif (moved := _moved(conn, older, newer, verdict, profiles)) is not None:
            # A new value from another session (within one, texts alike but for a
            # number are siblings; see archivist/reconcile.py).
            stale, current = moved
            _carry_the_rest(conn, stale, current, now, profiles)
            memory_rows.supersede(conn, stale, by=current.id, at=now)
            report.superseded += 1
        else:
            continue
        survivor = memory_rows.get(conn, older.id if older.live else newer.id)
        if survivor is None or not survivor.live:
            return
        memory = survivor
    _settle(conn, config, memory, report)


def _moved(conn: sqlite3.Connection, older: Memory, newer: Memory, verdict: Verdict,
           profiles: Profiles) -> tuple[Memory, Memory] | None:
    """(the memory whose value is stale, the one that replaces it), when one gives the
    other's subject a new value in another session (``verdict``: the newer row's text
    related to the older's). The value said last wins, not the row made last: a
    memory that took in a later session's words (folded into it, or merged) states
    what that session said ("`objectCacheMax=768m`" joined to the first session's
    memory of the heap) over a row another session made before, when its text is the
    other's new value read that way round too."""
    if not verdict.replaces:
        return None
    stale, current = older, newer
    if memory_rows.said_at(conn, older, unsaid=IMPORT_SESSION) \
            > memory_rows.said_at(conn, newer, unsaid=IMPORT_SESSION) \
            and relate(newer.body, older.body, profiles).replaces:
        stale, current = newer, older
    if not memory_rows.sessions_of(conn, stale.id).isdisjoint(
            memory_rows.sessions_of(conn, current.id)):
        return None
    return stale, current


def _carry_the_rest(conn: sqlite3.Connection, stale: Memory, current: Memory, now: float,
                    profiles: Profiles) -> None:
    """``current`` keeps the lines of ``stale``'s text (one merged note's words each) that
    its new value neither moves nor says again (:func:`with_the_rest`, the minor pass's
    rule): a memory that grew by merges holds other facts beside its value, and they
    stay in recall when the value is replaced."""
    lines = memory_lines(stale)
    if len(lines) < 2 or memory_rows.edited(conn, current.id):
        return  # one line is the value itself; a person's correction keeps its text
    body = with_the_rest(lines, current.body, lambda old, new: relate(old, new, profiles))
    if body is not None:
        memory_rows.replace_text(conn, current, type=current.type, summary=current.summary,
                                 body=body, terms=index_terms(body, profiles=profiles), at=now,
                                 reason="kept the rest of a memory it replaced")


def _apply_recalls(conn: sqlite3.Connection, config: Config) -> int:
    """Move the decay clock of every memory recalled since it was last set."""
    moved = 0
    with transaction(conn):
        for memory_id, at in recalled(config.home).items():
            memory = memory_rows.get(conn, memory_id)
            if memory is None or (memory.recalled_at or 0.0) >= at:
                continue
            memory = dataclasses.replace(memory, recalled_at=at)
            memory_rows.set_standing(conn, memory_id, recalled_at=at,
                                     archive_at=lifecycle.archive_at(memory, config))
            moved += 1
    searches = config.home / "recall" / SEARCHES
    with contextlib.suppress(OSError):
        if searches.is_file() and not searches.is_symlink():
            searches.write_bytes(b"")
    return moved


def _fold(conn: sqlite3.Connection, older: Memory, newer: Memory, now: float,  # noqa: PLR0913 - the pair and how to fold it, private
          profiles: Profiles, *, reason: str, take_newer: bool) -> None:
    """One memory remains: the older row (its id is what others cite), with the newer
    text when it says all the older says and more, or with the newer text after its
    own when that says the same fact with more besides (:func:`joined`). A text a
    person corrected is the one that remains, whichever row it is in."""
    person = memory_rows.marks(conn, newer.id)[1]
    if memory_rows.edited(conn, older.id):
        body = None
    elif person is not None:
        body, take_newer = newer.body, True
    else:
        body = newer.body if take_newer else joined(older.body, newer.body, profiles)
    if body is not None:
        summary, kind = (newer.summary, newer.type) if take_newer else (older.summary, older.type)
        memory_rows.replace_text(conn, older, type=kind, summary=summary, body=body,
                                 terms=index_terms(body, profiles=profiles), at=now,
                                 reason=reason, person=person)
        older = memory_rows.get(conn, older.id) or older
    memory_rows.absorb(conn, older, newer, at=now, reason=reason)


def _settle(conn: sqlite3.Connection, config: Config, memory: Memory,
            report: MaintainReport) -> None:
    """Confidence from corroboration, promotion when sessions agree, the schedule."""
    memory = memory_rows.get(conn, memory.id) or memory
    sessions = memory_rows.count_sessions(conn, memory.id)
    confidence = lifecycle.confidence(sessions)
    if confidence > memory.confidence:
        report.corroborated += 1
    layer = memory.layer
    if layer == "buffer" and sessions >= lifecycle.CANONICAL_SESSIONS:
        layer = "canonical"
        report.promoted += 1
    memory_rows.set_standing(conn, memory.id, layer=layer, confidence=confidence,
                             promote_at=lifecycle.promote_at(memory, config),
                             archive_at=lifecycle.archive_at(memory, config))
