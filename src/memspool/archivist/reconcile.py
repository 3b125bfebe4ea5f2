"""Reconciliation: distilled notes meet the project's memory.

One code path for every writer of distilled notes: the minor pass (a
queued slice's facts), the capture verb and ``save``. For each note, in
order, up to the cap:

1. its key was already used in this call by the same fact: ``skipped``;
2. it was forgotten on purpose (a slice's note only): ``skipped``;
3. its normalized text was saved in the project by the same session within 15
   minutes: ``skipped``;
4. the memory that holds its key, then the memories sharing its rarer terms,
   are compared with it (:func:`memspool.distill.similarity.relate`):

   - the same fact restated: ``merged`` into that memory, one more
     corroboration (a second session counts towards canonical); saying all
     it says and more, the note's text replaces the memory's (the old goes to
     its history); saying it with more besides, a kept note's own words join
     the memory's text, so nothing it said is dropped with the merge. A
     capture or save of other words under the memory's own key is
     ``updated``: the person's new wording replaces the old (kept in history);
   - the same subject with a new value, or contradicted: a new memory,
     ``created``, and the old one is ``superseded`` and points at it (found
     by its key, always; found by its terms, only from another session: in
     one session, texts alike but for a number are siblings, "pool 1" and
     "pool 2"); every other memory of another session that states the old
     value is superseded by it too; a session's new value of a decision or a
     takeaway is of that type, unless it is a person's rule. A merge never
     keeps an older value: a text whose values differ is never merged. A
     memory that grew by merges (one merged note's words a line) gives its
     new value the lines it does not move, so its other facts stay in
     recall; a new value of a line merged into it, not of its own fact,
     supersedes nothing: that line leaves the memory's text and the value
     is a memory of its own;
   - another fact under the same key: the note takes a key of its own;
   - a claim under the keep bar that says a value changed ("went from 5000 to
     10000 ms") is saved as the new value of a memory of an earlier session
     it replaces, which it supersedes (one a text of this session already
     replaced then points at it), or, replacing none, when it writes a
     setting in code with its value ("`copyBatchSize = 20000` now"); one
     that says it is said again ("same as always") only corroborates the
     memory of an earlier session it restates; else either is ``skipped``;
   - none of these, but the note says it restates something said before
     (the assistant's "per your rule", "since you don't want ...", a person's
     "remember ..."): merged into the candidate it restates most closely, at
     a lower bar, the memory's text gaining the restatement's; so is a kept
     note of a later session whose words are mostly an earlier memory's (a
     fact said again in a report of later work);
   - a note of several claims (one a line) of which one says a memory of an
     earlier session again, at the note's bar, beside news
     (:func:`~memspool.distill.similarity.restating_line`; found where the
     whole note restates nothing, or reads as the same fact only because of
     that claim): the claim is merged into the memory, and the rest of the
     note, its context kept, is reconciled as a note of its own: a fact said
     again in one sentence of a report, a person's rule said again beside a
     new request, corroborate without hiding the news in the old memory;

5. else ``created`` as provisional memory (layer buffer).

Every save adds provenance (session, source, slice, text hash). All writes
of one call commit together (inside a caller's transaction they join it);
a dry run does the same work in a transaction it rolls back.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Final

from memspool.base.errors import StoreError
from memspool.base.kinds import Action, NoteType
from memspool.config import Config
from memspool.distill.claim_model import model
from memspool.distill.keys import distinct_key, text_hash
from memspool.distill.note import Note
from memspool.distill.similarity import (
    MIN_SHARED_TERMS,
    PINNED_MIN_DICE,
    RESTATED_MIN_SHARED,
    Profiles,
    RestateBar,
    Verdict,
    index_terms,
    lookup_terms,
    moves_a_setting,
    names_the_moved_setting,
    relate,
    restates,
    restating_line,
    says_a_change,
    says_more,
    settings_apart,
    values_of,
    writes_a_setting,
)
from memspool.store import diagnose
from memspool.store import memories as memory_rows

__all__ = [
    "DUPLICATE_WINDOW_SECS",
    "MAX_NOTES",
    "CaptureReport",
    "NoteOutcome",
    "Origin",
    "joined",
    "memory_lines",
    "save_notes",
    "with_the_rest",
]

#: docs/distill.md, The rules: at most 20 notes per invocation; callers may only lower it.
MAX_NOTES: Final = 20
#: docs/distill.md, The rules: the same normalized text saved within 15 minutes is skipped.
DUPLICATE_WINDOW_SECS: Final = 15 * 60
#: Memories compared with each note. The index ranks candidates by shared terms,
#: so the memory a note restates or revises, if there is one, is among the first.
CANDIDATES_PER_NOTE: Final = 8
#: Candidates must share this many terms with the note; one fewer than the
#: comparison's own floor, since compounds ("file systems") join only when compared.
CANDIDATE_MIN_SHARED: Final = MIN_SHARED_TERMS - 1
#: A memory's text grows by the restatements merged into it up to this length.
RESTATED_BODY_CHARS: Final = 1_500
#: The characters of a line's opening its memory's summary holds when the line is
#: the memory's own fact (:func:`_its_own`).
_OPENING_CHARS: Final = 40
DEFAULT_SOURCE: Final = "manual"
#: The types of a value said as it stands: set on purpose, or learnt to hold.
_VALUE_KINDS: Final = frozenset({"decision", "takeaway"})
RULE_BASED: Final = "rule_based"
LLM: Final = "llm"

CREATED: Final[Action] = "created"
UPDATED: Final[Action] = "updated"
MERGED: Final[Action] = "merged"
SKIPPED: Final[Action] = "skipped"


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where notes come from: the project and session they belong to, what wrote them
    (``source``), and the queued slice they were distilled from, if any."""

    project: str
    session: str
    source: str = DEFAULT_SOURCE
    slice_id: int | None = None


