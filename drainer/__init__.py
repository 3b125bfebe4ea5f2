"""The drainer: reads spool frames, slices each session's transcript from its
cursor, keeps the reasoning, redacts, compresses, and stores slices exactly
once. ``python -m memspool.drainer`` or ``memspool drainer``.

Its names load on first use (``memspool.base.lazy``): asking the lock whether
a drainer runs does not load the drainer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memspool.base.lazy import exports

if TYPE_CHECKING:
    from memspool.drainer.daemon import Drainer, PassResult
    from memspool.drainer.modes import main, run_detached, run_once, run_resume, run_watch

__all__ = ["Drainer", "PassResult", "main", "run_detached", "run_once", "run_resume", "run_watch"]

__getattr__ = exports(__name__, {
    "Drainer": "daemon", "PassResult": "daemon", "main": "modes", "run_detached": "modes",
    "run_once": "modes", "run_resume": "modes", "run_watch": "modes",
})
