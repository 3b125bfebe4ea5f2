"""Recall: memory given back. Search, and the context block a session starts with.

    search.py    search: words (``memspool.base.lexical``), the concept map, meaning
                 blended in, the relevance bar, a readable score
    concepts.py  the concept map's word groups (data)
    context.py   the per-project context block, rendered when memory changes

The hook scripts that read the store at session start and on a prompt
(``hooks/context.py``, ``hooks/recall.py``) use the standard library only.
"""

from __future__ import annotations

from memspool.recall.context import render, render_dirty, stored
from memspool.recall.search import Hit, search

__all__ = ["Hit", "render", "render_dirty", "search", "stored"]
