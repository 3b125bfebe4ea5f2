"""Redaction: the room every slice and every captured payload passes through.

    engine.py          one trigger scan over the text, then the anchored rule at each hit
    rules.py           how rules are written; URLs, headers, keyword assignments
    rules_vendor.py    what vendors know: token families
    rules_commands.py  passwords a command, SQL or .netrc places: curl -u, sshpass -p, ...
    normal.py          the normalised view: a disguised secret read as it reads

``redact(text) -> (text, counts)`` is the whole interface; a second pass
changes nothing. ``kept(text)`` is text from outside as memory keeps it:
made printable (``memspool.untrusted``), then redacted.

The rules compile on the first call, not at import: a command that never
redacts (a search, a listing) does not pay the tens of milliseconds their
patterns take to build.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from memspool.untrusted import printable

__all__ = ["FAMILIES", "kept", "redact", "replacement"]


_engine: Callable[[str], tuple[str, dict[str, int]]] | None = None


def redact(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with every secret replaced by its family's marker, and the count per family."""
    global _engine  # noqa: PLW0603 - the engine, loaded once; the drainer calls this per entry
    if _engine is None:
        from memspool.redact.engine import redact as engine_redact

        _engine = engine_redact
    return _engine(text)


def kept(text: str, *, one_line: bool = False) -> str:
    """Text from outside as memory keeps it: printable (escape sequences and controls
    out; with ``one_line`` on one line), then redacted."""
    return redact(printable(text, one_line=one_line))[0]


def __getattr__(name: str) -> Any:
    if name in ("FAMILIES", "replacement"):
        return getattr(importlib.import_module("memspool.redact.engine"), name)
    raise AttributeError(f"module 'memspool.redact' has no attribute {name!r}")