@dataclasses.dataclass(frozen=True)
class NoteOutcome:
    """What happened to one note, told by the memory it landed in (for ``merged`` and
    ``skipped``, the existing memory's key, type and summary). ``id`` is None for a
    memory a dry run would create. ``supersedes`` names the memory a new value or a
    contradiction took the place of."""

    id: int | None
    key: str
    type: NoteType
    summary: str
    action: Action
    supersedes: int | None = None


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
    #: Memories a new value also took the place of, past the one its note names
    #: (the old value restated in another memory of an earlier session).
    also_superseded: int = 0

    def count(self, action: Action) -> int:
        return sum(1 for note in self.notes if note.action == action)

    @property
    def superseded(self) -> int:
        # A memory a text replaced and a later value of the same call took over
        # (:func:`_replaced_in_this_session`) was superseded once.
        return len({note.supersedes for note in self.notes if note.supersedes is not None}) \
            + self.also_superseded

    def as_dict(self) -> dict[str, object]:
        report: dict[str, object] = {
            "ok": True,
            "captured": self.captured,
            "created": self.count(CREATED),
            "updated": self.count(UPDATED),
            "merged": self.count(MERGED),
            "superseded": self.superseded,
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
    origin: Origin
    now: float
    dry_run: bool
    report: CaptureReport
    profiles: Profiles
    #: Keys this call's notes landed on: the memory's id and the first note's text.
    seen_keys: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)
    created_ids: set[int] = dataclasses.field(default_factory=set)
    #: How each pair of texts compared in this call relates (:meth:`relate`).
    verdicts: dict[tuple[str, str], Verdict] = dataclasses.field(default_factory=dict)

    @property
    def project(self) -> str:
        return self.origin.project

    def terms(self, body: str) -> list[str]:
        """The terms a memory with this text is indexed under."""
        return index_terms(body, profiles=self.profiles)

    def shown_id(self, memory_id: int) -> int | None:
        # A dry run rolls back what it created: such an id will not exist.
        return None if self.dry_run and memory_id in self.created_ids else memory_id

    def relate(self, old: str, new: str) -> Verdict:
        """:func:`~memspool.distill.similarity.relate`, once per pair of texts in a call:
        a grown memory's lines are read against a note by more than one step."""
        pair = (old, new)
        verdict = self.verdicts.get(pair)
        if verdict is None:
            verdict = self.verdicts[pair] = relate(old, new, self.profiles)
        return verdict


def _of_another_session(ctx: _Context, memory: memory_rows.Memory) -> bool:
    """``memory`` was said by no session but another than this call's: only such a
    memory is replaced, corroborated or restated by a later word (in one session, two
    texts alike are two facts)."""
    return ctx.origin.session not in memory_rows.sessions_of(ctx.conn, memory.id)


def _stands(ctx: _Context, memory: memory_rows.Memory) -> bool:
    """Does ``memory`` keep its text whatever this call's notes say? When a person
    corrected it (:func:`~memspool.store.memories.edited`): a digested session, text
    an agent captures or saves over MCP or HTTP, and ``memspool capture`` say it
    again and corroborate it; only another correction rewrites it (a new value still
    supersedes it)."""
    return memory_rows.edited(ctx.conn, memory.id)


def _provenance(ctx: _Context, memory_id: int, action: Action, note: Note) -> None:
    memory_rows.add_provenance(ctx.conn, memory_rows.Provenance(
        memory_id=memory_id, action=action, session=ctx.origin.session,
        source=ctx.origin.source, slice_id=ctx.origin.slice_id,
        text_hash=text_hash(note.body), at=ctx.now,
    ))


def _candidates(ctx: _Context, note: Note) -> list[memory_rows.Memory]:
    """The live memories of the project that share the most of ``note``'s rarer terms."""
    return memory_rows.candidates(ctx.conn, ctx.project, lookup_terms(note.body, ctx.profiles),
                                  min_shared=CANDIDATE_MIN_SHARED, limit=CANDIDATES_PER_NOTE)


def _skipped(note: Note, key: str) -> NoteOutcome:
    """A note that lands nowhere: no memory holds it, none is made."""
    return NoteOutcome(id=None, key=key, type=note.type, summary=note.summary, action=SKIPPED)


def _landed(ctx: _Context, found: memory_rows.Memory, action: Action) -> NoteOutcome:
    """The outcome of a note that landed in an existing memory: that memory's identity."""
    return NoteOutcome(id=ctx.shown_id(found.id), key=found.key, type=found.type,
                       summary=found.summary, action=action)


def joined(memory_body: str, said: str, profiles: Profiles | None = None, *,
           more: bool = True) -> str | None:
    """A memory's text with ``said`` after it, when the memory does not hold it
    already and the two fit in RESTATED_BODY_CHARS; else ``None``. ``more``: only
    when ``said`` tells the same fact with more than the memory holds
    (:func:`~memspool.distill.similarity.says_more`: a cause beside its fix, a reason
    beside a rule); a restatement joins in any words. A merge keeps what either
    text says."""
    body = f"{memory_body}\n{said}"
    if said.strip() in memory_body or len(body) > RESTATED_BODY_CHARS \
            or (more and not says_more(memory_body, said, profiles)):
        return None
    return body


