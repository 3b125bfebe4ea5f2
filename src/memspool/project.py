"""Which project a session or a memory belongs to (see ``memspool.spool.project``).

The rule lives beside the spool, in the standard library only, so the hooks
that run without site-packages name projects exactly as the drainer does.
"""

from __future__ import annotations

from memspool.spool.project import FALLBACK_PROJECT, project_name

__all__ = ["FALLBACK_PROJECT", "project_name"]
