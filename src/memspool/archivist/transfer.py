"""Memories out and in as JSONL: one memory a line, the same shape both ways.

Export writes every field a memory has, with its provenance. Import is
idempotent: a line whose project and key already hold the same text changes
nothing, so importing a file twice, or an export into the store it came
from, adds nothing. A line with new text for a known key updates it in place
(the old text kept in history). Each batch of lines is one transaction.

A file is untrusted input, like a transcript: every text in it (summary,
body, key, project, provenance) is redacted and stripped of control
characters, and a key becomes a slug again; but a line whose project holds a
control character is refused, as ``--project`` refuses it, not filed under
another name. Its layer, confidence, importance, times and sessions are
claims: an imported memory lands as
provisional memory (``buffer``, confidence and importance no higher than a
new memory's, one ``import`` session, changed now), which the archivist
still has to corroborate, unless the caller trusts the file (``trust``,
``memspool memories import --trust``): then they are kept as written, and
so are what a person did to the memory there: its pin and when they last
corrected its text (``pinned``, ``edited_at``).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, Final

import orjson

from memspool.archivist import lifecycle
from memspool.base.errors import PayloadError
from memspool.base.kinds import ACTIONS, LAYERS, NOTE_TYPES, Action, Layer, NoteType
from memspool.config import Config
from memspool.distill.keys import note_key, text_hash
from memspool.distill.similarity import Profiles, index_terms
from memspool.redact import kept
from memspool.store import browse, transaction
from memspool.store import memories as memory_rows
from memspool.store import projects as project_rows
from memspool.untrusted import parse_json, shown

__all__ = ["EXPORT_FIELDS", "ImportReport", "export_lines", "import_lines", "read_lines"]

#: The fields of one exported memory, in order.
EXPORT_FIELDS: Final = (
    "id", "project", "type", "key", "summary", "body", "layer", "confidence", "importance",
    "sessions", "created_at", "updated_at", "superseded_by", "pinned", "edited_at",
    "provenance",
)
#: Lines per import transaction.
IMPORT_BATCH: Final = 2000
#: Where an error says what of the file was imported (filled in by import_lines).
_UNSAID: Final = "nothing of that batch was imported"
#: The latest time a line may give (in the year 5138); a later one is this.
LATEST_TIME: Final = 1e11
#: A line longer than this is refused: no memory is that long.
MAX_LINE_BYTES: Final = 8 * 1024 * 1024
#: The session an untrusted import's saves are recorded under: one session, however
#: many the file names, so an import alone never makes a memory canonical.
IMPORT_SESSION: Final = "import"
#: Layers an untrusted line may claim: those that take a memory out of recall. A
#: claim of ``canonical`` lands in ``buffer``.
_CLAIMABLE: Final[tuple[Layer, ...]] = ("buffer", "superseded", "archived")


def export_lines(conn: sqlite3.Connection, project: str | None = None) -> Iterator[bytes]:
    """One JSON line per memory, oldest first (streamed, not gathered)."""
    for memory_id in memory_rows.memory_ids(conn, project):
        memory = memory_rows.get(conn, memory_id)
        if memory is None:
            continue
        record: dict[str, Any] = {name: getattr(memory, name) for name in EXPORT_FIELDS[:-3]}
        record["pinned"], record["edited_at"] = memory_rows.marks(conn, memory_id)
        record["provenance"] = [
            {"session": p.session, "source": p.source, "slice": p.slice_id,
             "action": p.action, "at": p.at}
            for p in memory_rows.provenance(conn, memory_id)
        ]
        yield orjson.dumps(record) + b"\n"


@dataclasses.dataclass
class ImportReport:
    lines: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    #: Lines whose memory was forgotten here on purpose, left out (an old export
    #: must not bring back what a person forgot; capturing it by hand does).
    forgotten: int = 0

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def _text(record: dict[str, Any], field: str, line: int, *, one_line: bool = False) -> str:
    value = record.get(field)
    if isinstance(value, str) and (cleaned := kept(value, one_line=one_line)).strip():
        return cleaned
    raise PayloadError(f"Line {line}: {field!r} must be a non-empty string; {_UNSAID}. Fix "
                       f"the line and import again.")


def _number(value: object, field: str, line: int, default: float, high: float = 1.0,
            ) -> float:
    """The ``field`` of line ``line``, a number within 0 to ``high``; ``default`` when it
    is absent or null, a :class:`PayloadError` naming the line when it is no number."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise PayloadError(f"Line {line}: {field!r} must be a number from 0 to {high:g}, "
                           f"got {shown(value)}; {_UNSAID}. Fix the line and import again.")
    # Compared before it is made a float: an int of 400 digits has no float.
    return float(min(high, max(0.0, value)))