def _merge(ctx: _Context, found: memory_rows.Memory, note: Note, verdict: Verdict,
           body: str | None = None) -> NoteOutcome:
    """The note restates ``found``: one more corroboration, and its text when it says
    more; ``body``, when given, is the memory's new text (its summary stays). A kept
    note that says the same fact with more besides adds its text to the memory's
    (:func:`joined`); a note under the keep bar adds none (what made the model
    unsure of it may be chatter)."""
    if _stands(ctx, found):
        # A person's correction stands: the note corroborates it, its text stays.
        richer, body = False, None
    else:
        richer = verdict.relation == "more" and body is None
        if body is None and not richer and note.only_if is None:
            body = joined(found.body, note.body, ctx.profiles)
        body = note.body if richer else body
    memory_rows.corroborate(ctx.conn, found, at=ctx.now, body=body,
                            summary=note.summary if richer else None,
                            terms=ctx.terms(body) if body is not None else (),
                            clarity=note.clarity)
    _provenance(ctx, found.id, MERGED, note)
    ctx.seen_keys.setdefault(found.key, (found.id, note.body))
    return _landed(ctx, found, MERGED)


def _update(ctx: _Context, holder: memory_rows.Memory, key: str, note: Note) -> NoteOutcome:
    if _stands(ctx, holder):
        # The same key again, on a memory a person corrected: their text stands.
        memory_rows.corroborate(ctx.conn, holder, at=ctx.now, clarity=note.clarity)
        _provenance(ctx, holder.id, MERGED, note)
        ctx.seen_keys[key] = (holder.id, note.body)
        return _landed(ctx, holder, MERGED)
    memory_rows.update_in_place(ctx.conn, holder, type=note.type, summary=note.summary,
                                body=note.body, terms=ctx.terms(note.body), at=ctx.now)
    _provenance(ctx, holder.id, UPDATED, note)
    ctx.seen_keys[key] = (holder.id, note.body)
    return NoteOutcome(id=ctx.shown_id(holder.id), key=key, type=note.type,
                       summary=note.summary, action=UPDATED)


def _create(ctx: _Context, key: str, note: Note, supersedes: memory_rows.Memory | None,
            ) -> NoteOutcome:
    trimmed: int | None = None
    if supersedes is not None:
        supersedes, key, trimmed = _take_out_moved_lines(ctx, key, note, supersedes)
    if supersedes is not None and supersedes.key == key:
        # The new value takes the subject's key; the old memory keeps its own text's,
        # or, when a value changed back and forth left an older memory of the same
        # text holding that one, a key of its own id.
        aside = distinct_key(key, supersedes.body)
        holder = memory_rows.get_by_key(ctx.conn, ctx.project, aside)
        if holder is not None and holder.id != supersedes.id:
            aside = distinct_key(aside, f"memory {supersedes.id}")
        memory_rows.rekey(ctx.conn, supersedes, aside)
    # The text saved: the note's, and the lines of a grown memory it does not move.
    body = note.body if supersedes is None else _with_the_rest(ctx, note, supersedes)
    # A new value takes the old one's place, in the context block too: it is as
    # clear a statement of the subject as the one it replaces.
    clarity = note.clarity if supersedes is None else max(note.clarity, supersedes.clarity)
    kind = _kind_of_new_value(ctx, note, supersedes)
    memory_id = memory_rows.insert(ctx.conn, project=ctx.project, key=key, type=kind,
                                   summary=note.summary, body=body,
                                   terms=ctx.terms(body), at=ctx.now, clarity=clarity)
    ctx.created_ids.add(memory_id)
    # Provenance and this call's keys hold the note's own text: what a later digest
    # of the same words (or a forget of them) finds it by.
    _provenance(ctx, memory_id, CREATED, note)
    if supersedes is not None:
        memory_rows.supersede(ctx.conn, supersedes, by=memory_id, at=ctx.now)
        _supersede_the_rest(ctx, note, memory_id, supersedes.id)
    elif trimmed is not None:
        _supersede_the_rest(ctx, note, memory_id, trimmed)
    ctx.seen_keys[key] = (memory_id, note.body)
    return NoteOutcome(id=ctx.shown_id(memory_id), key=key, type=kind,
                       summary=note.summary, action=CREATED,
                       supersedes=None if supersedes is None else supersedes.id)


def _kind_of_new_value(ctx: _Context, note: Note, replaced: memory_rows.Memory | None,
                       ) -> NoteType:
    """The type of the memory ``note`` creates: a session's new value (or contradiction)
    of a memory typed as a value stands (_VALUE_KINDS) is the same kind of fact as the
    value it replaces (a pool size chosen again is still a decision, though the report
    that moved it reads like a lesson). The note keeps its own type when the replaced
    memory is of another type (its value sat inside a wider fact: the root cause that
    named a limit), when it is a person's rule (``preference``: a reminder of a rule finds
    only rules), and when a person or an agent captures or saves it."""
    if replaced is None or ctx.origin.slice_id is None or note.type == "preference" \
            or replaced.type not in _VALUE_KINDS:
        return note.type
    return replaced.type


def memory_lines(memory: memory_rows.Memory) -> list[str]:
    """The lines of ``memory``'s text: its own note's words, then each note's merged into
    it (:func:`joined`), one a line."""
    return [line for line in memory.body.split("\n") if line.strip()]


def _grown_lines(ctx: _Context, memory: memory_rows.Memory) -> list[str]:
    """The lines of ``memory``'s text, when a transcript's note reads them one by one:
    none for a capture or save (the person's words replace a memory whole), for a
    memory of one line, or for one already replaced (its lines went with what replaced
    it)."""
    if ctx.origin.slice_id is None or memory.layer == "superseded":
        return []
    lines = memory_lines(memory)
    return lines if len(lines) > 1 else []


