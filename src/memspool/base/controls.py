"""Characters that change how text shows instead of showing: one list for every output.

Standard library only (the hooks import it through ``memspool.base.project``).
Each output decides what to do with them (remove, escape, show a stand-in)
and which line ends it keeps; the lists themselves are here, so they cannot
drift apart. Each list is its characters one by one: it is a regular
expression's class body as it is, and a string to test ``in``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["BIDI", "CONTROLS", "LINE_SEPARATORS", "TAGS"]

#: The control characters, Unicode's Cc: C0 (tab and line ends among them), DEL and C1.
CONTROLS: Final = "".join(map(chr, (*range(0x00, 0x20), *range(0x7F, 0xA0))))

#: Direction marks (the Arabic letter mark among them), embeddings, overrides and
#: isolates: they reorder a line as it shows (U+202E writes it backwards).
BIDI: Final = ("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
               "\u2066\u2067\u2068\u2069")
#: The line and paragraph separators: a line break to some renderers.
LINE_SEPARATORS: Final = "\u2028\u2029"
#: The tag characters (U+E0000 to U+E007F): a copy of ASCII that shows as nothing.
#: A sentence written in them is invisible to a person and read by a model.
TAGS: Final = "".join(map(chr, range(0xE0000, 0xE0080)))