def _time(record: dict[str, Any], field: str, line: int, default: float) -> float:
    """A time field of line ``line``: seconds since 1970 (as export writes it) or an ISO
    8601 date and time (``2026-12-01T09:30:00Z``; local time without a zone)."""
    value = record.get(field)
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip()).timestamp()
        except (ValueError, OverflowError, OSError):
            raise PayloadError(f"Line {line}: {field!r} must be seconds since 1970 or an ISO "
                               f"8601 time, got {shown(value)}; {_UNSAID}. Fix the line and "
                               f"import again.") from None
    return _number(value, field, line, default, high=LATEST_TIME)


def read_lines(handle: BinaryIO) -> Iterator[bytes]:
    """``handle``'s lines, none read past ``MAX_LINE_BYTES`` + 1 bytes: a stream with no
    line end (``/dev/zero``) gives a line :func:`import_lines` refuses as too long,
    instead of filling memory."""
    while line := handle.readline(MAX_LINE_BYTES + 1):
        yield line


def _parse(raw: bytes, line: int) -> dict[str, Any]:
    if len(raw) > MAX_LINE_BYTES:
        raise PayloadError(f"Line {line} is longer than {MAX_LINE_BYTES} bytes, not a memory; "
                           f"{_UNSAID}.")
    try:
        record = parse_json(raw)
    except ValueError:
        raise PayloadError(f"Line {line} is not JSON; {_UNSAID}. "
                           f"Each line must be one memory as `memspool memories export` "
                           f"writes it.") from None
    if not isinstance(record, dict):
        raise PayloadError(f"Line {line} is not a JSON object; {_UNSAID}.")
    return record


def import_lines(conn: sqlite3.Connection, lines: Iterable[bytes], *,  # noqa: PLR0913 - the import's options, keyword-only
                 config: Config | None = None,
                 progress: Callable[[int], None] | None = None,
                 profiles: Profiles | None = None, trust: bool = False,
                 now: float | None = None) -> ImportReport:
    """Import exported memories; returns what happened to them. ``trust``: keep the
    file's layer, confidence, importance, times and provenance (see the module doc);
    ``now`` is for tests."""
    claims = _Claims(trust=trust, now=time.time() if now is None else now)
    report = ImportReport()
    profiles = profiles if profiles is not None else Profiles(max_entries=256)
    #: The file's ids -> this store's, to carry superseded_by across.
    ids: dict[int, int] = {}
    links: list[tuple[int, int]] = []
    batch: list[tuple[int, dict[str, Any]]] = []

    def flush() -> None:
        with transaction(conn):
            for number, record in batch:
                memory_id = _import_one(conn, record, number, report=report, ids=ids,
                                        links=links, profiles=profiles, claims=claims)
                if config is not None and memory_id is not None:
                    _schedule(conn, config, memory_id)
        if progress is not None:
            progress(len(batch))
        batch.clear()

    done = 0  # the last line of the batches committed
    try:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            batch.append((number, _parse(raw, number)))
            report.lines += 1
            if len(batch) >= IMPORT_BATCH:
                last = batch[-1][0]
                flush()
                done = last
        if batch:
            flush()
    except PayloadError as exc:
        # Each batch is one transaction: say what the store now holds of the file.
        kept = "nothing of the file was imported" if not done else (
            f"lines 1 to {done} were imported (each {IMPORT_BATCH} lines are saved "
            f"together), nothing after them")
        raise PayloadError(str(exc).replace(_UNSAID, kept)) from None
    with transaction(conn):
        for memory_id, old_target in links:
            target = ids.get(old_target)
            if target is not None and target != memory_id:
                memory_rows.set_standing(conn, memory_id, layer="superseded", superseded_by=target)
    return report