def _take_out_moved_lines(ctx: _Context, key: str, note: Note, memory: memory_rows.Memory,
                          ) -> tuple[memory_rows.Memory | None, str, int | None]:
    """What ``note`` supersedes, its key, and the memory it took lines out of. A memory
    that grew by merges whose moved value is only in lines merged into it
    (:func:`_merged_lines_moved`) is not replaced: those lines leave its text (kept in
    its history) and the note is a memory of its own, so a later value of news merged
    into a rule does not take the rule's place. Else ``memory``, as asked."""
    moved = _merged_lines_moved(ctx, memory, note)
    if not moved:
        return memory, key, None
    own = key if memory.key != key else distinct_key(key, note.body)
    if memory_rows.get_by_key(ctx.conn, ctx.project, own) is not None:
        return memory, key, None
    _take_out(ctx, memory, moved)
    return None, own, memory.id


def _merged_lines_moved(ctx: _Context, memory: memory_rows.Memory, note: Note) -> list[str]:
    """The lines of ``memory``'s text (one merged note's words each) whose value
    ``note`` moves, when none of them is the memory's own fact (:func:`_its_own`);
    else none."""
    moved = [line for line in _grown_lines(ctx, memory)
             if ctx.relate(line, note.body).replaces]
    return [] if any(_its_own(memory, line) for line in moved) else moved


def _take_out(ctx: _Context, memory: memory_rows.Memory, moved: list[str]) -> None:
    """``memory``'s text without the ``moved`` lines (the old text goes to its history).
    A text a person corrected stays theirs: only the line whose value moved leaves it,
    as it would leave any memory, rather than stay current beside its new value."""
    lines = memory_lines(memory)
    rest = "\n".join(_introduced(lines, [line for line in lines if line not in moved]))
    memory_rows.replace_text(ctx.conn, memory, type=memory.type, summary=memory.summary,
                             body=rest, terms=ctx.terms(rest), at=ctx.now,
                             reason="a value merged into it moved",
                             person=memory_rows.marks(ctx.conn, memory.id)[1])


def _with_the_rest(ctx: _Context, note: Note, replaced: memory_rows.Memory) -> str:
    """The text of ``note``, the new value of ``replaced``, with the lines of the
    memory's text (each the words of one note merged into it) that the note neither
    moves nor says again, and that hold none of the values it moves away from: a
    memory that grew by merges holds other facts beside the value, and they stay in
    recall with the new value, not in the history of the old. The note's text alone
    past RESTATED_BODY_CHARS, and when ``replaced`` has no lines to read apart
    (:func:`_grown_lines`)."""
    return with_the_rest(_grown_lines(ctx, replaced), note.body, ctx.relate) or note.body


def with_the_rest(lines: list[str], new: str,
                  relate_lines: Callable[[str, str], Verdict]) -> str | None:
    """``new``, the text that replaces a memory of ``lines`` (one merged note's words
    each), followed by the lines it neither moves nor says again and that hold none
    of the values it moves away from (``relate_lines(line, new)`` says which); ``None``
    when no line is left to carry or the whole would pass RESTATED_BODY_CHARS. The one
    rule for the minor pass's new value and ``maintain``'s: a replaced memory's other
    facts stay in recall with its new value, not in its history."""
    if not lines:
        return None
    said = {line: relate_lines(line, new) for line in lines}
    # The values moved away from are those of the lines the new text replaces (of
    # the memory's own line, when only the whole text reads as replaced).
    from_lines = [line for line in lines if said[line].replaces] or lines[:1]
    moved = values_of("\n".join(from_lines)) - values_of(new)
    rest = _introduced(lines, [line for line in lines if line not in new
                               and not values_of(line) & moved
                               and not said[line].replaces and not said[line].agrees])
    body = "\n".join([new, *rest])
    return body if rest and len(body) <= RESTATED_BODY_CHARS else None


def _introduced(lines: list[str], kept: list[str]) -> list[str]:
    """``kept``, lines of ``lines`` in their order, without an introduction ("two quick
    ones before lunch:", "The conventions here:") whose next line is not kept: it says
    nothing without what it introduced."""
    following = dict(zip(lines, [*lines[1:], ""], strict=True))
    return [line for line in kept if not line.rstrip().endswith(":") or following[line] in kept]


def _supersede_the_rest(ctx: _Context, note: Note, memory_id: int, first: int) -> None:
    """A new value takes the place of every current memory that states the old one: the
    old value said again in another memory (a restatement no merge caught) would
    stay current beside the new. Only memories of other sessions, as for the first."""
    found = _candidates(ctx, note)
    # A value change under the keep bar is held to the overlap its first one met.
    floor = PINNED_MIN_DICE if note.only_if == "replaces" else 0.0
    for other in found:
        if other.id in (memory_id, first) or other.id in ctx.created_ids:
            continue
        verdict = ctx.relate(other.body, note.body)
        if verdict.replaces and verdict.comparison.dice >= floor \
                and _of_another_session(ctx, other):
            moved = _merged_lines_moved(ctx, other, note)
            if moved:  # only words merged into it state the old value
                _take_out(ctx, other, moved)
                continue
            memory_rows.supersede(ctx.conn, other, by=memory_id, at=ctx.now)
            ctx.report.also_superseded += 1


