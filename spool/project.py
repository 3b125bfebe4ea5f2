"""Which project a session belongs to: the git root's name, else the folder's.

Standard library and ``os.path`` only: the SessionStart and recall hooks
name the project the same way the drainer and the CLI do.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["FALLBACK_PROJECT", "project_name"]

#: Walking up stops after this many parents; deeper trees are not real checkouts.
MAX_PARENTS: Final = 64
FALLBACK_PROJECT: Final = "unknown"


def project_name(cwd: object) -> str:
    """Name of the git root above ``cwd`` (a ``.git`` folder or file), else ``cwd``'s own name.

    ``cwd`` may come from a hook payload, so it is checked, not trusted: it
    must be an absolute path without NUL bytes; anything else (or a path that
    does not exist) falls back to its last component, then to ``unknown``.
    No git process is started.
    """
    if cwd is None:
        return FALLBACK_PROJECT
    text = os.fspath(cwd) if isinstance(cwd, os.PathLike) else cwd
    if not isinstance(text, str) or not text or "\x00" in text or not os.path.isabs(text):
        return FALLBACK_PROJECT
    try:
        if os.path.isdir(text):
            probe = os.path.realpath(text)
            for _ in range(MAX_PARENTS + 1):
                if os.path.exists(os.path.join(probe, ".git")):
                    return os.path.basename(probe) or FALLBACK_PROJECT
                parent = os.path.dirname(probe)
                if parent == probe:
                    break
                probe = parent
    except (OSError, ValueError):
        pass
    return os.path.basename(text.rstrip(os.sep)) or FALLBACK_PROJECT
