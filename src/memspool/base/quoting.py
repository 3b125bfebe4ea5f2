"""Memory as an agent reads it: quoted data that cannot pass for markup (standard library).

Memory reaches an agent inside a frame memspool writes: the context block at
SessionStart and the prompt-recall note. A tag in a memory (``</system-reminder>``)
could close that frame and open one of its own, a code fence could swallow what
follows, and a direction override or an invisible character makes text read
otherwise than it shows. :func:`inert` leaves the words and makes the rest plain.
"""

from __future__ import annotations

import re

from memspool.base.controls import BIDI, TAGS

__all__ = ["inert"]

#: A tag (``<system-reminder>``, ``</x>``, ``<!-- ... -->``), whole; then the ``<``
#: of any tag left open. They show between single angle quotation marks (U+2039,
#: U+203A): readable, inert.
_TAG = re.compile(r"<(/?[A-Za-z!?][^<>\n]{0,200})>")
_TAG_START = re.compile(r"<(?=[/!?A-Za-z])")
#: A code fence (three or more backticks or tildes) becomes modifier letters that
#: look alike and fence nothing.
_FENCE = re.compile(r"`{3,}|~{3,}")
#: Direction marks, embeddings, overrides and isolates, the tag characters, the
#: zero-width space and the invisible operators: nothing an agent should read that a
#: person cannot see. The zero-width joiner and non-joiner stay: Persian and Indic
#: words and emoji sequences (a person at a laptop) are written with them.
_UNSEEN = re.compile(f"[{BIDI}{TAGS}\u200b\u2060-\u2064\ufeff]")


def _fence(found: re.Match[str]) -> str:
    return ("\u02cb" if found.group()[0] == "`" else "\u02dc") * len(found.group())


def inert(text: str) -> str:
    """``text`` with tags and code fences made plain and unseen characters removed."""
    text = _UNSEEN.sub("", text)
    text = _TAG_START.sub("\u2039", _TAG.sub("\u2039\\1\u203a", text))
    return _FENCE.sub(_fence, text)