def _reconcile(ctx: _Context, note: Note) -> NoteOutcome:
    """Where ``note`` lands: nowhere new (said already), at its key, beside a memory
    its words find, or as a memory of its own."""
    key = note.key
    seen = ctx.seen_keys.get(key)
    if seen is not None and not ctx.relate(seen[1], note.body).agrees:
        key = distinct_key(key, note.body)  # another fact under a key used in this call
    known = _known(ctx, note, key)
    if known is not None:
        return known
    if note.only_if == "replaces":
        return _changed_value(ctx, note, key)
    if note.only_if == "restates":
        return _restating(ctx, note, key)
    landed, key = _at_key(ctx, note, key)
    if landed is not None:
        return landed
    return _among_candidates(ctx, note, key)


def _changed_value(ctx: _Context, note: Note, key: str) -> NoteOutcome:
    """The agent's claim under the keep bar that says a value changed, or that writes a
    setting ("`kMaxFramesInFlight = 3` again"): the new value of the
    current memory of an earlier session it replaces (found by its key or its
    words) and shares PINNED_MIN_DICE of its words with (a report of work done
    gives numbers of its own, "went from 48s to 3s", that relate() alone can
    read as another value of anything holding a number) and that does not give the
    setting they share to another subject (:func:`settings_apart`: "On the primary"
    / "On the replica"), which it supersedes, or of one a text of this session has
    already replaced (:func:`_replaced_in_this_session`); else, when it writes a setting in
    code with its value, a memory of its own (searchable; its clarity keeps it from
    the context block unless clearly said); else nothing is saved (``skipped``)."""
    holder = memory_rows.get_by_key(ctx.conn, ctx.project, key)
    found = [] if holder is None else [holder]
    found += [memory for memory in _candidates(ctx, note)
              if holder is None or memory.id != holder.id]
    ctx.report.candidates += len(found)
    for replaced in _values_moved(ctx, note, found):
        own = _key_of_new_value(ctx, key, note, replaced)
        if own is not None:
            return _create(ctx, own, note, supersedes=replaced)
    if writes_a_setting(note.body):
        # A setting's value as it stands now (`copyBatchSize = 20000` in
        # `config/ingest.dhall`): findable, though what it replaced was never kept;
        # a memory of an earlier session giving that setting another value, in
        # more words than the overlap above asks of a report, is the one it replaces.
        landed, key = _at_key(ctx, note, key)
        if landed is not None:
            return landed
        moved = next((candidate for candidate in found if candidate.live
                      and candidate.id not in ctx.created_ids
                      and moves_a_setting(candidate.body, note.body)
                      and _of_another_session(ctx, candidate)), None)
        return _create(ctx, key, note, supersedes=moved)
    return _skipped(note, key)


def _values_moved(ctx: _Context, note: Note, found: list[memory_rows.Memory],
                  ) -> Iterator[memory_rows.Memory]:
    """The memories ``note`` may give a new value, in the order tried: the first
    current one of ``found`` whose value it moves, then one a text of this session
    replaced (:func:`_replaced_in_this_session`), looked up only when asked for."""
    moved = next((candidate for candidate in found if candidate.live
                  and candidate.id not in ctx.created_ids
                  and _moves_its_value(ctx, candidate, note)), None)
    if moved is not None:
        yield moved
    replaced = _replaced_in_this_session(ctx, note)
    if replaced is not None:
        yield replaced


def _replaced_in_this_session(ctx: _Context, note: Note) -> memory_rows.Memory | None:
    """The memory of an earlier session whose value ``note`` (a claim under the keep
    bar that says a value changed) moves, when a text of this session has already
    taken its place: a person's "from now on upstream prices refresh every 5 minutes
    instead of 10, so the cache ttl has to match" replaces the memory of
    `ttl_seconds: 600` before the agent's "`ttl_seconds` is now 300" gives the value;
    that note is then the new value, and the old memory points at it. Held to
    :func:`_changed_value`'s test. (Memories left recall otherwise, archived or
    replaced by another session, are not looked at.)"""
    found = memory_rows.candidates(ctx.conn, ctx.project, lookup_terms(note.body, ctx.profiles),
                                   min_shared=CANDIDATE_MIN_SHARED, limit=CANDIDATES_PER_NOTE,
                                   layers=("superseded",))
    ctx.report.candidates += len(found)
    for candidate in found:
        by = None if candidate.superseded_by is None \
            else memory_rows.get(ctx.conn, candidate.superseded_by)
        if by is None or not by.live \
                or memory_rows.sessions_of(ctx.conn, by.id) != {ctx.origin.session}:
            continue  # replaced by another session, or left recall since
        said = ctx.relate(by.body, note.body)
        if said.agrees or said.replaces:
            continue  # what replaced it gave a value itself, this one or another
        if _moves_its_value(ctx, candidate, note):
            return candidate
    return None


def _moves_its_value(ctx: _Context, candidate: memory_rows.Memory, note: Note) -> bool:
    """``note`` gives ``candidate``, a memory of an earlier session, its new value
    (:func:`_changed_value`'s test). A memory whose text grew by the notes merged into
    it (one a line) is held to the overlap of the line whose value the note moves: the
    lines merged beside it are other words, and the whole text's overlap with a short
    report falls under the bar as it grows."""
    verdict = ctx.relate(candidate.body, note.body)
    if not verdict.replaces or settings_apart(candidate.body, note.body) \
            or not _of_another_session(ctx, candidate):
        return False
    if verdict.comparison.dice >= PINNED_MIN_DICE \
            or names_the_moved_setting(candidate.body, note.body):
        return True
    lines = memory_lines(candidate)
    return len(lines) > 1 and any(_moves_a_line(ctx, line, note)
                                  for line in lines if _its_own(candidate, line))


