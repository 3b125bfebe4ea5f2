"""The hook scripts Claude Code runs: the stdlib, ``memspool.base`` and ``memspool.spool`` only.

    capture.py  Stop, SubagentStop, PreCompact, SessionEnd: append the payload to the
                spool, wake a drainer
    context.py  SessionStart: print the project's stored context block (read-only)
    recall.py   UserPromptSubmit (opt-in): print the few memories that match the prompt
                (search terms, ranking and the relevance bar from ``memspool.base``,
                shared with ``memspool.recall``)

This module uses ``os.path`` only: the recall hook imports this package.
"""

from __future__ import annotations

import os

__all__ = ["CONTEXT_SCRIPT", "HOOK_SCRIPT", "RECALL_SCRIPT"]

_HERE = os.path.dirname(os.path.abspath(__file__))
#: The script the installed capture hook runs (``python -I -S HOOK_SCRIPT --home HOME``).
HOOK_SCRIPT = os.path.join(_HERE, "capture.py")
#: The SessionStart hook.
CONTEXT_SCRIPT = os.path.join(_HERE, "context.py")
#: The UserPromptSubmit hook (installed with ``--recall-on-prompt``).
RECALL_SCRIPT = os.path.join(_HERE, "recall.py")
