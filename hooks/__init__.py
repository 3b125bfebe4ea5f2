"""The hook scripts Claude Code runs: stdlib only, they import ``memspool.spool`` and nothing else.

``capture.py`` is what ``memspool install`` puts into settings.json for Stop,
SubagentStop, PreCompact and SessionEnd.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["HOOK_SCRIPT"]

#: The script the installed hook command runs (``python -I -S HOOK_SCRIPT --home HOME``).
HOOK_SCRIPT = Path(__file__).with_name("capture.py")