@dataclasses.dataclass(frozen=True)
class _Claims:
    """How much of a line is believed: all of it (``trust``), or only its text."""

    trust: bool
    now: float
    #: Each project named by the file, and the identity it is in this store.
    projects: dict[str, str] = dataclasses.field(default_factory=dict)

    def project(self, conn: sqlite3.Connection, given: str) -> str:
        """The project a line names, as this store knows it: an identity as is; a
        readable name one project has (an export made before projects were their
        repositories says ``api`` for ``github.com/acme/api``), that project; anything
        else as given."""
        if given not in self.projects:
            named = project_rows.known_as(conn, given)
            self.projects[given] = named[0] if len(named) == 1 else given
        return self.projects[given]

    def standing(self, record: dict[str, Any], line: int) -> tuple[Layer, float, float]:
        """The layer, confidence and importance the memory gets."""
        layer: Layer = next((name for name in LAYERS if name == record.get("layer")), "buffer")
        confidence = _number(record.get("confidence"), "confidence", line,
                             memory_rows.CONFIDENCE_NEW)
        importance = _number(record.get("importance"), "importance", line,
                             memory_rows.IMPORTANCE_NEW)
        if self.trust:
            return layer, confidence, importance
        return (layer if layer in _CLAIMABLE else "buffer",
                min(confidence, memory_rows.CONFIDENCE_NEW),
                min(importance, memory_rows.IMPORTANCE_NEW))

    def marks(self, record: dict[str, Any], line: int) -> tuple[bool | None, float | None]:
        """A trusted line's pin (``None`` when it does not say) and the time a person
        last corrected its text: what a person did in the store it came from (an
        untrusted line cannot claim them)."""
        pinned = record.get("pinned")
        if pinned is not None and not isinstance(pinned, bool):
            raise PayloadError(f"Line {line}: 'pinned' must be true or false, got "
                               f"{shown(pinned)}; {_UNSAID}. Fix the line and import again.")
        edited_at = (None if record.get("edited_at") is None
                     else _time(record, "edited_at", line, self.now))
        return pinned, edited_at

    def times(self, record: dict[str, Any], line: int) -> tuple[float, float]:
        """When it was created and last changed: untrusted, it changed now (so its
        promotion is scheduled from today, as a new memory's is). A line that does
        not say when it was made is a memory made now: not one from 1970, which
        the next maintenance would archive."""
        created = _time(record, "created_at", line, self.now)
        if not self.trust:
            return min(created, self.now), self.now
        return created, max(created, _time(record, "updated_at", line, created))


