"""The archivist: notes become memory, and memory is kept true over time.

    reconcile.py  notes meet memory: merge a restatement, supersede a new value,
                  create the rest; the one place that decides (every writer calls it)
    intake.py     the capture verb: a payload distilled, then reconciled
    minor.py      slices -> notes (the claim model, or an LLM) -> memory, one
                  transaction per slice with its digested mark
    major.py      the maintenance pass: merge, reconcile siblings, corroborate,
                  supersede, promote, decay; only what changed or fell due
    lifecycle.py  the documented rules: confidence, promotion, decay
    transfer.py   export and import of memories as JSONL
    recalls.py    recalls noted where the store is only read, for the decay clock

Its names load on first use (``memspool.base.lazy``): reading memory does
not load the claim model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memspool.base.lazy import exports

if TYPE_CHECKING:
    from memspool.archivist.intake import CaptureOptions, capture, manual_origin
    from memspool.archivist.major import MaintainReport, maintain
    from memspool.archivist.minor import DigestReport, digest
    from memspool.archivist.reconcile import CaptureReport, NoteOutcome, Origin, save_notes

__all__ = [
    "CaptureOptions",
    "CaptureReport",
    "DigestReport",
    "MaintainReport",
    "NoteOutcome",
    "Origin",
    "capture",
    "digest",
    "maintain",
    "manual_origin",
    "save_notes",
]

__getattr__ = exports(__name__, {
    "CaptureOptions": "intake", "capture": "intake", "manual_origin": "intake",
    "MaintainReport": "major", "maintain": "major",
    "DigestReport": "minor", "digest": "minor",
    "CaptureReport": "reconcile", "NoteOutcome": "reconcile", "Origin": "reconcile",
    "save_notes": "reconcile",
})