def _its_own(memory: memory_rows.Memory, line: str) -> bool:
    """``line`` of ``memory``'s text is its own fact, the one its summary says (its first
    line, or one whose opening the summary holds), not words merged into it later: a new
    value of a merged line is no new value of the memory's fact."""
    opening = line.strip().rstrip(":")[:_OPENING_CHARS]
    return memory.body.startswith(line) or opening in memory.summary


def _moves_a_line(ctx: _Context, line: str, note: Note) -> bool:
    """``note`` gives ``line`` (one note's text in a memory) a new value, sharing
    PINNED_MIN_DICE of its words, and gives no other subject the setting they share."""
    verdict = ctx.relate(line, note.body)
    return verdict.replaces and verdict.comparison.dice >= PINNED_MIN_DICE \
        and not settings_apart(line, note.body)


def _key_of_new_value(ctx: _Context, key: str, note: Note,
                      replaced: memory_rows.Memory) -> str | None:
    """The key the new value of ``replaced`` takes: the subject's, unless another
    memory holds it (then one of its own); ``None`` when that is taken as well."""
    holder = memory_rows.get_by_key(ctx.conn, ctx.project, key)
    if holder is None or holder.id == replaced.id:
        return key
    own = distinct_key(key, note.body)
    return own if memory_rows.get_by_key(ctx.conn, ctx.project, own) is None else None


def _restating(ctx: _Context, note: Note, key: str) -> NoteOutcome:
    """A claim under the keep bar that says it says again what was said before ("a
    request spec pls, same as always"): merged into the memory of an earlier session
    it restates (:func:`_restated`'s bar), else nothing is saved (``skipped``)."""
    found = _candidates(ctx, note)
    ctx.report.candidates += len(found)
    judged = [(candidate, ctx.relate(candidate.body, note.body)) for candidate in found
              if candidate.id not in ctx.created_ids and _of_another_session(ctx, candidate)]
    return _restated(ctx, note, judged) or _skipped(note, key)


def _known(ctx: _Context, note: Note, key: str) -> NoteOutcome | None:
    """Skipped: said earlier in this call, forgotten on purpose, or saved just now."""
    seen = ctx.seen_keys.get(key)
    if seen is not None:
        return NoteOutcome(id=ctx.shown_id(seen[0]), key=key, type=note.type,
                           summary=note.summary, action=SKIPPED)
    if ctx.origin.slice_id is not None and memory_rows.forgotten(ctx.conn, ctx.project,
                                                             text_hash(note.body)):
        # Forgotten on purpose: digesting a transcript again does not bring
        # it back (a person capturing it by hand does).
        return _skipped(note, key)
    # The same session saying it again (a hook fired twice, a capture run again);
    # another session saying it is a second session's word: it corroborates.
    recent = memory_rows.recent_save(ctx.conn, ctx.project, text_hash(note.body),
                                     ctx.now - DUPLICATE_WINDOW_SECS, ctx.origin.session)
    if recent is not None:
        ctx.seen_keys[key] = (recent.id, note.body)
        return _landed(ctx, recent, SKIPPED)
    return None


def _at_key(ctx: _Context, note: Note, key: str) -> tuple[NoteOutcome | None, str]:
    """The memory holding the note's key: updated, merged or superseded; else the key
    the note is to get."""
    holder = memory_rows.get_by_key(ctx.conn, ctx.project, key)
    if holder is None:
        return None, key
    if holder.layer != "superseded":
        verdict = ctx.relate(holder.body, note.body)
        if verdict.agrees:
            if not holder.live and ctx.origin.slice_id is not None:
                # Archived, and said again: back in recall.
                memory_rows.set_standing(ctx.conn, holder.id, layer="buffer")
            return _land_on(ctx, holder, key, note, verdict), key
        if verdict.replaces and holder.live:
            return _create(ctx, key, note, supersedes=holder), key
    # Another fact (or a memory that left recall) holds the key: this text
    # gets a key of its own, where it lands again when it is re-captured.
    key = distinct_key(key, note.body)
    again = memory_rows.get_by_key(ctx.conn, ctx.project, key)
    while again is not None and not again.live:
        # The same text's memory left recall (replaced by a later value, or
        # archived): said again, it is a memory of its own, under a key no other
        # holds, the same each time it is re-captured.
        key = distinct_key(key, f"memory {again.id}")
        again = memory_rows.get_by_key(ctx.conn, ctx.project, key)
    if again is None:
        return None, key
    return _land_on(ctx, again, key, note, None), key


def _land_on(ctx: _Context, memory: memory_rows.Memory, key: str, note: Note,
             verdict: Verdict | None) -> NoteOutcome:
    """``note`` said again of ``memory``: a capture or save under a key it names
    updates it (the person's wording replaces the old, which goes to the history
    when it differs); a transcript's note merges into it, or, when only one of its
    claims says the memory again beside news, that claim does
    (:func:`_said_again_beside_news`)."""
    if ctx.origin.slice_id is None:
        return _update(ctx, memory, key, note)
    verdict = verdict or ctx.relate(memory.body, note.body)
    line = _said_again_beside_news(ctx, memory, note, verdict)
    if line is not None:
        return _merge_apart(ctx, memory, note, verdict, line)
    return _merge(ctx, memory, note, verdict)


