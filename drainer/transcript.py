"""Reading a transcript from a byte cursor and cutting what it keeps into slices.

The transcript is streamed line by line (never slurped): memory is bounded
by one slice's text plus one line. Only complete lines are read; a half
written last line waits for the next drain. A line longer than
``max_line_bytes`` is skipped unread and counted as dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Final

from memspool.drainer.keep import keep_record, record_key
from memspool.redact import redact
from memspool.untrusted import parse_json, printable

__all__ = ["Entry", "Part", "Shipment", "iter_lines", "pack", "slice_transcript"]

#: Bytes read per call while skipping an oversized line.
SKIP_CHUNK: Final = 1024 * 1024
#: Between two kept entries in a slice's text.
SEPARATOR: Final = "\n\n"


def iter_lines(handle: BinaryIO, start: int, max_line: int) -> Iterator[tuple[bytes | None, int]]:
    """Yield ``(line, end_offset)`` for each complete line from ``start``.

    ``line`` is ``None`` for a line longer than ``max_line`` (skipped unread).
    Stops before a last line that has no newline yet.
    """
    handle.seek(start)
    position = start
    while True:
        line = handle.readline(max_line + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            position += len(line)
            yield line, position
            continue
        if len(line) <= max_line:
            return  # half-written last line: the writer is not done with it
        skipped = len(line)
        while True:
            more = handle.readline(SKIP_CHUNK)
            if not more:
                return
            skipped += len(more)
            if more.endswith(b"\n"):
                break
        position += skipped
        yield None, position


@dataclass
class Part:
    """The kept text of one capture and where it came from in the transcript."""

    text: str
    byte_start: int
    byte_end: int
    kept: int = 0
    redactions: int = 0


@dataclass
class Shipment:
    """Slices that must be stored together with the cursor moved to ``end``.

    ``tail`` marks the last shipment of a read: the text up to the last
    complete line, which the size floor may hold back.
    """

    start: int
    end: int
    tail: bool
    parts: list[Part] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    dropped: int = 0
    unknown: int = 0
    replayed: int = 0
    malformed: int = 0
    oversized: int = 0

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.parts)


def _parse(line: bytes) -> object:
    try:
        return parse_json(line)
    except ValueError:
        return None


@dataclass
class Entry:
    """One kept record's text, already redacted, and where its line ends."""

    text: str
    line_end: int
    redactions: int = 0


def pack(entries: list[Entry], start: int, max_chars: int) -> list[Part]:
    """Pack entries into parts of at most ``max_chars``.

    Entries are never cut unless one alone exceeds ``max_chars``; then it is
    split into consecutive pieces, and nothing is dropped (docs/architecture.md, invariant 5). The
    entries are redacted before they get here, so a cut can only fall inside
    a ``[REDACTED:...]`` marker, never inside a secret.
    """
    parts: list[Part] = []
    current: list[str] = []
    redactions = 0
    size = 0
    part_start = start
    last_end = start

    def close(end: int) -> None:
        nonlocal current, size, part_start, redactions
        if current:
            parts.append(Part(SEPARATOR.join(current), part_start, end, len(current), redactions))
            part_start = end
        current, size, redactions = [], 0, 0

    for entry in entries:
        text = entry.text
        extra = len(text) + (len(SEPARATOR) if current else 0)
        if current and size + extra > max_chars:
            close(last_end)
        if len(text) > max_chars:
            close(last_end)
            for offset in range(0, len(text), max_chars):
                found = entry.redactions if offset == 0 else 0
                parts.append(Part(text[offset : offset + max_chars], part_start, entry.line_end,
                                  1, found))
            part_start = entry.line_end
        else:
            current.append(text)
            redactions += entry.redactions
            size += len(text) + (len(SEPARATOR) if len(current) > 1 else 0)
        last_end = entry.line_end
    close(last_end)
    return parts


def slice_transcript(  # noqa: PLR0913, PLR0915 - the slicing limits, keyword-only; one streaming loop; split, its shared state would scatter
    handle: BinaryIO,
    start: int,
    *,
    is_seen: Callable[[str], bool],
    max_chars: int,
    max_line: int,
    preamble: list[tuple[str, str]] | None = None,
    mark_sidechain: bool = True,
) -> Iterator[Shipment]:
    """Read from ``start`` and yield shipments; the last one has ``tail=True``.

    Every entry goes through :func:`memspool.redact.redact` on its own, before entries are packed
    into parts: a long record split across slices cannot split a secret
    out of reach of its rule. ``preamble`` entries ``(key, text)`` (PreCompact
    instructions) lead the first slice. A record whose key ``is_seen`` (or
    that repeats within this read) is counted as replayed and left out.
    """
    shipment = Shipment(start=start, end=start, tail=False)
    entries: list[Entry] = []
    chars = 0
    keys_here: set[str] = set()

    def add(text: str, end: int, found: int = 0) -> int:
        # Printable first, as every other door: a terminal's colour codes around a
        # value (``PASSWORD=\x1b[1mhunter2...``) must not hide it from its rule.
        clean, counts = redact(printable(text))
        entries.append(Entry(clean, end, found + sum(counts.values())))
        return len(clean) + len(SEPARATOR)

    for key, text in preamble or []:
        if key not in keys_here and not is_seen(key):
            keys_here.add(key)
            shipment.keys.append(key)
            chars += add(f"[precompact instructions] {text}", start)
    previous_end = start
    for line, end in iter_lines(handle, start, max_line):
        shipment.end = end
        line_start, previous_end = previous_end, end
        if line is None:
            shipment.oversized += 1
            shipment.dropped += 1
            # Say where the gap is, so a reader of the slice knows text is missing.
            chars += add(f"[skipped a transcript line of {end - line_start} bytes at offset "
                         f"{line_start}: longer than max_line_bytes ({max_line})]", end)
            continue
        record = _parse(line)
        if record is None:
            shipment.malformed += 1
            shipment.dropped += 1
            continue
        try:
            kept = keep_record(record, mark_sidechain=mark_sidechain)
            key = record_key(record, line) if kept.text is not None else ""  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a record of a shape nobody foresaw is skipped, not fatal
            shipment.malformed += 1
            shipment.dropped += 1
            continue
        if kept.text is None:
            if kept.verdict == "unknown":
                shipment.unknown += 1
            else:
                shipment.dropped += 1
            continue
        if key in keys_here or is_seen(key):
            shipment.replayed += 1
            continue
        keys_here.add(key)
        shipment.keys.append(key)
        chars += add(kept.text, end, kept.redactions)
        if chars >= max_chars:
            shipment.parts = pack(entries, shipment.start, max_chars)
            yield shipment
            # The caller stores each shipment before asking for the next, so
            # the store's seen set now holds these keys.
            shipment = Shipment(start=end, end=end, tail=False)
            entries, chars, keys_here = [], 0, set()
    shipment.tail = True
    shipment.parts = pack(entries, shipment.start, max_chars)
    if shipment.parts:
        shipment.parts[-1].byte_end = shipment.end
    yield shipment
