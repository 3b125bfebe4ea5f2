"""Characters that change how text shows instead of showing: one list for every output.

Standard library only (the hooks import it through ``memspool.base.project``).
Each output decides what to do with them (remove, escape, show a stand-in)
and which line ends it keeps; the lists themselves are here, so they cannot
drift apart.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["BIDI", "LINE_SEPARATORS", "characters"]

#: Direction marks, embeddings, overrides and isolates, as a regular expression's
#: class body: they reorder a line as it shows (U+202E writes it backwards).
BIDI: Final = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: The line and paragraph separators: a line break to some renderers.
LINE_SEPARATORS: Final = "\u2028\u2029"


def characters(body: str) -> frozenset[str]:
    """The characters a class body of these lists names (``a-z`` ranges expanded), for
    code that tests characters one by one instead of with a regular expression."""
    found: set[str] = set()
    index = 0
    while index < len(body):
        if index + 2 < len(body) and body[index + 1] == "-":
            found.update(map(chr, range(ord(body[index]), ord(body[index + 2]) + 1)))
            index += 3
        else:
            found.add(body[index])
            index += 1
    return frozenset(found)
