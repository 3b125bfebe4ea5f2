"""Which project a session or a memory belongs to: the git root's name, else the folder's."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["project_name"]

#: Walking up stops after this many parents; deeper trees are not real checkouts.
MAX_PARENTS: Final = 64
FALLBACK_PROJECT: Final = "unknown"


def project_name(cwd: str | Path | None) -> str:
    """Name of the git root above ``cwd`` (a ``.git`` folder or file), else ``cwd``'s own name.

    ``cwd`` may come from a hook payload, so it is checked, not trusted: it
    must be an absolute path without NUL bytes; anything else (or a path that
    does not exist) falls back to its last component, then to ``unknown``.
    No git process is started.
    """
    if cwd is None:
        return FALLBACK_PROJECT
    text = str(cwd)
    if not text or "\x00" in text or not Path(text).is_absolute():
        return FALLBACK_PROJECT
    path = Path(text)
    try:
        if path.is_dir():
            probe = path.resolve()
            for candidate in [probe, *list(probe.parents)[:MAX_PARENTS]]:
                if (candidate / ".git").exists():
                    return candidate.name or FALLBACK_PROJECT
    except OSError:
        pass
    return path.name or FALLBACK_PROJECT