def _among_candidates(ctx: _Context, note: Note, key: str) -> NoteOutcome:
    """Merged into, or superseding, a memory its words find; else a new memory."""
    found = _candidates(ctx, note)
    ctx.report.candidates += len(found)
    judged: list[tuple[memory_rows.Memory, Verdict]] = []
    for candidate in found:
        verdict = ctx.relate(candidate.body, note.body)
        judged.append((candidate, verdict))
        if verdict.agrees:
            line = _said_again_beside_news(ctx, candidate, note, verdict)
            if line is not None:
                return _merge_apart(ctx, candidate, note, verdict, line)
            return _merge(ctx, candidate, note, verdict)
        if verdict.replaces and _of_another_session(ctx, candidate) \
                and not _keeps_it(note, verdict):
            # Another subject's memory is replaced only from another session: within
            # one, texts alike but for a number ("pool 1", "pool 2") are siblings.
            return _create(ctx, key, note, supersedes=candidate)
    restated = _restated(ctx, note, judged)
    if restated is not None:
        return restated
    return _create(ctx, key, note, supersedes=None)


def _keeps_it(note: Note, verdict: Verdict) -> bool:
    """A note that says it keeps a rule ("as you wanted", "like always") and differs
    from a memory by a negation alone restates it (:func:`restates`), never replaces it."""
    return note.restates == "rule" and restates(verdict, "rule") is not None


def _bar(ctx: _Context, note: Note, candidate: memory_rows.Memory) -> RestateBar | None:
    """The bar at which a transcript's note restates ``candidate``, or ``None``.

    A note that says it points back, at its own bar; the agent's claim under the
    keep bar that says nothing of the kind, at the overlap bar (a person's, as their
    kept rule below: only into a rule of theirs of an earlier session). A kept note
    that does not point back is news until it says otherwise (a loose overlap folded
    a new rule into the memory of another subject that named the same file, and the
    rule left recall with that memory's old value): a person's rule said again in a
    later session, only into a person's rule (a ``preference``), at the rule bar into
    one they stated clearly, a reminder of it too (its clarity reaches the context
    block's clear bar: a person says their rule again in words of their own, "still
    plain URLSession pls, no third-party upload libs"), else at the reminder bar (a
    report of theirs is typed theirs too, and a new rule in its words is news); any
    other kept note only into a memory of an earlier session whose words it mostly
    says again (the kept bar: a rule applied in a report of the work, "the same
    `packer@pve!build` token as every build"). In one session, two facts alike are
    two facts."""
    if note.only_if is not None and note.restates is None:
        if says_a_change(note.body) and candidate.type != "preference":
            # A report of a change that moved no value may say a person's rule again
            # ("once merged, the prod apply goes through `apply.yml`"); of a fact, it
            # may be the news that moves it, which no corroboration should hide.
            return None
        return "overlap"
    if note.restates == "rule" or _said_by_them_again(ctx, note, candidate):
        return "rule"
    if note.restates == "reminder" or (note.restates == "person" and candidate.type
                                       == "preference" and _of_another_session(ctx, candidate)):
        return "reminder"
    if note.restates is None and note.type == "preference":
        # The agent saying a person's rule back ("Understood, plain `URLSession` it
        # is, no Alamofire"): the rule itself, in this session or a later one.
        return "reminder" if candidate.type == "preference" else None
    return "kept" if note.restates is None and _of_another_session(ctx, candidate) else None


def _said_by_them_again(ctx: _Context, note: Note, candidate: memory_rows.Memory) -> bool:
    """A person's note, reminding or not, meets ``candidate``, a rule of theirs of an
    earlier session that they stated clearly (its clarity reaches the context block's
    clear bar): they say it again in words of their own, at the rule bar."""
    return note.restates in ("person", "reminder") and candidate.type == "preference" \
        and candidate.clarity >= model().clear and _of_another_session(ctx, candidate)


def _restated(ctx: _Context, note: Note,
              judged: list[tuple[memory_rows.Memory, Verdict]]) -> NoteOutcome | None:
    """A transcript's note that restates something said before merges into the
    candidate it restates most closely (``judged``: each candidate with how the note
    relates to it), with a lower bar than other words
    (:func:`~memspool.distill.similarity.restates`): a note that says it points back
    ("per your rule, ...", a person's "remember ...") at its own bar; a claim under
    the keep bar that says no such thing at the overlap bar (:func:`_restating` has
    judged only memories of other sessions); a person's rule only into a rule of
    theirs of an earlier session, at the rule bar when they stated it clearly, else at
    the reminder bar; another kept note at the kept bar, only into a memory of an
    earlier session (:func:`_bar`). The memory keeps its words and gains the
    restatement's, up to RESTATED_BODY_CHARS (a claim under the keep bar adds none).
    A note of several claims of which one says the memory again
    (:func:`_restated_in_a_line`) gives the memory that claim, and the rest is a note
    of its own: the news beside a fact said again is news."""
    if ctx.origin.slice_id is None and note.only_if is None:
        return None  # a person's capture says what it says
    best: tuple[tuple[bool, float], memory_rows.Memory, Verdict, int | None] | None = None
    for candidate, related in judged:
        bar = _bar(ctx, note, candidate)
        if bar is None:
            continue
        verdict, line = restates(related, bar), None
        if verdict is None:
            verdict, line = _restated_in_a_line(ctx, candidate, note, related, bar)
        elif bar == "rule" and note.restates != "rule":
            # A person's note at the rule bar (_bar: _said_by_them_again), loose enough
            # for their rule in words of their own, lets a prompt of news and the rule
            # said again pass whole: the sentence that says it is the restatement, and
            # the news is news.
            line = _said_again_beside_news(ctx, candidate, note, verdict)
        if verdict is None:
            continue
        # A memory the whole note restates comes before one a claim of it does.
        score = (line is None, verdict.comparison.dice)
        if best is None or score > best[0]:
            best = (score, candidate, verdict, line)
    if best is None:
        return None
    _, memory, verdict, line = best
    if note.only_if is not None:
        # A claim under the bar counts as the restatement it says it is, and adds
        # no words: what made the model unsure of it may be chatter.
        return _merge(ctx, memory, note, Verdict("same", verdict.comparison))
    if line is not None:
        return _merge_apart(ctx, memory, note, verdict, line)
    # The rule keeps its words and gains how it was applied or recalled ("`parallel.rs`
    # uses `.with_context(...)`"): searching for those words finds the rule.
    return _merge(ctx, memory, note, verdict,
                  body=joined(memory.body, note.body, ctx.profiles, more=False))


