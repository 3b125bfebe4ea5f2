"""Redaction: the room every slice and every captured payload passes through.

    engine.py        one trigger scan over the text, then the anchored rule at each hit
    rules.py         how rules are written; URLs, headers, keyword assignments
    rules_vendor.py  what vendors and tools know: token families, curl/mysql/.netrc passwords
    normal.py        the normalised view: a disguised secret read as it reads

``redact(text) -> (text, counts)`` is the whole interface; a second pass
changes nothing.
"""

from __future__ import annotations

from memspool.redact.engine import FAMILIES, redact, replacement

__all__ = ["FAMILIES", "redact", "replacement"]
