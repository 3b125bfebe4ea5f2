"""Which project a session or a memory belongs to (see ``memspool.spool.project``).

The rule lives beside the spool, in the standard library only, so the hooks
that run without site-packages identify projects exactly as the drainer does.
"""

from __future__ import annotations

from memspool.spool.project import (
    FALLBACK_PROJECT,
    identify,
    is_path_identity,
    normalise_remote,
    project_id,
    project_name,
    readable_name,
)

__all__ = [
    "FALLBACK_PROJECT", "identify", "is_path_identity", "normalise_remote", "project_id",
    "project_name", "readable_name",
]
