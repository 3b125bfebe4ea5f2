# ruff: noqa: RUF002 - the docstring shows fullwidth letters on purpose
"""The normalised view of a text: how a secret looks once its disguise is taken off.

A token can be written so that no rule sees it, yet a reader (or a model, or
a terminal, or a browser) reads it as the token: a zero-width space or a
soft hyphen inside it, fullwidth letters (``ｇｈｐ_``), an HTML entity
(``ghp&#95;``), a literal ``\\u005f`` in a text field, an AWS key id written
in lower case. :func:`view` builds the text as it reads, with each of those
undone, and remembers where each of its characters came from, so a secret
found in the view is redacted over its span in the original text:

- invisible characters (format characters such as U+200B, U+00AD, U+FEFF,
  bidi controls, variation selectors) are removed;
- each other non-ASCII character is replaced by its NFKC form (fullwidth
  and other compatibility forms become plain letters);
- an HTML entity (``&#95;``, ``&#x5f;``, ``&lowbar;``) becomes what it
  stands for, a ``\\uXXXX`` escape (behind any number of backslashes) the
  character it names;
- a run shaped like an AWS key id (``akia`` + 16 letters and digits, in
  any case) is upper-cased, as AWS writes it.

The view is only built when one of those occurs (:func:`view` returns
``None`` otherwise), so plain text costs one scan.
"""

from __future__ import annotations

import bisect
import functools
import html
import re
import unicodedata
from typing import Final

__all__ = ["View", "view"]

#: Characters that render as nothing (Unicode format characters and fillers
#: that a token may hide behind).
_INVISIBLE: Final = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
_INVISIBLE_CHAR: Final = re.compile(rf"[{_INVISIBLE}\U000e0000-\U000e007f]")
#: Each scan starts with a literal or a narrow class, so the regex engine skips to
#: its candidates in C: runs of non-ASCII characters, entities, escapes.
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")
_ENTITY: Final = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE: Final = re.compile(r"\\u([0-9a-fA-F]{4})")
#: An AWS access key id as it reads once lower-cased: the prefix, then exactly 16 of
#: AWS's base32 alphabet (the literal ``a`` first, so the scan skips ahead in C). A
#: match counts only at a word's start and with a lower-case letter after its
#: prefix (else the rules see it as it is). One id in 28 has no digit, so none is
#: required: a 20-letter word that starts like an id is taken for one.
_AWS_ID: Final = re.compile(r"a(?:kia|sia|bia|cca)[A-Za-z2-7]{16}(?![A-Za-z0-9])")
_LOWER: Final = re.compile(r"[a-z]")


@functools.lru_cache(maxsize=4096)
def _nfkc(char: str) -> str:
    return unicodedata.normalize("NFKC", char)


