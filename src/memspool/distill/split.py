"""Splitting a payload into note texts, and reading learnings sections.

A payload is one of three shapes, tried in this order:

* JSONL: every non-empty line is a JSON object. Each record gives one note:
  its first non-empty string among ``content``, ``text``, ``insight``,
  ``lesson``, ``summary``, ``message``, else the compact record itself.
* Markdown: at least one ``#`` heading outside a code fence. One note per
  section (heading line included); text before the first heading is its own
  note. A learnings section (``## Key Learnings:``, ``### Learnings``,
  ``## Aprendizajes Clave:``) gives one note per numbered or bulleted item.
* Paragraphs: blank-line separated blocks.

Pieces under 16 characters are chatter and dropped; learnings items under 20
characters too. :func:`split_pieces` also returns what it dropped and the
markup it removed, so tests can prove no other text is lost.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Final, Literal

from memspool.untrusted import no_surrogates, parse_json

__all__ = [
    "CHATTER_CHARS",
    "JSONL_TEXT_FIELDS",
    "LEARNING_ITEM_CHARS",
    "Piece",
    "is_learnings_heading",
    "learnings_items",
    "record_text",
    "scrub",
    "split_payload",
    "split_pieces",
]

#: docs/distill.md, The rules: a piece under 16 characters is chatter ("ok", "done!").
CHATTER_CHARS: Final = 16
#: docs/distill.md, The rules: a learnings item under 20 characters says too little to keep.
LEARNING_ITEM_CHARS: Final = 20
#: docs/distill.md, The rules: the fields a JSONL record's note is taken from, in order.
JSONL_TEXT_FIELDS: Final = ("content", "text", "insight", "lesson", "summary", "message")

# CommonMark: an ATX heading is 1-6 '#' after at most 3 spaces, then a space or the end.
_HEADING: Final = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE: Final = re.compile(r"^ {0,3}(```|~~~)")
_LEARNINGS_TITLE: Final = re.compile(
    r"^(?:key\s+learnings|learnings|aprendizajes\s+clave)\s*:?$", re.IGNORECASE
)
_ITEM: Final = re.compile(r"^(\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+)(.*)$")

PieceKind = Literal["note", "chatter", "markup"]


@dataclasses.dataclass(frozen=True)
class Piece:
    """A part of the payload: a ``note``, dropped ``chatter``, or removed ``markup``."""

    text: str
    kind: PieceKind


def _piece(text: str, floor: int) -> Piece | None:
    text = text.strip()
    if not text:
        return None
    return Piece(text, "note" if len(text) >= floor else "chatter")


def is_learnings_heading(line: str) -> bool:
    """True for a heading line such as ``## Key Learnings:`` (any case, colon optional)."""
    match = _HEADING.match(line)
    if match is None or match.group(2) is None:
        return False
    heading = re.sub(r"[*_`]", "", match.group(2)).strip()
    return _LEARNINGS_TITLE.match(heading) is not None


def _jsonl_records(text: str) -> list[dict[str, object]] | None:
    records: list[dict[str, object]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # Cheap refusal first: a line that cannot be an object is not worth parsing.
        if not line.lstrip().startswith("{"):
            return None
        try:
            record = parse_json(line)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        records.append(record)
    return records or None


def scrub(text: str) -> str:
    """``text`` without lone surrogates (a JSON ``"\\ud800"`` decodes to one), which no
    UTF-8 store accepts (see :mod:`memspool.untrusted`)."""
    return no_surrogates(text)


def record_text(record: dict[str, object]) -> str:
    """The note text of one JSONL record."""
    for field in JSONL_TEXT_FIELDS:
        value = record.get(field)
        if isinstance(value, str) and value.strip():
            return scrub(value)
    return scrub(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


def _sections(lines: list[str]) -> Iterator[tuple[str | None, list[str]]]:
    """Yield (heading line or None, body lines); headings inside code fences do not count."""
    heading: str | None = None
    body: list[str] = []
    fence: str | None = None
    for line in lines:
        fence_match = _FENCE.match(line)
        if fence_match is not None:
            if fence is None:
                fence = fence_match.group(1)
            elif fence_match.group(1) == fence:
                fence = None
        elif fence is None and _HEADING.match(line) is not None:
            if heading is not None or body:
                yield heading, body
            heading, body = line, []
            continue
        body.append(line)
    if heading is not None or body:
        yield heading, body


def _has_heading(lines: list[str]) -> bool:
    return any(heading is not None for heading, _ in _sections(lines))


def _learnings_pieces(body: list[str]) -> Iterator[tuple[Piece, bool]]:
    """One note per list item; text that is no item stays a note of its own.

    Yields (piece, whether the piece is a list item's text).
    """
    loose: list[str] = []
    item_marker = ""
    item: list[str] = []

    def flush_item() -> Iterator[tuple[Piece, bool]]:
        if item_marker:
            yield Piece(item_marker.strip(), "markup"), False
        found = _piece(" ".join(part.strip() for part in item), LEARNING_ITEM_CHARS)
        if found is not None:
            yield found, True

    for line in body:
        match = _ITEM.match(line)
        if match is not None:
            yield from flush_item()
            item_marker, item = match.group(1), [match.group(2)]
        elif not line.strip():
            # A blank line ends an item: text after it is not the item's continuation.
            yield from flush_item()
            item_marker, item = "", []
            loose.append(line)
        elif item_marker:
            item.append(line)
        else:
            loose.append(line)
    yield from flush_item()
    found = _piece("\n".join(loose), CHATTER_CHARS)
    if found is not None:
        yield found, False


def _markdown_pieces(lines: list[str]) -> Iterator[Piece]:
    for heading, body in _sections(lines):
        if heading is not None and is_learnings_heading(heading):
            yield Piece(heading.strip(), "markup")
            yield from (piece for piece, _ in _learnings_pieces(body))
            continue
        parts = ([heading] if heading is not None else []) + body
        found = _piece("\n".join(parts), CHATTER_CHARS)
        if found is not None:
            yield found


def _paragraph_pieces(lines: list[str]) -> Iterator[Piece]:
    block: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line)
            continue
        found = _piece("\n".join(block), CHATTER_CHARS)
        if found is not None:
            yield found
        block = []


def split_pieces(text: str) -> list[Piece]:
    """Every part of ``text``: notes, chatter and removed markup, in order."""
    records = _jsonl_records(text)
    if records is not None:
        pieces = (_piece(record_text(record), CHATTER_CHARS) for record in records)
        return [piece for piece in pieces if piece is not None]
    lines = text.splitlines()
    if _has_heading(lines):
        return list(_markdown_pieces(lines))
    return list(_paragraph_pieces(lines))


def split_payload(text: str) -> list[str]:
    """The note texts of ``text``, chatter dropped."""
    return [piece.text for piece in split_pieces(text) if piece.kind == "note"]


def learnings_items(text: str) -> list[str]:
    """The items (20 characters or more) of every learnings section in ``text``.

    A JSONL payload is searched record by record, since a record's text is
    where an agent's ``## Key Learnings:`` section would be.
    """
    records = _jsonl_records(text)
    sources = [record_text(record) for record in records] if records is not None else [text]
    items: list[str] = []
    for source in sources:
        for heading, body in _sections(source.splitlines()):
            if heading is None or not is_learnings_heading(heading):
                continue
            items.extend(
                piece.text
                for piece, is_item in _learnings_pieces(body)
                if is_item and piece.kind == "note"
            )
    return items
