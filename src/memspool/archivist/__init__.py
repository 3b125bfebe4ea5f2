"""The archivist: queued slices become memory, and memory is kept true over time.

    minor.py      slices -> notes (the transcript rules, or an LLM) -> memory, one
                  transaction per slice with its digested mark
    major.py      the maintenance pass: merge, reconcile siblings, corroborate,
                  supersede, promote, decay; only what changed or fell due
    lifecycle.py  the documented rules: confidence, promotion, decay
    transfer.py   export and import of memories as JSONL
    recalls.py    recalls noted where the store is only read, for the decay clock
"""

from __future__ import annotations

from memspool.archivist.major import MaintainReport, maintain
from memspool.archivist.minor import DigestReport, digest

__all__ = ["DigestReport", "MaintainReport", "digest", "maintain"]