class View:
    """A normalised text and the map from its positions back to the original's."""

    def __init__(self, text: str, changes: list[tuple[int, int, str]]) -> None:
        """``changes``: (start, end, replacement) over ``text``, in order, not overlapping."""
        pieces: list[str] = []
        #: Per change: where it starts in the view and in the original, and how long
        #: it is in each; between changes, both texts are the same.
        self._view_starts: list[int] = []
        self._spans: list[tuple[int, int, int]] = []
        done = 0
        length = 0
        for start, end, replacement in changes:
            pieces.append(text[done:start])
            length += start - done
            self._view_starts.append(length)
            self._spans.append((start, end, len(replacement)))
            pieces.append(replacement)
            length += len(replacement)
            done = end
        pieces.append(text[done:])
        self.text = "".join(pieces)
        self._changed = [(at, at + size) for at, (_, _, size)
                         in zip(self._view_starts, self._spans, strict=True)]

    def changed(self) -> list[tuple[int, int]]:
        """The spans of the view that differ from the original, in order."""
        return self._changed

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``view[start:end]`` was made from."""
        return self._position(start, at_end=False), self._position(end, at_end=True)

    def mark_changed(self, spans: list[tuple[int, int]]) -> None:
        """Count ``spans`` of the view as changed too (changed in place, same length)."""
        self._changed = sorted([*self._changed, *spans])

    def _position(self, pos: int, *, at_end: bool) -> int:
        # The last change starting at or before pos (for an end, strictly before it:
        # an end on a change's first character does not take that change in).
        index = bisect.bisect_right(self._view_starts, pos - 1 if at_end else pos) - 1
        if index < 0:
            return pos
        view_start = self._view_starts[index]
        start, end, size = self._spans[index]
        if pos < view_start + size or (at_end and pos <= view_start + size and size):
            # Inside a change: the whole of what it replaced.
            return end if at_end else start
        return end + (pos - view_start - size)


#: What a decoded entity or escape must read as to be worth a change of the view:
#: nothing (an invisible character), or characters a secret or the name before it
#: is written with. ``&amp;``, ``&lt;`` or a JSON-escaped ESC (``\u001b``, common
#: in terminal output) change no secret, and would only cost a rerun of the rules.
_SECRET_CHARS: Final = re.compile(r"[A-Za-z0-9_\-.=:/+~@]*")


def _reads_as(decoded: str) -> str | None:
    """What a decoded entity or escape reads as (it may itself be invisible or
    fullwidth), or ``None`` when that cannot be part of a secret."""
    reads = "".join("" if _INVISIBLE_CHAR.match(c) else _nfkc(c) for c in decoded)
    return reads if _SECRET_CHARS.fullmatch(reads) else None


@functools.lru_cache(maxsize=4096)
def _run_changes(run: str) -> tuple[tuple[int, str], ...]:
    """(offset, NFKC form) for each character of a non-ASCII run that NFKC changes
    (invisible characters are found on their own). Cached: the same few runs (a
    dash, an ellipsis, a word of another script) come back again and again."""
    return tuple((offset, normal) for offset, char in enumerate(run)
                 if (normal := _nfkc(char)) != char and not _INVISIBLE_CHAR.match(char))


#: The text is checked for NFKC this many characters at a time (unicodedata's
#: check runs in C); only a chunk that is not in NFKC is looked at character by
#: character.
_CHUNK: Final = 4096


def _changes(text: str) -> list[tuple[int, int, str]]:
    changes: list[tuple[int, int, str]] = []
    if not text.isascii():
        changes += [(m.start(), m.end(), "") for m in _INVISIBLE_CHAR.finditer(text)]
        for lo in range(0, len(text), _CHUNK):
            hi = min(len(text), lo + _CHUNK)
            chunk = text[lo:hi]
            if chunk.isascii() or unicodedata.is_normalized("NFKC", chunk):
                continue
            for match in _NON_ASCII.finditer(text, lo, hi):
                base = match.start()
                changes += [(base + offset, base + offset + 1, normal)
                            for offset, normal in _run_changes(match.group())]
    if "&" in text:
        for match in _ENTITY.finditer(text):
            decoded = html.unescape(match.group())
            reads = None if decoded == match.group() else _reads_as(decoded)
            if reads is not None:
                changes.append((match.start(), match.end(), reads))
    if "\\" in text:
        escaped = 0
        for match in _ESCAPE.finditer(text):
            code = int(match.group(1), 16)
            if 0xD800 <= code <= 0xDFFF:
                continue
            # The backslashes before it go too: escaped once or twice, it reads as one.
            start = match.start()
            while start > 0 and text[start - 1] == "\\":
                start -= 1
            reads = _reads_as(chr(code))
            if start >= escaped and reads is not None:
                changes.append((start, match.end(), reads))
                escaped = match.end()
    # The three kinds never overlap: entities and escapes are ASCII.
    return sorted(changes)


def _aws_ids(text: str) -> list[tuple[int, int]]:
    """Where an AWS key id written in lower case sits in ``text``."""
    return [match.span() for match in _AWS_ID.finditer(text)
            if (match.start() == 0 or not text[match.start() - 1].isascii()
                or not text[match.start() - 1].isalnum())
            and _LOWER.search(text, match.start() + 4, match.end())]


def view(text: str) -> View | None:
    """``text`` as it reads (see the module doc), or ``None`` when that is ``text`` itself."""
    changes = _changes(text)
    seen = View(text, changes) if changes else None
    ids = _aws_ids(text if seen is None else seen.text)
    if not ids:
        return seen
    if seen is None:
        seen = View(text, [])
    # Upper-casing ASCII keeps every position, so the map stays as it is.
    normal = seen.text
    for start, end in ids:
        normal = normal[:start] + normal[start:end].upper() + normal[end:]
    seen.text = normal
    seen.mark_changed(ids)
    return seen
