"""Summary lines, keys and normalized text of a note.

A note's key is its identity inside a project: the same key updates the
memory in place when the new text revises the same fact. It is a slug of the
summary line, so a re-capture whose first line is unchanged lands on the same
memory. A first line is often a generic heading ("## Decision"), so a
different fact under the same key gets :func:`distinct_key` instead of
overwriting the memory that holds the key.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Final

__all__ = [
    "KEY_CHARS",
    "SUMMARY_CHARS",
    "distinct_key",
    "normalized_text",
    "note_key",
    "summary_line",
    "text_hash",
    "title",
]

#: docs/distill.md, The rules: the summary line is the first line clipped to 160 characters.
SUMMARY_CHARS: Final = 160
#: docs/distill.md, The rules: a key has at most 64 characters.
KEY_CHARS: Final = 64
#: A slug longer than KEY_CHARS keeps this many characters and gains a hash of the
#: whole slug, so two long summaries that share a 64-character start stay apart.
KEY_HASH_CHARS: Final = 8
#: Hex characters of the hash in ``note-<hash>`` keys (48 bits: collisions need
#: about 16 million keyless notes in one project).
FALLBACK_HASH_CHARS: Final = 12

_MARKUP_PREFIX: Final = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|(?:[-*+\u2022]|\d{1,3}[.)])\s+)+")
_EMPHASIS: Final = re.compile(r"\*\*|__|`")
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")


def normalized_text(text: str) -> str:
    """Lowercase with whitespace collapsed: what "the same text" means for duplicates."""
    return " ".join(text.lower().split())


def text_hash(text: str) -> str:
    """A stable digest of :func:`normalized_text`, for exact-duplicate lookups."""
    return hashlib.sha256(normalized_text(text).encode("utf-8")).hexdigest()[:32]


def _clean_line(line: str) -> str:
    line = _MARKUP_PREFIX.sub("", line)
    line = _EMPHASIS.sub("", line)
    return " ".join(line.split())


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip()


def summary_line(text: str) -> str:
    """The first non-empty line without markdown markup, clipped to 160 characters."""
    for line in text.splitlines():
        cleaned = _clean_line(line)
        if cleaned:
            return _clip(cleaned, SUMMARY_CHARS)
    return ""


def title(text: str, limit: int) -> str:
    """The first ``limit`` characters of the whole note on one line (passive memories' titles)."""
    return _clip(_clean_line(" ".join(text.split())), limit)


def note_key(summary: str) -> str:
    """The slug of ``summary``: lowercase ASCII alphanumerics and dashes, at most 64 characters.

    Accents fold to their base letter (``Café`` -> ``cafe``). A summary with no
    alphanumerics at all gets ``note-<hash>`` of its normalized text.
    """
    folded = unicodedata.normalize("NFKD", summary)
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").lower()
    slug = _NOT_SLUG.sub("-", ascii_text).strip("-")
    if not slug:
        return f"note-{text_hash(summary)[:FALLBACK_HASH_CHARS]}"
    if len(slug) <= KEY_CHARS:
        return slug
    return _with_digest(slug, hashlib.sha256(slug.encode("ascii")).hexdigest())


def distinct_key(key: str, text: str) -> str:
    """``key`` made unique to ``text``: a short hash of the normalized text appended.

    The same text always gets the same distinct key, so re-capturing it lands
    on the memory it created; the result still has at most 64 characters.
    """
    return _with_digest(key, text_hash(text))


def _with_digest(key: str, digest: str) -> str:
    """``key`` clipped so that ``-`` and the digest's first characters fit in KEY_CHARS."""
    head = key[: KEY_CHARS - KEY_HASH_CHARS - 1].rstrip("-")
    return f"{head}-{digest[:KEY_HASH_CHARS]}"
