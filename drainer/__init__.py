"""The drainer: reads spool frames, slices each session's transcript from its
cursor, keeps the reasoning, redacts, compresses, and stores slices exactly
once. ``python -m memspool.drainer`` or ``memspool drainer``.
"""

from __future__ import annotations

from memspool.drainer.daemon import Drainer, PassResult
from memspool.drainer.modes import main, run_detached, run_once, run_resume, run_watch

__all__ = ["Drainer", "PassResult", "main", "run_detached", "run_once", "run_resume", "run_watch"]
