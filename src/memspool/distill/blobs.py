"""Blobs: runs of text too long to be a word, a name, a path or a URL.

A hash, a dump, an encoded payload or a minified line pasted into a
conversation is one run of non-space characters, thousands of them long. It
states no fact, and the patterns that read a message were written for words
and names: over a long run some of them take time in the square of its
length (a path pattern tries every start in the run and reads on to its end
from each), so one 200,000-character run would hold a slice's digest for
half an hour or more. The digest therefore reads a run longer than BLOB_CHARS as the one
word ``<blob>``, as the claim model reads code as ``<code>``: every pattern
after it meets runs of at most BLOB_CHARS characters, and its work is
linear in the text. The marks a run opens or closes with are the text's, not
the blob's, and stay (a few of each): a code span's backtick, a bracket, a
quote, a sentence's stop. Without them a code span would lose its end, and
every backtick after it would pair with the wrong one.

Redaction reads the text before this, whole (the drainer redacts each entry
as it stores it): what it finds does not depend on a run's length, and a
blob that held a secret leaves no part of it in a note.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["BLOB", "BLOB_CHARS", "without_blobs"]

#: The longest run of non-space characters read as written. The labelled
#: messages' longest is 91 characters (a call chain in code); a file name
#: has at most 255 bytes and a path a person reads seldom passes 260
#: (Windows' MAX_PATH); a URL past this is a signed or state-carrying link,
#: data rather than an address to remember. The bound is also the work: a
#: pattern that is quadratic over a run costs at most this much per
#: character of the text.
BLOB_CHARS: Final = 256
#: What a blob reads as: a word of its own kind, as ``<code>`` and ``<path>``
#: are to the claim model, and no secret to redaction.
BLOB: Final = "<blob>"
#: A whole run longer than BLOB_CHARS. Tried only where a run starts (the
#: look-behind fails at once inside one), so the scan is linear.
_BLOB: Final = re.compile(rf"(?<!\S)\S{{{BLOB_CHARS + 1},}}")
#: The marks a run may open and close with that belong to the text around it, and
#: how many of each are kept: three, a code fence's backticks.
_OPENS: Final = "`([{<\"'*_"
_CLOSES: Final = "`)]}>\"'*_.,;:!?"
_EDGE_CHARS: Final = 3


def _blob(match: re.Match[str]) -> str:
    run = match.group()
    head = min(len(run) - len(run.lstrip(_OPENS)), _EDGE_CHARS)
    tail = min(len(run) - len(run.rstrip(_CLOSES)), _EDGE_CHARS)
    return f"{run[:head]}{BLOB}{run[len(run) - tail:]}"


def without_blobs(text: str) -> str:
    """``text`` with each run of more than BLOB_CHARS non-space characters read as
    ``<blob>``, the marks it opens and closes with kept (:data:`_OPENS`, :data:`_CLOSES`)."""
    if len(text) <= BLOB_CHARS:
        return text
    return _BLOB.sub(_blob, text)