def _merge_apart(ctx: _Context, memory: memory_rows.Memory, note: Note, verdict: Verdict,
                 line: int) -> NoteOutcome:
    """Claim ``line`` of ``note`` says ``memory`` again: it merges into the memory (whose
    text gains its words), and the rest of the note is reconciled as a note of its own
    (its outcome is the one returned; the merge's is reported before it)."""
    said = dataclasses.replace(note, body=note.claims()[line], context_lines=0,
                               claim_lines=())
    ctx.report.notes.append(_merge(ctx, memory, said, verdict, body=joined(
        memory.body, said.body, ctx.profiles, more=False)))
    rest = _reconcile(ctx, note.without_claim(line))
    # The whole note's words are where a later digest of them finds them (skipped, as
    # said already) and where a forget of the news buries them: in the memory the
    # rest landed in (in a dry run, which keeps nothing, the one merged into).
    if rest.action == SKIPPED or rest.id is None:
        _provenance(ctx, memory.id, MERGED, note)
    else:
        _provenance(ctx, rest.id, rest.action, note)
    return rest


def _said_again_beside_news(ctx: _Context, memory: memory_rows.Memory, note: Note,
                            verdict: Verdict) -> int | None:
    """The claim of a transcript's note of several that says ``memory``, of an earlier
    session, again, when the note as a whole reads as the same fact (``verdict``, not
    one saying more) only because of it: every other claim is news (:func:`_is_news`;
    a person's "fyi the sync runs every 3 hours now" beside their rule said again, the
    two sharing a file name). ``None`` when there is no such claim: the note is the
    memory's fact, said again."""
    claims = note.claims()
    if verdict.relation != "same" or ctx.origin.slice_id is None or note.only_if is not None \
            or len(claims) < 2 or not _of_another_session(ctx, memory):
        return None
    found = restating_line(memory.body, claims, _bar(ctx, note, memory) or "kept",
                           relating=ctx.relate)
    if found is None:
        return None
    index = found[0]
    others = [claim for number, claim in enumerate(claims) if number != index]
    return index if all(_is_news(ctx, memory, claim) for claim in others) else None


def _is_news(ctx: _Context, memory: memory_rows.Memory, claim: str) -> bool:
    """``claim`` says nothing ``memory`` says: not in its text, not the same fact as the
    whole, and no sentence of it said again at the overlap bar, the loosest of a text
    that does not point back (a cause said again beside its fix is the memory's, not
    news)."""
    return claim.strip() not in memory.body and not ctx.relate(memory.body, claim).agrees \
        and restating_line(memory.body, [claim], "overlap", relating=ctx.relate) is None


def _restated_in_a_line(ctx: _Context, candidate: memory_rows.Memory, note: Note,
                        related: Verdict, bar: RestateBar) -> tuple[Verdict | None, int | None]:
    """The claim of a note of several (one a line) that says ``candidate``'s fact again
    at ``bar``, beside news of its own
    (:func:`~memspool.distill.similarity.restating_line`): a report of later work that
    holds the earlier fact in one sentence, a person's rule said again beside a new
    request. The verdict and the claim's index (:meth:`Note.claims`); ``(None, None)``
    when the whole note (``related``) gives the memory a new value or contradicts it,
    or shares too few terms with it for any claim to restate it."""
    lines = note.claims()
    if len(lines) < 2 or related.replaces \
            or related.comparison.shared < RESTATED_MIN_SHARED[bar] \
            or related.comparison.veto_kind in ("reversed", "antonyms"):
        return None, None
    found = restating_line(candidate.body, lines, bar, relating=ctx.relate)
    return (None, None) if found is None else (found[1], found[0])


def save_notes(  # noqa: PLR0913 - store, origin and report, keyword-only
    notes: list[Note],
    *,
    config: Config,
    conn: sqlite3.Connection,
    origin: Origin,
    report: CaptureReport,
    cap: int = MAX_NOTES,
    now: float | None = None,
    profiles: Profiles | None = None,
) -> None:
    """Reconcile distilled ``notes`` with the memory of ``origin.project``; fills ``report``.

    Inside the caller's open transaction the writes join it; otherwise they
    commit together. Raises :class:`~memspool.base.errors.StoreError` when the
    store refuses them (then nothing of the call is kept).
    """
    report.captured = len(notes)
    report.dropped = max(0, len(notes) - cap)
    ctx = _Context(conn=conn, origin=origin, now=time.time() if now is None else now,
                   dry_run=report.dry_run, report=report,
                   profiles=profiles if profiles is not None else Profiles())
    try:
        with memory_rows.unit_of_work(conn, keep=not report.dry_run):
            # Appended one by one: a note taken apart reports its merge before the
            # rest's outcome (_merge_apart appends to the same list).
            report.notes = []
            for note in notes[:cap]:
                report.notes.append(_reconcile(ctx, note))
    except sqlite3.Error as exc:
        raise StoreError(f"{diagnose(config.db_path, exc)} Nothing of this capture was "
                         f"saved.") from exc