def _import_one(conn: sqlite3.Connection, record: dict[str, Any], number: int, *,  # noqa: PLR0913 - one import's state, private
                report: ImportReport, ids: dict[int, int], links: list[tuple[int, int]],
                profiles: Profiles, claims: _Claims) -> int | None:
    given = record.get("project")
    refused = project_rows.unprintable(given) if isinstance(given, str) else None
    if refused is not None:  # as --project refuses it, rather than filed under another name
        raise PayloadError(f"Line {number}: {refused}; {_UNSAID}. Fix the line and import "
                           f"again.")
    project = claims.project(conn, _text(record, "project", number, one_line=True))
    # A key becomes a slug again: whatever the file says, it is a slug of its text.
    key = note_key(_text(record, "key", number, one_line=True))
    summary = _text(record, "summary", number, one_line=True)
    body = _text(record, "body", number)
    kind = record.get("type")
    note_type: NoteType = next((t for t in NOTE_TYPES if t == kind), "takeaway")
    layer, confidence, importance = claims.standing(record, number)
    created, updated = claims.times(record, number)
    existing = memory_rows.get_by_key(conn, project, key)
    same = existing is not None and (existing.type, existing.summary, existing.body) == (
        note_type, summary, body)
    if not same and memory_rows.forgotten(conn, project, text_hash(body)):
        # Not under a new memory's key either: an old export must not write a
        # forgotten text back over whatever holds its key now.
        report.forgotten += 1
        return None
    if existing is None:
        memory_id = memory_rows.insert(conn, project=project, key=key, type=note_type,
                                       summary=summary, body=body,
                                       terms=index_terms(body, profiles=profiles),
                                       at=created, layer=layer, importance=importance,
                                       confidence=confidence, updated_at=updated)
        report.created += 1
        _provenance(conn, memory_id, record, body, claims=claims, action="created",
                    line=number)
    elif same:
        memory_id = existing.id
        report.unchanged += 1
    else:
        memory_id = existing.id
        memory_rows.replace_text(conn, existing, type=note_type, summary=summary, body=body,
                                 terms=index_terms(body, profiles=profiles), at=updated,
                                 reason="imported")
        memory_rows.set_standing(conn, memory_id, layer=layer, confidence=confidence)
        report.updated += 1
        _provenance(conn, memory_id, record, body, claims=claims, action="updated",
                    line=number)
    if claims.trust:
        pinned, edited_at = claims.marks(record, number)
        # Only what the line says: a file exported before these fields keeps the store's.
        held = memory_rows.get(conn, memory_id)
        if pinned is not None and held is not None:
            browse.set_pinned(conn, held, pinned)
        if "edited_at" in record:
            memory_rows.set_edited(conn, memory_id, edited_at)
    old_id = record.get("id")
    if isinstance(old_id, int):
        ids[old_id] = memory_id
    target = record.get("superseded_by")
    if layer == "superseded" and isinstance(target, int):
        links.append((memory_id, target))
    return memory_id


def _schedule(conn: sqlite3.Connection, config: Config, memory_id: int) -> None:
    """An imported memory keeps its own times, which may lie before the last maintenance
    pass: give it its promotion and decay schedule now, as the pass would."""
    memory = memory_rows.get(conn, memory_id)
    if memory is not None:
        memory_rows.set_standing(conn, memory_id, promote_at=lifecycle.promote_at(memory, config),
                                 archive_at=lifecycle.archive_at(memory, config))


def _provenance(conn: sqlite3.Connection, memory_id: int, record: dict[str, Any],  # noqa: PLR0913 - one record's parts, private
                body: str, *, claims: _Claims, action: Action, line: int) -> None:
    entries = record.get("provenance")
    saved = False
    for entry in entries if claims.trust and isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("session"), str):
            continue
        kind: Action = next((a for a in ACTIONS if a == entry.get("action")), "created")
        at = _time(entry, "at", line, claims.now)
        memory_rows.add_provenance(conn, memory_rows.Provenance(
            memory_id=memory_id,
            action=kind,
            session=kept(entry["session"], one_line=True),
            source=kept(str(entry.get("source") or "import"), one_line=True),
            slice_id=None,  # slices belong to the store they were drained into
            text_hash=text_hash(body),
            at=at,
        ))
        saved = True
    if not saved:
        # Untrusted, the file's sessions are claims too: one save, by the import.
        memory_rows.add_provenance(conn, memory_rows.Provenance(
            memory_id=memory_id, action=action, session=IMPORT_SESSION, source="import",
            slice_id=None, text_hash=text_hash(body), at=claims.now))
